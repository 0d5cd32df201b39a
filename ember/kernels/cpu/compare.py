"""Comparison, logical, bitwise and selection kernels on NumPy arrays (ATen's BinaryOps comparisons,
BitwiseOps, TensorCompare: where, masked_fill, isclose, isnan/isinf/...)."""
import warnings

import numpy as np

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.kernels.cpu import _chalf
from ember.kernels.cpu._glue import _OVERLAP
from ember.kernels.cpu._promote import result_dtype
from ember.kernels.meta import compare as _m
from ember.kernels.meta.pointwise import broadcast_shapes

_nd = np.ndarray
_NP2DT = _dt.NP2DT
_BOOL = np.dtype(np.bool_)
INT, FLOAT, COMPLEX = _dt.INT, _dt.FLOAT, _dt.COMPLEX
_tensor_only = _m.tensor_only
_C32 = _dt.CHALF_NP


# ---- casts ---------------------------------------------------------------------------------
def scalar_as(v, d):
    """Python number v as a NumPy scalar of dtype d, converted like C++'s static_cast (integers
    wrap around; complex to real keeps the real part)."""
    npd = d.np
    c = d.category
    if c == INT:
        if isinstance(v, complex):
            v = v.real
        if isinstance(v, float):
            return np.array(v).astype(npd)[()]
        v = int(v)
        if not -2 ** 63 <= v < 2 ** 63:
            v = ((v + 2 ** 63) % 2 ** 64) - 2 ** 63
        return np.int64(v).astype(npd)
    if c != COMPLEX and isinstance(v, complex):
        v = v.real
    if c == _dt.BOOL:
        return np.bool_(bool(v))
    if npd is _C32:
        return _chalf.narrow(v)[()]
    return np.array(v, dtype=npd)[()]


def as_dtype(x, d):
    """Array or Python number x in dtype d (arrays: no copy when already d)."""
    if x.__class__ is _nd or isinstance(x, _nd):
        return x if x.dtype == d.np else _chalf.astype(x, d.np)
    return scalar_as(x, d)


def _shape(x):
    return x.shape if x.__class__ is _nd or isinstance(x, _nd) else ()


def _binary_checked(a, b):
    """Raise PyTorch's message when the shapes do not broadcast (before NumPy does)."""
    sa, sb = _shape(a), _shape(b)
    if sa != sb and len(sa) and len(sb):
        broadcast_shapes(sa, sb)


# ---- comparisons ---------------------------------------------------------------------------
_ILIM = {d.np: (lo, hi) for d, (lo, hi) in _m._IRANGE.items()}


def _direct(a, b):
    """A Python int/float b can go to the ufunc as is: NumPy's weak-scalar rule converts it to a's
    dtype exactly as PyTorch does (float arrays; integer arrays with an in-range int)."""
    c = b.__class__
    if c is float or c is int:
        k = a.dtype.kind
        if k == "f":
            return c is float or -2 ** 63 <= b < 2 ** 63
        if c is int and (k == "i" or k == "u"):
            lo, hi = _ILIM[a.dtype]
            return lo <= b <= hi
    return False


def _cmp_slow(uf, a, b):
    if _direct(a, b):
        return uf(a, b)
    rt = result_dtype(a, b)
    _binary_checked(a, b)
    if rt.np is _C32:  # operands cast to ComplexHalf, compared as complex numbers
        return uf(_chalf.operand(a), _chalf.operand(b))
    return uf(as_dtype(a, rt), as_dtype(b, rt))


def eq(a, b):
    if b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape:
        try:
            return np.equal(a, b)
        except TypeError:  # complex32: no ufunc loop
            pass
    return _cmp_slow(np.equal, a, b)


def ne(a, b):
    if b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape:
        try:
            return np.not_equal(a, b)
        except TypeError:  # complex32: no ufunc loop
            pass
    return _cmp_slow(np.not_equal, a, b)


