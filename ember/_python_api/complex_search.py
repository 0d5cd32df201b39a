"""Complex-number helpers (real, imag; angle, polar and complex are operators, declared in
ember/ops/native_functions/pointwise.yaml), search and counting ops (isin,
bucketize, searchsorted, bincount, histc, unravel_index) and integer/float decompositions (gcd,
lcm, frexp), composed of ember ops so that autograd and every device work by themselves."""
import collections
import itertools
import math
import operator
from collections.abc import Sequence

import ember
from ember.autograd.function import Function
from ember.core.errors import fmt_shape
from ember.core.dtype import check_cast
from ember.kernels.composite import store_out
from ember.kernels.meta.pointwise import broadcast_shapes

__all__ = ["real", "imag", "isin", "bucketize", "searchsorted", "bincount",
           "histc", "unravel_index", "gcd", "lcm", "frexp"]

_frexp_result = collections.namedtuple("frexp", ["mantissa", "exponent"])
_frexp_result.__module__ = "ember.return_types"
_frexp_out_result = collections.namedtuple("frexp_out", ["mantissa", "exponent"])
_frexp_out_result.__module__ = "ember.return_types"

# caffe2::TypeMeta names, which frexp's out= messages print
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _tensor_arg(fn, name, pos, value):
    if not isinstance(value, ember.Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(value).__name__}")


def _not_implemented(op, dtype, device):
    return NotImplementedError(f'"{op}_{device.type}" not implemented for \'{dtype._short}\'')


def _store_out(out, r):
    return store_out(out, r, stacklevel=4)


# ---- complex numbers ----

def real(input):
    """The real part: a view for complex tensors, `input` itself otherwise."""
    _tensor_arg("real", "input", 1, input)
    return input.real


def imag(input):
    """The imaginary part of a complex tensor, as a view."""
    _tensor_arg("imag", "input", 1, input)
    return input.imag


# ---- searching ----

def _as_tensor(value, like):
    return value if isinstance(value, ember.Tensor) else ember.tensor(value, device=like.device)


def _left(at, values):
    return ~(at >= values)  # ATen's lower_bound test


def _right(at, values):
    return ~(at > values)  # ATen's upper_bound test


