"""complex32 (torch.chalf, "ComplexHalf") arrays: conversions between NumPy's numbers and the
structured dtype that holds them (see CHALF_NP in ember.core.dtype for why it is structured).

Every kernel that supports ComplexHalf goes through these: `widen` to complex64 (exact), compute
there (torch's opmath for ComplexHalf is complex<float>), `narrow` back, rounding each component
to float16 as c10::complex<c10::Half> does. Nothing here runs for other dtypes.
"""
import numpy as np

from ember.core.dtype import CHALF_NP

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_C64 = np.dtype(np.complex64)
_C128 = np.dtype(np.complex128)


def is_chalf(a):
    """Whether `a` (an ndarray) holds complex32."""
    return a.dtype == CHALF_NP


def widen(a):
    """A complex32 array as a new complex64 array of the same shape and layout (exact)."""
    r = np.empty_like(a, dtype=_C64)
    r.real = a["real"]
    r.imag = a["imag"]
    return r


def _half(x):
    """A real array (or number) rounded to float16 as c10::Half converts it: doubles through float
    (torch rounds twice there), everything else directly."""
    x = np.asarray(x)
    if x.dtype == _F64 or x.dtype.kind in "iuO":
        x = x.astype(_F32)
    return x.astype(_F16)


def narrow(x):
    """Any numeric array or Python/NumPy number as a new complex32 array (a 0-d one for a number)."""
    x = np.asarray(x)
    if x.dtype == CHALF_NP:
        return x.copy()
    if x.dtype.kind not in "biufc":
        if x.dtype.name != "bfloat16":
            raise TypeError(f"can't convert {x.dtype} to complex32")
        x = x.astype(_F32)  # exact
    r = np.empty_like(x, dtype=CHALF_NP)
    if x.dtype.kind == "c":
        r["real"] = _half(x.real)
        r["imag"] = _half(x.imag)
    else:
        r["real"] = _half(x)
        r["imag"] = 0
    return r


def value(v):
    """A Python number as a 0-d complex32 array (for fill_ and full)."""
    return narrow(np.asarray(complex(v), _C128) if isinstance(v, complex) else v)


def to_dtype(a, npd):
    """A complex32 array converted to NumPy dtype npd (complex -> real keeps the real part, as
    torch's copy does after its warning)."""
    if npd == CHALF_NP:
        return a.copy()
    c = widen(a)
    if npd.kind == "b":  # nonzero: either part
        return c != 0
    if npd.kind != "c":
        c = c.real
    return c.astype(npd)


def as_python(a):
    """A complex32 array's values as Python complex numbers (nested lists for .tolist, a complex for
    a 0-d array)."""
    return widen(a).tolist()
