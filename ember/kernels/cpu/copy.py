"""copy_, clone, item: moving and converting data on the CPU."""
import warnings

import numpy as np

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.core.layout import like_strides, preserve_strides
from ember.kernels.cpu._glue import _OVERLAP


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
    if src.dtype.kind == "c" and dst.dtype.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=6)
        src = src.real
    if np.may_share_memory(dst, src) and dst is not src:
        src = src.copy()
    np.copyto(dst, src, casting="unsafe")


def empty_laid_out(shape, strides, npd):
    """An uninitialised array of `shape` with the given element strides (a dense layout)."""
    need = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    isz = npd.itemsize
    return np.ndarray(shape, npd, buffer=np.empty(need, npd), strides=tuple(s * isz for s in strides))


def clone(a, memory_format=None):
    """at::clone: preserve_format keeps a non-overlapping and dense input's strides exactly (else
    infer_dense_strides); contiguous_format / channels_last / channels_last_3d ask for that layout."""
    if memory_format is None:
        if a.flags.c_contiguous and 1 not in a.shape:  # the common case first (a size-1 dim may
            return a.copy()                             # carry an odd stride that torch keeps)
        name = "preserve_format"
    else:
        name = memory_format.name
    if name == "contiguous_format":
        return np.array(a, order="C", copy=True)
    if name == "preserve_format":
        r = a.copy(order="K")  # NumPy keeps the stride order: mostly torch's layout already
        if r.strides == a.strides or not a.size:
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
        v = float(v)  # bfloat16 scalars
    return v


def to_copy(a, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    if dtype is None or dtype.np == a.dtype:
        return a.copy(order="K")
    if a.dtype.kind == "c" and dtype.category != _dt.COMPLEX:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=6)
        a = a.real
    return a.astype(dtype.np, order="K")


def conj_physical(a):
    return np.conj(a) if a.dtype.kind == "c" else a.copy()
