"""25-step activation chains, forward + backward: ember vs torch in one process (and, with
--base DIR, ember at another checkout, e.g. a `git worktree add /tmp/h/fb_base HEAD`, run
interleaved in subprocesses). Prints medians (us) and ratios as a Markdown table.

    python benchmarks/fused_backward.py [--base /tmp/h/fb_base] [--reps 200]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHAINS = {
    "tanh": lambda lib, x, b: (x * b).tanh(),
    "sigmoid": lambda lib, x, b: (x * b).sigmoid(),
    "relu": lambda lib, x, b: (x * b).relu(),
    "gelu": lambda lib, x, b: lib.nn.functional.gelu(x * b),
}
SIZES = (16, 1000)


def _bench(lib, chain, n, reps):
    import numpy as np
    rng = np.random.default_rng(0)
    b = lib.tensor(np.full(n, 0.9, dtype=np.float32), requires_grad=True)
    x0 = lib.tensor(rng.standard_normal(n).astype(np.float32))
    f = CHAINS[chain]

    def step():
        x = x0
        for _ in range(25):
            x = f(lib, x, b)
        x.sum().backward()
        b.grad = None
    for _ in range(5):
        step()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def _handle(lib, name):
    """What the derivative formulas call: ember's operator handle, torch's resolved overload."""
    if lib.__name__ == "ember":
        from ember._generated import ops as _ops
        return getattr(_ops, name).call
    return getattr(lib.ops.aten, name).default


def _kernels(reps):
    """One backward step, per call (us): the fused op vs the formula as separate ops vs torch's op."""
    import numpy as np
    import torch

    import ember
    torch.set_num_threads(1)
    rows = {}
    for n in SIZES:
        a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        for lib in (ember, torch):
            g, y = lib.tensor(a), lib.tensor(np.tanh(a))
            tb, sb = _handle(lib, "tanh_backward"), _handle(lib, "sigmoid_backward")
            cases = {"tanh_backward op": lambda tb=tb, g=g, y=y: tb(g, y),
                     "g * (1 - y * y) (3 ops)": lambda g=g, y=y: g * (1 - y * y),
                     "sigmoid_backward op": lambda sb=sb, g=g, y=y: sb(g, y),
                     "g * (1 - y) * y (3 ops)": lambda g=g, y=y: g * (1 - y) * y}
            for name, f in cases.items():
                ts = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    for _ in range(20):
                        f()
                    ts.append((time.perf_counter() - t0) / 20)
                rows.setdefault(f"{name} / {n}", {})[lib.__name__] = statistics.median(ts) * 1e6
    print("| per call / n | ember us | torch us | ember/torch |")
    print("|---|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {v['ember']:.1f} | {v['torch']:.1f} | {v['ember'] / v['torch']:.2f}x |")


def _child(reps):
    """ember and torch in this one process, alternating per chain (blocks of reps // 4)."""
    import torch

    import ember
    torch.set_num_threads(1)
    out = {}
    for c in CHAINS:
        for n in SIZES:
            e, t = [], []
            for _ in range(4):
                e.append(_bench(ember, c, n, max(reps // 4, 5)))
                t.append(_bench(torch, c, n, max(reps // 4, 5)))
            out[f"{c}/{n}"] = (statistics.median(e), statistics.median(t))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--kernels", action="store_true", help="only the per-call kernel table")
    a = ap.parse_args()
    if a.kernels:
        _kernels(a.reps)
        return
    if a.child:
        print(json.dumps(_child(a.reps)))
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"this tree": here} | ({"base": a.base} if a.base else {})
    runs = {k: [] for k in trees}
    for _ in range(a.rounds):                      # interleaved: this tree, base, this tree, ...
        for k, d in trees.items():
            out = subprocess.run([sys.executable, os.path.join(here, "benchmarks/fused_backward.py"),
                                  "--child", "--reps", str(a.reps)], cwd=d, capture_output=True,
                                 text=True, check=True, env=dict(os.environ, PYTHONPATH=d))
            runs[k].append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = list(runs["this tree"][0])
    # per tree: medians over rounds of ember's time and of torch's time in the same processes
    med = {k: {key: [statistics.median(r[key][i] for r in v) for i in (0, 1)] for key in keys}
           for k, v in runs.items()}
    hdr = ["chain (25 steps, fwd+bwd) / n"]
    for k in trees:
        hdr += [f"{k}: ember us", f"{k}: torch us", f"{k}: ember/torch"]
    if a.base:
        hdr.append("ember this/base")
    print("| " + " | ".join(hdr) + " |")
    print("|---" * len(hdr) + "|")
    for key in keys:
        row = [key]
        for k in trees:
            e, t = med[k][key]
            row += [f"{e:.0f}", f"{t:.0f}", f"{e / t:.2f}x"]
        if a.base:
            row.append(f"{med['this tree'][key][0] / med['base'][key][0]:.2f}x")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
