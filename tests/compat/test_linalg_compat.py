"""torch.lu, lu_unpack, lu_solve, triangular_solve (compositions of torch.linalg's ops), geqrf and ormqr,
and the small op_db ops positive, unsafe_chunk, unsafe_split, sum_to_size, resize_as_, against torch 2.13: OpInfo samples (float32
values, float64 gradients), named results, deprecation warnings and error texts."""
import warnings

import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error

NAMES = ["lu", "lu_unpack", "lu_solve", "triangular_solve", "positive", "unsafe_chunk", "unsafe_split",
         "sum_to_size", "resize_as_", "geqrf", "ormqr"]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("name", NAMES)
def test_opinfo(name):
    ops = opinfos(names={name})
    assert ops, name
    for op in ops:
        assert run_samples(op, torch.float32, atol=1e-4, rtol=1e-4)
        if op.supports_autograd:
            assert run_samples(op, torch.float64, grad=True, max_samples=20)


def test_named_results_and_flags():
    t = torch.randn(2, 4, 3, dtype=torch.float64)
    e = ember.tensor(t.numpy())
    tlu = torch.lu(t, get_infos=True)
    elu = ember.lu(e, get_infos=True)
    assert type(elu).__name__ == "_lu_with_info" and elu._fields == ("LU", "pivots", "info")
    for a, b in zip(elu, tlu):
        check(a, b)
    tu = torch.lu_unpack(tlu.LU, tlu.pivots)
    eu = ember.lu_unpack(elu.LU, elu.pivots)
    assert eu._fields == ("P", "L", "U")
    for a, b in zip(eu, tu):
        check(a, b)
    for flags in ((False, True), (True, False), (False, False)):
        for a, b in zip(ember.lu_unpack(elu.LU, elu.pivots, *flags), torch.lu_unpack(tlu.LU, tlu.pivots, *flags)):
            check(a, b)
    out_e = (ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int32))
    out_t = (torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.int32))
    for a, b in zip(ember.lu(e, out=out_e), torch.lu(t, out=out_t)):
        check(a, b)
    b = torch.randn(4, 2, dtype=torch.float64)
    A = torch.randn(3, 4, 4, dtype=torch.float64)
    for upper in (True, False):
        for transpose in (True, False):
            for unit in (True, False):
                r_t = torch.triangular_solve(b, A, upper, transpose, unit)
                r_e = ember.triangular_solve(ember.tensor(b.numpy()), ember.tensor(A.numpy()), upper, transpose, unit)
                assert r_e._fields == ("solution", "cloned_coefficient")
                check(r_e.solution, r_t.solution)
                check(r_e.cloned_coefficient, r_t.cloned_coefficient)


def test_small_ops():
    t = torch.randn(2, 3)
    e = ember.tensor(t.numpy())
    assert ember.positive(e) is e
    for size in [(1, 3), (3,), (2, 1), (1, 1), (2, 3), ()]:
        check(e.sum_to_size(*size) if size else e.sum_to_size(size), t.sum_to_size(*size) if size else t.sum_to_size(size))
    for a, b in zip(ember.unsafe_chunk(e, 2, 1), torch.unsafe_chunk(t, 2, 1)):
        check(a, b)
    for a, b in zip(e.unsafe_split(1), t.unsafe_split(1)):
        check(a, b)


def test_warnings():
    ember.kernels.composite_linalg_compat._warned.clear()
    ember._python_api.lu_compat._warned.clear()
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        ember.triangular_solve(ember.ones(2, 1), ember.eye(2))
    with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
        ember.lu_solve(ember.ones(2, 1), *ember.linalg.lu_factor(ember.eye(2)))
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        ember.lu(ember.eye(2))


