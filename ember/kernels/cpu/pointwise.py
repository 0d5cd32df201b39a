"""Pointwise kernels on NumPy arrays (ATen's BinaryOps / UnaryOps / PointwiseOps).

Arguments are arrays, or Python numbers where the caller passed numbers (wrapped numbers: they
take part in type promotion with the lowest priority and are converted to the result dtype with
C++'s wrapping conversion, as `uint8 + 300` does in PyTorch). float16 / bfloat16 math runs in
float32 and is rounded once at the end (PyTorch's opmath); integer inputs of float-valued ops
(exp, sqrt, true division, ...) become the default float dtype first.
"""
import builtins
import math

import numpy as np

from ember.core import dtype as _dt
from ember.kernels.cpu import _chalf, _special
from ember.kernels.cpu._promote import result_dtype
from ember.kernels.meta import pointwise as _m

_nd = np.ndarray
_NP2DT = _dt.NP2DT
_B = np.dtype(np.bool_)
_I64 = np.dtype(np.int64)
_U64 = np.dtype(np.uint64)
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_C64 = np.dtype(np.complex64)
_C128 = np.dtype(np.complex128)
_BF16 = _dt.bfloat16.np
_C32 = _dt.CHALF_NP
_LOW = frozenset(d for d in (_F16, _BF16) if d is not None)      # computed in float32
_NATIVE = frozenset((_F32, _F64, _C64, _C128))                    # computed as they are
_BOOL, _INT, _FLOAT, _COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
_ONE = 1
_I63 = 1 << 63
_U64LIM = 1 << 64
_babs = builtins.abs


def _isnd(x):
    return isinstance(x, _nd)


def _not_impl(kname, d):
    return NotImplementedError(f'"{kname}" not implemented for \'{d._short}\'')


def _dtype_of(x):
    return _NP2DT[x.dtype] if isinstance(x, _nd) else _dt.scalar_dtype(x)


def _cat(a):
    return _NP2DT[a.dtype].category


# ---- conversions -----------------------------------------------------------------------------
def _scalar(v, npd):
    """A Python number as a 0-d array of npd, converted as C++ converts (integers wrap)."""
    if npd is _C32:
        return _chalf.narrow(v)
    t = v.__class__
    if t is int:
        if -_I63 <= v < _I63:
            return np.array(v, _I64).astype(npd) if npd.kind in "iu" else np.array(v, npd)
        if _I63 <= v < _U64LIM:
            return np.array(v, _U64).astype(npd)
        raise OverflowError("int too big to convert" if v > 0 else "can't convert negative int to unsigned")
    if t is complex and npd.kind != "c":
        v = v.real
    if t is float and npd.kind in "iub":
        return np.array(v).astype(npd)
    if t is float or t is bool or t is complex:
        return np.array(v, npd)
    return np.asarray(v).astype(npd)  # NumPy scalars


def _to(x, npd):
    if isinstance(x, _nd):
        return x if x.dtype == npd else _chalf.astype(x, npd)
    return _scalar(x, npd)


def _arith(uf, a, b, rt):
    """uf(a, b) in result dtype rt (float16/bfloat16 through float32)."""
    npd = rt.np
    if npd in _LOW:
        return uf(_to(a, _F32), _to(b, _F32)).astype(npd)
    if npd is _C32:  # ComplexHalf: torch's CPU build multiplies (add/sub go to _add_chalf), no more
        if uf is not np.multiply:
            raise _chalf.refuse(_CHALF_BINARY.get(uf, f"{uf.__name__}_cpu"))
        return _chalf.narrow(uf(_chalf.operand(a), _chalf.operand(b)))
    return uf(_to(a, npd), _to(b, npd))


_CHALF_BINARY = {np.true_divide: "div_cpu", np.power: "pow"}


def _float_rt(a, b):
    rt = result_dtype(a, b)
    return rt if rt.category >= _FLOAT else _dt.defaults.float


def _fast_scalar(a, b):
    """a float/complex array with a Python float (or small int): NumPy's weak scalars match."""
    return a.__class__ is _nd and a.dtype in _NATIVE and (
        b.__class__ is float or (b.__class__ is int and -_I63 <= b < _I63))


# ---- add / sub / mul / div -----------------------------------------------------------------
# Same-dtype paths (`cpu_same_dtype:` in the yaml): (ufunc, the ember dtypes it serves). The
# generated CPU glue calls the ufunc itself when both Tensors have one such dtype and alpha is 1:
# exactly the branch the kernels below take first, without their calls and wrapping.
_ANY = frozenset(_NP2DT.values()) - {_dt.complex32}  # complex32 has no NumPy ufunc loops
_NOT_BOOL = _ANY - {_dt.bool_}
# torch's add/sub compute self + alpha * other, and for complex that product is a complex one even
# for alpha 1, so a non-finite part gives NaN ((inf+0j) * (1+0j) = inf+nanj): complex takes _add
_REAL = _NOT_BOOL - {_dt.complex64, _dt.complex128}
_CPLX = frozenset((_C64, _C128))  # their NumPy dtypes, for the kernels' own tests
add_same = (np.add, _REAL | {_dt.bool_})
sub_same = (np.subtract, _REAL)
mul_same = (np.multiply, _ANY)
div_same = (np.true_divide, frozenset(_NP2DT[d] for d in _NATIVE))
neg_same = (np.negative, _NOT_BOOL)


def _rsubtract(a, b):
    return np.subtract(b, a)


rsub_same = (_rsubtract, _REAL)  # 1 - x: the kernel's sub(number, array) takes the slow _add

