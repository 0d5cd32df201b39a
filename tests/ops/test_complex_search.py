"""real/imag/angle/polar/complex, isin/bucketize/searchsorted, bincount/histc, unravel_index,
gcd/lcm and frexp (ember/_python_api/complex_search.py) against torch."""
import math

import numpy as np
import pytest
import torch

import ember
from tests.harness import FLOAT32_64, check, edtype, make_pair, same_error, tdtype

NAN, INF = float("nan"), float("inf")


def both(fn, **kw):
    """fn(torch) and fn(ember) give the same result."""
    check(fn(ember), fn(torch), **kw)


def grads(fn, values, dtype, out_grad=None):
    """Gradients of sum(fn(L, x) * out_grad) w.r.t. each of `values`, in ember and torch."""
    res = []
    for L in (ember, torch):
        xs = [L.tensor(v, dtype=getattr(L, dtype), requires_grad=True) for v in values]
        y = fn(L, *xs)
        w = L.ones_like(y) if out_grad is None else L.tensor(out_grad, dtype=y.dtype)
        (y * w).real.sum().backward() if y.is_complex() else (y * w).sum().backward()
        res.append([x.grad for x in xs])
    check(res[0], res[1])


# ---- real, imag ----

def test_real_imag():
    for dt in ("complex64", "complex128"):
        both(lambda L: L.real(L.tensor([1 + 2j, -3j], dtype=getattr(L, dt))), check_stride=True)
        both(lambda L: L.imag(L.tensor([[1 + 2j, -3j]], dtype=getattr(L, dt)).t()), check_stride=True)
    x = ember.tensor([1.0, 2.0])
    assert ember.real(x) is x
    z = ember.tensor([1 + 2j])
    ember.imag(z).mul_(3)  # a view: writes reach z
    assert z.tolist() == [1 + 6j]
    same_error(lambda L: L.imag(L.tensor([1.0])))
    same_error(lambda L: L.real(1.0))
    same_error(lambda L: L.imag([1j]))


# ---- angle ----

SPECIALS = [-1.0, 0.0, -0.0, 2.0, NAN, INF, -INF, -1e-30]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int64", "uint8", "bool",
                                   "complex64", "complex128"])
def test_angle_values(dtype, rng):
    for e, t in [make_pair((3, 4), dtype, rng, "transposed"), make_pair((0, 2), dtype, rng),
                 make_pair((), dtype, rng)]:
        check(ember.angle(e), torch.angle(t))
        check(e.angle(), t.angle())
    if dtype in ("float32", "float64"):
        both(lambda L: L.angle(L.tensor(SPECIALS, dtype=getattr(L, dtype))), atol=0, rtol=0)
    if dtype.startswith("complex"):
        both(lambda L: L.angle(L.tensor([0j, complex(-0.0, 0.0), complex(-0.0, -0.0), -1 + 0j, complex(-1, -0.0),
                                         complex(INF, 1), complex(NAN, 1)], dtype=getattr(L, dtype))))


@pytest.mark.parametrize("dtype", FLOAT32_64)
def test_angle_grad(dtype):
    grads(lambda L, x: L.angle(x), [SPECIALS], dtype)
    cdt = "complex64" if dtype == "float32" else "complex128"
    grads(lambda L, z: L.angle(z), [[1 + 1j, 0j, -1 + 0j, -2 - 3j, 0.5j]], cdt, [1.0, 2.0, 3.0, 4.0, -1.0])


def test_angle_errors():
    same_error(lambda L: L.angle(1.0))


# ---- complex, polar ----

@pytest.mark.parametrize("dtype", FLOAT32_64)
def test_complex_polar_values(dtype, rng):
    (er, tr), (ei, ti) = make_pair((3, 4), dtype, rng, "transposed"), make_pair((4,), dtype, rng)
    check(ember.complex(er, ei), torch.complex(tr, ti))
    check(ember.polar(er, ei), torch.polar(tr, ti))
    both(lambda L: L.complex(L.tensor([[1.0], [2.0]], dtype=getattr(L, dtype)), L.tensor(3.0, dtype=getattr(L, dtype))))
    both(lambda L: L.polar(L.tensor([0.0, 2.0, INF, -1.0], dtype=getattr(L, dtype)),
                           L.tensor([1.0, -0.5, 0.0, 2.0], dtype=getattr(L, dtype))))
    both(lambda L: L.complex(L.zeros(0, 2, dtype=getattr(L, dtype)), L.zeros(2, dtype=getattr(L, dtype))))


