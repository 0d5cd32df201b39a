"""The CUDA backend's numba kernels (ember/kernels/cuda/{pointwise,reduction,softmax,linalg}.py)
against torch on the CPU: on numba's CUDA simulator (tests/cuda/conftest.py sets EMBER_CUDA_SIM=1)
or on a real GPU with EMBER_CUDA_SIM=0. The simulator runs every GPU thread as a Python thread,
so shapes are tiny and each test launches few kernels.

Device inputs are made on the device and then viewed (transposed, sliced with a step, expanded),
so the kernels see the same strided layouts torch sees. Tests marked `native` turn the backend's
"runs on the CPU" fallback warning into an error: the op must have run in a numba kernel."""
import numpy as np
import pytest
import torch

import ember
from tests.harness import check, make_pair, np_data, pair_from

pytestmark = [pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA and no simulator")]
native = pytest.mark.filterwarnings("error:ember. the CUDA backend has no kernel")


def dev_pair(shape, dtype, rng, layout="contiguous", low=None, high=None):
    """(ember CUDA tensor, torch CPU tensor) with the same values, viewed in `layout`."""
    shape = tuple(shape)
    if layout == "contiguous" or len(shape) == 0:
        e, t = make_pair(shape, dtype, rng, "contiguous", low, high)
        return e.to("cuda"), t
    if layout == "transposed":
        e, t = make_pair(shape[::-1], dtype, rng, "contiguous", low, high)
        dims = tuple(range(len(shape)))[::-1]
        return e.to("cuda").permute(dims), t.permute(dims)
    if layout == "strided":
        big = shape[:-1] + (2 * shape[-1] + 1,)
        e, t = make_pair(big, dtype, rng, "contiguous", low, high)
        return e.to("cuda")[..., 1::2], t[..., 1::2]
    if layout == "expanded":
        e, t = make_pair((1,) + shape[1:], dtype, rng, "contiguous", low, high)
        return e.to("cuda").expand(shape), t.expand(shape)
    raise ValueError(layout)


def host(e):
    assert e.device.type == "cuda", e.device
    return e.cpu()


def cmp(e, t, **kw):
    if isinstance(t, torch.Tensor):
        check(host(e), t, **kw)
    else:
        assert len(e) == len(t)
        for a, b in zip(e, t):
            check(host(a), b, **kw)


def both(fn, *pairs):
    return fn(ember, *[p[0] for p in pairs]), fn(torch, *[p[1] for p in pairs])


# ---- the kernel table --------------------------------------------------------------------------
def test_kernel_tables_name_declared_ops():
    from ember.dispatch.operator import OPERATORS
    from ember.kernels.cuda import linalg, pointwise, reduction, softmax
    for m in (pointwise, reduction, softmax, linalg):
        missing = [n for n in m.KERNELS if "aten::" + n not in OPERATORS]
        assert not missing, (m.__name__, missing)
    from ember.kernels.cuda import registered_kernels
    ember.cuda.init()
    reg = registered_kernels()
    for name in ("add.Tensor", "mul.Tensor", "where.self", "relu", "threshold_backward", "sum.dim_IntList",
                 "max.dim", "_softmax", "mm", "addmm", "bmm", "matmul"):
        assert name in reg, name


def test_coalescing_collapses_contiguous_operands():
    from ember.kernels.cuda import _launch as L
    assert L.coalesce([2, 3, 4], [[12, 4, 1], [12, 4, 1]]) == ([24], [[1], [1]])
    # broadcast operand along dim 0 keeps two dims; size-1 dims vanish
    assert L.coalesce([2, 1, 3, 4], [[12, 12, 4, 1], [0, 0, 4, 1]]) == ([2, 12], [[12, 1], [0, 1]])
    src = __import__("ember.kernels.cuda.pointwise", fromlist=["_source"])._source("a + b", "TS", 0, 1)
    assert "while i < n" in src and "cuda.gridsize(1)" in src  # the grid-stride loop


# ---- pointwise ---------------------------------------------------------------------------------
UNARY_FLOAT = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "atanh", "sigmoid", "erf",
               "erfc", "reciprocal", "neg", "abs", "square", "floor", "ceil", "trunc", "round", "frac",
               "sign", "deg2rad", "rad2deg", "isnan", "isinf", "isfinite", "signbit", "logical_not"]
_POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt"}
_UNIT = {"asin", "acos", "atanh"}


@native
@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary_float32_transposed(op, rng):
    lo, hi = (0.1, 3) if op in _POSITIVE else ((-0.9, 0.9) if op in _UNIT else (-3, 3))
    p = dev_pair((3, 5), "float32", rng, "transposed", lo, hi)
    e, t = both(lambda lib, x: getattr(lib, op)(x), p)
    cmp(e, t, atol=1e-5, rtol=1e-5)


@native
@pytest.mark.parametrize("op,dtype", [("abs", "int32"), ("neg", "int64"), ("sign", "int8"),
                                      ("square", "int16"), ("exp", "int64"), ("sqrt", "uint8"),
                                      ("floor", "int32"), ("sigmoid", "float64"), ("tanh", "float16"),
                                      ("abs", "float16"), ("isfinite", "int32"), ("logical_not", "int32"),
                                      ("bitwise_not", "int16"), ("bitwise_not", "bool")])
