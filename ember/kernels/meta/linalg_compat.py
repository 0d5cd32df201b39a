"""Meta function of geqrf: (a: the input's shape, tau: batch + (min(m, n),)), the input's dtype."""
from ember.core import dtype as _dt

_OK = (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128)


def geqrf_check(ndim, dtype):
    if ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if dtype not in _OK:
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{dtype._short}'")


def geqrf(t):
    shape = tuple(t._shape)
    geqrf_check(len(shape), t._dtype)
    k = min(shape[-2:])
    return (shape, t._dtype), (shape[:-2] + (k,), t._dtype)