# In-place fast paths (optimizer updates): write straight into `a` when the out-of-place result
# would have a's dtype and shape anyway; None tells the caller to take the general path.
_INPLACE_KINDS = (np.dtype(np.float32), np.dtype(np.float64))


def _inplace_ok(a, b):
    if a.__class__ is not _nd or a.dtype not in _INPLACE_KINDS or not a.flags.writeable:
        return False
    if b.__class__ is _nd:
        return b.dtype is a.dtype and b.shape == a.shape
    return b.__class__ is float or (b.__class__ is int and -_I63 <= b < _I63)


def add_inplace(a, b, alpha=1):
    if not _inplace_ok(a, b) or not (alpha.__class__ is float or alpha.__class__ is int):
        return None
    np.add(a, b if alpha == 1 else np.multiply(b, alpha), a)
    return a


def sub_inplace(a, b, alpha=1):
    if not _inplace_ok(a, b) or not (alpha.__class__ is float or alpha.__class__ is int):
        return None
    np.subtract(a, b if alpha == 1 else np.multiply(b, alpha), a)
    return a


def mul_inplace(a, b):
    if not _inplace_ok(a, b):
        return None
    np.multiply(a, b, a)
    return a


def add(a, b, alpha=1):
    try:
        if alpha is _ONE and a.__class__ is _nd and a.dtype not in _CPLX:
            if b.__class__ is _nd:
                if a.dtype is b.dtype:
                    return np.add(a, b)
            elif _fast_scalar(a, b):
                return np.add(a, b)
        return _add(a, b, alpha, False)
    except ValueError:
        _bcast_fail((a, b))
        raise
    except TypeError:
        if not _chalf.any_chalf(a, b):
            raise
        return _add(a, b, alpha, False)


def sub(a, b, alpha=1):
    try:
        if alpha is _ONE and a.__class__ is _nd and a.dtype not in _CPLX:
            if b.__class__ is _nd:
                if a.dtype is b.dtype and a.dtype is not _B:
                    return np.subtract(a, b)
            elif _fast_scalar(a, b):
                return np.subtract(a, b)
        return _add(a, b, alpha, True)
    except ValueError:
        _bcast_fail((a, b))
        raise
    except TypeError:
        if not _chalf.any_chalf(a, b):
            raise
        return _add(a, b, alpha, True)


def rsub(a, b, alpha=1):
    if not isinstance(a, _nd):
        raise _number_self_error("rsub", a, b, ("(Tensor input, Tensor other, *, Number alpha = 1)",
                                                "(Tensor input, Number other, Number alpha = 1)"))
    return sub(b, a, alpha)


def _add(a, b, alpha, is_sub):
    rt = result_dtype(a, b)
    if is_sub:
        _m.sub_check(_dtype_of(a), _dtype_of(b))
    npd = rt.np
    if npd is _C32:
        return _add_chalf(a, b, alpha, is_sub, rt)
    ct = _F32 if npd in _LOW else npd
    x = _to(a, ct)
    y = _to(b, ct)
    if alpha.__class__ is not int or alpha != 1:
        _m.alpha_check(rt, alpha)
        _m.checked(alpha, rt)
        if ct in _CPLX:
            return _add_complex(x, y, alpha, is_sub, ct, npd)
        y = y * _scalar(alpha, ct)
    elif ct in _CPLX:
        return _add_complex(x, y, alpha, is_sub, ct, npd)
    r = np.subtract(x, y) if is_sub else np.add(x, y)
    return r if ct is npd else r.astype(npd)


def _add_complex(x, y, alpha, is_sub, ct, npd):
    """Complex add/sub as torch computes them: x + (alpha or -alpha) * y, a complex product even
    for alpha 1, so inf * (1+0j) gives a NaN part and signed zeros follow the product."""
    r = np.add(x, np.multiply(y, _scalar(-alpha if is_sub else alpha, ct)))
    return r if ct is npd else r.astype(npd)


def _add_chalf(a, b, alpha, is_sub, rt):
    """add/sub in complex32 as torch computes it: operands and alpha (negated for sub) cast to
    ComplexHalf; alpha * b, a complex product even for alpha 1 (0 * inf gives nan), rounded to
    ComplexHalf; then a + that in complex<float>, rounded."""
    _bcast_fail((a, b))
    if alpha.__class__ is not int or alpha != 1:
        _m.alpha_check(rt, alpha)
    x, y = _chalf.operand(a), _chalf.operand(b)
    p = _chalf.widen(_chalf.narrow(y * _chalf.operand(-alpha if is_sub else alpha)))
    return _chalf.narrow(np.add(x, p))


def mul(a, b):
    try:
        if a.__class__ is _nd:
            if b.__class__ is _nd:
                if a.dtype is b.dtype:
                    return np.multiply(a, b)
            elif _fast_scalar(a, b):
                return np.multiply(a, b)
        return _arith(np.multiply, a, b, result_dtype(a, b))
    except ValueError:
        _bcast_fail((a, b))
        raise
    except TypeError:
        if not _chalf.any_chalf(a, b):
            raise
        _bcast_fail((a, b))
        return _arith(np.multiply, a, b, result_dtype(a, b))


def div(a, b):
    try:
        if a.__class__ is _nd:
            if b.__class__ is _nd:
                if a.dtype is b.dtype and a.dtype in _NATIVE:
                    return np.true_divide(a, b)
            elif _fast_scalar(a, b):
                return np.true_divide(a, b)
        return _arith(np.true_divide, a, b, _float_rt(a, b))
    except ValueError:
        _bcast_fail((a, b))
        raise


