"""Reductions, scans and sorts on NumPy arrays (ATen's ReduceOps, Sorting, SoftMax, Unique).

Argument checks and dtype rules come from ember/kernels/meta/reduction.py, so the CPU and Meta
backends agree. Half-precision inputs are accumulated in float32 as PyTorch's CPU kernels do;
scans of float32 accumulate in float64 (ATen's acc_type on CPU).
"""
import warnings

import numpy as np

from ember.core import dtype as _dt
from ember.core.errors import wrap_dim
from ember.kernels.cpu import _chalf
from ember.kernels.cpu._promote import cast as _pcast, result_dtype
from ember.kernels.meta import reduction as M

_nd = np.ndarray
_NP2DT = _dt.NP2DT
_add = np.add.reduce
_mul = np.multiply.reduce
_maxr = np.maximum.reduce
_minr = np.minimum.reduce
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)
_U8 = np.dtype(np.uint8)
_BF16 = _dt.bfloat16.np
_HALF = frozenset(d for d in (_F16, _BF16) if d is not None)
# sum/prod of these needs no conversion: the result has the input's dtype
_SAME = frozenset(np.dtype(x) for x in (np.float32, np.float64, np.complex64, np.complex128))
# accumulation dtype of sum/prod/mean for the rest
_ACC = {d: _I64 for d in map(np.dtype, (np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64))}
for _h in _HALF:
    _ACC[_h] = _F32


_C32 = _dt.CHALF_NP


def _no_chalf(out, kernel):
    """torch's sum/prod/mean/cumsum/cumprod have no ComplexHalf kernel (`out`: the dtype computed in)."""
    if out is _dt.complex32:
        raise _chalf.refuse(kernel)


def _dtype(a):
    return _NP2DT[a.dtype]


def _to(a, d):
    """a converted to ember dtype d (complex -> real keeps the real part, like PyTorch)."""
    npd = d.np
    if a.dtype == npd:
        return a
    if a.dtype == _C32 or npd is _C32:
        return _chalf.astype(a, npd)
    if a.dtype.kind == "c" and d.category != _dt.COMPLEX:
        a = a.real
    return a.astype(npd)


def _out(r, npd):
    """Result r (array or NumPy scalar) as dtype npd."""
    if r.dtype != npd:
        return np.asarray(r).astype(npd)
    return r


def _work(a):
    """a in a dtype NumPy computes well in: half precision goes to float32."""
    return a.astype(_F32) if a.dtype in _HALF else a


def _axes(dim, nd):
    return M.dims_of(dim, nd)


