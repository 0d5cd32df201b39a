"""Activation functions against PyTorch (torch._C._nn.* and torch.<name>)."""
import numpy as np
import pytest
import torch
from harness import COMPLEX, DTYPES, FLOATS, INTS, check, make_pair, pair_from, same_error, unary_inputs

import ember
import ember._generated.functions_nn as enn

tnn = torch._C._nn

# name -> (namespace ("nn" or "torch"), argument sets, dtypes beyond FLOATS it supports)
OPS = {
    "relu": ("torch", [()], INTS),
    "relu6": ("nn", [()], INTS),
    "hardtanh": ("nn", [(), (-0.5, 2.0), (-2, 3), (1.0, -1.0)], ["int8", "int16", "int32", "int64"]),
    "gelu": ("nn", [(), {"approximate": "tanh"}, {"approximate": "none"}], []),
    "silu": ("nn", [()], COMPLEX),
    "mish": ("nn", [()], []),
    "softplus": ("nn", [(), (2,), (0.5, 1.0), (1, 50)], []),
    "elu": ("nn", [(), (0.5,), (1.5, 2.0, 0.5), (-1.0,)], []),
    "selu": ("torch", [()], []),
    "celu": ("torch", [(), (0.5,), (2,)], []),
    "leaky_relu": ("nn", [(), (0.2,), (2,), (-0.1,)], []),
    "hardsigmoid": ("nn", [()], []),
    "hardswish": ("nn", [()], []),
    "threshold": ("torch", [(0.5, -1.0), (0, 2), (-1.5, 9.0)], INTS),
    "softshrink": ("nn", [(), (1.0,), (0,)], []),
    "hardshrink": ("torch", [(), (1.0,), (0,), (-1.0,)], []),
    "log_sigmoid": ("nn", [()], []),
    "rrelu": ("torch", [(), (0.1, 0.3), (0.2, 0.2)], []),
    "glu": ("nn", [(), (0,)], []),
}
INPLACE = {"relu_": "torch", "relu6_": "nn", "hardtanh_": "nn", "gelu_": "nn", "silu_": "nn",
           "mish_": "nn", "elu_": "nn", "selu_": "torch", "celu_": "torch", "leaky_relu_": "nn",
           "hardsigmoid_": "nn", "hardswish_": "nn", "threshold_": "torch", "rrelu_": "torch"}
OUT = ["hardtanh", "gelu", "silu", "mish", "softplus", "elu", "leaky_relu", "hardsigmoid",
       "hardswish", "threshold", "softshrink", "hardshrink", "log_sigmoid", "glu"]


def fns(name, ns):
    if ns == "nn":
        return getattr(enn, name), getattr(tnn, name)
    return getattr(ember, name), getattr(torch, name)


def call(f, x, args):
    return f(x, **args) if isinstance(args, dict) else f(x, *args)


def special(dtype, op=None):
    v = np.array([-100.0, -30.0, -3.5, -3.0, -2.9, -1.0, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, 1.0,
                  2.9, 3.0, 3.5, 19.9, 20.5, 30.0, 100.0, np.inf, -np.inf, np.nan, 6.0])
    if op in ("gelu", "gelu_"):
        # PyTorch's vectorised float32/bfloat16 gelu gives nan for +inf (its strided path: inf)
        v[20] = 50.0
    if dtype in INTS:
        v = np.array([-100, -30, -3, -2, -1, 0, 1, 2, 3, 5, 6, 7, 30, 100] * 2)
        if dtype == "uint8":
            v = np.abs(v)
    elif dtype in COMPLEX:
        v = v[np.isfinite(v)][:20] + 1j * np.linspace(-2, 2, 20)
    return pair_from(v.astype(np.float32 if dtype == "bfloat16" else dtype), dtype)


TOL = {"float16": {"atol": 1e-5, "rtol": 1e-3}, "bfloat16": {"atol": 1e-5, "rtol": 1.6e-2}}


def supported(op, dtype):
    return dtype in FLOATS or dtype in OPS[op][2]


def inputs(op, dtype, rng):
    for e, t in unary_inputs(dtype, rng, low=-4, high=4, shapes=[(), (0,), (5,), (3, 4), (2, 3, 4)]):
        if op == "glu" and (t.dim() == 0 or t.shape[-1] % 2 or t.shape[0] % 2):
            continue
        yield e, t
    if op != "glu" or dtype not in ("bool",):
        yield special(dtype, op)
    if op != "glu":  # true 0-d inputs (make_pair((), ...) gives shape (1,))
        for v in ((2, 5) if dtype in INTS else (-1.5, 0.0, 2.5)):
            yield zero_dim(v, dtype)


