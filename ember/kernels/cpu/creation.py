"""Factory kernels on the CPU: the device= argument already chose this backend."""
import numpy as np

from ember.core import dtype as _dt


def _npdt(dtype):
    return (dtype or _dt.defaults.float).np


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return np.empty(size, _npdt(dtype))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    from ember.kernels.meta.views import check_in_bounds
    npd = _npdt(dtype)
    need = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    buf = np.empty(need, npd)
    check_in_bounds(size, stride, 0, npd.itemsize, buf.nbytes)
    return np.lib.stride_tricks.as_strided(buf, tuple(size), tuple(s * npd.itemsize for s in stride))
