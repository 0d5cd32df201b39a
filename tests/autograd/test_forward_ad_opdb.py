"""Forward-mode AD on the op database: every op with a derivative gives torch.autograd.forward_ad's
tangents on its float64 samples (or, where torch has no forward derivative, torch's error)."""
import warnings

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw
from harness import check
from opdb import materialize, op_db, op_ids

import ember
import ember.autograd.forward_ad as efw

GRAD_OPS = [op for op in op_db if op.supports_autograd and "float64" in op.grad_dtypes]


def _float(x, lib):
    return isinstance(x, lib.Tensor) and (x.is_floating_point() or x.is_complex())


def _run(lib, fw, op, args, kwargs, tangents):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with fw.dual_level():
            # torch copies the tangent into the primal's layout, which an expanded primal refuses
            duals = [fw.make_dual(x.clone() if 0 in x.stride() else x, lib.tensor(t, dtype=x.dtype))
                     if t is not None else x for x, t in zip(args, tangents)]
            out = op.op(lib, *duals, **kwargs)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            return [(fw.unpack_dual(o).primal.clone(), fw.unpack_dual(o).tangent)
                    if isinstance(o, lib.Tensor) else (o, None) for o in outs]


@pytest.mark.parametrize("op", GRAD_OPS, ids=op_ids(GRAD_OPS))
def test_jvp_matches_torch(op):
    for i, sample in enumerate(op.grad_samples("float64")):
        ea, ta, ek, tk = materialize(sample, "float64", seed=i)
        rng = np.random.default_rng(100 + i)
        tangents = [rng.standard_normal(tuple(t.shape)) if _float(t, torch) else None for t in ta]
        try:
            t_res = _run(torch, tfw, op, ta, tk, tangents)
        except NotImplementedError as err:
            with pytest.raises(NotImplementedError) as info:
                _run(ember, efw, op, ea, ek, tangents)
            assert str(info.value).splitlines()[0] == str(err).splitlines()[0]
            continue
        e_res = _run(ember, efw, op, ea, ek, tangents)
        assert len(e_res) == len(t_res)
        atol, rtol = op.tols.get("float64", (None, None))
        for (ep, et), (tp, tt) in zip(e_res, t_res):
            check(ep, tp, atol=atol, rtol=rtol)
            if tt is None or getattr(tt, "_is_zerotensor", lambda: False)():
                assert et is None or float(et.abs().sum()) == 0, f"{op.name}[{sample.name}]: unexpected tangent"
                continue
            assert et is not None, f"{op.name}[{sample.name}]: no tangent"
            check(et, tt.to(tp.dtype) if tt.dtype != tp.dtype else tt, atol=atol or 1e-7, rtol=rtol or 1e-6)
