"""Random numbers: ember vs torch vs NumPy, same process, interleaved. Prints min / median times and
ratios to torch; checks that ember's values are torch's bit for bit first.

    python benchmarks/rng.py                      # print the table
    python benchmarks/rng.py --markdown           # also print the table as markdown
    python benchmarks/rng.py --ember-root DIR     # time the ember of another checkout (a baseline)
    python benchmarks/rng.py --ab OLD_RANDOM_PY   # A/B: an older ember/kernels/cpu/random.py against
                                                  # the current one, interleaved, same generator
    python benchmarks/rng.py --only randn         # the cases whose name contains "randn"

ember's numbers are torch's bit for bit (issue 15): mt19937 words (NumPy's MT19937, or a jitted
copy of it for big draws) and ATen's transforms replayed in NumPy, including the float32 AVX2
Box-Muller kernel of randn (exact avx_mathfun log/sincos with GCC's fused multiply-adds). With
numba installed (the `numba` extra), fills of at least 4096 elements run the same arithmetic
jitted; EMBER_RNG_NUMBA=0 turns that off. NumPy's column is its own generator (PCG64:
standard_normal / random < p), i.e. about what the old PCG64-based ember paid.
Every round runs ember, torch and NumPy back to back (the machine is shared and noisy); `min` is
the best round, the ratio is of the mins.
"""
import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--markdown", action="store_true")
ap.add_argument("--ember-root", default=ROOT)
ap.add_argument("--ab", metavar="OLD_RANDOM_PY")
ap.add_argument("--only", default="")
ap.add_argument("--rounds", type=int, default=15)
args = ap.parse_args()
sys.path.insert(0, args.ember_root)

import ember  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
N = 1_000_000


def timed(fns, rounds):
    """Interleaved rounds: per round each fn runs `number` times; returns per-call times per fn."""
    for f in fns:
        f()
    number = []
    for f in fns:
        t0 = time.perf_counter()
        f()
        number.append(max(1, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
    out = [[] for _ in fns]
    for _ in range(rounds):
        for f, k, acc in zip(fns, number, out):
            t0 = time.perf_counter()
            for _ in range(k):
                f()
            acc.append((time.perf_counter() - t0) / k)
    return out


def cases():
    xe, xt = ember.ones(N), torch.ones(N)
    g = np.random.default_rng(0)
    xn = np.ones(N, np.float32)

    def np_dropout():
        m = g.random(N, dtype=np.float32) < np.float32(0.5)
        return xn * (m / np.float32(0.5))
    small = [(f"randn{s}", s) for s in ((2, 3), (8, 8), (32, 32), (1000,), (64, 64))]
    return [
        ("randn(1M) float32", lambda m: m.randn(N), lambda: g.standard_normal(N, dtype=np.float32)),
        ("dropout(p=0.5) on 1M float32", lambda m: m.nn.functional.dropout(xe if m is ember else xt, 0.5),
         np_dropout),
        ("rand(1M) float32", lambda m: m.rand(N), lambda: g.random(N, dtype=np.float32)),
        ("randint(0, 1000, (1M,))", lambda m: m.randint(0, 1000, (N,)), lambda: g.integers(0, 1000, N)),
        ("randn(1M) float64", lambda m: m.randn(N, dtype=m.float64), lambda: g.standard_normal(N)),
        ("randperm(60000)", lambda m: m.randperm(60000), lambda: g.permutation(60000)),
        ("randperm(100)", lambda m: m.randperm(100), lambda: g.permutation(100)),
    ] + [(name, lambda m, s=s: m.randn(*s), lambda s=s: g.standard_normal(s, np.float32))
         for name, s in small]


def check(name, f):
    """ember's values are torch's (same seed, same call)."""
    ember.manual_seed(1234)
    torch.manual_seed(1234)
    a, b = f(ember), f(torch)
    same = a.numpy().tobytes() == b.numpy().tobytes()
    if not same:
        raise SystemExit(f"{name}: ember's values differ from torch's")


def main():
    if args.ab:
        return ab()
    rows = []
    for name, f, fn in cases():
        if args.only not in name:
            continue
        check(name, f)
        te, tt, tn = timed([lambda f=f: f(ember), lambda f=f: f(torch), fn], args.rounds)
        r = [min(te), min(tt), min(tn), statistics.median(te), statistics.median(tt)]
        rows.append((name, *r))
        print(f"{name:30s} ember {fmt(r[0])} (median {fmt(r[3])})  torch {fmt(r[1])} (median {fmt(r[4])})"
              f"  numpy {fmt(r[2])}  ember/torch {r[0] / r[1]:6.2f}x", flush=True)
    if args.markdown:
        lines = ["", f"`python benchmarks/rng.py --markdown` on {platform.machine()} ({os.cpu_count()} cores), torch "
                 f"{torch.__version__} (1 thread), NumPy {np.__version__}, CPU capability "
                 f"{torch.backends.cpu.get_cpu_capability()}, numba "
                 f"{'on' if _numba_on() else 'off'}; min of {args.rounds} interleaved rounds.", "",
                 "| case | ember | torch | NumPy | ember / torch |", "|---|---:|---:|---:|---:|"]
        for name, te, tt, tn, _me, _mt in rows:
            lines.append(f"| {name} | {fmt(te)} | {fmt(tt)} | {fmt(tn)} | {te / tt:.2f} |")
        print("\n".join(lines))


def _numba_on():
    try:
        from ember.kernels.cpu import random as r
        return bool(r._numba())
    except Exception:
        return False


def fmt(t):
    return f"{t * 1e3:8.2f} ms" if t >= 1e-3 else f"{t * 1e6:8.1f} us"


def ab():
    """An older random.py (loaded as a separate module on the same generator) against the current."""
    from ember.core import dtype as D
    from ember.kernels.cpu import random as new
    spec = importlib.util.spec_from_file_location("random_before", args.ab)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    ab_cases = [(f"randn{s}", lambda m, s=s: m.randn_generator(s, None))
                for s in ((2, 3), (8, 8), (32, 32), (1000,), (64, 64), (N,))]
    ab_cases += [
        ("randn(64) float64", lambda m: m.randn_generator((64,), None, D.float64)),
        ("randn(1M) float64", lambda m: m.randn_generator((N,), None, D.float64)),
        ("randperm(100)", lambda m: m.randperm_generator(100, None)),
        ("randperm(60000)", lambda m: m.randperm_generator(60000, None)),
        ("bernoulli_(0.5) 1M", lambda m: m.bernoulli_float_(np.empty(N, np.float32), 0.5)),
        ("rand(1M)", lambda m: m.rand_generator((N,), None)),
    ]
    for name, f in ab_cases:
        if args.only not in name:
            continue
        to, tn = timed([lambda f=f: f(old), lambda f=f: f(new)], args.rounds)
        print(f"{name:22s} before {fmt(min(to))}  after {fmt(min(tn))}  speed-up {min(to) / min(tn):6.2f}x",
              flush=True)


if __name__ == "__main__":
    main()