def test_unary_dtypes(op, dtype, rng):
    p = dev_pair((2, 3), dtype, rng, "strided")
    e, t = both(lambda lib, x: getattr(lib, op)(x), p)
    cmp(e, t)


@native
def test_unary_special_values():
    v = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 2.5, -2.5, 0.5, -1.5]
    e = ember.tensor(v).to("cuda")
    t = torch.tensor(v)
    for op in ("sign", "round", "isnan", "isinf", "isfinite", "signbit", "isposinf", "isneginf",
               "floor", "trunc", "frac", "relu", "nan_to_num"):
        cmp(getattr(ember, op)(e), getattr(torch, op)(t))
    cmp(ember.nan_to_num(e, 1.0, 2.0, -3.0), torch.nan_to_num(t, 1.0, 2.0, -3.0))
    cmp(ember.logit(e.clamp(0.1, 0.9)), torch.logit(t.clamp(0.1, 0.9)))
    cmp(ember.logit(e, 0.2), torch.logit(t, 0.2))


BINARY = [
    ("add", lambda lib, a, b: lib.add(a, b)),
    ("add_alpha", lambda lib, a, b: lib.add(a, b, alpha=2)),
    ("sub_alpha", lambda lib, a, b: lib.sub(a, b, alpha=3)),
    ("rsub", lambda lib, a, b: lib.rsub(a, b)),
    ("mul", lambda lib, a, b: a * b),
    ("div", lambda lib, a, b: a / b),
    ("div_trunc", lambda lib, a, b: lib.div(a, b, rounding_mode="trunc")),
    ("div_floor", lambda lib, a, b: lib.div(a, b, rounding_mode="floor")),
    ("floor_divide", lambda lib, a, b: a // b),
    ("remainder", lambda lib, a, b: a % b),
    ("fmod", lambda lib, a, b: lib.fmod(a, b)),
    ("pow", lambda lib, a, b: lib.pow(a.abs(), b)),
    ("atan2", lambda lib, a, b: lib.atan2(a, b)),
    ("hypot", lambda lib, a, b: lib.hypot(a, b)),
    ("copysign", lambda lib, a, b: lib.copysign(a, b)),
    ("maximum", lambda lib, a, b: lib.maximum(a, b)),
    ("minimum", lambda lib, a, b: lib.minimum(a, b)),
    ("fmax", lambda lib, a, b: lib.fmax(a, b)),
    ("fmin", lambda lib, a, b: lib.fmin(a, b)),
    ("eq", lambda lib, a, b: a == b),
    ("ne", lambda lib, a, b: a != b),
    ("lt", lambda lib, a, b: a < b),
    ("le", lambda lib, a, b: a <= b),
    ("gt", lambda lib, a, b: a > b),
    ("ge", lambda lib, a, b: a >= b),
    ("logical_and", lambda lib, a, b: lib.logical_and(a, b)),
    ("logical_xor", lambda lib, a, b: lib.logical_xor(a, b)),
]


@native
@pytest.mark.parametrize("name,fn", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcast_float(name, fn, rng):
    a = dev_pair((3, 1, 4), "float32", rng)
    b = dev_pair((2, 1), "float32", rng, low=0.5, high=3)   # no zero divisors
    e, t = both(fn, a, b)
    cmp(e, t, atol=1e-5, rtol=1e-5)


_INT_BINARY = {"add", "add_alpha", "sub_alpha", "mul", "div", "div_trunc", "div_floor", "floor_divide",
               "remainder", "fmod", "maximum", "minimum", "lt", "eq", "logical_and"}


@native
@pytest.mark.parametrize("name,fn", [b for b in BINARY if b[0] in _INT_BINARY],
                         ids=[b[0] for b in BINARY if b[0] in _INT_BINARY])
def test_binary_int_mixed_signs(name, fn, rng):
    a = dev_pair((2, 4), "int64", rng, "strided", low=-9, high=10)
    bv = np.array([3, -2, 4, -5], dtype=np.int32)
    b = pair_from(bv, "int32")
    b = (b[0].to("cuda"), b[1])
    e, t = both(fn, a, b)   # int64 op int32: promoted
    cmp(e, t)


@native
def test_binary_special_values():
    v = [float("nan"), 1.0, -1.0, 0.0, float("inf"), 7.5, -7.5]
    w = [2.0, float("nan"), 0.0, -0.0, 3.0, -2.0, 2.0]
    a, b = ember.tensor(v).to("cuda"), ember.tensor(w).to("cuda")
    ta, tb = torch.tensor(v), torch.tensor(w)
    for f in (torch.maximum, torch.minimum, torch.fmax, torch.fmin, torch.remainder, torch.fmod,
              torch.floor_divide, torch.pow, torch.div):
        cmp(getattr(ember, f.__name__)(a, b), f(ta, tb))
    cmp(ember.div(a, b, rounding_mode="floor"), torch.div(ta, tb, rounding_mode="floor"))
    ai, bi = ember.tensor([2, -3, 0, 5]).to("cuda"), ember.tensor([3, 2, 4, -1]).to("cuda")
    cmp(ember.pow(ai, bi), torch.pow(torch.tensor([2, -3, 0, 5]), torch.tensor([3, 2, 4, -1])))


@native
def test_scalars_zero_dim_and_promotion(rng):
    a = dev_pair((2, 3), "int32", rng)
    f = dev_pair((2, 3), "float16", rng)
    z = dev_pair((), "float64", rng)          # a 0-d CUDA tensor: does not promote float16
    for fn in (lambda lib, x: x + 2, lambda lib, x: x * 2.5, lambda lib, x: 3 - x,
               lambda lib, x: x / 4, lambda lib, x: 2 ** x, lambda lib, x: x ** 2,
               lambda lib, x: x ** 0.5, lambda lib, x: x > 1, lambda lib, x: lib.float_power(x, 2)):
        cmp(*both(fn, a))
    cmp(*both(lambda lib, x, y: x * y, f, z))
    cmp(*both(lambda lib, x, y: x + y, a, z))
    cmp(*both(lambda lib, x: x + torch.tensor(1.5) if lib is torch else x + ember.tensor(1.5), f))
    cmp(*both(lambda lib, x: lib.add(x, 1, alpha=3), a))
    e, t = dev_pair((), "float32", rng)
    cmp(ember.exp(e), torch.exp(t))        # 0-d in, 0-d out
    cmp(e * 3, t * 3)


@native
def test_empty_and_bool(rng):
    e = ember.empty(0, 3).to("cuda")
    t = torch.empty(0, 3)
    cmp(e + 1, t + 1)
    cmp(ember.exp(e), torch.exp(t))
    a, b = dev_pair((4,), "bool", rng), dev_pair((4,), "bool", rng)
    for fn in (lambda lib, x, y: x + y, lambda lib, x, y: x * y, lambda lib, x, y: x & y,
               lambda lib, x, y: x | y, lambda lib, x, y: x ^ y, lambda lib, x, y: lib.maximum(x, y)):
        cmp(*both(fn, a, b))


@native
def test_ternary(rng):
    c = dev_pair((3, 1), "bool", rng)
    x = dev_pair((3, 4), "float32", rng, "transposed")
    y = dev_pair((4,), "float64", rng)
    cmp(*both(lambda lib, c, x, y: lib.where(c, x, y), c, x, y))
    cmp(*both(lambda lib, c, x: lib.where(c, x, 0.5), c, x))
    cmp(*both(lambda lib, c: lib.where(c, 1.0, 2.0), c))
    cmp(*both(lambda lib, x, c: x.masked_fill(c, -1.0), x, c))
    lo, hi = dev_pair((4,), "float32", rng, low=-1, high=0), dev_pair((3, 1), "float32", rng, low=0, high=1)
    cmp(*both(lambda lib, x, lo, hi: lib.clamp(x, lo, hi), x, lo, hi))
    cmp(*both(lambda lib, x: lib.clamp(x, -0.5, 0.5), x))
    cmp(*both(lambda lib, x: lib.clamp(x, min=0.1), x))
    cmp(*both(lambda lib, x: lib.clamp(x, max=0.1), x))
    cmp(*both(lambda lib, x: x.clamp_min(0.0), x))
    e = dev_pair((3, 4), "float32", rng)
    w = dev_pair((4,), "float32", rng, low=0, high=1)
    cmp(*both(lambda lib, x, e: lib.lerp(x, e, 0.3), x, e))
    cmp(*both(lambda lib, x, e, w: lib.lerp(x, e, w), x, e, w))
    cmp(*both(lambda lib, x, e, w: lib.addcmul(x, e, w, value=0.5), x, e, w), atol=1e-5, rtol=1e-5)
    cmp(*both(lambda lib, x, e, w: lib.addcdiv(x, e, w + 1, value=2), x, e, w), atol=1e-5, rtol=1e-5)


@native
def test_inplace_and_errors(rng):
    base_e, base_t = dev_pair((4, 6), "float32", rng)
    ve, vt = base_e[:, ::2], base_t[:, ::2]       # strided view: writes go through to the base
    o_e, o_t = dev_pair((3,), "float32", rng)
    ve.add_(o_e, alpha=2)
    vt.add_(o_t, alpha=2)
    ve.mul_(3)
    vt.mul_(3)
    ve.clamp_(-1, 1)
    vt.clamp_(-1, 1)
    ve.sigmoid_()
    vt.sigmoid_()
    ve.relu_()
    vt.relu_()
    cmp(base_e, base_t)
    i_e = ember.zeros(3, dtype=ember.int64).to("cuda")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i_e.add_(1.5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.zeros(3).to("cuda").add_(ember.zeros(2, 3).to("cuda"))
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.zeros(3).to("cuda") + ember.zeros(4).to("cuda")
    f_e = ember.ones(3).to("cuda")
    f_e.add_(ember.tensor([1, 2, 3]).to("cuda"))   # int into float: fine
    cmp(f_e, torch.tensor([2.0, 3.0, 4.0]))
    z_e = ember.ones(2, 2).to("cuda")
    z_e.zero_()
    cmp(z_e, torch.zeros(2, 2))
    c_e, c_t = dev_pair((2, 3), "float32", rng, "transposed")
    cmp(c_e.clone(), c_t.clone())


ACTIVATIONS = [
    ("relu", lambda F, x: F.relu(x)),
    ("gelu", lambda F, x: F.gelu(x)),
    ("gelu_tanh", lambda F, x: F.gelu(x, approximate="tanh")),
    ("silu", lambda F, x: F.silu(x)),
    ("mish", lambda F, x: F.mish(x)),
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x)),
    ("hardswish", lambda F, x: F.hardswish(x)),
    ("hardtanh", lambda F, x: F.hardtanh(x, -0.5, 0.7)),
    ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.2)),
    ("elu", lambda F, x: F.elu(x, 0.7)),
    ("celu", lambda F, x: F.celu(x, 1.3)),
    ("softplus", lambda F, x: F.softplus(x, 2, 3)),
    ("threshold", lambda F, x: F.threshold(x, 0.1, -2.0)),
    ("softshrink", lambda F, x: F.softshrink(x, 0.4)),
    ("hardshrink", lambda F, x: F.hardshrink(x, 0.4)),
    ("logsigmoid", lambda F, x: F.logsigmoid(x)),
]


