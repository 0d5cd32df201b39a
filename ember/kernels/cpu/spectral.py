"""CPU kernels of _fft_r2c / _fft_c2r / _fft_c2c on numpy.fft.

NumPy's pocketfft transforms float32/complex64 in double precision and rounds once, where PyTorch's
CPU build (MKL's DFTI) computes in single precision. The complex-to-complex transforms of the small
lengths MKL computes with fixed codelets (1-6, 8, 10, 12, 15) are done here in float32 in MKL's
operation order (`_c2c32`), so multi-step results (hfftn: c2c, then c2r) carry torch's rounding;
other lengths, and the real transforms, keep NumPy's correctly rounded result.
`normalization` is ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n; NumPy's `norm` names the
same scalings by direction.
"""
import numpy as np

from ember.core import dtype as _dt
from ember.kernels.meta import spectral as _m

_NP2DT = _dt.NP2DT
_FORWARD_NORM = ("backward", "ortho", "forward")  # a forward transform scaled by mode 0, 1, 2
_INVERSE_NORM = ("forward", "ortho", "backward")  # an inverse transform scaled by mode 0, 1, 2


def _signal_check(sizes):
    for n in sizes:  # pocketfft refuses empty signals: PyTorch's words for the public functions' check
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")


def fft_r2c(a, dim, normalization, onesided):
    d = _NP2DT[a.dtype]
    _m.real_check(d)
    dims = _m.fft_dims(a.ndim, dim, normalization)
    _m.last_dim(dims)
    _signal_check([a.shape[k] for k in dims])
    fn = np.fft.rfftn if onesided else np.fft.fftn
    r = fn(a, axes=dims, norm=_FORWARD_NORM[normalization])
    return r.astype(d.to_complex().np, copy=False)


def fft_c2r(a, dim, normalization, last_dim_size):
    d = _NP2DT[a.dtype]
    _m.complex_check(d)
    dims = _m.fft_dims(a.ndim, dim, normalization)
    last = _m.last_dim(dims)
    s = [a.shape[k] for k in dims[:-1]] + [last_dim_size]
    _signal_check(s)
    if a.shape[last] < last_dim_size // 2 + 1:  # pocketfft reads last_dim_size // 2 + 1 values
        raise RuntimeError(f"_fft_c2r: expected at least {last_dim_size // 2 + 1} values in dimension {last}, "
                           f"but got {a.shape[last]}")
    r = np.fft.irfftn(a, s=s, axes=dims, norm=_INVERSE_NORM[normalization])
    return r.astype(d.to_real().np, copy=False)


# ---- complex64 transforms in MKL's float32 order ------------------------------------------------------
# The radix-2/3/4/5/8 butterflies are pocketfft's (pass2/3/4/8 exactly; pass5 with MKL's grouping
# t0 + (t1 + t2) and t0 + (a*t1 + b*t2)); 6, 10, 12 and 15 are Good-Thomas prime-factor transforms
# (no twiddles) doing the odd factor's butterflies first. Checked bitwise against torch 2.13's CPU
# transforms, forward and inverse, for each length alone and along several axes.
_F32 = np.float32
_C64 = np.complex64


def _cx(re, im):
    out = np.empty(re.shape, _C64)
    out.real = re
    out.imag = im
    return out


def _rot90(a, fwd):  # multiply by -i (forward) or +i (inverse)
    return _cx(a.imag, -a.real) if fwd else _cx(-a.imag, a.real)


def _k2(x, fwd):
    return [x[0] + x[1], x[0] - x[1]]


def _k3(x, fwd):
    twr, twi = _F32(-0.5), _F32((-1 if fwd else 1) * 0.8660254037844386)
    t0, t1, t2 = x[0], x[1] + x[2], x[1] - x[2]
    ca = _cx(t0.real + t1.real * twr, t0.imag + t1.imag * twr)
    cb = _cx(-(t2.imag * twi), t2.real * twi)
    return [t0 + t1, ca + cb, ca - cb]


def _k4(x, fwd):
    t2, t1 = x[0] + x[2], x[0] - x[2]
    t3, t4 = x[1] + x[3], _rot90(x[1] - x[3], fwd)
    return [t2 + t3, t1 + t4, t2 - t3, t1 - t4]


_TW5 = (0.30901699437494745, 0.9510565162951535, -0.8090169943749475, 0.5877852522924731)