@pytest.mark.parametrize("dtype", FLOAT32_64)
def test_complex_polar_grad(dtype):
    g = [1 + 2j, 3 - 1j, 0.5 + 0.5j, -2j]
    grads(lambda L, r, i: L.complex(r, i), [[1.0, -2.0, 0.0, 3.0], [0.5, 0.0, -1.0, 2.0]], dtype, g)
    grads(lambda L, r, i: L.complex(r, i).abs(), [[1.0, 2.0], [[3.0], [4.0]]], dtype)
    # polar: ATen's abs gradient is Re(conj(grad) * sgn(result)), so zero and negative abs too
    grads(lambda L, a, th: L.polar(a, th), [[-1.0, 0.0, 2.0, 0.5], [0.5, 1.0, 2.0, -3.0]], dtype, g)
    grads(lambda L, a, th: L.polar(a, th).abs(), [[1.0, 2.0], [[3.0], [4.0]]], dtype)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_complex_polar_errors():
    for op in ("complex", "polar"):
        same_error(lambda L: getattr(L, op)(L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)))
        same_error(lambda L: getattr(L, op)(L.tensor([1]), L.tensor([1])))
        same_error(lambda L: getattr(L, op)(L.tensor([1]), L.tensor([1.0])))
        same_error(lambda L: getattr(L, op)(L.tensor([1.0]), L.tensor([1], dtype=L.bfloat16)))
        same_error(lambda L: getattr(L, op)(L.ones(3), L.ones(2)))
        same_error(lambda L: getattr(L, op)(L.ones(3), 2.0))
        same_error(lambda L: getattr(L, op)(1.0, L.ones(2)))
    same_error(lambda L: L.polar(L.ones(2, dtype=L.float16), L.ones(2, dtype=L.float16)))


def _leaves(L, values, dtype):
    return [L.tensor(v, dtype=getattr(L, dtype), requires_grad=True) for v in values]


# (fn, input values, input dtype): angle of complex and of real input, polar and complex with broadcasting
OPS = [
    (lambda L, z: L.angle(z), [[1 + 1j, 0j, -1 + 0j, -2 - 3j, 0.5j, complex(-0.0, 0.0)]], "complex128"),
    (lambda L, x: x.angle(), [[-1.0, 0.0, -0.0, 2.0, 1e-30]], "float64"),
    (lambda L, a, th: L.polar(a, th), [[-1.0, 0.0, 2.0, 0.5], [[0.5], [-3.0]]], "float64"),
    (lambda L, r, i: L.complex(r, i), [[1.0, -2.0, 0.0, 3.0], [[0.5], [0.0]]], "float64"),
]


@pytest.mark.parametrize("k", range(len(OPS)))
def test_complex_ops_nodes(k):
    """Each is one operator recording its own node (AngleBackward0, PolarBackward0, ComplexBackward0)
    with torch's saved fields, not the nodes of the ops it is composed of."""
    fn, values, dtype = OPS[k]
    (ye, xe), (yt, xt) = [(fn(L, *xs), xs) for L in (ember, torch) for xs in [_leaves(L, values, dtype)]]
    ne, nt = ye.grad_fn, yt.grad_fn
    assert ne.name() == nt.name()
    assert len(ne.next_functions) == len(nt.next_functions)
    assert all(e[0].name() == t[0].name() for e, t in zip(ne.next_functions, nt.next_functions))
    saved = sorted(a for a in dir(nt) if a.startswith("_saved_"))
    assert sorted(a for a in dir(ne) if a.startswith("_saved_")) == saved
    for a in saved:
        check(getattr(ne, a), getattr(nt, a))
    assert not ye._is_view() and not yt._is_view()


@pytest.mark.parametrize("k", range(len(OPS)))
def test_complex_ops_grads(k):
    """float64 gradients (and gradients of gradients) equal torch's, at 0 and negative abs included."""
    fn, values, dtype = OPS[k]
    res = []
    for L in (ember, torch):
        xs = _leaves(L, values, dtype)
        y = fn(L, *xs)
        g = L.ones_like(y) * (0.5 - 2j if y.is_complex() else 1.5)
        gs = L.autograd.grad(y, xs, g, create_graph=True)
        s = sum((gi * gi.conj()).real.sum() for gi in gs)
        ggs = L.autograd.grad(s, xs, allow_unused=True) if s.requires_grad else [None] * len(xs)
        res.append((gs, [gg if gg is not None else L.zeros_like(x) for gg, x in zip(ggs, xs)],
                    [gi.requires_grad for gi in gs]))
    check(res[0][:2], res[1][:2])
    assert res[0][2] == res[1][2]