def zero_dim(v, dtype):
    return ember.tensor(v).to(getattr(ember, dtype)), torch.tensor(v).to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_values(op, dtype, rng):
    ns, argsets, _ = OPS[op]
    ef, tf = fns(op, ns)
    if not supported(op, dtype):
        e, t = make_pair((4,), dtype, rng)
        same_error(lambda lib: call(tf if lib is torch else ef, t if lib is torch else e, argsets[0]))
        return
    for e, t in inputs(op, dtype, rng):
        for args in argsets:
            try:
                tr = call(tf, t, args)
            except RuntimeError:  # e.g. a limit that does not fit the dtype
                same_error(lambda lib, e=e, t=t, args=args: call(tf if lib is torch else ef,
                                                                   t if lib is torch else e, args))
                continue
            check(call(ef, e, args), tr, **TOL.get(dtype, {}))


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace(op, rng):
    ns = INPLACE[op]
    ef, tf = fns(op, ns)
    args = OPS[op[:-1]][1][-1] if op[:-1] not in ("threshold",) else (0.5, -1.0)
    if op == "celu_":
        args = (1.5,)
    for dtype in ["float32", "float64", "bfloat16"]:
        for layout in ["contiguous", "transposed", "strided"]:
            e, t = make_pair((3, 4), dtype, rng, layout, low=-4, high=4)
            r = call(ef, e, args)
            assert r is e
            call(tf, t, args)
            check(e, t, **TOL.get(dtype, {}))
        e, t = special(dtype, op)
        call(ef, e, args)
        call(tf, t, args)
        check(e, t, **TOL.get(dtype, {}))
    e, t = zero_dim(-1.5, "float32")
    check(call(ef, e, args), call(tf, t, args))
    check(e, t)


def test_relu_method(rng):
    e, t = make_pair((3, 4), "float32", rng, "transposed")
    check(e.relu(), t.relu())
    e2, t2 = e.clone(), t.clone()
    assert e2.relu_() is e2
    t2.relu_()
    check(e2, t2)
    for dtype in ["int8", "uint8", "int64"]:
        e, t = make_pair((5,), dtype, rng)
        check(ember.relu_(e), torch.relu_(t))


def test_methods(rng):
    e, t = make_pair((3, 4), "float32", rng)
    check(e.hardshrink(), t.hardshrink())
    check(e.hardshrink(1.0), t.hardshrink(1.0))
    ew, tw = pair_from(np.array([0.25, -0.5, 2.0, 0.1], np.float32), "float32")
    check(e.prelu(ew), t.prelu(tw))


@pytest.mark.parametrize("op", OUT)
def test_out(op, rng):
    ns, argsets, _ = OPS[op]
    ef, tf = fns(op, ns)
    args = argsets[0] if op in ("threshold", "glu") else argsets[-1]
    for dtype in ["float32", "float64"]:
        e, t = make_pair((2, 4), dtype, rng, low=-4, high=4)
        shape = (2, 2) if op == "glu" else (2, 4)
        eo = ember.empty(*shape, dtype=getattr(ember, dtype))
        to = torch.empty(*shape, dtype=getattr(torch, dtype))
        kw = dict(args) if isinstance(args, dict) else {}
        pos = () if isinstance(args, dict) else args
        r = ef(e, *pos, out=eo, **kw)
        assert r is eo
        tf(t, *pos, out=to, **kw)
        check(eo, to)
        eo, to = ember.empty(0, dtype=getattr(ember, dtype)), torch.empty(0, dtype=getattr(torch, dtype))
        ef(e, *pos, out=eo, **kw)
        tf(t, *pos, out=to, **kw)
        check(eo, to)


