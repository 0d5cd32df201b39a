"""torch.special's orthogonal polynomials (aten/src/ATen/native/Math.h *_polynomial_*_forward), on NumPy.

Each takes x and n (n is truncated to int64, as ATen's kernels cast it), computes in the result dtype
(float32 stays float32) and follows ATen's branches in its order: n < 0 gives 0, the edge values of x
(|x| == 1, or x in {0, 1} for the shifted ones) have closed values, large n inside the interval uses the
trigonometric form, and the rest runs the three-term recurrence for n - 1 steps.
"""
import numpy as np

from ember.core import dtype as _dt
from ember.kernels.cpu import pointwise as _pw

_LOW = (np.dtype(np.float16), _dt.bfloat16.np)


def _prep(x, n, kname):
    rt = _pw._float_rt(x, n)
    if rt.category == _dt.COMPLEX or rt.np in _LOW:
        raise _pw._not_impl(kname, rt)
    xa = np.asarray(_pw._to(x, rt.np))
    na = np.asarray(_pw._to(n, rt.np))
    xa, na = np.broadcast_arrays(xa, na)
    ni = na.astype(np.int64)  # NaN and out-of-range become INT64_MIN, as the C++ cast does on x86
    return rt, np.array(xa, dtype=rt.np), ni


def _recurrence(x, n, q1, step, out, rest):
    """out[rest] = the value after n - 1 steps of (p, q) -> (q, step(j, x, p, q)) from (1, q1);
    n == 0 gives 1 and n == 1 gives q1."""
    xs, ns, q = x[rest], n[rest], q1[rest]
    pos = np.nonzero(rest.ravel())[0]
    flat = out.reshape(-1)
    res = np.ones_like(xs)
    res[ns == 1] = q[ns == 1]
    flat[pos] = res
    act = ns >= 2
    xs, ns, q, pos = xs[act], ns[act], q[act], pos[act]
    p = np.ones_like(xs)
    j = 1
    while xs.size:
        p, q = q, step(j, xs, p, q)
        done = ns == j + 1
        if done.any():
            flat[pos[done]] = q[done]
            keep = ~done
            xs, ns, p, q, pos = xs[keep], ns[keep], p[keep], q[keep], pos[keep]
        elif np.isnan(q).all() and np.isnan(p).all():  # NaN stays NaN for every later step
            flat[pos] = q
            break
        j += 1
    return out


def _cheb_step(c):
    return lambda j, xs, p, q: c(xs) * q - p


def _chebyshev(x, n, kname, shifted, threshold, edge, closed, q1):
    rt, x, n = _prep(x, n, kname)
    out = np.zeros(x.shape, rt.np)
    one = x.dtype.type(1)
    y = (x + x - one) if shifted else x  # the argument of the unshifted polynomial
    neg = n < 0
    e_val, e_mask = edge(x, n)
    e_mask &= ~neg
    big = (n > threshold) & (np.abs(y) < one) & ~neg & ~e_mask
    rest = ~(neg | e_mask | big)
    if big.any():
        nb = n[big].astype(rt.np)
        with np.errstate(all="ignore"):
            out[big] = closed(nb, y[big], x.dtype.type)
    out[e_mask] = e_val[e_mask]
    c = (lambda xs: (xs + xs - one) + (xs + xs - one)) if shifted else (lambda xs: xs + xs)
    _recurrence(x, n, q1(x), _cheb_step(c), out, rest)
    return out


def _f(n, t):
    return n.astype(t)


# ---- Chebyshev T, U, V, W -------------------------------------------------------------------------
def _edge_t(x, n):
    a = np.abs(x) == 1
    return np.where((x > 0) | (n % 2 == 0), 1, -1).astype(x.dtype), a


def _edge_u(x, n):
    a = np.abs(x) == 1
    v = _f(n + 1, x.dtype)
    return np.where((x > 0) | (n % 2 == 0), v, -v), a


def _edge_v(x, n):
    a = np.abs(x) == 1
    v = _f(n + n + 1, x.dtype)
    return np.where(x > 0, x.dtype.type(1), np.where(n % 2 == 0, v, -v)), a


def _edge_w(x, n):
    a = np.abs(x) == 1
    v = _f(n + n + 1, x.dtype)
    return np.where(x > 0, v, np.where(n % 2 == 0, 1, -1).astype(x.dtype)), a


def _closed_t(nb, y, t):
    return np.cos(nb * np.arccos(y))


def _closed_u(nb, y, t):
    s = np.sin(np.arccos(y))
    return np.where(s != 0, np.sin((nb + t(1)) * np.arccos(y)) / s,
                    (nb + t(1)) * np.cos((nb + t(1)) * np.arccos(y)) / y)


def _closed_v(nb, y, t):
    a = np.arccos(y)
    odd = (nb.astype(np.int64) % 2) != 0
    v = nb + nb + t(1)
    return np.where(np.sin(a / t(2)) != t(1), np.cos((nb + t(0.5)) * a) / np.cos(a / t(2)),
                    np.where(odd, -v, v))


def _closed_w(nb, y, t):
    a = np.arccos(y)
    odd = (nb.astype(np.int64) % 2) != 0
    # cos(acos(y) / 2) == 1 only at y == 1, where W_n(1) = 2n + 1
    return np.where(np.cos(a / t(2)) != t(1), np.sin((nb + t(0.5)) * a) / np.sin(a / t(2)),
                    np.where(y > 0, nb + nb + t(1), np.where(odd, t(-1), t(1))))


