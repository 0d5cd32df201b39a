"""Float32 GELU, its backward and erf on NumPy arrays (NumPy has no erf).

Computing these in float64 (the exact erf, then dtype conversions) cost about half of a GPT
training step. Here everything stays in float32 SIMD passes over blocks of `_BLOCK` elements:
the temporaries live in per-thread scratch buffers (no fresh pages to fault in per call, the
block stays in L2) and only the result is allocated.

The normal tail is written as Phi(-a) = exp(-a*a/2) * H(t), a = |x|, with
H(t) = Phi(-a) * exp(a*a/2), a smooth function of t = 3 / (3 + a) in (0, 1]. `_H` is a degree-9
polynomial in t fitted by weighted least squares (relative error) on Chebyshev nodes of
0 <= a <= 14 against mpmath; its own error is below 1e-8, evaluated in float32 it stays within
about 4e-7 relative, and the results are a few ulp from the exact ones (PyTorch's float32
kernels are no closer). erf(z) for |z| < 0.75 uses an odd polynomial z * P(z*z) fitted the same
way (relative error 2e-9), so small arguments keep their relative accuracy.
"""
import math
import threading

import numpy as np

_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)
_BLOCK = 1 << 16
_SIGN = np.int32(-(1 << 31))          # the float32 sign bit as an int32 mask

_K = np.float32(3.0)
_H = [np.float32(c) for c in (        # highest degree first (Horner)
    -0.02758395034438468, 0.15373479021468464, -0.3231959013472737, 0.28170737097515597,
    -0.10021323702266006, 0.14224803531410213, 0.10563417746730157, 0.13483901385264027,
    0.13282395169568875, 5.7725e-06)]  # constant nudged by 3e-8: H(1) = 1/2 exactly in float32
# erfc(z) = exp(-z*z) * 2 H(t) with t = 3 / (3 + sqrt(2) z) = (3 / sqrt(2)) / (3 / sqrt(2) + z)
_KZ = np.float32(3.0 / math.sqrt(2.0))
_E = [np.float32(2.0 * float(c)) for c in _H]
_ERF_SMALL = np.float32(0.75)
_P = [np.float32(c) for c in (        # erf(z) / z as a polynomial in z*z, highest degree first
    -0.0006775750219476453, 0.005118289368998737, -0.02683675197333403, 0.11283425545663764,
    -0.3761262310487669, 1.128379166391773)]
_INV_SQRT_2PI = np.float32(1.0 / math.sqrt(2.0 * math.pi))
_HALF = np.float32(0.5)
_MHALF = np.float32(-0.5)
_ONE = np.float32(1.0)

_tls = threading.local()


def _scratch(n):
    """Three float32 work buffers of n <= _BLOCK elements, reused by this thread."""
    s = getattr(_tls, "bufs", None)
    if s is None:
        s = _tls.bufs = (np.empty(_BLOCK, _F32), np.empty(_BLOCK, _F32), np.empty(_BLOCK, _F32))
    return s[0][:n], s[1][:n], s[2][:n]


def _flat(x):
    return (x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(-1)


def _horner(t, coefs, out):
    """out = polynomial(t) (coefficients highest degree first)."""
    np.multiply(t, coefs[0], out=out)
    out += coefs[1]
    for c in coefs[2:]:
        out *= t
        out += c
    return out


def _tail(x, a, t, r):
    """a = |x|, t = exp(-x*x/2), r = H(3 / (3 + |x|)): Phi(-|x|) = t * r."""
    np.absolute(x, out=a)
    np.add(a, _K, out=t)
    np.divide(_K, t, out=t)
    _horner(t, _H, r)
    np.multiply(a, a, out=t)
    t *= _MHALF
    np.exp(t, out=t)


def _gelu_block(x, out):
    a, t, _ = _scratch(x.size)
    _tail(x, a, t, out)
    # gelu(x) = x Phi(x) = relu(x) - |x| Phi(-|x|); relu as (x + |x|) / 2 (exact, no branches)
    out *= t
    out *= a
    np.add(x, a, out=t)
    t *= _HALF
    np.subtract(t, out, out=out)


def _gelu_backward_block(g, x, out):
    a, t, _ = _scratch(x.size)
    _tail(x, a, t, out)
    # d gelu = Phi(x) + x phi(x) = 1/2 + sign(x) (1/2 + |x| phi(|x|) - Phi(-|x|)); the bracket is
    # >= 0 (Mills' inequality), so the sign goes on by OR-ing in x's sign bit
    a *= _INV_SQRT_2PI
    np.subtract(a, out, out=out)
    out *= t
    out += _HALF
    ti, oi = t.view(_I32), out.view(_I32)
    np.bitwise_and(x.view(_I32), _SIGN, out=ti)
    np.bitwise_or(oi, ti, out=oi)
    out += _HALF
    out *= g


def _erf_block(x, out):
    a, t, p = _scratch(x.size)
    np.absolute(x, out=a)
    np.add(a, _KZ, out=t)
    np.divide(_KZ, t, out=t)
    _horner(t, _E, out)
    np.multiply(a, a, out=t)
    np.negative(t, out=t)
    np.exp(t, out=t)
    out *= t
    np.subtract(_ONE, out, out=out)           # erf(|x|) = 1 - erfc(|x|) >= 0
    oi, ti = out.view(_I32), t.view(_I32)
    np.bitwise_and(x.view(_I32), _SIGN, out=ti)
    np.bitwise_or(oi, ti, out=oi)             # odd: erf(x) = sign(x) erf(|x|)
    # |x| < 0.75: x P(x*x), blended in by bits: out ^= (out ^ small) & mask
    np.multiply(x, x, out=t)
    _horner(t, _P, p)
    p *= x
    np.subtract(a, _ERF_SMALL, out=a)        # negative exactly where |x| < 0.75 (NaN: not)
    m = a.view(_I32)
    np.right_shift(m, 31, out=m)             # all ones there, zero elsewhere
    pi = p.view(_I32)
    np.bitwise_xor(pi, oi, out=pi)
    np.bitwise_and(pi, m, out=pi)
    np.bitwise_xor(oi, pi, out=oi)


def _blocked(kernel, out, *xs):
    n = out.size
    o = out.reshape(-1)
    if n <= _BLOCK:
        kernel(*xs, o)
        return out
    for i in range(0, n, _BLOCK):
        j = i + _BLOCK
        kernel(*[x[i:j] for x in xs], o[i:j])
    return out


def _unary_out(kernel, x):
    """kernel over float32 array x into a new array laid out as x is (TensorIterator gives a
    permuted input's output the same permutation): both walked in x's memory order."""
    if x.flags.c_contiguous or x.ndim < 2 or min(x.strides) <= 0:  # flipped or expanded: K orders differ
        return _blocked(kernel, np.empty(x.shape, _F32), _flat(x))
    out = np.empty_like(x, dtype=_F32)  # order="K": x's stride order, dense
    _blocked(kernel, out.ravel(order="K"), x.ravel(order="K"))
    return out


def gelu_f32(x):
    """gelu(x) (exact form, erf) of a float32 array, as a new float32 array laid out as x."""
    return _unary_out(_gelu_block, x)


def gelu_backward_f32(g, x):
    """grad * gelu'(x) for float32 arrays of one shape (exact form)."""
    return _blocked(_gelu_backward_block, np.empty(x.shape, _F32), _flat(g), _flat(x))


def erf_f32(x):
    """erf of a float32 array, as a new float32 array laid out as x."""
    return _unary_out(_erf_block, x)
