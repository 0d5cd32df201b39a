"""ember.finfo and ember.iinfo: the numerical limits of floating and integer dtypes (torch.finfo)."""
import numpy as np

from ember.core import dtype as _dt


def _float_limits(d):
    if d is _dt.bfloat16:
        import ml_dtypes
        fi = ml_dtypes.finfo(ml_dtypes.bfloat16)
    else:
        fi = np.finfo(d.np)
    return (d.itemsize * 8, float(fi.eps), float(fi.max), float(fi.min),
            float(fi.smallest_normal), 10.0 ** -int(fi.precision), d.name)


_FLOAT = {}
_INT = {}


def _resolve(type, what):
    if type is None:
        return _dt.defaults.float if what == "finfo" else None
    if type is float:
        return _dt.float64
    if type is int:
        return _dt.int64
    if type is bool:
        return _dt.bool_
    if type is complex:
        return _dt.complex128
    if not isinstance(type, _dt.dtype):
        raise TypeError(f"{what}(): argument 'type' (position 1) must be ember.dtype, "
                        f"not {type.__class__.__name__}")
    return type


class finfo:
    """Machine limits of a floating point (or complex: its real part's) dtype."""
    __slots__ = ("_bits", "_eps", "_max", "_min", "_smallest_normal", "_resolution", "_dtype")
    __hash__ = None

    def __init__(self, type=None):
        d = _resolve(type, "finfo")
        if d.category == _dt.COMPLEX:
            d = d.to_real()
        if d.category != _dt.FLOAT:
            raise TypeError("ember.finfo() requires a floating point input type. Use ember.iinfo "
                            "to handle 'ember.finfo'")
        v = _FLOAT.get(d)
        if v is None:
            v = _FLOAT[d] = _float_limits(d)
        (self._bits, self._eps, self._max, self._min, self._smallest_normal, self._resolution,
         self._dtype) = v

    bits = property(lambda self: self._bits)
    eps = property(lambda self: self._eps)
    max = property(lambda self: self._max)
    min = property(lambda self: self._min)
    smallest_normal = property(lambda self: self._smallest_normal)
    tiny = property(lambda self: self._smallest_normal)
    resolution = property(lambda self: self._resolution)
    dtype = property(lambda self: self._dtype)

    def __eq__(self, other):
        if not isinstance(other, finfo):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self):
        return (f"finfo(resolution={self._resolution:g}, min={self._min:g}, max={self._max:g}, "
                f"eps={self._eps:g}, smallest_normal={self._smallest_normal:g}, "
                f"tiny={self._smallest_normal:g}, dtype={self._dtype})")

    __str__ = __repr__


class iinfo:
    """Machine limits of an integer dtype."""
    __slots__ = ("_bits", "_max", "_min", "_dtype")
    __hash__ = None

    def __init__(self, type):
        d = _resolve(type, "iinfo")
        if d is _dt.bool_:
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if d.category != _dt.INT:
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo to "
                            "handle 'ember.iinfo'")
        v = _INT.get(d)
        if v is None:
            ii = np.iinfo(d.np)
            v = _INT[d] = (d.itemsize * 8, int(ii.max), int(ii.min), d.name)
        self._bits, self._max, self._min, self._dtype = v

    bits = property(lambda self: self._bits)
    max = property(lambda self: self._max)
    min = property(lambda self: self._min)
    dtype = property(lambda self: self._dtype)

    def __eq__(self, other):
        if not isinstance(other, iinfo):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self):
        return f"iinfo(min={float(self._min):g}, max={float(self._max):g}, dtype={self._dtype})"

    __str__ = __repr__


__all__ = ["finfo", "iinfo"]
