"""torch.utils.benchmark: Timer, Measurement and Compare.

    from ember.utils import benchmark
    t = benchmark.Timer("x @ y", globals={"x": x, "y": y}, label="mm", description="64x64")
    m = t.blocked_autorange(min_run_time=0.2)     # Measurement: median, iqr, mean, times
    benchmark.Compare([m, ...]).print()           # torch's table

Not here: the C++ timer, Callgrind instruction counts and the op fuzzers.
"""
from ember.utils.benchmark.utils.common import (Measurement, TaskSpec, ordered_unique, select_unit,  # noqa: F401
                                                set_torch_threads, trim_sigfig, unit_to_english)
from ember.utils.benchmark.utils.compare import Colorize, Compare  # noqa: F401
from ember.utils.benchmark.utils.timer import Language, Timer, timer  # noqa: F401

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit",
           "unit_to_english", "trim_sigfig", "ordered_unique", "set_torch_threads"]
