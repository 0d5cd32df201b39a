"""float32 transcendentals for the inductor's generated kernels, written as plain Python.

llvmlite ships no vector math library, so a numba loop calling `math.exp`/`math.tanh` stays scalar
(~31 ms per 1M elements); the same loop with exp written as range reduction plus a polynomial
vectorises (~1.5 ms). The functions here are those polynomials. They are plain Python (no numpy,
no numba) so that they run as written (tests check them on a few values that way, computed in
Python's float64) and so that `jit_math` can compile them for numba kernels. To compile them,
jit_math re-creates each function over a globals table in which

- every module-level float constant (`_ONE`, `_LN2_HI`, the coefficients...) is a numpy.float32, so
  float32 inputs stay float32 (a bare literal such as `0.5` or `1` would be float64 in numba and
  turn the whole computation into float64: function bodies here contain no numeric literals except
  integer bit masks and shifts);
- the primitives below (`_bits`, `_from_bits`, `_to_float`, `_to_int`, `_floor`, `_f32`, `_fma`)
  become LLVM instructions (bitcast, sitofp, fptosi, llvm.floor, nothing, llvm.fma), which
  vectorise;
- calls between these functions go to their compiled versions.

Branches are written so that both sides are computed and one is selected (`a if c else b` on values
already computed): LLVM turns them into vector selects. Special values follow torch: NaN in, NaN
out; +-inf and overflow/underflow give the IEEE limits; -0.0 keeps its sign where torch keeps it;
denormal inputs and outputs are handled (no flush to zero).

Error bounds: each docstring gives the largest error in float32 ulps from the float64 reference,
measured through numba (AVX-512 with FMA) on ~2.8M random inputs over each function's range plus
the edge cases (tests/inductor/test_mathlib.py's inputs, drawn with n=2M), next to ember's eager
float32 result (NumPy's ufunc or ember's own float32 kernel) and torch's on the same inputs.
tests/inductor/test_mathlib.py asserts issue 11's rule per function: compiled at most 2x as far from
float64 as eager (with eager's floor at 0.5 ulp, a correctly rounded result).
"""
import math
import struct

# ---- primitives (jit_math swaps these for LLVM instructions) ------------------------------------
_PACK_F = struct.Struct("<f")
_PACK_I = struct.Struct("<i")
_PACK_U = struct.Struct("<I")


def _bits(x):
    """The IEEE bits of float32 x as a signed int32 value (jit: bitcast float -> i32)."""
    return _PACK_I.unpack(_PACK_F.pack(x))[0]


def _from_bits(i):
    """The float32 whose bits are the low 32 bits of integer i (jit: trunc to i32, bitcast)."""
    return _PACK_F.unpack(_PACK_U.pack(i & 0xFFFFFFFF))[0]


def _to_float(i):
    """Integer value i as a float (jit: sitofp to float32)."""
    return float(i)


def _to_int(x):
    """Integral float x as an integer (jit: fptosi to int32; numba's int() would give int64, whose
    vector conversions cost twice as many instructions: exp 0.59 -> 0.28 ms per 1M)."""
    return int(x)


def _f32(x):
    """x as a float32 value (jit: nothing for float32, fptrunc for float64, sitofp for integers).
    Every public function starts with it, so any numeric argument is computed in float32; plain
    Python runs (float64 arithmetic) also use it where an algorithm relies on a float32 rounding
    (log1p's 1 + x)."""
    return _PACK_F.unpack(_PACK_F.pack(float(x)))[0]


def _fma(a, b, c):
    """a * b + c with one rounding (jit: llvm.fma.f32; Python: float64, exact for float32 a, b)."""
    return a * b + c


def _floor(x):
    """floor(x) as a float of x's type (jit: llvm.floor.f32); NaN and inf pass through."""
    return float(math.floor(x)) if math.isfinite(x) else x


