"""Activation kernels on NumPy arrays (ATen's Activation.cpp, GeluKernel, SoftplusKernel, ...).

float16/bfloat16 inputs are computed in float32 and rounded back, as PyTorch's CPU kernels do.
Explicit in-place kernels (`gelu_`, ...) write into the array they are given.
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.kernels.cpu import _promote
from ember.kernels.cpu import _special as _sp
from ember.kernels.cpu import random as _random
from ember.kernels.cpu._glue import _OVERLAP
from ember.kernels.cpu.pointwise import _ONE  # 0-d ones of float32/float64 (read-only)
from ember.kernels.meta import activation as _m
from ember.kernels.meta.compare import tensor_only

_nd = np.ndarray
_NP2DT = _dt.NP2DT
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
# 0 (and, from pointwise, 1) as 0-d arrays: NumPy's path for a Python number costs ~3K instructions
# more per ufunc call (the same bits; see _glue.number_array)
_ZERO = {_F32: np.zeros((), _F32), _F64: np.zeros((), _F64)}
for _a in _ZERO.values():
    _a.flags.writeable = False
_I53 = 1 << 53
_BOOL = np.dtype(np.bool_)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
_float_only = _m.float_only

# relu's zero in each dtype it supports: np.maximum with a same-dtype 0-d array is the fast path
# (a NumPy scalar costs ~1.5K instructions more per call, a Python 0 more still)
_RELU_ZERO = {d.np: np.zeros((), d.np) for d in _dt.ALL
              if d.category in (_dt.INT, _dt.FLOAT) and d.np is not None}
for _a in _RELU_ZERO.values():
    _a.flags.writeable = False


def _into(a, r):
    """Explicit in-place kernels: write r into a (PyTorch's error for overlapping memory)."""
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(a, r, casting="unsafe")


def _compute(a, kernel, complex_ok=False):
    """(array to compute on, dtype to round back to or None) for a float-only activation."""
    dt = a.dtype
    if dt in _HALF:
        return a.astype(_F32), dt
    _float_only(kernel, _NP2DT[dt], complex_ok)
    return a, None


def _back(r, h):
    return r if h is None else r.astype(h)


# ---- erf (NumPy has none): libm's erf for small inputs, the pointwise Chebyshev erf otherwise ----
_erf_small = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    """erf of a float64 array (within a few ulp of libm's)."""
    if x.size <= 512:
        return np.asarray(_erf_small(x), dtype=np.float64)
    from ember.kernels.cpu.pointwise import _erf64  # the pointwise erf: no per-element gathers
    return _erf64(x)


# ---- relu family -------------------------------------------------------------------------------
# np.maximum against a scalar misses NumPy's SIMD loop (about 3x slower at 1M float32 elements
# than against an array). Large contiguous inputs are taken as rows of _BLOCK elements and maxed
# against one cached row of zeros, which broadcasts along the outer axis and keeps the inner loop
# array-to-array. Same values bit for bit (NaN propagates as before).
_BLOCK = 4096
_ZERO_ROWS = {}


def _relu_blocked(a, z):
    n = a.size
    m = n - n % _BLOCK
    row = _ZERO_ROWS.get(a.dtype)
    if row is None:
        row = _ZERO_ROWS[a.dtype] = np.zeros(_BLOCK, a.dtype)
    out = np.empty(a.shape, a.dtype)
    flat, oflat = a.reshape(-1), out.reshape(-1)
    np.maximum(row, flat[:m].reshape(-1, _BLOCK), out=oflat[:m].reshape(-1, _BLOCK))
    if m < n:
        np.maximum(z, flat[m:], out=oflat[m:])
    return out


def relu(a):
    z = _RELU_ZERO.get(a.dtype)
    if z is not None:
        if a.size >= 65536 and a.flags.c_contiguous and a.dtype.kind == "f":
            return _relu_blocked(a, z)
        return np.maximum(z, a)  # zero first: a tie returns `a`, so relu(-0.0) is -0.0 as in torch
    _m.check_relu(_NP2DT[a.dtype])


def _clamp(a, lo, hi):
    t = a.dtype.type
    return np.minimum(np.maximum(a, t(lo)), t(hi))


def hardtanh(a, min_val=-1, max_val=1):
    lo, hi = _m.check_hardtanh(_NP2DT[a.dtype], min_val, max_val)
    return _clamp(a, lo, hi)


def leaky_relu(a, negative_slope=0.01):
    x, h = _compute(a, "leaky_relu_cpu")
    return _back(np.where(x > 0, x, x * negative_slope), h)


def rrelu(a, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    _m.check_rrelu(lower, upper)
    if not training:
        return leaky_relu(a, (lower + upper) / 2)
    x, h = _compute(a, "leaky_relu_cpu")
    noise = _random.rrelu_noise(generator, x, lower, upper).astype(x.dtype)  # torch's draws
    return _back(np.where(x <= 0, x * noise, x), h)


def prelu(a, weight):
    if not isinstance(weight, _nd):
        tensor_only("prelu", "weight", 2, weight)
    n = _m.check_prelu(a.shape, _NP2DT[a.dtype], weight.shape, _NP2DT[weight.dtype])
    x, h = _compute(a, "prelu_cpu")
    w = weight.astype(x.dtype) if h is not None else weight
    if n == 1:
        w = w.reshape(())
    elif a.ndim > 1:
        w = w.reshape((n,) + (1,) * (a.ndim - 2))
    return _back(np.where(x > 0, x, w * x), h)


# ---- exponential family ------------------------------------------------------------------------
def elu(a, alpha=1, scale=1, input_scale=1):
    x, h = _compute(a, "elu_cpu")
    neg = np.expm1(x * input_scale) * (alpha * scale)
    return _back(np.where(x <= 0, neg, x * scale), h)


def celu(a, alpha=1.0):
    _m.check_celu(alpha)
    return elu(a, alpha, 1, 1.0 / alpha)


def softplus(a, beta=1, threshold=20):
    x, h = _compute(a, "softplus_cpu")
    xb = x * beta
    return _back(np.where(xb > threshold, x, np.log1p(np.exp(xb)) / beta), h)


def silu(a):
    x, h = _compute(a, "silu_cpu", True)
    return _back(x / (1 + np.exp(-x)), h)


def mish(a):
    x, h = _compute(a, "mish_cpu")
    return _back(x * np.tanh(np.log1p(np.exp(x))), h)


def log_sigmoid(a):
    x, h = _compute(a, "log_sigmoid_cpu")
    # torch's log_sigmoid_forward returns a contiguous output whatever the input's layout
    r = _back(np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), h)
    return r if r.flags.c_contiguous else r.copy(order="C")


_SQRT1_2 = 0.7071067811865476
_GELU_BETA = math.sqrt(2.0 / math.pi)


def gelu(a, approximate="none"):
    dt = a.dtype
    if dt == _F32 and approximate == "none":     # the hot path: float32 erf form, no float64
        return _sp.gelu_f32(a)
    _m.check_gelu(_NP2DT[dt], approximate)
    x, h = _compute(a, "GeluKernelImpl")
    if approximate == "tanh":
        return _back(_gelu_tanh(x), h)
    if h is not None:                               # float16/bfloat16: float32, rounded once
        return _sp.gelu_f32(x).astype(h)
    x64 = x.astype(np.float64, copy=False)
    return x64 * 0.5 * (1 + erf(x64 * _SQRT1_2))


def _gelu_tanh(x):
    inner = _GELU_BETA * (x + 0.044715 * (x * x * x))
    return 0.5 * x * (1 + np.tanh(inner))


def hardsigmoid(a):
    x, h = _compute(a, "hardsigmoid_cpu")
    return _back(np.minimum(np.maximum(x + 3, 0), 6) / 6, h)


def hardswish(a):
    x, h = _compute(a, "hardswish_cpu")
    return _back(x * np.minimum(np.maximum(x + 3, 0), 6) / 6, h)


# ---- thresholds and shrinkage ------------------------------------------------------------------
def threshold(a, threshold, value):
    th, v = _m.check_threshold(_NP2DT[a.dtype], threshold, value)
    if a.dtype in _HALF:
        x = a.astype(_F32)
        return np.where(x <= th, np.float32(v), x).astype(a.dtype)
    t = a.dtype.type
    return np.where(a <= t(th), t(v), a)


def softshrink(a, lambd=0.5):
    _m.check_softshrink(_NP2DT[a.dtype], lambd)
    x, h = _compute(a, "softshrink_check")
    r = np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0))
    return _back(r, h)