@pytest.mark.parametrize("fn", [
    lambda a, b: ember.view_as_real(ember.polar(a, b)),
    lambda a, b: ember.view_as_real(ember.complex(a, b)),
    lambda a, b: ember.complex(a, b).angle(),
    lambda a, b: ember.view_as_real(ember.polar(a, b) * ember.complex(b, a)),
    lambda a, b: (ember.complex(a, b) * ember.complex(b, a)).angle() + a.angle(),
])
def test_complex_ops_gradcheck(fn):
    """gradcheck and gradgradcheck in float64 (real in, real out), away from angle's branch cut and
    from polar's negative abs (where ATen's gradient is the true one times sign(abs))."""
    a = ember.tensor([0.5, 1.25, 2.0, 0.75], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([[0.3], [-2.0]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(fn, (a, b))
    assert ember.autograd.gradgradcheck(fn, (a, b))


@pytest.mark.parametrize("k", range(len(OPS)))
def test_complex_ops_forward_ad(k):
    fn, values, dtype = OPS[k]
    res = []
    for L in (ember, torch):
        xs = [L.tensor(v, dtype=getattr(L, dtype)) for v in values]
        ts = [L.full_like(x, 0.75 - 0.5j if x.is_complex() else -0.75) for x in xs]
        res.append(L.func.jvp(lambda *a: fn(L, *a), tuple(xs), tuple(ts)))
    check(res[0], res[1])


def test_complex_ops_out():
    def outs(L):
        return [
            lambda: L.angle(L.tensor([-1, 2]), out=L.empty(0, dtype=L.float64)),
            lambda: L.angle(L.tensor([-1.0, 2.0], dtype=L.float16), out=L.empty(0, dtype=L.float64)),
            lambda: L.angle(L.tensor([-1 + 1j, 2]), out=L.empty(0, dtype=L.float64)),
            lambda: L.angle(L.tensor([-1 + 1j, 2]), out=L.empty(0, dtype=L.complex128)),
            lambda: L.complex(L.ones(2, dtype=L.float64), L.zeros(3, 1, dtype=L.float64),
                              out=L.empty(0, dtype=L.complex128)),
            lambda: L.polar(L.ones(2), L.tensor([[0.5], [-1.0]]), out=L.empty(0, dtype=L.complex64)),
        ]
    for fe, ft in zip(outs(ember), outs(torch)):
        check(fe(), ft())
    o = ember.empty(0, dtype=ember.complex64)
    assert ember.polar(ember.ones(2), ember.ones(2), out=o) is o
    for op in ("angle", "complex", "polar"):  # a resized out with elements: ATen's warning, at the caller
        args = (ember.ones(2),) if op == "angle" else (ember.ones(2), ember.ones(2))
        with pytest.warns(UserWarning, match="An output with one or more elements was resized") as w:
            getattr(ember, op)(*args, out=ember.empty(3, dtype=ember.float32 if op == "angle" else ember.complex64))
        assert w[0].filename == __file__


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_complex_ops_out_errors():
    cases = [
        lambda L: L.angle(L.tensor([-1.0, 2.0]), out=L.empty(0, dtype=L.int64)),
        lambda L: L.angle(L.tensor([-1 + 1j, 2]), out=L.empty(0, dtype=L.int64)),
        lambda L: L.complex(L.ones(2), L.ones(2), out=L.empty(2, dtype=L.complex128)),
        lambda L: L.complex(L.ones(2), L.ones(2), out=L.empty(2, dtype=L.float32)),
        lambda L: L.polar(L.ones(2), L.ones(2), out=L.empty(0, dtype=L.float32)),
        lambda L: L.polar(L.ones(2, dtype=L.half), L.ones(2, dtype=L.half), out=L.empty(0, dtype=L.complex64)),
        lambda L: L.polar(L.ones(2, dtype=L.half), L.ones(2, dtype=L.half), out=L.empty(0, dtype=L.complex32)),
        lambda L: L.polar(L.ones(2), L.ones(2, dtype=L.float64), out=L.empty(0, dtype=L.complex64)),
        lambda L: L.complex(L.ones(2, requires_grad=True), L.ones(2), out=L.empty(0, dtype=L.complex64)),
        lambda L: L.angle(L.ones(2, requires_grad=True), out=L.empty(0)),
        lambda L: L.polar(1.0, L.ones(2)),
        lambda L: L.complex(L.ones(2), [1.0]),
        lambda L: L.angle(L.ones(2), L.ones(2)),
    ]
    for fn in cases:
        same_error(fn)


def test_complex_ops_keywords():
    both(lambda L: L.polar(abs=L.tensor([2.0]), angle=L.tensor([0.5])))
    both(lambda L: L.complex(real=L.tensor([2.0]), imag=L.tensor([0.5])))
    both(lambda L: L.angle(input=L.tensor([-2.0])))


@pytest.mark.filterwarnings("error:There is a performance drop")
def test_complex_ops_vmap():
    """Batching rules (pointwise, broadcasting), as torch's: no slow-path fallback."""
    def run(L):
        g = np.random.default_rng(1)
        a, b = (L.tensor(g.standard_normal((3, 4))) for _ in range(2))
        return [L.func.vmap(L.polar)(a, b), L.func.vmap(L.complex, in_dims=(0, None))(a, b[0]),
                L.func.vmap(L.angle)(L.complex(a, b)), L.func.vmap(L.polar, in_dims=(1, 0))(a[:, :3], b[:3, :3])]
    check(run(ember), run(torch))


def test_polar_autocast_cpu():
    """polar is on CPU autocast's float32 list (its inputs are cast up); complex is not."""
    def run(L):
        a = L.tensor([1.5, 2.0], dtype=L.bfloat16)
        with L.autocast("cpu", dtype=L.bfloat16):
            return L.polar(a, a)
    check(run(ember), run(torch))

    def refused(L):
        with L.autocast("cpu", dtype=L.bfloat16):
            L.complex(L.ones(2, dtype=L.bfloat16), L.ones(2, dtype=L.bfloat16))
    same_error(refused)


# ---- searchsorted, bucketize ----

SORTABLE = ["uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.filterwarnings("ignore:.*input value tensor is non-contiguous")
@pytest.mark.parametrize("dtype", SORTABLE)
def test_searchsorted_bucketize(dtype, rng):
    seq = np.sort(rng.integers(0, 20, 15))
    q = rng.integers(-2, 22, (3, 7))
    for right in (False, True):
        for out_int32 in (False, True):
            kw = dict(right=right, out_int32=out_int32)
            both(lambda L: L.searchsorted(L.tensor(seq).to(getattr(L, dtype)), L.tensor(q).to(getattr(L, dtype)).t(),
                                          **kw))
            both(lambda L: L.bucketize(L.tensor(q).to(getattr(L, dtype)), L.tensor(seq).to(getattr(L, dtype)), **kw))
    both(lambda L: L.searchsorted(L.tensor(seq).to(getattr(L, dtype)), 5))
    both(lambda L: L.bucketize(5, L.tensor(seq).to(getattr(L, dtype)), right=True))


def test_searchsorted_nd_side_sorter(rng):
    seq = np.sort(rng.standard_normal((2, 3, 9)), -1)
    q = rng.standard_normal((2, 3, 5))
    for side in ("left", "right"):
        both(lambda L: L.searchsorted(L.tensor(seq), L.tensor(q), side=side))
        both(lambda L: L.searchsorted(L.tensor(seq), L.tensor(q), side=side, right=side == "right"))
    dup = rng.integers(0, 5, (4, 11))
    srt = np.argsort(dup, -1, kind="stable")
    qi = rng.integers(-1, 6, (4, 6))
    for right in (False, True):
        both(lambda L: L.searchsorted(L.tensor(dup), L.tensor(qi), right=right, sorter=L.tensor(srt)))
    both(lambda L: L.searchsorted(L.tensor([5.0, 1.0, 3.0]), L.tensor([2.0, 4.0]), sorter=L.tensor([1, 2, 0])))
    # mixed dtypes promote; NaN sorts last; empty sequences and queries
    both(lambda L: L.searchsorted(L.tensor([1, 3, 5]), L.tensor([2.5, 3.0])))
    both(lambda L: L.searchsorted(L.tensor([True, False]), L.tensor([1])))
    for right in (False, True):
        both(lambda L: L.searchsorted(L.tensor([1.0, 2.0, NAN]), L.tensor([NAN, 2.0, 0.0, INF]), right=right))
    both(lambda L: L.searchsorted(L.tensor([]), L.tensor([1.0, 2.0])))
    both(lambda L: L.searchsorted(L.zeros(2, 0), L.zeros(2, 3)))
    both(lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([])))
    both(lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor(1.5)))


def test_searchsorted_out():
    for L in (ember, torch):
        out = L.empty(0, dtype=L.int32)
        r = L.searchsorted(L.tensor([1.0, 3.0]), L.tensor([2.0, 4.0]), out_int32=True, out=out)
        assert r is out and out.tolist() == [1, 2]
        out = L.empty(5, dtype=L.int64)
        with pytest.warns(UserWarning, match="was resized"):
            L.bucketize(L.tensor([2.0, 4.0]), L.tensor([1.0, 3.0]), out=out)
        assert out.tolist() == [1, 2]


def test_searchsorted_errors():
    s = [1.0, 3.0, 5.0]
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([3.0]), side="left", right=True))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([3.0]), side="middle"))
    same_error(lambda L: L.searchsorted(L.tensor([s, s]), L.tensor([2.5, 1.0])))
    same_error(lambda L: L.searchsorted(L.tensor([s, s]), L.tensor([[2.5, 1.0]])))
    same_error(lambda L: L.searchsorted(L.tensor([s, s]), L.tensor([[[2.5]]])))
    same_error(lambda L: L.searchsorted(L.tensor([s, s]), 2.0))
    same_error(lambda L: L.searchsorted(L.tensor(1.0), L.tensor([2.0])))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([2.0]), sorter=L.tensor([0, 1])))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([2.0]), sorter=L.tensor([0, 1, 2], dtype=L.int32)))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([2.0]), sorter=L.tensor([0, 1, 3])))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([2.0]), sorter=L.tensor([0, -1, 2])))
    same_error(lambda L: L.searchsorted(L.tensor([True]), L.tensor([False])))
    same_error(lambda L: L.searchsorted(L.tensor([1j]), L.tensor([1j])))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([2.0]), out=L.empty(1, dtype=L.int32)))
    same_error(lambda L: L.searchsorted(L.tensor(s), L.tensor([2.0]), out_int32=True, out=L.empty(1)))
    same_error(lambda L: L.bucketize(L.tensor([2.0]), L.tensor([s])))
    same_error(lambda L: L.bucketize(L.tensor([2.0]), L.tensor(1.0)))
    same_error(lambda L: L.bucketize(L.tensor([2.0]), L.tensor(s), out=L.empty(1, dtype=L.float32)))


