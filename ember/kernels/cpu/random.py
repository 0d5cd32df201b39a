"""Random kernels on the CPU: draws from the generator's NumPy PCG64 stream.

Values cannot equal PyTorch's (another bit generator); the distributions, value resolution
(uniform floats on a 2^-digits grid, so [from, to) holds in every dtype), dtypes, shapes and
checks follow ATen's (DistributionTemplates.h, Distributions.cpp)."""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.core.generator import rng as _rng
from ember.kernels.cpu._glue import _OVERLAP
from ember.kernels.meta.creation import (DIGITS, LIMITS, TMNAME, check_size, fmt_double,
                                         not_implemented)
from ember.kernels.meta.pointwise import broadcast_shapes
from ember.kernels.meta.random import (expand_check, multinomial_check, random_from_to_plan,
                                       randperm_check)

_NP2DT = _dt.NP2DT
_FLOAT, _COMPLEX, _INT, _BOOL = _dt.FLOAT, _dt.COMPLEX, _dt.INT, _dt.BOOL
_f32, _f64, _i64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)
_SQRT1_2 = math.sqrt(0.5)


def _real_of(d):
    return _dt.float32 if d is _dt.complex64 else _dt.float64


def _target(a):
    """The array an in-place random op writes: PyTorch refuses overlapping (expanded) outputs."""
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    return a


# ---- draws --------------------------------------------------------------------------------------
def _uniform(g, shape, d, lo=0.0, hi=1.0):
    """Uniform [lo, hi) values of real float dtype d, on ATen's 2^-digits grid."""
    name = d.name
    if name == "float64":
        r = g.random(shape)
    elif name == "float32":
        r = g.random(shape, dtype=_f32)
    else:  # float16 / bfloat16: k / 2^digits, computed in float32 as ATen does
        digits = DIGITS[name]
        r = g.integers(0, 1 << digits, shape, dtype=np.int32).astype(_f32) * np.float32(2.0 ** -digits)
    if lo != 0.0 or hi != 1.0:
        if name == "float64" or name == "float32":
            r = r * (hi - lo) + lo  # double accumulation
        else:
            r = r * np.float32(hi - lo) + np.float32(lo)
    return r.astype(d.np, copy=False)


def _standard_normal(g, shape, d):
    return g.standard_normal(shape, dtype=_f64 if d.name == "float64" else _f32)


def _normal(g, shape, d, mean=0.0, std=1.0):
    """N(mean, std) of dtype d; complex dtypes draw each part with std/sqrt(2) (and mean added)."""
    if d.category == _COMPLEX:
        r = _normal(g, tuple(shape) + (2,), _real_of(d), mean, std * _SQRT1_2)
        return r.view(d.np).reshape(shape)
    r = _standard_normal(g, shape, d)
    if std != 1.0:
        r *= std
    if mean != 0.0:
        r += mean
    return r.astype(d.np, copy=False)


def _complex_uniform(g, shape, d, lo, hi):
    r = _uniform(g, tuple(shape) + (2,), _real_of(d), lo, hi)
    return r.view(d.np).reshape(shape)


# ---- factories ----------------------------------------------------------------------------------
def rand(size, dtype=None, layout=None, device=None, pin_memory=None):
    return rand_generator(size, None, dtype)


def rand_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.defaults.float
    check_size(size)
    c = d.category
    g = _rng(generator)
    if c == _FLOAT:
        return _uniform(g, size, d)
    if c == _COMPLEX:
        return _complex_uniform(g, size, d, 0.0, 1.0)
    raise not_implemented("check_uniform_bounds", d)


def randn(size, dtype=None, layout=None, device=None, pin_memory=None):
    return randn_generator(size, None, dtype)


def randn_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.defaults.float
    check_size(size)
    if d.category < _FLOAT:
        raise not_implemented("normal_kernel_cpu", d)
    return _normal(_rng(generator), size, d)


