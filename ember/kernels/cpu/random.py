"""Random kernels on the CPU: PyTorch's CPU streams, bit for bit.

Every kernel draws from the generator's mt19937 (ember/core/generator.py: Engine) and transforms
the words as ATen's CPU kernels do (core/TransformationHelper.h, core/DistributionsHelper.h,
native/cpu/DistributionTemplates.h, native/Distributions.cpp, TensorFactories.cpp): the same
words per element (32-bit or 64-bit by dtype and range), the same element order (TensorIterator's:
memory order of the output), the same size thresholds, and the same float arithmetic, including
the fused multiply-adds GCC emits in ATen's AVX2/AVX512 kernels and the glibc libm results of its
scalar transcendental calls (from Python's math module, which calls libm).

Paths, as torch 2.13's pip build takes them on an x86-64 CPU with AVX2 or AVX512 (checked against
it on AVX512; ATEN_CPU_CAPABILITY=default takes other float32 paths, not reproduced here):
- uniform_/rand: float32, float16, bfloat16 from one word's low 24 bits (x * (to - from) + from
  fused, in float), float64 from a 64-bit draw's low 53 bits; a value that rounds up to `to`
  becomes `from`.
- normal_/randn: numel >= 16 and contiguous: the Box-Muller fill over blocks of 16 uniforms
  (float32/float16/bfloat16 through normal_fill_AVX2, avx_mathfun's log256_ps/sincos256_ps
  replayed in float32; float16/bfloat16 draw uniforms only for whole blocks, then 16 more for the
  last 16 slots; float64 through normal_fill<double> with libm); otherwise the serial
  normal_distribution<double> with the generator's cached second sample; double results reach
  float16/bfloat16 through float.
- random_/randint: one 32-bit word per element, a 64-bit draw when range >= 2**28
  (random_from_to), or by dtype (random_: int64/float64 draw 64 bits).
- bernoulli_(float p) and dropout: the default kernel (uniform double < p). torch 2.11 on an Intel
  Xeon (with MKL) gave the same values as here, for 1 and 8 threads: no MKL (VSL_BRNG_MCG31) path
  is taken there.
- randperm: n < 2**32 / 20: swaps i <-> i + random() % (n - i) (replayed without a Python loop:
  pointer jumping, or the jitted loop).
- multinomial: without replacement the exponential_ (Gumbel) trick, argmax/topk of p / q; with
  replacement a float cumulative sum and one uniform double per sample, binary search.

Speed. The NumPy code is the reference and what the tests exercise. The float32 Box-Muller fill
costs about 120 ufunc calls whatever the size (~80 us on an idle core for randn(8, 8)); a ragged
end is transformed with the whole blocks in one pass; fewer than 16 normals (the serial path) use
Python floats. With numba installed (optional, imported on first use), fills of at least
_NUMBA_MIN elements (randn / normal_ float32, float16, bfloat16; float64 with mean 0, std 1) and
randperm's swap loop run jitted copies of the same arithmetic (branch-free, so LLVM vectorises the
float32 kernel; float64 calls libm per element like ATen, and is not jitted when numba would use
Intel SVML), fused with the mt19937 (core/generator.py) chunk by chunk in reused scratch.
EMBER_RNG_NUMBA=0 turns the jitted paths off. benchmarks/rng.py measures them against torch.
"""
import math
import os
import threading

import numpy as np

from ember.core import dtype as _dt
from ember.core.generator import _nb_mt19937
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


_REAL_NP = {np.dtype(np.complex64): _f32, np.dtype(np.complex128): _f64, _dt.CHALF_NP: np.dtype(np.float16)}


def _real_of(d):
    return d.to_real()


def _target(a):
    """The array an in-place random op writes: PyTorch refuses overlapping (expanded) outputs."""
    if not a.flags.writeable:
        raise RuntimeError(_OVERLAP)
    return a


_MASK24, _MASK53 = np.uint64((1 << 24) - 1), np.uint64((1 << 53) - 1)
_F24, _F53 = np.float32(2.0 ** -24), 2.0 ** -53
_U32 = np.uint64(32)


def _iter_view(a):
    """A view of `a` whose C-order walk is TensorIterator's: memory order (innermost = smallest stride)."""
    if a.flags.c_contiguous or a.ndim < 2:
        return a
    st = a.strides
    return a.transpose(sorted(range(a.ndim), key=lambda i: -st[i]))


def _fill(t, vals):
    """Write vals (in draw order) into target t in TensorIterator's order. A double goes to
    float16/bfloat16 through float, as c10::Half(double) / c10::BFloat16(double) do."""
    if vals.dtype == _f64 and t.dtype.itemsize == 2 and t.dtype.kind in "fV":
        vals = vals.astype(_f32)
    v = _iter_view(t)
    v[...] = vals.reshape(v.shape)


def _contig(a):
    return a.flags.c_contiguous


# ---- exact float arithmetic ---------------------------------------------------------------------
def _fma32(a, b, c):
    """fmaf(a, b, c) for float32 operands: exact product in double, one rounding (ties aside)."""
    return (np.asarray(a, _f64) * np.asarray(b, _f64) + np.asarray(c, _f64)).astype(_f32)


def _fma64(a, b, c):
    """fma(a, b, c) in double: Dekker's exact product and Knuth's two-sum, then one final rounding
    (huge scalar b, c are scaled by a power of two first, so the splitting cannot overflow)."""
    if np.ndim(b) == 0 and np.ndim(c) == 0:
        big = max(abs(float(b)), abs(float(c)))
        if big > 2.0 ** 500 and math.isfinite(big):
            k = math.frexp(big)[1]
            return _fma64(a, math.ldexp(float(b), -k), math.ldexp(float(c), -k)) * 2.0 ** k \
                if k < 1000 else np.ldexp(_fma64(a, math.ldexp(float(b), -k), math.ldexp(float(c), -k)), k)
    a = np.asarray(a, _f64)
    p = a * b
    f = 134217729.0
    ah = a * f
    ah = ah - (ah - a)
    al = a - ah
    bh = b * f
    bh = bh - (bh - b)
    bl = b - bh
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s_ = p + c
    bb = s_ - p
    es = (p - (s_ - bb)) + (c - bb)
    r = s_ + (es + ep)
    if r.ndim:
        bad = ~np.isfinite(r)
        if bad.any():
            r[bad] = (p + c)[bad] if np.ndim(p + c) else p + c
    elif not math.isfinite(r):
        r = p + c
    return r


