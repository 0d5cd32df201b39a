"""igamma / igammac (torch.special.gammainc / gammaincc): the regularized incomplete gamma functions
P(a, x) and Q(a, x), on NumPy in float64 (float16/bfloat16/float32 results rounded from it).

ATen's edge values first (x < 0 or a < 0: NaN; a == 0; x == 0; infinite a or x), then the power series
of P for x < a + 1 and the Legendre continued fraction of Q (modified Lentz) otherwise, each to double
precision; the other function is 1 minus the computed one.
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.kernels.cpu import pointwise as _pw
from ember.kernels.cpu._promote import result_dtype

_lgamma = np.frompyfunc(math.lgamma, 1, 1)
_EPS = 1e-17
_TINY = 1e-300
_F64 = np.dtype(np.float64)


def _prefactor(a, x):
    """x^a e^-x / Gamma(a)."""
    return np.exp(a * np.log(x) - x - _lgamma(a).astype(np.float64))


def _p_series(a, x):
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    live = np.ones(a.shape, bool)
    for _ in range(100000):
        ap = ap + 1.0
        term = np.where(live, term * x / ap, 0.0)
        total = total + term
        live &= np.abs(term) > np.abs(total) * _EPS
        if not live.any():
            break
    return total * _prefactor(a, x)


def _q_fraction(a, x):
    b = x + 1.0 - a
    c = np.full(a.shape, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    live = np.ones(a.shape, bool)
    for i in range(1, 100000):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = np.where(np.abs(c) < _TINY, _TINY, c)
        d = 1.0 / d
        delta = d * c
        h = np.where(live, h * delta, h)
        live &= np.abs(delta - 1.0) > _EPS
        if not live.any():
            break
    return _prefactor(a, x) * h


def _regularized(a, x, upper):
    """ATen's calc_igamma / calc_igammac branch order (NaN a or x falls through the comparisons)."""
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)  # the values at x == 0 and x == inf
    out = np.full(a.shape, np.nan)
    rest = ~((x < 0) | (a < 0))
    a0 = rest & (a == 0)
    out[a0 & (x > 0)] = hi
    rest &= ~a0
    x0 = rest & (x == 0)
    out[x0] = lo
    rest &= ~x0
    ainf = rest & np.isinf(a)
    out[ainf & ~np.isinf(x)] = lo
    rest &= ~ainf
    xinf = rest & np.isinf(x)
    out[xinf] = hi
    rest &= ~xinf & ~np.isnan(a) & ~np.isnan(x)
    ser = rest & (x < a + 1.0)
    if ser.any():
        p = _p_series(a[ser], x[ser])
        out[ser] = 1.0 - p if upper else p
    frac = rest & ~ser
    if frac.any():
        q = _q_fraction(a[frac], x[frac])
        out[frac] = q if upper else 1.0 - q
    return out


def _kernel(kname, upper):
    op = kname[:-4]

    @_pw._broadcasting
    def kernel(a, x):
        _pw._need(a, op, "input", 1)  # both are Tensor in the schema: torch's parser refuses numbers
        _pw._need(x, op, "other", 2)
        rt = result_dtype(a, x)
        if rt.category != _dt.FLOAT:
            raise _pw._not_impl(kname, rt)
        aa, xx = np.broadcast_arrays(np.asarray(_pw._to(a, _F64)), np.asarray(_pw._to(x, _F64)))
        shape = aa.shape
        r = _regularized(aa.reshape(-1).copy(), xx.reshape(-1).copy(), upper)
        return r.reshape(shape).astype(rt.np)
    kernel.__name__ = kname
    return kernel


igamma = _kernel("igamma_cpu", False)
igammac = _kernel("igammac_cpu", True)