# ---- isin ----

@pytest.mark.parametrize("dtype", SORTABLE)
def test_isin(dtype, rng):
    a = rng.integers(0, 12, (4, 5))
    b = rng.integers(0, 12, (2, 3))
    for invert in (False, True):
        for unique in (False, True):
            both(lambda L: L.isin(L.tensor(a).to(getattr(L, dtype)).t(), L.tensor(b).to(getattr(L, dtype)),
                                  invert=invert, assume_unique=unique))
    both(lambda L: L.isin(L.tensor(a).to(getattr(L, dtype)), 3))
    both(lambda L: L.isin(3, L.tensor(b).to(getattr(L, dtype)), invert=True))


def test_isin_special():
    a = [1.0, NAN, 2.0, 3.0, INF, -INF, 0.0, -0.0]
    b = [NAN, 3.0, INF, 0.0, NAN]
    for invert in (False, True):
        both(lambda L: L.isin(L.tensor(a), L.tensor(b), invert=invert))
        both(lambda L: L.isin(L.tensor([1, 2]), L.tensor([], dtype=L.int64), invert=invert))
    both(lambda L: L.isin(L.tensor([1, 2, 3]), L.tensor([2.5, 2.0])))
    both(lambda L: L.isin(2.5, L.tensor([1, 2])))
    both(lambda L: L.isin(L.tensor([], dtype=L.int64), L.tensor([1])))
    both(lambda L: L.isin(L.tensor(1.0), L.tensor([1.0])))
    both(lambda L: L.isin(L.tensor([1.0, 2.0], requires_grad=True), L.tensor([1.0])))
    both(lambda L: L.isin(L.tensor([1, 2], dtype=L.int8), L.tensor([300, 2])))