@native
@pytest.mark.parametrize("name,fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_and_grads(name, fn, rng):
    """Forward on the device, and backward (the *_backward kernels) through autograd."""
    data = np_data((2, 5), "float32", rng)
    xe = ember.tensor(data).to("cuda").requires_grad_()
    xt = torch.tensor(data, requires_grad=True)
    ye, yt = fn(ember.nn.functional, xe), fn(torch.nn.functional, xt)
    cmp(ye.detach(), yt.detach(), atol=1e-5, rtol=1e-5)
    ge = np_data((2, 5), "float32", rng)
    ye.backward(ember.tensor(ge).to("cuda"))
    yt.backward(torch.tensor(ge))
    cmp(xe.grad, xt.grad, atol=1e-5, rtol=1e-5)


@native
def test_activation_double_precision_and_inplace(rng):
    e, t = dev_pair((3, 4), "float64", rng, "transposed")
    cmp(ember.nn.functional.gelu(e), torch.nn.functional.gelu(t))
    e2, t2 = dev_pair((3, 4), "float32", rng)
    ember.nn.functional.elu(e2, inplace=True)
    torch.nn.functional.elu(t2, inplace=True)
    cmp(e2, t2)
    e3, t3 = dev_pair((5,), "int32", rng)
    cmp(ember.relu(e3), torch.relu(t3))


# ---- reductions --------------------------------------------------------------------------------
@native
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_reductions_along_dims(layout, rng):
    e, t = dev_pair((3, 4, 5), "float32", rng, layout)
    for dims, keep in (((0,), False), ((2,), True), ((0, 2), False), ((-1, 1), True), ((), False)):
        cmp(e.sum(dims, keepdim=keep), t.sum(dims, keepdim=keep), atol=1e-5, rtol=1e-5)
        cmp(e.mean(dims, keepdim=keep), t.mean(dims, keepdim=keep), atol=1e-5, rtol=1e-5)
    cmp(e.amax((0, 1)), t.amax((0, 1)))
    cmp(e.amin(2, keepdim=True), t.amin(2, keepdim=True))
    cmp(e.sum(), t.sum(), atol=1e-5, rtol=1e-5)
    cmp(e.max(), t.max())
    cmp(e.min(), t.min())
    cmp(e.prod(1), t.prod(1), atol=1e-5, rtol=1e-5)


@native
def test_max_min_arg_with_indices_ties_and_nan():
    v = [[1.0, 3.0, 3.0, -2.0], [float("nan"), 0.0, float("nan"), 5.0], [2.0, 2.0, 2.0, 2.0]]
    e, t = ember.tensor(v).to("cuda"), torch.tensor(v)
    for d in (0, 1, -1):
        cmp(e.max(d), t.max(d))
        cmp(e.min(d, keepdim=True), t.min(d, keepdim=True))
        cmp(e.argmax(d), t.argmax(d))
        cmp(e.argmin(d, keepdim=True), t.argmin(d, keepdim=True))
    cmp(e.argmax(), t.argmax())
    cmp(e[2:].argmin(), t[2:].argmin())
    cmp(e.amax(1), t.amax(1))
    cmp(e.max(), t.max())


@native
@pytest.mark.parametrize("dtype", ["int32", "bool", "float16", "float64", "uint8"])
def test_reduction_dtypes(dtype, rng):
    e, t = dev_pair((2, 6), dtype, rng, "strided")
    cmp(e.sum(1), t.sum(1))                       # integers and bool sum to int64
    cmp(e.sum(0, dtype=ember.float64), t.sum(0, dtype=torch.float64))
    if dtype != "bool":
        cmp(e.amax(0), t.amax(0))
        cmp(e.argmax(1), t.argmax(1))
    cmp(e.any(1), t.any(1))
    cmp(e.all(), t.all())
    if dtype in ("float16", "float64"):
        cmp(e.mean(1), t.mean(1))


@native
def test_reduction_zero_dim_and_empty(rng):
    e, t = dev_pair((), "float32", rng)
    cmp(e.sum(), t.sum())
    cmp(e.sum(0), t.sum(0))
    cmp(e.amax(), t.amax())
    cmp(e.argmax(), t.argmax())
    cmp(e.max(0), t.max(0))
    z_e, z_t = ember.empty(0, 3).to("cuda"), torch.empty(0, 3)
    cmp(z_e.sum(0), z_t.sum(0))
    cmp(z_e.sum(1), z_t.sum(1))
    cmp(z_e.prod(0), z_t.prod(0))
    cmp(z_e.mean(0), z_t.mean(0))
    with pytest.raises(RuntimeError):
        z_e.amax()


@native
def test_split_full_reduction(rng):
    """A long reduction to one value: partials from several blocks, then a second pass."""
    e, t = dev_pair((600,), "float32", rng)
    cmp(e.sum(), t.sum(), atol=1e-4, rtol=1e-5)
    cmp(e.view(1, 600).mean(1, keepdim=True), t.view(1, 600).mean(1, keepdim=True), atol=1e-5, rtol=1e-5)


# ---- softmax -----------------------------------------------------------------------------------
@native
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_softmax_any_dim(layout, rng):
    e, t = dev_pair((2, 3, 40), "float32", rng, layout)
    for d in (0, 2, -2):
        cmp(ember.softmax(e, d), torch.softmax(t, d), atol=1e-6, rtol=1e-5)
        cmp(ember.log_softmax(e, d), torch.log_softmax(t, d), atol=1e-5, rtol=1e-5)


@native
def test_softmax_dtypes_grad_and_edges(rng):
    e, t = dev_pair((3, 5), "float16", rng)
    cmp(ember.softmax(e, 1), torch.softmax(t, 1))
    cmp(ember.softmax(e, 1, dtype=ember.float32), torch.softmax(t, 1, dtype=torch.float32))
    cmp(ember._softmax(e, 1, True), torch._softmax(t.float(), 1, False))
    v = [[float("-inf"), 0.0, 1.0], [float("nan"), 0.0, 1.0], [1e30, 1e30, -1e30]]
    cmp(ember.softmax(ember.tensor(v).to("cuda"), 1), torch.softmax(torch.tensor(v), 1))
    z, zt = dev_pair((), "float32", rng)
    cmp(ember.log_softmax(z, 0), torch.log_softmax(zt, 0))
    cmp(ember.softmax(ember.empty(0, 4).to("cuda"), 1), torch.softmax(torch.empty(0, 4), 1))
    data = np_data((2, 6), "float32", rng)
    xe = ember.tensor(data).to("cuda").requires_grad_()
    xt = torch.tensor(data, requires_grad=True)
    ember.log_softmax(xe, 1)[:, 0].sum().backward()
    torch.log_softmax(xt, 1)[:, 0].sum().backward()
    cmp(xe.grad, xt.grad, atol=1e-5, rtol=1e-5)


# ---- matmul ------------------------------------------------------------------------------------
@native
def test_mm_bmm_addmm_layouts(rng):
    a = dev_pair((5, 9), "float32", rng, "transposed")
    b = dev_pair((9, 10), "float32", rng, "strided")
    cmp(*both(lambda lib, a, b: a @ b, a, b), atol=1e-5, rtol=1e-5)
    bias = dev_pair((10,), "float32", rng)
    cmp(*both(lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2), bias, a, b), atol=1e-5, rtol=1e-5)
    x = dev_pair((2, 3, 4), "float32", rng)
    y = dev_pair((2, 4, 3), "float32", rng, "transposed")
    cmp(*both(lambda lib, x, y: lib.bmm(x, y), x, y), atol=1e-5, rtol=1e-5)
    c = dev_pair((2, 1, 3), "float32", rng)
    cmp(*both(lambda lib, c, x, y: lib.baddbmm(c, x, y, alpha=0.5), c, x, y), atol=1e-5, rtol=1e-5)