def _numel_of(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


# ---- sum / prod / mean ------------------------------------------------------------------------
def _sum_into(a, axes, keepdim, dtype, ufunc):
    out = M.sum_dtype(_dtype(a), dtype)
    a = _to(a, out)
    acc = _ACC.get(a.dtype)
    if acc is None:
        _no_chalf(out, "sum_cpu")
        return ufunc(a, axes, keepdims=keepdim)
    return _out(ufunc(a, axes, dtype=acc, keepdims=keepdim), out.np)


def sum(a, dtype=None):
    if dtype is None and a.dtype in _SAME:
        return _add(a, None)
    return _sum_into(a, None, False, dtype, _add)


def sum_dim(a, dim, keepdim=False, dtype=None):
    axes = _axes(dim, a.ndim)
    if dtype is None and a.dtype in _SAME:
        return _add(a, axes, keepdims=keepdim)
    return _sum_into(a, axes, keepdim, dtype, _add)


def nansum(a, dim=None, keepdim=False, dtype=None):
    M.nansum_dtype(_dtype(a), dtype)
    if a.dtype.kind == "f" or a.dtype in _HALF:
        a = np.where(np.isnan(a), np.zeros((), a.dtype), a)
    return _sum_into(a, _axes(dim, a.ndim), keepdim, dtype, _add)


def prod(a, dtype=None):
    return _prod(a, None, False, dtype)


def prod_dim(a, dim, keepdim=False, dtype=None):
    d = wrap_dim(dim, a.ndim)
    return _prod(a, (d,) if a.ndim else (), keepdim, dtype)


def _prod(a, axes, keepdim, dtype):
    out = M.sum_dtype(_dtype(a), dtype)
    a = _to(a, out)
    _no_chalf(out, "prod_out_cpu")
    if out is _dt.bool_:
        return np.logical_and.reduce(a, axes, keepdims=keepdim)
    acc = _ACC.get(a.dtype)
    if acc is None:
        return _mul(a, axes, keepdims=keepdim)
    return _out(_mul(a, axes, dtype=acc, keepdims=keepdim), out.np)


def _mean(a, axes, keepdim, dtype, name="mean"):
    out = M.mean_dtype(_dtype(a), dtype, name)
    _no_chalf(out, "sum_cpu")
    a = _to(a, out)
    n = _numel_of(a.shape, axes) if axes is not None else a.size
    acc = _ACC.get(a.dtype)
    s = _add(a, axes, dtype=acc, keepdims=keepdim)
    return _out(np.true_divide(s, n, dtype=s.dtype), out.np)


def mean(a, dtype=None):
    return _mean(a, None, False, dtype)


def mean_dim(a, dim, keepdim=False, dtype=None):
    return _mean(a, _axes(dim, a.ndim), keepdim, dtype)


def nanmean(a, dim=None, keepdim=False, dtype=None):
    out = M.nanmean_dtype(_dtype(a), dtype)
    a = _work(_to(a, out))
    axes = _axes(dim, a.ndim)
    nan = np.isnan(a)
    s = _add(np.where(nan, np.zeros((), a.dtype), a), axes, keepdims=keepdim)
    n = _add(~nan, axes, dtype=_I64, keepdims=keepdim)
    return _out(np.true_divide(s, n, dtype=s.dtype), out.np)


# ---- max / min --------------------------------------------------------------------------------
def max(a):
    if a.dtype.kind == "c" or a.size == 0:
        M.full_nonempty(a.shape, "max")
        M.minmax_check(_dtype(a), "max_all")
    try:
        return _maxr(a, None)
    except TypeError:  # complex32
        M.minmax_check(_dtype(a), "max_all")
        raise


def min(a):
    if a.dtype.kind == "c" or a.size == 0:
        M.full_nonempty(a.shape, "min")
        M.minmax_check(_dtype(a), "min_all")
    try:
        return _minr(a, None)
    except TypeError:  # complex32
        M.minmax_check(_dtype(a), "min_all")
        raise


def _arg_along(a, d, keepdim, largest):
    """(values, indices) of the first max/min along axis d; NaN wins, as in PyTorch."""
    w = a.astype(_F32) if a.dtype == _BF16 else a
    if largest:
        idx = w.argmax(axis=d, keepdims=keepdim)
        vals = _maxr(a, d, keepdims=keepdim)
    else:
        idx = w.argmin(axis=d, keepdims=keepdim)
        vals = _minr(a, d, keepdims=keepdim)
    return vals, idx.astype(_I64, copy=False)


def _dim_minmax(a, dim, keepdim, name, largest):
    d = wrap_dim(dim, a.ndim)
    M.dim_nonempty(a.shape, (d,), name)
    M.dim_minmax_check(_dtype(a), name)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    return _arg_along(a, d, keepdim, largest)


def max_dim(a, dim, keepdim=False):
    return _dim_minmax(a, dim, keepdim, "max", True)


def min_dim(a, dim, keepdim=False):
    return _dim_minmax(a, dim, keepdim, "min", False)


def _other(ufunc, a, b, name):
    if not (a.__class__ is _nd and b.__class__ is _nd and a.dtype is b.dtype and (
            a.dtype.kind not in "cV" or a.dtype is _BF16)):  # V: complex32 (or bfloat16)
        rt = result_dtype(a, b)
        if rt.category == _dt.COMPLEX:
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        a, b = _pcast(a, rt), _pcast(b, rt)
    try:
        return ufunc(a, b)
    except ValueError:
        from ember.kernels.meta.pointwise import broadcast_shapes
        broadcast_shapes(np.shape(a), np.shape(b))
        raise


def max_other(a, other):
    return _other(np.maximum, a, other, "maximum")


def min_other(a, other):
    return _other(np.minimum, a, other, "minimum")


def _amaxmin(a, dim, keepdim, ufunc, name, kernel):
    if a.size == 0:
        M.amaxmin_empty_check(a.shape, dim, name)
    axes = _axes(dim, a.ndim)
    if a.size and a.dtype.kind == "c":
        M.minmax_check(_dtype(a), kernel)
    return ufunc(a, axes, keepdims=keepdim)


def amax(a, dim=(), keepdim=False):
    return _amaxmin(a, dim, keepdim, _maxr, "amax", "max_values_cpu")


def amin(a, dim=(), keepdim=False):
    return _amaxmin(a, dim, keepdim, _minr, "amin", "min_values_cpu")


def aminmax(a, dim=None, keepdim=False):
    M.aminmax_shape(a.shape, _dtype(a), dim, keepdim)
    if dim is None:
        axes = tuple(range(a.ndim))
    else:
        axes = (wrap_dim(dim, a.ndim),) if a.ndim else ()
    return _minr(a, axes, keepdims=keepdim), _maxr(a, axes, keepdims=keepdim)


def _argext(a, dim, keepdim, name, largest):
    M.arg_shape(a.shape, _dtype(a), dim, keepdim, name)
    f = np.argmax if largest else np.argmin
    w = a.astype(_F32) if a.dtype == _BF16 else a
    if dim is None or a.ndim == 0:
        r = np.asarray(f(w, axis=None), dtype=_I64)
        return r.reshape((1,) * a.ndim) if keepdim else r
    return f(w, axis=wrap_dim(dim, a.ndim), keepdims=keepdim).astype(_I64, copy=False)


def argmax(a, dim=None, keepdim=False):
    return _argext(a, dim, keepdim, "argmax", True)


def argmin(a, dim=None, keepdim=False):
    return _argext(a, dim, keepdim, "argmin", False)


# ---- var / std --------------------------------------------------------------------------------
_VAR_ACC = {_F32: _F64, np.dtype(np.complex64): np.dtype(np.complex128)}
for _h in _HALF:
    _VAR_ACC[_h] = _F32


def _var_core(a, dim, keepdim, correction, name, want_std, want_mean):
    rd = M.var_dtype(_dtype(a), name if want_mean else "std and var")
    if a.dtype == _C32:
        # torch's complex var: the Half variances of the real and imaginary parts, added in Half;
        # the mean (var_mean, std_mean): complex(mean of the real parts, mean of the imaginary parts)
        re = _var_core(a["real"], dim, keepdim, correction, name, False, want_mean)
        im = _var_core(a["imag"], dim, keepdim, correction, name, False, want_mean)
        v = np.add(re[0] if want_mean else re, im[0] if want_mean else im, dtype=_F32).astype(_F16)
        if want_std:
            v = np.sqrt(v, dtype=_F32).astype(_F16)
        if not want_mean:
            return v
        m = np.empty(re[1].shape, _C32)
        m["real"], m["imag"] = re[1], im[1]
        return v, m
    d0 = a.dtype
    axes = _axes(dim, a.ndim)
    w = _chalf.astype(a, _VAR_ACC[a.dtype]) if a.dtype in _VAR_ACC else a  # ATen's Welford acc_type
    n = _numel_of(a.shape, axes)
    if n:
        m = _add(w, axes, keepdims=True)
        m *= 1.0 / n
    else:
        m = np.full(tuple(1 if i in axes else s for i, s in enumerate(a.shape)), np.nan, w.dtype)
    dev = np.asarray(w - m)
    if dev.dtype.kind == "c":
        sq = dev.real * dev.real
        sq += dev.imag * dev.imag
    else:
        sq = np.multiply(dev, dev, out=dev)
    dof = n - correction
    if dof <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=5)
        dof = 0
    v = _add(sq, axes, keepdims=keepdim) / sq.dtype.type(dof)
    if want_std:
        v = np.sqrt(v)
    v = _out(v, rd.np)
    if not want_mean:
        return v
    if not keepdim:
        m = m.reshape(v.shape)
    return v, _out(m, d0)