def _libm(fn, x):
    """fn (a math-module function: glibc's double libm) over a float64 array."""
    ld = _LD.get(fn)
    if ld is not None and x.size > 64:
        return _libm_ld(fn, *ld, x)
    return np.fromiter(map(fn, x.ravel().tolist()), _f64, x.size).reshape(x.shape)


def _libm_ld(fn, ldfn, easy, x):
    """glibc's fn over a big array, fast: the long double result (64-bit mantissa, error ~2^-11
    double ulp) rounded to double is the correctly rounded value r, which glibc returns whenever
    the exact value lies within `easy` ulp of r and glibc's error bound is under 1 - easy ulp
    (glibc 2.28+ log: 0.519 ulp, so easy = 0.47: 6% of the values ask glibc; exp, tan: 0.35);
    the others, and results at a power of two (where the ulp below is half), ask glibc."""
    with np.errstate(all="ignore"):
        wide = ldfn(x.astype(np.longdouble))
        r = wide.astype(_f64)
        frac = np.abs((wide - r) / np.spacing(r).astype(np.longdouble)).astype(_f64)
    hard = ~(frac < easy)  # NaN / inf / near a midpoint: glibc itself
    hard |= np.abs(np.frexp(r)[0]) == 0.5
    if hard.any():
        r[hard] = np.fromiter(map(fn, x[hard].tolist()), _f64, int(hard.sum()))
    return r


def _safe_exp(v):
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


_LD = {math.log: (np.log, 0.47), _safe_exp: (np.exp, 0.35), math.tan: (np.tan, 0.35)}


# ---- uniform words -> values (TransformationHelper.h) -------------------------------------------
def _u24(e, n):
    """uniform_real_distribution<float>(0, 1): 24 low bits of one 32-bit word, times 2^-24."""
    w = e.random(n).view(_i64)
    w &= 0xFFFFFF
    r = w.astype(_f32)
    r *= _F24
    return r


def _u53(e, n):
    """uniform_real_distribution<double>(0, 1): 53 low bits of one 64-bit draw, times 2^-53."""
    return (e.random64(n) & _MASK53).astype(_f64) * _F53


def _ured(e, n, digits):
    """uniform_real_distribution<Half/BFloat16>(0, 1) (computed in float): k / 2^digits."""
    return (e.random(n) & np.uint64((1 << digits) - 1)).astype(_f32) * np.float32(2.0 ** -digits)


def _uniform_vals(e, n, d, lo=0.0, hi=1.0):
    """n draws of uniform_kernel(from, to) for real float dtype d, as ATen computes them: a float
    (24-bit) or double (53-bit) uniform x, x * (to - from) + from (fused), rounded to d; a value
    that rounds up to `to` becomes `from` (keeps [from, to))."""
    name = d.name
    if name == "float64":
        x = _u53(e, n)
        if lo == 0.0 and hi == 1.0:
            return x
        v = _fma64(x, hi - lo, lo)
    else:
        x = _u24(e, n)
        if lo == 0.0 and hi == 1.0:
            v = x
        else:
            f, t = np.float32(lo), np.float32(hi)
            v = _fma32(x, np.float32(t - f), f)
        if name == "float32" and lo == 0.0 and hi == 1.0:
            return v
    v = v.astype(d.np, copy=False)
    top = np.array(hi).astype(d.np)
    hit = v >= top
    if hit.any():
        v[hit] = np.array(lo).astype(d.np)
    return v


# ---- normal (DistributionTemplates.h: normal_kernel) --------------------------------------------
_TWO_PI = 2.0 * math.pi


