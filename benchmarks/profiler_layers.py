"""What ember.profiler's ember-only switches cost: with_dispatch_layers=True (one span per dispatch
layer inside each op) and with_modules=True (nn.Module spans), against the profiler off and on.

    python benchmarks/profiler_layers.py [--calls 20000] [--steps 200] [--repeats 5]

Figures, each the best of `repeats` rounds with the configurations interleaved, timed with the
process's CPU time (time.process_time: other processes on a shared machine do not count):
  * one small op (`x + y`, 4x4 float32, and `a * b` with a that requires grad, which passes the
    Autograd layer too) in a loop: microseconds per call, and the cost the profiler adds per op;
  * the MLP train step of benchmarks/profiler.py: microseconds per step, events per step, and the
    added cost per op event (the issue's budget: at most 2 us per op when on);
  * the compiled-kernel span hook (`with ember.profiler._kernel_span(name)`) with the profiler off.
"""
import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from profiler import make_step  # noqa: E402  (benchmarks/profiler.py: the same step)

import ember  # noqa: E402

_clock = time.process_time
from ember.profiler import ProfilerActivity, _kernel_span, profile  # noqa: E402

CONFIGS = [("off", None), ("on", dict()), ("on, with_dispatch_layers", dict(with_dispatch_layers=True)),
           ("on, with_stack", dict(with_stack=True)),
           ("on, with_stack + with_modules", dict(with_stack=True, with_modules=True))]


def run(fn, n, kw):
    """Seconds for n calls of fn, under the profiler configuration kw (None: off); events counted."""
    if kw is None:
        t0 = _clock()
        for _ in range(n):
            fn()
        return _clock() - t0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU], **kw) as p:
            t0 = _clock()
            for _ in range(n):
                fn()
            dt = _clock() - t0
    evs = p.events()
    ops = sum(1 for e in evs if e._category == "cpu_op")
    return dt, (len(evs), ops)


def measure(fn, n, repeats, configs):
    for _ in range(20):
        fn()
    best = {label: (float("inf"), 0) for label, _ in configs}
    for _ in range(repeats):
        for label, kw in configs:
            dt, n_ev = run(fn, n, kw)
            if dt < best[label][0]:
                best[label] = (dt, n_ev)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()

    x, y = ember.randn(4, 4), ember.randn(4, 4)
    g = ember.randn(4, 4, requires_grad=True)
    small = [("x + y", lambda: x + y), ("g * y (g requires grad)", lambda: g * y)]
    print("| workload | profiler | us / call | added us / op | events / call |")
    print("|---|---|---:|---:|---:|")
    for name, fn in small:
        best = measure(fn, a.calls, a.repeats, CONFIGS[:3])
        base = best["off"][0] / a.calls * 1e6
        for label, _ in CONFIGS[:3]:
            dt, n_ev = best[label]
            us = dt / a.calls * 1e6
            ev = f"{n_ev[0] / a.calls:.0f}" if n_ev else ""
            added = f"{us - base:.2f}" if n_ev else ""
            print(f"| {name} | {label} | {us:.2f} | {added} | {ev} |", flush=True)

    step = make_step(ember)
    best = measure(step, a.steps, a.repeats, CONFIGS)
    base = best["off"][0] / a.steps * 1e6
    for label, _ in CONFIGS:
        dt, n_ev = best[label]
        us = dt / a.steps * 1e6
        if n_ev:
            n_all, n_ops = n_ev[0] / a.steps, n_ev[1] / a.steps
            print(f"| MLP train step | {label} | {us:.0f} | {(us - base) / n_ops:.2f} | {n_all:.0f} "
                  f"({n_ops:.0f} ops) |", flush=True)
        else:
            print(f"| MLP train step | {label} | {us:.0f} |  |  |", flush=True)

    n = a.calls * 10
    best_plain = best_span = float("inf")
    for _ in range(a.repeats):
        t0 = _clock()
        for _ in range(n):
            pass
        best_plain = min(best_plain, _clock() - t0)
        t0 = _clock()
        for _ in range(n):
            with _kernel_span("cpp_fused_add_0"):
                pass
        best_span = min(best_span, _clock() - t0)
    print(f"\n_kernel_span with the profiler off: {(best_span - best_plain) / n * 1e6:.3f} us per kernel")


if __name__ == "__main__":
    main()
