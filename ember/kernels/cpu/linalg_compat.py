"""geqrf on NumPy: numpy.linalg.qr(mode="raw") is LAPACK's geqrf, with the factor transposed."""
import numpy as np

from ember.core import dtype as _dt
from ember.kernels.meta import linalg_compat as _m


def geqrf(a):
    _m.geqrf_check(a.ndim, _dt.NP2DT[a.dtype])
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        return np.zeros(a.shape, a.dtype), np.zeros(a.shape[:-2] + (k,), a.dtype)
    h, tau = np.linalg.qr(a, mode="raw")
    return (np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype, copy=False),
            np.ascontiguousarray(tau[..., :k]).astype(a.dtype, copy=False))
