"""x.sum() of float32/float64 vectors: ember (the checkout beside this script) against torch in
the same process, with numba loaded or not (the exact sum's jitted loops run once it is).

    python benchmarks/sum_exact.py [--numba] [--threads N]
    python benchmarks/sum_exact.py --ab /path/to/before [--rounds 3]   # A/B, alternating processes

Prints one line per size: ember's and torch's median time per call. With --ab, runs this script
of both checkouts in turn, `rounds` times each way, and prints the median times and B/A.
"""
import os
import statistics
import subprocess
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = (16, 1000, 10**5, 10**6)


def median_time(fn, target=0.2):
    t = timeit.Timer(fn)
    n, total = 1, 0.0
    while True:
        total = t.timeit(n)
        if total > 0.02:
            break
        n *= 4
    reps = max(1, int(n * target / 7 / total))
    return statistics.median(t.timeit(reps) / reps for _ in range(7))


def measure(use_numba, threads):
    sys.path.insert(0, ROOT)
    import numpy as np
    import torch

    import ember
    if use_numba:
        import numba  # noqa: F401
    torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    rng = np.random.default_rng(0)
    for dt in ("float32", "float64"):
        for n in SIZES:
            x = rng.standard_normal(n).astype(dt)
            e, t = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
            e.sum()
            print(f"{dt} {n} {median_time(e.sum):.9f} {median_time(t.sum):.9f}", flush=True)


def ab(before, rounds, extra):
    res = {}
    for _ in range(rounds):
        for tag, root in (("A", before), ("B", ROOT)):
            out = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "sum_exact.py"), *extra],
                                 capture_output=True, text=True, check=False)
            if out.returncode:
                sys.exit(out.stderr)
            for line in out.stdout.split("\n"):
                if line:
                    dt, n, e, t = line.split()
                    res.setdefault((dt, int(n)), {"A": [], "B": [], "tA": [], "tB": []})
                    res[dt, int(n)][tag].append(float(e))
                    res[dt, int(n)]["t" + tag].append(float(t))
    print(f"A = {before}\nB = {ROOT}\n{rounds} alternating rounds, medians; args {extra}\n")
    print("| dtype | n | A ember | B ember | B/A | torch (B's runs) | B/torch |")
    print("|---|---|---|---|---|---|---|")
    for (dt, n), r in res.items():
        a, b, t = (statistics.median(r[k]) for k in ("A", "B", "tB"))
        print(f"| {dt} | {n} | {a * 1e6:.2f} us | {b * 1e6:.2f} us | {b / a:.2f} | {t * 1e6:.2f} us | {b / t:.2f} |")


def main():
    argv = sys.argv[1:]
    threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 1
    if "--ab" in argv:
        rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
        extra = (["--numba"] if "--numba" in argv else []) + ["--threads", str(threads)]
        ab(argv[argv.index("--ab") + 1], rounds, extra)
    else:
        measure("--numba" in argv, threads)


if __name__ == "__main__":
    main()
