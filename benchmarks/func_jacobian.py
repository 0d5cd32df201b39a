"""Jacobian of a 64->64 MLP: jacrev (vmap over vjp, one batched backward) against row-by-row
autograd.grad (one backward per output), in ember and in torch (torch.func) in the same run; jacfwd
(vmap over jvp, forward-mode AD) beside them. Prints a markdown table.

    python benchmarks/func_jacobian.py [--width 64] [--repeat 7]

The figure of merit is each library's own ratio rows / jacrev (issue 14's target: ember >= 5x).
Times are medians on a noisy machine: read the ratios, not the digits.
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
import ember.func  # noqa: E402,F401
import torch  # noqa: E402
import torch.func  # noqa: E402,F401

torch.set_num_threads(1)


def make_case(lib, width, rng):
    F = lib.nn.functional
    shapes = [(width, width), (width,), (width, width), (width,)]
    w1, b1, w2, b2 = (lib.tensor((rng.standard_normal(s) / np.sqrt(width)).astype(np.float32)) for s in shapes)
    x = lib.tensor(rng.standard_normal(width).astype(np.float32))

    def mlp(v):
        return F.linear(lib.tanh(F.linear(v, w1, b1)), w2, b2)

    def run_jacrev():
        return lib.func.jacrev(mlp)(x)

    def run_jacfwd():
        return lib.func.jacfwd(mlp)(x)

    def run_rows():
        xi = x.detach().requires_grad_()
        y = mlp(xi)
        rows = [lib.autograd.grad(y[i], xi, retain_graph=True)[0] for i in range(y.shape[0])]
        return lib.stack(rows)
    return run_jacrev, run_jacfwd, run_rows


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
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    rows, results = [], {}
    for name, lib in (("ember", ember), ("torch", torch)):
        jr, jf, rr = make_case(lib, args.width, np.random.default_rng(0))
        results[name] = [np.asarray(f().detach()) for f in (jr, jf, rr)]
        rows.append((name, timeit(jr, args.repeat), timeit(jf, args.repeat), timeit(rr, args.repeat)))
    for a in results["ember"][1:]:
        np.testing.assert_allclose(results["ember"][0], a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(results["ember"][0], results["torch"][0], rtol=1e-4, atol=1e-5)
    w = args.width
    print(f"Jacobian of an MLP {w}-{w}(tanh)-{w}, float32 (torch on one thread)\n")
    print("| library | jacrev ms | jacfwd ms | row-by-row autograd.grad ms | rows / jacrev | rows / jacfwd |")
    print("|---|---|---|---|---|---|")
    for name, tr, tf_, tl in rows:
        print(f"| {name} | {tr * 1e3:.2f} | {tf_ * 1e3:.2f} | {tl * 1e3:.2f} | {tl / tr:.1f}x | {tl / tf_:.1f}x |")


if __name__ == "__main__":
    main()
