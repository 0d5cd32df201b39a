"""Meta functions of _fft_r2c / _fft_c2r / _fft_c2c and their argument checks (shared with the CPU
kernels, which pass the NumPy array's ember dtype and ndim)."""
from ember.core.dtype import COMPLEX, FLOAT
from ember.core.errors import wrap_dim


def fft_dims(ndim, dim, normalization):
    """Wrapped transform dims; PyTorch's words for what its kernels reject."""
    if normalization not in (0, 1, 2):
        raise RuntimeError(f"Unsupported normalization type {normalization}")
    dims = [wrap_dim(d, ndim) for d in dim]
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    return dims


def real_check(dtype):
    if dtype.category != FLOAT:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {dtype._short}")


def complex_check(dtype):
    if dtype.category != COMPLEX:
        raise RuntimeError(f"Only supports complex dtypes, but found: {dtype._short}")


def last_dim(dims):
    if not dims:  # the halved dimension is dim.back()
        raise RuntimeError("ArrayRef: attempted to access back() of empty list")
    return dims[-1]


def fft_r2c(self, dim, normalization, onesided):
    real_check(self._dtype)
    dims = fft_dims(len(self._shape), dim, normalization)
    last = last_dim(dims)
    shape = list(self._shape)
    if onesided:
        shape[last] = shape[last] // 2 + 1
    return tuple(shape), self._dtype.to_complex()


def fft_c2r(self, dim, normalization, last_dim_size):
    complex_check(self._dtype)
    dims = fft_dims(len(self._shape), dim, normalization)
    shape = list(self._shape)
    shape[last_dim(dims)] = last_dim_size
    return tuple(shape), self._dtype.to_real()


def fft_c2c(self, dim, normalization, forward):
    complex_check(self._dtype)
    fft_dims(len(self._shape), dim, normalization)
    return tuple(self._shape), self._dtype
