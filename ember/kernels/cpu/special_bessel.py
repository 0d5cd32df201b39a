"""torch.special's erfcx, spherical_bessel_j0 and the modified Bessel functions (I0, I1, K0, K1 and the
scaled K0, K1), on NumPy in float64 (float32 results rounded from it).

K_nu(x) = integral_0^inf exp(-x cosh t) cosh(nu t) dt is summed with the trapezoidal rule: the integrand
is analytic and bounded in the strip |Im t| < pi/2, so the rule converges like exp(-pi^2 / h); the step
shrinks with 1/sqrt(x) for large x, where the integrand is a narrow Gaussian. erfcx uses exp(x^2) erfc(x)
below 10 and the asymptotic series above, and 2 exp(x^2) - erfcx(-x) for negative x.
"""
import math

import numpy as np

from ember.kernels.cpu import special_functions as _sf

_SQRT_PI = math.sqrt(math.pi)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _erfcx_pos(x):
    """erfcx for x >= 0 (float64 array)."""
    out = np.empty_like(x)
    small = x < 10.0
    if small.any():
        xs = x[small]
        out[small] = np.exp(xs * xs) * _erfc(xs).astype(np.float64)
    big = ~small
    if big.any():
        xb = x[big]
        z = 1.0 / (2.0 * xb * xb)
        term = np.ones_like(xb)
        s = np.ones_like(xb)
        for n in range(1, 16):
            term = term * -(2 * n - 1) * z
            s = s + term
        out[big] = s / (xb * _SQRT_PI)
    return out


def _erfcx(x):
    out = np.empty_like(x)
    neg = x < 0
    pos = ~neg  # NaN lands here and stays NaN
    out[pos] = _erfcx_pos(x[pos])
    if neg.any():
        xn = x[neg]
        with np.errstate(over="ignore"):
            out[neg] = 2.0 * np.exp(xn * xn) - _erfcx_pos(-xn)
    return out


def _kv_scaled(x, nu):
    """exp(x) K_nu(x) for x > 0 finite, nu in {0, 1/3, 1} (float64 array)."""
    h = np.minimum(0.2, 0.5 / np.sqrt(x))
    # exp(-x (cosh t - 1)) < 1e-320 beyond t_max
    tmax = np.arccosh(1.0 + 740.0 / x)
    count = np.ceil(tmax / h).astype(np.int64)
    total = 0.5 * np.ones_like(x)  # t = 0: weight 1/2, integrand 1
    for j in range(1, int(count.max()) + 1 if count.size else 1):
        live = count >= j
        t = j * h
        s = np.sinh(0.5 * t)
        f = np.exp(-x * 2.0 * s * s) * (np.cosh(nu * t) if nu else 1.0)
        total += np.where(live, f, 0.0)
    return total * h


def _k(nu, scaled):
    def fn(x):
        out = np.empty_like(x)
        out[np.isnan(x) | (x < 0)] = np.nan
        out[x == 0] = np.inf
        out[np.isposinf(x)] = 0.0
        ok = (x > 0) & np.isfinite(x)
        if ok.any():
            xs = x[ok]
            v = _kv_scaled(xs, nu)
            out[ok] = v if scaled else v * np.exp(-xs)
        return out
    return fn


def _spherical_j0(x):
    out = np.empty_like(x)
    small = np.abs(x) < 0.5
    xs = x[small]
    x2 = xs * xs
    # sin(x)/x = sum (-1)^k x^2k / (2k+1)!, twelve terms reach double precision for |x| < 0.5
    s = np.zeros_like(xs)
    for k in range(12, -1, -1):
        s = s * x2 + (-1) ** k / math.factorial(2 * k + 1)
    out[small] = s
    big = ~small
    xb = x[big]
    with np.errstate(invalid="ignore"):
        out[big] = np.where(np.isinf(xb), 0.0, np.sin(xb) / xb)
    return out


special_erfcx = _sf._unary(_erfcx, "erfcx_cpu", low=False)
special_spherical_bessel_j0 = _sf._unary(_spherical_j0, "spherical_bessel_j0_cpu", low=False)
special_modified_bessel_k0 = _sf._unary(_k(0, False), "modified_bessel_k0_cpu", low=False)
special_modified_bessel_k1 = _sf._unary(_k(1, False), "modified_bessel_k1_cpu", low=False)
special_scaled_modified_bessel_k0 = _sf._unary(_k(0, True), "scaled_modified_bessel_k0_cpu", low=False)
special_scaled_modified_bessel_k1 = _sf._unary(_k(1, True), "scaled_modified_bessel_k1_cpu", low=False)
_i0_kernel = _sf.i0
_i1_kernel = _sf.special_i1


