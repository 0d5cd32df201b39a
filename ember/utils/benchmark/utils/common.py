"""torch.utils.benchmark.utils.common: TaskSpec, Measurement and the number-formatting helpers.

The statistics follow torch's exactly, down to the precision: torch computes the unit choice, the
significant-figure estimate and the trimming on float32 tensors (`torch.tensor(python_float)` is
float32), and the quantiles on float64. Here the same arithmetic runs on NumPy scalars of the same
dtypes, so the same raw times give the same repr and the same Compare table as torch's.
"""
import collections
import contextlib
import dataclasses
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

import ember

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]


_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns

# A Measurement warns when the distribution is suspect: the relative IQR thresholds.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25

_f32 = np.float32


def _scalar(x):
    """x as torch.tensor(x) holds it: a Python number becomes float32 (an integer's log10 is float32
    too), a NumPy float keeps its dtype (np.float64 stays float64)."""
    if isinstance(x, np.floating):
        return x
    return _f32(x)


def _log10_f32(x):
    """float(torch.tensor(x).log10())."""
    with np.errstate(all="ignore"):
        return float(np.log10(_scalar(x)))


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """Container for information used to define a Timer. (except globals)"""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """Best effort attempt at a string label for the measurement."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        elif "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return (
            f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n"
            f"{textwrap.indent(self.stmt, '  ')}"
        )

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Build TaskSpec portion of repr string for other containers."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{i}\n" if "\n" in i else i for i in sections if i])


_TASKSPEC_FIELDS = tuple(i.name for i in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a Timer measurement: the raw times of one or more blocks of `number_per_run`
    runs each, with median / mean / IQR statistics and torch's repr."""
    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # Reserved for user payloads.

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median: float = -1.0
        self._mean: float = -1.0
        self._p25: float = -1.0
        self._p75: float = -1.0

    def __getattr__(self, name: str) -> Any:
        # Forward TaskSpec fields for convenience (label, sub_label, description, num_threads, ...).
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    # Statistics are per run: raw time divided by number_per_run.
    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """Approximate significant figures, from the interquartile points' spread (z = 1.645); used by
        Compare's trim_significant_figures."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        lower_bound = int(n_total // 4)
        upper_bound = int(np.ceil(_f32(3 * n_total / 4)))
        interquartile_points = self._sorted_times[lower_bound:upper_bound]
        pts = np.asarray(interquartile_points, dtype=np.float32).astype(np.float64)
        with np.errstate(all="ignore"):
            std = float(_f32(pts.std())) if len(pts) else float("nan")
        sqrt_n = float(np.sqrt(_f32(len(interquartile_points))))

        # Rough estimates. These are by no means statistically rigorous.
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        relative_ci = _log10_f32(self._median / confidence_interval)
        num_significant_figures = int(np.floor(_f32(relative_ci)))
        return min(max(num_significant_figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            st = np.asarray(self._sorted_times, dtype=np.float64)
            self._median = float(np.quantile(st, 0.5))
            self._mean = float(st.mean())
            self._p25 = float(np.quantile(st, 0.25))
            self._p75 = float(np.quantile(st, 0.75))

            def add_warning(msg: str) -> None:
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (
                    f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                    f"of the median measurement.\n           {msg}",
                )

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        # torch's property reads a misspelt attribute and falls back to the TaskSpec field: the
        # value is task_spec.env (None when unset), which Compare relies on.
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        """
        Example repr:
            <ember.utils.benchmark.utils.common.Measurement object at 0x7f395b6ac110>
              Broadcasting add (4x8)
              Median: 5.73 us
              IQR:    2.25 us (4.01 to 6.26)
              372 measurements, 100 runs per measurement, 1 thread
              WARNING: Interquartile range is 39.4% of the median measurement.
                       This suggests significant environmental influence.
        """
        self._lazy_init()
        skip_line, newline = "MEASUREMENT_REPR_SKIP_LINE", "\n"
        n = len(self._sorted_times)
        time_unit, time_scale = select_unit(self._median)
        iqr_filter = '' if n >= 4 else skip_line

        repr_str = f"""
{super().__repr__()}
{self.task_spec.summarize()}
  {'Median: ' if n > 1 else ''}{self._median / time_scale:.2f} {time_unit}
  {iqr_filter}IQR:    {self.iqr / time_scale:.2f} {time_unit} ({self._p25 / time_scale:.2f} to {self._p75 / time_scale:.2f})
  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs {'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}
{newline.join(self._warnings)}""".strip()  # noqa: E501

        return "\n".join(line for line in repr_str.splitlines(keepends=False) if skip_line not in line)

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> list["Measurement"]:
        """Merge replicates (same TaskSpec) into one Measurement per task, extrapolated to
        number_per_run=1; metadata is not carried over."""
        grouped: collections.defaultdict[TaskSpec, list[Measurement]] = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].append(m)

        def merge_group(task_spec, group):
            times: list[float] = []
            for m in group:
                times.extend(m.times)
            return Measurement(number_per_run=1, raw_times=times, task_spec=task_spec, metadata=None)

        return [merge_group(t, g) for t, g in grouped.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit that scales `t` seconds to O(1): ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3) or ("s", 1)."""
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    time_scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[time_unit]
    return time_unit, time_scale


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """Trim `x` to `n` significant figures. (e.g. 3.14159, 2 -> 3.10000)"""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    with np.errstate(all="ignore"):
        magnitude = int(np.ceil(np.log10(np.abs(_scalar(x)))))
    scale = 10 ** (magnitude - n)
    # torch: float(torch.tensor(x / scale).round() * scale): float32 for a Python float, the number's
    # own dtype for a NumPy one (the Python scalar `scale` does not promote it)
    r = np.round(_scalar(x / scale))
    return float(r * r.dtype.type(scale))


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(elements).keys())


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the body with ember's intra-op thread count set to `n` (torch.set_num_threads), when
    ember has one; ember's CPU kernels run on the calling thread, so there is nothing to set today."""
    get = getattr(ember, "get_num_threads", None)
    if get is None:
        yield
        return
    prior_num_threads = get()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior_num_threads)