@pytest.mark.parametrize("op", sorted(OPS) + ["prelu"])
def test_meta(op, rng):
    e, t = make_pair((2, 4), "float32", rng)
    if op == "prelu":
        w = np.array([0.25, 0.1, 0.3, 0.4], np.float32)
        ew, tw = pair_from(w, "float32")
        em = ember.prelu(e.to("meta"), ew.to("meta"))
        tm = torch.prelu(t.to("meta"), tw.to("meta"))
        check(em, tm)
        check(ember.prelu(e, ew), torch.prelu(t, tw))
        return
    ns, argsets, _ = OPS[op]
    ef, tf = fns(op, ns)
    for args in argsets:
        em = call(ef, e.to("meta"), args)
        assert em.device.type == "meta"
        check(em, call(tf, t.to("meta"), args))
        assert em.shape == call(ef, e, args).shape


def test_meta_errors():
    ei = ember.empty(2, dtype=ember.int64, device="meta")
    with pytest.raises(NotImplementedError, match="GeluKernelImpl"):
        enn.gelu(ei)
    with pytest.raises(RuntimeError, match="Halving dimension"):
        enn.glu(ember.empty(3, device="meta"))
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(ember.empty(2, dtype=ember.bool, device="meta"))
    ef = ember.empty(2, device="meta")
    assert enn.gelu_(ef) is ef


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_prelu(dtype, rng):
    for shape, wn in [((2, 3, 4), 3), ((2, 3), 3), ((2, 3, 4), 1), ((5,), 1), ((), 1), ((0, 3), 3),
                      ((2, 0), 0), ((2, 3, 2, 2), 3)]:
        e, t = make_pair(shape, dtype, rng)
        ew, tw = make_pair((wn,), dtype, rng)
        check(ember.prelu(e, ew), torch.prelu(t, tw))
        check(e.prelu(ew), t.prelu(tw))
    e, t = make_pair((3, 4), dtype, rng, "transposed")
    ew, tw = make_pair((), dtype, rng)
    check(ember.prelu(e, ew), torch.prelu(t, tw))


def test_prelu_errors(rng):
    def P(lib, shape, wshape, dt="float32", wdt="float32"):
        x = lib.from_numpy(np.ones(shape, np.float32)).to(getattr(lib, dt))
        w = lib.from_numpy(np.full(wshape, 0.5, np.float32)).to(getattr(lib, wdt))
        return lib.prelu(x, w)
    same_error(lambda lib: P(lib, (2, 3, 4), (2,)))
    same_error(lambda lib: P(lib, (3,), (3,)))
    same_error(lambda lib: P(lib, (), (2,)))
    same_error(lambda lib: P(lib, (2, 3), (3, 1)))
    same_error(lambda lib: P(lib, (), (1, 1)))
    same_error(lambda lib: P(lib, (2,), (1,), "float32", "float64"))
    same_error(lambda lib: P(lib, (2,), (1,), "float16", "float32"))
    same_error(lambda lib: P(lib, (2,), (1,), "int64", "int64"))
    same_error(lambda lib: P(lib, (2,), (1,), "int64", "float32"))
    same_error(lambda lib: lib.prelu(lib.from_numpy(np.ones(2, np.float32)), 0.25))


def test_errors(rng):
    e, t = make_pair((4,), "float32", rng)
    X = lambda lib: t if lib is torch else e  # noqa: E731
    NN = lambda lib: tnn if lib is torch else enn  # noqa: E731
    same_error(lambda lib: NN(lib).gelu(X(lib), approximate="foo"))
    same_error(lambda lib: lib.celu(X(lib), 0.0))
    same_error(lambda lib: lib.celu_(X(lib).clone(), 0))
    same_error(lambda lib: lib.rrelu(X(lib), 0.5, 0.1))
    same_error(lambda lib: NN(lib).glu(lib.from_numpy(np.array(1.0, np.float32))))
    same_error(lambda lib: NN(lib).glu(lib.from_numpy(np.ones((2, 3), np.float32)), 1))
    same_error(lambda lib: NN(lib).glu(lib.from_numpy(np.ones((2, 4), np.float32)), 2))
    same_error(lambda lib: NN(lib).glu(lib.from_numpy(np.ones((2, 4), np.int64)), 1))
    for dt, lam in [("float32", -1), ("float16", 1e10), ("float16", -2.5), ("float64", -2),
                    ("bfloat16", -2), ("float32", 1e39)]:
        same_error(lambda lib, dt=dt, lam=lam: NN(lib).softshrink(X(lib).to(getattr(lib, dt)), lam))
    same_error(lambda lib: lib.hardshrink(X(lib).half(), 1e10))
    for dt, lo, hi in [("int8", -1000, 1000), ("float32", -1e300, 1e300), ("uint8", -1, 1),
                       ("uint8", 0, 1000), ("bool", 0, 1), ("float16", -1e10, 1)]:
        same_error(lambda lib, dt=dt, lo=lo, hi=hi: NN(lib).hardtanh(X(lib).to(getattr(lib, dt)), lo, hi))
    same_error(lambda lib: NN(lib).relu6(X(lib).to(lib.bool)))
    same_error(lambda lib: NN(lib).relu6(X(lib).to(lib.complex64)))
    same_error(lambda lib: lib.threshold(X(lib).to(lib.uint8), -1, 300))
    same_error(lambda lib: lib.threshold(X(lib).to(lib.int8), 0, 300))
    same_error(lambda lib: lib.threshold(X(lib).to(lib.bool), 0, 1))
    same_error(lambda lib: lib.threshold(X(lib).to(lib.complex64), 0, 1))
    # in-place on memory that several elements share
    same_error(lambda lib: NN(lib).elu_(lib.from_numpy(np.ones(1, np.float32)).expand(3)),
               match="more than one element")