def _low_check(kname):
    def check(a):
        d = a.dtype
        if d == np.float16 or d == _sf._dt.bfloat16.np or d.kind == "c":
            raise _sf._pw._not_impl(kname, _sf._NP2DT[d])
    return check


_i0_check = _low_check("modified_bessel_i0_cpu")
_i1_check = _low_check("modified_bessel_i1_cpu")


def special_modified_bessel_i0(a):
    _i0_check(a)
    return _i0_kernel(a)


def special_modified_bessel_i1(a):
    _i1_check(a)
    return _i1_kernel(a)


# ---- Bessel functions of the first and second kind, orders 0 and 1 ------------------------------------
# |x| <= 25: J_n(x) = (1/pi) int_0^pi cos(n t - x sin t) dt and
# Y_n(x) = (1/pi) int_0^pi sin(x sin t - n t) dt - (1/pi) int_0^inf (e^{nt} + (-1)^n e^{-nt}) e^{-x sinh t} dt,
# the finite integrals by 96-point Gauss-Legendre, the infinite one by the trapezoidal rule (its integrand
# is analytic in |Im t| < pi/2). x > 25: Hankel's asymptotic expansion (its smallest term is ~e^{-2x}).
_GL_T, _GL_W = np.polynomial.legendre.leggauss(96)
_GL_T = (_GL_T + 1.0) * (math.pi / 2.0)
_GL_W = _GL_W * (math.pi / 2.0)
_BIG = 25.0


