"""ATen's fused *_backward kernels (tanh_backward, sigmoid_backward, threshold_backward, ...) as
operators: values and dtypes against torch.ops.aten, broadcasting/non-contiguous inputs, meta
results, errors, the grad_input out= overloads, and the forward ops' graphs (node names, double
backward) that call them."""
import numpy as np
import pytest
import torch

import ember
from tests.harness import FLOATS, check, compare, make_pair, same_error

# (op name, extra positional arguments after (grad_output, self/output), keyword arguments)
OPS = [
    ("tanh_backward", (), {}),
    ("sigmoid_backward", (), {}),
    ("threshold_backward", (0.25,), {}),
    ("gelu_backward", (), {}),
    ("gelu_backward", (), {"approximate": "tanh"}),
    ("silu_backward", (), {}),
    ("mish_backward", (), {}),
    ("hardsigmoid_backward", (), {}),
    ("hardswish_backward", (), {}),
    ("softplus_backward", (2.0, 3.0), {}),
    ("hardtanh_backward", (-0.5, 0.5), {}),
    ("leaky_relu_backward", (0.1, False), {}),
]


def _call(lib, name, g, x, extra, kw):
    return getattr(lib.ops.aten, name)(g, x, *extra, **kw)


def _tols(dtype):
    return {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}.get(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,extra,kw", OPS, ids=[f"{o[0]}-{i}" for i, o in enumerate(OPS)])
def test_values_and_dtypes(name, extra, kw, dtype, rng):
    for shape in [(), (0,), (7,), (3, 4), (2, 3, 4)]:
        (eg, tg), (ex, tx) = make_pair(shape, dtype, rng), make_pair(shape, dtype, rng)
        if name in ("tanh_backward", "sigmoid_backward"):   # output in the forward's range
            ex, tx = ex.tanh() if name == "tanh_backward" else ex.sigmoid(), \
                tx.tanh() if name == "tanh_backward" else tx.sigmoid()
        compare(lambda lib, g, x: _call(lib, name, g, x, extra, kw), (eg, ex), (tg, tx),
                tol=_tols(dtype), meta=True)


# (not gelu_backward: torch 2.13 CPU fails in oneDNN on mixed dtypes)
@pytest.mark.parametrize("name,extra,kw", OPS[:3] + OPS[9:10], ids=lambda v: str(v))
def test_broadcast_noncontiguous_mixed_dtypes(name, extra, kw, rng):
    cases = [((3, 4), "transposed", (4,), "float32"), ((3, 1), "contiguous", (1, 4), "float64"),
             ((2, 3, 4), "strided", (), "float16"), ((3, 4), "expanded", (3, 4), "bfloat16"),
             ((5,), "contiguous", (5,), "int64")]
    for sg, layout, sx, xdtype in cases:
        eg, tg = make_pair(sg, "float32", rng, layout)
        ex, tx = make_pair(sx, xdtype, rng)
        compare(lambda lib, g, x: _call(lib, name, g, x, extra, kw), (eg, ex), (tg, tx),
                tol=_tols(xdtype), meta=True)
        compare(lambda lib, g, x: _call(lib, name, x, g, extra, kw), (eg, ex), (tg, tx),
                tol=_tols(xdtype), meta=True)


@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward", "threshold_backward"])
def test_meta_strides_follow_tensor_iterator(name, rng):
    # (the CPU kernels return contiguous results, as ember's other activation kernels do)
    extra = (0.0,) if name == "threshold_backward" else ()
    eg, tg = make_pair((3, 4), "float32", rng, "transposed")
    ex, tx = make_pair((3, 4), "float32", rng)
    for args_e, args_t in [((eg, ex), (tg, tx)), ((ex, eg), (tx, tg))]:
        t = getattr(torch.ops.aten, name)(*[a.to("meta") for a in args_t], *extra)
        e = getattr(ember.ops.aten, name)(*[a.to("meta") for a in args_e], *extra)
        assert tuple(e.stride()) == tuple(t.stride())


@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex(name, dtype, rng):
    (eg, tg), (ex, tx) = make_pair((3, 4), dtype, rng), make_pair((3, 4), dtype, rng)
    compare(lambda lib, g, x: getattr(lib.ops.aten, name)(g, x), (eg, ex), (tg, tx), meta=True)
    (ey, ty) = make_pair((), dtype, rng)
    compare(lambda lib, g, x: getattr(lib.ops.aten, name)(g, x), (eg, ey), (tg, ty))


@pytest.mark.parametrize("name,extra,kw", OPS, ids=[f"{o[0]}-{i}" for i, o in enumerate(OPS)])
def test_errors(name, extra, kw):
    # (the message's operand order and dimension are not yet torch's: see benchmarks/results)
    msg = "must match the size of tensor b"
    same_error(lambda lib: _call(lib, name, lib.ones(3), lib.ones(4), extra, kw), match=msg)
    same_error(lambda lib: _call(lib, name, lib.ones(2, 3), lib.ones(3, 2), extra, kw), match=msg)
    for dt in ("int64", "bool", "complex64"):   # complex: torch's result or torch's error
        compare(lambda lib, g, x: _call(lib, name, g, x, extra, kw),
                (ember.ones(3, dtype=getattr(ember, dt)),) * 2, (torch.ones(3, dtype=getattr(torch, dt)),) * 2)
    same_error(lambda lib: _call(lib, name, lib.ones(3, device="meta"), lib.ones(4, device="meta"),
                                 extra, kw), match=msg)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64"])
def test_threshold_backward_integers(dtype, rng):
    # ATen's threshold_cpu runs on integers: the threshold converted (truncated, checked) to the dtype
    (eg, tg), (ex, tx) = make_pair((3, 4), dtype, rng), make_pair((3, 4), dtype, rng)
    for th in (0, 2, 2.7, -1, 300, 1e20):
        compare(lambda lib, g, x: lib.ops.aten.threshold_backward(g, x, th), (eg, ex), (tg, tx),
                meta=True)
    eb, tb = make_pair((4,), "bool", rng)
    compare(lambda lib, g, x: lib.ops.aten.threshold_backward(g, x, 0), (eg, eb), (tg, tb))


GRAD_INPUT = [("tanh_backward", (), {}), ("sigmoid_backward", (), {}),
              ("threshold_backward", (0.0,), {}), ("gelu_backward", (), {"approximate": "tanh"}),
              ("silu_backward", (), {}), ("softplus_backward", (1.5, 20.0), {}),
              ("leaky_relu_backward", (0.2, False), {}), ("hardtanh_backward", (-1.0, 1.0), {})]


@pytest.mark.parametrize("name,extra,kw", GRAD_INPUT, ids=[g[0] for g in GRAD_INPUT])
def test_grad_input_out(name, extra, kw, rng):
    (eg, tg), (ex, tx) = make_pair((3, 4), "float32", rng), make_pair((3, 4), "float32", rng)
    eo, to = ember.empty(3, 4), torch.empty(3, 4)
    er = getattr(ember.ops.aten, name).grad_input(eg, ex, *extra, **kw, grad_input=eo)
    tr = getattr(torch.ops.aten, name).grad_input(tg, tx, *extra, **kw, grad_input=to)
    check(er, tr, atol=1e-6, rtol=1e-5)
    check(eo, to, atol=1e-6, rtol=1e-5)
    assert er is eo
    # resized from the wrong shape, float64 out keeps its dtype
    eo, to = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
    getattr(ember.ops.aten, name).grad_input(eg, ex, *extra, **kw, grad_input=eo)
    getattr(torch.ops.aten, name).grad_input(tg, tx, *extra, **kw, grad_input=to)
    check(eo, to, atol=1e-6, rtol=1e-5)
    same_error(lambda lib: getattr(lib.ops.aten, name).grad_input(
        lib.ones(3), lib.ones(3), *extra, **kw, grad_input=lib.empty(3, dtype=lib.int64)))
    assert str(getattr(ember.ops.aten, name).grad_input._schema).replace('"', "'") == \
        str(getattr(torch.ops.aten, name).grad_input._schema).removeprefix("aten::").replace('"', "'")


def test_elu_backward_grad_input(rng):
    (eg, tg), (ex, tx) = make_pair((3, 4), "float64", rng), make_pair((3, 4), "float64", rng)
    eo, to = ember.empty(3, 4, dtype=ember.float64), torch.empty(3, 4, dtype=torch.float64)
    ember.ops.aten.elu_backward.grad_input(eg, 1.0, 1.0, 1.0, False, ex, grad_input=eo)
    torch.ops.aten.elu_backward.grad_input(tg, 1.0, 1.0, 1.0, False, tx, grad_input=to)
    check(eo, to)


def test_schemas():
    for name in ["tanh_backward", "sigmoid_backward", "threshold_backward", "gelu_backward",
                 "silu_backward", "mish_backward", "hardsigmoid_backward", "hardswish_backward",
                 "softplus_backward", "elu_backward", "leaky_relu_backward", "hardtanh_backward",
                 "log_sigmoid_backward"]:
        e = str(getattr(ember.ops.aten, name).default._schema)
        t = str(getattr(torch.ops.aten, name).default._schema).removeprefix("aten::")
        assert e == t.replace('"', "'"), (e, t)


# ---- the forward ops' graphs -----------------------------------------------------------------
FORWARD = [
    ("tanh", lambda lib, x: x.tanh(), "TanhBackward0", "TanhBackwardBackward0"),
    ("sigmoid", lambda lib, x: x.sigmoid(), "SigmoidBackward0", "SigmoidBackwardBackward0"),
    ("relu", lambda lib, x: x.relu(), "ReluBackward0", "ThresholdBackwardBackward0"),
    ("gelu", lambda lib, x: lib.nn.functional.gelu(x), "GeluBackward0", "GeluBackwardBackward0"),
    ("softplus", lambda lib, x: lib.nn.functional.softplus(x, 2.0), "SoftplusBackward0",
     "SoftplusBackwardBackward0"),
]


@pytest.mark.parametrize("name,fn,node,node2", FORWARD, ids=[f[0] for f in FORWARD])
def test_graph_and_double_backward(name, fn, node, node2, rng):
    base = rng.standard_normal((3, 4))
    res = {}
    for lib in (ember, torch):
        x = lib.tensor(base, requires_grad=True)
        y = fn(lib, x)
        assert type(y.grad_fn).__name__ == node
        w = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
        g, = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == node2
        g2, = lib.autograd.grad((g * g).sum(), x)
        res[lib] = (y, g, g2)
    for e, t in zip(res[ember], res[torch]):
        check(e.detach(), t.detach())


@pytest.mark.parametrize("name", ["tanh_backward", "sigmoid_backward"])
def test_backward_op_gradcheck(name, rng):
    g = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    y = ember.tensor(rng.uniform(-0.9, 0.9, (3, 4)), requires_grad=True)
    fn = getattr(ember.ops.aten, name)
    assert ember.autograd.gradcheck(fn, (g, y))
    assert ember.autograd.gradgradcheck(fn, (g, y))
    # complex: the vector-Jacobian products equal torch's
    base_g = rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))
    base_y = 0.5 * (rng.standard_normal((3,)) + 1j * rng.standard_normal((3,)))
    base_w = rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))
    res = []
    for lib in (ember, torch):
        gc, yc = lib.tensor(base_g, requires_grad=True), lib.tensor(base_y, requires_grad=True)
        out = getattr(lib.ops.aten, name)(gc, yc)
        res.append(lib.autograd.grad(out, (gc, yc), lib.tensor(base_w)))
    for e, t in zip(*res):
        check(e, t)