# ---- constants (float32 in compiled code) -------------------------------------------------------
_ZERO = 0.0
_HALF = 0.5
_ONE = 1.0
_TWO = 2.0
_INF = math.inf
_NAN = math.nan
_LOG2E = 1.4426950408889634
_LN2_HI = 0.693359375                 # 9 significant bits: n * _LN2_HI is exact for |n| < 2**15
_LN2_LO = -2.12194440e-4              # ln 2 - _LN2_HI
_EXP_HI = 89.0                        # exp(89) overflows float32
_EXP_LO = -104.0                      # exp(-104) rounds to 0 in float32
_EXPM1_LO = -18.0                     # expm1(-18) rounds to -1 in float32
# expm1(r) = r + r*r/2 + r**3 * Q(r) on |r| <= ln2/2: weighted minimax, relative error 1.1e-9
_Q0 = 0.16666666696570712
_Q1 = 0.041666554642099875
_Q2 = 0.008333300973062738
_Q3 = 0.001392617833477063
_Q4 = 0.00019899274149065763
# log: musl's logf (Remez on s = f/(2+f), |error| < 2**-34.24)
_SQRT_HALF_BITS = 0x3F3504F3          # bits of sqrt(1/2)
_ONE_BITS = 0x3F800000
_LG1 = 0.66666662693
_LG2 = 0.40000972152
_LG3 = 0.28498786688
_LG4 = 0.24279078841
_LN2_HI_LOG = 6.9313812256e-01
_LN2_LO_LOG = 9.0580006145e-06
_TINY = 1.1754943508222875e-38        # 2**-126: smallest normal float32
_TWO23 = 8388608.0
_M23 = -23.0
# tanh(x) = x + x**3 * P(x*x) on |x| <= 0.9: weighted minimax, relative error 4.5e-9
_TANH_SMALL = 0.9
_TANH_BIG = 9.5                       # tanh(9.5) rounds to 1 in float32
_T0 = -0.3333333274554525
_T1 = 0.13333261940358568
_T2 = -0.05395390351331831
_T3 = 0.02175948253978045
_T4 = -0.00845104401782773
_T5 = 0.002759305954588144
_T6 = -0.0005204290209920647
# erf / the normal tail (ember/kernels/cpu/_special.py's fits, evaluated here without NumPy):
# erf(z) = z * P(z*z) for |z| < 0.75 (relative error 2e-9);
# Phi(-a) = exp(-a*a/2) * H(t), t = 3 / (3 + a), H a degree-9 polynomial (relative error < 1e-8).
_ERF_SMALL = 0.75
_ERF_BIG = 4.0                        # erf(4) rounds to 1 in float32
_P0 = 1.128379166391773
_P0M1 = 0.128379166391773             # _P0 - 1: erf(z) = z + z * (P(z*z) - 1) rounds less
_P1 = -0.3761262310487669
_P2 = 0.11283425545663764
_P3 = -0.02683675197333403
_P4 = 0.005118289368998737
_P5 = -0.0006775750219476453
_THREE = 3.0
_KZ = 2.1213203435596424              # 3 / sqrt(2): erfc(z) = exp(-z*z) * 2 H(KZ / (KZ + z))
_H9 = -0.02758395034438468
_H8 = 0.15373479021468464
_H7 = -0.3231959013472737
_H6 = 0.28170737097515597
_H5 = -0.10021323702266006
_H4 = 0.14224803531410213
_H3 = 0.10563417746730157
_H2 = 0.13483901385264027
_H1 = 0.13282395169568875
_H0 = 5.7725e-06
_PHI_BIG = 14.0                       # Phi(-14) underflows float32
_SQRT_HALF = 0.7071067811865476
_GELU_K = 0.7978845608028654          # sqrt(2 / pi)
_GELU_C = 0.044715


# ---- exp family ---------------------------------------------------------------------------------
def _expm1_poly(r):
    """expm1(r) for |r| <= ln2/2 (relative error 1.1e-9 before rounding)."""
    return r + r * r * (_HALF + r * (_Q0 + r * (_Q1 + r * (_Q2 + r * (_Q3 + r * _Q4)))))


