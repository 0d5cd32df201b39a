"""Meta functions and argument checks of the special-function ops (polygamma, mvlgamma)."""
from ember.core import dtype as _dt
from ember.kernels.meta.pointwise import unary_float

_NP2DT = _dt.NP2DT


def polygamma_check(n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")


def mvlgamma_check(d, p):
    if d is _dt.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")


def inplace_check(r, a):
    """An explicit in-place kernel's result array r must cast to self's array a (same_kind)."""
    rd, ad = _NP2DT[r.dtype], _NP2DT[a.dtype]
    _dt.check_cast(rd, ad)


def polygamma(n, a):
    polygamma_check(n)
    return unary_float(a)


def polygamma_(a, n):
    polygamma_check(n)
    _inplace_dtype(a)


def _inplace_dtype(a):
    d = unary_float(a)[1]
    _dt.check_cast(d, a._dtype)


def mvlgamma(a, p):
    mvlgamma_check(a._dtype, p)
    return unary_float(a)