def _ord_slow(uf, name, a, b):
    if _direct(a, b):
        return uf(a, b)
    rt = result_dtype(a, b)
    _m.check_ordering(name, rt)
    _binary_checked(a, b)
    return uf(as_dtype(a, rt), as_dtype(b, rt))


def lt(a, b):
    if b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape and a.dtype.kind != "c":
        try:
            return np.less(a, b)
        except TypeError:  # complex32: _ord_slow raises torch's error
            pass
    return _ord_slow(np.less, "lt", a, b)


def le(a, b):
    if b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape and a.dtype.kind != "c":
        try:
            return np.less_equal(a, b)
        except TypeError:  # complex32: _ord_slow raises torch's error
            pass
    return _ord_slow(np.less_equal, "le", a, b)


def gt(a, b):
    if b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape and a.dtype.kind != "c":
        try:
            return np.greater(a, b)
        except TypeError:  # complex32: _ord_slow raises torch's error
            pass
    return _ord_slow(np.greater, "gt", a, b)


def ge(a, b):
    if b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape and a.dtype.kind != "c":
        try:
            return np.greater_equal(a, b)
        except TypeError:  # complex32: _ord_slow raises torch's error
            pass
    return _ord_slow(np.greater_equal, "ge", a, b)


def equal(a, b):
    if not isinstance(b, _nd):
        _tensor_only("equal", "other", 2, b)
    if a.shape != b.shape:
        return False
    if a.dtype != b.dtype:
        rt = _dt.promote_types(_NP2DT[a.dtype], _NP2DT[b.dtype])
        a, b = as_dtype(a, rt), as_dtype(b, rt)
    try:
        return bool(np.equal(a, b).all())
    except TypeError:  # complex32 (NumPy has no loop for it): torch's kernel has no ComplexHalf instance
        if a.dtype != _C32:
            raise
        # torch takes its NaN-free path for the same elements (one storage, offset and strides)
        alias = a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and \
            a.strides == b.strides
        raise _chalf.refuse("equal_notnan_cpu" if alias else "equal_cpu") from None


def _isnan(x):
    return np.isnan(x) if _NP2DT[x.dtype].category >= FLOAT else np.zeros(x.shape, _BOOL)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not isinstance(b, _nd):
        _tensor_only("isclose", "other", 2, b)
    d = _NP2DT[a.dtype]
    _m.check_close_args(d, _NP2DT[b.dtype], rtol, atol)
    _binary_checked(a, b)
    if d is _dt.complex32:
        return _isclose_chalf(a, b, rtol, atol, equal_nan)
    close = np.equal(a, b)
    fl = d.category >= FLOAT
    if equal_nan and fl:
        close |= np.isnan(a) & np.isnan(b)
    if rtol == 0 and atol == 0:
        return close
    if not fl:  # integers and bools: the difference is computed in the default float dtype
        d = _dt.defaults.float
        a, b = a.astype(d.np), b.astype(d.np)
    if d is _dt.float16 or d is _dt.bfloat16:
        # each op computed in float32 and rounded back, as PyTorch's reduced-precision kernels do
        h = d.np

        def rnd(x):
            return x.astype(h).astype(np.float32)
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        allowed = rnd(np.float32(atol) + np.abs(rnd(b32 * np.float32(rtol))))
        actual = np.abs(rnd(a32 - b32))
    else:
        allowed = atol + np.abs(b * rtol)
        actual = np.abs(a - b)
    return close | (np.isfinite(actual) & (actual <= allowed))


def _isclose_chalf(a, b, rtol, atol, equal_nan):
    """torch's composite isclose in ComplexHalf: each op rounds (rtol * b in ComplexHalf, abs to Half)."""
    from ember.kernels.cpu import pointwise as _pw
    close = eq(a, b)
    if equal_nan:
        close |= isnan(a) & isnan(b)
    if rtol == 0 and atol == 0:
        return close
    allowed = _pw.add(_pw.abs(_pw.mul(b, rtol)), atol)
    actual = _pw.abs(_pw.sub(a, b))
    return close | (np.isfinite(actual) & (actual <= allowed))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if not isinstance(b, _nd):
        _tensor_only("allclose", "other", 2, b)
    return bool(isclose(a, b, rtol, atol, equal_nan).all())