def test_scalar_conversions(rng):
    for dt, args in [("int64", (0.5, 10.7)), ("int64", (-0.5, 9)), ("int64", (1.5, 9)),
                     ("float16", (1e10, 1)), ("uint8", (3, 255)), ("int8", (-1.5, 2.5))]:
        e, t = pair_from(np.array([-3, -1, 0, 1, 3, 7]).astype(dt) if dt != "uint8"
                         else np.array([0, 1, 3, 7, 200], np.uint8), dt)
        check(ember.threshold(e, *args), torch.threshold(t, *args))
    e, t = pair_from(np.array([-3, 0, 3, 7]), "int64")
    check(enn.hardtanh(e, -1.5, 2.5), tnn.hardtanh(t, -1.5, 2.5))
    check(enn.relu6(e), tnn.relu6(t))
    e, t = pair_from(np.array([-1.0, 2.0], np.float16), "float16")
    check(enn.leaky_relu(e, 1e10), tnn.leaky_relu(t, 1e10))
    check(enn.elu(e, 1e10), tnn.elu(t, 1e10))
    check(enn.softplus(e, 1e10), tnn.softplus(t, 1e10))


def test_rrelu_training():
    x = ember.from_numpy(np.linspace(-3, 3, 200).astype(np.float32))
    ember.manual_seed(0)
    r = ember.rrelu(x, 0.1, 0.3, training=True)
    xn, rn = x.numpy(), r.numpy()
    neg = xn <= 0
    slope = rn[neg] / np.where(xn[neg] == 0, 1, xn[neg])
    assert ((slope >= 0.1) & (slope <= 0.3))[xn[neg] != 0].all()
    assert np.array_equal(rn[~neg], xn[~neg])
    g = ember.Generator().manual_seed(3)
    r1 = ember.rrelu(x, training=True, generator=g).numpy()
    g.manual_seed(3)
    assert np.array_equal(r1, ember.rrelu(x, training=True, generator=g).numpy())


def test_gelu_large_arrays(rng):
    # large inputs take the vectorised erf path
    v = np.concatenate([np.linspace(-10, 10, 3001), [np.nan, -np.inf, 5.9999, 6.0, 6.001]])
    for dtype in ["float32", "float64"]:
        e, t = pair_from(v.astype(dtype), dtype)
        check(enn.gelu(e), tnn.gelu(t))
    e, t = pair_from(rng.standard_normal((40, 50)), "float64")
    check(enn.gelu(e), tnn.gelu(t), atol=1e-15, rtol=1e-14)


@pytest.mark.parametrize("n", [7, 65536, 70001])  # the small path, and the blocked path with and without a tail
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_signed_zero_and_nan(n, dtype):
    """torch keeps -0.0 and NaN through relu; the large-input path (rows against a cached zero row)
    must give the same bits as the small one."""
    x = np.random.default_rng(1).standard_normal(n).astype(dtype)
    x[[1, 3, 4, n - 1]] = [np.nan, -0.0, 0.0, -0.0]
    e = ember.from_numpy(x.copy()).relu().numpy()
    t = torch.from_numpy(x.copy()).relu().numpy()
    assert np.array_equal(e, t, equal_nan=True) and np.array_equal(np.signbit(e), np.signbit(t))
