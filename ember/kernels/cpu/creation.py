"""Factory kernels on the CPU (the device= argument already chose this backend), and fill_/zero_."""
import numpy as np

from ember.core import chalf as _chalf, dtype as _dt
from ember.core.layout import format_strides
from ember.core.tensor_impl import contiguous_strides, set_empty_geometry
from ember.kernels.cpu._glue import _OVERLAP
from ember.kernels.cpu.copy import empty_laid_out
from ember.kernels.meta.creation import (arange_plan, check_fill_value, check_size, check_size_zeros,
                                         checked, eye_check, fill_dtype, not_implemented,
                                         space_dtype)
from ember.kernels.meta.views import check_in_bounds

_NP2DT = _dt.NP2DT
_INT, _FLOAT, _COMPLEX, _BOOL = _dt.INT, _dt.FLOAT, _dt.COMPLEX, _dt.BOOL
_i64 = np.dtype(np.int64)
_f64 = np.dtype(np.float64)
_C32 = _dt.CHALF_NP


def _value(v, npd):
    """A checked Python number as fill value of NumPy dtype npd (complex32 needs its structured value)."""
    return _chalf.value(v) if npd is _C32 else v


def _npdt(dtype):
    return (dtype or _dt.defaults.float).np


def _alloc_failed(size, npd, zeros=False):
    """Called when NumPy refused an allocation: PyTorch's error for the reason."""
    (check_size_zeros if zeros else check_size)(size)
    n = npd.itemsize
    for s in size:
        n *= s
    raise RuntimeError(f"DefaultCPUAllocator: not enough memory: you tried to allocate {n} bytes.")


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    npd = _npdt(dtype)
    if memory_format is not None and memory_format.name != "contiguous_format":
        check_size(size)
        return empty_laid_out(tuple(size), format_strides(size, memory_format), npd)
    try:
        return np.empty(size, npd)
    except (ValueError, MemoryError):
        _alloc_failed(size, npd)


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    check_size(size)
    npd = _npdt(dtype)
    size, stride = tuple(size), tuple(stride)
    if stride == contiguous_strides(size):
        try:
            return np.empty(size, npd)
        except (ValueError, MemoryError):
            _alloc_failed(size, npd)
    need = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    try:
        buf = np.empty(need, npd)
    except (ValueError, MemoryError):
        _alloc_failed((need,), npd)
    check_in_bounds(size, stride, 0, npd.itemsize, buf.nbytes)
    r = np.ndarray(size, npd, buffer=buf, strides=tuple(s * npd.itemsize for s in stride))
    if not need:  # zero-size: NumPy's strides of an empty array are not torch's (tensor_impl)
        set_empty_geometry(r, stride, 0)
    return r


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    npd = _npdt(dtype)
    try:
        return np.zeros(size, npd)
    except (ValueError, MemoryError):
        _alloc_failed(size, npd, zeros=True)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    npd = _npdt(dtype)
    if npd is _C32:
        return full(size, 1, dtype)
    try:
        return np.ones(size, npd)
    except (ValueError, MemoryError):
        _alloc_failed(size, npd)


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or fill_dtype(fill_value)
    check_size(size)
    v = _value(checked(fill_value, d), d.np)
    try:
        return np.full(size, v, d.np)
    except (ValueError, MemoryError):
        _alloc_failed(size, d.np)


def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.defaults.float
    return np.array(_value(checked(s, d), d.np), d.np)


def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return eye_m(n, n, dtype)


def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    eye_check(n, m)
    if dtype is _dt.complex32:
        raise not_implemented("eye", dtype)
    return np.eye(n, m, dtype=_npdt(dtype))


# ---- ranges -----------------------------------------------------------------------------------
def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    if dtype is None and end.__class__ is int and end >= 0:
        return np.arange(end, dtype=_i64)
    return arange_start_step(0, end, 1, dtype)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(start, end, 1, dtype)


def arange_start_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    n, d, xs, xst = arange_plan(start, end, step, dtype, cpu=True)
    if d.category == _INT:  # int64 accumulation: start + i * step, wrapped to the dtype
        r = np.arange(n, dtype=_i64)
        if xst != 1:
            r *= xst
        if xs:
            r += xs
        return r if d is _dt.int64 else r.astype(d.np)
    if d.name in ("float16", "bfloat16"):  # float accumulation
        r = np.arange(n, dtype=np.float32) * np.float32(xst) + np.float32(xs)
    else:
        r = _ramp(n, float(xst), float(xs), d is _dt.float64)
    return r.astype(d.np, copy=False)


# ATen's range loops compile to fused multiply-adds (start + step * i with one rounding). The
# product of a double and an integer below 2^11 is exact in x87 extended precision, so computing
# there and rounding once to double reproduces them; float32 results get the same from doubles.
_WIDE = np.dtype(np.longdouble) if np.finfo(np.longdouble).nmant >= 63 else _f64