def test_isin_errors():
    same_error(lambda L: L.isin(L.tensor([True]), L.tensor([1])))
    same_error(lambda L: L.isin(L.tensor([1]), L.tensor([True])))
    same_error(lambda L: L.isin(L.tensor([1.0]), L.tensor([1j])))
    same_error(lambda L: L.isin(2, 3))


# ---- bincount ----

@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_bincount_input_dtypes(dtype, rng):
    x = rng.integers(0, 9, 30)
    for minlength in (0, 5, 15):
        both(lambda L: L.bincount(L.tensor(x).to(getattr(L, dtype)), minlength=minlength))
        both(lambda L: L.tensor(x).to(getattr(L, dtype))[::2].bincount(None, minlength))


@pytest.mark.parametrize("wdtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"])
def test_bincount_weights(wdtype, rng):
    x, w = rng.integers(0, 9, 30), rng.uniform(-2, 2, 30)
    both(lambda L: L.bincount(L.tensor(x), L.tensor(w).to(getattr(L, wdtype)), 12))
    both(lambda L: L.tensor(x).bincount(weights=L.tensor(w).to(getattr(L, wdtype))))


def test_bincount_empty_and_grad():
    both(lambda L: L.bincount(L.tensor([], dtype=L.int64)))
    both(lambda L: L.bincount(L.tensor([], dtype=L.int64), minlength=3))
    both(lambda L: L.bincount(L.tensor([], dtype=L.int64), weights=L.tensor([], dtype=L.float64), minlength=2))
    for L in (ember, torch):
        assert L.bincount(L.tensor([1, 3]), L.tensor([0.5, 2.0], requires_grad=True)).requires_grad
    same_error(lambda L: L.bincount(L.tensor([1, 3]), L.tensor([0.5, 2.0], requires_grad=True)).sum().backward())


