"""ember vs torch vs NumPy, same process, same inputs. Prints medians and ratios.

    python benchmarks/run.py            # print the table
    python benchmarks/run.py --write    # also rewrite BENCHMARKS.md

Times are medians of repeated runs on a noisy 2-core machine: read the ratios, not the digits.
"""
import os
import platform
import statistics
import subprocess
import sys
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ember  # noqa: E402
import torch  # noqa: E402
from ember.utils.benchmark import Timer  # noqa: E402

torch.set_num_threads(1)


def median_time(fn, target=0.2, repeat=7):
    """Median seconds per call, measured with ember's own torch.utils.benchmark.Timer."""
    t = timeit.Timer(fn)
    warm = 0.0
    while warm < 0.05:  # warm up first: torch's first autograd calls pay a one-time cost
        warm += t.timeit(10)
    m = Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=target)
    return m.median


def tiny_cases():
    rng = np.random.default_rng(0)
    a16 = rng.standard_normal(16).astype(np.float32)
    b16 = rng.standard_normal(16).astype(np.float32)
    m4a = rng.standard_normal((4, 4)).astype(np.float32)
    m4b = rng.standard_normal((4, 4)).astype(np.float32)
    E = {"a": ember.from_numpy(a16.copy()), "b": ember.from_numpy(b16.copy()),
         "m": ember.from_numpy(m4a.copy()), "n": ember.from_numpy(m4b.copy())}
    T = {"a": torch.from_numpy(a16.copy()), "b": torch.from_numpy(b16.copy()),
         "m": torch.from_numpy(m4a.copy()), "n": torch.from_numpy(m4b.copy())}
    N = {"a": a16.copy(), "b": b16.copy(), "m": m4a.copy(), "n": m4b.copy()}
    cases = [
        ("add (16 el.)", lambda d: (lambda: d["a"] + d["b"]), lambda d: (lambda: np.add(d["a"], d["b"]))),
        ("mul (16 el.)", lambda d: (lambda: d["a"] * d["b"]), lambda d: (lambda: np.multiply(d["a"], d["b"]))),
        ("relu (16 el.)", lambda d: (lambda: d["a"].relu()), lambda d: (lambda: np.maximum(d["a"], 0))),
        ("sum (16 el.)", lambda d: (lambda: d["a"].sum()), lambda d: (lambda: d["a"].sum())),
        ("matmul 4x4", lambda d: (lambda: d["m"] @ d["n"]), lambda d: (lambda: d["m"] @ d["n"])),
        ("transpose 4x4", lambda d: (lambda: d["m"].transpose(0, 1)), lambda d: (lambda: d["m"].swapaxes(0, 1))),
        ("index x[1] (4x4)", lambda d: (lambda: d["m"][1]), lambda d: (lambda: d["m"][1])),
        ("slice x[1:3] (4x4)", lambda d: (lambda: d["m"][1:3]), lambda d: (lambda: d["m"][1:3])),
    ]
    return E, T, N, cases


def large_cases():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1_000_000).astype(np.float32)
    A = rng.standard_normal((1024, 1024)).astype(np.float32)
    B = rng.standard_normal((1024, 1024)).astype(np.float32)
    E = {"x": ember.from_numpy(x.copy()), "A": ember.from_numpy(A.copy()), "B": ember.from_numpy(B.copy())}
    T = {"x": torch.from_numpy(x.copy()), "A": torch.from_numpy(A.copy()), "B": torch.from_numpy(B.copy())}
    N = {"x": x.copy(), "A": A.copy(), "B": B.copy()}

    def chain_lib(d):
        return lambda: ((d["x"] * 2.0 + 1.0).relu() - d["x"]).abs()

    def chain_np(d):
        return lambda: np.abs(np.maximum(d["x"] * np.float32(2.0) + np.float32(1.0), 0) - d["x"])
    return E, T, N, [
        ("pointwise chain, 1M el. (5 ops)", chain_lib, chain_np),
        ("matmul 1024x1024", lambda d: (lambda: d["A"] @ d["B"]), lambda d: (lambda: d["A"] @ d["B"])),
    ]


