"""Meta functions of activation ops and the argument/dtype checks the CPU kernels share."""
from ember.core import dtype as _dt
from ember.core.errors import wrap_dim
from ember.core.tensor_impl import TensorImpl
from ember.kernels.meta.compare import checked, fmt_double, not_implemented, tensor_only
from ember.kernels.meta.pointwise import broadcast_shapes

BOOL, INT, FLOAT, COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
_HALF = (_dt.float16, _dt.bfloat16)


# ---- shared checks ---------------------------------------------------------------------------
def float_only(kernel, d, complex_ok=False):
    c = d.category
    if c != FLOAT and not (complex_ok and c == COMPLEX):
        raise not_implemented(kernel, d)


def check_relu(d):
    if d is _dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if d.category == COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")


def check_hardtanh(d, lo, hi):
    """The clamp limits converted to d (PyTorch's checked conversion)."""
    if d is _dt.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if d is _dt.uint8 and (lo < 0 or hi < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    if d.category == COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")
    return checked(lo, d), checked(hi, d)


def opmath_checked(v, d):
    """A scalar parameter as the kernel's compute type sees it (float16/bfloat16 compute in float)."""
    return checked(v, _dt.float32 if d in _HALF else d)


def check_threshold(d, threshold, value):
    if d is _dt.bool_ or d.category == COMPLEX:
        raise not_implemented("threshold_cpu", d)
    return opmath_checked(threshold, d), opmath_checked(value, d)


_FMAX = {_dt.float16: 65504.0, _dt.bfloat16: 3.3895313892515355e38,
         _dt.float32: 3.4028234663852886e38, _dt.float64: 1.7976931348623157e308}


def check_softshrink(d, lambd):
    float_only("softshrink_check", d)
    m = _FMAX[d]
    if not (0 <= lambd <= m):
        raise RuntimeError(f"lambda must be in range [0, {fmt_double(m)}] for input dtype {d._short}, "
                           f"but found {fmt_double(lambd)}")


def check_hardshrink(d, lambd):
    float_only("hardshrink_cpu", d)
    return checked(lambd, d)


def check_gelu(d, approximate):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    float_only("GeluKernelImpl", d)


def check_celu(alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")


def check_rrelu(lower, upper):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")


def glu_dim(shape, dim):
    """The wrapped dim glu halves; PyTorch's errors for 0-d and odd sizes."""
    if not shape:
        raise RuntimeError("glu does not support 0-dimensional tensors")
    d = wrap_dim(dim, len(shape))
    if shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {shape[d]}")
    return d


def check_prelu(shape, ds, wshape, dw):
    if ds is not dw:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {ds._short} and {dw._short}")
    n = 1
    for s in wshape:
        n *= s
    if n != 1:
        if not shape:
            raise RuntimeError("Not allow zero-dim input tensor.")
        ch = shape[1] if len(shape) > 1 else 1
        if ch != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {n} and channel size = {ch}.")
    if len(wshape) > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
                           f"{len(wshape)}")
    float_only("prelu_cpu", ds)
    return n


# ---- meta functions --------------------------------------------------------------------------
def _same(a):
    return a._shape, a._dtype


def relu(a):
    check_relu(a._dtype)
    return _same(a)


def hardtanh(a, min_val=-1, max_val=1):
    check_hardtanh(a._dtype, min_val, max_val)
    return _same(a)


def gelu(a, approximate="none"):
    check_gelu(a._dtype, approximate)
    return _same(a)


def _float_unary(kernel, complex_ok=False):
    def meta(a, *args):
        float_only(kernel, a._dtype, complex_ok)
        return _same(a)
    return meta


silu = _float_unary("silu_cpu", True)
mish = _float_unary("mish_cpu")
softplus = _float_unary("softplus_cpu")
elu = _float_unary("elu_cpu")
leaky_relu = _float_unary("leaky_relu_cpu")
hardsigmoid = _float_unary("hardsigmoid_cpu")
hardswish = _float_unary("hardswish_cpu")
log_sigmoid = _float_unary("log_sigmoid_cpu")


def celu(a, alpha=1.0):
    check_celu(alpha)
    float_only("elu_cpu", a._dtype)
    return _same(a)


def threshold(a, threshold, value):
    check_threshold(a._dtype, threshold, value)
    return _same(a)


def softshrink(a, lambd=0.5):
    check_softshrink(a._dtype, lambd)
    return _same(a)


def hardshrink(a, lambd=0.5):
    check_hardshrink(a._dtype, lambd)
    return _same(a)


def glu(a, dim=-1):
    d = glu_dim(a._shape, dim)
    float_only("glu_cpu", a._dtype)
    s = list(a._shape)
    s[d] //= 2
    return tuple(s), a._dtype


def prelu(a, weight):
    if not isinstance(weight, TensorImpl):
        tensor_only("prelu", "weight", 2, weight)
    check_prelu(a._shape, a._dtype, weight._shape, weight._dtype)
    return _same(a)


def rrelu(a, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    check_rrelu(lower, upper)
    float_only("leaky_relu_cpu", a._dtype)
    return _same(a)


# explicit in-place variants: validation only (the tensor keeps its metadata)
def hardtanh_(a, min_val=-1, max_val=1):
    hardtanh(a, min_val, max_val)


def gelu_(a, approximate="none"):
    gelu(a, approximate)


def silu_(a):
    silu(a)


def mish_(a):
    mish(a)


def elu_(a, alpha=1, scale=1, input_scale=1):
    elu(a)


def celu_(a, alpha=1.0):
    celu(a, alpha)


def leaky_relu_(a, negative_slope=0.01):
    leaky_relu(a)


def hardsigmoid_(a):
    hardsigmoid(a)


def hardswish_(a):
    hardswish(a)


def threshold_(a, threshold_, value):
    threshold(a, threshold_, value)


def rrelu_(a, lower=0.125, upper=1.0 / 3, training=False, generator=None):
    rrelu(a, lower, upper, training, generator)


# ---- backward kernels (grad_output and self broadcast; the promoted dtype) -------------------
_ELU_INPLACE = ("In-place elu backward calculation is triggered with a negative slope which is not "
                "supported. This is caused by calling in-place forward function with a negative slope, "
                "please call out-of-place version instead.")
_LEAKY_INPLACE = ("In-place leakyReLu backward calculation is triggered with a negative slope which is "
                  "not supported. This is caused by calling in-place forward function with a negative "
                  "slope, please call out-of-place version instead. File an issue at "
                  "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
                  "backward calculation with negative slope")


def check_elu_backward(alpha, is_result):
    if is_result and alpha < 0:
        raise RuntimeError(_ELU_INPLACE)


def check_leaky_relu_backward(negative_slope, self_is_result):
    if self_is_result and negative_slope < 0:
        raise RuntimeError(_LEAKY_INPLACE)


def _grad_pair(g, x):
    if g._shape == x._shape and g._dtype is x._dtype:
        return g._shape, g._dtype
    return (broadcast_shapes(g._shape, x._shape),
            _dt.result_type_of(((g._dtype, 0 if g._shape else 1), (x._dtype, 0 if x._shape else 1))))


def _backward(kernel, complex_ok=False):
    def meta(g, x, *args, **kwargs):
        r = _grad_pair(g, x)
        float_only(kernel, r[1], complex_ok)
        return r
    meta.__name__ = kernel.removesuffix("_cpu")  # the name meta/_glue.py's STRIDES reads
    return meta


# torch's dtype errors name these kernels (hardtanh_backward's dispatch is labelled hardshrink's)
hardtanh_backward = _backward("hardshrink_backward_cpu")
silu_backward = _backward("silu_backward_cpu", True)
mish_backward = _backward("mish_backward_cpu")
hardsigmoid_backward = _backward("hardsigmoid_backward")
hardswish_backward = _backward("hardswish_backward_cpu")
softplus_backward = _backward("softplus_backward_cpu")
softshrink_backward = _backward("softshrink_backward_cpu")
hardshrink_backward = _backward("hardshrink_backward_cpu")
log_sigmoid_backward = _backward("log_sigmoid_backward_cpu")
tanh_backward = _backward("tanh_backward_cpu", True)
sigmoid_backward = _backward("sigmoid_backward_cpu", True)


def threshold_dtype(d):
    """threshold(_backward) run on every real dtype but bool (ATen's threshold_cpu)."""
    if d is _dt.bool_ or d.category == COMPLEX:
        raise not_implemented("threshold_cpu", d)


def int_threshold(threshold, d):
    """The threshold as an integer dtype d holds it (c10's checked conversion, truncation, wrap)."""
    v = int(checked(threshold, d))
    return v % 256 if d is _dt.uint8 else v


def threshold_backward(g, x, threshold):
    r = _grad_pair(g, x)
    threshold_dtype(r[1])
    return r


def gelu_backward(g, x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    r = _grad_pair(g, x)
    float_only("GeluBackwardKernelImpl", r[1])
    return r


def elu_backward(g, alpha, scale, input_scale, is_result, x):
    check_elu_backward(alpha, is_result)
    r = _grad_pair(g, x)
    float_only("elu_backward_cpu", r[1])
    return r


def leaky_relu_backward(g, x, negative_slope, self_is_result):
    check_leaky_relu_backward(negative_slope, self_is_result)
    r = _grad_pair(g, x)
    float_only("leaky_relu_backward_cpu", r[1])
    return r


def glu_backward(g, x, dim):
    d = glu_dim(x._shape, dim)
    s = list(x._shape)
    s[d] //= 2
    if tuple(s) != tuple(g._shape):
        raise RuntimeError(f"glu_backward: expected grad_output of shape {tuple(s)}, got "
                           f"{tuple(g._shape)}")
    float_only("glu_backward_cpu", x._dtype)
    return x._shape, x._dtype


def prelu_kernel_backward(g, x, w):
    float_only("prelu_backward_cpu", x._dtype)
    return [(x._shape, x._dtype), (w._shape, w._dtype)]
