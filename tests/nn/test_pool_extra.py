"""3-d adaptive pooling, max unpooling and lp_pool3d against PyTorch: values, indices, gradients,
modules, meta shapes and errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from tests.harness import check, same_error

FLOATS = ["float32", "float64"]


def F(lib):
    return EF if lib is ember else TF


def pair(shape, dtype, rng, positive=False):
    """The same leaf tensor (requires_grad) in ember and torch."""
    a = rng.standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.1
    return (ember.tensor(a.copy(), requires_grad=True), torch.tensor(a.copy(), requires_grad=True))


def backward_both(eo, to, rng):
    """Backpropagate the same random gradient through ember's and torch's outputs."""
    g = rng.standard_normal(tuple(to.shape)).astype(str(to.dtype).split(".")[-1])
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))


# ---- adaptive pooling -----------------------------------------------------------------------------
OUT_SIZES = [1, 4, (1, 1, 1), (2, 3, 4), (5, 6, 7), (3, 4, 5), (8, 9, 10), (3, None, 1), (None, None, None),
             [2, 5, 3], (0, 2, 2)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 5, 6, 7)])
def test_adaptive_avg_pool3d(dtype, shape, rng):
    for out in OUT_SIZES:
        ex, tx = pair(shape, dtype, rng)
        eo, to = EF.adaptive_avg_pool3d(ex, out), TF.adaptive_avg_pool3d(tx, out)
        check(eo, to)
        if to.numel():
            backward_both(eo, to, rng)
            check(ex.grad, tx.grad)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 5, 6, 7)])
def test_adaptive_max_pool3d(dtype, shape, rng):
    for out in OUT_SIZES:
        ex, tx = pair(shape, dtype, rng)
        (ev, ei), (tv, ti) = EF.adaptive_max_pool3d(ex, out, True), TF.adaptive_max_pool3d(tx, out, True)
        check(ev, tv)
        check(ei, ti)
        check(EF.adaptive_max_pool3d(ex, out), TF.adaptive_max_pool3d(tx, out))
        check(EF.adaptive_max_pool3d_with_indices(ex, out), TF.adaptive_max_pool3d_with_indices(tx, out))
        if tv.numel():
            backward_both(ev, tv, rng)
            check(ex.grad, tx.grad)


@pytest.mark.parametrize("dtype", FLOATS)
def test_adaptive_max_pool3d_ties_and_nan(dtype, rng):
    # ATen keeps the first of equal maxima, and the last NaN of a window
    a = np.round(rng.standard_normal((2, 2, 4, 5, 3))).astype(dtype)
    a[0, 0, 1, 2, 0] = a[0, 0, 2, 3, 2] = a[1, 1, 0, 0, 0] = np.nan
    a[1, 1, 3, 4, 1] = -np.inf
    ex, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for out in [(2, 2, 2), (3, 4, 2), 1]:
        eo, to = EF.adaptive_max_pool3d(ex, out, True), TF.adaptive_max_pool3d(tx, out, True)
        check(eo, to)
        eo[0].sum().backward()
        to[0].sum().backward()
        check(ex.grad, tx.grad)
    a = np.full((1, 1, 2, 3, 2), -np.inf, dtype=dtype)
    check(EF.adaptive_max_pool3d(ember.tensor(a), (1, 2, 1), True),
          TF.adaptive_max_pool3d(torch.tensor(a), (1, 2, 1), True))


def test_adaptive_pool3d_batch_zero_and_meta(rng):
    ex, tx = pair((0, 3, 4, 5, 6), "float32", rng)
    check(EF.adaptive_avg_pool3d(ex, (2, 3, 4)), TF.adaptive_avg_pool3d(tx, (2, 3, 4)))
    check(EF.adaptive_max_pool3d(ex, (2, 3, 4), True), TF.adaptive_max_pool3d(tx, (2, 3, 4), True))
    ex, tx = pair((0, 4, 5, 6), "float64", rng)  # unbatched: zero channels are allowed
    check(EF.adaptive_max_pool3d(ex, 2, True), TF.adaptive_max_pool3d(tx, 2, True))
    em, tm = ember.empty((2, 3, 5, 6, 7), device="meta"), torch.empty((2, 3, 5, 6, 7), device="meta")
    check(EF.adaptive_avg_pool3d(em, (2, 3, 4)), TF.adaptive_avg_pool3d(tm, (2, 3, 4)))
    check(EF.adaptive_max_pool3d(em, (2, 3, 4), True), TF.adaptive_max_pool3d(tm, (2, 3, 4), True))


# ---- max unpooling --------------------------------------------------------------------------------
UNPOOL_CASES = [
    # nd, input shape, kernel_size, stride, padding, output_size
    (1, (2, 3, 9), 2, None, 0, None),
    (1, (3, 10), 3, 2, 1, (10,)),
    (1, (2, 3, 9), 2, None, 0, (9,)),
    (1, (2, 2, 11), 3, 3, 0, [2, 2, 11]),
    (2, (2, 3, 7, 6), 2, None, 0, None),
    (2, (3, 8, 9), (3, 2), (2, 1), (1, 0), (8, 9)),
    (2, (2, 3, 7, 6), 2, None, 0, (7, 6)),
    (2, (1, 2, 9, 9), 3, 2, 1, [1, 2, 9, 9]),
    (3, (2, 2, 5, 6, 4), 2, None, 0, None),
    (3, (2, 5, 6, 7), (2, 3, 2), (1, 2, 2), (1, 1, 0), (5, 6, 7)),
    (3, (2, 2, 5, 6, 4), 2, None, 0, (5, 6, 4)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", UNPOOL_CASES)
def test_max_unpool_round_trip(dtype, case, rng):
    nd, shape, k, s, p, out = case
    ex, tx = pair(shape, dtype, rng)
    res = []
    for lib, x in ((ember, ex), (torch, tx)):
        f = F(lib)
        v, i = getattr(f, f"max_pool{nd}d")(x, k, s, p, return_indices=True)
        res.append((v, i, getattr(f, f"max_unpool{nd}d")(v, i, k, s, p, out)))
    (ev, ei, eu), (tv, ti, tu) = res
    check(ei, ti)
    check(eu, tu)
    backward_both(eu, tu, rng)
    check(ex.grad, tx.grad)


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_unpool_grad_of_values(dtype, rng):
    # the gradient of the unpooled values is the output gradient read at their indices
    ev, tv = pair((2, 3, 2, 3, 2), dtype, rng)
    idx = rng.permutation(4 * 6 * 4)[:12].reshape(1, 1, 2, 3, 2) + np.zeros((2, 3, 1, 1, 1), dtype=np.int64)
    eo = EF.max_unpool3d(ev, ember.tensor(idx), 2)
    to = TF.max_unpool3d(tv, torch.tensor(idx), 2)
    check(eo, to)
    backward_both(eo, to, rng)
    check(ev.grad, tv.grad)


def test_max_unpool_meta_and_batch_zero():
    em, tm = ember.empty((2, 3, 4, 5, 6), device="meta"), torch.empty((2, 3, 4, 5, 6), device="meta")
    ei, ti = ember.zeros(em.shape, dtype=ember.int64, device="meta"), torch.zeros(tm.shape, dtype=torch.int64,
                                                                                   device="meta")
    check(EF.max_unpool3d(em, ei, 2), TF.max_unpool3d(tm, ti, 2))
    check(EF.max_unpool2d(em[0], ei[0], 2), TF.max_unpool2d(tm[0], ti[0], 2))
    check(EF.max_unpool1d(em[0, 0], ei[0, 0], 2), TF.max_unpool1d(tm[0, 0], ti[0, 0], 2))
    for nd in (1, 2, 3):
        shape = (0, 2) + (3,) * nd
        check(getattr(EF, f"max_unpool{nd}d")(ember.zeros(shape), ember.zeros(shape, dtype=ember.int64), 2),
              getattr(TF, f"max_unpool{nd}d")(torch.zeros(shape), torch.zeros(shape, dtype=torch.int64), 2))


# ---- lp_pool3d -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("norm_type", [1, 2.0, 3.5, float("inf"), -float("inf")])
def test_lp_pool3d(dtype, norm_type, rng):
    for shape, k, s, ceil in [((2, 3, 5, 6, 7), 2, None, False), ((3, 6, 5, 7), (2, 3, 2), (1, 2, 2), False),
                              ((2, 2, 5, 6, 7), 3, 2, True)]:
        ex, tx = pair(shape, dtype, rng, positive=norm_type == 3.5)
        eo, to = EF.lp_pool3d(ex, norm_type, k, s, ceil), TF.lp_pool3d(tx, norm_type, k, s, ceil)
        check(eo, to)
        backward_both(eo, to, rng)
        check(ex.grad, tx.grad)


# ---- modules --------------------------------------------------------------------------------------
def test_modules(rng):
    ex, tx = pair((2, 3, 5, 6, 7), "float32", rng)
    for name, args in [("AdaptiveAvgPool3d", ((2, None, 3),)), ("AdaptiveMaxPool3d", (4,)),
                       ("AdaptiveMaxPool3d", ((2, 3, 4), True)), ("LPPool3d", (2, 2)), ("LPPool3d", (1, 3, 2, True))]:
        em, tm = getattr(ember.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(em) == repr(tm)
        check(em(ex), tm(tx))
    for nd, shape in [(1, (2, 3, 8)), (2, (2, 3, 8, 6)), (3, (2, 3, 6, 4, 4))]:
        ep = getattr(ember.nn, f"MaxPool{nd}d")(2, return_indices=True)
        tp = getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True)
        eu, tu = getattr(ember.nn, f"MaxUnpool{nd}d")(2), getattr(torch.nn, f"MaxUnpool{nd}d")(2)
        assert repr(eu) == repr(tu)
        assert repr(getattr(ember.nn, f"MaxUnpool{nd}d")(3, 2, 1)) == repr(getattr(torch.nn, f"MaxUnpool{nd}d")(3, 2, 1))
        ex, tx = pair(shape, "float64", rng)
        check(eu(*ep(ex), output_size=ex.shape), tu(*tp(tx), output_size=tx.shape))
        check(eu(*ep(ex)), tu(*tp(tx)))


# ---- errors ---------------------------------------------------------------------------------------
def _t(lib, shape, dtype="float32"):
    return lib.ones(shape, dtype=getattr(lib, dtype))


def _idx(lib, shape, value=0, dtype="int64"):
    return lib.full(shape, value, dtype=getattr(lib, dtype))


ADAPTIVE_ERRORS = [
    ((3, 5, 6), 2), ((1, 2, 3, 4, 5, 6), 2), ((2, 3, 4, 4, 4), (2, 2)), ((2, 3, 4, 4, 4), (2, 2, 2, 2)),
    ((3, 4, 4, 4), (2, 2, 2, 2)), ((3, 4, 4, 4), (2, 2, 2, 2, 2)), ((3, 4, 4), (1, -1, 1)), ((1, 2, 3), (2, 2)),
    ((2, 3, 0, 4, 4), 2), ((2, 0, 4, 4, 4), 2), ((3, 0, 4, 4), 2), ((2, 3, 4, 4, 4), (-1, 2, 2)),
    ((2, 3, 4, 4, 4), (2, -2, 2)), ((0, 2, 3, 3), (2, -2, 2)), ((2, 3, 4, 4, 4), 2.0), ((3, 4), 1),
    ((2, 3, 0, 4, 4), (2, 2)), ((2, 3, 0, 4, 4), (-2, 2, 2)), ((1, 2, 3), (-2, 2, 2)),
]


@pytest.mark.parametrize("shape,out", ADAPTIVE_ERRORS)
@pytest.mark.parametrize("fn", ["adaptive_avg_pool3d", "adaptive_max_pool3d"])
def test_adaptive_errors(fn, shape, out):
    same_error(lambda L: getattr(F(L), fn)(_t(L, shape), out))


@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64"])
@pytest.mark.parametrize("fn", ["adaptive_avg_pool3d", "adaptive_max_pool3d"])
def test_adaptive_dtype_errors(fn, dtype):
    same_error(lambda L: getattr(F(L), fn)(_t(L, (2, 3, 4, 4, 4), dtype), 2))
    if fn == "adaptive_avg_pool3d" and dtype != "complex64":  # the global mean's own message
        same_error(lambda L: getattr(F(L), fn)(_t(L, (2, 3, 4, 4, 4), dtype), 1))


UNPOOL_ERRORS = [
    # nd, input shape, indices shape, index value, indices dtype, kwargs
    (1, (2, 3, 4), (2, 3, 4), 8, "int64", {}),
    (1, (2, 3, 4), (2, 3, 4), -1, "int64", {}),
    (1, (2, 3, 4), (2, 3, 4), 0, "int32", {}),
    (1, (2, 3, 4), (2, 3, 3), 0, "int64", {}),
    (1, (4,), (4,), 0, "int64", {}),
    (1, (1, 2, 3, 4), (1, 2, 3, 4), 0, "int64", {}),
    (1, (2, 3, 4), (2, 3, 4), 0, "int64", {"output_size": (20,)}),
    (1, (2, 3, 4), (2, 3, 4), 0, "int64", {"output_size": (8, 8)}),
    (1, (2, 3, 0), (2, 3, 0), 0, "int64", {}),
    (1, (2, 0, 4), (2, 0, 4), 0, "int64", {}),
    (2, (2, 3, 4, 4), (2, 3, 4, 4), 64, "int64", {}),
    (2, (2, 3, 4, 4), (2, 3, 4, 4), -3, "int64", {}),
    (2, (2, 3, 4, 4), (2, 3, 4, 4), 0, "int32", {}),
    (2, (2, 3, 4, 4), (2, 3, 4, 3), 0, "int64", {}),
    (2, (4, 4), (4, 4), 0, "int64", {}),
    (2, (1, 2, 3, 4, 4), (1, 2, 3, 4, 4), 0, "int64", {}),
    (2, (2, 3, 4, 4), (2, 3, 4, 4), 0, "int64", {"output_size": (8, 8, 8)}),
    (2, (2, 3, 4, 4), (2, 3, 4, 4), 0, "int64", {"output_size": (8, 12)}),
    (2, (2, 3, 0, 4), (2, 3, 0, 4), 0, "int64", {}),
    (2, (2, 0, 3), (2, 1, 3), 0, "int64", {}),
    (2, (2, 3, 4, 4), (2, 3, 4, 4), 0, "int64", {"padding": 3, "kernel_size": 1}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 512, "int64", {}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), -3, "int64", {}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 0, "int32", {}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 3), 0, "int64", {}),
    (3, (4, 4, 4), (4, 4, 4), 0, "int64", {}),
    (3, (1, 2, 3, 4, 4, 4), (1, 2, 3, 4, 4, 4), 0, "int64", {}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 0, "int64", {"output_size": (8, 8)}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 0, "int64", {"output_size": (8, 8, 12)}),
    (3, (2, 3, 0, 4, 4), (2, 3, 0, 4, 4), 0, "int64", {}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 0, "int64", {"stride": 0}),
    (3, (2, 0, 3, 3), (2, 0, 3, 3), 0, "int64", {"stride": (0, 1, 1)}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 0, "int64", {"stride": (2, 2)}),
    (3, (2, 3, 4, 4, 4), (2, 3, 4, 4, 4), 0, "int64", {"padding": 3, "kernel_size": 1}),
]


@pytest.mark.parametrize("case", UNPOOL_ERRORS)
def test_max_unpool_errors(case):
    nd, shape, ishape, value, idtype, kw = case
    kw = {"kernel_size": 2, **kw}
    same_error(lambda L: getattr(F(L), f"max_unpool{nd}d")(_t(L, shape), _idx(L, ishape, value, idtype), **kw))


def test_max_unpool_dtype_errors():
    # the dtype is checked before the indices (with several invalid indices torch's threads race
    # to report one, so the index cases above have a single invalid index)
    for dtype in ("int64", "bool", "complex64"):
        for nd in (1, 2, 3):
            shape = (1, 2) + (2,) * nd
            same_error(lambda L: getattr(F(L), f"max_unpool{nd}d")(_t(L, shape, dtype), _idx(L, shape, 99), 2))