@native
def test_matmul_cases_and_linear(rng):
    v = dev_pair((4,), "float32", rng)
    m = dev_pair((3, 4), "float32", rng)
    n = dev_pair((4, 2), "float32", rng)
    bt = dev_pair((2, 1, 4, 2), "float32", rng)   # batch dims broadcast against (3, 4, 4)
    bt2 = dev_pair((3, 3, 4), "float32", rng, "expanded")
    f = lambda lib, a, b: lib.matmul(a, b)  # noqa: E731
    cmp(*both(f, v, v), atol=1e-5, rtol=1e-5)
    cmp(*both(f, m, v), atol=1e-5, rtol=1e-5)
    cmp(*both(f, v, n), atol=1e-5, rtol=1e-5)
    cmp(*both(f, bt2, v), atol=1e-5, rtol=1e-5)
    cmp(*both(f, v, bt), atol=1e-5, rtol=1e-5)
    cmp(*both(f, bt2, n), atol=1e-5, rtol=1e-5)
    lhs = dev_pair((2, 1, 3, 4), "float32", rng)
    rhs = dev_pair((3, 4, 2), "float32", rng, "transposed")
    cmp(*both(f, lhs, rhs), atol=1e-5, rtol=1e-5)          # batch (2, 1) x (3,) -> (2, 3)
    cmp(*both(lambda lib, a, b: lib.mv(a, b), m, v), atol=1e-5, rtol=1e-5)
    cmp(*both(lambda lib, a, b: lib.dot(a, b), v, v), atol=1e-5, rtol=1e-5)
    w = dev_pair((5, 4), "float32", rng)
    bias = dev_pair((5,), "float32", rng)
    x3 = dev_pair((2, 3, 4), "float32", rng)
    cmp(*both(lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), x3, w, bias), atol=1e-5, rtol=1e-5)
    cmp(*both(lambda lib, x, w: lib.nn.functional.linear(x, w), m, w), atol=1e-5, rtol=1e-5)
    e0 = ember.empty(3, 0).to("cuda") @ ember.empty(0, 2).to("cuda")
    cmp(e0, torch.empty(3, 0) @ torch.empty(0, 2))
    ie, it = dev_pair((2, 3), "int64", rng), dev_pair((3, 2), "int64", rng)
    cmp(ie[0] @ it[0], ie[1] @ it[1])