def var(a, unbiased=True):
    return _var_core(a, None, False, 1.0 if unbiased else 0.0, "var", False, False)


def var_dim(a, dim, unbiased=True, keepdim=False):
    return _var_core(a, dim, keepdim, 1.0 if unbiased else 0.0, "var", False, False)


def var_correction(a, dim=None, correction=None, keepdim=False):
    return _var_core(a, dim, keepdim, M.correction_value(True, correction), "var", False, False)


def std(a, unbiased=True):
    return _var_core(a, None, False, 1.0 if unbiased else 0.0, "std", True, False)


def std_dim(a, dim, unbiased=True, keepdim=False):
    return _var_core(a, dim, keepdim, 1.0 if unbiased else 0.0, "std", True, False)


def std_correction(a, dim=None, correction=None, keepdim=False):
    return _var_core(a, dim, keepdim, M.correction_value(True, correction), "std", True, False)


def _vm(a, dim, keepdim, correction, name, want_std):
    M.var_dtype(_dtype(a), name)
    return _var_core(a, dim, keepdim, correction, name, want_std, True)


def var_mean(a, unbiased=True):
    return _vm(a, None, False, 1.0 if unbiased else 0.0, "var_mean", False)


def var_mean_dim(a, dim, unbiased=True, keepdim=False):
    return _vm(a, dim, keepdim, 1.0 if unbiased else 0.0, "var_mean", False)