def autograd_cases():
    rng = np.random.default_rng(0)
    a16 = rng.standard_normal(16).astype(np.float32)
    b16 = rng.standard_normal(16).astype(np.float32)

    def make(lib):
        a = lib.tensor(a16, requires_grad=True)
        b = lib.tensor(b16, requires_grad=True)
        g = lib.tensor(np.ones(16, np.float32))

        def four():
            y = ((a * b + a) * b - b)
            y.backward(g)

        def chain50():
            y = a
            for _ in range(25):
                y = y * b
                y = y + a
            y.backward(g)
        return four, chain50
    e4, e50 = make(ember)
    t4, t50 = make(torch)
    return [("4-op forward+backward (16 el.)", e4, t4), ("50-op chain forward+backward (16 el.)", e50, t50)]


def run_table(E, T, N, cases):
    rows = []
    for name, mk, mk_np in cases:
        try:
            te = median_time(mk(E))
        except Exception as exc:  # an op not implemented yet: report it, keep going
            rows.append((name, None, median_time(mk(T)), median_time(mk_np(N)), repr(exc)[:60]))
            continue
        rows.append((name, te, median_time(mk(T)), median_time(mk_np(N)), ""))
    return rows


def import_time(mod):
    code = f"import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # cached .pyc, as users have
    subprocess.run([sys.executable, "-c", f"import {mod}"], env=env, cwd=ROOT)
    vals = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 cwd=ROOT, env=env).stdout) for _ in range(5)]
    return statistics.median(vals)


def fmt_us(t):
    return "—" if t is None else f"{t * 1e6:.2f}"


def fmt_ms(t):
    return "—" if t is None else f"{t * 1e3:.2f}"


def main():
    out = []
    out.append(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
               f"NumPy {np.__version__}, torch {torch.__version__} (1 thread)\n")
    out.append("### Tiny-op latency (median µs per call; target ember/torch ≤ 1.5)\n")
    out.append("| op | ember µs | torch µs | NumPy µs | ember/torch | ember/NumPy |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for name, te, tt, tn, err in run_table(*tiny_cases()):
        r = "—" if te is None else f"{te / tt:.2f}"
        rn = "—" if te is None else f"{te / tn:.2f}"
        out.append(f"| {name} | {fmt_us(te)} | {fmt_us(tt)} | {fmt_us(tn)} | {r} | {rn} |" + (f" {err}" if err else ""))
    out.append("\n### Large-op throughput (median ms per call; target NumPy/ember ≥ 0.9)\n")
    out.append("| op | ember ms | torch ms | NumPy ms | ember/torch | NumPy/ember |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for name, te, tt, tn, err in run_table(*large_cases()):
        r = "—" if te is None else f"{te / tt:.2f}"
        rn = "—" if te is None else f"{tn / te:.2f}"
        out.append(f"| {name} | {fmt_ms(te)} | {fmt_ms(tt)} | {fmt_ms(tn)} | {r} | {rn} |" + (f" {err}" if err else ""))
    out.append("\n### Autograd: forward + backward on small graphs (median µs; target ember/torch ≤ 1.0)\n")
    out.append("| graph | ember µs | torch µs | ember/torch |")
    out.append("|---|---:|---:|---:|")
    for name, fe, ft in autograd_cases():
        te, tt = median_time(fe), median_time(ft)
        out.append(f"| {name} | {fmt_us(te)} | {fmt_us(tt)} | {te / tt:.2f} |")
    ie, it = import_time("ember"), import_time("torch")
    out.append(f"\n### Import time (median of 5 fresh processes)\n\n`import ember`: {ie:.3f} s · "
               f"`import torch`: {it:.3f} s · ratio {ie / it:.2f} (target: ember ≤ 0.3 s)\n")
    text = "\n".join(out)
    print(text)
    return text


def write(text):
    """Replace this script's part of BENCHMARKS.md (from its "Machine:" line to the training-steps
    section that benchmarks/train_steps.py fills), keeping the header and the later sections."""
    path = os.path.join(ROOT, "BENCHMARKS.md")
    try:
        with open(path) as f:
            old = f.read()
    except FileNotFoundError:
        old = ""
    start, end = old.find("Machine: "), old.find("### Training steps")
    if start < 0:
        new = ("# Benchmarks\n\nCommand: `python benchmarks/run.py --write` (inside `.venv`, after "
               "`bash bin/test` has installed the test extras).\n\n" + text)
    else:
        new = old[:start] + text + ("\n" + old[end:] if end > start else "")
    with open(path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    text = main()
    if "--write" in sys.argv:
        write(text)