@native
def test_linear_grad(rng):
    data = [np_data(s, "float32", rng) for s in ((4, 3), (2, 3), (2,))]
    e = [ember.tensor(d).to("cuda").requires_grad_() for d in data]
    t = [torch.tensor(d, requires_grad=True) for d in data]
    ember.nn.functional.linear(e[0], e[1], e[2]).relu().sum().backward()
    torch.nn.functional.linear(t[0], t[1], t[2]).relu().sum().backward()
    for a, b in zip(e, t):
        cmp(a.grad, b.grad, atol=1e-5, rtol=1e-5)


# ---- dtypes numba cannot do go to the host fallback --------------------------------------------
@pytest.mark.filterwarnings("ignore:ember. the CUDA backend has no kernel")
def test_bfloat16_takes_the_host_fallback(rng):
    from ember.kernels.cuda import fallback_ops_seen
    e, t = dev_pair((2, 3), "bfloat16", rng)
    cmp(e + e, t + t)
    assert "aten::add.Tensor" in fallback_ops_seen()
    cmp(e.sum(1), t.sum(1))
    cmp(ember.softmax(e, 1), torch.softmax(t, 1))


# ---- norms, variance, logsumexp ------------------------------------------------------------------
@native
def test_vector_norm_var_std_logsumexp(rng):
    e, t = dev_pair((3, 4, 5), "float32", rng, "transposed")
    for o in (2, 1, float("inf"), float("-inf"), 0, 3.5):
        cmp(ember.linalg.vector_norm(e, o, dim=(0, 2)), torch.linalg.vector_norm(t, o, dim=(0, 2)),
            atol=1e-5, rtol=1e-5)
    cmp(ember.linalg.vector_norm(e), torch.linalg.vector_norm(t), atol=1e-5, rtol=1e-5)
    cmp(e.norm(dim=1, keepdim=True), t.norm(dim=1, keepdim=True), atol=1e-5, rtol=1e-5)
    cmp(e.var(1), t.var(1), atol=1e-5, rtol=1e-5)
    cmp(e.std((0, 2), keepdim=True, correction=0), t.std((0, 2), keepdim=True, correction=0),
        atol=1e-5, rtol=1e-5)
    cmp(ember.var_mean(e, 2), torch.var_mean(t, 2), atol=1e-5, rtol=1e-5)
    cmp(ember.std_mean(e, (0, 1), keepdim=True), torch.std_mean(t, (0, 1), keepdim=True),
        atol=1e-5, rtol=1e-5)
    cmp(e.var(), t.var(), atol=1e-5, rtol=1e-5)
    cmp(ember.logsumexp(e, 1), torch.logsumexp(t, 1), atol=1e-5, rtol=1e-5)
    v = [[float("-inf"), float("-inf")], [float("inf"), 1.0], [1e30, 1e30]]
    cmp(ember.logsumexp(ember.tensor(v).to("cuda"), 1, keepdim=True),
        torch.logsumexp(torch.tensor(v), 1, keepdim=True))