def hardshrink(a, lambd=0.5):
    lam = _m.check_hardshrink(_NP2DT[a.dtype], lambd)
    x, h = _compute(a, "hardshrink_cpu")
    if h is not None:
        lam = float(np.array(lam, dtype=h))  # the bound as the input dtype holds it
    return _back(np.where((x >= -lam) & (x <= lam), x * 0, x), h)


def glu(a, dim=-1):
    d = _m.glu_dim(a.shape, dim)
    x, h = _compute(a, "glu_cpu")
    n = a.shape[d] // 2
    idx = (slice(None),) * d
    first, second = x[idx + (slice(0, n),)], x[idx + (slice(n, None),)]
    return _back(first / (1 + np.exp(-second)), h)


# ---- explicit in-place variants --------------------------------------------------------------
def hardtanh_(a, min_val=-1, max_val=1):
    _into(a, hardtanh(a, min_val, max_val))


def gelu_(a, approximate="none"):
    _into(a, gelu(a, approximate))


def silu_(a):
    _into(a, silu(a))


def mish_(a):
    _into(a, mish(a))


def elu_(a, alpha=1, scale=1, input_scale=1):
    _into(a, elu(a, alpha, scale, input_scale))


def celu_(a, alpha=1.0):
    _into(a, celu(a, alpha))


