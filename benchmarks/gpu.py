"""ember vs torch on a CUDA GPU, same process, same inputs: 4096x4096 matmul, a 16M-element
pointwise chain and a softmax. Prints medians and ratios.

    python benchmarks/gpu.py              # needs a GPU, numba (and CuPy for cuBLAS) and a CUDA torch
    python benchmarks/gpu.py --sizes tiny # the same code path on tiny sizes (EMBER_CUDA_SIM=1 works)

Every timed call ends with a synchronize of its own library: timing launches without it measures
only the enqueueing (the point the device seeds make), so the medians here include the kernels.
Without a GPU the script says so and exits 0: BENCHMARKS.md reports that rather than a guess.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ember  # noqa: E402

SIZES = {"full": dict(mm=4096, chain=16 * 2**20, softmax=(4096, 4096)),
         "tiny": dict(mm=32, chain=1024, softmax=(8, 32))}


def median_time(fn, sync, repeat=9):
    fn()
    sync()  # warm-up: kernels compiled, allocator caches filled
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cases(lib, dev, size, rng):
    n = size["mm"]
    a = lib.tensor(rng.standard_normal((n, n), dtype=np.float32), device=dev)
    b = lib.tensor(rng.standard_normal((n, n), dtype=np.float32), device=dev)
    x = lib.tensor(rng.standard_normal(size["chain"], dtype=np.float32), device=dev)
    y = lib.tensor(rng.standard_normal(size["chain"], dtype=np.float32), device=dev)
    s = lib.tensor(rng.standard_normal(size["softmax"], dtype=np.float32), device=dev)
    return [(f"matmul {n}x{n}", lambda: a @ b),
            (f"pointwise chain, {size['chain']} el. (5 ops)", lambda: ((x * y + 1.0).relu() * x).exp()),
            (f"softmax {size['softmax'][0]}x{size['softmax'][1]}, dim=-1", lambda: s.softmax(-1))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", choices=sorted(SIZES), default="full")
    args = p.parse_args()
    if not ember.cuda.is_available():
        print("No CUDA device for ember (ember.cuda.is_available() is False): nothing measured.")
        return 0
    try:
        import torch
    except ImportError:
        torch = None
    torch_ok = torch is not None and torch.cuda.is_available()
    size = SIZES[args.sizes]
    print(f"ember on {ember.cuda.get_device_name(0)}; torch: "
          f"{torch.__version__ + ' on CUDA' if torch_ok else 'no CUDA build here, ember only'}")
    print("\n| op | ember ms | torch ms | ember/torch |\n|---|---:|---:|---:|")
    rng = np.random.default_rng(0)
    ecases = cases(ember, "cuda", size, rng)
    tcases = cases(torch, "cuda", size, np.random.default_rng(0)) if torch_ok else [None] * len(ecases)
    for (name, efn), tc in zip(ecases, tcases):
        te = median_time(efn, ember.cuda.synchronize)
        if tc is None:
            print(f"| {name} | {te * 1e3:.3f} | - | - |")
            continue
        tt = median_time(tc[1], torch.cuda.synchronize)
        print(f"| {name} | {te * 1e3:.3f} | {tt * 1e3:.3f} | {te / tt:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
