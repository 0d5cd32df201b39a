"""CPU kernels of _fft_r2c / _fft_c2r / _fft_c2c on numpy.fft (pocketfft, as PyTorch's non-MKL build).

NumPy 2 transforms float32/complex64 in single precision, so results keep the input's precision.
`normalization` is ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n; NumPy's `norm` names the
same scalings by direction.
"""
import numpy as np

from ember.core import dtype as _dt
from ember.kernels.meta import spectral as _m

_NP2DT = _dt.NP2DT
_FORWARD_NORM = ("backward", "ortho", "forward")  # a forward transform scaled by mode 0, 1, 2
_INVERSE_NORM = ("forward", "ortho", "backward")  # an inverse transform scaled by mode 0, 1, 2


def _signal_check(sizes):
    for n in sizes:  # pocketfft refuses empty signals: PyTorch's words for the public functions' check
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")


def fft_r2c(a, dim, normalization, onesided):
    d = _NP2DT[a.dtype]
    _m.real_check(d)
    dims = _m.fft_dims(a.ndim, dim, normalization)
    _m.last_dim(dims)
    _signal_check([a.shape[k] for k in dims])
    fn = np.fft.rfftn if onesided else np.fft.fftn
    r = fn(a, axes=dims, norm=_FORWARD_NORM[normalization])
    return r.astype(d.to_complex().np, copy=False)


def fft_c2r(a, dim, normalization, last_dim_size):
    d = _NP2DT[a.dtype]
    _m.complex_check(d)
    dims = _m.fft_dims(a.ndim, dim, normalization)
    last = _m.last_dim(dims)
    s = [a.shape[k] for k in dims[:-1]] + [last_dim_size]
    _signal_check(s)
    if a.shape[last] < last_dim_size // 2 + 1:  # pocketfft reads last_dim_size // 2 + 1 values
        raise RuntimeError(f"_fft_c2r: expected at least {last_dim_size // 2 + 1} values in dimension {last}, "
                           f"but got {a.shape[last]}")
    r = np.fft.irfftn(a, s=s, axes=dims, norm=_INVERSE_NORM[normalization])
    return r.astype(d.to_real().np, copy=False)


def fft_c2c(a, dim, normalization, forward):
    d = _NP2DT[a.dtype]
    _m.complex_check(d)
    dims = _m.fft_dims(a.ndim, dim, normalization)
    if not dims:
        return a.copy()
    _signal_check([a.shape[k] for k in dims])
    if forward:
        r = np.fft.fftn(a, axes=dims, norm=_FORWARD_NORM[normalization])
    else:
        r = np.fft.ifftn(a, axes=dims, norm=_INVERSE_NORM[normalization])
    return r.astype(d.np, copy=False)