def test_bincount_errors():
    same_error(lambda L: L.bincount(L.tensor([1, -3])))
    same_error(lambda L: L.bincount(L.tensor([[1, 3]])))
    same_error(lambda L: L.bincount(L.tensor(1)))
    same_error(lambda L: L.bincount(L.tensor([1.0, 3.0])))
    same_error(lambda L: L.bincount(L.tensor([True])))
    same_error(lambda L: L.bincount(L.tensor([1, 3]), minlength=-1))
    same_error(lambda L: L.bincount(L.tensor([1, 3]), L.tensor([1.0, 2.0, 3.0])))
    same_error(lambda L: L.bincount(L.tensor([1, 3]), L.tensor([[1.0, 2.0]])))
    same_error(lambda L: L.bincount(2))


# ---- histc ----

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_histc(dtype, rng):
    e, t = make_pair((20, 15), dtype, rng, "transposed", low=-1, high=5)
    for bins, lo, hi in [(7, 0, 3), (100, 0, 0), (13, -0.3, 4.1), (1, 0, 1), (10, 2, 2)]:
        check(ember.histc(e, bins, lo, hi), torch.histc(t, bins, lo, hi))
        check(e.histc(bins=bins, min=lo, max=hi), t.histc(bins=bins, min=lo, max=hi))
    check(ember.histc(e), torch.histc(t))
    both(lambda L: L.histc(L.tensor([1.0, 2.0, 1.0, 2.5, 3, -1, 5, NAN, INF], dtype=getattr(L, dtype)), 4, 0, 3))
    both(lambda L: L.histc(L.tensor([0.1, 0.2, 0.3, 0.7, 0.9, 1.0], dtype=getattr(L, dtype)), 10, 0, 1))


def test_histc_special():
    both(lambda L: L.histc(L.tensor([1.0, 1.0, 1.0]), bins=4))
    both(lambda L: L.histc(L.tensor([]), bins=4))
    both(lambda L: L.histc(L.tensor(2.0), bins=3))
    both(lambda L: L.histc(L.tensor([1e20, 2.0]), bins=3, min=0, max=1e-20))
    both(lambda L: L.histc(L.tensor([1.0, 2.0], requires_grad=True), bins=3).requires_grad)


def test_histc_errors():
    same_error(lambda L: L.histc(L.tensor([1.0, 2.0]), bins=4, min=3, max=1))
    same_error(lambda L: L.histc(L.tensor([1.0, 2.0]), bins=0))
    same_error(lambda L: L.histc(L.tensor([1.0, 2.0]), bins=-1))
    same_error(lambda L: L.histc(L.tensor([1, 2]), bins=3))
    same_error(lambda L: L.histc(L.tensor([1, 2]), bins=3, min=3, max=1))
    same_error(lambda L: L.histc(L.tensor([1.0, INF]), bins=3))
    same_error(lambda L: L.histc(L.tensor([1.0, 2.0]), bins=3, min=0, max=INF))
    same_error(lambda L: L.histc(L.tensor([1.0, 2.0]), bins=3, min=NAN, max=2))
    # ATen prints the NaN its CPU aminmax made as "-nan"
    same_error(lambda L: L.histc(L.tensor([1.0, NAN]), bins=3), match="torch.histc: range of [")
    same_error(lambda L: L.histc(L.tensor([1.0, 2.0]), bins=3.0))


# ---- unravel_index ----

def test_unravel_index():
    both(lambda L: L.unravel_index(L.tensor([4, 1]), (2, 3)))
    both(lambda L: L.unravel_index(L.tensor(4), (3, 2)))
    both(lambda L: L.unravel_index(L.tensor([[1234], [5678]]), (10, 10, 10, 10)))
    both(lambda L: L.unravel_index(L.tensor([1234, 5678], dtype=L.int32), L.Size([100, 100])))
    both(lambda L: L.unravel_index(L.tensor([1, 5], dtype=L.uint8), [2, 3]))
    both(lambda L: L.unravel_index(L.tensor([1]), 6))
    both(lambda L: L.unravel_index(L.tensor([0]), ()))
    both(lambda L: L.unravel_index(L.tensor([], dtype=L.int64), (2, 3)))
    # out-of-range indices are not checked: they wrap, as in torch
    both(lambda L: L.unravel_index(L.tensor([-1, -6, 6, -7, 100]), (2, 3)))


def test_unravel_index_errors():
    for v in (1.0, True, 1j):  # (the message names the dtype: torch.float32 / ember.float32)
        same_error(lambda L: L.unravel_index(L.tensor([v]), (2, 3)), match="expected 'indices' to be integer dtype")
    same_error(lambda L: L.unravel_index(L.tensor([1]), (2, -3)))
    same_error(lambda L: L.unravel_index(L.tensor([1]), (2.0, 3)))
    same_error(lambda L: L.unravel_index(L.tensor([1]), (2, 0)))
    same_error(lambda L: L.unravel_index(L.tensor([1]), L.tensor([2, 3])), match="expected 'shape' to be int or")
    same_error(lambda L: L.unravel_index(L.tensor([1]), 2.0))
    same_error(lambda L: L.unravel_index(4, (2, 3)))