def special_chebyshev_polynomial_t(x, n):
    return _chebyshev(x, n, "chebyshev_polynomial_t_cpu", False, 6, _edge_t, _closed_t, lambda x: x)


def special_chebyshev_polynomial_u(x, n):
    return _chebyshev(x, n, "chebyshev_polynomial_u_cpu", False, 8, _edge_u, _closed_u, lambda x: x + x)


def special_chebyshev_polynomial_v(x, n):
    return _chebyshev(x, n, "chebyshev_polynomial_v_cpu", False, 8, _edge_v, _closed_v,
                      lambda x: x + x - x.dtype.type(1))


def special_chebyshev_polynomial_w(x, n):
    return _chebyshev(x, n, "chebyshev_polynomial_w_cpu", False, 8, _edge_w, _closed_w,
                      lambda x: x + x + x.dtype.type(1))


# ---- shifted Chebyshev: the same polynomials of 2x - 1, with edges at x = 1 and x = 0 --------------
def _sedge(at1, at0):
    def edge(x, n):
        one, zero = x == 1, x == 0
        return np.where(one, at1(x, n), at0(x, n)).astype(x.dtype), one | zero
    return edge


def _sign_n(x, n, v):
    return np.where(n % 2 == 0, v, -v)


def _q1_shift(k):
    def q1(x):
        one = x.dtype.type(1)
        y = x + x - one
        return y + y + x.dtype.type(k)
    return q1


def special_shifted_chebyshev_polynomial_t(x, n):
    edge = _sedge(lambda x, n: np.ones(x.shape), lambda x, n: _sign_n(x, n, np.ones(x.shape)))
    return _chebyshev(x, n, "shifted_chebyshev_polynomial_t_cpu", True, 6, edge, _closed_t,
                      lambda x: x + x - x.dtype.type(1))


def special_shifted_chebyshev_polynomial_u(x, n):
    edge = _sedge(lambda x, n: _f(n + 1, x.dtype), lambda x, n: _sign_n(x, n, _f(n + 1, x.dtype)))
    return _chebyshev(x, n, "shifted_chebyshev_polynomial_u_cpu", True, 6, edge, _closed_u, _q1_shift(0))


def special_shifted_chebyshev_polynomial_v(x, n):
    edge = _sedge(lambda x, n: np.ones(x.shape), lambda x, n: _sign_n(x, n, _f(n + n + 1, x.dtype)))
    return _chebyshev(x, n, "shifted_chebyshev_polynomial_v_cpu", True, 6, edge, _closed_v, _q1_shift(-1))


def special_shifted_chebyshev_polynomial_w(x, n):
    edge = _sedge(lambda x, n: _f(n + n + 1, x.dtype), lambda x, n: _sign_n(x, n, np.ones(x.shape)))
    return _chebyshev(x, n, "shifted_chebyshev_polynomial_w_cpu", True, 4, edge, _closed_w, _q1_shift(1))


# ---- Hermite, Laguerre, Legendre --------------------------------------------------------------------
def _plain(x, n, kname, q1, step, edge=None):
    rt, x, n = _prep(x, n, kname)
    out = np.zeros(x.shape, rt.np)
    rest = ~(n < 0)
    if edge is not None:
        e_val, e_mask = edge(x, n)
        e_mask &= rest
        out[e_mask] = e_val[e_mask]
        rest &= ~e_mask
    _recurrence(x, n, q1(x), step, out, rest)
    return out


def _fma(a, b, c):
    """a * b + c rounded once, as the fused multiply-add ATen's vectorised CPU kernels compile the Hermite
    recurrences to: exact for float32 (the float64 product of two float32 values is exact); float64
    rounds the product first."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)
    return a * b + c


def special_hermite_polynomial_h(x, n):
    return _plain(x, n, "hermite_polynomial_h_cpu", lambda x: x + x,
                  lambda j, xs, p, q: _fma(xs + xs, q, -((2 * j) * p)))


def special_hermite_polynomial_he(x, n):
    return _plain(x, n, "hermite_polynomial_he_cpu", lambda x: x, lambda j, xs, p, q: _fma(xs, q, -(j * p)))


def special_laguerre_polynomial_l(x, n):
    def edge(x, n):
        return np.ones_like(x), np.abs(x) == 0
    return _plain(x, n, "laguerre_polynomial_l_cpu", lambda x: x.dtype.type(1) - x,
                  lambda j, xs, p, q: (((j + j) + (xs.dtype.type(1) - xs)) * q - j * p) / (j + 1), edge)


def special_legendre_polynomial_p(x, n):
    def edge(x, n):
        return np.where((x > 0) | (n % 2 == 0), 1, -1).astype(x.dtype), np.abs(x) == 1
    return _plain(x, n, "legendre_polynomial_p_cpu", lambda x: x,
                  lambda j, xs, p, q: ((j + j + 1) * xs * q - j * p) / (j + 1), edge)


for _name in [k for k in list(globals()) if k.startswith("special_")]:
    globals()[_name] = _pw._broadcasting(globals()[_name])
del _name
