"""Special-function kernels on NumPy arrays (ATen's Math.h: gamma family, Bessel I, zeta, ndtr).

digamma and trigamma follow ATen's algorithms step by step in the input's own float dtype (their
results at poles and in float32 depend on those steps); the rest is computed in float64 and rounded
once. The Chebyshev coefficients below were fitted with mpmath (40 digits) at Chebyshev nodes.
Integer and bool inputs become the default float dtype; float16 / bfloat16 run in float32.
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.kernels.cpu import pointwise as _pw
from ember.kernels.meta import special_functions as _m

_NP2DT = _dt.NP2DT
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_LOW = _pw._LOW
_PI = math.pi
_MACHEP = 1.11022302462515654042e-16

# lgamma(2 + z) = (1 - euler_gamma) z + sum_k (-1)^k (zeta(k) - 1) / k z^k, used for |z| <= 1/2
_ZETA_M1 = (0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
            0.01734306198444914, 0.008349277381922827, 0.00407735619794434, 0.0020083928260822143,
            0.0009945751278180853, 0.0004941886041194645, 0.0002460865533080483, 0.00012271334757848915,
            6.124813505870483e-05, 3.058823630702049e-05, 1.528225940865187e-05, 7.637197637899763e-06,
            3.81729326499984e-06, 1.908212716553939e-06, 9.539620338727962e-07, 4.769329867878064e-07,
            2.38450502727733e-07, 1.1921992596531106e-07, 5.960818905125948e-08, 2.980350351465228e-08,
            1.4901554828365043e-08, 7.45071178983543e-09, 3.725334024788457e-09, 1.862659723513049e-09,
            9.313274324196682e-10, 4.656629065033784e-10)
_LG2 = tuple((-1.0) ** k * c / k for k, c in zip(range(2, 2 + len(_ZETA_M1)), _ZETA_M1))
_ONE_MINUS_EULER = 0.42278433509846713939
# Stirling: B_2k / (2k (2k - 1)), k = 1..8
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
_HALF_LOG_2PI = 0.91893853320467274178

# I0(x) e^-x and I1(x) e^-x / x for 0 <= x <= 8 in t = x / 4 - 1; I0(x) e^-x sqrt(x) and
# I1(x) e^-x sqrt(x) for x > 8 in t = 16 / x - 1
_I0A = (0.33839763720473803, -0.3046826723431984, 0.17162090152220877, -0.09490109704804764,
        0.04930528423967071, -0.02373741480589947, 0.010546460394594998, -0.004324309995050576,
        0.0016394756169413357, -0.0005763755745385824, 0.00018850288509584165, -5.754195010082104e-05,
        1.6448448070728896e-05, -4.4167383584587505e-06, 1.1173875391201037e-06, -2.670793853940612e-07,
        6.046995022541919e-08, -1.300025009986248e-08, 2.6598237246823866e-09, -5.189795601635263e-10,
        9.675809035373237e-11, -1.726826291441556e-11, 2.95505266312964e-12, -4.856446783111929e-13,
        7.676185498604936e-14, -1.1685332877993451e-14, 1.715391285555133e-15, -2.431279846547955e-16,
        3.3307945188222384e-17, -4.4153416464793395e-18, 5.669178006921496e-19)
_I1A = (0.12629359322181682, -0.17641651835783406, 0.1026436586898471, -0.05294598120809499,
        0.024726449030626516, -0.010564084894626197, 0.004156422944312888, -0.0015135724506312532,
        0.0005122859561685758, -0.00016176081582589674, 4.781565107550054e-05, -1.3273163656039436e-05,
        3.4702513081376785e-06, -8.568720264695455e-07, 2.0032947535521353e-07, -4.445059128796328e-08,
        9.381537386495773e-09, -1.8872497517228294e-09, 3.625590281552117e-10, -6.663489723502027e-11,
        1.1736186298890901e-11, -1.9839743977649436e-12, 3.223793365945575e-13, -5.042185504727912e-14,
        7.600684294735408e-15, -1.1055969477353862e-15, 1.5536319577362005e-16, -2.111421214358166e-17,
        2.7779141127610464e-18, -3.541581772542136e-19)
_I0B = (0.4022452055070544, 0.0033691164782556943, 6.889758346916825e-05, 2.8913705208347567e-06,
        2.0489185894690638e-07, 2.266668990498178e-08, 3.3962320257083865e-09, 4.94060238822497e-10,
        1.1889147107846439e-11, -3.1499165279632416e-11, -1.3215811840447713e-11, -1.7941785315068062e-12,
        7.180124451383666e-13, 3.8527783827421426e-13, 1.54008621752141e-14, -4.150569347287222e-14,
        -9.554846698828307e-15, 3.811680669352621e-15, 1.7725601330565245e-15, -3.425485619677142e-16,
        -2.827623980516646e-16, 3.461222867695658e-17, 4.465621420302078e-17, -4.8305044859640105e-18,
        -7.233180488043844e-18, 9.921475415657038e-19, 1.1936508909418693e-18, -2.488709852186011e-19)
_I1B = (0.38928811750914005, -0.009761097491361469, -0.00011058893876262371, -3.882564808877691e-06,
        -2.512236237870209e-07, -2.6314688468895196e-08, -3.835380385964237e-09, -5.589743462196584e-10,
        -1.8974958123505413e-11, 3.2526035830154884e-11, 1.4125807436613782e-11, 2.0356285441470896e-12,
        -7.198551776245908e-13, -4.0835511110921974e-13, -2.1015418427726643e-14, 4.2724400167119517e-14,
        1.0420276984128802e-14, -3.814403072437007e-15, -1.8803547755107805e-15, 3.30820231092085e-16,
        2.9626289976460157e-16, -3.209525921991637e-17, -4.6503053684947827e-17, 4.414348323093937e-18,
        7.517296311011398e-18, -9.314178870907263e-19, -1.2421932752759928e-18, 2.414276734641215e-19)

# Hurwitz zeta's Euler-Maclaurin denominators (2k)! / B_2k, as ATen's zeta has them
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
# digamma's asymptotic series (ATen's A[], highest power first) and psi(10)
_PSI_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
          8.33333333333333333333E-2)
_PSI_10 = 2.25175258906672110764

# Acklam's rational approximation of ndtri (relative error 1.2e-9), refined by a Halley step
_AK_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00)
_AK_B = (-5.447609879822406e+01, 1.615585008082314e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01)
_AK_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758276161838e+00, -2.549671667129017e+00,
         4.374664141464968e+00, 2.938163982698783e+00)
_AK_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
_SQRT_2PI = 2.50662827463100050242
_SQRT1_2 = 0.70710678118654752440


# ---- helpers -------------------------------------------------------------------------------------
def _poly(c, x):
    """Horner: c[0] x^(n-1) + ... + c[-1]."""
    r = np.full_like(x, c[0])
    for ck in c[1:]:
        r = r * x + ck
    return r


def _cheb(c, t):
    b0 = np.zeros_like(t)
    b1 = np.zeros_like(t)
    t2 = t + t
    for ck in c[:0:-1]:
        b0, b1 = t2 * b0 - b1 + ck, b0
    return t * b0 - b1 + c[0]


def _unary(fn, kname, low=True, native=False):
    """A float kernel: ints/bool -> default float; half types through float32 (or not implemented);
    fn gets a float32/float64 array (in float64 unless `native`) and returns one."""
    def kernel(a):
        d = a.dtype
        c = _NP2DT[d].category
        if c == _dt.COMPLEX or (d in _LOW and not low):
            raise _pw._not_impl(kname, _NP2DT[d])
        out = d if c == _dt.FLOAT else _dt.defaults.float.np
        work = _F32 if native and out != _F64 else _F64
        x = np.asarray(a, work)
        # 0-d as 1-d: the series helpers write into arrays (out=), which NumPy scalars are not
        return np.asarray(fn(x.reshape(1) if x.ndim == 0 else x)).reshape(x.shape).astype(out, copy=False)
    kernel.__name__ = kname
    return kernel


def _binary_rt(a, b, kname, low=True):
    rt = _pw._float_rt(a, b)
    if rt.category == _dt.COMPLEX or (not low and rt.np in _LOW):
        raise _pw._not_impl(kname, rt)
    return rt


def _f64(x):
    return _pw._to(x, _F64)


# ---- lgamma ----------------------------------------------------------------------------------------
def _lgamma_pos(x):
    """lgamma for x > 0 (float64), with relative accuracy near its zeros at 1 and 2."""
    r = np.empty_like(x)
    big = x >= 12.0
    if big.any():
        y = x[big]
        iz = 1.0 / (y * y)
        s = _poly(_STIRLING[::-1], iz) / y
        r[big] = (y - 0.5) * np.log(y) - y + _HALF_LOG_2PI + s
    sm = ~big
    if sm.any():
        y = x[sm].copy()
        prod = np.ones_like(y)
        for _ in range(10):                      # lgamma(y) = log(y - 1) + lgamma(y - 1) down to y < 2.5
            m = y >= 2.5
            y = np.where(m, y - 1.0, y)
            prod = np.where(m, prod * y, prod)
        lo = y < 1.5                             # lgamma(y) = lgamma(y + k) - log(y ... (y + k - 1))
        tiny = y < 0.5
        sub = np.where(tiny, np.log(y * (y + 1.0)), np.where(lo, np.log1p(y - 1.0), 0.0))
        z = np.where(tiny, y, np.where(lo, y - 1.0, y - 2.0))
        ser = z * (_ONE_MINUS_EULER + z * _poly(_LG2[::-1], z))
        r[sm] = ser - sub + np.log(prod)
    return r


def _lgamma64(x):
    r = np.full_like(x, np.inf)
    pos = (x > 0) & (x < np.inf)
    r[pos] = _lgamma_pos(x[pos])
    neg = (x < 0) & (x != np.floor(x))
    if neg.any():
        y = x[neg]
        s = np.abs(np.sin(_PI * (y - np.round(y))))
        r[neg] = np.log(_PI / s) - _lgamma_pos(1.0 - y)
    r[np.isnan(x)] = np.nan
    return r


lgamma = _unary(_lgamma64, "lgamma_vml_cpu")
special_gammaln = lgamma


# ---- digamma / trigamma (ATen's calc_digamma / calc_trigamma, in the working dtype) -------------------
def _digamma_any(x):
    t = x.dtype.type
    neg = x < 0
    whole = x == np.trunc(x)
    y = np.where(neg, t(1) - x, x)
    res = np.zeros_like(x)
    for _ in range(10):
        m = y < 10
        res = np.where(m, res - t(1) / y, res)
        y = np.where(m, y + t(1), y)
    z = t(1) / (y * y)
    asym = np.where(y < t(1e17), z * _poly([t(c) for c in _PSI_A], z), t(0))
    pos = np.where(y == 10, res + t(_PSI_10), res + np.log(y) - (t(0.5) / y) - asym)
    if neg.any():
        r = np.asarray(x, _F64) - np.trunc(np.asarray(x, _F64))
        refl = (_PI / np.tan(_PI * r)).astype(x.dtype)
        pos = np.where(neg, pos - refl, pos)
        pos = np.where(neg & whole, t(np.nan), pos)
    return np.where(x == 0, np.copysign(t(np.inf), -x), pos)


def _trigamma_any(x):
    t = x.dtype.type
    pi = t(_PI)
    low = x < t(0.5)
    s = np.sin(pi * x)
    res = np.where(low, -(pi * pi) / (s * s), t(0))
    y = np.where(low, t(1) - x, x)
    for _ in range(6):
        res = res + t(1) / (y * y)
        y = y + t(1)
    ixx = t(1) / (y * y)
    res = res + (t(1) + t(1) / (t(2) * y) + ixx * (t(1 / 6) - ixx * (t(1 / 30) - ixx * t(1 / 42)))) / y
    return np.where(low, -res, res)


digamma = _unary(_digamma_any, "digamma", native=True)
special_psi = special_digamma = digamma
_trigamma = _unary(_trigamma_any, "trigamma", native=True)


# ---- Hurwitz zeta (ATen's Cephes zeta, always in double) --------------------------------------------
def _zeta64(x, q):
    x, q = np.broadcast_arrays(np.asarray(x, _F64), np.asarray(q, _F64))
    shape = x.shape
    x, q = x.reshape(-1).copy(), q.reshape(-1).copy()
    out = np.full(x.shape, np.nan)
    qint = (q <= 0) & (q == np.floor(q))
    fail = (q <= 0) & ~qint & (x != np.floor(x))
    out[qint] = np.inf
    out[x == 1] = np.inf
    live = ~((x == 1) | (x < 1) | qint | fail)
    idx = np.flatnonzero(live)
    x, q = x[idx], q[idx]
    res = np.empty_like(x)
    s = q ** -x
    a = q.copy()
    b = np.zeros_like(x)
    go = np.ones(x.shape, bool)
    i = 0
    while True:
        step = go & ((i < 9) | (a <= 9.0))
        if not step.any():
            break
        i += 1
        a = np.where(step, a + 1.0, a)
        b = np.where(step, a ** -x, b)
        s = np.where(step, s + b, s)
        done = step & (-_MACHEP * s < b) & (b < _MACHEP * s)
        res[done] = s[done]
        go &= ~done
    w = a
    s = s + b * w / (x - 1.0) - 0.5 * b
    aa = np.ones_like(x)
    k = 0.0
    for c in _ZETA_A:
        aa = aa * (x + k)
        b = b / w
        tt = aa * b / c
        s = np.where(go, s + tt, s)
        done = go & (np.abs(tt / s) < _MACHEP)
        res[done] = s[done]
        go &= ~done
        k += 1.0
        aa = aa * (x + k)
        b = b / w
        k += 1.0
    res[go] = s[go]
    out[idx] = res
    return out.reshape(shape)


@_pw._broadcasting  # shapes that do not broadcast: torch's message, not NumPy's
def special_zeta(a, b):
    rt = _binary_rt(a, b, "zeta_cpu", low=False)
    return np.asarray(_zeta64(_f64(a), _f64(b))).astype(rt.np)


# ---- polygamma / mvlgamma --------------------------------------------------------------------------
def polygamma(n, a):
    _m.polygamma_check(n)
    if n == 0:
        return digamma(a)
    if n == 1:
        return _trigamma(a)
    fac = (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0))
    return _unary(lambda x: fac * _zeta64(float(n + 1), x), "polygamma")(a)


special_polygamma = polygamma


def polygamma_(a, n):
    r = polygamma(n, a)
    _m.inplace_check(r, a)
    _pw._write(a, r)


def mvlgamma(a, p):
    _m.mvlgamma_check(_NP2DT[a.dtype], p)
    if a.dtype.kind == "c":
        raise _pw._not_impl("arange_cpu", _NP2DT[a.dtype])
    const = p * (p - 1) * math.log(_PI) * 0.25

    def fn(x):
        args = np.arange(-p * 0.5 + 0.5, 0.5, 0.5)
        return _lgamma64((x[..., None] + args).reshape(-1)).reshape(x.shape + (p,)).sum(-1) + const
    return _unary(fn, "mvlgamma")(a)


special_multigammaln = mvlgamma


# ---- modified Bessel functions I0, I1 (and exponentially scaled) ----------------------------------
def _bessel(x, small, large, odd, scaled):
    ax = np.abs(x)
    r = np.empty_like(x)
    m = ax <= 8.0
    am = ax[m]
    v = _cheb(small, am * 0.25 - 1.0)
    if odd:
        v = v * x[m]
    r[m] = v if scaled else np.exp(am) * v
    g = ~m
    ag = ax[g]
    v = _cheb(large, 16.0 / ag - 1.0)
    if odd:
        v = np.copysign(v, x[g])
    r[g] = v / np.sqrt(ag) if scaled else np.exp(ag) * v / np.sqrt(ag)
    return r


i0 = _unary(lambda x: _bessel(x, _I0A, _I0B, False, False), "i0_vml_cpu")
special_i0 = i0
special_i0e = _unary(lambda x: _bessel(x, _I0A, _I0B, False, True), "i0e_cpu")
special_i1 = _unary(lambda x: _bessel(x, _I1A, _I1B, True, False), "i1_cpu")
special_i1e = _unary(lambda x: _bessel(x, _I1A, _I1B, True, True), "i1e_cpu")


# ---- entr, ndtr, log_ndtr, ndtri ------------------------------------------------------------------
def _entr(x):
    r = np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), np.where(x == 0, 0.0, -np.inf))
    return np.where(np.isnan(x), x, r)


special_entr = _unary(_entr, "entr_cpu")


def special_ndtr(a):
    # ATen composes it: (1 + erf(x * M_SQRT1_2)) * 0.5, in the result dtype
    d = a.dtype
    c = _NP2DT[d].category
    if c == _dt.COMPLEX:
        raise _pw._not_impl("erf_vml_cpu", _NP2DT[d])
    out = d if c == _dt.FLOAT else _dt.defaults.float.np
    x = a.astype(out, copy=False)
    t = x.dtype.type
    return ((t(1) + _pw.erf(x * t(_SQRT1_2))) * t(0.5)).astype(out, copy=False)


def _erfcx(z):
    """exp(z^2) erfc(z) for z >= 0 (float64), from the erfc series' exponent; asymptotic past 30."""
    zc = np.minimum(z, 30.0)
    r = np.exp(_pw._cheb(_pw._ERFC_C, (zc - 3.0) / (zc + 3.0))) / (zc + 3.0)
    iz2 = 0.5 / (z * z)
    asym = (1.0 - iz2 * (1.0 - 3.0 * iz2 * (1.0 - 5.0 * iz2 * (1.0 - 7.0 * iz2 * (1.0 - 9.0 * iz2))))) \
        / (z * 1.7724538509055160273)
    return np.where(z > 30.0, asym, r)