def test_errors():
    same_error(lambda lib: lib.lu_unpack(lib.ones(4), lib.ones(4, dtype=lib.int32)))
    same_error(lambda lib: lib.lu_unpack(lib.eye(3), lib.ones(3)))
    same_error(lambda lib: lib.lu_unpack(lib.eye(3), lib.full((3,), 7, dtype=lib.int32)))
    same_error(lambda lib: lib.triangular_solve(lib.ones(4), lib.eye(4)))
    same_error(lambda lib: lib.triangular_solve(lib.ones(4, 1), lib.ones(4)))
    same_error(lambda lib: lib.triangular_solve(lib.ones(3, 2), lib.eye(4)))
    same_error(lambda lib: lib.triangular_solve(lib.ones(4, 2, dtype=lib.float64), lib.eye(4)))
    same_error(lambda lib: lib.positive(lib.ones(2, dtype=lib.bool)))
    same_error(lambda lib: lib.ones(2, 3).sum_to_size(3, 3))
    same_error(lambda lib: lib.ones(2, 3).sum_to_size(1, 2, 3))
    same_error(lambda lib: lib.lu(lib.eye(2), out=(lib.eye(2),)))
    for a, b in zip(ember.lu(ember.zeros(2, 2)), torch.lu(torch.zeros(2, 2))):  # singular: no error
        check(a, b)


def test_resize_as_():
    for lib in (torch, ember):
        x = lib.ones(2, 3)
        assert x.resize_as_(lib.ones(3, 3)) is x and tuple(x.shape) == (3, 3)
        y = lib.ones(4)
        assert tuple(lib.resize_as_(y, lib.ones(2, 1)).shape) == (2, 1)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_geqrf_ormqr(dtype):
    t = torch.randn(2, 5, 3, dtype=getattr(torch, dtype))
    e = ember.tensor(t.numpy())
    ta, ttau = torch.geqrf(t)
    ea, etau = ember.geqrf(e)
    assert type(ember.geqrf(e)).__name__ == "geqrf"
    check(ea, ta)
    check(etau, ttau)
    c = torch.randn(2, 5, 4, dtype=t.dtype)
    for transpose in (False, True):
        check(ember.ormqr(ea, etau, ember.tensor(c.numpy()), True, transpose), torch.ormqr(ta, ttau, c, True, transpose))
        cr = torch.randn(2, 4, 5, dtype=t.dtype)
        check(ember.ormqr(ea, etau, ember.tensor(cr.numpy()), False, transpose),
              torch.ormqr(ta, ttau, cr, False, transpose))
    m = ember.geqrf(ember.ones(2, 4, 3, device="meta"))
    assert m.a.shape == (2, 4, 3) and m.tau.shape == (2, 3)
    x = ember.ones(3, 3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented."):
        ember.geqrf(x)[0].sum().backward()


def test_geqrf_ormqr_errors():
    o = "ones"
    same_error(lambda lib: lib.geqrf(lib.ones(3)))
    same_error(lambda lib: lib.geqrf(lib.ones(3, 3, dtype=lib.int64)))
    cases = [((3,), (3,), (3, 2), True), ((3, 3), (3,), (3,), True), ((3, 3), (4,), (3, 2), True),
             ((3, 3), (2,), (3, 2), True), ((4, 3), (3,), (3, 2), True), ((3, 3), (1, 3), (3, 2), True),
             ((2, 3, 3), (2, 3), (3, 2), True), ((2, 3, 3), (3, 3), (2, 3, 2), True),
             ((2, 3, 3), (2, 3), (3, 3, 2), True), ((3, 3), (3,), (2, 4), False), ((3, 3), (4,), (2, 3), False)]
    for a, tau, c, left in cases:
        same_error(lambda lib: lib.ormqr(getattr(lib, o)(*a), getattr(lib, o)(*tau), getattr(lib, o)(*c), left))
    same_error(lambda lib: lib.ormqr(lib.ones(3, 3), lib.ones(3, dtype=lib.float64), lib.ones(3, 2)))
    same_error(lambda lib: lib.ormqr(lib.ones(3, 3), lib.ones(3), lib.ones(3, 2, dtype=lib.float64)))
    same_error(lambda lib: lib.ormqr(lib.ones(3, 3, dtype=lib.int64), lib.ones(3, dtype=lib.int64),
                                     lib.ones(3, 2, dtype=lib.int64)))