def randint(high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(0, high, size, None, dtype)


def randint_generator(high, size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(0, high, size, generator, dtype)


def randint_low(low, high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low_generator(low, high, size, None, dtype)


def randint_low_generator(low, high, size, generator, dtype=None, layout=None, device=None,
                          pin_memory=None):
    d = dtype or _dt.int64
    check_size(size)
    frm, rng_ = random_from_to_plan(d, low, high)
    return _integers(_rng(generator), size, d, frm, rng_)


def _integers(g, shape, d, frm, span):
    """from + uniform integer in [0, span) (span None: the whole int64 range), as dtype d."""
    if span is None:
        r = g.integers(-(1 << 63), 1 << 63, shape, dtype=_i64)
    elif frm >= -(1 << 63) and frm + span <= 1 << 63:
        r = g.integers(frm, frm + span, shape, dtype=_i64)
    else:  # wraps around int64 (ATen adds in uint64)
        r = (g.integers(0, span, shape, dtype=np.uint64) + np.uint64(frm % (1 << 64))).view(_i64)
    if d is _dt.int64:
        return r
    if d.category == _BOOL:
        return r != 0
    return r.astype(d.np)


def randperm(n, dtype=None, layout=None, device=None, pin_memory=None):
    return randperm_generator(n, None, dtype)


def randperm_generator(n, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.int64
    randperm_check(n, d)
    if d.category in (_BOOL, _COMPLEX):
        raise not_implemented("randperm", d)
    r = _rng(generator).permutation(n)
    return r if d is _dt.int64 else r.astype(d.np)


# ---- normal -----------------------------------------------------------------------------------
def _check_std(std):
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {fmt_double(std)}")


def _check_std_tensor(std):
    if std.dtype.kind == "c":
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if std.size and not std.min() >= 0:
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _float_dtype(a, kernel="normal_kernel_cpu"):
    d = _NP2DT[a.dtype]
    if d.category < _FLOAT:
        raise not_implemented(kernel, d)
    return d


def normal_tensor_float(mean, std=1.0, generator=None):
    _check_std(std)
    d = _float_dtype(mean)
    out = _normal(_rng(generator), mean.shape, d, 0.0, std)
    np.add(out, mean, out=out, casting="unsafe")
    return out


def normal_float_tensor(mean, std, generator=None):
    _check_std_tensor(std)
    d = _float_dtype(std)
    out = _normal(_rng(generator), std.shape, d)
    np.multiply(out, std, out=out, casting="unsafe")
    np.add(out, mean, out=out, casting="unsafe")
    return out


def normal_tensor_tensor(mean, std, generator=None):
    _check_std_tensor(std)
    shape = broadcast_shapes(mean.shape, std.shape)
    d = _float_dtype(mean)
    out = _normal(_rng(generator), shape, d)
    np.multiply(out, std, out=out, casting="unsafe")
    np.add(out, mean, out=out, casting="unsafe")
    return out


def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None,
                       pin_memory=None):
    _check_std(std)
    d = dtype or _dt.defaults.float
    check_size(size)
    if d.category < _FLOAT:
        raise not_implemented("normal_kernel_cpu", d)
    return _normal(_rng(generator), size, d, mean, std)


# ---- bernoulli --------------------------------------------------------------------------------
_P_MSG = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
          "improved?  If so, please report an enhancement request to PyTorch.)")


def _check_p_tensor(p):
    d = _NP2DT[p.dtype]
    if d.category != _FLOAT:
        raise not_implemented("bernoulli_tensor_cpu_p_", d)
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise RuntimeError(_P_MSG)


def _check_p(p):
    if not (0 <= p <= 1):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={fmt_double(p)}")


def _bernoulli_draw(g, shape, p, npd):
    u = g.random(shape)
    return (u < p).astype(npd)


def bernoulli(self, generator=None):
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_tensor_cpu_self_", _NP2DT[self.dtype])
    _check_p_tensor(self)
    return _bernoulli_draw(_rng(generator), self.shape, self, self.dtype)


def bernoulli_p(self, p, generator=None):
    _check_p(p)
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_scalar_cpu_", _NP2DT[self.dtype])
    return _bernoulli_draw(_rng(generator), self.shape, p, self.dtype)


def bernoulli_tensor(self, p, generator=None):
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_tensor_cpu_self_", _NP2DT[self.dtype])
    if not isinstance(p, np.ndarray):
        p = np.asarray(p, dtype=_f64)
    expand_check(p.shape, self.shape)
    _check_p_tensor(p)
    return _bernoulli_draw(_rng(generator), self.shape, p, self.dtype)


def bernoulli_float_(self, p=0.5, generator=None):
    r = bernoulli_p(self, p, generator)
    _target(self)[...] = r


def bernoulli_tensor_(self, p, generator=None):
    r = bernoulli_tensor(self, p, generator)
    _target(self)[...] = r


# ---- multinomial ------------------------------------------------------------------------------
def multinomial(self, num_samples, replacement=False, generator=None):
    shape = multinomial_check(self.shape, _NP2DT[self.dtype], num_samples, replacement)
    n = num_samples
    p = self.astype(_f64) if self.dtype != _f64 else self
    p2 = p.reshape(1, -1) if p.ndim == 1 else p
    if p2.shape[0] == 0:
        return np.empty(shape, _i64)
    g = _rng(generator)
    if not replacement or n == 1:
        if not (np.all(p2 >= 0) and np.all(p2 < np.inf)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (p2.sum(axis=1) == 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # Gumbel trick as ATen: argmax / top-k of p / q with q ~ Exp(1)
        v = p2 / g.standard_exponential(p2.shape)
        if n == 1:
            r = v.argmax(axis=1)[:, None]
        else:
            r = np.argsort(-v, axis=1, kind="stable")[:, :n]
    else:
        if np.isnan(p2).any() or (p2 < 0).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if np.isinf(p2).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                               "infinity or NaN)")
        s = p2.sum(axis=1)
        if not (s > 0).all():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        rows, ncat = p2.shape
        cdf = np.cumsum(p2, axis=1) / s[:, None]
        cdf[:, -1] = 1.0
        off = np.arange(rows, dtype=_f64)[:, None]
        u = g.random((rows, n)) + off
        r = np.searchsorted((cdf + off).ravel(), u.ravel(), side="right").reshape(rows, n)
        r -= (np.arange(rows, dtype=_i64) * ncat)[:, None]
        np.minimum(r, ncat - 1, out=r)
    r = r.astype(_i64, copy=False)
    return r.reshape(shape)


# ---- in-place distributions -------------------------------------------------------------------
def uniform_(self, from_=0.0, to=1.0, generator=None):
    d = _NP2DT[self.dtype]
    c = d.category
    rd = _real_of(d) if c == _COMPLEX else d
    if c != _FLOAT and c != _COMPLEX:
        raise not_implemented("check_uniform_bounds", d)
    lo, hi = LIMITS[rd.name]
    name = TMNAME[rd.name]
    if not lo <= from_ <= hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lo <= to <= hi:
        raise RuntimeError(f"to is out of bounds for {name}")
    if not from_ <= to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={fmt_double(from_)} > to={fmt_double(to)}")
    if not to - from_ <= hi:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{rd._short}>::max(), but "
                           f"found to={fmt_double(to)} and from={fmt_double(from_)} which result in "
                           "to-from to exceed the limit")
    if self.size == 0:
        return
    g = _rng(generator)
    t = _target(self)
    t[...] = _complex_uniform(g, self.shape, d, from_, to) if c == _COMPLEX else \
        _uniform(g, self.shape, d, from_, to)


def normal_(self, mean=0.0, std=1.0, generator=None):
    _check_std(std)
    d = _float_dtype(self)
    if self.size == 0:
        return
    _target(self)[...] = _normal(_rng(generator), self.shape, d, mean, std)


def random_(self, generator=None):
    d = _NP2DT[self.dtype]
    c = d.category
    if c == _COMPLEX:
        raise not_implemented("random_kernel_cpu", d)
    if self.size == 0:
        return
    hi = (1 << DIGITS[d.name]) if c == _FLOAT else LIMITS[d.name][1]
    _target(self)[...] = _integers(_rng(generator), self.shape, d, 0, hi + 1)


def random_to(self, to, generator=None):
    random_from(self, 0, to, generator)


def random_from(self, from_, to=None, generator=None):
    d = _NP2DT[self.dtype]
    frm, span = random_from_to_plan(d, from_, to)
    if self.size == 0:
        return
    _target(self)[...] = _integers(_rng(generator), self.shape, d, frm, span)


def exponential_(self, lambd=1.0, generator=None):
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={fmt_double(lambd)}")
    d = _NP2DT[self.dtype]
    if d.category != _FLOAT:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {d._short}")
    if self.size == 0:
        return
    g = _rng(generator)
    r = g.standard_exponential(self.shape, dtype=_f64 if d.name == "float64" else _f32)
    if lambd != 1.0:
        r /= lambd
    _target(self)[...] = r


def geometric_(self, p, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={fmt_double(p)}")
    d = _NP2DT[self.dtype]
    if d.category in (_BOOL, _COMPLEX):
        raise not_implemented("geometric_cpu", d)
    if self.size == 0:
        return
    _target(self)[...] = _rng(generator).geometric(p, self.shape)


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={fmt_double(std)}")
    d = _NP2DT[self.dtype]
    if d.category != _FLOAT:
        raise not_implemented("log_normal_cpu", d)
    if self.size == 0:
        return
    r = _standard_normal(_rng(generator), self.shape, d)
    r *= std
    r += mean
    _target(self)[...] = np.exp(r)


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={fmt_double(sigma)}")
    d = _NP2DT[self.dtype]
    if d.category != _FLOAT:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must "
                           f"be a floating point but you specified {TMNAME[d.name]}")
    if self.size == 0:
        return
    r = _rng(generator).standard_cauchy(self.shape)
    _target(self)[...] = r * sigma + median