def leaky_relu_(a, negative_slope=0.01):
    _into(a, leaky_relu(a, negative_slope))


def hardsigmoid_(a):
    _into(a, hardsigmoid(a))


def hardswish_(a):
    _into(a, hardswish(a))


def threshold_(a, threshold_, value):
    _into(a, threshold(a, threshold_, value))


def rrelu_(a, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    _into(a, rrelu(a, lower, upper, training, generator))


# ---- backward kernels (ATen's *_backward: grad_output and self broadcast) --------------------
def _pair(g, x, kernel, broadcast=True, complex_ok=False):
    """(grad, self) as computed on (float32 for float16/bfloat16), and the dtype to round back to."""
    if broadcast and g.shape != x.shape:
        _m.broadcast_shapes(g.shape, x.shape)     # torch's error where they do not broadcast
    d = g.dtype
    if x.dtype != d:
        d = _promote.result_dtype(g, x).np
        g = g.astype(d, copy=False)
        x = x.astype(d, copy=False)
    if d in _HALF:
        return g.astype(_F32), x.astype(_F32), d
    _float_only(kernel, _NP2DT[d], complex_ok)
    return g, x, None


def _zero(g):
    return g.dtype.type(0)


def _out_pair(g, y, kernel):
    """tanh/sigmoid_backward's (grad, output, dtype to round back to): complex allowed."""
    if g.shape != y.shape:
        _m.broadcast_shapes(g.shape, y.shape)     # torch's error where they do not broadcast
    d = g.dtype
    if y.dtype != d:
        d = _promote.result_dtype(g, y).np
        g = g.astype(d, copy=False)
        y = y.astype(d, copy=False)
    if d in _HALF:
        return g.astype(_F32), y.astype(_F32), d
    if d.kind not in "fc":
        _float_only(kernel, _NP2DT[d], True)
    return g, y, None


def tanh_backward(g, y):
    # ATen: grad * (1 - y * y) (conj(1 - y * y) for complex). The hot path (one float32/float64
    # dtype, one shape) is the plain expression: three ufunc passes, and at small sizes the
    # operators beat out= calls (keyword parsing costs more than the temporaries).
    d = y.dtype
    if g.dtype is d and (d is _F32 or d is _F64) and g.shape == y.shape:
        return g * (_ONE[d] - y * y)
    g, y, h = _out_pair(g, y, "tanh_backward_cpu")
    if not y.ndim:
        r = g * np.conjugate(1 - y * y) if y.dtype.kind == "c" else g * (1 - y * y)
        return _back(r, h)
    t = np.multiply(y, y)
    np.subtract(1, t, out=t)
    if t.dtype.kind == "c":
        np.conjugate(t, out=t)
    r = np.multiply(g, t, out=t if t.shape == g.shape else None)
    return r if h is None else r.astype(h)


def _tanh_backward_same(g, y):
    return g * (_ONE[y.dtype] - y * y) if g.shape == y.shape else None


def _sigmoid_backward_same(g, y):
    return g * (_ONE[y.dtype] - y) * y if g.shape == y.shape else None


# Same-dtype paths (the glue's; None or a 0-d result falls back to the kernels): the kernels' first
# branch, without their calls
tanh_backward_same = (_tanh_backward_same, frozenset((_dt.float32, _dt.float64)))
sigmoid_backward_same = (_sigmoid_backward_same, frozenset((_dt.float32, _dt.float64)))


def sigmoid_backward(g, y):
    # ATen: (grad * (1 - y)) * y (grad * conj((1 - y) * y) for complex): three passes
    d = y.dtype
    if g.dtype is d and (d is _F32 or d is _F64) and g.shape == y.shape:
        return g * (_ONE[d] - y) * y
    g, y, h = _out_pair(g, y, "sigmoid_backward_cpu")
    if not y.ndim or y.dtype.kind == "c":
        r = g * np.conjugate((1 - y) * y) if y.dtype.kind == "c" else (g * (1 - y)) * y
        return _back(r, h)
    t = np.subtract(1, y)
    r = np.multiply(g, t, out=t if t.shape == g.shape else None)
    np.multiply(r, y, out=r)
    return r if h is None else r.astype(h)


_SAME_INT = {np.dtype(np.float32): np.dtype(np.int32), np.dtype(np.float64): np.dtype(np.int64)}


def threshold_backward(g, x, threshold):
    d = g.dtype
    if x.dtype is d and (d is _F32 or d is _F64) and g.shape == x.shape and g.size <= 2048 and (
            threshold.__class__ is float or threshold.__class__ is int and -_I53 < threshold < _I53):
        # small: one compare and one select cost less than the branch-free form's five passes
        # (float32, random signs: 1024 elements 2.4 against 3.5 us, 2048 3.5 against 3.7, 4096 5.7
        # against 4.5: past ~2K the select's unpredictable branches lose)
        z = _ZERO[d]
        return np.where(x <= (threshold or z), z, g)
    d = g.dtype if g.dtype == x.dtype else _promote.result_dtype(g, x).np
    if d.kind not in "fV":                          # integers (ATen's threshold_cpu), bool, complex
        _m.threshold_dtype(_NP2DT[d])
        if g.shape != x.shape:
            _m.broadcast_shapes(g.shape, x.shape)
        g, x = g.astype(d, copy=False), x.astype(d, copy=False)
        return np.where(x <= _m.int_threshold(threshold, _NP2DT[d]), d.type(0), g)
    g, x, h = _pair(g, x, "threshold_cpu")
    it = _SAME_INT.get(g.dtype)
    if it is None or not x.ndim:
        return _back(np.where(x <= threshold, _zero(g), g), h)
    # Branch-free select (np.where on a random mask is slow): g's bits AND an all-ones/zero mask
    # give g or +0.0, exactly `x <= threshold ? 0 : g` (a NaN x keeps g).
    keep = np.less_equal(x, threshold)
    np.logical_not(keep, out=keep)
    m = keep.astype(it)
    np.negative(m, out=m)
    if m.shape == g.shape:
        np.bitwise_and(m, g.view(it), out=m)
    else:
        m = np.bitwise_and(m, g.view(it))
    return _back(m.view(g.dtype), h)


def hardtanh_backward(g, x, min_val, max_val):
    g, x, h = _pair(g, x, "hardshrink_backward_cpu")
    return _back(np.where((x <= min_val) | (x >= max_val), _zero(g), g), h)


def gelu_backward(g, x, approximate="none"):
    if (approximate == "none" and x.dtype == _F32 and g.dtype == _F32
            and g.shape == x.shape):                # the hot path (see gelu)
        return _sp.gelu_backward_f32(g, x)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    g, x, h = _pair(g, x, "GeluBackwardKernelImpl")
    if approximate == "tanh":
        x2 = x * x
        inner = _GELU_BETA * (x + 0.044715 * (x2 * x))
        t = np.tanh(inner)
        right = 0.5 * x * (1 - t * t) * (_GELU_BETA * (1 + 3 * 0.044715 * x2))
        return _back(g * (0.5 * (1 + t) + right), h)
    if g.dtype == _F32:                             # float16/bfloat16 computed in float32
        if g.shape != x.shape:
            g, x = np.broadcast_arrays(g, x)
        return _back(_sp.gelu_backward_f32(g, x), h)
    x64 = x.astype(np.float64, copy=False)
    cdf = 0.5 * (1 + erf(x64 * _SQRT1_2))
    pdf = np.exp(-0.5 * x64 * x64) * (1 / math.sqrt(2 * math.pi))
    return g * (cdf + x64 * pdf).astype(g.dtype, copy=False)


def silu_backward(g, x):
    g, x, h = _pair(g, x, "silu_backward_cpu", True, True)
    s = 1 / (1 + np.exp(-x))
    return _back(g * s * (1 + x * (1 - s)), h)


def mish_backward(g, x):
    g, x, h = _pair(g, x, "mish_backward_cpu")
    s = 1 / (1 + np.exp(-x))
    t = np.tanh(np.log1p(np.exp(x)))
    return _back(g * (t + x * s * (1 - t * t)), h)


def hardsigmoid_backward(g, x):
    g, x, h = _pair(g, x, "hardsigmoid_backward")
    return _back(np.where((x > -3) & (x < 3), g * (1 / 6), _zero(g)), h)


def hardswish_backward(g, x):
    g, x, h = _pair(g, x, "hardswish_backward_cpu")
    r = np.where(x <= -3, _zero(g), np.where(x < 3, g * (x / 3 + 0.5), g))
    return _back(r, h)


def softplus_backward(g, x, beta, threshold):
    g, x, h = _pair(g, x, "softplus_backward_cpu")
    xb = x * beta
    z = np.exp(xb)
    return _back(np.where(xb > threshold, g, g * z / (z + 1)), h)


def elu_backward(g, alpha, scale, input_scale, is_result, x):
    _m.check_elu_backward(alpha, is_result)
    g, x, h = _pair(g, x, "elu_backward_cpu")
    negcoef = alpha * scale
    if is_result:
        neg = g * input_scale * (x + negcoef)
    else:
        neg = g * (input_scale * negcoef) * np.exp(x * input_scale)
    return _back(np.where(x <= 0, neg, g * scale), h)


def leaky_relu_backward(g, x, negative_slope, self_is_result):
    _m.check_leaky_relu_backward(negative_slope, self_is_result)
    g, x, h = _pair(g, x, "leaky_relu_backward_cpu")
    return _back(np.where(x > 0, g, g * negative_slope), h)


def softshrink_backward(g, x, lambd):
    g, x, h = _pair(g, x, "softshrink_backward_cpu")
    return _back(np.where((x >= -lambd) & (x <= lambd), _zero(g), g), h)


def hardshrink_backward(g, x, lambd):
    g, x, h = _pair(g, x, "hardshrink_backward_cpu")
    return _back(np.where((x >= -lambd) & (x <= lambd), _zero(g), g), h)


def log_sigmoid_backward(g, x, buffer=None):
    g, x, h = _pair(g, x, "log_sigmoid_backward_cpu")
    z = np.exp(-np.abs(x))
    # x < 0: 1 - z / (1 + z); otherwise z / (1 + z)
    return _back(g * (np.where(x < 0, x.dtype.type(1), z) / (1 + z)), h)


def glu_backward(g, x, dim):
    d = _m.glu_dim(x.shape, dim)
    g, x, h = _pair(g, x, "glu_backward_cpu", False)
    n = x.shape[d] // 2
    idx = (slice(None),) * d
    a, b = x[idx + (slice(0, n),)], x[idx + (slice(n, None),)]
    s = 1 / (1 + np.exp(-b))
    return _back(np.concatenate([s * g, (1 - s) * s * a * g], axis=d), h)


def prelu_weight_shape(xshape, wshape):
    """The shape prelu's weight broadcasts with: () for one parameter, (C, 1, ...) per channel."""
    n = 1
    for s in wshape:
        n *= s
    if len(wshape) > 1:
        return tuple(wshape)   # already shaped to broadcast (PyTorch's _prelu_kernel weight)
    if n == 1:
        return ()
    if len(xshape) > 1:
        return (n,) + (1,) * (len(xshape) - 2)
    return tuple(wshape)


def prelu_kernel_backward(g, x, w):
    g, x, h = _pair(g, x, "prelu_backward_cpu")
    wshape = w.shape
    bshape = prelu_weight_shape(x.shape, wshape)
    wb = w.astype(x.dtype, copy=False).reshape(bshape)
    pos = x > 0
    gx = np.where(pos, g, wb * g)
    gw = np.where(pos, _zero(g), x * g)
    if gw.shape != bshape:
        lead = gw.ndim - len(bshape)
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(bshape)
                                          if s == 1 and gw.shape[lead + i] != 1)
        gw = gw.sum(axis=axes, keepdims=True).reshape(bshape) if axes else gw.reshape(bshape)
    return _back(gx, h), _back(gw.reshape(wshape), h)
