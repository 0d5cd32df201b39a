"""copy_, clone, item: moving and converting data on the CPU."""
import warnings

import numpy as np

from ember.core import chalf as _chalf, dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.layout import like_strides, preserve_strides
from ember.core.tensor_impl import set_empty_geometry
from ember.kernels.cpu import views as _views
from ember.kernels.cpu._glue import _OVERLAP

_C32 = _dt.CHALF_NP


def copy_(dst, src, non_blocking=False):
    if src.__class__ is not np.ndarray:
        src = np.asarray(src)
    if src.shape != dst.shape:
        try:
            b = np.broadcast_shapes(src.shape, dst.shape)
        except ValueError:
            b = None
        if b != dst.shape:
            raise RuntimeError(f"The size of tensor a ({dst.shape[-1] if dst.ndim else 1}) must match "
                               f"the size of tensor b ({src.shape[-1] if src.ndim else 1}) at "
                               f"non-singleton dimension {max(dst.ndim - 1, 0)}"
                               if b is None else f"output with shape {fmt_shape(dst.shape)} doesn't "
                               f"match the broadcast shape {fmt_shape(b)}")
    if not dst.flags.writeable:
        if dst.size == 0:  # nothing is written (an empty broadcast view is read-only in NumPy)
            return
        raise RuntimeError(_OVERLAP)
    sd, dd = src.dtype, dst.dtype
    if sd != dd and (sd == _C32 or dd == _C32):  # complex32 on one side only: convert through NumPy's numbers
        if dd == _C32:
            src = _chalf.narrow(src)
        else:
            if dd.kind != "c":
                _warn_complex_to_real()
            src = _chalf.to_dtype(src, dd)
    elif sd.kind == "c" and dd.kind != "c":
        _warn_complex_to_real()
        src = src.real
    if np.may_share_memory(dst, src) and dst is not src:
        src = src.copy()
    np.copyto(dst, src, casting="unsafe")


def _warn_complex_to_real(stacklevel=7):
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                  stacklevel=stacklevel)


def empty_laid_out(shape, strides, npd):
    """An uninitialised array of `shape` with the given element strides (a dense layout)."""
    need = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    isz = npd.itemsize
    r = np.ndarray(shape, npd, buffer=np.empty(need, npd), strides=tuple(s * isz for s in strides))
    if not need:  # zero-size: NumPy's strides of an empty array are not torch's (tensor_impl)
        set_empty_geometry(r, strides, 0)
    return r


def clone(a, memory_format=None):
    """at::clone: preserve_format keeps a non-overlapping and dense input's strides exactly (else
    infer_dense_strides); contiguous_format / channels_last / channels_last_3d ask for that layout."""
    if memory_format is None:
        if a.flags.c_contiguous and 1 not in a.shape and a.size:  # the common case first (a size-1
            return a.copy()                             # dim may carry an odd stride that torch keeps)
        name = "preserve_format"
    else:
        name = memory_format.name
    if name == "contiguous_format":
        return np.array(a, order="C", copy=True)
    if name == "preserve_format":
        if not a.size:  # torch's empty tensor is contiguous, hence dense: clone keeps its strides
            return empty_laid_out(a.shape, _views._geometry(a)[0], a.dtype)
        r = a.copy(order="K")  # NumPy keeps the stride order: mostly torch's layout already
        if r.strides == a.strides:
            return r
        st = a.strides
        if r.flags.c_contiguous and 1 not in a.shape and all(st[i] >= st[i + 1] for i in range(len(st) - 1)):
            return r  # strides in row-major order (a slice): infer_dense_strides is contiguous too
        isz = a.itemsize
        strides = preserve_strides(a.shape, [s // isz for s in a.strides])
        if r.strides == tuple(s * isz for s in strides):
            return r
    else:
        strides = like_strides(a.shape, None, memory_format)
    r = empty_laid_out(a.shape, strides, a.dtype)
    np.copyto(r, a)
    return r


def local_scalar_dense(a):
    n = a.size
    if n != 1:
        raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
    v = a.reshape(()).item() if a.ndim else a.item()
    if not isinstance(v, (bool, int, float, complex)):
        if a.dtype == _C32:  # complex32: a (real, imag) tuple of floats
            return complex(v[0], v[1])
        v = float(v)  # bfloat16 scalars
    return v


def to_copy(a, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    if dtype is None or dtype.np == a.dtype:
        return a.copy(order="K")
    if dtype is _dt.complex32:
        return _chalf.narrow(a)
    if a.dtype.kind == "c" and dtype.category != _dt.COMPLEX:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=6)
        a = a.real
    try:
        return a.astype(dtype.np, order="K")
    except TypeError:  # from complex32, which NumPy cannot cast
        if a.dtype != _C32:
            raise
        if dtype.category != _dt.COMPLEX:
            _warn_complex_to_real()
        return _chalf.to_dtype(a, dtype.np)


def conj_physical(a):
    if a.dtype.kind == "c":
        return np.conj(a)
    r = a.copy()
    if a.dtype == _C32:  # complex32 (a structured array): negate the float16 imaginary parts
        np.negative(r["imag"], out=r["imag"])
    return r
