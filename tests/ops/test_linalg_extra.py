"""linalg.lstsq, linalg.vander, linalg.householder_product / orgqr against torch."""
import numpy as np
import pytest
import torch

import ember
from tests.harness import check, make_pair, same_error

DRIVERS = [None, "gels", "gelsy", "gelsd", "gelss"]
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _tol(dtype):
    return (1e-3, 1e-3) if dtype in ("float32", "complex64") else (1e-8, 1e-8)


def _pair(shape, dtype, rng):
    return make_pair(shape, dtype, rng)


def _check_lstsq(e, t, dtype):
    atol, rtol = _tol(dtype)
    assert type(e).__name__ == "linalg_lstsq" and e._fields == ("solution", "residuals", "rank", "singular_values")
    check(e.solution, t.solution, atol=atol, rtol=rtol)
    check(e.residuals, t.residuals, atol=atol, rtol=rtol)
    check(e.rank, t.rank)
    check(e.singular_values, t.singular_values, atol=atol, rtol=rtol)


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4, 1)), ((5, 3), (5,)),
                                    ((2, 5, 3), (2, 5)), ((2, 1, 5, 3), (1, 3, 5, 2)), ((1, 5, 3), (5, 2))])
def test_lstsq_full_rank(shapes, dtype, driver, rng):
    (ea, ta), (eb, tb) = _pair(shapes[0], dtype, rng), _pair(shapes[1], dtype, rng)
    _check_lstsq(ember.linalg.lstsq(ea, eb, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver), dtype)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_lstsq_rank_deficient(dtype, driver, rng):
    # batch of a rank-2 5x3 matrix and a full-rank one: residuals are empty, ranks differ
    (ea, ta), (ec, tc) = _pair((5, 2), dtype, rng), _pair((2, 3), dtype, rng)
    (ef, tf), (eb, tb) = _pair((5, 3), dtype, rng), _pair((2, 5, 2), dtype, rng)
    e = ember.linalg.lstsq(ember.stack([ea @ ec, ef]), eb, driver=driver)
    t = torch.linalg.lstsq(torch.stack([ta @ tc, tf]), tb, driver=driver)
    _check_lstsq(e, t, dtype)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd"])
def test_lstsq_rcond_zero_size(driver, rng):
    (ea, ta), (eb, tb) = _pair((5, 3), "float64", rng), _pair((5, 2), "float64", rng)
    rcond = 0.9 if driver == "gelsd" else 1e-3  # (gelsy truncates by pivoted QR: ranks agree, solutions don't)
    _check_lstsq(ember.linalg.lstsq(ea, eb, rcond, driver=driver),
                 torch.linalg.lstsq(ta, tb, rcond, driver=driver), "float64")
    z_b = _pair((5, 2), "float64", rng)
    for sa, sb in [((0, 3), (0, 2)), ((5, 0), (5, 2)), ((0, 5, 3), (0, 5, 2))]:
        (ea, ta), (eb, tb) = _pair(sa, "float64", rng), _pair(sb, "float64", rng)
        _check_lstsq(ember.linalg.lstsq(ea, eb, driver=driver), torch.linalg.lstsq(ta, tb, driver=driver),
                     "float64")
    z = np.zeros((5, 3))
    _check_lstsq(ember.linalg.lstsq(ember.tensor(z), z_b[0], driver=driver),
                 torch.linalg.lstsq(torch.tensor(z), z_b[1], driver=driver), "float64")


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_lstsq_grad(shape, dtype, rng):
    (ea, ta), (eb, tb) = _pair(shape, dtype, rng), _pair(shape[:-1] + (2,), dtype, rng)
    for x in (ea, ta, eb, tb):
        x.requires_grad_(True)
    (ember.linalg.lstsq(ea, eb).solution.abs() ** 2).sum().backward()
    (torch.linalg.lstsq(ta, tb).solution.abs() ** 2).sum().backward()
    check(ea.grad, ta.grad, atol=1e-8, rtol=1e-8)
    check(eb.grad, tb.grad, atol=1e-8, rtol=1e-8)


def test_lstsq_errors():
    def f(A, B, **kw):
        return lambda L: L.linalg.lstsq(L.ones(A[0], dtype=getattr(L, A[1])),
                                        L.ones(B[0], dtype=getattr(L, B[1])), **kw)
    f32, f64 = "float32", "float64"
    same_error(f(((5,), f32), ((5,), f32)))
    same_error(f(((5, 3), f32), ((), f32)))
    same_error(f(((5, 3), f32), ((5, 2), f64)))
    same_error(f(((5, 3), "int32"), ((5, 2), f32)))
    same_error(f(((5, 3), f32), ((2, 2, 5, 2), f32)))
    same_error(f(((5, 3), f32), ((4, 2), f32)))
    same_error(f(((2, 5, 3), f32), ((2, 4), f32)))
    same_error(f(((2, 5, 3), f32), ((3, 5, 2), f32)))
    same_error(f(((4, 5, 3), f32), ((5, 2), f32)))
    same_error(f(((5, 3), f32), ((5, 2), f32), driver="foo"))
    same_error(f(((5, 3), "int64"), ((5, 2), "int64"), driver="foo"))
    same_error(f(((5, 3), "int64"), ((5, 2), "int64")))
    same_error(f(((5, 3), "float16"), ((5, 2), "float16")))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int8", "int32", "int64"])