def _zero_check(y):
    if not y.all():
        raise RuntimeError("ZeroDivisionError")


def _int_operands(a, b, npd):
    x = _to(a, npd)
    y = _to(b, npd)
    _zero_check(y)
    return x, y


def _div_trunc(a, b):
    rt = result_dtype(a, b)
    c = rt.category
    if c == _INT:
        x, y = _int_operands(a, b, rt.np)
        if rt.np.kind == "u":
            return np.floor_divide(x, y)
        return np.floor_divide(x - np.fmod(x, y), y)
    if c == _FLOAT:
        npd = rt.np
        if npd in _LOW:  # the quotient is rounded to the half type before trunc, as c10::Half does
            return np.trunc(np.true_divide(_to(a, _F32), _to(b, _F32)).astype(npd))
        return np.trunc(np.true_divide(_to(a, npd), _to(b, npd)))
    raise _not_impl("div_trunc_cpu", rt)


def _div_floor(a, b):
    rt = result_dtype(a, b)
    c = rt.category
    if c == _INT:
        x, y = _int_operands(a, b, rt.np)
        return np.floor_divide(x, y)
    if c == _FLOAT:
        npd = rt.np
        if npd in _LOW:
            return _div_floor_half(_to(a, _F32), _to(b, _F32), npd)
        return np.floor_divide(_to(a, npd), _to(b, npd))  # NumPy's floor_divide is c10::div_floor
    raise _not_impl("div_floor_cpu", rt)


def _div_floor_half(x, y, npd):
    """c10::div_floor_floating on float16/bfloat16: every step rounded to the half type."""
    def r(v):
        return np.asarray(v).astype(npd).astype(_F32)
    mod = np.fmod(x, y)
    q = r(r(x - mod) / y)
    q = r(np.where((mod != 0) & ((y < 0) != (mod < 0)), q - 1, q))
    f = np.floor(q)
    f = np.where(q - f > 0.5, f + 1, f)
    f = np.where(q == 0, np.copysign(0, x / y), f)
    return np.where(y == 0, x / y, f).astype(npd)


def div_mode(a, b, rounding_mode=None):
    if rounding_mode is None:
        return div(a, b)
    if rounding_mode == "trunc":
        return _div_trunc(a, b)
    if rounding_mode == "floor":
        return _div_floor(a, b)
    _m.div_mode_check(rounding_mode)


floor_divide = _div_floor


def _int_or_float(uf, kname):
    def kernel(a, b):
        rt = result_dtype(a, b)
        c = rt.category
        if c == _INT:
            x, y = _int_operands(a, b, rt.np)
            return uf(x, y)
        if c == _FLOAT:
            return _arith(uf, a, b, rt)
        raise _not_impl(kname, rt)
    return kernel


remainder = _int_or_float(np.remainder, "remainder_cpu")
_fmod = _int_or_float(np.fmod, "fmod_cpu")


def _number_self_error(op, a, b, sigs):
    got = ", ".join("Tensor" if isinstance(x, _nd) else type(x).__name__ for x in (a, b))
    return TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected "
                     "one of:\n" + "".join(f" * {x}\n" for x in sigs))


def fmod(a, b):
    if not isinstance(a, _nd):  # torch.fmod(2, x) has no overload (unlike remainder)
        raise _number_self_error("fmod", a, b, ("(Tensor input, Tensor other, *, Tensor out = None)",
                                                "(Tensor input, Number other, *, Tensor out = None)"))
    return _fmod(a, b)


# ---- powers ----------------------------------------------------------------------------------
def _ipow(x, y):
    """Integer power with PyTorch's negative exponents: 1 ** -n = 1, (-1) ** -n = +-1, else 0."""
    neg = y < 0
    if not neg.any():
        return np.power(x, y)
    r = np.power(x, np.where(neg, 0, y).astype(y.dtype))
    alt = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0)).astype(r.dtype)
    return np.where(neg, alt, r)


def pow(a, b):
    rt = result_dtype(a, b)
    c = rt.category
    if c >= _FLOAT:
        return _arith(np.power, a, b, rt)
    if c == _BOOL:
        raise _not_impl("pow", rt)
    npd = rt.np
    return _ipow(_to(a, npd), _to(b, npd))


def pow_tensor_scalar(a, e):
    _m.pow_scalar_check(_NP2DT[a.dtype], e)
    rt = result_dtype(a, e)
    if rt.category == _INT or rt.np in _LOW:
        _m.checked(e, rt)
    c = rt.category
    if rt.np is _C32:  # torch special-cases these exponents; ComplexHalf has no pow kernel
        if e == 0:
            return _chalf.narrow(np.ones(a.shape, _C64))
        if e == 1:
            return _chalf.astype(a, _C32) if a.dtype != _C32 else a.copy()
        raise _chalf.refuse({0.5: "sqrt_vml_cpu", -1: "reciprocal_cpu", -0.5: "rsqrt_cpu"}.get(e, "pow"))
    if c >= _FLOAT:
        return _arith(np.power, a, e, rt)
    if c == _BOOL:  # bool ** True is a copy, bool ** False is all ones; other bool powers raise
        if e is True:
            return a.copy()
        if e is False:
            return np.ones(a.shape, _B)
        raise _not_impl("pow", rt)
    npd = rt.np
    return np.power(_to(a, npd), _scalar(e, npd))


def _is_complex(x):
    if isinstance(x, _nd):
        return x.dtype.kind in "cV" and x.dtype is not _BF16  # V: complex32 (or bfloat16)
    return isinstance(x, (complex, np.complexfloating))


