"""torch.svd_lowrank / pca_lowrank against torch 2.13 on their OpInfo samples (seeded as the OpInfo does:
ember.randn draws torch's numbers). Singular vectors are unique up to sign (and ember.linalg.svd's signs
differ from torch's LAPACK build), so S, U diag(S) V^H and the columns up to sign are compared."""
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, to_ember
from tests.harness import check, same_error


def _compare(e, t, tol):
    eu, es, ev = e
    tu, ts, tv = t
    check(es, ts, atol=tol, rtol=tol)
    check(eu.matmul(ember.diag_embed(es).to(eu.dtype)).matmul(ev.mH),
          tu.matmul(torch.diag_embed(ts).to(tu.dtype)).matmul(tv.mH), atol=tol, rtol=tol)
    # columns equal up to sign: |<e_col, t_col>| == 1 where the singular values are distinct
    for a, b in ((eu, tu), (ev, tv)):
        d = (torch.from_numpy(a.numpy()).conj() * b).sum(-2).abs()
        keep = ts > 1e-6 * ts.amax(-1, keepdim=True).clamp_min(1e-30)
        assert torch.allclose(d[keep], torch.ones_like(d[keep]), atol=max(tol, 1e-3) * 10)


@pytest.mark.parametrize("name", ["svd_lowrank", "pca_lowrank"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opinfo(name, dtype):
    op = opinfos(names={name})[0]
    tol = 1e-4 if dtype == "float32" else 1e-9
    n = 0
    for s in op.sample_inputs("cpu", getattr(torch, dtype)):
        t = op.op(s.input, *s.args, **s.kwargs)  # torch.manual_seed(42) inside
        ember.manual_seed(42)
        a, b = to_ember(s.input), to_ember(s.args[0])
        e = getattr(ember, name)(a @ b.mT, **{k: to_ember(v) for k, v in s.kwargs.items()})
        _compare(e, t, tol)
        n += 1
    assert n


def test_errors():
    same_error(lambda lib: lib.pca_lowrank(lib.ones(3, 4), q=5))
    same_error(lambda lib: lib.pca_lowrank(lib.ones(3, 4), q=-1))
    same_error(lambda lib: lib.pca_lowrank(lib.ones(3, 4), niter=-1))