def var_mean_correction(a, dim=None, correction=None, keepdim=False):
    return _vm(a, dim, keepdim, M.correction_value(True, correction), "var_mean", False)


def std_mean(a, unbiased=True):
    return _vm(a, None, False, 1.0 if unbiased else 0.0, "std_mean", True)


def std_mean_dim(a, dim, unbiased=True, keepdim=False):
    return _vm(a, dim, keepdim, 1.0 if unbiased else 0.0, "std_mean", True)


def std_mean_correction(a, dim=None, correction=None, keepdim=False):
    return _vm(a, dim, keepdim, M.correction_value(True, correction), "std_mean", True)


# ---- norms ------------------------------------------------------------------------------------
_INF = float("inf")


def vector_norm(a, ord=2, dim=None, keepdim=False, dtype=None):
    p = M.check_ord(ord)
    cd, rd = M.norm_dtypes(_dtype(a), dtype)
    if a.size == 0:
        M.norm_empty_check(a.shape, M.wrapped(dim, a.ndim), p, not dim, dim)
    axes = _axes(dim, a.ndim)
    x = _work(_to(a, cd))
    try:
        x = np.abs(x)  # real for complex input
    except TypeError:  # complex32: |z| in float
        x = np.abs(_chalf.widen(x))
    if p == 2.0:
        r = np.sqrt(_add(x * x, axes, keepdims=keepdim))
    elif p == 1.0:
        r = _add(x, axes, keepdims=keepdim)
    elif p == _INF:
        r = _maxr(x, axes, keepdims=keepdim)
    elif p == -_INF:
        r = _minr(x, axes, keepdims=keepdim)
    elif p == 0.0:
        r = _add((x != 0).astype(x.dtype), axes, keepdims=keepdim)
    else:
        r = np.power(_add(np.power(x, x.dtype.type(p)), axes, keepdims=keepdim), x.dtype.type(1.0 / p))
    return _out(r, rd.np)


def norm(a, p=2):
    M.aten_norm_check(_dtype(a))
    return vector_norm(a, p)


def norm_dim(a, p, dim, keepdim=False):
    M.aten_norm_check(_dtype(a))
    return vector_norm(a, 2 if p is None else p, dim, keepdim)


def norm_dim_dtype(a, p, dim, keepdim, dtype):
    M.aten_norm_dtype_check(dtype)
    return vector_norm(a, 2 if p is None else p, dim, keepdim, dtype)


def norm_dtype(a, p, dtype):
    M.aten_norm_dtype_check(dtype)
    return vector_norm(a, 2 if p is None else p, None, False, dtype)