def float_power(a, b):
    npd = _C128 if _is_complex(a) or _is_complex(b) else _F64
    return np.power(_to(a, npd), _to(b, npd))


def float_power_(a, b):
    """In-place float_power: self must already have the result's dtype (double / complex double)."""
    cplx = _is_complex(a) or _is_complex(b)
    _m.float_power_check(_NP2DT[a.dtype], cplx)
    _write(a, np.power(a, _to(b, a.dtype)))


def _write(a, r):
    if r.__class__ is not _nd:
        r = np.asarray(r)
    if r.shape != a.shape:
        try:
            s = np.broadcast_shapes(r.shape, a.shape)
        except ValueError:
            s = r.shape
        if s != a.shape:
            raise RuntimeError(f"output with shape {_m.fmt_shape(a.shape)} doesn't match the broadcast "
                               f"shape {_m.fmt_shape(s)}")
    if not a.flags.writeable:
        from ember.kernels.cpu._glue import _OVERLAP
        raise RuntimeError(_OVERLAP)
    if r.dtype != a.dtype and (r.dtype == _C32 or a.dtype == _C32):
        r = _chalf.astype(r, a.dtype)
    np.copyto(a, r, casting="unsafe")


def square(a):
    if a.dtype is _B:
        return a.astype(_I64)
    try:
        return np.multiply(a, a)
    except TypeError:
        if a.dtype != _C32:
            raise
        raise _chalf.refuse("pow") from None


# ---- unary: same dtype -----------------------------------------------------------------------
def neg(a):
    if a.dtype is _B:
        raise RuntimeError(_m.NEG_BOOL)
    try:
        return np.negative(a)
    except TypeError:
        if a.dtype != _C32:
            raise
        r = a.copy()  # complex32: each float16 component negated (exact)
        np.negative(r["real"], out=r["real"])
        np.negative(r["imag"], out=r["imag"])
        return r


def abs(a):
    if a.dtype is _B:
        raise _not_impl("abs_cpu", _dt.bool_)
    try:
        return np.absolute(a)
    except TypeError:
        if a.dtype != _C32:
            raise
        return np.absolute(_chalf.widen(a)).astype(_F16)  # |z| in float, rounded to Half


def abs_(a):
    """In-place abs (an explicit in-place kernel: writes into self's array)."""
    if a.dtype.kind == "c" or a.dtype == _C32:
        raise RuntimeError(_m.ABS_COMPLEX_INPLACE)
    _write(a, abs(a))


def sign(a):
    d = _NP2DT[a.dtype]
    c = d.category
    if c == _FLOAT:
        npd = a.dtype
        return np.subtract(np.greater(a, 0).astype(npd), np.less(a, 0).astype(npd))
    if c == _INT:
        return np.sign(a)
    if c == _BOOL:
        return a.copy()
    raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                              "Please use torch.sgn instead.")


def sgn(a):
    if a.dtype.kind != "c":
        if a.dtype == _C32:
            return _chalf.narrow(sgn(_chalf.widen(a)))
        return sign(a)
    m = np.absolute(a)
    return np.where(m == 0, 0, a / m).astype(a.dtype)


def _rounding(fn, name):
    def kernel(a):
        c = _cat(a)
        if c == _FLOAT:
            return fn(a)
        if c == _INT:
            return a.copy()
        if c == _BOOL or name == "round":
            raise _not_impl(f"{name}_vml_cpu", _NP2DT[a.dtype])
        raise NotImplementedError(f"{name} is not supported for complex inputs")
    kernel.__name__ = name
    return kernel


floor = _rounding(np.floor, "floor")
ceil = _rounding(np.ceil, "ceil")
trunc = _rounding(np.trunc, "trunc")
round = _rounding(np.rint, "round")


def round_decimals(a, decimals):
    d = _NP2DT[a.dtype]
    if d.category != _FLOAT:
        raise _not_impl("round_vml_cpu" if decimals == 0 else "round_cpu", d)
    if decimals == 0:
        return np.rint(a)
    ct = _F32 if a.dtype in _LOW else a.dtype
    x = a.astype(ct)
    p = (np.float64(10.0) ** _babs(decimals)).astype(ct)
    r = np.rint(x * p) / p if decimals > 0 else np.rint(x / p) * p
    return r if ct is a.dtype else r.astype(a.dtype)


def frac(a):
    d = _NP2DT[a.dtype]
    if d.category != _FLOAT:
        raise _not_impl("frac_cpu", d)
    return np.subtract(a, np.trunc(a))


_FMAX = {_F16: 65504.0, _F32: float(np.finfo(np.float32).max), _F64: float(np.finfo(np.float64).max)}
if _BF16 is not None:
    _FMAX[_BF16] = 3.3895313892515355e+38


def _nan_to_num_real(a, nan, posinf, neginf):
    npd = a.dtype
    m = _FMAX[npd]
    vals = np.array([0.0 if nan is None else nan, m if posinf is None else posinf,
                     -m if neginf is None else neginf], _F64).astype(npd)
    r = np.where(np.isnan(a), vals[0], a)
    r = np.where(np.isinf(a), np.where(a > 0, vals[1], vals[2]), r)
    return r.astype(npd)


def nan_to_num(a, nan=None, posinf=None, neginf=None):
    c = _cat(a)
    if c == _FLOAT:
        return _nan_to_num_real(a, nan, posinf, neginf)
    if a.dtype == _C32:
        raise _chalf.refuse("nan_to_num")
    if c == _COMPLEX:
        r = np.empty(a.shape, a.dtype)
        r.real = _nan_to_num_real(a.real, nan, posinf, neginf)
        r.imag = _nan_to_num_real(a.imag, nan, posinf, neginf)
        return r
    return a.copy()