# ---- unary predicates ----------------------------------------------------------------------
def isnan(a):
    try:
        return _isnan(a)
    except TypeError:  # complex32
        return np.isnan(_chalf.widen(a))


def isinf(a):
    try:
        return np.isinf(a) if _NP2DT[a.dtype].category >= FLOAT else np.zeros(a.shape, _BOOL)
    except TypeError:  # complex32
        return np.isinf(_chalf.widen(a))


def isfinite(a):
    try:
        return np.isfinite(a) if _NP2DT[a.dtype].category >= FLOAT else np.ones(a.shape, _BOOL)
    except TypeError:  # complex32
        return np.isfinite(_chalf.widen(a))


def isposinf(a):
    c = _NP2DT[a.dtype].category
    if c == FLOAT:
        return np.equal(a, a.dtype.type(np.inf))
    if c == COMPLEX:
        raise RuntimeError("isposinf does not support complex inputs.")
    return np.zeros(a.shape, _BOOL)


def isneginf(a):
    c = _NP2DT[a.dtype].category
    if c == FLOAT:
        return np.equal(a, a.dtype.type(-np.inf))
    if c == COMPLEX:
        raise RuntimeError("isneginf does not support complex inputs.")
    return np.zeros(a.shape, _BOOL)


def isreal(a):
    if a.dtype.kind == "c":
        return np.equal(a.imag, 0)
    if a.dtype == _C32:
        return np.equal(a["imag"], 0)
    return np.ones(a.shape, _BOOL)


def signbit(a):
    d = _NP2DT[a.dtype]
    c = d.category
    if c == FLOAT:
        return np.signbit(a)
    if c == COMPLEX:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if d.is_signed:
        return np.less(a, 0)
    return np.zeros(a.shape, _BOOL)


# ---- logical ---------------------------------------------------------------------------------
def _truth(x, name=None):
    if x.dtype is _BOOL:
        return x
    if x.dtype == _C32:
        if name is not None:  # torch's logical ops have no ComplexHalf kernel
            raise _chalf.refuse(f"{name}_cpu")
        x = _chalf.widen(x)
    return np.not_equal(x, 0)


def logical_and(a, b):
    if not isinstance(b, _nd):
        _tensor_only("logical_and", "other", 2, b)
    _binary_checked(a, b)
    return np.logical_and(_truth(a, "logical_and"), _truth(b, "logical_and"))


def logical_or(a, b):
    if not isinstance(b, _nd):
        _tensor_only("logical_or", "other", 2, b)
    _binary_checked(a, b)
    return np.logical_or(_truth(a, "logical_or"), _truth(b, "logical_or"))


def logical_xor(a, b):
    if not isinstance(b, _nd):
        _tensor_only("logical_xor", "other", 2, b)
    _binary_checked(a, b)
    return np.logical_xor(_truth(a, "logical_xor"), _truth(b, "logical_xor"))


def logical_not(a):
    if a.dtype is _BOOL:
        return np.logical_not(a)
    return np.logical_not(_truth(a, "logical_not"))


# ---- bitwise ---------------------------------------------------------------------------------
def _bitwise(uf, name, check, a, b):
    if a.__class__ is _nd and b.__class__ is _nd and a.dtype is b.dtype and a.shape == b.shape:
        check(name, _NP2DT[a.dtype])
        return uf(a, b)
    rt = result_dtype(a, b)
    check(name, rt)
    _binary_checked(a, b)
    return uf(as_dtype(a, rt), as_dtype(b, rt))


_cb, _cs = _m.check_bitwise, _m.check_shift


def bitwise_and(a, b):
    return _bitwise(np.bitwise_and, "bitwise_and", _cb, a, b)