def _normal_serial(e, n, mean=0.0, std=1.0):
    """n draws of normal_distribution<double>(mean, std), with the generator's cached sample."""
    out = np.empty(n, _f64)
    i = 0
    if n and e.next_double is not None:
        out[0] = e.next_double
        e.next_double = None
        i = 1
    m = n - i
    if 0 < m <= 32:  # a few pairs: Python floats (the same double operations, libm's cos / sin)
        w = e.random(4 * ((m + 1) // 2)).tolist()
        vals = []
        log1p, sqrt, cos, sin = math.log1p, math.sqrt, math.cos, math.sin
        for q in range(0, len(w), 4):
            u1 = (((w[q] << 32) | w[q + 1]) & 0x1FFFFFFFFFFFFF) * _F53
            u2 = (((w[q + 2] << 32) | w[q + 3]) & 0x1FFFFFFFFFFFFF) * _F53
            r = sqrt(-2.0 * log1p(-u2))
            th = _TWO_PI * u1
            vals.append(r * cos(th))
            vals.append(r * sin(th))
        out[i:] = vals[:m]
        if m & 1:
            e.next_double = vals[-1]
    elif m > 0:
        k = (m + 1) // 2
        u = _u53(e, 2 * k)
        r = np.sqrt(-2.0 * _libm(math.log1p, -u[1::2]))
        th = _TWO_PI * u[0::2]
        pair = np.empty(2 * k, _f64)
        pair[0::2] = r * np.cos(th)
        pair[1::2] = r * np.sin(th)
        out[i:] = pair[:m]
        if m & 1:
            e.next_double = float(pair[-1])
    if std != 1.0 or mean != 0.0:
        out = _fma64(out, std, mean)
    return out


_C = np.float32
_LOG_P = tuple(_C(c) for c in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                               1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                               3.3333331174E-1))
_COS_P = (_C(2.443315711809948E-005), _C(-1.388731625493765E-003), _C(4.166664568298827E-002))
_SIN_P = (_C(-1.9515295891E-4), _C(8.3321608736E-3), _C(-1.6666654611E-1))
_DP = (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8)  # float32 values
_DP32 = tuple(_C(v) for v in _DP)
_ROWS = 4096  # rows of 16 per chunk: the working set stays in cache
_Q1F = _C(-2.12194440e-4)
_SQRTHF, _FOPI = _C(0.707106781186547524), _C(1.27323954473516)
_TWO_PI32 = _C(_TWO_PI)


class _Avx2Fill:
    """normal_fill_16_AVX2 over rows of 16 float32 uniforms, in place: avx_mathfun.h's log256_ps
    and sincos256_ps (Cephes) lane by lane in float32, with the fused multiply-adds GCC emits for
    them (a fma is a float64 product and sum rounded once to float32). Works chunk by chunk on
    preallocated buffers, reused per thread (`_filler`). (Keeping the polynomial state in float64
    arrays, rounded by cast pairs, with the ln / cos / sin polynomials stacked, measured no faster
    at small sizes and 1.35x slower at 1M: the float64 state doubles the memory traffic.)"""

    def __init__(self, n):
        self.n = n
        f32 = lambda: np.empty(n, _f32)  # noqa: E731
        self.a, self.b, self.c, self.d, self.x = f32(), f32(), f32(), f32(), f32()
        self.t, self.x64 = np.empty(n), np.empty(n)
        self.i, self.j, self.i2b = (np.empty(n, np.int32) for _ in range(3))
        self.m = np.empty(n, bool)

    def fma(self, y, x64, c, out):
        """out = fmaf(y, x, c) with x given as float64 (c a scalar or float32 array)."""
        t = self.t[:y.size]
        np.multiply(y, x64, out=t)
        np.add(t, c, out=t)                       # summed in double (in place: no casting loop),
        np.copyto(out, t, casting="unsafe")       # rounded once to float
        return out

    def log(self, u, out):
        """log256_ps(u) for u in (0, 1] (no zeros, no denormals: u = 1 - k/2^24)."""
        k = u.size
        bits = u.view(np.int32)
        e, x, y, z = self.b[:k], self.c[:k], self.d[:k], self.x[:k]
        i, mask, x64 = self.i[:k], self.m[:k], self.x64[:k]
        np.right_shift(bits, 23, out=i)
        np.subtract(i, 126, out=i)
        np.copyto(e, i, casting="unsafe")                     # e = (exp - 127) + 1
        np.bitwise_and(bits, ~0x7F800000, out=i)
        np.bitwise_or(i, 0x3F000000, out=i)
        xv = i.view(_f32)                                     # mantissa in [0.5, 1)
        np.less(xv, _C(0.707106781186547524), out=mask)
        np.subtract(xv, _C(1), out=x)
        np.subtract(e, mask, out=e, casting="unsafe")
        np.multiply(xv, mask, out=y, casting="unsafe")        # x & mask
        np.add(x, y, out=x)
        np.multiply(x, x, out=z)
        np.copyto(x64, x)
        y[...] = _LOG_P[0]
        for c in _LOG_P[1:]:
            self.fma(y, x64, c, y)
        np.multiply(y, x, out=y)
        np.multiply(e, _C(-2.12194440e-4), out=out)
        np.copyto(x64, z)
        self.fma(y, x64, out, y)                              # y * z + e * q1
        np.multiply(z, _C(0.5), out=z)
        np.subtract(y, z, out=y)
        np.add(x, y, out=x)
        np.copyto(x64, e)
        t = self.t[:k]                                        # e * q2 + x
        np.multiply(e, 0.693359375, out=t, dtype=_f64)
        np.add(t, x, out=t)
        np.copyto(out, t, casting="unsafe")
        return out

    def sincos(self, th, s_out, c_out):
        """sincos256_ps(th) for th >= 0."""
        k = th.size
        j, i2 = self.i[:k], self.j[:k]
        x, y, z, ys = self.b[:k], self.c[:k], self.d[:k], self.x[:k]
        x64 = self.x64[:k]
        np.multiply(th, _C(1.27323954473516), out=y)
        np.copyto(j, y, casting="unsafe")                     # truncation
        np.add(j, 1, out=j)
        np.bitwise_and(j, ~1, out=j)
        np.copyto(x64, j)                                     # y = float(j), exact
        np.copyto(x, th)
        for dp in _DP:
            t = self.t[:k]
            np.multiply(x64, dp, out=t)
            np.add(t, x, out=t)
            np.copyto(x, t, casting="unsafe")
        np.multiply(x, x, out=z)
        z64 = self.x64[:k]
        np.copyto(z64, z)
        # cosine polynomial
        y[...] = _COS_P[0]
        self.fma(y, z64, _COS_P[1], y)
        self.fma(y, z64, _COS_P[2], y)
        np.multiply(y, z, out=y)
        np.multiply(z, _C(-0.5), out=c_out)
        self.fma(y, z64, c_out, y)                            # y * z - z * 0.5
        np.add(y, _C(1), out=y)
        # sine polynomial
        ys[...] = _SIN_P[0]
        self.fma(ys, z64, _SIN_P[1], ys)
        self.fma(ys, z64, _SIN_P[2], ys)
        np.multiply(ys, z, out=ys)
        np.copyto(z64, x)
        self.fma(ys, z64, x, ys)                              # ys * x + x
        # select and sign by bit masks, as the AVX code does (int32 lanes)
        pm, t1 = i2, self.i2b[:k]
        np.bitwise_and(j, 2, out=pm)
        np.right_shift(pm, 1, out=pm)
        np.subtract(pm, 1, out=pm)                            # all ones where (j & 2) == 0
        yi, ysi = y.view(np.int32), ys.view(np.int32)
        si, ci = s_out.view(np.int32), c_out.view(np.int32)
        np.bitwise_and(ysi, pm, out=si)
        np.invert(pm, out=t1)
        np.bitwise_and(yi, t1, out=t1)
        np.bitwise_or(si, t1, out=si)                         # sin: poly ? ys : y
        np.bitwise_and(yi, pm, out=ci)
        np.invert(pm, out=t1)
        np.bitwise_and(ysi, t1, out=t1)
        np.bitwise_or(ci, t1, out=ci)                         # cos: poly ? y : ys
        np.bitwise_and(j, 4, out=t1)
        np.left_shift(t1, 29, out=t1)
        np.bitwise_xor(si, t1, out=si)
        np.subtract(j, 2, out=t1)
        np.invert(t1, out=t1)
        np.bitwise_and(t1, 4, out=t1)
        np.left_shift(t1, 29, out=t1)
        np.bitwise_xor(ci, t1, out=ci)

    def __call__(self, rows, mean, std):
        """rows: (r, 16) float32, transformed in place."""
        r = rows.shape[0]
        k = r * 8
        u1 = self.a[:k].reshape(r, 8)
        np.subtract(_C(1), rows[:, :8], out=u1)
        rad = self.a[:k]
        self.log(rad, rad)
        np.multiply(rad, _C(-2), out=rad)
        np.sqrt(rad, out=rad)
        th = np.multiply(rows[:, 8:], _C(_TWO_PI)).reshape(-1)
        s, c = np.empty(k, _f32), np.empty(k, _f32)
        self.sincos(th, s, c)
        np.multiply(rad, c, out=c)
        np.multiply(rad, s, out=s)
        if mean != 0.0 or std != 1.0:
            m, sd = _C(mean), _C(std)
            c = _fma32(c, sd, m)
            s = _fma32(s, sd, m)
        rows[:, :8] = c.reshape(r, 8)
        rows[:, 8:] = s.reshape(r, 8)


_tls = threading.local()


def _filler(k):
    """This thread's _Avx2Fill with room for k lanes (grown by powers of two, up to a chunk)."""
    f = getattr(_tls, "fill", None)
    if f is None or f.n < k:
        f = _tls.fill = _Avx2Fill(min(max(1 << (k - 1).bit_length(), 64), _ROWS * 8))
    return f


# ---- optional numba kernels (large fills only; the NumPy code above is the reference) ----------
# elements: with numba installed the jitted kernels serve fills at least this big (EMBER_RNG_NUMBA=0:
# never; EMBER_RNG_NUMBA_MIN moves the bound: the NumPy path pays ~120 ufunc calls per fill)
_NUMBA_MIN = int(os.environ.get("EMBER_RNG_NUMBA_MIN", 4096))
_NB = None


def _nb_fill16_f32(bits, mb, mf, th, co, so, ms, sd, mn):
    """_Avx2Fill lane by lane over flat lanes (the same float32 roundings and fused multiply-adds:
    _nb_fma32 is LLVM's fma, one rounding, as GCC's vfmadd), branch-free so that LLVM vectorises
    it. bits: the int32 view of u1 = 1 - u (first
    halves of the rows); mb / mf: int32 scratch and its float32 view; th: 2 pi u (second halves);
    co / so: the cos and sin outputs."""
    n = bits.shape[0]
    for i in range(n):
        mb[i] = (bits[i] & ~0x7F800000) | 0x3F000000
    f1 = np.float32(1.0)
    for i in range(n):
        xm = mf[i]
        e = np.float32((bits[i] >> 23) - 126)
        lt = xm < _SQRTHF
        e = e - f1 if lt else e
        x = xm - f1
        x = x + xm if lt else x
        z = x * x
        y = _LOG_P[0]
        y = _nb_fma32(y, x, _LOG_P[1])
        y = _nb_fma32(y, x, _LOG_P[2])
        y = _nb_fma32(y, x, _LOG_P[3])
        y = _nb_fma32(y, x, _LOG_P[4])
        y = _nb_fma32(y, x, _LOG_P[5])
        y = _nb_fma32(y, x, _LOG_P[6])
        y = _nb_fma32(y, x, _LOG_P[7])
        y = _nb_fma32(y, x, _LOG_P[8])
        y = y * x
        eq = e * _Q1F
        y = _nb_fma32(y, z, eq)
        y = y - z * np.float32(0.5)
        x = x + y
        ln = _nb_fma32(e, np.float32(0.693359375), x)
        rad = np.float32(np.sqrt(np.float64(ln * np.float32(-2.0))))
        t = th[i]
        j = np.int32(t * _FOPI)
        j = (j + 1) & ~1
        jf = np.float32(j)
        xs = _nb_fma32(jf, _DP32[0], t)
        xs = _nb_fma32(jf, _DP32[1], xs)
        xs = _nb_fma32(jf, _DP32[2], xs)
        z = xs * xs
        yc = _COS_P[0]
        yc = _nb_fma32(yc, z, _COS_P[1])
        yc = _nb_fma32(yc, z, _COS_P[2])
        yc = yc * z
        yc = _nb_fma32(yc, z, z * np.float32(-0.5))
        yc = yc + f1
        ys = _SIN_P[0]
        ys = _nb_fma32(ys, z, _SIN_P[1])
        ys = _nb_fma32(ys, z, _SIN_P[2])
        ys = ys * z
        ys = _nb_fma32(ys, xs, xs)
        sw = (j & 2) != 0
        sv = yc if sw else ys
        cv = ys if sw else yc
        sv = -sv if (j & 4) != 0 else sv
        cv = -cv if ((j - 2) & 4) == 0 else cv
        co[i] = rad * cv
        so[i] = rad * sv
    if ms:
        for i in range(n):
            co[i] = _nb_fma32(co[i], np.float32(sd), np.float32(mn))
            so[i] = _nb_fma32(so[i], np.float32(sd), np.float32(mn))


def _nb_words32(words, u1, th):
    """Rows of 16 mt19937 words -> the fill's inputs: u1 = 1 - u (first halves), th = 2 pi u."""
    f1, f24 = np.float32(1.0), np.float32(2.0 ** -24)
    for rr in range(words.shape[0]):
        for ll in range(8):
            u1[rr * 8 + ll] = f1 - np.float32(words[rr, ll] & 0xFFFFFF) * f24
            th[rr * 8 + ll] = (np.float32(words[rr, ll + 8] & 0xFFFFFF) * f24) * _TWO_PI32


def _nb_rows(co, so, out):
    """The fill's cos / sin lanes back into rows of 16."""
    for rr in range(out.shape[0]):
        for ll in range(8):
            out[rr, ll] = co[rr * 8 + ll]
            out[rr, ll + 8] = so[rr * 8 + ll]


# the jitted kernels the fused ones call (bound by _numba())
_jit_mt = _jit_words32 = _jit_rows = _jit_fill32 = _jit_randn64 = _nb_fma32 = None


def _nb_randn32_rows(key, pos, out, w, u1, bits, mb, mf, th, co, so, ms, sd, mn):
    """out (r, 16) float32 = the float32 fill of r rows of fresh mt19937 words, chunk by chunk in
    the scratch arrays (w: 16 words per chunk row; the rest: 8 lanes per chunk row); returns the
    generator's new position (key is updated in place)."""
    r = out.shape[0]
    c0 = 0
    while c0 < r:
        m = min(u1.shape[0] // 8, w.shape[0] // 16, r - c0)
        k = 8 * m
        pos = _jit_mt(key, pos, w[:16 * m])
        _jit_words32(w[:16 * m].reshape(m, 16), u1[:k], th[:k])
        _jit_fill32(bits[:k], mb[:k], mf[:k], th[:k], co[:k], so[:k], ms, sd, mn)
        _jit_rows(co[:k], so[:k], out[c0:c0 + m])
        c0 += m
    return pos


def _nb_randn64_rows(key, pos, out, w):
    """out (r, 16) float64 = the float64 fill (mean 0, std 1) of r rows of fresh words (two per
    uniform), chunk by chunk in the scratch w; returns the new position."""
    r = out.shape[0]
    c0 = 0
    while c0 < r:
        m = min(w.shape[0] // 32, r - c0)
        pos = _jit_mt(key, pos, w[:32 * m])
        _jit_randn64(w[:32 * m], out[c0:c0 + m])
        c0 += m
    return pos


def _nb_randn64(w, out):
    """randn float64 (normal_fill<double>, mean 0, std 1) from mt19937 words: two per uniform
    (random64's hi, lo; its low 53 bits), rows of 16 uniforms; libm's log, sqrt, cos, sin."""
    f53 = 2.0 ** -53
    for rr in range(out.shape[0]):
        for ll in range(8):
            a = 32 * rr + 2 * ll
            b = a + 16
            u = np.float64(((w[a] << 32) | w[a + 1]) & 0x1FFFFFFFFFFFFF) * f53
            v = np.float64(((w[b] << 32) | w[b + 1]) & 0x1FFFFFFFFFFFFF) * f53
            rad = math.sqrt(-2.0 * math.log(1.0 - u))
            th = _TWO_PI * v
            out[rr, ll] = rad * math.cos(th)
            out[rr, ll + 8] = rad * math.sin(th)


_M53U, _S32U = np.uint64((1 << 53) - 1), np.uint64(32)


def _nb_bernoulli(key, pos, out, p, w):
    """out[i] = (uniform double < p) for flat out, bernoulli_scalar_kernel_default's draws: a
    64-bit word of two fresh mt19937 words (hi, lo), its 53 low bits times 2^-53; chunk by chunk
    through scratch w (uint64). Returns the generator's new position."""
    n = out.shape[0]
    i = 0
    while i < n:
        m = min(w.shape[0] // 2, n - i)
        pos = _jit_mt(key, pos, w[:2 * m])
        for j in range(m):
            v = ((w[2 * j] << _S32U) | w[2 * j + 1]) & _M53U
            out[i + j] = 1 if np.float64(v) * 1.1102230246251565e-16 < p else 0
        i += m
    return pos


def _nb_swaps(z, out):
    """randperm_cpu's swap loop: slot i <-> slot i + z[i]."""
    for i in range(z.shape[0]):
        k = i + z[i]
        t = out[i]
        out[i] = out[k]
        out[k] = t


def _jitted(n):
    """Whether a fill of n elements takes the jitted kernels: from _NUMBA_MIN elements, or from 16
    once this process has numba loaded (a big draw paid for its import and cache: small fills then
    cost ~10 us instead of the NumPy path's ~120 ufunc calls)."""
    return (n >= _NUMBA_MIN or (_NB and n >= 16)) and _numba()


def _fma32_intrinsic():
    """fmaf for the jitted kernels: LLVM's llvm.fma.f32 (one rounding; a vfmadd where the CPU has
    FMA, which is what GCC emits in ATen's AVX2 kernels)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def fma32(typingctx, a, b, c):
        def codegen(context, builder, signature, args):
            f = ir.FloatType()
            fn = builder.module.declare_intrinsic("llvm.fma", [f], ir.FunctionType(f, [f, f, f]))
            return builder.call(fn, args)
        return types.float32(types.float32, types.float32, types.float32), codegen
    return fma32


def _numba():
    """The jitted kernels, or False without numba (or with EMBER_RNG_NUMBA=0)."""
    global _NB
    if _NB is None:
        _NB = False
        if os.environ.get("EMBER_RNG_NUMBA", "1") != "0":
            try:
                import numba  # lazy: optional accelerator, only for large fills
            except ImportError:
                return _NB
            jit = numba.njit(cache=True, nogil=True)
            # with Intel SVML numba may vectorise math.log / cos / sin with SVML's: not glibc's
            f64 = None if numba.config.USING_SVML else jit(_nb_randn64)
            g = globals()  # the fused kernels call these by their global names
            g["_nb_fma32"] = _fma32_intrinsic()
            g["_jit_mt"] = jit(_nb_mt19937)
            g["_jit_words32"], g["_jit_rows"] = jit(_nb_words32), jit(_nb_rows)
            g["_jit_fill32"], g["_jit_randn64"] = jit(_nb_fill16_f32), f64
            _NB = (g["_jit_fill32"], f64 and jit(_nb_randn64_rows), jit(_nb_swaps),
                   jit(_nb_randn32_rows), g["_jit_mt"], jit(_nb_bernoulli))
    return _NB


def _fill16_avx2(blocks, mean, std):
    """normal_fill_16_AVX2 over the rows of `blocks` ((r, 16) float32), in place, by chunks."""
    r = blocks.shape[0]
    if _jitted(r * 16):
        ms = mean != 0.0 or std != 1.0
        u1 = np.subtract(_C(1), blocks[:, :8]).reshape(-1)
        th = np.multiply(blocks[:, 8:], _TWO_PI32).reshape(-1)
        mb = np.empty(u1.shape, np.int32)
        co, so = np.empty_like(u1), np.empty_like(u1)
        _NB[0](u1.view(np.int32), mb, mb.view(_f32), th, co, so, ms, float(_C(std)), float(_C(mean)))
        blocks[:, :8] = co.reshape(r, 8)
        blocks[:, 8:] = so.reshape(r, 8)
        return
    f = _filler(min(r, _ROWS) * 8)
    for i in range(0, r, _ROWS):
        f(blocks[i:i + _ROWS], mean, std)


def _fill16_double(blocks, mean, std):
    u1 = 1.0 - blocks[:, :8]
    radius = np.sqrt(-2.0 * _libm(math.log, u1))
    th = _TWO_PI * blocks[:, 8:]
    if std == 1.0 and mean == 0.0:
        blocks[:, :8] = radius * np.cos(th)
        blocks[:, 8:] = radius * np.sin(th)
    else:
        blocks[:, :8] = _fma64(radius * np.cos(th), std, mean)
        blocks[:, 8:] = _fma64(radius * np.sin(th), std, mean)


_CHUNK = 1024  # rows of 16 per chunk in the fused kernels


def _scratch():
    """This thread's scratch arrays for the fused kernels (a few hundred KiB, reused)."""
    sc = getattr(_tls, "scratch", None)
    if sc is None:
        lanes = 8 * _CHUNK
        u1, mb = np.empty(lanes, _f32), np.empty(lanes, np.int32)
        sc = _tls.scratch = (np.empty(32 * _CHUNK, np.uint64), u1, u1.view(np.int32), mb,
                             mb.view(_f32), np.empty(lanes, _f32), np.empty(lanes, _f32),
                             np.empty(lanes, _f32))
    return sc


def _randn_numba(e, n, full, d, mean, std):
    """_normal_fill (float32; float64 with mean 0, std 1) straight from the mt19937 state: the
    words, the uniforms and the transform chunk by chunk in reused scratch (no n-sized
    temporaries), then the ragged end: n - full words skipped, 16 fresh ones for the last 16."""
    f32 = d.name == "float32"
    sc = _scratch()
    k = n if full == n else full + 16
    out = np.empty(k, _f32 if f32 else _f64)
    rows = out.reshape(-1, 16)
    per = 1 if f32 else 2
    a = (sc[0], sc[1], sc[2], sc[3], sc[4], sc[5], sc[6], sc[7], mean != 0.0 or std != 1.0,
         float(_C(std)), float(_C(mean))) if f32 else (sc[0],)
    run = _NB[3] if f32 else _NB[1]
    with e.bg.lock:  # as NumPy's random_raw: the kernels run without the GIL
        key, pos = e.mt_state()
        pos = run(key, pos, rows[:full // 16], *a)
        if full != n:
            pos = _NB[4](key, pos, sc[0][:per * (n - full)])  # the ragged draws, overwritten below
            pos = run(key, pos, rows[full // 16:], *a)
        e.set_mt_state(key, pos)
    if full != n:
        out[n - 16:n] = out[full:]
        out = out[:n]
    return out


def _normal_fill(e, n, d, mean, std):
    """normal_fill / normal_fill_AVX2: n uniforms, Box-Muller in blocks of 16 (n >= 16); a ragged
    end redraws 16 fresh uniforms for the last 16 slots. float16/bfloat16 go through the float32
    kernel, drawing uniforms only for the whole blocks before the redrawn last 16. The redrawn
    block is transformed with the others (one pass): it is moved next to the whole blocks."""
    name = d.name
    if name == "float64":
        draw, fill = _u53, _fill16_double
    else:
        draw, fill = _u24, _fill16_avx2
    full = n - n % 16
    if _jitted(n):
        if name == "float32" or (name == "float64" and mean == 0.0 and std == 1.0 and _NB[1]):
            return _randn_numba(e, n, full, d, mean, std)
    if full == n:
        data = draw(e, n)
        fill(data.reshape(-1, 16), mean, std)
        return data
    if name in ("float32", "float64"):
        data = draw(e, n + 16)                     # n uniforms, then the 16 of the last block
        data[full:full + 16] = data[n:]
        fill(data[:full + 16].reshape(-1, 16), mean, std)
        data[n - 16:n] = data[full:full + 16]
        return data[:n]
    data = draw(e, full + 16)
    fill(data.reshape(-1, 16), mean, std)
    out = np.empty(n, _f32)
    out[:n - 16] = data[:n - 16]
    out[n - 16:] = data[full:]
    return out


def _normal_vals(e, t, d, mean, std, shape=None):
    """normal_kernel's values for target array t (dtype d real), in t's iteration order; with
    `shape`, for a new contiguous array of that shape (returned shaped)."""
    if shape is not None:
        n = math.prod(shape)
        v = _normal_fill(e, n, d, mean, std) if n >= 16 else _normal_serial(e, n, mean, std)
        if v.dtype == _f64 and d.np.itemsize == 2:
            v = v.astype(_f32)
        return v.reshape(tuple(shape))
    n = t.size
    if n >= 16 and _contig(t):
        return _normal_fill(e, n, d, mean, std)
    return _normal_serial(e, n, mean, std)


def _normal_into(e, t, mean=0.0, std=1.0):
    """normal_(mean, std) into array t (complex: its real view with std / sqrt(2))."""
    if t.size == 0:
        return t
    if t.dtype.kind == "c" or t.dtype == _dt.CHALF_NP:
        t = t.view(_REAL_NP[t.dtype]).reshape(t.shape + (2,)) if _contig(t) else _real_view(t)
        std = std / math.sqrt(2)
    d = _NP2DT[t.dtype]
    _fill(t, _normal_vals(e, t, d, mean, std))
    return t


def _real_view(t):
    """view_as_real of a complex array (strided)."""
    r = t[..., None].view(_REAL_NP[t.dtype])
    return r


def _new(shape, d):
    return np.empty(tuple(shape), d.np)


def _uniform_into(e, t, lo, hi):
    if t.size == 0:
        return t
    if t.dtype.kind == "c" or t.dtype == _dt.CHALF_NP:
        t = _real_view(t)
    d = _NP2DT[t.dtype]
    _fill(t, _uniform_vals(e, t.size, d, lo, hi))
    return t


# ---- factories ----------------------------------------------------------------------------------
def rand(size, dtype=None, layout=None, device=None, pin_memory=None):
    return rand_generator(size, None, dtype)


def rand_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.defaults.float
    check_size(size)
    c = d.category
    if c != _FLOAT and c != _COMPLEX:
        raise not_implemented("check_uniform_bounds", d)
    if c == _FLOAT:  # the values are the result (no copy)
        return _uniform_vals(_rng(generator), math.prod(size), d).reshape(tuple(size))
    out = _new(size, d)
    _uniform_into(_rng(generator), out, 0.0, 1.0)
    return out


def randn(size, dtype=None, layout=None, device=None, pin_memory=None):
    return randn_generator(size, None, dtype)


def randn_generator(size, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.defaults.float
    check_size(size)
    if d.category < _FLOAT:
        raise not_implemented("normal_kernel_cpu", d)
    if d.category == _FLOAT:  # the values are the result (no copy)
        return _normal_vals(_rng(generator), _new((0,), d), d, 0.0, 1.0, size).astype(d.np, copy=False)
    out = _new(size, d)
    _normal_into(_rng(generator), out)
    return out


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
    frm, span = random_from_to_plan(d, low, high)
    n = math.prod(size)
    if not n:
        return _new(size, d)
    return _from_to(_rng(generator), n, d, frm, span).reshape(tuple(size))


_I64_WRAP = 1 << 64


def _from_to(e, n, d, frm, span):
    """random_from_to_kernel (span None: random_full_64_bits_range_kernel): values as dtype d."""
    if span is None:
        v = e.random64(n).view(_i64)
    elif span < 1 << 28:  # 32-bit words: the arithmetic fits int64
        w = e.random(n)
        w %= np.uint64(span)  # unsigned: NumPy's uint64 remainder is faster than int64's
        v = w.view(_i64)
        if frm:
            v += frm
    else:
        v = (e.random64(n) % np.uint64(span) + np.uint64(frm % _I64_WRAP)).view(_i64)
    if d is _dt.int64:
        return v
    if d.category == _BOOL:
        return v != 0
    if d.category == _INT:
        return v.astype(d.np)  # static_cast<int64_t> then to the narrower type: wraps
    return v.astype(_f64).astype(d.np) if d.name != "float32" else v.astype(_f32)


def randperm(n, dtype=None, layout=None, device=None, pin_memory=None):
    return randperm_generator(n, None, dtype)


def randperm_generator(n, generator, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or _dt.int64
    randperm_check(n, d)
    if d.category in (_BOOL, _COMPLEX):
        raise not_implemented("randperm", d)
    e = _rng(generator)
    if n < 0xFFFFFFFF // 20:
        # randperm_cpu: identity, then for i < n-1 swap slot i with slot i + random() % (n - i)
        z = e.random(max(n - 1, 0)).view(_i64) % np.arange(n, 1, -1, dtype=_i64)
        if n > 256:
            if _jitted(n):
                r = np.arange(n, dtype=_i64)
                _NB[2](z, r)
            else:
                r = _swap_sequence(z, n)
            return r if d is _dt.int64 else r.astype(d.np)
        perm = list(range(n))  # a short loop beats the vectorised replay here
        for i, k in enumerate(z.tolist()):
            j = i + k
            perm[i], perm[j] = perm[j], perm[i]
        return np.array(perm, dtype=d.np)
    # the "inside-out" Fisher-Yates with 64-bit draws: z = random64() % (i + 1)
    z = (e.random64(n) % np.arange(1, n + 1, dtype=np.uint64)).tolist()
    perm = [0] * n
    for i, k in enumerate(z):
        perm[i] = perm[k]
        perm[k] = i
    r = np.array(perm, dtype=_i64)
    return r if d is _dt.int64 else r.astype(d.np)


def _swap_sequence(z, n):
    """The permutation left by swapping slot i with slot j_i = i + z_i for i = 0 .. n-2 in order
    (slots start as 0 .. n-1), without a Python loop. Slot i is final after step i and holds what
    slot j_i held just before; a slot s > i only changes when some step k writes it (j_k = s), and
    then holds b_k, what slot k held before step k. So with prev(i) the last earlier step writing
    j_i: out[i] = b[prev(i)] (or j_i), and b_i = b[last earlier step writing slot i] (or i): chains
    that point back, resolved by pointer jumping."""
    m = n - 1
    if m <= 0:
        return np.arange(n, dtype=_i64)
    i = np.arange(m, dtype=_i64)
    j = i + z
    order = np.argsort(j, kind="stable")                  # the writers of each slot, in step order
    js = j[order]
    same = js[1:] == js[:-1]
    prev = np.full(m, -1, _i64)
    prev[order[1:][same]] = order[:-1][same]
    ends = np.ones(m, bool)
    ends[:-1] = ~same
    last = np.full(n, -1, _i64)
    last[js[ends]] = order[ends]                          # the last step writing each slot
    lw = last[:m]
    src = np.where(lw == i, prev, lw)                     # the last step before i writing slot i
    val = np.where(src < 0, i, -1)
    ptr = src
    pend = np.flatnonzero(src >= 0)
    while pend.size:
        v = val[ptr[pend]]
        ok = v >= 0
        val[pend[ok]] = v[ok]
        pend = pend[~ok]
        ptr[pend] = ptr[ptr[pend]]
    out = np.empty(n, _i64)
    out[:m] = j
    hp = prev >= 0
    out[:m][hp] = val[prev[hp]]
    out[m] = val[last[m]] if last[m] >= 0 else m
    return out


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


def _like(a):
    """at::empty_like(a, LEGACY_CONTIGUOUS_MEMORY_FORMAT): a C-contiguous array like a."""
    return np.empty(a.shape, a.dtype)


def normal_tensor_float(mean, std=1.0, generator=None):
    _check_std(std)
    _float_dtype(mean)
    out = _like(mean)
    _normal_into(_rng(generator), out, 0.0, std)
    np.add(out, mean, out=out, casting="unsafe")
    return out


def normal_float_tensor(mean, std, generator=None):
    _check_std_tensor(std)
    _float_dtype(std)
    out = _like(std)
    _normal_into(_rng(generator), out)
    np.multiply(out, std, out=out, casting="unsafe")
    np.add(out, np.array(mean).astype(out.dtype), out=out, casting="unsafe")
    return out


def normal_tensor_tensor(mean, std, generator=None):
    _check_std_tensor(std)
    shape = broadcast_shapes(mean.shape, std.shape)
    d = _float_dtype(mean)
    out = _new(shape, d)
    _normal_into(_rng(generator), out)
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
    out = _new(size, d)
    _normal_into(_rng(generator), out, mean, std)
    return out


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


_BERN_NB = frozenset(np.dtype(d) for d in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                            np.int64, np.uint8, np.bool_))


def _bernoulli_scalar_into(e, t, p):
    """bernoulli_scalar_kernel_default: per element (iteration order) uniform double < p (with
    numba, for a contiguous target: one fused pass from the mt19937 state, as randn's)."""
    if not t.size:
        return
    if t.flags.c_contiguous and t.dtype in _BERN_NB and _jitted(t.size):
        flat = t.reshape(-1)
        if flat.dtype == np.bool_:
            flat = flat.view(np.uint8)
        with e.bg.lock:  # as NumPy's random_raw: the kernel runs without the GIL
            key, pos = e.mt_state()
            e.set_mt_state(key, _NB[5](key, pos, flat, float(p), _scratch()[0]))
        return
    _fill(t, _u53(e, t.size) < p)


def _bernoulli_tensor_into(e, t, p):
    """bernoulli_tensor_kernel: p expanded to t; double p: uniform double < p, else uniform float
    (24 bits) < p as float."""
    if not t.size:
        return
    pe = np.broadcast_to(p, t.shape)
    pv = _iter_view_like(pe, t)
    if p.dtype == _f64:
        u = _u53(e, t.size)
    else:
        u = _u24(e, t.size)
        pv = pv.astype(_f32)
    _fill(t, u < pv.reshape(-1))


def _iter_view_like(a, t):
    """a (same shape as t) walked in t's iteration order, flattened."""
    if _contig(t) or t.ndim < 2:
        return np.ascontiguousarray(a).reshape(-1)
    st = t.strides
    return np.ascontiguousarray(a.transpose(sorted(range(t.ndim), key=lambda i: -st[i]))).reshape(-1)


def bernoulli(self, generator=None):
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_tensor_cpu_self_", _NP2DT[self.dtype])
    _check_p_tensor(self)
    out = np.empty(self.shape, self.dtype)  # empty_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT)
    p = self if self.dtype in (_f32, _f64) else self.astype(_f32)
    _bernoulli_tensor_into(_rng(generator), out, p)
    return out


def bernoulli_p(self, p, generator=None):
    _check_p(p)
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_scalar_cpu_", _NP2DT[self.dtype])
    out = _like(self)
    _bernoulli_scalar_into(_rng(generator), out, p)
    return out


def _bernoulli_p(self, p):
    """bernoulli(self, p Tensor)'s checks; p as the kernel reads it (float32 or float64)."""
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_tensor_cpu_self_", _NP2DT[self.dtype])
    if not isinstance(p, np.ndarray):
        p = np.asarray(p, dtype=_f64)
    expand_check(p.shape, self.shape)
    _check_p_tensor(p)
    return p if p.dtype in (_f32, _f64) else p.astype(_f32)


def bernoulli_tensor(self, p, generator=None):
    p = _bernoulli_p(self, p)
    out = _like(self)
    _bernoulli_tensor_into(_rng(generator), out, p)
    return out


def bernoulli_float_(self, p=0.5, generator=None):
    _check_p(p)
    if self.dtype.kind == "c":
        raise not_implemented("bernoulli_scalar_cpu_", _NP2DT[self.dtype])
    _bernoulli_scalar_into(_rng(generator), _target(self), p)


def bernoulli_tensor_(self, p, generator=None):
    p = _bernoulli_p(self, p)
    _bernoulli_tensor_into(_rng(generator), _target(self), p)


# ---- multinomial ------------------------------------------------------------------------------
def multinomial(self, num_samples, replacement=False, generator=None):
    shape = multinomial_check(self.shape, _NP2DT[self.dtype], num_samples, replacement)
    n = num_samples
    p2 = self.reshape(1, -1) if self.ndim == 1 else self
    if p2.shape[0] == 0:
        return np.empty(shape, _i64)
    e = _rng(generator)
    if not replacement or n == 1:
        if not (np.all(p2 >= 0) and np.all(p2 < np.inf)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if (p2.astype(_f64).sum(axis=1) == 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # Gumbel trick as ATen: q = empty_like(self).exponential_(1); argmax / topk of self / q
        q = np.empty(p2.shape, p2.dtype)
        _fill(q, _exponential_vals(e, q.size, 1.0).astype(p2.dtype))
        v = p2 / q
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
        # multinomial_with_replacement_kernel: per row a running sum in the accumulate type,
        # divided by the sum, last slot 1; per sample one uniform double, first slot >= it
        acc = _f64 if p2.dtype == _f64 else _f32
        rows, ncat = p2.shape
        r = np.empty((rows, n), _i64)
        for i in range(rows):
            cum = np.cumsum(p2[i].astype(acc))
            tot = cum[-1]
            if not tot > 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            cum = cum / tot
            cum[-1] = 1
            r[i] = np.searchsorted(cum.astype(_f64), _u53(e, n), side="left")
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
    _uniform_into(_rng(generator), _target(self), from_, to)


def normal_(self, mean=0.0, std=1.0, generator=None):
    _check_std(std)
    _float_dtype(self)
    if self.size == 0:
        return
    _normal_into(_rng(generator), _target(self), mean, std)


def random_(self, generator=None):
    d = _NP2DT[self.dtype]
    c = d.category
    if c == _COMPLEX:
        raise not_implemented("random_kernel_cpu", d)
    if self.size == 0:
        return
    t = _target(self)
    e = _rng(generator)
    n = self.size
    # uniform_int_distribution: 64-bit words for int64/double, else 32; val % (max + 1) or
    # val % (2^digits + 1) for floats; bool: val & 1
    w = e.random64(n) if d is _dt.int64 or d.name == "float64" else e.random(n)
    if c == _BOOL:
        v = (w & np.uint64(1)) != 0
    elif c == _FLOAT:
        v = (w % np.uint64((1 << DIGITS[d.name]) + 1)).astype(_f64).astype(d.np)
    else:
        v = (w % np.uint64(LIMITS[d.name][1] + 1)).astype(d.np)
    _fill(t, v)


def random_to(self, to, generator=None):
    random_from(self, 0, to, generator)


def random_from(self, from_, to=None, generator=None):
    d = _NP2DT[self.dtype]
    frm, span = random_from_to_plan(d, from_, to)
    if self.size == 0:
        return
    t = _target(self)
    _fill(t, _from_to(_rng(generator), self.size, d, frm, span))


def _exponential_vals(e, n, lambd):
    """exponential_distribution<double>(lambda): -1/lambda * log1p(-u), u uniform double."""
    u = _u53(e, n)
    return (-1.0 / lambd) * _libm(math.log1p, -u)


def exponential_(self, lambd=1.0, generator=None):
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={fmt_double(lambd)}")
    d = _NP2DT[self.dtype]
    if d.category != _FLOAT:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {d._short}")
    if self.size == 0:
        return
    _fill(_target(self), _exponential_vals(_rng(generator), self.size, lambd))


def geometric_(self, p, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={fmt_double(p)}")
    d = _NP2DT[self.dtype]
    if d.category in (_BOOL, _COMPLEX):
        raise not_implemented("geometric_cpu", d)
    if self.size == 0:
        return
    u = _u53(_rng(generator), self.size)
    v = np.ceil(_libm(math.log, u) / math.log(1.0 - p))
    _fill(_target(self), v)


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={fmt_double(std)}")
    d = _NP2DT[self.dtype]
    if d.category != _FLOAT:
        raise not_implemented("log_normal_cpu", d)
    if self.size == 0:
        return
    v = _normal_serial(_rng(generator), self.size, mean, std)
    _fill(_target(self), _libm(_safe_exp, v))


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={fmt_double(sigma)}")
    d = _NP2DT[self.dtype]
    if d.category != _FLOAT:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must "
                           f"be a floating point but you specified {TMNAME[d.name]}")
    if self.size == 0:
        return
    u = _u53(_rng(generator), self.size)
    v = _fma64(np.full(u.shape, sigma), _libm(math.tan, math.pi * (u - 0.5)), median)
    _fill(_target(self), v)


def rrelu_noise(generator, x, lower, upper):
    """rrelu_with_noise (training): for each element x <= 0 in order, one uniform double in
    [lower, upper); 1 elsewhere. Returns the noise as float64."""
    e = _rng(generator)
    if x.dtype != _f64:  # lower/upper are opmath_t (float) values
        lower, upper = float(np.float32(lower)), float(np.float32(upper))
    neg = np.ascontiguousarray(x).reshape(-1) <= 0
    noise = np.ones(neg.shape, _f64)
    k = int(neg.sum())
    if k:
        noise[neg] = _fma64(_u53(e, k), upper - lower, lower)
    return noise.reshape(x.shape)