# ---- unary: float-valued (ints become the default float) -------------------------------------
def _float_unary(fn, name=None, real_only=None):
    """A kernel computing fn in a float dtype: ints/bool -> default float, half types via float32."""
    def kernel(a):
        d = a.dtype
        if d in _NATIVE:
            if real_only is not None and d.kind == "c":
                raise _not_impl(real_only, _NP2DT[d])
            return fn(a)
        if d in _LOW:
            return fn(a.astype(_F32)).astype(d)
        if d is _C32 or d == _C32:  # torch's CPU build has none of these for ComplexHalf
            raise _chalf.refuse(real_only or _CHALF_KERNEL.get(kernel.__name__, f"{kernel.__name__}_vml_cpu"))
        out = _dt.defaults.float.np
        if out in _LOW:
            return fn(a.astype(_F32)).astype(out)
        return fn(a.astype(out))
    kernel.__name__ = name or fn.__name__
    return kernel


# torch's names of the kernels that refuse ComplexHalf, where they are not "<op>_vml_cpu"
_CHALF_KERNEL = {"exp2": "exp2", "rsqrt": "rsqrt_cpu", "sinh": "sinh_cpu", "cosh": "cosh_cpu", "asinh": "asinh_cpu",
                 "acosh": "acosh_cpu", "atanh": "atanh_cpu", "sigmoid": "sigmoid_cpu",
                 "reciprocal": "reciprocal_cpu", "logit": "logit_cpu"}


def _recip(x):
    return np.reciprocal(x)


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


_ONE = {np.dtype(np.float32): np.ones((), np.float32), np.dtype(np.float64): np.ones((), np.float64)}
for _a in _ONE.values():
    _a.flags.writeable = False  # shared: a 0-d 1 costs NumPy less than a Python 1 (see _glue.number_array)


def _sigmoid(x):
    one = _ONE.get(x.dtype)
    return np.reciprocal(np.exp(np.negative(x)) + (1 if one is None else one))


exp = _float_unary(np.exp, "exp")
exp2 = _float_unary(np.exp2, "exp2")
expm1 = _float_unary(np.expm1, "expm1")
log = _float_unary(np.log, "log")
log2 = _float_unary(np.log2, "log2")
log10 = _float_unary(np.log10, "log10")
log1p = _float_unary(np.log1p, "log1p")
sqrt = _float_unary(np.sqrt, "sqrt")
rsqrt = _float_unary(_rsqrt, "rsqrt")
sin = _float_unary(np.sin, "sin")
cos = _float_unary(np.cos, "cos")
tan = _float_unary(np.tan, "tan")
asin = _float_unary(np.arcsin, "asin")
acos = _float_unary(np.arccos, "acos")
atan = _float_unary(np.arctan, "atan")
sinh = _float_unary(np.sinh, "sinh")
cosh = _float_unary(np.cosh, "cosh")
tanh = _float_unary(np.tanh, "tanh")
asinh = _float_unary(np.arcsinh, "asinh")
acosh = _float_unary(np.arccosh, "acosh")
atanh = _float_unary(np.arctanh, "atanh")
sigmoid = _float_unary(_sigmoid, "sigmoid")
reciprocal = _float_unary(_recip, "reciprocal")

# Same-dtype paths (see add_same): float32/float64/complex compute as they are, so the glue may call
# the function itself and build the result inline (two calls fewer per op than the kernel).
tanh_same = (np.tanh, div_same[1])
exp_same = (np.exp, div_same[1])
sigmoid_same = (_sigmoid, div_same[1])


def _angle(factor, name):
    f = _float_unary(lambda x: np.multiply(x, factor), name)

    def kernel(a):
        if a.dtype.kind in "cV" and a.dtype is not _BF16:  # V: complex32 (or bfloat16)
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        return f(a)
    kernel.__name__ = name
    return kernel


deg2rad = _angle(np.pi / 180, "deg2rad")
rad2deg = _angle(180 / np.pi, "rad2deg")


def logit(a, eps=None):
    d = _NP2DT[a.dtype]
    if d.category == _COMPLEX:
        raise _not_impl("logit_cpu", d)
    if eps is not None:
        rt = d if d.category == _FLOAT else _dt.defaults.float
        _m.checked(eps, _dt.float32 if rt.np in _LOW else rt)

    def fn(x):
        if eps is not None:
            lo, hi = eps, 1 - eps
            x = np.where(x < lo, x.dtype.type(lo), np.where(x > hi, x.dtype.type(hi), x))
        return np.log(x / (1 - x))
    return _float_unary(fn, "logit")(a)


# ---- erf, erfc, erfinv (computed in float64) --------------------------------------------------
# Chebyshev coefficients fitted with mpmath (50 digits): erf(x) / x in t = 2x^2 - 1 for |x| < 1,
# and ln(erfc(z) (z + 3)) + z^2 in u = (z - 3) / (z + 3) for z >= 0 (relative error < 3e-15).
_ERF_C = (0.9754769393826541, -0.14226120510371365, 0.010035582187599796, -0.0005768764699767485,
          2.741993125219606e-05, -1.1043175507344507e-06, 3.8488755420345036e-08,
          -1.1808582533875466e-09, 3.2334215826050907e-11, -7.991015947004483e-13,
          1.799072511348477e-14, -3.718635162421382e-16, 7.101507363020076e-18)
