"""Meta functions of factories."""
from ember.core import dtype as _dt


def _check_size(size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"[{', '.join(str(x) for x in size)}]")


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    _check_size(size)
    return tuple(size), dtype or _dt.defaults.float


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check_size(size)
    return tuple(size), dtype or _dt.defaults.float, tuple(stride)
