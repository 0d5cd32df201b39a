"""mode="max-autotune": each fused kernel's variants timed on the graph's shapes; the fastest kept.

torch's max-autotune benchmarks Triton configurations and ATen's kernels for each op at compile
time. Here a fused kernel's variants are: a numba loop, serial or split over the threads with
prange, and the NumPy generator with blocks of 4K, 32K or 256K elements. Only variants that compute
what the graph may compute are tried: a training graph keeps NumPy's ufuncs for transcendentals
(compile_fx), so its numba variants are offered only for kernels of exact operations; a kernel
ending in a fused row reduction is numba-only; NumPy cannot express some prims (erf).

Each variant is run on arrays of the graph's own shapes and dtypes (copies of the capture's
example values) for at least BUDGET seconds per round, best of three rounds. The choice and
every time are written into the output code (a comment above the kernel), kept in the compiled
call's `autotune` list, and printed in torch's AUTOTUNE table shape with EMBER_LOGS=autotuning.
"""
import time

import numpy as np

from ember._dynamo import logs
from ember._inductor import config, lowering, runtime

BLOCKS = (4096, 32768, 262144)
BUDGET = 0.002   # seconds of calls per timing round


def variants(e, nb_ok, use_numba, fuse_red, flat, numel, default):
    """(label, numba?, parallel?, NumPy block) for each variant worth timing; default first."""
    out = [default]
    if nb_ok:
        for par in (False, True):
            if par and (config.threads() < 2 or numel < 4096):
                continue
            out.append(("numba parallel" if par else "numba", True, par, None))
    numpy_ok = not fuse_red and not any(p.name in lowering.NUMPY_UNSUPPORTED for m in e.members for p in m.prims)
    if numpy_ok:
        for b in (BLOCKS if flat else (config.numpy_block,)):
            out.append((f"numpy block {b}", False, False, b))
    seen, uniq = set(), []
    for v in out:
        if v[0] not in seen:
            seen.add(v[0])
            uniq.append(v)
    return uniq


def _arrays(e, vals, red):
    """Outputs and inputs for one call of kernel e, shaped as the graph's (an in-place output is its
    input's array, as in the output code)."""
    ins = []
    by_slot = {}
    for s in e.ins:
        v = vals[s]
        a = np.array(v._np, dtype=lowering.compute_np(v._dtype), copy=True)
        by_slot[s] = a
        ins.append(a)
    outs = []
    for s in e.outs:
        v = vals[s]
        outs.append(by_slot[s] if s in by_slot else np.empty(tuple(v._shape), lowering.compute_np(v._dtype)))
    if red is not None:
        r = vals[red.out]
        outs.append(np.empty(tuple(r._shape), lowering.compute_np(r._dtype)))
        ins.append(red.row[1])
    return outs + ins


def _time(kernel, args):
    kernel(*args)
    best = float("inf")
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while True:
            kernel(*args)
            n += 1
            t = time.perf_counter() - t0
            if t >= BUDGET or n >= 1000:
                break
        best = min(best, t / n)
    return best


def pick(srcs, e, vals, red, modname, ops):
    """Time each (label, numba?, source); returns (report, comment for the output code). srcs[0]
    is the default."""
    args = _arrays(e, vals, red)
    times = {}
    for label, nb, src in srcs:
        mod = runtime.load_module(src, f"{'nb' if nb else 'np'}_{modname}")
        times[label] = _time(mod.kernel, args)
    choice = min(times, key=times.get)
    best = times[choice]
    order = sorted(times, key=times.get)
    comment = "\n# max-autotune: " + ", ".join(f"{lb} {times[lb] * 1e3:.4f} ms" for lb in order) + f" -> {choice}"
    if logs.autotuning:
        rows = "\n".join(f"  {lb} {times[lb] * 1e3:.4f} ms {100 * best / times[lb]:.1f}%" for lb in order)
        logs.emit("autotuning", f"AUTOTUNE {modname}({'x'.join(map(str, e.shape)) or 'scalar'}) {ops}\n{rows}")
    return {"kernel": modname, "ops": ops, "shape": tuple(e.shape), "choice": choice, "times": times}, comment