# ---- logsumexp / softmax ----------------------------------------------------------------------
def logsumexp(a, dim, keepdim=False):
    out = M.float_out(_dtype(a))
    axes = _axes(dim, a.ndim)
    x = _work(_to(a, out))
    if x.size == 0:
        r = np.log(_add(np.exp(x), axes, keepdims=keepdim))
        return _out(r, out.np)
    re = x.real if x.dtype.kind == "c" else x
    m = _maxr(re, axes, keepdims=True)
    m = np.where(np.isinf(m), np.zeros((), m.dtype), m)
    if out.np in _HALF:
        # PyTorch composes half-precision logsumexp from half-precision ops: round each step
        h = out.np
        e = np.exp((x - m).astype(h).astype(_F32)).astype(h).astype(_F32)
        r = np.log(_add(e, axes, keepdims=True).astype(h).astype(_F32)).astype(h).astype(_F32) + m
    else:
        r = np.log(_add(np.exp(x - m), axes, keepdims=True)) + m
    if not keepdim:
        r = r.reshape(tuple(s for i, s in enumerate(r.shape) if i not in axes))
    return _out(r, out.np)


def _softmax_core(a, dim, dtype, log):
    d = wrap_dim(dim, a.ndim)
    out = M.softmax_dtype(a.shape, _dtype(a), dtype, dim, log)
    x = _work(_to(a, out))
    if x.ndim == 0:
        x = x.reshape(1)
        d = 0
        shape = ()
    else:
        shape = x.shape
    if x.size == 0:
        return np.empty(shape, out.np)
    m = _maxr(x, d, keepdims=True)
    e = x - m
    # half precision: round the intermediates PyTorch's CPU kernels keep in the input dtype
    half = out.np if out.np in _HALF else None
    last = d == x.ndim - 1
    if log:
        if half is not None and last:
            ls = _add(np.exp(e), d, keepdims=True).astype(half).astype(_F32)
            r = e - np.log(ls).astype(half).astype(_F32)
        else:
            r = e - np.log(_add(np.exp(e), d, keepdims=True))
    else:
        r = np.exp(e, out=e)
        tot = _add(r, d, keepdims=True)
        if half is not None and not last:
            r = r.astype(half).astype(_F32)
            r *= np.float32(1.0) / tot
        else:
            r /= tot
    return _out(r.reshape(shape), out.np)


def softmax(a, dim, dtype=None):
    return _softmax_core(a, dim, dtype, False)


def log_softmax(a, dim, dtype=None):
    return _softmax_core(a, dim, dtype, True)


def _softmax(a, dim, half_to_float):
    M.half_to_float_check(half_to_float)
    return _softmax_core(a, dim, None, False)


def _log_softmax(a, dim, half_to_float):
    M.half_to_float_check(half_to_float)
    return _softmax_core(a, dim, None, True)


# ---- scans ------------------------------------------------------------------------------------
_SCAN_ACC = dict(_ACC)
_SCAN_ACC[_F32] = _F64
_SCAN_ACC[np.dtype(np.complex64)] = np.dtype(np.complex128)


def _cum(a, dim, dtype, ufunc, kernel):
    out = M.cum_dtype(_dtype(a), dtype, kernel, a.size)
    d = wrap_dim(dim, a.ndim)
    a = _to(a, out)
    _no_chalf(out, kernel)
    if a.ndim == 0:
        return a.copy()
    acc = _SCAN_ACC.get(a.dtype)
    return _out(ufunc.accumulate(a, d, dtype=acc), out.np)


def cumsum(a, dim, dtype=None):
    return _cum(a, dim, dtype, np.add, "cumsum_out_cpu")


def cumprod(a, dim, dtype=None):
    return _cum(a, dim, dtype, np.multiply, "cumprod_out_cpu")


def _cumext(a, dim, ufunc, kernel):
    d = wrap_dim(dim, a.ndim)
    if a.size and a.ndim:
        M.minmax_check(_dtype(a), kernel)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    if a.size == 0:
        return a.copy(), np.zeros(a.shape, _I64)
    w = a.astype(_F32) if a.dtype == _BF16 else a
    vals = ufunc.accumulate(w, d)
    hit = w == vals
    if w.dtype.kind == "f":
        hit |= np.isnan(w)
    ar = np.arange(a.shape[d], dtype=_I64).reshape((-1,) + (1,) * (a.ndim - d - 1))
    idx = np.maximum.accumulate(np.where(hit, ar, 0), d)
    return _out(vals, a.dtype), idx


def cummax(a, dim):
    return _cumext(a, dim, np.maximum, "cummax_cpu")


