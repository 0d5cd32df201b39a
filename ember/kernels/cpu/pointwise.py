"""Pointwise kernels on NumPy arrays (ATen's BinaryOps / UnaryOps)."""
import numpy as np

from ember.kernels.cpu._promote import cast, result_dtype

_nd = np.ndarray


def _binary(ufunc, a, b):
    if a.__class__ is _nd and b.__class__ is _nd and a.dtype is b.dtype:
        return ufunc(a, b)
    rt = result_dtype(a, b)
    return ufunc(cast(a, rt), cast(b, rt))


def add(a, b, alpha=1):
    if alpha != 1:
        b = mul(b, alpha)
    return _binary(np.add, a, b)


def sub(a, b, alpha=1):
    if alpha != 1:
        b = mul(b, alpha)
    return _binary(np.subtract, a, b)


def mul(a, b):
    return _binary(np.multiply, a, b)


def neg(a):
    return np.negative(a)


def relu(a):
    return np.maximum(a, 0, dtype=a.dtype) if a.dtype != np.bool_ else a.copy()
