# ruff: noqa: B023 - each lambda runs inside med() before the loop moves on
"""Per-op cost of ember's CUDA backend against torch on a real GPU (medians, same process).

Usage: EMBER_CUDA_SIM=0 python benchmarks/gpu_overhead.py (needs a GPU, numba with CUDA, and a CUDA
build of torch). Prints ember's and torch's microseconds per call and their ratio: small ops
measure the launch path (dispatcher, allocator, numba's launcher), big ones the kernels.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import ember  # noqa: E402


def med(fn, sync, n=30, inner=20):
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts)


def mlp_step(lib, dev):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10)).to(dev)
    opt = lib.optim.SGD(m.parameters(), lr=0.01)
    x = lib.randn(128, 784).to(dev)
    y = lib.randint(0, 10, (128,)).to(dev)

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
    return step


def main():
    if not (torch.cuda.is_available() and ember.cuda.is_available()):
        print("needs a GPU for both ember (numba) and torch")
        return
    ts, es = torch.cuda.synchronize, ember.cuda.synchronize
    rows = []
    for n in (1000, 1_000_000, 16_000_000):
        a, b = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        ea, eb = ember.rand(n).cuda(), ember.rand(n).cuda()
        rows.append((f"add {n}", med(lambda: ea + eb, es), med(lambda: a + b, ts)))
        rows.append((f"sum {n}", med(lambda: ea.sum(), es), med(lambda: a.sum(), ts)))
        rows.append((f"tanh*b+1 {n}", med(lambda: ember.tanh(ea) * eb + 1, es),
                     med(lambda: torch.tanh(a) * b + 1, ts)))
    for m in (256, 2048):
        a, ea = torch.rand(m, m, device="cuda"), ember.rand(m, m).cuda()
        rows.append((f"matmul {m}", med(lambda: ea @ ea, es, 10, 5), med(lambda: a @ a, ts, 10, 5)))
    rows.append(("MLP 784-256-10 b128 train step", med(mlp_step(ember, "cuda"), es, 15, 10),
                 med(mlp_step(torch, "cuda"), ts, 15, 10)))
    print(f"{'case':34s} {'ember us':>10s} {'torch us':>10s} {'ratio':>7s}")
    for name, e, t in rows:
        print(f"{name:34s} {e * 1e6:10.1f} {t * 1e6:10.1f} {e / t:7.2f}")


if __name__ == "__main__":
    main()
