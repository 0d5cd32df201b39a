"""torch.linalg.ldl_factor / ldl_factor_ex / ldl_solve (ember/_python_api/ldl.py) against torch 2.13:
the same pivots and info, LD and solutions within rounding (torch's LAPACK is MKL's), over real and
complex matrices, symmetric and Hermitian, batched, empty, singular and non-symmetric inputs (only
the lower triangle is read); torch's errors, including the internal assert a zero pivot hits in
ldl_factor; backward raising; out=; and the OpInfo samples."""
import numpy as np
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, to_ember
from tests.harness import check, same_error

TOL = {"float32": 1e-4, "float64": 1e-10, "complex64": 1e-4, "complex128": 1e-10}


def _matrix(g, shape, dtype):
    a = g.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * g.standard_normal(shape)
    return a


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("hermitian", [False, True])
def test_factor_and_solve_equal_torch(dtype, hermitian):
    g = np.random.default_rng(7)
    tol = TOL[dtype]
    for n in (1, 2, 3, 4, 6, 9):
        for k in range(8):
            a = _matrix(g, (n, n), dtype)
            if k % 3 == 0 and n > 2:           # zeros that force 2x2 pivots and interchanges
                a[0, 0] = a[1, 1] = 0
            ta = torch.tensor(a, dtype=getattr(torch, dtype))
            ea = ember.tensor(a, dtype=getattr(ember, dtype))
            r = torch.linalg.ldl_factor_ex(ta, hermitian=hermitian)
            e = ember.linalg.ldl_factor_ex(ea, hermitian=hermitian)
            assert np.array_equal(e.pivots.numpy(), r.pivots.numpy()), (n, k)
            check(e.info, r.info)
            check(e.LD, r.LD, atol=tol, rtol=tol)
            b = _matrix(g, (n, 2), dtype)
            x = torch.linalg.ldl_solve(r.LD, r.pivots, torch.tensor(b, dtype=ta.dtype), hermitian=hermitian)
            y = ember.linalg.ldl_solve(e.LD, e.pivots, ember.tensor(b, dtype=ea.dtype), hermitian=hermitian)
            check(y, x, atol=100 * tol, rtol=100 * tol)


def test_batched_broadcast_empty_and_return_types():
    g = np.random.default_rng(1)
    a = g.standard_normal((3, 4, 4))
    r = torch.linalg.ldl_factor(torch.tensor(a))
    e = ember.linalg.ldl_factor(ember.tensor(a))
    assert type(e).__name__ == "linalg_ldl_factor" and e._fields == ("LD", "pivots")
    assert type(ember.linalg.ldl_factor_ex(ember.tensor(a))).__name__ == "linalg_ldl_factor_ex"
    check(e.LD, r.LD, atol=1e-10, rtol=1e-10)
    check(e.pivots, r.pivots)
    b = g.standard_normal((2, 1, 4, 3))
    # batch dims broadcast (torch 2.13 crashes broadcasting them itself: expanded copies for it)
    want = torch.linalg.ldl_solve(r.LD.expand(2, 3, 4, 4).contiguous(), r.pivots.expand(2, 3, 4).contiguous(),
                                  torch.tensor(b).expand(2, 3, 4, 3).contiguous())
    check(ember.linalg.ldl_solve(e.LD, e.pivots, ember.tensor(b)), want, atol=1e-9, rtol=1e-9)
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3)):
        check(ember.linalg.ldl_factor_ex(ember.zeros(shape)), torch.linalg.ldl_factor_ex(torch.zeros(shape)))
    # int64 pivots are accepted by ldl_solve
    check(ember.linalg.ldl_solve(e.LD, e.pivots.long(), ember.tensor(b[0, 0])),
          torch.linalg.ldl_solve(r.LD, r.pivots.long(), torch.tensor(b[0, 0])), atol=1e-9, rtol=1e-9)


def test_singular_info_and_errors():
    z = np.zeros((2, 2))
    check(ember.linalg.ldl_factor_ex(ember.tensor(z)), torch.linalg.ldl_factor_ex(torch.tensor(z)))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.zeros(2, 2)))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.zeros(3, 2, 2)))
    same_error(lambda lib: lib.linalg.ldl_factor_ex(lib.zeros(2, 2), check_errors=True))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.randn(3, 4)))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.randn(3)))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3, dtype=lib.int64)))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3, dtype=lib.float16)))
    a = torch.randn(4, 4, dtype=torch.float64)
    LD, piv = torch.linalg.ldl_factor(a + a.T)
    args = {torch: (LD, piv), ember: (to_ember(LD), to_ember(piv))}
    same_error(lambda lib: lib.linalg.ldl_solve(*args[lib], lib.randn(4, 2)))
    same_error(lambda lib: lib.linalg.ldl_solve(*args[lib], lib.randn(3, 2, dtype=lib.float64)))
    same_error(lambda lib: lib.linalg.ldl_solve(args[lib][0], args[lib][1][:3], lib.randn(4, 2, dtype=lib.float64)))
    same_error(lambda lib: lib.linalg.ldl_solve(args[lib][0], args[lib][1].float(), lib.randn(4, 2, dtype=lib.float64)))
    same_error(lambda lib: lib.linalg.ldl_solve(*args[lib], lib.randn(4, dtype=lib.float64)))


def test_no_derivative_and_out():
    for lib in (torch, ember):
        x = lib.randn(3, 3, requires_grad=True)
        LD, piv = lib.linalg.ldl_factor(x + x.mT)
        assert LD.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
            LD.sum().backward()
        b = lib.randn(3, 1, requires_grad=True)
        X = lib.linalg.ldl_solve(LD.detach(), piv, b)
        with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not implemented"):
            X.sum().backward()
    a = np.random.default_rng(3).standard_normal((3, 3))
    LD, piv = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32)
    res = ember.linalg.ldl_factor(ember.tensor(a), out=(LD, piv))
    assert res.LD is LD and res.pivots is piv
    check(LD, torch.linalg.ldl_factor(torch.tensor(a)).LD, atol=1e-12, rtol=1e-12)
    same_error(lambda lib: lib.linalg.ldl_factor(lib.tensor(a), out=(lib.empty(0), lib.empty(0, dtype=lib.int32))))
    same_error(lambda lib: lib.linalg.ldl_factor(lib.tensor(a), out=(lib.empty(0, dtype=lib.float64),
                                                                      lib.empty(0, dtype=lib.int64))))


@pytest.mark.parametrize("name", ["linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve"])
def test_opinfo_samples(name):
    (op,) = opinfos(names={name})
    n = 0
    for s in op.sample_inputs("cpu", torch.float32):
        want = op.op(s.input, *s.args, **s.kwargs)
        got = getattr(ember.linalg, name.split(".")[1])(to_ember(s.input), *[to_ember(a) for a in s.args],
                                                        **{k: to_ember(v) for k, v in s.kwargs.items()})
        check(got, want, atol=1e-4, rtol=1e-4)
        n += 1
    assert n
