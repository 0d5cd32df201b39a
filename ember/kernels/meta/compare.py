"""Meta functions of comparison, logical, bitwise and selection ops, and the dtype checks the CPU
kernels share (so both backends raise PyTorch's errors)."""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.tensor_impl import TensorImpl
from ember.kernels.meta.pointwise import broadcast_shapes

BOOL, INT, FLOAT, COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
_b = _dt.bool_
_rt = _dt.result_type_of
_scalar_dtype = _dt.scalar_dtype

# C++ names PyTorch prints: typeid names (masked_fill's mask) and checked_convert's target names
MASK_NAMES = {_dt.uint8: "unsigned char", _dt.int8: "signed char", _dt.int16: "short int",
              _dt.int32: "int", _dt.int64: "long int", _dt.float16: "c10::Half",
              _dt.bfloat16: "c10::BFloat16", _dt.float32: "float", _dt.float64: "double",
              _dt.complex64: "c10::complex<float>", _dt.complex128: "c10::complex<double>",
              _dt.complex32: "c10::complex<c10::Half>", _dt.bool_: "bool"}
CONV_NAMES = {**MASK_NAMES, _dt.uint8: "uint8_t", _dt.int8: "int8_t", _dt.int16: "int16_t",
              _dt.int64: "int64_t"}


# ---- shared checks (dtype-level; used by the CPU kernels too) --------------------------------
def not_implemented(kernel, d):
    return NotImplementedError(f'"{kernel}" not implemented for \'{d._short}\'')


def check_ordering(name, rt):
    if rt.category == COMPLEX:
        raise not_implemented(name + "_cpu", rt)


def check_bitwise(name, rt):
    if rt.category >= FLOAT:
        raise not_implemented(name + "_cpu", rt)


def check_shift(name, rt):
    if rt.category != INT:
        raise not_implemented(name + "_cpu", rt)


def tensor_only(fn, arg, pos, x):
    """PyTorch's argument parser: this Tensor parameter does not accept a Python number."""
    raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                    f"{type(x).__name__}")


def check_mask(d):
    if d is not _b:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{MASK_NAMES[d]}")


def check_value_dim(ndim):
    if ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                           f"with {ndim} dimension(s).")


def check_where_cond(d):
    """True when the condition needs the deprecated uint8 handling."""
    if d is _b:
        return False
    if d is _dt.uint8:
        return True
    raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with "
                       f"dtype {d._short}")


def fmt_double(v):
    """A double as C++'s ostream prints it (6 significant digits)."""
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    return f"{v:g}"


def check_close_args(da, db, rtol, atol):
    if da is not db:
        raise RuntimeError(f"{da._short} did not match {db._short}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {fmt_double(rtol)}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {fmt_double(atol)}")


_FMAX = {_dt.complex32: float("inf"),  # torch converts into ComplexHalf unchecked
         _dt.float16: 65504.0, _dt.bfloat16: 3.3895313892515355e38, _dt.float32: 3.4028234663852886e38,
         _dt.float64: 1.7976931348623157e308, _dt.complex64: 3.4028234663852886e38,
         _dt.complex128: 1.7976931348623157e308}
_IRANGE = {_dt.uint8: (0, 255), _dt.int8: (-128, 127), _dt.int16: (-32768, 32767),
           _dt.int32: (-2 ** 31, 2 ** 31 - 1), _dt.int64: (-2 ** 63, 2 ** 63 - 1)}


def _overflow(d):
    return RuntimeError(f"value cannot be converted to type {CONV_NAMES[d]} without overflow")


def _real_overflows(v, d):
    """c10::overflows<d>(v) for a real v (Python int or float)."""
    c = d.category
    if c == INT:
        lo, hi = _IRANGE[d]
        if v.__class__ is int or isinstance(v, int):
            if lo == 0 and v < 0:  # unsigned: negative values wrap (two's complement)
                return -v > hi
            return v < lo or v > hi
        if v != v or v in (float("inf"), float("-inf")):
            return True
        return v < lo or v > hi
    if c == BOOL:
        return False
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return False
    m = _FMAX[d]
    return v < -m or v > m