def bitwise_or(a, b):
    return _bitwise(np.bitwise_or, "bitwise_or", _cb, a, b)


def bitwise_xor(a, b):
    return _bitwise(np.bitwise_xor, "bitwise_xor", _cb, a, b)


def bitwise_left_shift(a, b):
    # NumPy's shifts give 0 (left) / the sign (right) for negative or too-large shift amounts,
    # as PyTorch's kernels do
    return _bitwise(np.left_shift, "lshift", _cs, a, b)


def bitwise_right_shift(a, b):
    return _bitwise(np.right_shift, "rshift", _cs, a, b)


def bitwise_not(a):
    if a.dtype is _BOOL:
        return np.logical_not(a)
    if a.dtype.kind in "iu":
        return np.invert(a)
    raise _m.not_implemented("bitwise_not_cpu", _NP2DT[a.dtype])


# ---- selection -------------------------------------------------------------------------------
_U8_WHERE = ("where received a uint8 condition tensor. This behavior is deprecated and will be "
             "removed in a future version of PyTorch. Use a boolean condition instead.")


def _cond(cond):
    if cond.dtype is _BOOL:
        return cond
    if _m.check_where_cond(_NP2DT[cond.dtype]):
        warnings.warn(_U8_WHERE, UserWarning, stacklevel=5)
        return np.not_equal(cond, 0)


_FMAX = _m._FMAX
_INF = float("inf")


def _checked_scalar(v, d):
    if v.__class__ is float and d.category == FLOAT:  # fast path: a float into a float dtype
        m = _FMAX[d]
        if -m <= v <= m or v != v or v == _INF or v == -_INF:
            return d.np.type(v)
    return scalar_as(_m.checked(v, d), d)


def where(cond, a, b):
    if cond.dtype is not _BOOL:
        cond = _cond(cond)
    if a.__class__ is _nd and b.__class__ is float and a.dtype.kind == "f":
        b = _checked_scalar(b, _NP2DT[a.dtype])  # a float tensor and a Python float: a's dtype
    elif not (a.__class__ is _nd and b.__class__ is _nd and a.dtype is b.dtype):
        rt = result_dtype(a, b)
        a = as_dtype(a, rt) if isinstance(a, _nd) else _checked_scalar(a, rt)
        b = as_dtype(b, rt) if isinstance(b, _nd) else _checked_scalar(b, rt)
    try:
        return np.where(cond, a, b)
    except ValueError:
        broadcast_shapes(cond.shape, _shape(a), _shape(b))
        raise


def nonzero_tuple(cond):
    """where(condition): the indices of the non-zero elements, one int64 array per dimension."""
    if cond.dtype is not _BOOL:
        cond = _truth(cond)
    if cond.ndim == 0:
        return [np.zeros(int(bool(cond)), np.int64)]
    return [x.astype(np.int64, copy=False) for x in np.nonzero(cond)]


def _fill_value(a, mask, value):
    if mask.dtype is not _BOOL:
        _m.check_mask(_NP2DT[mask.dtype])
    d = _NP2DT[a.dtype]
    if isinstance(value, _nd):
        _m.check_value_dim(value.ndim)
        value = value.item()
        if not isinstance(value, (bool, int, float, complex)):
            value = float(value)  # bfloat16 scalars
    return _checked_scalar(value, d)


def masked_fill(a, mask, value):
    v = _fill_value(a, mask, value)
    if mask.shape != a.shape:
        broadcast_shapes(mask.shape, a.shape)  # PyTorch's message when they do not broadcast
    return np.where(mask, v, a)


def masked_fill_(a, mask, value):
    v = _fill_value(a, mask, value)
    if mask.shape != a.shape:
        s = broadcast_shapes(a.shape, mask.shape)
        if s != a.shape:
            raise RuntimeError(f"output with shape {fmt_shape(a.shape)} doesn't match the broadcast "
                               f"shape {fmt_shape(s)}")
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(a, v, where=mask)