# ---- losses, layer norm, cat/stack --------------------------------------------------------------
@native
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_nll_fwd_bwd(reduction, rng):
    data = np_data((5, 4), "float32", rng)
    tgt = [0, 3, -100, 2, 1]
    w = np_data((4,), "float32", rng, low=0.5, high=2)
    for weight in (None, w):
        xe = ember.tensor(data).to("cuda").requires_grad_()
        xt = torch.tensor(data, requires_grad=True)
        kw_e = {"weight": None if weight is None else ember.tensor(weight).to("cuda")}
        kw_t = {"weight": None if weight is None else torch.tensor(weight)}
        le = ember.nn.functional.cross_entropy(xe, ember.tensor(tgt).to("cuda"), reduction=reduction, **kw_e)
        lt = torch.nn.functional.cross_entropy(xt, torch.tensor(tgt), reduction=reduction, **kw_t)
        cmp(le.detach(), lt.detach(), atol=1e-5, rtol=1e-5)
        le.sum().backward()
        lt.sum().backward()
        cmp(xe.grad, xt.grad, atol=1e-5, rtol=1e-5)
    one_e = ember.nn.functional.nll_loss(ember.tensor(data[0]).to("cuda"), ember.tensor(2).to("cuda"))
    cmp(one_e, torch.nn.functional.nll_loss(torch.tensor(data[0]), torch.tensor(2)))