def _pow2(n):
    """2**n for an integral float n in [-126, 127], built from its exponent bits."""
    return _from_bits((_to_int(n) + 127) << 23)


def exp_f32(x):
    """exp(x), float32. Max error 0.98 ulp measured (ember eager 2.4, torch 0.57).

    x is clamped to [-104, 89] (NaN passes through), n = round(x / ln2), r = x - n ln2 by the
    Cody-Waite split, exp(r) = 1 + expm1(r) by the polynomial, scaled by 2**n as two factors so
    that denormal results round once and overflow gives inf.
    """
    x = _f32(x)
    x = _EXP_HI if x > _EXP_HI else x
    x = _EXP_LO if x < _EXP_LO else x
    n = _floor(x * _LOG2E + _HALF)
    n = _ZERO if n != n else n        # NaN: any n will do (p is NaN); keeps the bit tricks defined
    return _exp_reduced(x, n)


def _exp_reduced(x, n):
    """exp(x) for x in [-104, 89] and n = round(x / ln2): the Cody-Waite reduction, the polynomial
    and the scale by 2**n as two factors."""
    r = x - n * _LN2_HI
    r = r - n * _LN2_LO
    p = _ONE + _expm1_poly(r)
    ni = _to_int(n)
    h = ni >> 1
    return p * _from_bits((h + 127) << 23) * _from_bits((ni - h + 127) << 23)


def _exp_nonpos(x):
    """exp(x) for x <= 0 or NaN (sigmoid's and the tails' exp(-|x|)): exp_f32 without the overflow
    clamp and the NaN guard; a NaN gives an undefined value here, which every caller replaces
    (its result for NaN is selected from x). Same results as exp_f32 otherwise."""
    x = _EXP_LO if x < _EXP_LO else x
    return _exp_reduced(x, _floor(x * _LOG2E + _HALF))


def _expm1_small_pos(x):
    """expm1(x) for 0 <= x <= 19 or NaN (tanh's expm1(2|x|)): expm1_f32 without its clamps and
    guards (a NaN gives an undefined value, which tanh replaces). Same results otherwise."""
    n = _floor(x * _LOG2E + _HALF)
    r = x - n * _LN2_HI
    r = r - n * _LN2_LO
    em = _expm1_poly(r)
    h = _from_bits((_to_int(n) + 126) << 23)
    return _TWO * (h * em + (h - _HALF))


def expm1_f32(x):
    """exp(x) - 1, float32, with full relative accuracy near 0. Max error 1.43 ulp measured
    (ember eager 2.6, torch 1.0).

    n = round(x / ln2), r reduced as in exp_f32, em = expm1(r); with h = 2**(n-1):
    expm1(x) = 2 * (h * em + (h - 1/2)), where h - 1/2 is exact and the product-sum is one fma.
    x >= 89 overflows to inf; x <= -18 gives -1; -0.0 stays -0.0.
    """
    x = _f32(x)
    xc = _EXP_HI if x > _EXP_HI else x
    xc = _EXPM1_LO if xc < _EXPM1_LO else xc
    n = _floor(xc * _LOG2E + _HALF)
    n = _ZERO if n != n else n
    r = xc - n * _LN2_HI
    r = r - n * _LN2_LO
    em = _expm1_poly(r)
    h = _pow2(n - _ONE)
    y = _TWO * (h * em + (h - _HALF))
    return x if x == _ZERO else y


# ---- log family ---------------------------------------------------------------------------------
def _log_tail(f, k, c):
    """k ln2 + log1p(f) + c for f in [sqrt(1/2) - 1, sqrt(2) - 1] (musl's logf/log1pf core)."""
    s = f / (_TWO + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * _LG4)
    t2 = z * (_LG1 + w * _LG3)
    rr = t2 + t1
    hfsq = _HALF * f * f
    return s * (hfsq + rr) + (k * _LN2_LO_LOG + c) - hfsq + f + k * _LN2_HI_LOG