def _ramp(n, st, c, wide):
    """c + st * i for i < n, fused (see _WIDE)."""
    k = np.arange(n, dtype=_WIDE if wide else _f64)
    k *= st
    k += c
    return k


def _lin(st, s, e, steps, wide):
    """start + st * i below halfway, end - st * (steps - 1 - i) from there (ATen's linspace)."""
    h = steps // 2
    dt = _WIDE if wide else _f64
    k = np.arange(steps, dtype=dt)
    k[h:] -= steps - 1
    k *= st
    k[:h] += s
    k[h:] += e
    return k


def _halves(steps):
    """Indices below halfway count up from start, the others down from end (ATen's rule)."""
    idx = np.arange(steps, dtype=_i64)
    h = steps // 2
    return idx[:h], steps - idx[h:] - 1


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    d = space_dtype(start, end, steps, dtype, "linspace")
    c = d.category
    npd = d.np
    if steps <= 1:
        return np.full(steps, _value(checked(start, d), npd), npd)
    if c == _BOOL or d is _dt.complex32:
        raise not_implemented("linspace_cpu", d)
    s, e = checked(start, d), checked(end, d)
    if c == _INT:  # step in double, values truncated to the integer type
        step = (float(e) - float(s)) / (steps - 1)
        return _lin(step, float(s), float(e), steps, True).astype(npd)
    s, e = np.array(s, npd), np.array(e, npd)  # arithmetic in the result type, as ATen does
    step = (e - s) / np.array(steps - 1, npd)
    if d is _dt.float32 or d is _dt.float64:  # ATen's loop compiles to fused multiply-adds
        return _lin(float(step), float(s), float(e), steps, d is _dt.float64).astype(npd)
    lo, hi = _halves(steps)
    return np.concatenate((s + step * lo.astype(npd), e - step * hi.astype(npd))).astype(npd, copy=False)


def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    d = space_dtype(start, end, steps, dtype, "logspace")
    c = d.category
    npd = d.np
    if steps == 0:
        return np.empty(0, npd)
    if steps == 1:
        if c == _COMPLEX:
            v = complex(base) ** complex(start)
        else:
            v = _pow(float(base), float(start.real if isinstance(start, complex) else start))
        return np.full(1, _value(checked(v, d), npd), npd)
    if c == _BOOL or d is _dt.complex32:
        raise not_implemented("logspace_cpu", d)
    lo, hi = _halves(steps)
    if c == _COMPLEX:
        s, e = np.array(checked(start, d), npd), np.array(checked(end, d), npd)
        b = np.array(base, npd)
        step = (e - s) / np.array(steps - 1, npd)
        ex = np.concatenate((s + step * lo.astype(npd), e - step * hi.astype(npd)))
        return np.power(b, ex).astype(npd, copy=False)
    s, e = np.array(checked(start, d), npd), np.array(checked(end, d), npd)
    diff = float(e - s) if c != _INT else float(int(e) - int(s))
    step = diff / (steps - 1)
    sf, ef = float(s), float(e)
    ex = np.concatenate((sf + step * lo, ef - step * hi))
    return np.power(float(base), ex).astype(npd)


def _pow(b, x):
    try:
        return b ** x
    except OverflowError:
        return float("inf")
    except ZeroDivisionError:
        return float("inf")


# ---- fill ---------------------------------------------------------------------------------------
def writable(a):
    """`a`, or a writable alias of the same memory when `a` is a read-only (expanded) view."""
    if a.flags.writeable:
        return a
    root = a
    x = a
    while True:  # the owner of the memory, also through as_strided's DummyArray wrappers
        x = getattr(x, "base", None)
        if x is None:
            break
        if isinstance(x, np.ndarray):
            root = x
    if not root.flags.writeable:
        raise RuntimeError(_OVERLAP)
    off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    try:
        return np.ndarray(a.shape, a.dtype, buffer=root, offset=off, strides=a.strides)
    except (TypeError, ValueError, BufferError):
        raise RuntimeError(_OVERLAP) from None


def fill_(a, value):
    v = _value(checked(value, _NP2DT[a.dtype]), a.dtype)
    if not a.flags.writeable:
        a = writable(a)
    a.fill(v)


def fill_tensor_(a, value):
    check_fill_value(value)
    if not a.flags.writeable:  # PyTorch refuses overlapping outputs here (not for fill_.Scalar)
        raise RuntimeError(_OVERLAP)
    fill_(a, value.item() if hasattr(value, "item") else value)


def zero_(a):
    if not a.flags.writeable:
        a = writable(a)
    a.fill(0)


def fill(a, value):
    return np.full(a.shape, _value(checked(value, _NP2DT[a.dtype]), a.dtype), a.dtype)


def fill_tensor(a, value):
    check_fill_value(value)
    return fill(a, value.item() if hasattr(value, "item") else value)
