"""complex32 (ComplexHalf) in the CPU kernels.

NumPy has no complex32; ember stores it as a structured dtype of two float16 fields (see
ember.core.dtype.CHALF_NP), on which NumPy's ufuncs refuse to run. The kernels torch's CPU build
supports for ComplexHalf reach these helpers on paths other dtypes do not take (after an identity
check on the result dtype, or in an `except TypeError` of a fast path): TensorIterator casts every
operand to ComplexHalf (`operand`), computes in complex<float> (opmath) and rounds each component of
the result back to float16 (`narrow`).
"""
import numpy as np

from ember.core import dtype as _dt
from ember.core.chalf import narrow, to_dtype, widen
from ember.kernels.meta.creation import not_implemented

C32 = _dt.CHALF_NP
_nd = np.ndarray
complex32 = _dt.complex32


def is_chalf(x):
    return isinstance(x, _nd) and x.dtype == C32


def any_chalf(*xs):
    for x in xs:
        if isinstance(x, _nd) and x.dtype == C32:
            return True
    return False


def astype(x, npd):
    """x.astype(npd) for an array x, where x or npd may be complex32."""
    if x.dtype == C32:
        return to_dtype(x, npd)
    if npd == C32:
        return narrow(x)
    return x.astype(npd)


def operand(x):
    """An array or number cast to complex32 (as TensorIterator casts it to the common dtype), then
    widened to complex64, where ComplexHalf kernels compute."""
    if isinstance(x, _nd) and x.dtype == C32:
        return widen(x)
    return widen(narrow(x))


def refuse(kernel):
    """torch's error of a CPU kernel that has no ComplexHalf instance."""
    return not_implemented(kernel, complex32)


__all__ = ["C32", "is_chalf", "any_chalf", "astype", "operand", "refuse", "narrow", "widen", "to_dtype"]
