"""copy_, clone, item: moving and converting data on the CPU."""
import warnings

import numpy as np

from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
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
        raise RuntimeError(_OVERLAP)
    if src.dtype.kind == "c" and dst.dtype.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=6)
        src = src.real
    if np.may_share_memory(dst, src) and dst is not src:
        src = src.copy()
    np.copyto(dst, src, casting="unsafe")


def clone(a, memory_format=None):
    if memory_format is not None and getattr(memory_format, "name", "") == "contiguous_format":
        return np.array(a, order="C", copy=True)
    return a.copy(order="K")  # preserve_format: keep a dense layout's strides


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