@pytest.mark.parametrize("name,fn", [(f[0], f[1]) for f in FORWARD])
def test_forward_gradcheck(name, fn, rng):
    x = ember.tensor(rng.standard_normal((2, 3)) + 0.05, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: fn(ember, t), (x,))
    assert ember.autograd.gradgradcheck(lambda t: fn(ember, t), (x,))


def test_complex_forward_grads(rng):
    base = rng.standard_normal((4,)) + 1j * rng.standard_normal((4,))
    for op in ("tanh", "sigmoid"):
        out = []
        for lib in (ember, torch):
            x = lib.tensor(base * 0.5, requires_grad=True)
            y = getattr(x, op)()
            g, = lib.autograd.grad(y.abs().sum(), x, create_graph=True)
            g2, = lib.autograd.grad(g.abs().sum(), x)
            out.append((g.detach(), g2))
        check(*[o[0] for o in out][:1], out[1][0])
        check(out[0][1], out[1][1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [16, 2048, 2049])
@pytest.mark.parametrize("threshold", [0, 0.0, -0.0, 0.25, -1, 3])
def test_threshold_backward_special_values(dtype, n, threshold):
    # the small-size select (np.where) and the branch-free form for larger ones: a NaN input keeps
    # the gradient, an inf/NaN gradient where x <= threshold becomes +0.0, -0.0 keeps its sign
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    x[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, threshold]
    g[:6] = [np.inf, np.nan, -np.inf, -0.0, np.nan, 2.0]
    e = ember.ops.aten.threshold_backward(ember.tensor(g), ember.tensor(x), threshold)
    t = torch.ops.aten.threshold_backward(torch.tensor(g), torch.tensor(x), threshold)
    en, tn = e.numpy(), t.numpy()
    assert np.array_equal(en, tn, equal_nan=True) and np.array_equal(np.signbit(en), np.signbit(tn))