def cummin(a, dim):
    return _cumext(a, dim, np.minimum, "cummin_cpu")


def _clogaddexp(x, y):
    """log(exp(x) + exp(y)) for complex arrays, shifted by the larger real part."""
    big = np.where(x.real >= y.real, x, y)
    small = np.where(x.real >= y.real, y, x)
    r = big + np.log1p(np.exp(small - big))
    inf = np.isinf(big.real) & (big.real < 0)
    return np.where(inf, small, r)


def logcumsumexp(a, dim):
    M.logcumsumexp_check(_dtype(a))
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0 or a.size == 0:
        return a.copy()
    x = _work(a)
    if x.dtype.kind == "c":
        x = np.moveaxis(x, d, 0).copy()
        for i in range(1, x.shape[0]):
            x[i] = _clogaddexp(x[i - 1], x[i])
        return np.moveaxis(x, 0, d)
    return _out(np.logaddexp.accumulate(x, d), a.dtype)


# ---- all / any / count_nonzero ------------------------------------------------------------------
def _truth(a):
    if a.dtype == _BOOL:
        return a
    try:
        return a != 0
    except TypeError:  # complex32
        return _chalf.widen(a) != 0


def _allany(a, axes, keepdim, f):
    r = f(_truth(a), axis=axes, keepdims=keepdim)
    return _out(r, _U8) if a.dtype == _U8 else r


def all(a):
    return _allany(a, None, False, np.all)


def all_dim(a, dim, keepdim=False):
    d = wrap_dim(dim, a.ndim)
    return _allany(a, (d,) if a.ndim else (), keepdim, np.all)


def all_dims(a, dim=None, keepdim=False):
    return _allany(a, M.dims_exact(dim, a.ndim), keepdim, np.all)


def any(a):
    return _allany(a, None, False, np.any)


def any_dim(a, dim, keepdim=False):
    d = wrap_dim(dim, a.ndim)
    return _allany(a, (d,) if a.ndim else (), keepdim, np.any)


def any_dims(a, dim=None, keepdim=False):
    return _allany(a, M.dims_exact(dim, a.ndim), keepdim, np.any)


def count_nonzero(a, dim=None):
    if dim is None:
        return np.asarray(np.count_nonzero(_truth(a)), _I64)
    d = wrap_dim(dim, a.ndim)
    return _add(_truth(a), (d,) if a.ndim else (), dtype=_I64)


def count_nonzero_dims(a, dim):
    return _add(_truth(a), _axes(dim, a.ndim), dtype=_I64)


# ---- sorting ----------------------------------------------------------------------------------
def _sortable(a):
    return a.astype(_F32) if a.dtype == _BF16 else a


def _argsort(a, d, descending):
    """Stable argsort along d; NaN sorts as the largest value; ties keep their order."""
    w = _sortable(a)
    if not descending:
        return np.argsort(w, axis=d, kind="stable")
    n = w.shape[d]
    rev = np.flip(w, d)
    return (n - 1) - np.flip(np.argsort(rev, axis=d, kind="stable"), d)


def sort(a, dim=-1, descending=False):
    M.sort_check(_dtype(a))
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    idx = _argsort(a, d, descending)
    return np.take_along_axis(a, idx, d), idx.astype(_I64, copy=False)


def sort_stable(a, stable=None, dim=-1, descending=False):
    return sort(a, dim, descending)


def argsort(a, dim=-1, descending=False):
    return sort(a, dim, descending)[1]


def argsort_stable(a, stable, dim=-1, descending=False):
    return sort(a, dim, descending)[1]


def msort(a):
    return sort(a, 0)[0]


def topk(a, k, dim=-1, largest=True, sorted=True):
    M.topk_shape(a.shape, _dtype(a), k, dim)
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    idx = _argsort(a, d, largest)
    idx = np.take(idx, np.arange(k), axis=d)
    return np.take_along_axis(a, idx, d), idx.astype(_I64, copy=False)


def _select(a, d, pos, keepdim):
    """Values and indices of the pos-th smallest along d (pos: array broadcastable, keepdims)."""
    idx = np.take_along_axis(_argsort(a, d, False), pos, d)
    vals = np.take_along_axis(a, idx, d)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return vals, idx.astype(_I64, copy=False)