_ERFC_C = (0.1696516972884008, -0.8332788452260321, 0.09583256063951603, -0.002680194165913263,
           -0.002394160955439755, 0.0004989450515503821, 3.137729698484356e-05,
           -2.9828298661601428e-05, 2.4901331293353466e-06, 1.3490707792188857e-06,
           -3.137106094321004e-07, -4.2361409904632405e-08, 2.3523063975949494e-08,
           7.933780071054005e-12, -1.4108196436866416e-09, 1.3897094008031716e-10,
           7.01194172621643e-11, -1.46351694531474e-11, -2.694340418686817e-12,
           1.0733561880935346e-12, 5.0409941793039225e-14, -6.339407485212874e-14,
           3.671470797935451e-15, 2.9992581288705777e-15, -5.536543452295057e-16,
           -9.604172037905464e-17, 4.5770145813086646e-17)
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _cheb(c, t):
    """Clenshaw's sum of c[k] T_k(t) (len(c) >= 3), rotating three buffers (no per-step allocation)."""
    t2 = t + t
    b2 = np.multiply(t2, c[-1])                  # b_{n-2} = 2t c[n-1] - 0 + c[n-2]
    b2 += c[-2]
    b = np.multiply(t2, b2)                      # b_{n-3} = 2t b_{n-2} - c[n-1] + c[n-3]
    b -= c[-1]
    b += c[-3]
    b1, b2 = b, b2
    buf = np.empty_like(b1)
    for ck in c[-4:0:-1]:
        np.multiply(t2, b1, out=buf)
        buf -= b2
        buf += ck
        b1, b2, buf = buf, b1, b2
    b1 *= t
    b1 -= b2
    b1 += c[0]
    return b1


def _erfc_pos(z):
    """erfc(z) for z >= 0 (float64 array); z^2 split in two exact parts against cancellation."""
    z = np.minimum(z, 30.0)
    g = _cheb(_ERFC_C, (z - 3.0) / (z + 3.0))
    zh = z.astype(_F32).astype(_F64)
    return np.exp(-zh * zh) * np.exp(g - (z - zh) * (z + zh)) / (z + 3.0)


def _erf_poly():
    """_ERF_C's Chebyshev series in t = 2s - 1 as a power series in s = x^2 (converted exactly with
    rationals, then rounded once): erf(x) / x = sum a[j] s^j for |x| <= 1, well conditioned there
    (alternating, sum |a[j]| < 2 |erf(1)|), evaluated with Horner's rule (2 passes a term)."""
    from fractions import Fraction
    n = len(_ERF_C)
    tk = [[Fraction(1)], [Fraction(-1), Fraction(2)]]       # T_k(2s - 1) in powers of s
    while len(tk) < n:
        a, b = tk[-1], tk[-2]
        nxt = [Fraction(0)] * (len(a) + 1)
        for j, v in enumerate(a):                            # 2 (2s - 1) T_k - T_{k-1}
            nxt[j + 1] += 4 * v
            nxt[j] -= 2 * v
        for j, v in enumerate(b):
            nxt[j] -= v
        tk.append(nxt)
    acc = [Fraction(0)] * n
    for c, t in zip(_ERF_C, tk):
        c = Fraction(c)
        for j, v in enumerate(t):
            acc[j] += c * v
    return tuple(float(v) for v in acc)


_ERF_P = _erf_poly()


def _erf64(x):
    """erf of a float64 array: the series on the whole array (no gathers for the common |x| < 1),
    erfc's series only on the entries with |x| >= 1 (taken and put back by flat index)."""
    if x.ndim == 0:
        return _erf64(x.reshape(1)).reshape(())
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    with np.errstate(over="ignore", invalid="ignore"):  # only in entries replaced below
        s = np.multiply(x, x)
        big = s >= 1.0                           # |x| >= 1 exactly; NaN stays in the series branch
        a = _ERF_P
        r = np.multiply(s, a[-1])
        r += a[-2]
        for aj in a[-3::-1]:
            r *= s
            r += aj
        r *= x
    if big.any():
        idx = np.flatnonzero(big)
        xb = x.reshape(-1)[idx]
        r.reshape(-1)[idx] = np.sign(xb) * (1.0 - _erfc_pos(np.absolute(xb)))
    return r


def _erfc64(x):
    r = _erfc_pos(np.absolute(x))
    return np.where(x < 0, 2.0 - r, r)


def _erfinv64(y):
    ay = np.absolute(y)
    lg = np.log((1.0 - ay) * (1.0 + ay))
    a = 0.147
    t = 2.0 / (np.pi * a) + lg / 2.0
    x = np.sqrt(np.sqrt(t * t - lg / a) - t)      # Winitzki's approximation (3 digits)
    x = np.where(np.isfinite(x), x, 0.0)
    tail = ay > 0.5
    head = ~tail
    xt, xh, yh = x[tail], x[head], ay[head]
    qt = 1.0 - ay[tail]                          # exact for ay >= 0.5
    for _ in range(2):                           # Halley steps on erf(x) = |y| (cubic convergence)
        xt = _halley(xt, qt - _erfc64(xt))       # erf(x) - |y| as 1 - |y| - erfc(x) in the tail
        xh = _halley(xh, _erf64(xh) - yh)
    x[tail] = xt
    x[head] = xh
    x = np.where(ay == 1.0, np.inf, x)
    x = np.where(ay > 1.0, np.nan, x)
    return np.copysign(x, y)


def _halley(x, f):
    d = _TWO_OVER_SQRT_PI * np.exp(-x * x)
    return np.where(d > 0, x - f / (d + x * f), x)


