"""What ember.profiler costs: a small MLP train step (forward, MSE loss, backward, SGD step) with
the profiler off, on (CPU ops), on with record_shapes + profile_memory, and on with with_stack;
torch 2.13's profiler on the same step for comparison (if torch is installed).

    python benchmarks/profiler.py [--steps 200] [--repeats 5]

Each figure is the best of `repeats` rounds (the configurations interleaved) of `steps` steps, in
microseconds per step."""
import argparse
import time
import warnings

import numpy as np


def make_step(lib, width=64):
    rng = np.random.default_rng(0)
    m = lib.nn.Sequential(lib.nn.Linear(32, width), lib.nn.ReLU(), lib.nn.Linear(width, width), lib.nn.ReLU(),
                          lib.nn.Linear(width, 10))
    opt = lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = lib.tensor(rng.standard_normal((16, 32)).astype(np.float32))
    y = lib.tensor(rng.standard_normal((16, 10)).astype(np.float32))

    def step():
        opt.zero_grad()
        lib.nn.functional.mse_loss(m(x), y).backward()
        opt.step()
    return step


def per_step_us(lib, step, steps, repeats, **kw):
    best = float("inf")
    for _ in range(repeats):
        if kw.get("off"):
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            best = min(best, time.perf_counter() - t0)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as p:
                t0 = time.perf_counter()
                for _ in range(steps):
                    step()
                best = min(best, time.perf_counter() - t0)
        n = len(p.events())
    return best / steps * 1e6, (n // steps if not kw.get("off") else 0)


CONFIGS = [("off", dict(off=True)), ("on (CPU ops)", dict()),
           ("on, record_shapes + profile_memory", dict(record_shapes=True, profile_memory=True)),
           ("on, with_stack", dict(with_stack=True))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    libs = []
    import ember
    libs.append(ember)
    try:
        import torch
        torch.set_num_threads(1)
        libs.append(torch)
    except ImportError:
        pass
    print("| library | profiler | us / step | vs off | events / step |")
    print("|---|---|---:|---:|---:|")
    for lib in libs:
        step = make_step(lib)
        for _ in range(20):
            step()
        # configurations interleaved, best of `repeats` rounds each: load drift hits all alike
        best = {label: (float("inf"), 0) for label, _ in CONFIGS}
        for _ in range(a.repeats):
            for label, kw in CONFIGS:
                us, n = per_step_us(lib, step, a.steps, 1, **kw)
                best[label] = min(best[label], (us, n))
        base = best["off"][0]
        for label, _ in CONFIGS:
            us, n = best[label]
            print(f"| {lib.__name__} | {label} | {us:.0f} | {us / base:.2f}x | {n if n else ''} |", flush=True)


if __name__ == "__main__":
    main()
