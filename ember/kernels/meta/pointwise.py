"""Meta functions of pointwise ops: broadcast shape and promoted dtype, and PyTorch's argument
checks (the ones its structured meta functions make, so they fire on every device).

The checks shared with the CPU kernels (alpha, bool subtraction, scalar conversion, wording) live
here: CPU kernels may import meta, not the other way round.
"""
import builtins
import math

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.tensor_impl import TensorImpl

_BOOL, _INT, _FLOAT, _COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
_babs = builtins.abs


def part(x):
    if isinstance(x, TensorImpl):
        return (x._dtype, 0 if x._shape else 1)
    return (_dt.scalar_dtype(x), 2)


def shape_of(x):
    return x._shape if isinstance(x, TensorImpl) else ()


def dtype_of(x):
    return x._dtype if isinstance(x, TensorImpl) else _dt.scalar_dtype(x)


def broadcast_shapes(*shapes):
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        off = n - len(s)
        for i in range(len(s) - 1, -1, -1):  # from the last dimension, as PyTorch's infer_size (its error names it)
            d = s[i]
            j = i + off
            o = out[j]
            if d == o or d == 1:
                continue
            if o == 1:
                out[j] = d
            else:
                # PyTorch names the mismatch by tensor position (a, b) and non-singleton dim
                raise RuntimeError(f"The size of tensor a ({o}) must match the size of tensor b "
                                   f"({d}) at non-singleton dimension {j}")
    return tuple(out)


def binary(a, b, alpha=1):
    return broadcast_shapes(shape_of(a), shape_of(b)), _dt.result_type_of((part(a), part(b)))


def unary(a, *args):
    return a._shape, a._dtype


# ---- wording and checks shared with the CPU kernels ------------------------------------------
# c10's names of the C++ types (checked scalar conversion) and of TypeMeta (lerp's dtype checks)
CXX = {_dt.bool_: "bool", _dt.uint8: "uint8_t", _dt.int8: "int8_t", _dt.int16: "int16_t",
       _dt.int32: "int", _dt.int64: "int64_t", _dt.float16: "c10::Half",
       _dt.bfloat16: "c10::BFloat16", _dt.float32: "float", _dt.float64: "double",
       _dt.complex32: "c10::complex<c10::Half>", _dt.complex64: "c10::complex<float>",
       _dt.complex128: "c10::complex<double>"}
TYPEMETA = dict(CXX)
TYPEMETA.update({_dt.uint8: "unsigned char", _dt.int8: "signed char", _dt.int16: "short int",
                 _dt.int64: "long int"})
# range of each dtype for c10::overflows (floats: largest finite value)
_RANGE = {_dt.uint8: (0, 255), _dt.int8: (-128, 127), _dt.int16: (-32768, 32767),
          _dt.int32: (-2 ** 31, 2 ** 31 - 1), _dt.int64: (-2 ** 63, 2 ** 63 - 1),
          _dt.float16: 65504.0, _dt.bfloat16: 3.3895313892515355e+38,
          _dt.float32: 3.4028234663852886e+38, _dt.float64: math.inf,
          _dt.complex64: 3.4028234663852886e+38, _dt.complex128: math.inf,
          _dt.complex32: math.inf}  # torch converts into ComplexHalf unchecked (70000 -> inf)

SUB_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
             "or `logical_xor()` operator instead.")
SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead.")
NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead.")
ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future  release "
               "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
               "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
               ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
               "float inputs. The future addcdiv behavior is just the latter implementation: "
               "(input + value * tensor1 / tensor2), for all dtypes.")
NEG_POW = "Integers to negative integer powers are not allowed."
CLAMP_NONE = "torch.clamp: At least one of 'min' or 'max' must not be None"
CLAMP_COMPLEX = "clamp is not supported for complex types"
ABS_COMPLEX_INPLACE = "In-place abs is not supported for complex tensors."


def _overflow(d):
    return RuntimeError(f"value cannot be converted to type {CXX[d]} without overflow")


