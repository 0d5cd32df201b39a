"""Spatial nn kernels on NumPy arrays: convolution (im2col + one BLAS matmul), pooling, embedding,
padding, upsampling, im2col/col2im, pixel shuffle.

Convolution is three primitives over the same im2col windows (an `as_strided` view of the padded
input): the forward (windows @ weight), the input gradient (grad @ weight scattered back through
the windows: col2im) and the weight gradient (grad^T @ windows). A transposed convolution's forward
is the input gradient of the convolution it transposes, and its gradients are the forward and the
weight gradient with the roles of input and grad exchanged.
float16/bfloat16 compute in float32 and round back, as PyTorch's CPU kernels accumulate in float.
"""
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember.core import dtype as _dt
from ember.kernels.cpu._glue import _OVERLAP
from ember.kernels.meta import nn_spatial as _m

_C32 = _dt.CHALF_NP

_NP2DT = _dt.NP2DT
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_HALF = (np.dtype(np.float16), _dt.bfloat16.np)
_prod = _m._prod


def _comp(a):
    """The array a kernel computes on: float16/bfloat16 widened to float32."""
    return a.astype(_F32) if a.dtype in _HALF else a


def _back(r, dt):
    return r if r.dtype == dt else r.astype(dt)


# ---- BLAS on the calling thread ---------------------------------------------------------------------------
# Convolution's products are small (a few MFLOP): OpenBLAS's worker threads cost more than they give,
# and on a busy machine their spin-waits slow a product 10-100x. Where NumPy's bundled OpenBLAS has
# openblas_set_num_threads_local, the products here run on the calling thread only.
def _load_blas_local():
    try:
        import ctypes
        import glob
        import os
        libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs",
                                      "libscipy_openblas*.so*"))
        if not libs:
            return None
        f = ctypes.CDLL(libs[0]).openblas_set_num_threads_local
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int]
        return f
    except Exception:  # no such library or symbol: leave BLAS threading alone
        return None


_BLAS_LOCAL = _load_blas_local()


def _dot(a, b):
    f = _BLAS_LOCAL
    if f is None:
        return np.dot(a, b)
    prev = f(1)
    try:
        return np.dot(a, b)
    finally:
        f(prev)


def _matmul(a, b):
    f = _BLAS_LOCAL
    if f is None:
        return np.matmul(a, b)
    prev = f(1)
    try:
        return np.matmul(a, b)
    finally:
        f(prev)


# ---- window helpers ------------------------------------------------------------------------------------------
def _pad_sp(x, nd, pads, value=0):
    """x padded on its last nd dims by pads[i] = (lo, hi) >= 0, with `value`."""
    if not any(lo or hi for lo, hi in pads):
        return x
    sp = x.shape[x.ndim - nd:]
    shape = x.shape[:x.ndim - nd] + tuple(s + lo + hi for s, (lo, hi) in zip(sp, pads))
    out = np.full(shape, value, x.dtype) if value else np.zeros(shape, x.dtype)
    out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(sp, pads))] = x
    return out


def _windows(xp, nd, ks, st, dl, out):
    """Read-only view (..., *out, *ks) of the sliding windows over xp's last nd dims."""
    strides = xp.strides
    n = xp.ndim - nd
    sst = strides[n:]
    return as_strided(xp, xp.shape[:n] + tuple(out) + tuple(ks),
                      strides[:n] + tuple(a * s for a, s in zip(sst, st))
                      + tuple(a * d for a, d in zip(sst, dl)), writeable=False)


def _col2im(cols, nd, in_sp, pd, ks, st, dl, out):
    """Sum windows cols (..., *out, *ks) back onto an input of spatial size in_sp padded by pd."""
    lead = cols.shape[:cols.ndim - 2 * nd]
    sp = tuple(max(s + 2 * p, (o - 1) * t + d * (k - 1) + 1)
               for s, p, o, t, d, k in zip(in_sp, pd, out, st, dl, ks))
    buf = np.zeros(lead + sp, cols.dtype)
    for kidx in np.ndindex(*ks):
        sl = tuple(slice(k * d, k * d + t * (o - 1) + 1, t) for k, d, t, o in zip(kidx, dl, st, out))
        buf[(Ellipsis,) + sl] += cols[(Ellipsis,) + kidx]
    crop = tuple(slice(p, p + s) for p, s in zip(pd, in_sp))
    return np.ascontiguousarray(buf[(Ellipsis,) + crop])