def _k5(x, fwd):
    sg = -1 if fwd else 1
    w1r, w1i, w2r, w2i = _F32(_TW5[0]), _F32(sg * _TW5[1]), _F32(_TW5[2]), _F32(sg * _TW5[3])
    t0, t1, t4, t2, t3 = x[0], x[1] + x[4], x[1] - x[4], x[2] + x[3], x[2] - x[3]

    def part(ar, br, ai, bi):
        ca = _cx(t0.real + (ar * t1.real + br * t2.real), t0.imag + (ar * t1.imag + br * t2.imag))
        cb = _cx(-(ai * t4.imag + bi * t3.imag), ai * t4.real + bi * t3.real)
        return ca + cb, ca - cb

    y1, y4 = part(w1r, w2r, w1i, w2i)
    y2, y3 = part(w2r, w1r, w2i, -w1i)
    return [_cx(t0.real + (t1.real + t2.real), t0.imag + (t1.imag + t2.imag)), y1, y2, y3, y4]


_HSQT2 = _F32(0.7071067811865476)


def _k8(x, fwd):
    h = _HSQT2
    a1, a5, a3, a7 = x[1] + x[5], x[1] - x[5], x[3] + x[7], x[3] - x[7]
    a1, a3 = a1 + a3, _rot90(a1 - a3, fwd)
    a7 = _rot90(a7, fwd)
    a5, a7 = a5 + a7, a5 - a7
    if fwd:  # ROTX45 / ROTX135
        a5 = _cx(h * (a5.real + a5.imag), h * (a5.imag - a5.real))
        a7 = _cx(h * (a7.imag - a7.real), h * (-a7.real - a7.imag))
    else:
        a5 = _cx(h * (a5.real - a5.imag), h * (a5.imag + a5.real))
        a7 = _cx(h * (-a7.real - a7.imag), h * (a7.real - a7.imag))
    a0, a4, a2, a6 = x[0] + x[4], x[0] - x[4], x[2] + x[6], _rot90(x[2] - x[6], fwd)
    p, m, q, r = a0 + a2, a0 - a2, a4 + a6, a4 - a6
    return [p + a1, q + a5, m + a3, r + a7, p - a1, q - a5, m - a3, r - a7]


_KERNELS = {2: _k2, 3: _k3, 4: _k4, 5: _k5, 8: _k8}
_PFA = {6: (2, 3), 10: (2, 5), 12: (4, 3), 15: (3, 5)}  # n: (a, b), the size-b butterflies first


def _dft_last(x, fwd):
    """The transform of x (complex64) along its last axis, for n in _KERNELS, _PFA or 1."""
    n = x.shape[-1]
    if n == 1:
        return x.copy()
    k = _KERNELS.get(n)
    if k is not None:
        return np.stack(k([x[..., j] for j in range(n)], fwd), -1)
    a, b = _PFA[n]  # index n = (b*n1 + a*n2) mod n; output k from (k mod a, k mod b)
    inner = [_KERNELS[b]([x[..., (b * n1 + a * n2) % n] for n2 in range(b)], fwd) for n1 in range(a)]
    outer = [_KERNELS[a]([inner[n1][k2] for n1 in range(a)], fwd) for k2 in range(b)]
    return np.stack([outer[k % b][k % a] for k in range(n)], -1)


def _c2c32(a, dims, normalization, forward):
    """complex64 c2c one axis at a time, the last of dims first, each result kept in complex64;
    the normalisation scale (a float) multiplies the result."""
    r = a
    for d in reversed(dims):
        if r.shape[d] == 1 or r.shape[d] in _KERNELS or r.shape[d] in _PFA:
            r = np.moveaxis(_dft_last(np.moveaxis(r, d, -1), forward), -1, d)
        else:
            fn = np.fft.fft if forward else np.fft.ifft
            r = fn(r, axis=d, norm="backward" if forward else "forward").astype(_C64)
    if normalization:
        n = 1
        for d in dims:
            n *= a.shape[d]
        r = r * _F32(1.0 / n if normalization == 2 else 1.0 / np.sqrt(float(n)))
    return np.ascontiguousarray(r)


def _mkl_sizes(a, dims):
    return any(a.shape[d] in _KERNELS or a.shape[d] in _PFA for d in dims)


def fft_c2c(a, dim, normalization, forward):
    d = _NP2DT[a.dtype]
    _m.complex_check(d)
    dims = _m.fft_dims(a.ndim, dim, normalization)
    if not dims:
        return a.copy()
    _signal_check([a.shape[k] for k in dims])
    if a.dtype == _C64 and _mkl_sizes(a, dims):
        return _c2c32(a, dims, normalization, forward)
    if forward:
        r = np.fft.fftn(a, axes=dims, norm=_FORWARD_NORM[normalization])
    else:
        r = np.fft.ifftn(a, axes=dims, norm=_INVERSE_NORM[normalization])
    return r.astype(d.np, copy=False)