def log_f32(x):
    """log(x), float32 (musl's logf). Max error 0.83 ulp measured (ember eager 3.6, torch 0.9).

    x = 2**k * m with m in [sqrt(1/2), sqrt(2)) by integer operations on the bits (denormals are
    scaled by 2**23 first). log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN -> NaN.
    """
    x = _f32(x)
    small = x < _TINY
    xs = x * _TWO23 if small else x
    kadj = _M23 if small else _ZERO
    ix = _bits(xs) + (_ONE_BITS - _SQRT_HALF_BITS)
    k = _to_float((ix >> 23) - 0x7F) + kadj
    f = _from_bits((ix & 0x007FFFFF) + _SQRT_HALF_BITS) - _ONE
    y = _log_tail(f, k, _ZERO)
    y = x if (x != x or x == _INF) else y
    y = -_INF if x == _ZERO else y
    return _NAN if x < _ZERO else y


def log1p_f32(x):
    """log(1 + x), float32 (musl's log1pf), full relative accuracy near 0. Max error 0.82 ulp
    measured (ember eager 1.8, torch 1.0).

    u = 1 + x is split as in log_f32; c corrects the rounding of 1 + x. log1p(-1) = -inf,
    x < -1 gives NaN, inf -> inf, NaN -> NaN, -0.0 -> -0.0.
    """
    x = _f32(x)
    u = _f32(_ONE + x)
    iu = _bits(u) + (_ONE_BITS - _SQRT_HALF_BITS)
    ki = (iu >> 23) - 0x7F
    k = _to_float(ki)
    ud = _ONE if u == _ZERO else u    # x = -1 (the result is -inf): no 0/0
    c = (_ONE - (u - x)) if ki >= 2 else (x - (u - _ONE))
    c = _ZERO if ki >= 25 else c / ud
    f = _from_bits((iu & 0x007FFFFF) + _SQRT_HALF_BITS) - _ONE
    y = _log_tail(f, k, c)
    y = x if (x != x or x == _INF or x == _ZERO) else y
    y = -_INF if x == -_ONE else y
    return _NAN if x < -_ONE else y


# ---- tanh, sigmoid and friends ------------------------------------------------------------------
def tanh_f32(x):
    """tanh(x), float32. Max error 1.07 ulp measured (ember eager 1.37, torch 0.51).

    |x| <= 0.9: x + x**3 P(x*x); otherwise 1 - 2 / (expm1(2|x|) + 2) with x's sign.
    |x| >= 9.5 gives +-1; NaN -> NaN; -0.0 -> -0.0.
    """
    x = _f32(x)
    a = abs(x)
    ac = _TANH_BIG if a > _TANH_BIG else a
    e = _expm1_small_pos(ac + ac)
    big = _ONE - _TWO / (e + _TWO)
    big = -big if x < _ZERO else big
    x2 = x * x
    small = x + x * x2 * (_T0 + x2 * (_T1 + x2 * (_T2 + x2 * (_T3 + x2 * (_T4 + x2 * (_T5 + x2 * _T6))))))
    y = small if a <= _TANH_SMALL else big
    return x if (x != x or x == _ZERO) else y


def sigmoid_f32(x):
    """1 / (1 + exp(-x)), float32. Max error 2.3 ulp measured (ember eager 3.6, torch 2.4).

    e = exp(-|x|) <= 1; x >= 0: 1 / (1 + e); x < 0: e / (1 + e) (no cancellation either way).
    NaN -> NaN, +inf -> 1, -inf -> 0.
    """
    x = _f32(x)
    e = _exp_nonpos(-abs(x))
    num = _ONE if x >= _ZERO else e   # one division: the numerator is selected first
    y = num / (_ONE + e)
    return x if x != x else y


def silu_f32(x):
    """x * sigmoid(x) (SiLU / swish). Max error 3.1 ulp measured on normal results (ember eager
    3.4); denormal results (x < -87) are a few denormal steps off, as eager's are."""
    x = _f32(x)
    return x * sigmoid_f32(x)


