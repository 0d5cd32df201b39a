"""Special functions (lgamma, digamma, polygamma, mvlgamma, Bessel I, zeta, ndtr family, xlogy) vs torch."""
import numpy as np
import pytest
import torch

import ember
from tests.harness import check, same_error

INF, NAN = float("inf"), float("nan")
GRID = [-INF, -10.0, -3.0, -2.5, -1.0, -0.5, -0.0, 0.0, 1e-300, 1e-8, 0.1, 0.5, 0.9999, 1.0, 1.0001, 1.5, 2.0,
        2.01, 2.5, 3.0, 7.3, 8.0, 8.01, 10.0, 11.9, 12.0, 12.1, 40.0, 200.0, 1e10, INF, NAN, -100.3, -7.9]
RTOL = {"float64": 1e-10, "float32": 1e-5}
ATOL = {"float64": 0.0, "float32": 1e-37}  # float32 subnormal results keep only a few bits


def _grid(dtype, rng):
    v = np.array(GRID + list(rng.uniform(-15, 15, 60)) + list(rng.uniform(0, 3, 30)), dtype)
    return ember.from_numpy(v.copy()), torch.from_numpy(v.copy())


UNARY = {
    "lgamma": lambda L, x: L.lgamma(x),
    "gammaln": lambda L, x: L.special.gammaln(x),
    "digamma": lambda L, x: L.digamma(x),
    "psi": lambda L, x: L.special.psi(x),
    "special.digamma": lambda L, x: L.special.digamma(x),
    "polygamma1": lambda L, x: L.polygamma(1, x),
    "polygamma2": lambda L, x: L.special.polygamma(2, x),
    "polygamma4": lambda L, x: x.polygamma(4),
    "mvlgamma": lambda L, x: L.mvlgamma(x.abs() + 1.5, 3),
    "multigammaln": lambda L, x: L.special.multigammaln(x.abs() + 2, 2),
    "i0": lambda L, x: L.i0(x),
    "special.i0": lambda L, x: L.special.i0(x),
    "i0e": lambda L, x: L.special.i0e(x),
    "i1": lambda L, x: L.special.i1(x),
    "i1e": lambda L, x: L.special.i1e(x),
    "entr": lambda L, x: L.special.entr(x),
    "ndtr": lambda L, x: L.special.ndtr(x),
    "log_ndtr": lambda L, x: L.special.log_ndtr(x.clamp(max=9)),
    "ndtri": lambda L, x: L.special.ndtri(x / 20 + 0.5),
    "ndtri_tail": lambda L, x: L.special.ndtri(x.abs() * 1e-6),
    "zeta": lambda L, x: L.special.zeta(x.abs() + 1, x),
    "zeta_scalar_self": lambda L, x: L.special.zeta(3.0, x),
    "zeta_scalar_other": lambda L, x: L.special.zeta(x, 2.5),
    "xlogy": lambda L, x: L.xlogy(x, x.flip(0)),
    "xlogy_scalar_self": lambda L, x: L.xlogy(2.0, x),
    "xlogy_scalar_other": lambda L, x: L.special.xlogy(x, 0.0),
    "xlogy_method": lambda L, x: x.xlogy(3),
    "xlog1py": lambda L, x: L.special.xlog1py(x, x.flip(0)),
    "xlog1py_scalar": lambda L, x: L.special.xlog1py(0.0, x),
    "xlog1py_scalar_other": lambda L, x: L.special.xlog1py(x, -1.0),
    "methods": lambda L, x: x.lgamma() + x.digamma() * 2 + x.i0() + x.mvlgamma(1),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(UNARY))
def test_values(name, dtype, rng):
    e, t = _grid(dtype, rng)
    fn = UNARY[name]
    check(fn(ember, e), fn(torch, t), rtol=RTOL[dtype], atol=ATOL[dtype], equal_nan=True)