# ---- gcd, lcm ----

@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("op", ["gcd", "lcm"])
def test_gcd_lcm(op, dtype, rng):
    lo = 0 if dtype == "uint8" else -100
    a, b = rng.integers(lo, 100, (6, 5)), rng.integers(lo, 100, 5)
    a[0, :3], b[:2] = 0, 0
    both(lambda L: getattr(L, op)(L.tensor(a).to(getattr(L, dtype)).t(), L.tensor(b).to(getattr(L, dtype))[:, None]))
    both(lambda L: getattr(L.tensor(a).to(getattr(L, dtype)), op)(L.tensor(b).to(getattr(L, dtype))))
    both(lambda L: getattr(L.tensor(a).to(getattr(L, dtype)), op + "_")(L.tensor(b).to(getattr(L, dtype))))
    both(lambda L: getattr(L, op)(L.tensor(a).to(getattr(L, dtype)), L.tensor(7)))


def test_gcd_lcm_large_and_mixed(rng):
    a, b = rng.integers(-10**12, 10**12, 200), rng.integers(-10**6, 10**6, 200)
    for op in ("gcd", "lcm"):
        both(lambda L: getattr(L, op)(L.tensor(a), L.tensor(b)))
        both(lambda L: getattr(L, op)(L.tensor([12, 200], dtype=L.uint8), L.tensor([18], dtype=L.int8)))
        both(lambda L: getattr(L, op)(L.tensor([12, 18], dtype=L.int32), L.tensor([4, 6])))
        both(lambda L: getattr(L, op)(L.tensor([[12, 18]], dtype=L.int32), L.tensor([]).long()[:, None]))
        both(lambda L: getattr(L, op)(L.tensor([4, -6], dtype=L.int32), L.tensor(6)))
        both(lambda L: getattr(L.tensor([4, -6], dtype=L.int32), op + "_")(L.tensor([6, 4])))


def test_gcd_lcm_out():
    for L in (ember, torch):
        out = L.empty(2, dtype=L.int32)
        r = L.gcd(L.tensor([12, 18]), L.tensor([8, 12]), out=out)
        assert r is out and out.tolist() == [4, 6] and out.dtype == L.int32
        out = L.empty(5, dtype=L.int64)
        with pytest.warns(UserWarning, match="was resized"):
            L.lcm(L.tensor([4, 6]), L.tensor([6]), out=out)
        assert out.tolist() == [12, 6]


def test_gcd_lcm_errors():
    for op in ("gcd", "lcm"):
        same_error(lambda L: getattr(L, op)(L.tensor([12.0]), L.tensor([18.0])))
        same_error(lambda L: getattr(L, op)(L.tensor([12]), L.tensor([18.0])))
        same_error(lambda L: getattr(L, op)(L.tensor([True]), L.tensor([True])))
        same_error(lambda L: getattr(L, op)(L.tensor([1j]), L.tensor([1j])))
        same_error(lambda L: getattr(L, op)(L.tensor([12]), 4))
        same_error(lambda L: getattr(L, op)(4, L.tensor([12])))
        same_error(lambda L: getattr(L, op)(L.tensor([12, 18]), L.tensor([1, 2, 3])))
        same_error(lambda L: getattr(L.tensor([12]), op)(4))
        same_error(lambda L: getattr(L.tensor([12]), op + "_")(4))
        same_error(lambda L: getattr(L.tensor([12, 18]), op + "_")(L.tensor([[4], [6]])))
        same_error(lambda L: getattr(L.tensor([12, 18]), op + "_")(L.tensor([4, 6, 8])))
        same_error(lambda L: getattr(L.tensor([12, 18]), op + "_")(L.tensor([[4.0], [6.0]])))
        same_error(lambda L: getattr(L.tensor([12, 18]), op + "_")(L.tensor([4.0])))
        same_error(lambda L: getattr(L.tensor([12.0, 18]), op + "_")(L.tensor([4.0])))
        same_error(lambda L: getattr(L, op)(L.tensor([4.0]), L.tensor([2.0]), out=L.empty(1, dtype=L.int64)))
        same_error(lambda L: getattr(L, op)(L.tensor([4]), L.tensor([2]), out=L.empty(1, dtype=L.bool)))