def _erf_like(fn64, kname, small=None):
    def fn(x):
        x64 = np.asarray(x, _F64)
        if small is not None and x64.size <= 64:  # libm per element beats 40 array passes here
            r = np.array([small(v) for v in x64.ravel().tolist()], _F64)
        else:
            r = fn64(x64.reshape(-1))
        return r.reshape(x64.shape).astype(x.dtype)
    return _float_unary(fn, kname.split("_")[0], real_only=kname)


_erf_any = _erf_like(_erf64, "erf_vml_cpu", math.erf)


def erf(x):
    if x.__class__ is _nd and x.dtype == _F32:  # float32 without the float64 round trip
        return _special.erf_f32(x)
    return _erf_any(x)
erfc = _erf_like(_erfc64, "erfc_vml_cpu", math.erfc)
erfinv = _erf_like(_erfinv64, "erfinv_vml_cpu")


# ---- binary math -----------------------------------------------------------------------------
def _need(x, op, name, pos):
    _m.need_tensor(x, op, name, pos, _isnd)


def _float_binary(uf, op, kname, tensor_only):
    def kernel(a, b):
        if tensor_only:
            _need(b, op, "other", 2)
        rt = _float_rt(a, b)
        if rt.category == _COMPLEX:
            raise _not_impl(kname, rt)
        return _arith(uf, a, b, rt)
    kernel.__name__ = op
    return kernel


atan2 = _float_binary(np.arctan2, "atan2", "atan2_cpu", True)
arctan2 = _float_binary(np.arctan2, "arctan2", "atan2_cpu", True)
copysign = _float_binary(np.copysign, "copysign", "copysign_cpu", False)


def hypot(a, b):
    _need(b, "hypot", "other", 2)
    rt = result_dtype(a, b)
    if rt.category != _FLOAT:
        raise _not_impl("hypot_cpu", rt)
    return _arith(np.hypot, a, b, rt)


def nextafter(a, b):
    """The next representable value after a towards b, in the result dtype itself (float16 and
    bfloat16 step by their own ulp, as ATen's std::nextafter does)."""
    _need(b, "nextafter", "other", 2)
    rt = result_dtype(a, b)
    if rt.category != _FLOAT:
        raise _not_impl("nextafter_cpu", rt)
    npd = rt.np
    return np.nextafter(_to(a, npd), _to(b, npd))


def _min_max(uf, name):
    def kernel(a, b):
        _need(b, name, "other", 2)
        if a.dtype is b.dtype:
            if a.dtype.kind in "cV" and a.dtype is not _BF16:  # V: complex32 (or bfloat16)
                _m.min_max_check(_dt.complex64, _dt.complex64, name)
            return uf(a, b)
        _m.min_max_check(_NP2DT[a.dtype], _NP2DT[b.dtype], name)
        rt = result_dtype(a, b)
        npd = rt.np
        return uf(_to(a, npd), _to(b, npd))
    kernel.__name__ = name
    return kernel


minimum = _min_max(np.minimum, "minimum")
maximum = _min_max(np.maximum, "maximum")
fmin = _min_max(np.fmin, "fmin")
fmax = _min_max(np.fmax, "fmax")


# ---- clamp -----------------------------------------------------------------------------------
def _clamp_none(lo, hi):
    if lo is None and hi is None:
        raise RuntimeError(_m.CLAMP_NONE)


def _clamp_scalar(a, lo, hi, kname):
    if a.dtype.kind in "cV" and a.dtype is not _BF16:  # V: complex32 (or bfloat16)
        raise NotImplementedError(_m.CLAMP_COMPLEX)
    rt = result_dtype(a, *[v for v in (lo, hi) if v is not None])
    if rt is _dt.bool_:
        raise _not_impl(kname, rt)
    npd = rt.np
    r = _to(a, npd)
    if lo is not None:
        r = np.maximum(r, _scalar(_m.checked(lo, rt), npd))
    if hi is not None:
        r = np.minimum(r, _scalar(_m.checked(hi, rt), npd))
    return r


def _real_scalar(v):
    if isinstance(v, complex):
        _m.checked(v, _dt.float64)  # PyTorch's error for a complex bound with an imaginary part
        return v.real
    return v


def clamp(a, lo=None, hi=None):
    _clamp_none(lo, hi)
    kname = "clamp_scalar_cpu" if lo is not None and hi is not None else (
        "clamp_min_scalar_cpu" if lo is not None else "clamp_max_scalar_cpu")
    return _clamp_scalar(a, _real_scalar(lo), _real_scalar(hi), kname)


def clamp_tensor(a, lo=None, hi=None):
    _clamp_none(lo, hi)
    if a.dtype.kind in "cV" and a.dtype is not _BF16:  # V: complex32 (or bfloat16)
        raise NotImplementedError(_m.CLAMP_COMPLEX)
    rt = result_dtype(a, *[v for v in (lo, hi) if v is not None])
    both = lo is not None and hi is not None
    if (rt is _dt.bool_ and both) or rt.category == _COMPLEX:
        raise _not_impl("clamp_cpu" if both else "maximum_cpu" if hi is None else "minimum_cpu", rt)
    npd = rt.np
    r = _to(a, npd)
    if lo is not None:
        r = np.maximum(r, _to(lo, npd))
    if hi is not None:
        r = np.minimum(r, _to(hi, npd))
    return r


def clamp_min(a, lo):
    if isinstance(lo, complex):
        raise NotImplementedError(_m.CLAMP_COMPLEX)
    return _clamp_scalar(a, lo, None, "clamp_min_scalar_cpu")