# ---- convolution primitives (x: (N, C, *S), w: (Co, C/g, *K)) ------------------------------------------------
# The im2col matrix is built channels-last, (N*prod(out), prod(K)*C), so its copy reads C-contiguous
# rows; 2-d products go through np.dot (BLAS for transposed operands too), grouped ones through
# np.matmul on contiguous stacks.
def _to_cl(x, nd, pd, g):
    """x (N, C, *S) -> zero-padded channels-last (N, *S_padded, g, C/g)."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    shape = (n,) + tuple(s + 2 * p for s, p in zip(sp, pd)) + (g, c // g)
    xl = np.moveaxis(x, 1, -1).reshape((n,) + tuple(sp) + (g, c // g))
    if any(pd):
        out = np.zeros(shape, x.dtype)
        out[(slice(None),) + tuple(slice(p, p + s) for p, s in zip(pd, sp))] = xl
        return out
    return np.ascontiguousarray(xl)


def _cl_windows(xl, nd, ks, st, dl, out):
    """(N, *Sp, g, cg) -> read-only view (N, *out, *ks, g, cg)."""
    s = xl.strides
    sst = s[1:1 + nd]
    return as_strided(xl, xl.shape[:1] + tuple(out) + tuple(ks) + xl.shape[1 + nd:],
                      s[:1] + tuple(a * t for a, t in zip(sst, st)) + tuple(a * d for a, d in zip(sst, dl))
                      + s[1 + nd:], writeable=False)


def _im2col_cl(x, nd, ks, st, pd, dl, g, out):
    """The im2col matrix: (N*op, kp*C) for g == 1, else (g, N*op, kp*cg)."""
    n, c = x.shape[:2]
    op, kp = _prod(out), _prod(ks)
    if g == 1 and c < 4:  # few channels: kp strided block copies beat one copy of a deep window view
        xl = _to_cl(x, nd, pd, 1)
        cols = np.empty((n,) + tuple(out) + tuple(ks) + (c,), x.dtype)
        lead = (slice(None),) * (1 + nd)
        for kidx in np.ndindex(*ks):
            sl = tuple(slice(k * d, k * d + t * (o - 1) + 1, t) for k, d, t, o in zip(kidx, dl, st, out))
            cols[lead + kidx] = xl[(slice(None),) + sl + (0,)]
        return cols.reshape(n * op, kp * c)
    v = _cl_windows(_to_cl(x, nd, pd, g), nd, ks, st, dl, out)  # (N, *out, *ks, g, cg)
    if g == 1:
        return v.reshape(n * op, kp * c)
    perm = (1 + 2 * nd,) + tuple(range(1 + 2 * nd)) + (2 + 2 * nd,)
    return v.transpose(perm).reshape(g, n * op, kp * (c // g))


def _w_mat(w, g):
    """weight (Co, cg, *K) -> (Co, kp*cg) for g == 1, else (g, cog, kp*cg) (channels last)."""
    co = w.shape[0]
    wl = np.moveaxis(w, 1, -1)
    if g == 1:
        return wl.reshape(co, -1)
    return np.ascontiguousarray(wl).reshape(g, co // g, -1)


def _go_mat(go, g):
    """grad (N, Co, *out) -> (N*op, Co) for g == 1, else (g, N*op, cog)."""
    co = go.shape[1]
    gl = np.moveaxis(go, 1, -1)
    if g == 1:
        return np.ascontiguousarray(gl).reshape(-1, co)
    gl = gl.reshape(gl.shape[:-1] + (g, co // g))
    return np.ascontiguousarray(np.moveaxis(gl, -2, 0)).reshape(g, -1, co // g)


def _conv_fwd(x, w, st, pd, dl, g, out):
    nd = w.ndim - 2
    n = x.shape[0]
    co = w.shape[0]
    a = _im2col_cl(x, nd, w.shape[2:], st, pd, dl, g, out)
    wm = _w_mat(w, g)
    if g == 1:
        r = _dot(a, wm.T).reshape((n,) + tuple(out) + (co,))
        return np.ascontiguousarray(np.moveaxis(r, -1, 1))
    r = _matmul(a, np.ascontiguousarray(wm.transpose(0, 2, 1)))  # (g, N*op, cog)
    r = r.reshape((g, n) + tuple(out) + (co // g,))
    return r.transpose((1, 0, 2 + nd) + tuple(range(2, 2 + nd))).reshape((n, co) + tuple(out))


def _torch_slow_transpose(x, w, g):
    """Whether PyTorch's CPU float32 transposed convolution takes its native path
    (slow_conv_transpose2d/3d: one gemm over the input channels, then col2im/col2vol adding the
    kernel taps in order) rather than oneDNN: ConvParams::use_mkldnn's size rule, for the stride-1
    case this matters to (1-d convolutions are viewed as 2-d (N, C, 1, L) there). float64 and
    complex always take the native path in torch; here they follow the same size rule, as their
    tolerances do not need the order and batches keep the faster single-im2col form."""
    if x.dtype in _HALF:
        return False
    if g > 1 or x.shape[0] > 1:
        return False
    kh = 1 if w.ndim == 3 else w.shape[-2]
    if w.shape[-1] > 3 and kh > 3:
        return False
    lead = x.shape[:2] + ((1,) if x.ndim == 3 else x.shape[2:4])
    return _prod(lead) <= 20480


def _conv_bwd_input(go, w, in_sp, st, pd, dl, g, scatter=False):
    """The input gradient of a convolution, i.e. a transposed convolution's forward. With `scatter`
    it is always grad @ weight scattered back tap by tap in kernel order (PyTorch's native order);
    otherwise stride 1 takes the single-im2col form (same sum, other rounding, faster when small)."""
    nd = w.ndim - 2
    ks = w.shape[2:]
    if not scatter and g == 1 and all(t == 1 and d == 1 and p < k for t, d, p, k in zip(st, dl, pd, ks)):
        # stride 1: the input gradient is a convolution of grad with the flipped, transposed
        # weight over grad padded by k - 1 - p (one im2col + one matmul, no col2im scatter)
        wf = np.ascontiguousarray(w[(slice(None), slice(None)) + (slice(None, None, -1),) * nd].swapaxes(0, 1))
        return _conv_fwd(go, wf, st, tuple(k - 1 - p for k, p in zip(ks, pd)), dl, 1, in_sp)
    n = go.shape[0]
    out = go.shape[2:]
    ks = w.shape[2:]
    cg = w.shape[1]
    gm = _go_mat(go, g)
    wm = _w_mat(w, g)
    if g == 1:
        cols = _dot(gm, wm).reshape((n,) + tuple(out) + tuple(ks) + (1, cg))
    else:
        cols = _matmul(gm, wm).reshape((g, n) + tuple(out) + tuple(ks) + (cg,))
        cols = np.moveaxis(cols, 0, -2)  # (N, *out, *ks, g, cg)
    sp = tuple(max(s + 2 * p, (o - 1) * t + d * (k - 1) + 1)
               for s, p, o, t, d, k in zip(in_sp, pd, out, st, dl, ks))
    buf = np.zeros((n,) + sp + (g, cg), cols.dtype)
    for kidx in np.ndindex(*ks):
        sl = tuple(slice(k * d, k * d + t * (o - 1) + 1, t) for k, d, t, o in zip(kidx, dl, st, out))
        buf[(slice(None),) + sl] += cols[(slice(None),) * (1 + nd) + kidx]
    buf = buf[(slice(None),) + tuple(slice(p, p + s) for p, s in zip(pd, in_sp))]
    buf = buf.reshape((n,) + tuple(in_sp) + (g * cg,))
    return np.ascontiguousarray(np.moveaxis(buf, -1, 1))


def _conv_bwd_weight(x, go, ks, st, pd, dl, g):
    nd = len(ks)
    c = x.shape[1]
    co = go.shape[1]
    cg = c // g
    a = _im2col_cl(x, nd, ks, st, pd, dl, g, go.shape[2:])
    gm = _go_mat(go, g)
    if g == 1:
        r = _dot(gm.T, a)  # (co, kp*c)
    else:
        r = _matmul(np.ascontiguousarray(gm.transpose(0, 2, 1)), a)  # (g, cog, kp*cg)
    r = r.reshape((co,) + tuple(ks) + (cg,))
    return np.ascontiguousarray(np.moveaxis(r, -1, 1))


def convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    st, pd, dl, op, out_shape = _m.conv_setup(x.shape, w.shape, None if b is None else b.shape,
                                              stride, padding, dilation, transposed, output_padding,
                                              groups)
    if x.size == 0:
        return np.zeros(out_shape, x.dtype)
    _m.conv_kernel_checks(x.shape, _NP2DT[x.dtype], w.shape, _NP2DT[w.dtype], st, pd, dl, transposed,
                          op, out_shape)
    if x.dtype == _C32:
        return _chalf_convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
    xc, wc = _comp(x), _comp(w)
    if transposed:
        r = _conv_bwd_input(xc, wc, out_shape[2:], st, pd, dl, groups,
                            scatter=_torch_slow_transpose(x, w, groups))
    else:
        r = _conv_fwd(xc, wc, st, pd, dl, groups, out_shape[2:])
    if b is not None:
        r += _comp(b).astype(r.dtype, copy=False).reshape((-1,) + (1,) * (x.ndim - 2))
    return _back(r, x.dtype)


def _chalf_convolution(x, w, b, *params):
    """complex32 as torch's complex_convolution computes it: three float16 convolutions of the parts
    (Gauss's trick), a = conv(xr, wr, br), b = conv(xi, wi), c = conv(xr + xi, wr + wi, br + bi),
    then a - b + i (c - a - b), every step rounded to float16."""
    xr, xi, wr, wi = x["real"], x["imag"], w["real"], w["imag"]
    br = bi = None
    if b is not None:
        br, bi = b["real"], b["imag"]
    a = convolution(xr, wr, br, *params)
    bb = convolution(xi, wi, None, *params)
    c = convolution(xr + xi, wr + wi, None if b is None else br + bi, *params)
    r = np.empty(a.shape, _C32)
    r["real"] = a - bb
    r["imag"] = c - a - bb
    return r


def convolution_backward(go, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding,
                         groups, output_mask):
    """(grad_input, grad_weight, grad_bias), None where output_mask is False."""
    st, pd, dl, op, out_shape = _m.conv_setup(x.shape, w.shape, bias_sizes, stride, padding, dilation,
                                              transposed, output_padding, groups)
    nd = w.ndim - 2
    dt = x.dtype
    gi = gw = gb = None
    gc = _comp(go)
    if output_mask[2]:
        gb = _back(gc.sum(axis=(0,) + tuple(range(2, 2 + nd))), go.dtype)
    if not (output_mask[0] or output_mask[1]):
        return gi, gw, gb
    if x.size == 0 or go.size == 0:
        if output_mask[0]:
            gi = np.zeros(x.shape, dt)
        if output_mask[1]:
            gw = np.zeros(w.shape, w.dtype)
        return gi, gw, gb
    xc, wc = _comp(x), _comp(w)
    if xc.dtype.kind == "c":  # autograd's convention: gradients w.r.t. the conjugate
        xc, wc = np.conj(xc), np.conj(wc)
    ks = w.shape[2:]
    if transposed:
        if output_mask[0]:
            gi = _back(_conv_fwd(gc, wc, st, pd, dl, groups, x.shape[2:]), dt)
        if output_mask[1]:
            gw = _back(_conv_bwd_weight(gc, xc, ks, st, pd, dl, groups), w.dtype)
    else:
        if output_mask[0]:
            gi = _back(_conv_bwd_input(gc, wc, x.shape[2:], st, pd, dl, groups), dt)
        if output_mask[1]:
            gw = _back(_conv_bwd_weight(xc, gc, ks, st, pd, dl, groups), w.dtype)
    return gi, gw, gb


# ---- max pooling -------------------------------------------------------------------------------------------
def _first_valid(base, d):
    """First in-bounds window position (ATen's `while (i0 < 0) i0 += dilation`)."""
    return np.where(base < 0, base + ((-base + d - 1) // d) * d, base)


_POOL_LUT = {}


def _pool_tables(nd, ks, st, dl, out, sp):
    """(window origin offsets (*out), offset of the first set bit's window element per bit code)."""
    key = (ks, st, dl, out, sp)
    t = _POOL_LUT.get(key)
    if t is None:
        pst = [_prod(sp[i + 1:]) for i in range(nd)]
        base = 0
        for i in range(nd):
            shp = [1] * nd
            shp[i] = out[i]
            base = base + (np.arange(out[i], dtype=_I64) * (st[i] * pst[i])).reshape(shp)
        offs = [sum(k * d * q for k, d, q in zip(kidx, dl, pst)) for kidx in np.ndindex(*ks)]
        kp = len(offs)
        lut = np.zeros(1 << kp, _I64)
        for code in range(1, 1 << kp):
            lut[code] = offs[(code & -code).bit_length() - 1]
        t = _POOL_LUT[key] = (base, lut)
    return t


def _max_pool_planes(xc, nd, ks, st, dl, out, sp, lead):
    """Unpadded max pooling over at most 8 window elements, branch-free: the window elements
    stacked as contiguous planes, their max, then the first maximal element per window from a bit
    code of the planes equal to it (None where a NaN needs ATen's last-NaN rule: the general path
    handles it)."""
    v = _windows(xc, nd, ks, st, dl, out)  # (*lead, *out, *ks)
    n = len(lead)
    kp = _prod(ks)
    planes = np.ascontiguousarray(v.transpose(tuple(range(n + nd, n + 2 * nd)) + tuple(range(n + nd))))
    planes = planes.reshape((kp,) + v.shape[:n + nd])
    vals = planes[0].copy()
    for k in range(1, kp):
        np.maximum(vals, planes[k], out=vals)
    isfloat = vals.dtype.kind == "f"
    if isfloat and np.isnan(vals).any():
        return None
    code = np.equal(planes[0], vals).view(np.uint8)
    for k in range(1, kp):
        e = np.equal(planes[k], vals).view(np.uint8)
        np.left_shift(e, k, out=e)
        np.bitwise_or(code, e, out=code)
    base, lut = _pool_tables(nd, ks, st, dl, out, sp)
    idx = lut.take(code)
    idx += base
    if isfloat and not vals.all():  # the sign of a zero max: ATen keeps the first maximal element
        it = np.dtype("i%d" % vals.dtype.itemsize)
        if np.equal(planes.view(it), np.iinfo(it).min).any():
            first = np.arange(kp).take(_pool_first(kp)).take(code)
            vals = np.take_along_axis(planes.reshape(kp, -1), first.reshape(1, -1), 0)
            vals = vals.reshape(code.shape)
    return vals, idx


def _pool_first(kp):
    """The lowest set bit per code of kp bits."""
    return np.array([0] + [(c & -c).bit_length() - 1 for c in range(1, 1 << kp)], np.intp)


def _max_pool(x, nd, kernel_size, stride, padding, dilation, ceil_mode):
    ks, st, pd, dl, out = _m.max_pool_setup(x.shape, nd, kernel_size, stride, padding, dilation,
                                            ceil_mode)
    _m.check_dtype("max_pool2d" if nd == 2 else "max_pool3d", _NP2DT[x.dtype], _m._REAL)
    lead = x.shape[:x.ndim - nd]
    sp = x.shape[x.ndim - nd:]
    oshape = lead + out
    if _prod(oshape) == 0:
        return np.zeros(oshape, x.dtype), np.zeros(oshape, _I64)
    xc = _comp(x)
    isfloat = xc.dtype.kind == "f"
    fill = -np.inf if isfloat else np.iinfo(xc.dtype).min
    pads = [(p, max(0, (o - 1) * t + d * (k - 1) + 1 - (s + p)))
            for p, o, t, d, k, s in zip(pd, out, st, dl, ks, sp)]
    padded = any(lo or hi for lo, hi in pads)
    if not padded and _prod(ks) <= 8:
        r = _max_pool_planes(xc, nd, ks, st, dl, out, sp, lead)
        if r is not None:
            return _back(r[0], x.dtype), r[1]
    v = _windows(_pad_sp(xc, nd, pads, fill) if padded else xc, nd, ks, st, dl, out)
    kp = _prod(ks)
    flat = v.reshape(oshape + (kp,))
    a = flat.argmax(-1)
    vals = flat.max(-1)
    if isfloat and np.isnan(vals).any():  # ATen keeps the last NaN of a window
        nan = np.isnan(flat)
        a = np.where(nan.any(-1), kp - 1 - nan[..., ::-1].argmax(-1), a)
    fix = padded and (vals == fill).any()  # a window of fill values only: ATen reports its first
    idx = 0                                 # in-bounds element
    rest = a
    for i in range(nd):
        step = _prod(ks[i + 1:])
        k, rest = (rest // step, rest % step) if i < nd - 1 else (rest, None)
        shp = [1] * nd
        shp[i] = out[i]
        base = (np.arange(out[i]) * st[i] - pd[i]).reshape(shp)
        c = base + k * dl[i]
        if fix:  # (all of such a window is fill: argmax chose its first element, k = 0)
            c = np.where(vals == fill, _first_valid(base, dl[i]), c)
        idx = c if i == 0 else idx * sp[i] + c
    return _back(vals, x.dtype), idx.astype(_I64, copy=False)


def max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool(x, 2, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode):
    return _max_pool(x, 3, kernel_size, stride, padding, dilation, ceil_mode)


def _scatter_planes(go, idx, shape, nd):
    """grad_input of shape `shape`: go's values added at idx (flat within each plane)."""
    lead = shape[:len(shape) - nd]
    plane = _prod(shape[len(shape) - nd:])
    p = _prod(lead)
    gc = _comp(go)
    if p * plane == 0 or go.size == 0:
        return np.zeros(shape, go.dtype)
    fi = idx.reshape(p, -1).astype(np.intp, copy=False)
    if fi.size and (fi.min() < 0 or fi.max() >= plane):
        raise RuntimeError(f"Found an invalid max index: {int(fi.max() if fi.max() >= plane else fi.min())}"
                           f" (output volumes are of size {'x'.join(map(str, shape[len(shape) - nd:]))}")
    fi = fi + (np.arange(p, dtype=np.intp) * plane)[:, None]
    r = np.bincount(fi.ravel(), weights=gc.reshape(p, -1).ravel().astype(_F64, copy=False),
                    minlength=p * plane)
    return r.reshape(shape).astype(go.dtype)


def max_pool2d_with_indices_backward(go, x, kernel_size, stride, padding, dilation, ceil_mode, idx):
    return _scatter_planes(go, idx, x.shape, 2)


def max_pool3d_with_indices_backward(go, x, kernel_size, stride, padding, dilation, ceil_mode, idx):
    return _scatter_planes(go, idx, x.shape, 3)


# ---- average pooling ---------------------------------------------------------------------------------------
def _avg_divisor(sp, ks, st, pd, out, count_include_pad, divisor_override, dtype):
    """(divisor per output window, mask of windows with no input element)."""
    divs, empty = None, None
    for i, (s, k, t, p, o) in enumerate(zip(sp, ks, st, pd, out)):
        shp = [1] * len(sp)
        shp[i] = o
        start = np.arange(o) * t - p
        end = np.minimum(start + k, s + p)
        pool = end - start
        valid = np.minimum(end, s) - np.maximum(start, 0)
        d = pool if count_include_pad else valid
        d = d.reshape(shp)
        e = (valid <= 0).reshape(shp)
        divs = d if divs is None else divs * d
        empty = e if empty is None else empty | e
    if divisor_override is not None:
        divs = np.full(divs.shape, divisor_override)
    divs = np.where(empty, 1, divs)
    return divs, empty


def _avg_pool(x, nd, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    ks, st, pd, out = _m.avg_pool_setup(x.shape, nd, kernel_size, stride, padding, ceil_mode,
                                        divisor_override)
    _m.check_dtype("avg_pool2d" if nd == 2 else "avg_pool3d_out_frame", _NP2DT[x.dtype],
                   _m.AVG_POOL_DTYPES)
    lead = x.shape[:x.ndim - nd]
    sp = x.shape[x.ndim - nd:]
    oshape = lead + out
    if _prod(oshape) == 0:
        return np.zeros(oshape, x.dtype)
    xc = _comp(x)
    pads = [(p, max(0, (o - 1) * t + k - (s + p))) for p, o, t, k, s in zip(pd, out, st, ks, sp)]
    v = _windows(_pad_sp(xc, nd, pads), nd, ks, st, (1,) * nd, out)
    sums = v.sum(axis=tuple(range(v.ndim - nd, v.ndim)))
    divs, empty = _avg_divisor(sp, ks, st, pd, out, count_include_pad, divisor_override, xc.dtype)
    if xc.dtype.kind in "iu":
        q = sums // divs
        q = np.where((q < 0) & (q * divs != sums), q + 1, q)  # C++ division truncates
        r = np.where(empty, 0, q)
    else:
        r = np.where(empty, 0, sums / divs.astype(xc.dtype))
    return _back(np.asarray(r), x.dtype)


def avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _avg_pool(x, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _avg_pool(x, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _avg_pool_backward(go, x, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    ks, st, pd, out = _m.avg_pool_setup(x.shape, nd, kernel_size, stride, padding, ceil_mode,
                                        divisor_override)
    sp = x.shape[x.ndim - nd:]
    if go.size == 0 or x.size == 0:
        return np.zeros(x.shape, go.dtype)
    gc = _comp(go)
    if gc.dtype.kind not in "fc":
        gc = gc.astype(_F64)
    divs, empty = _avg_divisor(sp, ks, st, pd, out, count_include_pad, divisor_override, gc.dtype)
    g = np.where(empty, 0, gc / divs.astype(gc.dtype))
    cols = np.broadcast_to(g.reshape(g.shape + (1,) * nd), g.shape + tuple(ks))
    r = _col2im(cols, nd, sp, pd, ks, st, (1,) * nd, out)
    return _back(r, go.dtype)


def avg_pool2d_backward(go, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_pool_backward(go, x, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override)


def avg_pool3d_backward(go, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    return _avg_pool_backward(go, x, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                              divisor_override)


# ---- adaptive pooling ---------------------------------------------------------------------------------------
def _adaptive_ranges(n_in, n_out):
    o = np.arange(n_out)
    return (o * n_in) // n_out, ((o + 1) * n_in + n_out - 1) // n_out


def _adaptive_matrix(n_in, n_out, dtype):
    s, e = _adaptive_ranges(n_in, n_out)
    j = np.arange(n_in)
    m = (j >= s[:, None]) & (j < e[:, None])
    return (m / (e - s)[:, None]).astype(dtype)


def adaptive_avg_pool2d(x, output_size):
    shape = _m.adaptive_avg_setup(x.shape, output_size)
    _m.check_dtype("adaptive_avg_pool2d", _NP2DT[x.dtype], _m._FLOATS)
    if _prod(shape) == 0:
        return np.zeros(shape, x.dtype)
    xc = _comp(x)
    mh = _adaptive_matrix(x.shape[-2], output_size[0], xc.dtype)
    mw = _adaptive_matrix(x.shape[-1], output_size[1], xc.dtype)
    return _back(np.matmul(np.matmul(mh, xc), mw.T), x.dtype)


def adaptive_avg_pool2d_backward(go, x):
    if go.size == 0:
        return np.zeros(x.shape, go.dtype)
    gc = _comp(go)
    mh = _adaptive_matrix(x.shape[-2], go.shape[-2], gc.dtype)
    mw = _adaptive_matrix(x.shape[-1], go.shape[-1], gc.dtype)
    return _back(np.ascontiguousarray(np.matmul(np.matmul(mh.T, gc), mw)), go.dtype)


def _adaptive_index(n_in, n_out):
    s, e = _adaptive_ranges(n_in, n_out)
    kmax = int((e - s).max()) if n_out else 1
    idx = s[:, None] + np.arange(kmax)
    return np.minimum(idx, (e - 1)[:, None])  # short windows repeat their last element


def adaptive_max_pool2d(x, output_size):
    shape = _m.adaptive_max_setup(x.shape, output_size)
    _m.check_dtype("adaptive_max_pool2d", _NP2DT[x.dtype], _m._FLOATS)
    if _prod(shape) == 0:
        return np.zeros(shape, x.dtype), np.zeros(shape, _I64)
    oh, ow = output_size
    w = x.shape[-1]
    ih = _adaptive_index(x.shape[-2], oh)
    iw = _adaptive_index(w, ow)
    xc = _comp(x)
    g = xc[..., ih[:, :, None, None], iw[None, None, :, :]]  # (..., oh, kh, ow, kw)
    g = np.swapaxes(g, -3, -2)
    kw = iw.shape[1]
    flat = g.reshape(g.shape[:-2] + (-1,))
    a = flat.argmax(-1)
    nan = np.isnan(flat)
    if nan.any():
        last = flat.shape[-1] - 1 - nan[..., ::-1].argmax(-1)
        a = np.where(nan.any(-1), last, a)
    vals = np.take_along_axis(flat, a[..., None], -1)[..., 0]
    row = ih[np.arange(oh)[:, None], a // kw]
    col = iw[np.arange(ow)[None, :], a % kw]
    return _back(vals, x.dtype), (row * w + col).astype(_I64)


def adaptive_max_pool2d_backward(go, x, idx):
    return _scatter_planes(go, idx, x.shape, 2)


# ---- embedding ------------------------------------------------------------------------------------------------
def _rows_accumulate(g, idx, n):
    """out[i] = sum of g[j] over j with idx[j] == i (rows; idx 1-D), summed in index order."""
    out = np.zeros((n,) + g.shape[1:], g.dtype)
    if idx.size == 0:
        return out
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], sidx[1:] != sidx[:-1])))
    out[sidx[starts]] = np.add.reduceat(g[order], starts, axis=0)
    return out


def embedding(w, idx, padding_idx, scale_grad_by_freq, sparse):
    _m.embedding_check(w.shape, _NP2DT[idx.dtype])
    if idx.size and (idx.min() < 0 or idx.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    return np.take(w, idx, axis=0)


def embedding_dense_backward(go, idx, num_weights, padding_idx, scale_grad_by_freq):
    _m.check_index_dtype("embedding_backward", "indices", 2, _NP2DT[idx.dtype])
    d = go.shape[-1] if go.ndim else 1
    flat = idx.reshape(-1).astype(np.intp, copy=False)
    gc = _comp(go).reshape(-1, d)
    if flat.size != gc.shape[0]:
        raise RuntimeError(f"shape '[{flat.size}, {d}]' is invalid for input of size {go.size}")
    if flat.size and (flat.min() < 0 or flat.max() >= num_weights):
        raise IndexError("index out of range in self")
    keep = flat != padding_idx
    if not keep.all():
        flat, gc = flat[keep], gc[keep]
    if scale_grad_by_freq and flat.size:
        counts = np.bincount(flat, minlength=num_weights)
        gc = gc / counts[flat][:, None].astype(gc.dtype)
    return _back(_rows_accumulate(gc, flat, num_weights), go.dtype)


def embedding_renorm_(w, idx, max_norm, norm_type):
    _m.embedding_renorm_check(w.shape, _NP2DT[idx.dtype])
    if not w.flags.writeable:
        raise RuntimeError(_OVERLAP)
    rows = np.unique(idx.reshape(-1))
    if rows.size == 0:
        return
    sub = _comp(w[rows])
    a = np.abs(sub)
    if norm_type == math.inf:
        norms = a.max(axis=1) if a.shape[1] else np.zeros(len(rows), a.dtype)
    elif norm_type == -math.inf:
        norms = a.min(axis=1) if a.shape[1] else np.full(len(rows), np.inf, a.dtype)
    elif norm_type == 0:
        norms = (a != 0).sum(axis=1).astype(a.dtype)
    elif norm_type == 1:
        norms = a.sum(axis=1)
    elif norm_type == 2:
        norms = np.sqrt((a * a).sum(axis=1))
    else:
        norms = (a ** a.dtype.type(norm_type)).sum(axis=1) ** a.dtype.type(1.0 / norm_type)
    norms = norms.astype(_F64)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big] + 1e-7)).astype(sub.dtype)
        w[rows[big]] = _back(sub[big] * scale[:, None], w.dtype)


def _bags(idx, offsets, include_last_offset, clip_last=False):
    """(number of bags, bag of each index) of embedding_bag: bag b is indices[offsets[b]:offsets[b+1]],
    the last one runs to the end; ATen's fast path (clip_last) ends it at the final offset when
    include_last_offset (indices past it get bag number `number of bags`)."""
    nb = offsets.shape[0] - (1 if include_last_offset else 0)
    pos = np.arange(idx.shape[0])
    o2b = np.searchsorted(offsets[:nb], pos, side="right") - 1
    if clip_last and include_last_offset and nb >= 0 and offsets.shape[0]:
        o2b = np.where(pos >= offsets[nb], nb, o2b)
    return nb, o2b


_FAST_BAG = (_F32, np.dtype(np.float16), _dt.bfloat16.np)


def embedding_bag(w, idx, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    _m.embedding_bag_check(_NP2DT[w.dtype], w.ndim, _NP2DT[idx.dtype], _NP2DT[offsets.dtype], mode,
                           per_sample_weights, include_last_offset, offsets.shape[0])
    idx = idx.reshape(-1)
    n, nw = idx.shape[0], w.shape[0]
    if offsets.shape[0]:
        if offsets[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                               f"start from position 0. However, got {int(offsets[0])}")
        if offsets[-1] > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                               f"offsets[-1] of {int(offsets[-1])}")
    if per_sample_weights is not None and per_sample_weights.size != n:
        raise RuntimeError("Expected per_sample_weights.value().numel() == indices.numel() to be true, "
                           "but got false.  (Could this error message be improved?  If so, please "
                           "report an enhancement request to PyTorch.)")
    bad = (idx < 0) | (idx >= nw)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RuntimeError(f"Index {i} of input takes value {int(idx[i])} which is not in the valid "
                           f"range [0, {nw})")
    it = idx.dtype if idx.dtype == offsets.dtype else _I64  # promoted index type of the outputs
    # ATen's fbgemm path (float/half/bfloat16 rows, no padding_idx, sum or mean)
    fast = (w.dtype in _FAST_BAG and mode != 2 and padding_idx < 0
            and (w.shape[1] <= 1 or w.strides[1] == w.itemsize))
    nb, o2b = _bags(idx, offsets, include_last_offset)
    ob = _bags(idx, offsets, include_last_offset, True)[1] if fast else o2b
    d = w.shape[1]
    keep = idx != padding_idx
    rows = _comp(w)[idx]
    if per_sample_weights is not None:
        rows = rows * _comp(per_sample_weights).reshape(-1, 1)
    sizes = np.bincount(o2b[keep], minlength=nb)[:nb].astype(_I64)
    sel = np.flatnonzero(keep & (ob < nb))
    if mode == 2:
        out = np.zeros((nb, d), rows.dtype)
        maxi = np.zeros((nb, d), _I64)
        if sel.size:
            r, bag = rows[sel], o2b[sel]
            starts = np.flatnonzero(np.concatenate(([True], bag[1:] != bag[:-1])))
            ub = bag[starts]
            mx = np.maximum.reduceat(r, starts, axis=0)
            out[ub] = mx
            pos = np.where(r == mx[np.searchsorted(ub, bag)], np.arange(len(sel))[:, None], len(sel))
            first = np.minimum.reduceat(pos, starts, axis=0)
            maxi[ub] = idx[sel][np.minimum(first, len(sel) - 1)]
    else:
        out = _rows_accumulate(rows[sel], ob[sel], nb)
        if mode == 1:
            out = out / np.maximum(sizes, 1).astype(out.dtype)[:, None]
    if mode == 0:
        o2b_out = np.zeros(0, it) if fast else o2b.astype(it)
        return _back(out, w.dtype), o2b_out, np.zeros(nb, it), np.zeros(nb, it)
    return (_back(out, w.dtype), o2b.astype(it), sizes.astype(it),
            (maxi if mode == 2 else sizes).astype(it))


def _bag_of(idx, offsets, offset2bag, nb):
    """The bag of each index as the forward recorded it (recomputed when it left offset2bag empty)."""
    if offset2bag.size:
        return offset2bag.astype(np.intp)
    return _bags(idx, offsets, offsets.shape[0] > nb, True)[1]


def embedding_bag_backward(go, idx, offsets, offset2bag, bag_size, maximum_indices, num_weights,
                           scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx=-1):
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported by ember")
    idx = idx.reshape(-1)
    g = _comp(go)
    nb = g.shape[0]
    d = g.shape[1] if g.ndim > 1 else 1
    if mode == 2:
        out = np.zeros((num_weights, d), g.dtype)
        has = bag_size > 0
        if has.any():
            mi = maximum_indices[has]
            np.add.at(out, (mi, np.broadcast_to(np.arange(d), mi.shape)), g[has])
        return _back(out, go.dtype)
    o2b = _bag_of(idx, offsets, offset2bag, nb)
    sel = np.flatnonzero((idx != padding_idx) & (o2b < nb))
    rows = g[o2b[sel]]
    if per_sample_weights is not None:
        rows = rows * _comp(per_sample_weights).reshape(-1)[sel, None]
    if mode == 1:
        rows = rows / np.maximum(bag_size, 1)[o2b[sel], None].astype(rows.dtype)
    if scale_grad_by_freq:
        # ATen divides the gradient of the r-th distinct index by counts[sorted_indices[r]] (not by
        # its own count: EmbeddingBag.cpp's `counts[indices_data[i]]`); reproduced for equal numbers
        counts = np.bincount(idx, minlength=num_weights)
        r = np.searchsorted(np.unique(idx), idx[sel])
        rows = rows / counts[np.sort(idx)[r]][:, None].astype(rows.dtype)
    return _back(_rows_accumulate(rows, idx[sel].astype(np.intp), num_weights), go.dtype)


def embedding_bag_per_sample_weights_backward(go, w, idx, offsets, offset2bag, mode, padding_idx=-1):
    if mode != 0:
        raise RuntimeError("embedding_bag_backward: per_sample_weights only supported for mode='sum'")
    idx = idx.reshape(-1)
    g = _comp(go)
    o2b = _bag_of(idx, offsets, offset2bag, g.shape[0])
    inside = o2b < g.shape[0]
    r = (g[np.minimum(o2b, g.shape[0] - 1)] * _comp(w)[idx]).sum(axis=1)
    r[(idx == padding_idx) | ~inside] = 0
    return _back(r, go.dtype)


# ---- padding ----------------------------------------------------------------------------------------------------
def _pad_index(n, lo, hi, reflect):
    j = np.arange(n + lo + hi) - lo
    if reflect:
        j = np.abs(j)
        return np.where(j >= n, 2 * (n - 1) - j, j)
    return np.clip(j, 0, n - 1)


def _index_pad(x, padding, dim, reflect):
    r = x
    for i in range(dim):
        ax = x.ndim - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        if lo or hi:
            r = np.take(r, _pad_index(x.shape[ax], lo, hi, reflect), axis=ax)
    return np.ascontiguousarray(r)


def _index_accumulate(g, idx, n, axis):
    """Along `axis`: out[i] = sum of g[j] over j with idx[j] == i (out has length n)."""
    shape = list(g.shape)
    shape[axis] = n
    if g.shape[axis] == 0 or g.size == 0:
        return np.zeros(shape, g.dtype)
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    gs = np.take(g, order, axis=axis)
    starts = np.flatnonzero(np.concatenate(([True], sidx[1:] != sidx[:-1])))
    sums = np.add.reduceat(gs, starts, axis=axis)
    uniq = sidx[starts]
    if len(uniq) == n:
        return sums
    out = np.zeros(shape, g.dtype)
    sl = [slice(None)] * g.ndim
    sl[axis] = uniq
    out[tuple(sl)] = sums
    return out


def _index_pad_backward(go, x, padding, reflect):
    dim = len(padding) // 2
    _m.check_valid_pad_input(x.shape, padding, dim)
    exp = list(x.shape)
    for i in range(dim):
        exp[x.ndim - 1 - i] += padding[2 * i] + padding[2 * i + 1]
    if tuple(go.shape) != tuple(exp):
        ax = next(i for i in range(x.ndim) if go.shape[i] != exp[i]) if go.ndim == x.ndim else 0
        raise RuntimeError(f"gradOutput width unexpected. Expected: {exp[ax]}, Got: "
                           f"{go.shape[ax] if go.ndim > ax else go.ndim}")
    g = _comp(go)
    for i in range(dim):
        ax = x.ndim - 1 - i
        lo, hi = padding[2 * i], padding[2 * i + 1]
        if lo or hi:
            g = _index_accumulate(g, _pad_index(x.shape[ax], lo, hi, reflect), x.shape[ax], ax)
    return _back(np.ascontiguousarray(g), go.dtype)


def _check_pad_dtype(name, x):
    _m.check_dtype(name, _NP2DT[x.dtype], _m._PAD_ALL)


def reflection_pad1d(x, padding):
    _m.reflection_setup(x.shape, padding, 1)
    _check_pad_dtype("reflection_pad1d", x)
    return _index_pad(x, padding, 1, True)


def reflection_pad2d(x, padding):
    _m.reflection_setup(x.shape, padding, 2)
    _check_pad_dtype("reflection_pad2d", x)
    return _index_pad(x, padding, 2, True)


def reflection_pad3d(x, padding):
    _m.reflection_setup(x.shape, padding, 3)
    _check_pad_dtype("reflection_pad3d", x)
    return _index_pad(x, padding, 3, True)


def replication_pad1d(x, padding):
    _m.replication_setup(x.shape, padding, 1)
    _check_pad_dtype("replication_pad1d", x)
    return _index_pad(x, padding, 1, False)


def replication_pad2d(x, padding):
    _m.replication_setup(x.shape, padding, 2)
    _check_pad_dtype("replication_pad2d", x)
    return _index_pad(x, padding, 2, False)


def replication_pad3d(x, padding):
    _m.replication_setup(x.shape, padding, 3)
    _check_pad_dtype("replication_pad3d", x)
    return _index_pad(x, padding, 3, False)


def reflection_pad_backward(go, x, padding):
    return _index_pad_backward(go, x, padding, True)


def replication_pad_backward(go, x, padding):
    return _index_pad_backward(go, x, padding, False)


# ---- upsampling --------------------------------------------------------------------------------------------------
def _float_scale(n_in, n_out, scale):
    """area_pixel_compute_scale<float> (align_corners=False)."""
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(n_in) / np.float32(n_out)


def _nearest_index(n_in, n_out, scale, exact):
    s = _float_scale(n_in, n_out, scale)
    j = np.arange(n_out)
    if exact:
        src = np.floor(((j + 0.5) * np.float64(s)).astype(_F32))
    else:
        src = np.floor(j.astype(_F32) * s)
    return np.minimum(src.astype(np.intp), n_in - 1)


def _nearest(x, output_size, scales, exact):
    r = x
    dim = len(output_size)
    for i in range(dim):
        ax = x.ndim - dim + i
        if output_size[i] != x.shape[ax] or scales[i] is not None:
            r = np.take(r, _nearest_index(x.shape[ax], output_size[i], scales[i], exact), axis=ax)
    return np.ascontiguousarray(r) if r is not x else x.copy()


def _nearest_backward(go, output_size, input_size, scales, exact):
    dim = len(output_size)
    g = _comp(go)
    for i in range(dim):
        ax = 2 + i
        g = _index_accumulate(g, _nearest_index(input_size[ax], output_size[i], scales[i], exact),
                              input_size[ax], ax)
    return _back(np.ascontiguousarray(g), go.dtype)


def _upsample_check(x, output_size, kind):
    dim = len(output_size)
    _m.upsample_setup(x.shape, output_size, dim)
    _m.upsample_kernel_check(kind, dim, _NP2DT[x.dtype])


def upsample_nearest1d(x, output_size, scales=None):
    _upsample_check(x, output_size, "nearest")
    return _nearest(x, output_size, (scales,), False)


def upsample_nearest2d(x, output_size, scales_h=None, scales_w=None):
    _upsample_check(x, output_size, "nearest")
    return _nearest(x, output_size, (scales_h, scales_w), False)


def upsample_nearest_exact1d(x, output_size, scales=None):
    _upsample_check(x, output_size, "nearest_exact")
    return _nearest(x, output_size, (scales,), True)


def upsample_nearest_exact2d(x, output_size, scales_h=None, scales_w=None):
    _upsample_check(x, output_size, "nearest_exact")
    return _nearest(x, output_size, (scales_h, scales_w), True)


def upsample_nearest1d_backward(go, output_size, input_size, scales=None):
    _m.upsample_backward_setup(go.shape, output_size, input_size)
    return _nearest_backward(go, output_size, input_size, (scales,), False)


def upsample_nearest2d_backward(go, output_size, input_size, scales_h=None, scales_w=None):
    _m.upsample_backward_setup(go.shape, output_size, input_size)
    return _nearest_backward(go, output_size, input_size, (scales_h, scales_w), False)


def upsample_nearest_exact1d_backward(go, output_size, input_size, scales=None):
    _m.upsample_backward_setup(go.shape, output_size, input_size)
    return _nearest_backward(go, output_size, input_size, (scales,), True)


def upsample_nearest_exact2d_backward(go, output_size, input_size, scales_h=None, scales_w=None):
    _m.upsample_backward_setup(go.shape, output_size, input_size)
    return _nearest_backward(go, output_size, input_size, (scales_h, scales_w), True)


def area_pixel_scale(n_in, n_out, align_corners, scale, t):
    """ATen's area_pixel_compute_scale in scalar type t: input pixels per output pixel."""
    if align_corners:
        return t(n_in - 1) / t(n_out - 1) if n_out > 1 else t(0)
    if scale is not None and scale > 0:
        return t(1.0 / scale)
    return t(n_in) / t(n_out)


def _linear_weights(n_in, n_out, align_corners, scale, opdt):
    """(i0, i1, lambda0, lambda1) of ATen's compute_indices_weights_linear, in opmath dtype opdt."""
    t = opdt.type
    s = area_pixel_scale(n_in, n_out, align_corners, scale, t)
    j = np.arange(n_out).astype(opdt)
    if align_corners:
        src = s * j
    else:
        src = s * (j + t(0.5)) - t(0.5)
        src = np.where(src < 0, t(0), src)
    i0 = np.minimum(np.floor(src.astype(_F32)).astype(np.intp), n_in - 1)
    lam = np.minimum(np.maximum(src - i0.astype(opdt), t(0)), t(1))
    i1 = i0 + (i0 < n_in - 1)
    return i0, i1, t(1) - lam, lam


def _linear(x, output_size, align_corners, scales):
    dim = len(output_size)
    dt = x.dtype
    xc = x.astype(_F32) if dt in _HALF or dt.kind == "u" else x
    opdt = _F64 if xc.dtype == _F64 else _F32
    r = xc
    for i in reversed(range(dim)):  # the innermost dim first, as ATen's nested interpolation
        ax = x.ndim - dim + i
        i0, i1, l0, l1 = _linear_weights(x.shape[ax], output_size[i], align_corners, scales[i], opdt)
        if dt in _HALF:  # ATen stores the weights in the input's dtype
            l0 = l0.astype(dt).astype(opdt)
            l1 = l1.astype(dt).astype(opdt)
        shp = [1] * x.ndim
        shp[ax] = output_size[i]
        r = np.take(r, i0, axis=ax) * l0.reshape(shp) + np.take(r, i1, axis=ax) * l1.reshape(shp)
    if dt.kind == "u":
        r = np.clip(np.rint(r), 0, 255)
    return _back(np.ascontiguousarray(r), dt)


def _linear_backward(go, output_size, input_size, align_corners, scales):
    dim = len(output_size)
    g = _comp(go)
    opdt = _F64 if g.dtype == _F64 else _F32
    for i in range(dim):
        ax = 2 + i
        n = input_size[ax]
        i0, i1, l0, l1 = _linear_weights(n, output_size[i], align_corners, scales[i], opdt)
        shp = [1] * g.ndim
        shp[ax] = output_size[i]
        g = (_index_accumulate(g * l0.reshape(shp).astype(g.dtype), i0, n, ax)
             + _index_accumulate(g * l1.reshape(shp).astype(g.dtype), i1, n, ax))
    return _back(np.ascontiguousarray(g), go.dtype)


def upsample_linear1d(x, output_size, align_corners, scales=None):
    _upsample_check(x, output_size, "linear")
    return _linear(x, output_size, align_corners, (scales,))


def upsample_bilinear2d(x, output_size, align_corners, scales_h=None, scales_w=None):
    _upsample_check(x, output_size, "linear")
    return _linear(x, output_size, align_corners, (scales_h, scales_w))


def upsample_linear1d_backward(go, output_size, input_size, align_corners, scales=None):
    _m.upsample_backward_setup(go.shape, output_size, input_size)
    return _linear_backward(go, output_size, input_size, align_corners, (scales,))


def upsample_bilinear2d_backward(go, output_size, input_size, align_corners, scales_h=None,
                                 scales_w=None):
    _m.upsample_backward_setup(go.shape, output_size, input_size)
    return _linear_backward(go, output_size, input_size, align_corners, (scales_h, scales_w))


# ---- im2col / col2im ---------------------------------------------------------------------------------------------
def im2col(x, kernel_size, dilation, padding, stride):
    shape, out = _m.im2col_setup(x.shape, kernel_size, dilation, padding, stride)
    _m.check_dtype("im2col_out_cpu", _NP2DT[x.dtype], _m._IM2COL)
    if _prod(shape) == 0:
        return np.zeros(shape, x.dtype)
    v = _windows(_pad_sp(x, 2, [(p, p) for p in padding]), 2, kernel_size, stride, dilation, out)
    n = v.ndim
    v = v.transpose(tuple(range(n - 4)) + (n - 2, n - 1, n - 4, n - 3))  # (..., C, kh, kw, oh, ow)
    return np.ascontiguousarray(v).reshape(shape)


def col2im(x, output_size, kernel_size, dilation, padding, stride):
    shape, blocks = _m.col2im_setup(x.shape, output_size, kernel_size, dilation, padding, stride)
    _m.check_dtype("col2im_out_cpu", _NP2DT[x.dtype], _m._IM2COL)
    if _prod(shape) == 0:
        return np.zeros(shape, x.dtype)
    kh, kw = kernel_size
    c = shape[-3]
    lead = x.shape[:-2]
    cols = x.reshape(lead + (c, kh, kw) + tuple(blocks))
    n = cols.ndim
    cols = cols.transpose(tuple(range(n - 4)) + (n - 2, n - 1, n - 4, n - 3))  # (..., C, bh, bw, kh, kw)
    return _col2im(cols, 2, tuple(output_size), padding, kernel_size, stride, dilation, blocks)


# ---- pixel shuffle -----------------------------------------------------------------------------------------------
def pixel_shuffle(x, r):
    shape = _m.pixel_shuffle_setup(x.shape, r)
    lead = x.shape[:-3]
    c, h, w = shape[-3], x.shape[-2], x.shape[-1]
    v = x.reshape(lead + (c, r, r, h, w))
    n = len(lead)
    v = v.transpose(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return np.ascontiguousarray(v).reshape(shape)


def pixel_unshuffle(x, r):
    shape = _m.pixel_unshuffle_setup(x.shape, r)
    lead = x.shape[:-3]
    c, oh, ow = x.shape[-3], shape[-2], shape[-1]
    v = x.reshape(lead + (c, oh, r, ow, r))
    n = len(lead)
    v = v.transpose(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return np.ascontiguousarray(v).reshape(shape)