@native
def test_layer_norm_fwd_bwd(rng):
    data = np_data((2, 3, 40), "float32", rng)
    w, b = np_data((3, 40), "float32", rng), np_data((3, 40), "float32", rng)
    xe = ember.tensor(data).to("cuda").requires_grad_()
    xt = torch.tensor(data, requires_grad=True)
    we, be = (ember.tensor(a).to("cuda").requires_grad_() for a in (w, b))
    wt, bt = (torch.tensor(a, requires_grad=True) for a in (w, b))
    ye = ember.nn.functional.layer_norm(xe, (3, 40), we, be, 1e-5)
    yt = torch.nn.functional.layer_norm(xt, (3, 40), wt, bt, 1e-5)
    cmp(ye.detach(), yt.detach(), atol=1e-5, rtol=1e-5)
    g = np_data((2, 3, 40), "float32", rng)
    ye.backward(ember.tensor(g).to("cuda"))
    yt.backward(torch.tensor(g))
    for a, c in ((xe, xt), (we, wt), (be, bt)):
        cmp(a.grad, c.grad, atol=1e-4, rtol=1e-4)
    e2, t2 = dev_pair((4, 6), "float32", rng, "transposed")
    cmp(ember.nn.functional.layer_norm(e2, (6,)), torch.nn.functional.layer_norm(t2, (6,)),
        atol=1e-5, rtol=1e-5)


@native
def test_mse_loss_cat_stack(rng):
    a, b = dev_pair((3, 4), "float32", rng), dev_pair((4,), "float32", rng)
    for red in ("mean", "sum", "none"):
        cmp(*both(lambda lib, x, y: lib.nn.functional.mse_loss(x, y.expand(3, 4), reduction=red), a, b),
            atol=1e-5, rtol=1e-5)
    c = dev_pair((2, 4), "float64", rng, "transposed")
    i = dev_pair((3, 4), "int32", rng)
    cmp(*both(lambda lib, x, y, z: lib.cat([x, y, z]), a, c, i))
    cmp(*both(lambda lib, x, y: lib.cat([x, y], 1), a, a))
    cmp(*both(lambda lib, x: lib.cat([x, x.reshape(-1)[:0]]), a))   # legacy empty: skipped
    cmp(*both(lambda lib, x, y: lib.stack([x, y, x], 1), a, i))
    cmp(*both(lambda lib, x: lib.stack([x, x], -1), b))


@native
def test_register_blocked_matmul(rng, monkeypatch):
    """The GPU's register-blocked kernel (on the simulator at a reduced tile size), with ragged
    edges, a transposed operand, a batch and the addmm epilogue."""
    from ember.kernels.cuda import linalg
    monkeypatch.setattr(linalg, "use_register_blocking", lambda M, N, K: True)
    a = dev_pair((18, 7), "float32", rng)
    b = dev_pair((7, 9), "float32", rng, "transposed")
    cmp(*both(lambda lib, x, y: x @ y, a, b), atol=1e-5, rtol=1e-5)
    c = dev_pair((2, 1, 5), "float64", rng)
    m = dev_pair((2, 3, 7), "float64", rng)
    b2 = dev_pair((2, 7, 5), "float64", rng)
    cmp(*both(lambda lib, c, x, y: lib.baddbmm(c, x, y, beta=0.5, alpha=2), c, m, b2))


@native
def test_embedding_triu_arange(rng):
    w = np_data((7, 3), "float32", rng)
    idx = [[1, 6, 0], [3, 3, 2]]
    we = ember.tensor(w).to("cuda").requires_grad_()
    wt = torch.tensor(w, requires_grad=True)
    ie, it = ember.tensor(idx).to("cuda"), torch.tensor(idx)
    ye = ember.nn.functional.embedding(ie.t(), we, padding_idx=2)
    yt = torch.nn.functional.embedding(it.t(), wt, padding_idx=2)
    cmp(ye.detach(), yt.detach())
    g = np_data((3, 2, 3), "float32", rng)
    ye.backward(ember.tensor(g).to("cuda"))
    yt.backward(torch.tensor(g))
    cmp(we.grad, wt.grad, atol=1e-6, rtol=1e-6)
    cmp(ember.nn.functional.embedding(ember.tensor(4).to("cuda"), we.detach()),
        torch.nn.functional.embedding(torch.tensor(4), wt.detach()))
    e, t = dev_pair((2, 3, 4), "float32", rng, "transposed")
    for k in (-1, 0, 2):
        cmp(ember.triu(e, k), torch.triu(t, k))
        cmp(ember.tril(e, k), torch.tril(t, k))
    for args, kw in (((5,), {}), ((1, 7, 2), {}), ((0.5, 3.0, 0.25), {}), ((-3, 4), {"dtype": "float16"}),
                     ((10, 0, -3), {"dtype": "int32"})):
        ke = {k: getattr(ember, v) for k, v in kw.items()}
        kt = {k: getattr(torch, v) for k, v in kw.items()}
        cmp(ember.arange(*args, device="cuda", **ke), torch.arange(*args, **kt))