def checked(v, d):
    """c10's checked conversion of a Scalar to dtype d: v itself, or PyTorch's overflow error."""
    c = d.category
    if isinstance(v, complex):
        if c != _COMPLEX:
            if v.imag != 0:
                raise _overflow(d)
            v = v.real
        else:
            m = _RANGE[d]
            for p in (v.real, v.imag):
                if math.isfinite(p) and _babs(p) > m:
                    raise _overflow(d)
            return v
    if c == _BOOL:
        return v
    r = _RANGE[d]
    if c == _INT:
        lo, hi = r
        if v > hi or v < (lo if lo else -hi):
            raise _overflow(d)
        return v
    if isinstance(v, float):
        if math.isfinite(v) and _babs(v) > r:
            raise _overflow(d)
    elif _babs(v) > r:
        raise _overflow(d)
    return v


def alpha_check(rt, alpha):
    """ATen's alpha_check for add/sub (rt: the result dtype)."""
    if isinstance(alpha, bool) and rt is not _dt.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    c = rt.category
    if c < _FLOAT and isinstance(alpha, (float, complex)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point "
                           "number.")
    if c != _COMPLEX and isinstance(alpha, complex):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")


def sub_check(da, db):
    if da is _dt.bool_:
        raise RuntimeError(SUB_BOOLS if db is _dt.bool_ else SUB_BOOL)
    if db is _dt.bool_:
        raise RuntimeError(SUB_BOOL)


def need_tensor(x, op, name, pos, is_tensor):
    if not is_tensor(x):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def div_mode_check(mode):
    if mode is not None and mode != "trunc" and mode != "floor":
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{mode}'")


def min_max_check(da, db, name):
    if da.category == _COMPLEX or db.category == _COMPLEX:
        raise RuntimeError(f"{name} not implemented for complex tensors.")


def lerp_check(sd, ed, wd=None, w_dim=0):
    if ed is not sd:
        raise RuntimeError(f"expected dtype {TYPEMETA[sd]} for `end` but got dtype {TYPEMETA[ed]}")
    if wd is not None and w_dim and wd is not sd:
        raise RuntimeError(f"expected dtype {TYPEMETA[sd]} for `weight` but got dtype "
                           f"{TYPEMETA[wd]}")


def float_power_check(sd, cplx):
    want = _dt.complex128 if cplx else _dt.float64
    if sd is not want:
        raise RuntimeError(f"the base given to float_power_ has dtype {sd._short} but the operation's "
                           f"result requires dtype {want._short}")


def pow_scalar_check(base_dtype, exp):
    if base_dtype.category <= _INT and isinstance(exp, int) and exp < 0:
        raise RuntimeError(NEG_POW)


# ---- meta functions ------------------------------------------------------------------------
def _is_t(x):
    return isinstance(x, TensorImpl)


def _rt(*xs):
    return _dt.result_type_of(tuple(part(x) for x in xs))


def _shape(*xs):
    return broadcast_shapes(*(shape_of(x) for x in xs))


def add(a, b, alpha=1):
    rt = _rt(a, b)
    if alpha.__class__ is not int or alpha != 1:
        alpha_check(rt, alpha)
        checked(alpha, rt)
    return _shape(a, b), rt


def sub(a, b, alpha=1):
    sub_check(dtype_of(a), dtype_of(b))
    return add(a, b, alpha)


def rsub(a, b, alpha=1):
    if not _is_t(a):
        raise TypeError("rsub() received an invalid combination of arguments")
    return sub(b, a, alpha)


def _to_float(d):
    return d if d.category >= _FLOAT else _dt.defaults.float


def div(a, b):
    return _shape(a, b), _to_float(_rt(a, b))


def div_mode(a, b, rounding_mode=None):
    div_mode_check(rounding_mode)
    if rounding_mode is None:
        return div(a, b)
    return binary(a, b)


binary_float = div


def copysign(a, b):
    return div(a, b)


def floor_divide(a, b):
    return binary(a, b)


def _named_float(name):
    def meta(a, b):
        need_tensor(b, name, "other", 2, _is_t)
        return div(a, b)
    meta.__name__ = name
    return meta


atan2 = _named_float("atan2")
arctan2 = _named_float("arctan2")