def kthvalue(a, k, dim=-1, keepdim=False):
    M.kth_shape(a.shape, _dtype(a), k, dim, keepdim)
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    return _select(a, d, np.full((1,) * a.ndim, k - 1, _I64), keepdim)


def _nan_of(dtype):
    """NaN converted to dtype the way PyTorch's C++ casts do (bool True, integers their minimum)."""
    if dtype.kind in "fc" or dtype == _BF16:
        return np.asarray(np.nan).astype(dtype)
    if dtype == _BOOL:
        return np.asarray(True)
    # x86 converts NaN to the "integer indefinite" of int32/int64; narrower types truncate it to 0
    return np.asarray(np.iinfo(dtype).min if dtype.itemsize >= 4 else 0, dtype)


def median(a):
    flat = a.reshape(-1)
    if flat.size == 0:
        return _nan_of(a.dtype)
    M.select_check(_dtype(a), "median_cpu")
    w = _sortable(flat)
    if w.dtype.kind == "f" and np.isnan(w).any():
        return _nan_of(a.dtype)
    return np.partition(flat if a.dtype != _BF16 else w, (flat.size - 1) // 2)[(flat.size - 1) // 2] \
        .astype(a.dtype)


def nanmedian(a):
    if a.size == 0:
        return _nan_of(a.dtype)
    M.select_check(_dtype(a), "median_cpu")
    flat = _sortable(a.reshape(-1))
    if flat.dtype.kind == "f":
        flat = flat[~np.isnan(flat)]
    if flat.size == 0:
        return _nan_of(a.dtype)
    return np.partition(flat, (flat.size - 1) // 2)[(flat.size - 1) // 2].astype(a.dtype)


def _median_dim(a, dim, keepdim, ignore_nan):
    M.median_dim_shape(a.shape, _dtype(a), dim, keepdim)
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    n = a.shape[d]
    w = _sortable(a)
    isf = w.dtype.kind == "f"
    nan = np.isnan(w) if isf else None
    if ignore_nan and isf:
        cnt = _add(~nan, d, dtype=_I64, keepdims=True)
        pos = np.maximum((cnt - 1) // 2, 0)
    else:
        pos = np.full((1,) * a.ndim, (n - 1) // 2, _I64)
    vals, idx = _select(a, d, pos, True)
    if isf and not ignore_nan:
        has = np.any(nan, axis=d, keepdims=True)
        if has.any():
            first = np.argmax(nan, axis=d, keepdims=True)
            idx = np.where(has, first, idx)
            vals = np.where(has, np.asarray(np.nan).astype(a.dtype), vals)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return vals, idx.astype(_I64, copy=False)


def median_dim(a, dim, keepdim=False):
    return _median_dim(a, dim, keepdim, False)


def nanmedian_dim(a, dim, keepdim=False):
    return _median_dim(a, dim, keepdim, True)


def mode(a, dim=-1, keepdim=False):
    M.mode_shape(a.shape, _dtype(a), dim, keepdim)  # checks the dtype only when there is work
    d = wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        return a.copy(), np.zeros((), _I64)
    x = np.moveaxis(a, d, -1)
    lead = x.shape[:-1]
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    if x2.shape[0] == 0:
        vals, idx = np.empty(lead, a.dtype), np.empty(lead, _I64)
    else:
        order = np.argsort(_sortable(x2), axis=1, kind="stable")
        s = np.take_along_axis(x2, order, 1)
        ar = np.arange(n, dtype=_I64)
        start = np.ones(s.shape, bool)
        start[:, 1:] = s[:, 1:] != s[:, :-1]
        end = np.ones(s.shape, bool)
        end[:, :-1] = start[:, 1:]
        first = np.maximum.accumulate(np.where(start, ar, 0), axis=1)
        length = np.where(end, ar - first + 1, 0)
        best = np.argmax(length, axis=1)[:, None]
        vals = np.take_along_axis(s, best, 1)[:, 0].reshape(lead)
        idx = np.take_along_axis(order, best, 1)[:, 0].reshape(lead).astype(_I64)
    if keepdim:
        vals, idx = np.expand_dims(vals, d), np.expand_dims(idx, d)
    return vals, idx


# ---- unique -----------------------------------------------------------------------------------
_EMPTY_I64 = np.zeros(0, _I64)


def _unique_check(a, kernel="unique"):
    if a.dtype.kind == "c":
        raise M._not_impl(kernel, _dtype(a))
    if a.dtype == _chalf.C32:  # a structured dtype to NumPy, which would sort it
        raise _chalf.refuse(kernel)


def _unique_flat(a, return_inverse, return_counts):
    _unique_check(a)
    flat = a.reshape(-1)
    n = flat.size
    order = np.argsort(_sortable(flat), kind="stable")
    s = flat[order]
    mask = np.ones(n, bool)
    if n:
        mask[1:] = s[1:] != s[:-1]
    vals = s[mask]
    inv = cnt = _EMPTY_I64
    if return_inverse:
        ids = np.cumsum(mask, dtype=_I64) - 1
        inv = np.empty(n, _I64)
        inv[order] = ids
        inv = inv.reshape(a.shape)
    if return_counts:
        starts = np.flatnonzero(mask)
        cnt = np.diff(np.append(starts, n)).astype(_I64)
    return vals, inv, cnt


def _unique2(a, sorted=True, return_inverse=False, return_counts=False):
    return _unique_flat(a, return_inverse, return_counts)


def _unique(a, sorted=True, return_inverse=False):
    return _unique_flat(a, return_inverse, False)[:2]


def unique_consecutive(a, return_inverse=False, return_counts=False, dim=None):
    if dim is not None and not (dim == 0 and a.ndim == 1):  # ATen's flat path for 1-d, dim=0
        return unique_dim_consecutive(a, dim, return_inverse, return_counts)
    _unique_check(a)
    flat = a.reshape(-1)
    n = flat.size
    mask = np.ones(n, bool)
    if n:
        mask[1:] = flat[1:] != flat[:-1]
    vals = flat[mask]
    inv = cnt = _EMPTY_I64
    if return_inverse:
        inv = (np.cumsum(mask, dtype=_I64) - 1).reshape(a.shape)
    if return_counts:
        starts = np.flatnonzero(mask)
        cnt = np.diff(np.append(starts, n)).astype(_I64)
    return vals, inv, cnt


def _dim_rows(a, dim, kernel):
    _unique_check(a, kernel)
    if a.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, a.ndim)
    return d, np.moveaxis(a, d, 0)


def _empty_dim(a, d):
    if a.shape[d] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return a.copy(), _EMPTY_I64, _EMPTY_I64


def _rows_equal_next(r):
    """r: (n, m) rows; True where row i differs from row i-1 (NaN never equal)."""
    mask = np.ones(r.shape[0], bool)
    if r.shape[0] > 1:
        mask[1:] = np.any(r[1:] != r[:-1], axis=1)
    return mask


def unique_dim(a, dim, sorted=True, return_inverse=False, return_counts=False):
    d, x = _dim_rows(a, dim, "unique_dim")
    if a.size == 0:
        return _empty_dim(a, d)
    n = x.shape[0]
    rows = _sortable(x.reshape(n, -1))
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(n)
    mask = _rows_equal_next(rows[order])
    sel = order[mask]
    vals = np.moveaxis(np.take(x, sel, axis=0), 0, d)
    ids = np.cumsum(mask, dtype=_I64) - 1
    inv = np.empty(n, _I64)
    inv[order] = ids
    starts = np.flatnonzero(mask)
    cnt = np.diff(np.append(starts, n)).astype(_I64)
    return vals, inv, cnt


def unique_dim_consecutive(a, dim, return_inverse=False, return_counts=False):
    d, x = _dim_rows(a, dim, "unique_dim")
    if a.size == 0:
        return _empty_dim(a, d)
    n = x.shape[0]
    mask = _rows_equal_next(x.reshape(n, -1))
    vals = np.moveaxis(x[mask], 0, d)
    inv = np.cumsum(mask, dtype=_I64) - 1
    starts = np.flatnonzero(mask)
    cnt = np.diff(np.append(starts, n)).astype(_I64)
    return vals, inv, cnt