def clamp_max(a, hi):
    if isinstance(hi, complex):
        raise NotImplementedError(_m.CLAMP_COMPLEX)
    return _clamp_scalar(a, None, hi, "clamp_max_scalar_cpu")


def clamp_min_tensor(a, lo):
    rt = result_dtype(a, lo)
    if rt.category == _COMPLEX:
        raise _not_impl("maximum_cpu", rt)
    npd = rt.np
    return np.maximum(_to(a, npd), _to(lo, npd))


def clamp_max_tensor(a, hi):
    rt = result_dtype(a, hi)
    if rt.category == _COMPLEX:
        raise _not_impl("minimum_cpu", rt)
    npd = rt.np
    return np.minimum(_to(a, npd), _to(hi, npd))


# ---- lerp, addcmul, addcdiv ------------------------------------------------------------------
def _lerp(x, e, w):
    d = e - x
    if isinstance(w, _nd):
        return np.where(np.absolute(w) < 0.5, x + w * d, e - d * (1 - w))
    return x + w * d if _babs(w) < 0.5 else e - d * (1 - w)


def _lerp_args_error(*args):
    got = ", ".join("Tensor" if isinstance(x, _nd) else type(x).__name__ for x in args)
    return TypeError(f"lerp() received an invalid combination of arguments - got ({got}), but expected "
                     "one of:\n * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n"
                     " * (Tensor input, Tensor end, Number weight, *, Tensor out = None)\n")


def lerp(a, end, weight):
    if not isinstance(end, _nd):
        raise _lerp_args_error(a, end, weight)
    sd = _NP2DT[a.dtype]
    _m.lerp_check(sd, _NP2DT[end.dtype])
    if sd.category < _FLOAT:
        raise _not_impl("lerp_kernel_scalar", sd)
    npd = a.dtype
    ct = _F32 if npd in _LOW else npd
    w = _m.checked(weight, _NP2DT[ct])
    if isinstance(w, complex) and ct.kind != "c":
        w = w.real
    try:
        r = _lerp(a.astype(ct, copy=False), end.astype(ct, copy=False), _scalar(w, ct))
    except TypeError:  # complex32 (NumPy has no loops for it): torch has no ComplexHalf lerp
        if npd != _C32:
            raise
        raise _not_impl("lerp_kernel_scalar", sd) from None
    return r.astype(npd, copy=False) if ct is not npd else r


def lerp_tensor(a, end, weight):
    if not isinstance(end, _nd) or not isinstance(weight, _nd):
        raise _lerp_args_error(a, end, weight)
    sd = _NP2DT[a.dtype]
    _m.lerp_check(sd, _NP2DT[end.dtype], _NP2DT[weight.dtype], weight.ndim)
    if sd.category < _FLOAT:
        raise _not_impl("lerp_kernel_tensor", sd)
    npd = a.dtype
    ct = _F32 if npd in _LOW else npd
    try:
        r = _lerp(a.astype(ct, copy=False), end.astype(ct, copy=False), weight.astype(ct, copy=False))
    except TypeError:  # complex32 (NumPy has no loops for it): torch has no ComplexHalf lerp
        if npd != _C32:
            raise
        raise _not_impl("lerp_kernel_tensor", sd) from None
    return r.astype(npd) if ct is not npd else r


def _addc(a, t1, t2, value, op):
    _need(t1, op, "tensor1", 2)
    _need(t2, op, "tensor2", 3)
    rt = result_dtype(a, t1, t2)
    npd = rt.np
    ct = _F32 if npd in _LOW else npd
    v = _m.checked(value, rt)
    x, y, z = _to(a, ct), _to(t1, ct), _to(t2, ct)
    vs = _scalar(v, ct)
    try:
        r = x + vs * y * z if op == "addcmul" else x + vs * y / z
    except TypeError:  # complex32, which NumPy cannot compute in: addcmul only, in c10::complex<Half>
        if ct is not _C32:
            raise
        if op != "addcmul":
            raise _chalf.refuse("addcdiv_cpu_out") from None
        return _chalf.addcmul(x, vs, y, z)
    return r if ct is npd else r.astype(npd)


def addcmul(a, t1, t2, value=1):
    if result_dtype(a, t1, t2) is _dt.bool_:
        raise _not_impl("addcmul_cpu_out", _dt.bool_)
    return _addc(a, t1, t2, value, "addcmul")


def addcdiv(a, t1, t2, value=1):
    if isinstance(t1, _nd) and isinstance(t2, _nd) and _cat(t1) <= _INT and _cat(t2) <= _INT:
        raise RuntimeError(_m.ADDCDIV_INT)
    return _addc(a, t1, t2, value, "addcdiv")


# ---- broadcasting errors in PyTorch's words --------------------------------------------------
def _bcast_fail(args):
    """Raise PyTorch's size-mismatch error when the array arguments do not broadcast."""
    _m.broadcast_shapes(*[x.shape for x in args if isinstance(x, _nd)])


def _broadcasting(fn):
    def kernel(*args):
        try:
            return fn(*args)
        except ValueError:
            _bcast_fail(args)
            raise
    kernel.__name__ = fn.__name__
    kernel.__doc__ = fn.__doc__
    return kernel


for _name in ("div_mode", "floor_divide", "remainder", "fmod", "pow", "float_power", "float_power_",
              "atan2", "arctan2", "copysign", "hypot", "nextafter", "minimum", "maximum", "fmin", "fmax",
              "clamp_tensor", "clamp_min_tensor", "clamp_max_tensor", "lerp", "lerp_tensor", "addcmul",
              "addcdiv"):
    globals()[_name] = _broadcasting(globals()[_name])
del _name
