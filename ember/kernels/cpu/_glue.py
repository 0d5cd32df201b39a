"""Between the dispatcher and the NumPy kernels: Tensors in, arrays to the kernel, Tensors out."""

import numpy as np

from ember.core import dtype as _dt
from ember.core.device import CPU
from ember.core.errors import fmt_shape, warn_resized
from ember.core.tensor_impl import CPU_KEYS, TensorImpl, make_view_cpu, tensor_class

T = tensor_class[0]  # ember.Tensor, placed there by ember/tensor.py before the registrations load
_ndarray = np.ndarray
_new = object.__new__
_NP2DT = _dt.NP2DT


def unwrap(x):
    """A Tensor argument that may also be a Python number, or a Tensor subclass."""
    return x._np if isinstance(x, TensorImpl) else x


def wrap(arr):
    if arr.__class__ is not _ndarray:
        arr = np.asarray(arr)
    t = _new(T)
    t._np = arr
    t._shape = arr.shape
    t._dtype = _NP2DT[arr.dtype]
    t._device = CPU
    t._keys = CPU_KEYS
    t._base = None
    t._vc = None
    t._ameta = None
    return t


view = make_view_cpu


_check_cast = _dt.check_cast


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def store_inplace(self, r, name):
    """self <- r for an in-place op: PyTorch's cast and broadcast checks, then one copy."""
    a = self._np
    if r.__class__ is not _ndarray:
        r = np.asarray(r)
    if r.dtype != a.dtype:
        _check_cast(_NP2DT[r.dtype], self._dtype)
    if r.shape != a.shape:
        try:
            b = np.broadcast_shapes(r.shape, a.shape)
        except ValueError:
            b = r.shape
        if b != a.shape:
            raise RuntimeError(f"output with shape {fmt_shape(a.shape)} doesn't match the broadcast "
                               f"shape {fmt_shape(b)}")
    if r is a:
        return
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(a, r, casting="unsafe")


def store_out(out, r):
    a = out._np
    if r.__class__ is not _ndarray:
        r = np.asarray(r)
    if r.dtype != a.dtype:
        _check_cast(_NP2DT[r.dtype], out._dtype)
    if r.shape != a.shape:
        if a.size != 0:
            warn_resized(a.shape, r.shape, stacklevel=4)
        resize_cpu(out, r.shape)
        a = out._np
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(a, r, casting="unsafe")


def resize_cpu(t, shape):
    """Tensor.resize_: keep the data that fits, new memory when it grows (as resize_ does)."""
    shape = tuple(shape)
    n = 1
    for s in shape:
        n *= s
    a = t._np
    if a.flags.c_contiguous and n <= a.size:
        flat = a.reshape(-1)
        t._np = flat[:n].reshape(shape)
    else:
        new = np.empty(n, dtype=a.dtype)
        old = a.reshape(-1) if a.flags.c_contiguous else a.ravel()
        m = min(n, old.size)
        new[:m] = old[:m]
        t._np = new.reshape(shape)
        try:
            del t._storage
        except AttributeError:
            pass
    t._shape = shape
    return t