@native
def test_close_equal_glu_prelu_misc(rng):
    a = dev_pair((3, 4), "float32", rng)
    b = (a[0] + 1e-6, a[1] + 1e-6)
    v = [1.0, float("nan"), float("inf"), 2.0]
    w = [1.0 + 1e-9, float("nan"), float("inf"), 2.1]
    ve, we = ember.tensor(v).to("cuda"), ember.tensor(w).to("cuda")
    vt, wt = torch.tensor(v), torch.tensor(w)
    cmp(ember.isclose(ve, we), torch.isclose(vt, wt))
    cmp(ember.isclose(ve, we, equal_nan=True, rtol=0.1), torch.isclose(vt, wt, equal_nan=True, rtol=0.1))
    assert ember.allclose(b[0], a[0]) is True and ember.allclose(ve, we) is False
    assert ember.equal(a[0], a[0].clone()) is True and ember.equal(a[0], b[0]) is False
    assert ember.equal(a[0], a[0][:2]) is False
    i = dev_pair((5,), "int32", rng)
    cmp(ember.isclose(i[0], i[0] + 1, atol=1), torch.isclose(i[1], i[1] + 1, atol=1))
    x = dev_pair((2, 6, 3), "float32", rng, "transposed")
    cmp(*both(lambda lib, x: lib.nn.functional.glu(x, 1), x), atol=1e-6, rtol=1e-6)
    data = np_data((4, 6), "float32", rng)
    xe = ember.tensor(data).to("cuda").requires_grad_()
    xt = torch.tensor(data, requires_grad=True)
    ember.nn.functional.glu(xe, -1).sum().backward()
    torch.nn.functional.glu(xt, -1).sum().backward()
    cmp(xe.grad, xt.grad, atol=1e-6, rtol=1e-6)
    p = dev_pair((2, 3, 4), "float32", rng)
    pw = dev_pair((3,), "float32", rng)
    cmp(*both(lambda lib, x, w: lib.nn.functional.prelu(x, w), p, pw))
    cmp(*both(lambda lib, x, w: lib.nn.functional.prelu(x, w[:1]), p, pw))
    e = dev_pair((6,), "float32", rng, low=-0.9, high=0.9)
    cmp(*both(lambda lib, x: lib.erfinv(x), e), atol=1e-5, rtol=1e-5)
    cmp(*both(lambda lib, x: lib.round(x * 10, decimals=-1), e))
    cmp(*both(lambda lib, x: lib.round(x, decimals=2), e))
    f, ft = ember.tensor(v).to("cuda"), torch.tensor(v)
    f.nan_to_num_(0.5)
    ft.nan_to_num_(0.5)
    cmp(f, ft)
    m, mt = ember.tensor([0, 2, 0]).to("cuda"), torch.tensor([0, 2, 0])
    m.bitwise_not_()
    mt.bitwise_not_()
    cmp(m, mt)
    d, dt_ = ember.tensor([1.0, 2.0], dtype=ember.float64).to("cuda"), torch.tensor([1.0, 2.0], dtype=torch.float64)
    d.float_power_(2)
    dt_.float_power_(2)
    cmp(d, dt_)
    data = np_data((3, 4), "float32", rng)
    xe = ember.tensor(data).to("cuda").requires_grad_()
    xt = torch.tensor(data, requires_grad=True)
    ember.nn.functional.logsigmoid(xe).sum().backward()
    torch.nn.functional.logsigmoid(xt).sum().backward()
    cmp(xe.grad, xt.grad, atol=1e-6, rtol=1e-6)


def test_simulator_shared_array_is_one_per_block_line():
    """numba's simulator looks a block's shared array up by source line and stores it without a lock:
    two threads reaching the line together could each make their own array (rare wrong mv/matmul
    results under load). ember serialises the look-up; slowing the look-up down here makes the race
    certain without the lock."""
    import threading
    import time

    from ember.kernels.cuda import _launch
    if not _launch.simulated():
        pytest.skip("numba's simulator only")
    from numba.cuda.simulator.kernelapi import FakeCUDAShared

    ember.mv(ember.ones(2, 2, device="cuda"), ember.ones(2, device="cuda"))  # compiles a kernel: installs the lock
    assert getattr(FakeCUDAShared.array, "ember_locked", False)

    class SlowDict(dict):
        def get(self, key, default=None):
            found = super().get(key, default)
            time.sleep(0.01)  # without the lock both threads read (nothing) before either stores
            return found

    shared = FakeCUDAShared(0)
    shared._allocations = SlowDict()
    got = []

    def alloc():
        got.append(shared.array((4,), np.float32))  # one line, as in a kernel
    threads = [threading.Thread(target=alloc) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got[0] is got[1]