# ---- frexp ----

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_frexp_values(dtype, rng):
    vals = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-40, 40, 300), 2.0 ** np.arange(-160, 130),
                           -(2.0 ** np.arange(-30, 30)), [0.0, -0.0, 1e-40, 3.4e38, INF, -INF, NAN]])
    t = torch.tensor(vals).to(tdtype(dtype))
    if dtype in ("float32", "float64"):  # and each value's neighbours
        t = torch.cat([t, torch.nextafter(t, torch.zeros_like(t)), torch.nextafter(t, torch.full_like(t, INF))])
    e = ember.tensor(t.float().numpy() if dtype == "bfloat16" else t.numpy()).to(edtype(dtype))
    r, rt = ember.frexp(e), torch.frexp(t)
    check(r, rt, atol=0, rtol=0)
    assert type(r).__name__ == "frexp" and r.mantissa is r[0] and r.exponent is r[1]
    check(e.frexp(), t.frexp())
    em, tm = make_pair((3, 4), dtype, rng, "transposed")
    check(ember.frexp(em), torch.frexp(tm))
    both(lambda L: L.frexp(L.tensor([5e-324, 1e-310, 1e308, 2.0 ** -1022], dtype=L.float64)))
    both(lambda L: L.frexp(L.zeros(0, 3, dtype=getattr(L, dtype))))
    both(lambda L: L.frexp(L.tensor(3.0, dtype=getattr(L, dtype))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp_grad(dtype):
    grads(lambda L, x: L.frexp(x).mantissa, [[0.3, -5.5, 0.0, 1e3, 1e-30, -0.0, 7.0]], dtype)
    for L in (ember, torch):
        assert not L.frexp(L.tensor([3.0], requires_grad=True)).exponent.requires_grad


def test_frexp_out():
    for L in (ember, torch):
        m, e = L.empty(0), L.empty(0, dtype=L.int32)
        r = L.frexp(L.tensor([3.0, 0.25]), out=(m, e))
        assert r.mantissa is m and r.exponent is e and type(r).__name__ == "frexp_out"
        assert m.tolist() == [0.75, 0.5] and e.tolist() == [2, -1]


def test_frexp_errors():
    same_error(lambda L: L.frexp(L.tensor([1, 2])))
    same_error(lambda L: L.frexp(L.tensor([1j])))
    same_error(lambda L: L.frexp(L.tensor([True])))
    same_error(lambda L: L.frexp(L.tensor([3.0]), out=(L.empty(1), L.empty(1, dtype=L.int64))))
    same_error(lambda L: L.frexp(L.tensor([3.0]), out=(L.empty(1, dtype=L.float64), L.empty(1, dtype=L.int32))))
    same_error(lambda L: L.frexp(L.tensor([3.0], dtype=L.float16),
                                 out=(L.empty(1, dtype=L.bfloat16), L.empty(1, dtype=L.int32))))
    same_error(lambda L: L.frexp(3.0))


# ---- meta device: shapes and dtypes without data ----

def test_meta():
    def meta(L, v, **kw):
        return L.tensor(v, **kw).to("meta")
    cases = [
        lambda L: L.angle(meta(L, [1 + 1j, 2j])),
        lambda L: L.angle(meta(L, [1, 2])),
        lambda L: L.polar(meta(L, [1.0, 2.0]), meta(L, [[1.0], [2.0]])),
        lambda L: L.complex(meta(L, [1.0, 2.0], dtype=L.float64), meta(L, [[1.0], [2.0]], dtype=L.float64)),
        lambda L: L.searchsorted(meta(L, [1.0, 2.0]), meta(L, [[1.0], [2.0]]), out_int32=True),
        lambda L: L.isin(meta(L, [1.0, 2.0]), meta(L, [[1.0], [2.0]])),
        lambda L: L.gcd(meta(L, [1, 2]), meta(L, [[1], [2]], dtype=L.int8)),
        lambda L: L.lcm(meta(L, [1, 2], dtype=L.int16), meta(L, [[1], [2]], dtype=L.int8)),
        lambda L: L.frexp(meta(L, [1.0, 2.0])),
        lambda L: L.unravel_index(meta(L, [1, 2]), (2, 3)),
        lambda L: L.histc(meta(L, [1.0, 2.0]), 4, 0, 3),
    ]
    for fn in cases:
        both(fn)


def test_exports():
    for name in ("real", "imag", "angle", "polar", "complex", "isin", "bucketize", "searchsorted", "bincount",
                 "histc", "unravel_index", "gcd", "lcm", "frexp"):
        assert callable(getattr(ember, name))
    for name in ("angle", "bincount", "histc", "gcd", "gcd_", "lcm", "lcm_", "frexp"):
        assert hasattr(ember.Tensor, name) and hasattr(torch.Tensor, name)
    assert math.isclose(ember.tensor([-2.0]).angle().item(), math.pi, rel_tol=1e-6)
