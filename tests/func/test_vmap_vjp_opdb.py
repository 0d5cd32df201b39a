"""Backward formulas through the batching rules: for every op of the op database that has a gradient,
vmap over a batch of cotangents of its vector-Jacobian product (jacrev's inner loop; ember runs the
recorded backward formulas on BatchedTensors) equals torch.vmap over torch.func.vjp, and equals
ember's own loop over the cotangents. float64, the first sample of each op, 3 cotangents."""
import warnings

import numpy as np
import pytest
import torch
from harness import check
from opdb import materialize, op_db, op_ids

import ember

GRAD_OPS = [op for op in op_db if op.supports_autograd]
B = 3


def _outputs(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def _float_outputs(lib, outs):
    return [o for o in outs if isinstance(o, lib.Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)]


@pytest.mark.parametrize("op", GRAD_OPS, ids=op_ids(GRAD_OPS))
def test_vmap_of_vjp(op):
    dtype = "float64" if "float64" in op.grad_dtypes else op.grad_dtypes[0]
    sample = op.grad_samples(dtype)[0]
    ea, ta, ek, tk = materialize(sample, dtype, seed=0)
    pos = [i for i, x in enumerate(ta) if isinstance(x, torch.Tensor) and x.dtype.is_floating_point]
    if not pos:
        pytest.skip("no floating-point input")

    def call(L, args, kw, xs):
        a = list(args)
        for i, x in zip(pos, xs):
            a[i] = x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return op.op(L, *a, **kw)

    # torch: vmap over the vjp function of torch.func.vjp
    txs = [ta[i] for i in pos]
    tout, vjp_fn = torch.func.vjp(lambda *xs: tuple(_float_outputs(torch, _outputs(call(torch, ta, tk, xs)))), *txs)
    if not tout:
        pytest.skip("no floating-point output")
    rng = np.random.default_rng(1)
    cots = [rng.standard_normal((B,) + tuple(o.shape)) + (1j * rng.standard_normal((B,) + tuple(o.shape))
                                                           if o.dtype.is_complex else 0) for o in tout]
    tcots = tuple(torch.tensor(c, dtype=o.dtype) for c, o in zip(cots, tout))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tg = torch.vmap(vjp_fn)(tcots)
    except Exception as e:
        pytest.skip(f"torch.vmap(vjp) refuses it: {type(e).__name__}: {str(e).splitlines()[0][:150]}")

    # ember: the graph recorded once, autograd.grad under vmap with batched cotangents
    exs = [ea[i].detach().requires_grad_() for i in pos]
    eout = _float_outputs(ember, _outputs(call(ember, ea, ek, exs)))
    ecots = tuple(ember.tensor(c, dtype=o.dtype) for c, o in zip(cots, eout))

    def vjp(*gs):
        return ember.autograd.grad(eout, exs, gs, retain_graph=True, allow_unused=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eg = ember.vmap(vjp)(*ecots)
        loop = [vjp(*[c[k] for c in ecots]) for k in range(B)]
    atol, rtol = op.tols.get(dtype, (1e-6, 1e-6)) if dtype == "float64" else (1e-4, 1e-4)
    atol, rtol = atol or 1e-6, rtol or 1e-6
    for j, (e, t) in enumerate(zip(eg, tg)):
        if t is None or e is None:
            continue
        check(e, t, atol=atol, rtol=rtol)
        check(e, torch.stack([torch.tensor(np.asarray(lg[j])) for lg in loop]), atol=atol, rtol=rtol)