@pytest.mark.parametrize("shape,N", [((4,), None), ((4,), 6), ((2, 3), None), ((2, 3), 2), ((), 3), ((0,), 3)])
def test_vander(shape, N, dtype, rng):
    e, t = make_pair(shape, dtype, rng, low=-3, high=3)
    check(ember.linalg.vander(e, N=N), torch.linalg.vander(t, N=N))


def test_vander_grad_errors(rng):
    e, t = make_pair((2, 3), "float64", rng)
    e.requires_grad_(True)
    t.requires_grad_(True)
    (ember.linalg.vander(e, N=4) * ember.arange(8.).reshape(2, 1, 4)).sum().backward()
    (torch.linalg.vander(t, N=4) * torch.arange(8.).reshape(2, 1, 4)).sum().backward()
    check(e.grad, t.grad)
    same_error(lambda L: L.linalg.vander(L.ones(3), N=1))
    same_error(lambda L: L.linalg.vander(L.ones(0)))
    same_error(lambda L: L.linalg.vander(L.tensor(2.)))
    same_error(lambda L: L.linalg.vander(L.ones(3, dtype=L.bool)))
    same_error(lambda L: L.linalg.vander(L.ones(3, dtype=L.float16)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", [((5, 3), 3), ((5, 3), 2), ((4, 4), 4), ((2, 5, 3), 3), ((4, 3), 0), ((0, 0), 0)])
def test_householder_product(shape, k, dtype, rng):
    ea, ta = make_pair(shape, dtype, rng, low=-1, high=1)
    et, tt = make_pair(shape[:-2] + (k,), dtype, rng, low=0, high=2)
    atol, rtol = _tol(dtype)
    check(ember.linalg.householder_product(ea, et), torch.linalg.householder_product(ta, tt), atol=atol, rtol=rtol)
    check(ember.orgqr(ea, et), torch.orgqr(ta, tt), atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_householder_product_qr_grad(dtype, rng):
    # the reflectors of geqrf rebuild qr's Q
    ta, _ = torch.geqrf(torch.from_numpy(rng.standard_normal((2, 5, 3))).to(getattr(torch, dtype)))
    _, tt = torch.geqrf(torch.from_numpy(rng.standard_normal((2, 5, 3))).to(getattr(torch, dtype)))
    ea, et = ember.tensor(ta.numpy()), ember.tensor(tt.numpy())
    for x in (ea, et, ta, tt):
        x.requires_grad_(True)
    eq, tq = ember.linalg.householder_product(ea, et), torch.linalg.householder_product(ta, tt)
    check(eq, tq, atol=1e-10, rtol=1e-10)
    w = rng.standard_normal((2, 5, 3))
    (eq * ember.tensor(w)).sum().abs().backward()
    (tq * torch.tensor(w)).sum().abs().backward()
    check(ea.grad, ta.grad, atol=1e-8, rtol=1e-8)
    check(et.grad, tt.grad, atol=1e-8, rtol=1e-8)
    out = ember.empty(0, dtype=ea.dtype)
    ember.linalg.householder_product(ea.detach(), et.detach(), out=out)
    check(out, tq.detach(), atol=1e-10, rtol=1e-10)


def test_householder_product_errors():
    hp = "linalg.householder_product"

    def f(sa, st, da="float32", dt="float32", fn=hp):
        def run(L):
            mod = L.linalg if fn == hp else L
            return getattr(mod, fn.split(".")[-1])(L.ones(*sa, dtype=getattr(L, da)),
                                                   L.ones(*st, dtype=getattr(L, dt)))
        return run
    same_error(f((3,), (2,)))
    same_error(f((3, 4), (2,)))
    same_error(f((4, 3), (4,)))
    same_error(f((4, 3), (1, 2)))
    same_error(f((2, 4, 3), (3, 2)))
    same_error(f((4, 3), (2,), dt="float64"))
    same_error(f((4, 3), (2,), dt="int32"))
    same_error(f((4, 3), (2,), "int32", "int32"))
    same_error(f((4, 3), (2,), "float16", "float16", fn="orgqr"))
