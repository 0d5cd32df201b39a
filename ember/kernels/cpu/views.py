"""View kernels: NumPy views of the input array (no copy)."""
import numpy as np

from ember.core.errors import wrap_dim


def transpose(a, dim0, dim1):
    n = a.ndim
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n < 2:
        return a[...]
    return a.swapaxes(d0, d1)


def detach(a):
    return a[...]


def view(a, size):
    from ember.kernels.meta.views import infer_size, view_strides
    shape = infer_size(size, a.size)
    isz = a.itemsize
    strides = view_strides(a.shape, tuple(s // isz for s in a.strides) if isz else a.shape, shape)
    if strides is None:
        from ember.kernels.meta.views import VIEW_ERROR
        raise RuntimeError(VIEW_ERROR)
    return np.lib.stride_tricks.as_strided(a, shape, tuple(s * isz for s in strides),
                                           writeable=a.flags.writeable)


def as_strided(a, size, stride, storage_offset=None):
    from ember.core.storage import root_array
    from ember.kernels.meta.views import check_in_bounds
    root = root_array(a)
    isz = a.itemsize
    base_ptr = root.__array_interface__["data"][0]
    if storage_offset is None:
        storage_offset = (a.__array_interface__["data"][0] - base_ptr) // isz if isz else 0
    check_in_bounds(size, stride, storage_offset, isz, root.nbytes)
    flat = np.ndarray((root.nbytes // isz,), dtype=a.dtype, buffer=root) if root.flags.c_contiguous \
        or root.flags.f_contiguous else root.reshape(-1)
    return np.lib.stride_tricks.as_strided(flat[storage_offset:] if flat.size > storage_offset else flat[:0],
                                           tuple(size), tuple(s * isz for s in stride),
                                           writeable=a.flags.writeable)