def _binary_search(seq, values, go_right):
    """Insertion points of `values` in the sorted last dim of `seq` (1-D, or leading dims equal to
    values'), by bit_length(n) halving steps of one gather each; go_right(seq_value, value) says
    whether the point lies after seq_value."""
    n = seq.shape[-1]
    lo = ember.zeros(values.shape, dtype=ember.int64, device=values.device)
    hi = ember.full(values.shape, n, dtype=ember.int64, device=values.device)
    for _ in range(n.bit_length()):
        active = lo < hi
        mid = (lo + hi).div(2, rounding_mode="floor")
        idx = mid.clamp(max=n - 1)
        at = seq.take(idx) if seq.dim() == 1 else seq.gather(-1, idx)
        after = go_right(at, values)
        lo = ember.where(active & after, mid + 1, lo)
        hi = ember.where(active & ~after, mid, hi)
    return lo


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where `input` would be inserted into the innermost dim of `sorted_sequence` to keep
    it sorted (the first such index; the last with right=True or side="right")."""
    _tensor_arg("searchsorted", "sorted_sequence", 1, sorted_sequence)
    seq = sorted_sequence
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side != "right":
            raise RuntimeError(f"torch.searchsorted(): side and right can't be set to opposites, got side of "
                               f"{side} while right was True")
        right = side == "right"
    values = _as_tensor(input, seq)
    if sorter is not None:
        if sorter.shape != seq.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {fmt_shape(seq.shape)}and got sorter tensor "
                               f"{fmt_shape(sorter.shape)}")
        if sorter.dtype != ember.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype._short}")
        if sorter.numel() and bool(((sorter < 0) | (sorter >= seq.shape[-1])).any()):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    if values.dim() == 0 and seq.dim() != 1:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.dim()}) and input value's "
                           f"dim(0) numel(1)")
    if seq.dim() == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if seq.dim() != 1 and (seq.dim() != values.dim() or seq.shape[:-1] != values.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {fmt_shape(seq.shape)} and input value tensor "
                           f"{fmt_shape(values.shape)}")
    out_dtype = ember.int32 if out_int32 else ember.int64
    if out is not None and out.dtype != out_dtype:
        raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
                           f"Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
                           f"dtype {out.dtype._short} and out_int32 flag is {out_int32}")
    common = ember.result_type(seq, input)
    if common == ember.bool or common.is_complex:
        raise _not_implemented("searchsorted_out", common, seq.device)
    seq = seq.detach().to(common)
    if sorter is not None:
        seq = seq.take(sorter) if seq.dim() == 1 else seq.gather(-1, sorter)
    r = _binary_search(seq, values.detach().to(common), _right if right else _left).to(out_dtype)
    return r if out is None else _store_out(out, r)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket of each input value; buckets are set by the 1-D sorted `boundaries`."""
    _tensor_arg("bucketize", "boundaries", 2, boundaries)
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of `elements` is in `test_elements` (either may be a number), as a bool tensor of
    elements' shape. (assume_unique only selects an algorithm in ATen; results are the same.)"""
    if not isinstance(elements, ember.Tensor) and not isinstance(test_elements, ember.Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but expected one of:")
    like = elements if isinstance(elements, ember.Tensor) else test_elements
    common = ember.result_type(elements, test_elements)  # a number takes part as a wrapped scalar
    scalar_test = not isinstance(test_elements, ember.Tensor)
    elements, test_elements = _as_tensor(elements, like), _as_tensor(test_elements, like)
    for t in (elements, test_elements):
        if t.dtype == ember.bool or t.is_complex():
            if t.dtype is ember.complex32:  # torch's check lets ComplexHalf by (see _isin_chalf)
                continue
            raise RuntimeError(f"Unsupported input type encountered for isin(): {t.dtype._short}")
    e = elements.detach().to(common)
    tests = test_elements.detach().to(common).reshape(-1)
    if tests.numel() == 0:
        if common.is_complex:  # complex32 took part
            return _isin_chalf(elements, test_elements, common, scalar_test, assume_unique, invert)
        found = ember.zeros(e.shape, dtype=ember.bool, device=e.device)
    else:
        # sort the tests, then binary-search each element: O((n + m) log m) time, O(n + m) memory.
        # `<` keeps the NaNs that sort puts last after every number (a NaN is in no set anyway).
        try:
            tests = tests.sort().values
        except RuntimeError:  # a complex common dtype, complex32 having taken part
            if not common.is_complex:
                raise
            return _isin_chalf(elements, test_elements, common, scalar_test, assume_unique, invert)
        pos = _binary_search(tests, e, operator.lt).clamp(max=tests.numel() - 1)
        found = tests.take(pos) == e
    return ~found if invert else found


def _isin_chalf(elements, test_elements, common, scalar_test, assume_unique, invert):
    """isin with a complex32 argument (the other neither bool nor another complex dtype), as torch's
    kernels take it: a number to test against is compared with eq/ne; else the elements are few
    enough for isin_default (no complex instance) or go to isin_sorting (unique has no ComplexHalf
    instance; sort, with assume_unique, no complex one)."""
    if scalar_test:
        return elements != test_elements if invert else elements == test_elements
    ne, nt = elements.numel(), test_elements.numel()
    if ne == 0:
        return ember.zeros(elements.shape, dtype=ember.bool, device=elements.device)
    if nt < int(10.0 * ne ** 0.145):
        raise NotImplementedError(f"\"isin_default_cpu\" not implemented for '{common._short}'")
    if assume_unique:
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    raise NotImplementedError("\"unique\" not implemented for 'ComplexHalf'")


# ---- counting ----

class _BincountNoDerivative(Function):
    """bincount with weights that require grad: ATen has no derivative for it (backward raises)."""

    @staticmethod
    def forward(ctx, weights, index, size):
        return ember.zeros(size, dtype=weights.dtype, device=weights.device).index_add_(0, index, weights)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::bincount is not implemented")


def bincount(input, weights=None, minlength=0):
    """Counts (or summed weights) of each value of a 1-D non-negative integer tensor."""
    _tensor_arg("bincount", "input", 1, input)
    if input.dtype == ember.bool or input.dtype.is_floating_point or input.is_complex():
        raise _not_implemented("bincount", input.dtype, input.device)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.dim() == 1 and input.numel() == 0:
        return ember.zeros(minlength, dtype=ember.int64, device=input.device)
    if input.dim() != 1 or int(input.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    size = max(int(input.max()) + 1, minlength)
    index = input.long()
    if weights is None:
        return ember.zeros(size, dtype=ember.int64, device=input.device).index_add_(
            0, index, ember.ones_like(index))
    if weights.dtype not in (ember.float32, ember.float64):
        weights = weights.to(ember.float64)  # ATen counts any other weights in double
    if weights.requires_grad:
        return _BincountNoDerivative.apply(weights, index, size)
    return ember.zeros(size, dtype=weights.dtype, device=weights.device).index_add_(0, index, weights)


def _fmt_edge(v):
    """A double as ATen's messages print it (C++ ostream: %g, NaN with its sign)."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return f"{v:g}"


def histc(input, bins=100, min=0, max=0):
    """Histogram of `input` in `bins` equal-width bins over [min, max] (the data's range when
    min == max); values outside the range (and NaN) are ignored."""
    _tensor_arg("histc", "input", 1, input)
    if not isinstance(bins, int) or isinstance(bins, bool):
        raise TypeError(f"histc(): argument 'bins' must be int, not {type(bins).__name__}")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input.detach().reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.numel() > 0:
        lo, hi = (float(v) for v in x.aminmax())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt_edge(lo)}, {_fmt_edge(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not x.dtype.is_floating_point:
        raise _not_implemented("histogram", x.dtype, x.device)
    # ATen's CPU kernel: edges are linspace(min, max, bins + 1) in the input dtype; an element in
    # [edge 0, edge bins] goes to bin trunc((x - edge 0) * bins / (edge bins - edge 0)), computed in
    # the input dtype (bins cast to it), the last bin also taking its right edge
    edges = ember.linspace(lo, hi, bins + 1, dtype=x.dtype, device=x.device)
    left, right = edges[0], edges[-1]
    inside = (x >= left) & (x <= right)
    n = ember.tensor(float(bins), dtype=x.dtype).item()
    pos = ember.where(inside, (x - left) * n / (right - left), 0).trunc().long()
    pos = pos.clamp(0, bins - 1)  # (outside elements count 0 wherever they land)
    return ember.zeros(bins, dtype=x.dtype, device=x.device).index_add_(0, pos, inside.to(x.dtype))


def unravel_index(indices, shape):
    """Flat indices into a tensor of `shape` -> a tuple of coordinate tensors, one per dim."""
    if indices.is_complex() or indices.is_floating_point() or indices.dtype == ember.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if not isinstance(shape, (int, Sequence)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if isinstance(shape, int):
        shape = (shape,)
    for dim in shape:
        if not isinstance(dim, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(dim)}")
    shape = tuple(shape)
    if any(dim < 0 for dim in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    # index i of dim k is (flat // prod(shape[k+1:])) % shape[k]; out-of-range indices wrap, as torch's
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=operator.mul))))
    dev = indices.device
    res = indices.unsqueeze(-1).floor_divide(ember.tensor(coefs, dtype=ember.int64, device=dev))
    return (res % ember.tensor(shape, dtype=ember.int64, device=dev)).unbind(-1)


# ---- integer and float decompositions ----

def _int_pair(op, input, other, method, out_dtype=None):
    """input and other broadcast to their promoted dtype, which must be integral (and castable to
    out_dtype, checked first as TensorIterator does)."""
    _tensor_arg(op, "other", 1 if method else 2, other)
    common = ember.result_type(input, other)
    if out_dtype is not None:
        check_cast(common, out_dtype)
    if common == ember.bool or common.is_floating_point or common.is_complex:
        raise _not_implemented(op, common, input.device)
    return ember.broadcast_tensors(input.to(common), other.to(common))


def _gcd(a, b):
    """Euclid's algorithm elementwise, ATen's calc_gcd: |a|, |b|; while a != 0: a, b = b % a, a."""
    a, b = a.abs(), b.abs()
    # meta tensors hold no values: their shape and dtype are already the result's
    while a.device.type != "meta" and bool((a != 0).any()):
        nz = a != 0
        a, b = ember.where(nz, ember.fmod(b, ember.where(nz, a, 1)), 0), ember.where(nz, a, b)
    return b


def _lcm(a, b):
    """Least common multiple elementwise, ATen's: |a / gcd(a, b) * b|, 0 where the gcd is 0."""
    g = _gcd(a, b)
    nz = g != 0
    dtype = a.dtype
    if dtype in (ember.uint8, ember.int8, ember.int16):
        # C++ does this arithmetic in int, then wraps the result into the narrow type
        a, b, g = a.int(), b.int(), g.int()
    return ember.where(nz, a.div(ember.where(nz, g, 1), rounding_mode="trunc").mul(b).abs(), 0).to(dtype)


def _binary_int_op(name, fn):
    def function(input, other, *, out=None):
        _tensor_arg(name, "input", 1, input)
        if out is None:
            return fn(*_int_pair(name, input, other, False))
        return _store_out(out, fn(*_int_pair(name, input, other, False, out.dtype)))

    def method(self, other):
        return fn(*_int_pair(name, self, other, True))

    def inplace(self, other):
        _tensor_arg(name + "_", "other", 1, other)
        shape = broadcast_shapes(tuple(self.shape), tuple(other.shape))
        if shape != tuple(self.shape):
            raise RuntimeError(f"output with shape {fmt_shape(self.shape)} doesn't match the broadcast shape "
                               f"{fmt_shape(shape)}")
        return self.copy_(fn(*_int_pair(name, self, other, True, self.dtype)))

    for f, n in ((function, name), (method, name), (inplace, name + "_")):
        f.__name__ = f.__qualname__ = n
    function.__doc__ = method.__doc__ = inplace.__doc__ = fn.__doc__
    return function, method, inplace


gcd, _gcd_method, _gcd_ = _binary_int_op("gcd", _gcd)
lcm, _lcm_method, _lcm_ = _binary_int_op("lcm", _lcm)


def frexp(input, *, out=None):
    """input = mantissa * 2**exponent with |mantissa| in [0.5, 1) (mantissa = input, exponent = 0
    for 0, inf and NaN); the mantissa's gradient is 2**-exponent."""
    _tensor_arg("frexp", "input", 1, input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if out is not None:
        m_out, e_out = out
        if m_out.dtype != input.dtype:
            raise RuntimeError(f"torch.frexp() expects mantissa to have dtype {_CPP_NAMES[input.dtype.name]} "
                               f"but got {_CPP_NAMES[m_out.dtype.name]}")
        if e_out.dtype != ember.int32:
            raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got "
                               f"{_CPP_NAMES[e_out.dtype.name]}")
    # half types: in float32, where 2**-exponent of their subnormals is representable
    x = input if input.dtype in (ember.float32, ember.float64) else input.float()
    a = x.detach().abs()
    normal = (a > 0) & a.isfinite()
    a = ember.where(normal, a, 1)
    e = a.log2().floor() + 1  # log2 may round across an integer: one correction step below

    def scale(e):
        # 2**-e as two factors: 2**-e alone overflows for subnormal inputs
        half = (-e).div(2, rounding_mode="floor")
        return half.exp2(), (-e - half).exp2()

    s1, s2 = scale(e)
    m = a * s1 * s2
    e = e + (m >= 1).to(e.dtype) - (m < 0.5).to(e.dtype)
    s1, s2 = scale(e)
    mantissa = ember.where(normal, x * s1 * s2, x).to(input.dtype)
    exponent = ember.where(normal, e, 0).to(ember.int32)
    if out is None:
        return _frexp_result(mantissa, exponent)
    return _frexp_out_result(_store_out(m_out, mantissa), _store_out(e_out, exponent))
