"""Per-sample gradients of an MLP at batch 64: vmap(grad(loss)) against a Python loop over the
samples, in ember and in torch (torch.func) in the same run. Prints a markdown table.

    python benchmarks/func_vmap.py [--batch 64] [--repeat 7]

The figure of merit is each library's own ratio loop / vmap (issue 14's target: ember >= 5x).
Times are medians on a noisy machine: read the ratios, not the digits.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import ember  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


def func_module(lib):
    """lib.func where the library has it (ember.func is being written alongside ember.vmap)."""
    return lib.func if importlib.util.find_spec(lib.__name__ + ".func") is not None else None


def grad_of(lib, f):
    """lib.func.grad where the library has it; else the same thing with autograd.grad."""
    func = func_module(lib)
    if func is not None and hasattr(func, "grad"):
        return func.grad(f)

    def g(params, *args):
        ps = tuple(p.detach().requires_grad_() for p in params)
        with lib.enable_grad():
            return lib.autograd.grad(f(ps, *args), ps)
    return g


def make_case(lib, batch, rng):
    F = lib.nn.functional
    shapes = [(128, 784), (128,), (10, 128), (10,)]
    params = tuple(lib.tensor(rng.standard_normal(s).astype(np.float32) * 0.05) for s in shapes)
    x = lib.tensor(rng.standard_normal((batch, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, batch))

    def loss(ps, xi, yi):
        w1, b1, w2, b2 = ps
        h = F.relu(F.linear(xi, w1, b1))
        return F.cross_entropy(F.linear(h, w2, b2).unsqueeze(0), yi.unsqueeze(0))

    g = grad_of(lib, loss)
    vm = lib.vmap
    per_sample = vm(g, in_dims=(None, 0, 0))

    def run_vmap():
        return per_sample(params, x, y)

    def run_loop():
        gs = [g(params, x[i], y[i]) for i in range(batch)]
        return [lib.stack([gi[k] for gi in gs]) for k in range(len(params))]
    return run_vmap, run_loop


def timeit(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    rows = []
    results = {}
    for name, lib in (("ember", ember), ("torch", torch)):
        rv, rl = make_case(lib, args.batch, np.random.default_rng(0))
        results[name] = [np.asarray(t.detach()) for t in rv()], [np.asarray(t.detach()) for t in rl()]
        tv, tl = timeit(rv, args.repeat), timeit(rl, args.repeat)
        rows.append((name, tv, tl))
    for a, b in zip(*results["ember"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(results["ember"][0], results["torch"][0]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)
    print(f"MLP 784-128-10, per-sample gradients, batch {args.batch} (float32, torch on one thread)\n")
    print("| library | vmap(grad) ms | loop ms | loop / vmap |")
    print("|---|---|---|---|")
    for name, tv, tl in rows:
        print(f"| {name} | {tv * 1e3:.2f} | {tl * 1e3:.2f} | {tl / tv:.1f}x |")


if __name__ == "__main__":
    main()
