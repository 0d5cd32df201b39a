"""Result dtypes for kernels that see arrays and Python scalars (ATen's TensorIterator rules)."""
import numpy as np

from ember.core import dtype as _dt

_nd = np.ndarray
_NP2DT = _dt.NP2DT
_cache = {}


def part(x):
    """(dtype, priority) of a kernel argument: dim>0 array 0, 0-d array 1, Python scalar 2."""
    if x.__class__ is _nd:
        return (_NP2DT[x.dtype], 0 if x.ndim else 1)
    if isinstance(x, np.ndarray):
        return (_NP2DT[x.dtype], 0 if x.ndim else 1)
    if isinstance(x, np.generic):
        return (_dt.scalar_dtype(x.item()), 2)
    return (_dt.scalar_dtype(x), 2)


def result_dtype(*xs):
    return _dt.result_type_of(tuple(part(x) for x in xs))


def cast(x, d):
    """x as an array or scalar of dtype d (no copy when it already is)."""
    npd = d.np
    if x.__class__ is _nd or isinstance(x, np.ndarray):
        if x.dtype == npd:
            return x
        if x.dtype == _dt.CHALF_NP or npd == _dt.CHALF_NP:  # complex32
            from ember.kernels.cpu._chalf import astype
            return astype(x, npd)
        return x.astype(npd)
    if d is _dt.complex32:
        from ember.core.chalf import narrow
        return narrow(x)
    if isinstance(x, complex) and d.category != _dt.COMPLEX:
        return np.asarray(x).astype(npd)
    if type(x) is int and d.category == _dt.INT:
        # PyTorch wraps an out-of-range integer scalar (int8 + 257); NumPy would raise
        return np.array(x, dtype=np.int64 if -2**63 <= x < 2**63 else np.uint64).astype(npd)
    return np.asarray(x, dtype=npd)


def float_dtype(x):
    """dtype a float-valued op (exp, sqrt, true division) computes in: ints become the default float."""
    d = part(x)[0] if not isinstance(x, _dt.dtype) else x
    return d if d.category >= _dt.FLOAT else _dt.defaults.float
