"""vmap on every op of the op database, against torch.vmap on the same data: the batch dim first
(in_dims=0), second (in_dims=1: a 0-d input keeps it first), only the first tensor batched (in_dims None
for the others), and two nested vmaps.

Each op runs in float32 (or its first dtype) on its first two non-empty samples, with batch 3 (nested:
2 x 3). Where torch.vmap itself raises on a sample, the sample is left out; an op whose every sample
torch refuses is skipped, with torch's reason."""
import warnings

import pytest
import torch
from harness import check, tol_of
from opdb import materialize, op_db

import ember

B = 3


def _dtype(op):
    return "float32" if "float32" in op.dtypes else op.dtypes[0]


def _samples(op, dtype):
    out = []
    for s in op.sample_inputs(dtype):
        if s.name in ("zero-size",):
            continue
        out.append(s)
        if len(out) == 2:
            break
    return out


def _stack(lib, xs, dim):
    return lib.stack(xs, dim)


def batched_inputs(sample, dtype, n, dim, seed0=0):
    """n materializations of `sample` (different seeds) stacked along `dim` (0 for 0-d tensors):
    ember args, torch args, in_dims, and the kwargs of the first one (unbatched)."""
    per = [materialize(sample, dtype, seed=seed0 + k) for k in range(n)]
    ea, ta, dims = [], [], []
    for j, t0 in enumerate(per[0][1]):
        if isinstance(t0, torch.Tensor):
            d = dim if t0.dim() >= dim else 0
            ea.append(_stack(ember, [p[0][j] for p in per], d))
            ta.append(_stack(torch, [p[1][j] for p in per], d))
            dims.append(d)
        else:
            ea.append(per[0][0][j])
            ta.append(t0)
            dims.append(None)
    return ea, ta, tuple(dims), per[0][2], per[0][3]


def _vmapped(lib, fn, kw, in_dims, nested=False):
    f = lambda *a: fn(lib, *a, **kw)  # noqa: E731
    if nested:
        return lib.vmap(lib.vmap(f, in_dims=in_dims), in_dims=in_dims)
    return lib.vmap(f, in_dims=in_dims)


def _run(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def compare_vmap(op, sample, dtype, mode):
    """One sample in one mode: None when torch.vmap refuses it (its message), else checks ember."""
    if mode == "nested":
        # stack 3 along 0, then 2 of those along 0: in_dims 0 at both levels
        per = [batched_inputs(sample, dtype, B, 0, seed0=10 * k) for k in range(2)]
        ea = [ember.stack([p[0][j] for p in per]) if d is not None else per[0][0][j]
              for j, d in enumerate(per[0][2])]
        ta = [torch.stack([p[1][j] for p in per]) if d is not None else per[0][1][j]
              for j, d in enumerate(per[0][2])]
        in_dims = tuple(0 if d is not None else None for d in per[0][2])
        ek, tk = per[0][3], per[0][4]
    else:
        ea, ta, in_dims, ek, tk = batched_inputs(sample, dtype, B, 1 if mode == "dim1" else 0)
        if mode == "none":
            first = next((j for j, d in enumerate(in_dims) if d is not None), None)
            if first is None:
                return "no tensor input"
            # the others unbatched: their first sample
            ea = [a if j == first or d is None else a.select(d, 0) for j, (a, d) in enumerate(zip(ea, in_dims))]
            ta = [a if j == first or d is None else a.select(d, 0) for j, (a, d) in enumerate(zip(ta, in_dims))]
            in_dims = tuple(d if j == first else None for j, d in enumerate(in_dims))
    if all(d is None for d in in_dims):
        return "no tensor input"
    nested = mode == "nested"
    try:
        t = _run(_vmapped(torch, op.op, tk, in_dims, nested), *ta)
    except Exception as e:  # torch cannot vmap this call: nothing to compare with
        return f"torch.vmap: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    e = _run(_vmapped(ember, op.op, ek, in_dims, nested), *ea)
    atol, rtol = tol_of(t, *ta, tols=op.tols)
    if dtype == "float32":
        atol, rtol = max(atol or 0, 1e-4), max(rtol or 0, 1e-4)  # batched BLAS sums in another order
    try:
        check(e, t, atol=atol, rtol=rtol)
    except AssertionError:
        # where torch.vmap disagrees with torch's own loop over the samples (linalg.solve with a
        # vector right-hand side under vmap), the loop is the oracle
        loop = _torch_loop(op.op, tk, ta, in_dims, nested)
        check(e, loop, atol=atol, rtol=rtol)
    return None


def _torch_loop(fn, kw, args, in_dims, nested):
    def once(args, k):
        return [a if d is None else a.select(d, k) for a, d in zip(args, in_dims)]

    def stack(rs):
        if isinstance(rs[0], torch.Tensor):
            return torch.stack(rs)
        return type(rs[0])(stack([r[j] for r in rs]) for j in range(len(rs[0])))
    n = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    if nested:
        return stack([_torch_loop(fn, kw, once(args, k), in_dims, False) for k in range(n)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return stack([fn(torch, *once(args, k), **kw) for k in range(n)])


MODES = ("dim0", "dim1", "none", "nested")


@pytest.mark.parametrize("op", op_db, ids=[op.name for op in op_db])
def test_vmap_op(op):
    dtype = _dtype(op)
    reasons = []
    ran = 0
    for sample in _samples(op, dtype):
        for mode in MODES:
            r = compare_vmap(op, sample, dtype, mode)
            if r is None:
                ran += 1
            else:
                reasons.append(f"{sample.name}/{mode}: {r}")
    if not ran:
        pytest.skip("; ".join(sorted(set(reasons)))[:300])