def _log_ndtr64(x):
    t = x * _SQRT1_2
    left = x < -1.0
    r = np.log1p(-_pw._erfc64(t) * 0.5)
    if left.any():
        tl = t[left]
        r[left] = np.log(_erfcx(-tl) * 0.5) - tl * tl
    return r


special_log_ndtr = _unary(_log_ndtr64, "log_ndtr_cpu", low=False)


def _ndtri64(y):
    flip = y > 0.5
    q = np.where(flip, 1.0 - y, y)                 # exact for y > 1/2
    inner = q > 0.02425
    with np.errstate(all="ignore"):
        u = q - 0.5
        s = u * u
        xc = u * _poly(_AK_A, s) / _poly(_AK_B + (1.0,), s)
        lt = np.sqrt(-2.0 * np.log(np.where(inner, 0.5, q)))
        xt = _poly(_AK_C, lt) / _poly(_AK_D + (1.0,), lt)
        x = np.where(inner, xc, xt)
        x = np.where(q > 0, x, -1.0)
        for _ in range(2):                          # Halley on Phi(x) = q
            mid = q > 0.25
            f = np.where(mid, 0.5 * _pw._erf64(x * _SQRT1_2) - u,
                         0.5 * _pw._erfc64(-x * _SQRT1_2) - q)
            phi = np.exp(-0.5 * x * x) / _SQRT_2PI
            d = f / phi
            x = np.where(phi > 0, x - d / (1.0 + 0.5 * x * d), x)
    x = np.where(q == 0, -np.inf, x)
    x = np.where(flip, -x, x)
    return np.where((y < 0) | (y > 1) | np.isnan(y), np.nan, x)


special_ndtri = _unary(_ndtri64, "ndtri_cpu", low=False)


# ---- xlogy / xlog1py -------------------------------------------------------------------------------
def _xlog(log, kname):
    def kernel(a, b):
        rt = _binary_rt(a, b, kname)
        npd = _F32 if rt.np in _LOW else rt.np
        x, y = _pw._to(a, npd), _pw._to(b, npd)
        r = np.where(x == 0, x.dtype.type(0), x * log(y))
        return np.where(np.isnan(y), y, r).astype(rt.np, copy=False)
    kernel.__name__ = kname
    return _pw._broadcasting(kernel)


xlogy = special_xlogy = _xlog(np.log, "xlogy_cpu")
special_xlog1py = _xlog(np.log1p, "xlog1py_cpu")


__all__ = ["lgamma", "special_gammaln", "digamma", "special_psi", "special_digamma", "polygamma",
           "special_polygamma", "polygamma_", "mvlgamma", "special_multigammaln", "i0",
           "special_i0", "special_i0e", "special_i1", "special_i1e", "special_entr", "special_ndtr",
           "special_log_ndtr", "special_ndtri", "special_zeta", "xlogy", "special_xlogy", "special_xlog1py"]