def hypot(a, b):
    need_tensor(b, "hypot", "other", 2, _is_t)
    return binary(a, b)


def nextafter(a, b):
    need_tensor(b, "nextafter", "other", 2, _is_t)
    return binary(a, b)


def _named_min_max(name):
    def meta(a, b):
        need_tensor(b, name, "other", 2, _is_t)
        min_max_check(dtype_of(a), dtype_of(b), name)
        return binary(a, b)
    meta.__name__ = name
    return meta


minimum = _named_min_max("minimum")
maximum = _named_min_max("maximum")
fmin = _named_min_max("fmin")
fmax = _named_min_max("fmax")


def pow_tensor_scalar(a, exponent):
    pow_scalar_check(a._dtype, exponent)
    shape, rt = binary(a, exponent)
    if rt.category == _INT or rt in (_dt.float16, _dt.bfloat16):
        checked(exponent, rt)
    return shape, rt


def fmod(a, b):
    if not _is_t(a):
        raise TypeError("fmod() received an invalid combination of arguments")
    return binary(a, b)


def float_power(a, b):
    cplx = dtype_of(a).category == _COMPLEX or dtype_of(b).category == _COMPLEX
    return _shape(a, b), (_dt.complex128 if cplx else _dt.float64)


def float_power_(self, exponent):
    shape, d = float_power(self, exponent)
    float_power_check(self._dtype, d is _dt.complex128)
    if shape != self._shape:
        raise RuntimeError(f"output with shape {fmt_shape(self._shape)} doesn't match the broadcast "
                           f"shape {fmt_shape(shape)}")


def square(a):
    return a._shape, (_dt.int64 if a._dtype is _dt.bool_ else a._dtype)


def neg(a):
    if a._dtype is _dt.bool_:
        raise RuntimeError(NEG_BOOL)
    return a._shape, a._dtype


def abs(a):
    return a._shape, a._dtype.to_real()


def abs_(a):
    if a._dtype.category == _COMPLEX:
        raise RuntimeError(ABS_COMPLEX_INPLACE)


def unary_float(a, *args):
    return a._shape, _to_float(a._dtype)


def _no_complex(name):
    def meta(a):
        if a._dtype.category == _COMPLEX:
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        return a._shape, _to_float(a._dtype)
    meta.__name__ = name
    return meta


deg2rad = _no_complex("deg2rad")
rad2deg = _no_complex("rad2deg")


def clamp(a, lo=None, hi=None):
    if lo is None and hi is None:
        raise RuntimeError(CLAMP_NONE)
    if a._dtype.category == _COMPLEX:
        raise NotImplementedError(CLAMP_COMPLEX)
    xs = [x for x in (a, lo, hi) if x is not None]
    return _shape(*xs), _rt(*xs)


def _clamp_one(a, v):
    if not _is_t(v) and (a._dtype.category == _COMPLEX or isinstance(v, complex)):
        raise NotImplementedError(CLAMP_COMPLEX)
    return _shape(a, v), _rt(a, v)


clamp_min = _clamp_one
clamp_max = _clamp_one


def lerp(a, end, weight):
    if not _is_t(end):
        raise TypeError("lerp() received an invalid combination of arguments")
    w = _is_t(weight)
    lerp_check(a._dtype, end._dtype, weight._dtype if w else None, len(weight._shape) if w else 0)
    return _shape(a, end, weight), a._dtype


def addcmul(a, t1, t2, value=1):
    need_tensor(t1, "addcmul", "tensor1", 2, _is_t)
    need_tensor(t2, "addcmul", "tensor2", 3, _is_t)
    return _shape(a, t1, t2), _rt(a, t1, t2)


def addcdiv(a, t1, t2, value=1):
    need_tensor(t1, "addcdiv", "tensor1", 2, _is_t)
    need_tensor(t2, "addcdiv", "tensor2", 3, _is_t)
    if t1._dtype.category <= _INT and t2._dtype.category <= _INT:
        raise RuntimeError(ADDCDIV_INT)
    return _shape(a, t1, t2), _rt(a, t1, t2)


__all__ = ["binary", "unary", "broadcast_shapes", "fmt_shape", "part", "shape_of"]
