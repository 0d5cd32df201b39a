"""torch.utils.benchmark.utils.timer: Timer, timeit.Timer made ember-aware.

It warms up, runs with `num_threads` intra-op threads, synchronises the accelerator around each
block (`timer()`), and returns Measurements. `stmt` and `setup` see `torch` bound to ember, so a
snippet written for torch.utils.benchmark times ember unchanged.
"""
import enum
import textwrap
import timeit
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

import ember
from ember.utils.benchmark.utils import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Measure the execution time of ember statements (torch.utils.benchmark.Timer).

    Args:
        stmt: code snippet run in a loop and timed.
        setup: code run once before, defining what `stmt` uses.
        timer: the clock; by default it synchronises the accelerator when one is present.
        globals: the global variables `stmt` and `setup` run with (copied; `torch` is added, bound
            to ember, unless given).
        label, sub_label, description, env: metadata shown in the repr and used by Compare
            (label groups tables, sub_label names rows, description names columns, env separates
            otherwise identical tasks).
        num_threads: the intra-op thread count while timing (default 1, as torch's).
    """

    _timer_cls = timeit.Timer

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")

        # Copy `globals` so that mutations (eval adds `__builtins__`) do not leak.
        self._globals = dict(globals or {})

        if language in (Language.PYTHON, "py", "python"):
            # `torch` is there unless specified, as in torch: here it is ember
            self._globals.setdefault("torch", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(
                    f"global_setup is C++ only, got `{global_setup}`. Most "
                    "likely this code can simply be moved to `setup`."
                )
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("ember has no C++ frontend: Timer measures Python statements only.")
        else:
            raise ValueError(f"Invalid language `{language}`.")

        # Multi-line snippets defined in functions: dedent, and drop the leading newline of a block
        # string, so they run and print cleanly.
        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()

        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt, setup=setup, global_setup=global_setup, label=label, sub_label=sub_label,
            description=description, env=env, num_threads=num_threads,
        )

    def _timeit(self, number: int) -> float:
        # Calling a timer costs ~50 ns, so nothing real takes under 1 ns (and no division by zero).
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Mirrors timeit.Timer.timeit(): run `stmt` `number` times (after a warmup) and return one
        Measurement of one block."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))  # warmup
            return common.Measurement(
                number_per_run=number,
                raw_times=[self._timeit(number=number)],
                task_spec=self._task_spec,
            )

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(self, number, time_hook, stop_hook, min_run_time, max_run_time=None,
                                   callback=None) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while (total_time < min_run_time) or (not can_stop):
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        with common.set_torch_threads(self._task_spec.num_threads):
            # The block size that makes the timer's own overhead negligible (also the warmup).
            overhead = float(np.median(np.asarray([self._timeit(0) for _ in range(5)], dtype=np.float32)))
            number = 1
            while True:
                time_taken = self._timeit(number)
                relative_overhead = overhead / time_taken
                if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time:
                    break
                if number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], NoReturn] | None = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Measure many replicates while keeping timer overhead to a minimum: pick a block size
        (timer overhead under 0.01% of a block), then time blocks until `min_run_time` seconds have
        been spent."""
        number = self._estimate_block_size(min_run_time)

        def time_hook() -> float:
            return self._timeit(number)

        def stop_hook(times: list[float]) -> bool:
            return True

        times = self._threaded_measurement_loop(number, time_hook, stop_hook, min_run_time=min_run_time,
                                                callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], NoReturn] | None = None) -> common.Measurement:
        """Like blocked_autorange, but keep timing blocks until IQR / median is under `threshold`
        (with more than 3 blocks and `min_run_time` spent) or `max_run_time` is reached."""
        number = self._estimate_block_size(min_run_time=0.05)

        def time_hook() -> float:
            return self._timeit(number)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec).meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(number, time_hook, stop_hook, min_run_time, max_run_time,
                                                callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("ember's Timer has no Callgrind support: use blocked_autorange "
                                  "(wall time), or run the statement under valgrind yourself.")