def checked(v, d):
    """c10's checked_convert of a Python scalar to dtype d: the converted Python value, or PyTorch's
    'value cannot be converted ... without overflow'."""
    c = d.category
    if v.__class__ is bool or c == BOOL:
        return bool(v)
    if isinstance(v, complex):
        if c == COMPLEX:
            if _real_overflows(v.real, d) or _real_overflows(v.imag, d):
                raise _overflow(d)
            return v
        if v.imag != 0:
            raise _overflow(d)
        v = v.real
    if _real_overflows(v, d):
        raise _overflow(d)
    if c == INT:
        v = int(v)
        if v < 0 and d is _dt.uint8:
            v &= 0xFF
        return v
    return v


# ---- shapes ----------------------------------------------------------------------------------
def _shape(x):
    return x._shape if isinstance(x, TensorImpl) else ()


def _part(x):
    if isinstance(x, TensorImpl):
        return (x._dtype, 0 if x._shape else 1)
    return (_scalar_dtype(x), 2)


def _bshape(a, b):
    sa, sb = _shape(a), _shape(b)
    return sa if sa == sb else broadcast_shapes(sa, sb)


def compare(a, b):
    return _bshape(a, b), _b


def _ordering(name):
    def meta(a, b):
        check_ordering(name, _rt((_part(a), _part(b))))
        return _bshape(a, b), _b
    meta.__name__ = name
    return meta


lt, le, gt, ge = _ordering("lt"), _ordering("le"), _ordering("gt"), _ordering("ge")


def _bitwise(name, check):
    def meta(a, b):
        rt = _rt((_part(a), _part(b)))
        check(name, rt)
        return _bshape(a, b), rt
    meta.__name__ = name
    return meta


bitwise_and = _bitwise("bitwise_and", check_bitwise)
bitwise_or = _bitwise("bitwise_or", check_bitwise)
bitwise_xor = _bitwise("bitwise_xor", check_bitwise)
bitwise_left_shift = _bitwise("lshift", check_shift)
bitwise_right_shift = _bitwise("rshift", check_shift)


def bitwise_not(a):
    if a._dtype.category >= FLOAT:
        raise not_implemented("bitwise_not_cpu", a._dtype)
    return a._shape, a._dtype


def _logical(name):
    def meta(a, b):
        if not isinstance(b, TensorImpl):
            tensor_only(name, "other", 2, b)
        return _bshape(a, b), _b
    meta.__name__ = name
    return meta


logical_and, logical_or, logical_xor = (_logical("logical_and"), _logical("logical_or"),
                                        _logical("logical_xor"))


def predicate(a):
    return a._shape, _b


def isposinf(a):
    if a._dtype.category == COMPLEX:
        raise RuntimeError("isposinf does not support complex inputs.")
    return a._shape, _b


def isneginf(a):
    if a._dtype.category == COMPLEX:
        raise RuntimeError("isneginf does not support complex inputs.")
    return a._shape, _b


def signbit(a):
    if a._dtype.category == COMPLEX:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    return a._shape, _b


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not isinstance(b, TensorImpl):
        tensor_only("isclose", "other", 2, b)
    check_close_args(a._dtype, b._dtype, rtol, atol)
    return _bshape(a, b), _b


def where(cond, a, b):
    check_where_cond(cond._dtype)
    rt = _rt((_part(a), _part(b)))
    for x in (a, b):
        if not isinstance(x, TensorImpl):
            checked(x, rt)
    sc, sa, sb = cond._shape, _shape(a), _shape(b)
    if sc == sa == sb:
        return sc, rt
    return broadcast_shapes(sc, sa, sb), rt


def masked_fill(a, mask, value):
    check_mask(mask._dtype)
    if isinstance(value, TensorImpl):
        check_value_dim(len(value._shape))
    else:
        checked(value, a._dtype)
    sm = mask._shape
    return (a._shape if sm == a._shape else broadcast_shapes(sm, a._shape)), a._dtype


def masked_fill_(a, mask, value):
    check_mask(mask._dtype)
    if isinstance(value, TensorImpl):
        check_value_dim(len(value._shape))
    else:
        checked(value, a._dtype)
    if mask._shape != a._shape:
        s = broadcast_shapes(a._shape, mask._shape)
        if s != a._shape:
            raise RuntimeError(f"output with shape {fmt_shape(a._shape)} doesn't match the broadcast "
                               f"shape {fmt_shape(s)}")