def _hankel(x, n):
    mu = 4.0 * n * n
    z = 8.0 * x
    p = np.ones_like(x)
    q = np.zeros_like(x)
    a = np.ones_like(x)
    for k in range(1, 40):
        a = a * (mu - (2 * k - 1) ** 2) / (k * z)
        if k % 2:
            q = q + (-1) ** ((k - 1) // 2) * a
        else:
            p = p + (-1) ** (k // 2) * a
    chi = x - (n / 2.0 + 0.25) * math.pi
    s = np.sqrt(2.0 / (math.pi * x))
    return s * (p * np.cos(chi) - q * np.sin(chi)), s * (p * np.sin(chi) + q * np.cos(chi))


def _j_small(x, n):
    t = _GL_T[None, :]
    return (np.cos(n * t - x[:, None] * np.sin(t)) @ _GL_W) / math.pi


_EULER = 0.5772156649015329
_SERIES = 8.0  # below: the power series (DLMF 10.8.1); above: the integrals


def _y_series(x, n):
    """Y_n(x), n in {0, 1}, by its power series about 0 (x <= 8: cancellation costs < 1e-12)."""
    z = -x * x / 4.0
    psi_k, psi_nk = -_EULER, -_EULER + (1.0 if n else 0.0)  # psi(k + 1), psi(n + k + 1) at k = 0
    term = np.ones_like(x) / (1.0 if n == 0 else 1.0)  # z^k / (k! (n + k)!)
    total = (psi_k + psi_nk) * term
    for k in range(1, 60):
        term = term * z / (k * (n + k))
        psi_k += 1.0 / k
        psi_nk += 1.0 / (n + k)
        total = total + (psi_k + psi_nk) * term
    half = x / 2.0
    y = (2.0 / math.pi) * np.log(half) * _j_small(x, n) - (half ** n / math.pi) * total
    if n == 1:
        y = y - 1.0 / (math.pi * half)
    return y


_GL6_T, _GL6_W = np.polynomial.legendre.leggauss(96)
_GL6_T = (_GL6_T + 1.0) * 3.5  # [0, 7]: e^{-x sinh t} < 1e-230 beyond it for x >= 8
_GL6_W = _GL6_W * 3.5


def _y_integral(x, n):
    t = _GL_T[None, :]
    first = (np.sin(x[:, None] * np.sin(t) - n * t) @ _GL_W) / math.pi
    u = _GL6_T[None, :]
    f = (np.exp(n * u) + (-1.0) ** n * np.exp(-n * u)) * np.exp(-x[:, None] * np.sinh(u))
    return first - (f @ _GL6_W) / math.pi


def _y_small(x, n):
    out = np.empty_like(x)
    lo = x <= _SERIES
    out[lo] = _y_series(x[lo], n)
    out[~lo] = _y_integral(x[~lo], n)
    return out


def _bessel_j(n):
    def fn(x):
        out = np.empty_like(x)
        ax = np.abs(x)
        out[np.isnan(x) | np.isinf(x)] = np.nan  # torch's kernels give NaN at +-inf
        small = ax <= _BIG
        if small.any():
            out[small] = _j_small(ax[small], n)
        big = (ax > _BIG) & np.isfinite(x)
        if big.any():
            out[big] = _hankel(ax[big], n)[0]
        if n % 2:
            out = np.where(x < 0, -out, out)
        return out
    return fn


def _bessel_y(n):
    def fn(x):
        out = np.full(x.shape, np.nan)
        out[x == 0] = -np.inf  # +inf stays NaN, as torch's kernels give
        small = (x > 0) & (x <= _BIG)
        if small.any():
            out[small] = _y_small(x[small], n)
        big = (x > _BIG) & np.isfinite(x)
        if big.any():
            out[big] = _hankel(x[big], n)[1]
        return out
    return fn


special_bessel_j0 = _sf._unary(_bessel_j(0), "bessel_j0_cpu", low=False)
special_bessel_j1 = _sf._unary(_bessel_j(1), "bessel_j1_cpu", low=False)
special_bessel_y0 = _sf._unary(_bessel_y(0), "bessel_y0_cpu", low=False)
special_bessel_y1 = _sf._unary(_bessel_y(1), "bessel_y1_cpu", low=False)


# ---- Airy Ai ------------------------------------------------------------------------------------------
# Ai(x) = c1 f(x) - c2 g(x) with the Maclaurin series f = sum x^3k / ((3k)(3k-1) ...), g = x sum ... (DLMF 9.4.1),
# c1 = Ai(0), c2 = -Ai'(0); accurate to ~1e-11 on [-7, 2] (the alternating terms grow like exp(2/3 |x|^1.5)).
# Above 2: Ai(x) = sqrt(x / 3) / pi * K_1/3(zeta), zeta = 2/3 x^1.5, with K from the trapezoidal integral above.
# Below -7: the asymptotic expansion in cos/sin(zeta - pi/4) (DLMF 9.7.9); its smallest term there is ~1e-11.
_AI0 = 3.0 ** (-2.0 / 3.0) / math.gamma(2.0 / 3.0)
_AIP0 = 3.0 ** (-1.0 / 3.0) / math.gamma(1.0 / 3.0)
_AIRY_ZERO_ABOVE = 103.892  # Ai underflows float64 beyond this: PyTorch returns 0


def _airy_u(n):
    u = [1.0]
    for k in range(1, n):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
    return u


_AIRY_U = _airy_u(24)


def _airy_series(x):
    x3 = x * x * x
    f, g = np.ones_like(x), x.copy()
    a, b = np.ones_like(x), x.copy()
    for k in range(1, 60):
        a = a * x3 / ((3 * k) * (3 * k - 1))
        b = b * x3 / ((3 * k) * (3 * k + 1))
        f += a
        g += b
    return _AI0 * f - _AIP0 * g


def _airy_negative(x):
    z = -x
    zeta = 2.0 / 3.0 * z * np.sqrt(z)
    p, q = np.zeros_like(z), np.zeros_like(z)
    inv = 1.0 / zeta
    power = np.ones_like(z)
    for k, u in enumerate(_AIRY_U):
        term = u * power
        if k % 2 == 0:
            p += term if k % 4 == 0 else -term
        else:
            q += term if k % 4 == 1 else -term
        power = power * inv
    phase = zeta - np.pi / 4
    return (np.cos(phase) * p + np.sin(phase) * q) / (math.sqrt(math.pi) * np.sqrt(np.sqrt(z)))


def _airy_ai(x):
    out = np.full(x.shape, np.nan)  # NaN and both infinities give NaN, as torch's kernel does
    out[(x > _AIRY_ZERO_ABOVE) & np.isfinite(x)] = 0.0
    mid = (x >= -7.0) & (x <= 2.0)
    if mid.any():
        out[mid] = _airy_series(x[mid])
    pos = (x > 2.0) & (x <= _AIRY_ZERO_ABOVE)
    if pos.any():
        xp = x[pos]
        zeta = 2.0 / 3.0 * xp * np.sqrt(xp)
        out[pos] = np.sqrt(xp / 3.0) / np.pi * _kv_scaled(zeta, 1.0 / 3.0) * np.exp(-zeta)
    neg = (x < -7.0) & np.isfinite(x)
    if neg.any():
        out[neg] = _airy_negative(x[neg])
    return out


special_airy_ai = _sf._unary(_airy_ai, "airy_ai_cpu", low=False)