def softplus_f32(x):
    """log(1 + exp(x)) computed as max(x, 0) + log1p(exp(-|x|)). Max error 1.53 ulp
    measured (ember eager 3.2, torch 1.44).

    torch's softplus (beta=1, threshold=20) returns x itself above the threshold; the generated
    kernel applies beta and the threshold around this call.
    """
    x = _f32(x)
    m = x if x > _ZERO else _ZERO
    y = m + log1p_f32(_exp_nonpos(-abs(x)))
    return x if x != x else y


def log_sigmoid_f32(x):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)). Max error 1.56 ulp measured (ember eager 2.9,
    torch 1.45)."""
    x = _f32(x)
    m = x if x < _ZERO else _ZERO
    y = m - log1p_f32(_exp_nonpos(-abs(x)))
    return x if x != x else y


# ---- erf and gelu -------------------------------------------------------------------------------
def _h_poly(t):
    return (_H0 + t * (_H1 + t * (_H2 + t * (_H3 + t * (_H4 + t * (_H5 + t * (_H6 + t * (
        _H7 + t * (_H8 + t * _H9)))))))))


def erf_f32(x):
    """erf(x), float32. Max error 2.2 ulp measured (ember eager 2.8 with the same fits, torch 0.7).

    |x| < 0.75: x P(x*x); otherwise 1 - exp(-x*x) * 2 H(t), t = KZ / (KZ + |x|), with x's sign.
    |x| >= 4 gives +-1; NaN -> NaN; -0.0 -> -0.0.
    """
    x = _f32(x)
    a = abs(x)
    ac = _ERF_BIG if a > _ERF_BIG else a
    t = _KZ / (_KZ + ac)
    big = _ONE - _exp_nonpos(-(ac * ac)) * (_TWO * _h_poly(t))
    big = -big if x < _ZERO else big
    z2 = x * x
    small = x + x * (_P0M1 + z2 * (_P1 + z2 * (_P2 + z2 * (_P3 + z2 * (_P4 + z2 * _P5)))))
    y = small if a < _ERF_SMALL else big
    return x if (x != x or x == _ZERO) else y


def _phi_neg(a):
    """Phi(-a) for a >= 0 (the normal tail), relative error ~1e-7 in float32."""
    ac = _PHI_BIG if a > _PHI_BIG else a
    t = _THREE / (_THREE + ac)
    hi = ac * ac                       # a*a = hi + lo exactly; exp(-lo/2) = 1 - lo/2 (|lo| < 1e-5)
    lo = _fma(ac, ac, -hi)
    q = _exp_nonpos(-(_HALF * hi)) * (_ONE - _HALF * lo) * _h_poly(t)
    return _ZERO if a > _PHI_BIG else q


def ndtr_f32(x):
    """Phi(x), the standard normal CDF: Phi(-|x|) from the tail fit, 1 - that for x > 0.
    Relative error ~1e-6 in the tail (the fit evaluated in float32)."""
    x = _f32(x)
    q = _phi_neg(abs(x))
    return q if x <= _ZERO else (_ONE - q if x > _ZERO else x)


def gelu_f32(x):
    """gelu(x) = x * Phi(x) (approximate="none"). Max error 17.6 ulp measured, i.e. relative 1e-6,
    deep in the negative tail (ember eager 80 ulp; torch's 1 + erf cancels: up to 2**24 ulp);
    near 0 and for x > 0 within 2 ulp."""
    x = _f32(x)
    return x * ndtr_f32(x)


def gelu_tanh_f32(x):
    """gelu(x, approximate="tanh") = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3))), as torch
    writes it (same cancellation for negative x as torch's own float32 kernel)."""
    x = _f32(x)
    inner = _GELU_K * (x + _GELU_C * x * x * x)
    return _HALF * x * (_ONE + tanh_f32(inner))


# Public names jit_math compiles (in dependency order).
__all__ = ["exp_f32", "expm1_f32", "log_f32", "log1p_f32", "tanh_f32", "sigmoid_f32", "silu_f32",
           "softplus_f32", "log_sigmoid_f32", "erf_f32", "ndtr_f32", "gelu_f32", "gelu_tanh_f32"]