@pytest.mark.parametrize("dt", ["int64", "uint8", "bool", "float16", "bfloat16"])
def test_other_dtypes(dt):
    v = torch.tensor([0, 1, 2, 3, 5]).to(getattr(torch, dt))
    e = ember.tensor(v.float().numpy()).to(getattr(ember, dt))
    for name in ["lgamma", "digamma", "polygamma1", "polygamma2", "i0", "i0e", "i1", "i1e", "entr", "ndtr",
                 "xlogy", "xlog1py", "xlogy_scalar_self"]:
        check(UNARY[name](ember, e), UNARY[name](torch, v), rtol=1e-2 if dt in ("float16", "bfloat16") else 1e-6,
              atol=1e-3, equal_nan=True)
    if dt not in ("float16", "bfloat16"):
        for name in ["ndtri", "log_ndtr", "zeta_scalar_self", "zeta_scalar_other"]:
            check(UNARY[name](ember, e), UNARY[name](torch, v), rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("op", ["ndtri", "log_ndtr", "zeta", "lgamma", "i0e", "xlogy", "digamma", "polygamma2"])
@pytest.mark.parametrize("dt", ["float16", "complex64"])
def test_unsupported_dtypes(op, dt):
    if dt == "float16" and op not in ("ndtri", "log_ndtr", "zeta"):
        return
    same_error(lambda L: UNARY[op](L, L.ones(3, dtype=getattr(L, dt)) * 2))


GRAD = {
    "lgamma": lambda L, x, y: L.lgamma(x),
    "digamma": lambda L, x, y: L.special.psi(x),
    "polygamma": lambda L, x, y: L.polygamma(2, x),
    "mvlgamma": lambda L, x, y: L.mvlgamma(x + 3, 3),
    "i0": lambda L, x, y: L.i0(x),
    "i0e": lambda L, x, y: L.special.i0e(x),
    "i1": lambda L, x, y: L.special.i1(x),
    "i1e": lambda L, x, y: L.special.i1e(x),
    "entr": lambda L, x, y: L.special.entr(x.abs()),
    "ndtr": lambda L, x, y: L.special.ndtr(x),
    "ndtri": lambda L, x, y: L.special.ndtri(x.sigmoid()),
    "log_ndtr": lambda L, x, y: L.special.log_ndtr(x),
    "xlogy": lambda L, x, y: L.xlogy(x, y.abs()),
    "xlogy_scalars": lambda L, x, y: L.xlogy(2.0, y.abs()) + L.xlogy(x, 0.0) + L.xlogy(x, 3),
    "xlog1py": lambda L, x, y: L.special.xlog1py(x, y),
    "xlog1py_scalars": lambda L, x, y: L.special.xlog1py(2.0, y.abs()) + L.special.xlog1py(x, -1.0),
    "zeta_other": lambda L, x, y: L.special.zeta(3.0, y.abs() + 0.5) + L.special.zeta(x.detach().abs() + 2, y),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(GRAD))
def test_grad(name, dtype):
    xv = np.array([-2.5, -1.3, -0.0, 0.0, 0.7, 1.0, 2.0, 9.5], dtype)
    yv = np.array([0.5, -0.5, -1.0, 0.0, 2.0, 3.0, -1.0, 10.0], dtype)
    res = []
    for L, mk in ((ember, ember.from_numpy), (torch, torch.from_numpy)):
        x = mk(xv.copy()).requires_grad_()
        y = mk(yv.copy()).requires_grad_()
        out = GRAD[name](L, x, y)
        out.backward(mk(np.linspace(0.5, 1.5, 8).astype(dtype)))
        res.append((out, x.grad, y.grad))
    for e, t in zip(*res):
        if t is None:
            assert e is None
        else:
            check(e, t, rtol=RTOL[dtype], atol=1e-12 if dtype == "float64" else 1e-6, equal_nan=True)


def test_node_names_and_zeta_self_grad():
    x = ember.tensor([1.5, 2.5], requires_grad=True)
    assert ember.special.i0e(x).grad_fn.name() == "SpecialI0EBackward0"
    assert ember.xlogy(2, x).grad_fn.name() == "XlogyBackward1"
    assert ember.special.gammaln(x).grad_fn.name() == "LgammaBackward0"
    same_error(lambda L: L.special.zeta(L.tensor([2.0, 3.0], requires_grad=True), 2.0).sum().backward())
    same_error(lambda L: (lambda a: L.special.zeta(a, a).sum().backward())(L.tensor([2.0, 3.0], requires_grad=True)))


def test_gradcheck():
    x = ember.tensor([0.3, 1.7, 2.9, -0.6], dtype=ember.float64, requires_grad=True)
    y = ember.tensor([0.4, 1.1, 2.0, 3.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: ember.digamma(a), (x,))
    assert ember.autograd.gradcheck(lambda a: ember.special.i1e(a), (x,))
    assert ember.autograd.gradcheck(lambda a, b: ember.special.xlog1py(a, b), (x, y))
    assert ember.autograd.gradgradcheck(lambda a: ember.lgamma(a), (y,))


def test_out_and_inplace():
    v = np.array([0.5, 1.5, 2.5, 4.0])
    pairs = []
    for L, mk in ((ember, ember.from_numpy), (torch, torch.from_numpy)):
        x = mk(v.copy())
        o = [L.empty(0, dtype=L.float64) for _ in range(8)]
        L.lgamma(x, out=o[0])
        L.polygamma(1, x, out=o[1])
        L.special.zeta(2.0, x, out=o[2])
        L.xlogy(x, 2.0, out=o[3])
        L.special.xlog1py(3, x, out=o[4])
        L.mvlgamma(x + 2, 2, out=o[5])
        L.special.i1e(x, out=o[6])
        L.special.ndtri(x / 5, out=o[7])
        a = x.clone().lgamma_()
        b = x.clone().digamma_()
        c = x.clone().polygamma_(3)
        d = L.i0_(x.clone())
        e = L.xlogy_(x.clone(), x)
        f = x.clone().xlogy_(2.0)
        g = (x + 2).mvlgamma_(2)
        pairs.append(o + [a, b, c, d, e, f, g])
    for e, t in zip(*pairs):
        check(e, t, rtol=1e-10, atol=0)


def test_errors():
    same_error(lambda L: L.polygamma(-1, L.ones(2)))
    same_error(lambda L: L.special.polygamma(-2, L.ones(2)))
    same_error(lambda L: L.ones(2).polygamma_(-1))
    same_error(lambda L: L.mvlgamma(L.ones(2), 0))
    same_error(lambda L: L.special.multigammaln(L.ones(2), -1))
    same_error(lambda L: L.mvlgamma(L.ones(2, dtype=L.bool), 1))
    same_error(lambda L: L.ones(2).mvlgamma_(0))
    same_error(lambda L: L.tensor([1, 2]).lgamma_())
    same_error(lambda L: L.tensor([1, 2]).polygamma_(1))
    same_error(lambda L: L.tensor([1, 2]).xlogy_(2.0))


def test_meta_and_shapes():
    e = ember.empty(3, 1, device="meta")
    assert ember.special.zeta(e, ember.empty(4, device="meta")).shape == (3, 4)
    assert ember.polygamma(2, ember.empty(2, dtype=ember.int32, device="meta")).dtype == ember.float32
    check(ember.lgamma(ember.zeros(0, 3)), torch.lgamma(torch.zeros(0, 3)))
    check(ember.special.i0e(ember.tensor(2.0)), torch.special.i0e(torch.tensor(2.0)))
    x = np.arange(12.0).reshape(3, 4) + 0.5
    check(ember.special.xlogy(ember.from_numpy(x).t(), 2.0), torch.special.xlogy(torch.from_numpy(x).t(), 2.0))


@pytest.mark.parametrize("name", ["xlogy", "special.xlogy", "special.xlog1py", "special.zeta"])
def test_binary_shapes_that_do_not_broadcast(name):
    def f(L):
        fn = L
        for p in name.split("."):
            fn = getattr(fn, p)
        return fn(L.ones(2, 3), L.ones(4))
    same_error(f)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "special.i0e", "special.i1", "special.i1e", "special.entr",
                                  "special.ndtr", "special.ndtri", "special.log_ndtr"])
def test_zero_dim_inputs(name):
    def f(L):
        fn = L
        for p in name.split("."):
            fn = getattr(fn, p)
        return fn(L.tensor(0.25, dtype=L.float64))
    check(f(ember), f(torch))
