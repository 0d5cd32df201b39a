"""Linear-algebra kernels on NumPy arrays (ATen's LinearAlgebra.cpp, Linear.cpp, BatchLinearAlgebra).

Argument checks come from ember.kernels.meta.linalg so CPU and Meta raise the same errors.
float16/bfloat16 products are computed in float32 and rounded once, as ATen's CPU kernels do.
"""
import warnings

import numpy as np

from ember.core import dtype as _dt
from ember.kernels.cpu import _chalf
from ember.kernels.meta import linalg as M
from ember.kernels.meta.linalg import _einsum  # the algorithm; here it runs on arrays (_NumpyOps)
from ember.kernels.meta.linalg import chain_order  # multi_dot's order, planned on shapes

_NP2DT = _dt.NP2DT
_nd = np.ndarray
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)
_BLAS = frozenset(np.dtype(x) for x in (np.float32, np.float64, np.complex64, np.complex128))
_LOWNP = frozenset(d.np for d in M.LOW if d.np is not None)
_bool = _dt.bool_
_numel = M.numel
_INF = float("inf")


def _strides(a):
    isz = a.itemsize
    return tuple(s // isz for s in a.strides) if isz else tuple(0 for _ in a.shape)


# ---- BLAS on the calling thread -------------------------------------------------------------
# The products of a small model (a few to a few hundred MFLOP) gain little from OpenBLAS's worker
# threads, and on a busy machine their spin-waits slow a product 10-100x (a GPT training step went
# from ~0.1 s to ~0.7 s). Where NumPy's bundled OpenBLAS has openblas_set_num_threads_local, products
# big enough for OpenBLAS to thread run on the calling thread only (PyTorch's benchmarks use one).
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
_THREADED = 1 << 16      # m*n*k below which OpenBLAS stays on the calling thread by itself


def _dot2(a, b):
    """a.dot(b) of 2-D BLAS-type arrays, on the calling thread."""
    f = _BLAS_LOCAL
    if f is None or a.shape[0] * a.shape[1] * b.shape[1] < _THREADED:
        return a.dot(b)
    prev = f(1)
    try:
        return a.dot(b)
    finally:
        f(prev)


def _mm1(a, b):
    """np.matmul(a, b), on the calling thread."""
    f = _BLAS_LOCAL
    if f is None or a.size * (b.shape[-1] if b.ndim > 1 else 1) < _THREADED:
        return np.matmul(a, b)
    prev = f(1)
    try:
        return np.matmul(a, b)
    finally:
        f(prev)


def matmul_out(a, b, out):
    """np.matmul(a, b, out=out) on the calling thread, as eager's products run (the inductor's
    output code calls it for its planned-buffer matmuls)."""
    f = _BLAS_LOCAL
    if f is None or a.size * (b.shape[-1] if b.ndim > 1 else 1) < _THREADED:
        return np.matmul(a, b, out=out)
    prev = f(1)
    try:
        return np.matmul(a, b, out=out)
    finally:
        f(prev)


def _mul(a, b):
    """np.matmul of same-dtype arrays in the type PyTorch's CPU kernels compute in."""
    dt = a.dtype
    if dt in _LOWNP:
        return _mm1(a.astype(_F32), b.astype(_F32)).astype(dt)
    return _mm1(a, b)


def _compute(a):
    """(array in the compute type, original dtype): float16/bfloat16 -> float32."""
    dt = a.dtype
    return (a.astype(_F32) if dt in _LOWNP else a), dt


# PyTorch's names for the C++ types a Scalar is converted to (c10::checked_convert)
_CNAME = {_dt.float16: "float", _dt.bfloat16: "float", _dt.float32: "float",
          _dt.float64: "double", _dt.int64: "int64_t", _dt.int32: "int", _dt.int16: "int16_t",
          _dt.int8: "int8_t", _dt.uint8: "uint8_t", _dt.bool_: "bool",
          _dt.complex64: "c10::complex<float>", _dt.complex128: "c10::complex<double>"}
_LIMITS = {_dt.float32: 3.4028234663852886e38, _dt.float16: 3.4028234663852886e38,
           _dt.bfloat16: 3.4028234663852886e38}


def scalar_to(v, d):
    """A Scalar (beta/alpha) converted to dtype d's compute type, with ATen's overflow check."""
    if d.category == _dt.COMPLEX:
        return complex(v)
    if isinstance(v, complex):
        if v.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {_CNAME[d]} without overflow")
        v = v.real
    if d.category == _dt.FLOAT:
        v = float(v)
        lim = _LIMITS.get(d)
        if lim is not None and abs(v) > lim and v == v and abs(v) != _INF:
            raise RuntimeError(f"value cannot be converted to type {_CNAME[d]} without overflow")
        return v
    if d is _bool:
        return bool(v)
    info = np.iinfo(d.np)
    if isinstance(v, float):
        if not (info.min <= v <= info.max):
            raise RuntimeError(f"value cannot be converted to type {_CNAME[d]} without overflow")
        return int(v)
    iv = int(v)
    if info.min == 0:  # unsigned: negative integers wrap around (two's complement), as in c10
        if iv > info.max or (iv < 0 and -iv > info.max):
            raise RuntimeError(f"value cannot be converted to type {_CNAME[d]} without overflow")
        return iv % (info.max + 1)
    if iv < info.min or iv > info.max:
        raise RuntimeError(f"value cannot be converted to type {_CNAME[d]} without overflow")
    return iv


def _is_zero(v):
    return v == 0


# ---- matrix products ----------------------------------------------------------------------
_C32 = _dt.complex32
_KIND_NAME = {"dot": "dot", "mv": "addmv_impl_cpu", "mm": "addmm_impl_cpu_", "bmm": "bmm"}


def matmul(a, b):
    if a.ndim == 2 and b.ndim == 2:
        dt = a.dtype
        if dt is b.dtype and dt in _BLAS and a.shape[1] == b.shape[0]:
            return _dot2(a, b)
    return _matmul(a, b)


def _matmul(a, b):
    da, db = _NP2DT[a.dtype], _NP2DT[b.dtype]
    out, kind = M.matmul_check(a.shape, da, _strides(a), b.shape, db, _strides(b))
    if da is _bool:
        if kind == "dot" or (_numel(out) and a.shape[-1]):
            M.not_implemented(_KIND_NAME[kind], da)
        return np.zeros(out, _BOOL)
    if da is _C32 or db is _C32:  # torch's CPU products have no ComplexHalf kernel
        M.not_implemented(_KIND_NAME[kind], _C32)
    return _mul(a, b)


def mm(a, b):
    if a.ndim == 2 and b.ndim == 2:
        dt = a.dtype
        if dt is b.dtype and dt in _BLAS and a.shape[1] == b.shape[0]:
            return _dot2(a, b)
    da = _NP2DT[a.dtype]
    out = M.mm_check(a.shape, da, b.shape, _NP2DT[b.dtype])
    if da is _bool:
        if _numel(out) and a.shape[1]:
            M.not_implemented("addmm_impl_cpu_", da)
        return np.zeros(out, _BOOL)
    if da is _C32:
        M.not_implemented("addmm_impl_cpu_", da)
    return _mul(a, b)


def bmm(a, b):
    da = _NP2DT[a.dtype]
    out = M.bmm_check(a.shape, da, b.shape, _NP2DT[b.dtype])
    if da is _bool:
        if _numel(out) and a.shape[2]:
            M.not_implemented("bmm", da)
        return np.zeros(out, _BOOL)
    if da is _C32:
        M.not_implemented("bmm", da)
    return _mul(a, b)


def dot(a, b):
    da = _NP2DT[a.dtype]
    M.dot_check(a.shape, da, b.shape, _NP2DT[b.dtype])
    if da is _bool or da is _C32:
        M.not_implemented("dot", da)
    return _mul(a, b)


def vdot(a, b):
    da = _NP2DT[a.dtype]
    M.dot_check(a.shape, da, b.shape, _NP2DT[b.dtype])
    if da is _bool:
        M.not_implemented("dot", da)
    if da is _C32:
        M.not_implemented("vdot", da)
    if da.category == _dt.COMPLEX:
        return np.vdot(a, b)
    return _mul(a, b)


def mv(m, v):
    dm = _NP2DT[m.dtype]
    out = M.mv_check(m.shape, dm, v.shape, _NP2DT[v.dtype])
    if dm is _bool:
        if m.size:
            M.not_implemented("addmv_impl_cpu", dm)
        return np.zeros(out, _BOOL)
    return _mul(m, v)


def _axpby(s, prod, beta, alpha, d, out_shape):
    """beta * s + alpha * prod (prod already in the compute type), rounded to dtype d."""
    if d is _bool:
        r = prod if alpha else np.zeros(out_shape, _BOOL)
        if beta:
            r = r | s
        return np.broadcast_to(r, out_shape).copy() if r.shape != tuple(out_shape) else r
    if alpha != 1:
        prod = prod * alpha
    if beta != 0:
        sc = s.astype(prod.dtype) if s.dtype != prod.dtype else s
        prod = prod + (sc * beta if beta != 1 else sc)
    if prod.dtype != d.np:
        prod = prod.astype(d.np)
    return prod


def addmm(s, a, b, beta=1, alpha=1):
    dt = a.dtype
    if (beta == 1 and alpha == 1 and dt is b.dtype and dt is s.dtype and dt in _BLAS
            and a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]
            and (s.shape == (b.shape[1],) or s.shape == (a.shape[0], b.shape[1]))):
        prod = _dot2(a, b)                       # the common nn.Linear case: one BLAS call, bias
        prod += s                                # added in place (same rounding as prod + s)
        return prod
    ds, da, db = _NP2DT[s.dtype], _NP2DT[a.dtype], _NP2DT[b.dtype]
    out = M.addmm_check(s.shape, ds, a.shape, da, b.shape, db)
    if da is _bool:
        if _numel(out):
            if a.shape[1]:
                M.not_implemented("addmm_impl_cpu_", da)
            raise RuntimeError("result type Long can't be cast to the desired output type Bool")
        return np.zeros(out, _BOOL)
    if da is _C32:
        M.not_implemented("addmm_impl_cpu_", da)
    bc, ac = scalar_to(beta, da), scalar_to(alpha, da)
    ca, _ = _compute(a)
    cb, _ = _compute(b)
    prod = _mm1(ca, cb)
    if _is_zero(beta):
        bc = 0
    return _axpby(s, prod, bc, ac, da, out)


def addmv(s, m, v, beta=1, alpha=1):
    ds, dm, dv = _NP2DT[s.dtype], _NP2DT[m.dtype], _NP2DT[v.dtype]
    out = M.addmv_check(s.shape, ds, m.shape, dm, v.shape, dv)
    if dm is _bool:
        if m.size:
            M.not_implemented("addmv_impl_cpu", dm)
        bb = scalar_to(beta, dm)
        return np.broadcast_to(s & bb, out).copy() if bb else np.zeros(out, _BOOL)
    bc, ac = scalar_to(beta, dm), scalar_to(alpha, dm)
    prod = np.matmul(_compute(m)[0], _compute(v)[0])
    if _is_zero(beta):
        bc = 0
    return _axpby(s, prod, bc, ac, dm, out)


def addr(s, v1, v2, beta=1, alpha=1):
    ds = _NP2DT[s.dtype]
    out, rt = M.addr_check(s.shape, ds, v1.shape, _NP2DT[v1.dtype], v2.shape, _NP2DT[v2.dtype],
                           beta, alpha)
    bc, ac = scalar_to(beta, rt), scalar_to(alpha, rt)
    if _is_zero(beta):
        bc = 0
    if rt is _bool:
        prod = np.multiply.outer(v1.astype(_BOOL), v2.astype(_BOOL))
        return _axpby(s.astype(_BOOL), prod, bc, ac, rt, out)
    ct = _F32 if rt in M.LOW else rt.np
    prod = np.multiply.outer(v1.astype(ct), v2.astype(ct))
    return _axpby(s, prod, bc, ac, rt, out)


def baddbmm(s, a, b, beta=1, alpha=1):
    ds, da, db = _NP2DT[s.dtype], _NP2DT[a.dtype], _NP2DT[b.dtype]
    out = M.baddbmm_check(s.shape, ds, a.shape, da, b.shape, db)
    if da is _bool:
        if _numel(out) and a.shape[2]:
            M.not_implemented("baddbmm", da)
        bb = bool(beta)
        return np.broadcast_to(s & bb, out).copy() if bb else np.zeros(out, _BOOL)
    bc, ac = scalar_to(beta, da), scalar_to(alpha, da)
    prod = _mm1(_compute(a)[0], _compute(b)[0])
    if _is_zero(beta):
        bc = 0
    return _axpby(s, prod, bc, ac, da, out)


def addbmm(s, a, b, beta=1, alpha=1):
    ds, da, db = _NP2DT[s.dtype], _NP2DT[a.dtype], _NP2DT[b.dtype]
    out = M.addbmm_check(s.shape, ds, a.shape, da, b.shape, db)
    if ds is _bool:
        if a.shape[0] and _numel(out) and a.shape[2]:
            M.not_implemented("addmm_impl_cpu_", ds)
        bb = bool(beta)
        return np.broadcast_to(s & bb, out).copy() if bb else np.zeros(out, _BOOL)
    bc, ac = scalar_to(beta, ds), scalar_to(alpha, ds)
    ca = _compute(a)[0]
    prod = np.matmul(ca, _compute(b)[0]).sum(axis=0, dtype=ca.dtype) if a.shape[0] else \
        np.zeros(out, ca.dtype if ca.dtype != s.dtype or ds not in M.LOW else _F32)
    if _is_zero(beta):
        bc = 0
    return _axpby(s, prod, bc, ac, ds, out)


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def _write(s, r):
    if not s.flags.writeable:
        raise RuntimeError(_OVERLAP)
    np.copyto(s, r, casting="unsafe")


def addmm_(s, a, b, beta=1, alpha=1):
    r = addmm(s, a, b, beta, alpha)
    M.bad_inplace(s.shape, r.shape)
    _write(s, r)


def addmv_(s, m, v, beta=1, alpha=1):
    r = addmv(s, m, v, beta, alpha)
    M.bad_inplace(s.shape, r.shape)
    _write(s, r)


def baddbmm_(s, a, b, beta=1, alpha=1):
    r = baddbmm(s, a, b, beta, alpha)
    M.bad_inplace(s.shape, r.shape)
    _write(s, r)


def addr_(s, v1, v2, beta=1, alpha=1):
    M.addr_inplace_check(s.shape, v1.shape, v2.shape)
    r = addr(s, v1, v2, beta, alpha)
    if r.dtype != s.dtype and not _dt.can_cast(_NP2DT[r.dtype], _NP2DT[s.dtype]):
        raise RuntimeError(f"result type {_NP2DT[r.dtype]._short} can't be cast to the desired "
                           f"output type {_NP2DT[s.dtype]._short}")
    _write(s, r)


def outer(a, b):
    M.outer_check(a.shape, b.shape)
    rt = _dt.promote_types(_NP2DT[a.dtype], _NP2DT[b.dtype])
    ct = _F32 if rt in M.LOW else rt.np
    try:
        r = np.multiply.outer(a.astype(ct, copy=False), b.astype(ct, copy=False))
    except TypeError:  # complex32 (NumPy has no loops or casts for it): torch's self[:, None] * vec2
        if not _chalf.any_chalf(a, b):
            raise
        return _chalf.mul(a.reshape(-1, 1), b, ct)
    return r if r.dtype == rt.np else r.astype(rt.np)


def ger(a, b):
    warnings.warn("torch.ger is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.outer instead.", UserWarning, stacklevel=4)
    return outer(a, b)


def inner(a, b):
    if a.__class__ is not _nd or b.__class__ is not _nd:
        a, b = np.asarray(a), np.asarray(b)
    da, db = _NP2DT[a.dtype], _NP2DT[b.dtype]
    r = M.inner_check(a.shape, da, b.shape, db)
    if r is None:
        from ember.kernels.cpu._promote import result_dtype
        rt = result_dtype(a, b)
        ct = _F32 if rt in M.LOW else rt.np
        p = np.multiply(a.astype(ct), b.astype(ct))
        return p if p.dtype == rt.np else p.astype(rt.np)
    return _tensordot(a, b, r)


def tensordot(a, b, dims_self, dims_other):
    r = M.tensordot_check(a.shape, _NP2DT[a.dtype], b.shape, _NP2DT[b.dtype], dims_self,
                          dims_other)
    return _tensordot(a, b, r)


def _tensordot(a, b, check):
    out, wa, wb = check
    t1, t2 = a, b
    csize = 1
    for i, j in zip(wa, wb):
        s1, s2 = a.shape[i], b.shape[j]
        if s2 == 1:
            t1 = _sum_keep(t1, (i,))
        elif s1 == 1:
            t2 = _sum_keep(t2, (j,))
        else:
            csize *= s1
    p1 = [i for i in range(a.ndim) if i not in wa] + list(wa)
    p2 = list(wb) + [i for i in range(b.ndim) if i not in wb]
    size1 = _numel([t1.shape[i] for i in range(a.ndim) if i not in wa])
    size2 = _numel([t2.shape[i] for i in range(b.ndim) if i not in wb])
    m1 = t1.transpose(p1).reshape(size1, csize)
    m2 = t2.transpose(p2).reshape(csize, size2)
    return mm(m1, m2).reshape(out)


def _sum_keep(x, dims):
    """x.sum(dims, keepdim=True, dtype=x.dtype) (low precision accumulated in float32)."""
    if x.dtype in _LOWNP:
        return x.astype(_F32).sum(axis=dims, keepdims=True).astype(x.dtype)
    return x.sum(axis=dims, keepdims=True, dtype=x.dtype)


def kron(a, b):
    rt = _dt.promote_types(_NP2DT[a.dtype], _NP2DT[b.dtype])
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    ct = _F32 if rt in M.LOW else rt.np
    ea = a.reshape(tuple(x for s in sa for x in (s, 1)))
    eb = b.reshape(tuple(x for s in sb for x in (1, s)))
    try:
        r = np.multiply(ea.astype(ct, copy=False), eb.astype(ct, copy=False))
    except TypeError:  # complex32 (NumPy has no loops or casts for it): torch's mul of the views
        if not _chalf.any_chalf(a, b):
            raise
        r = _chalf.mul(ea, eb, ct)
    r = r.reshape(M.kron_shape(sa, sb))
    return r if r.dtype == rt.np else r.astype(rt.np)


_cross_warned = []


def cross(a, b, dim=None):
    if dim is None and not _cross_warned:
        _cross_warned.append(True)
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                      "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                      "The default value of dim will change to agree with that of linalg.cross in "
                      "a future release.", UserWarning, stacklevel=4)
    return linalg_cross(a, b, M.cross_default_dim(dim, a.shape))


def linalg_cross(a, b, dim=-1):
    da = _NP2DT[a.dtype]
    out, d = M.linalg_cross_check(a.shape, da, b.shape, _NP2DT[b.dtype], dim)
    if da is _bool:
        M.not_implemented("cross", da)
    a = np.broadcast_to(a, out)
    b = np.broadcast_to(b, out)
    r = np.empty(out, a.dtype)
    a0, a1, a2 = (a.take(i, axis=d) for i in range(3))
    b0, b1, b2 = (b.take(i, axis=d) for i in range(3))
    idx = [slice(None)] * len(out)
    for i, v in enumerate((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)):
        idx[d] = i
        r[tuple(idx)] = v
    return r


def vecdot(x, y, dim=-1):
    dx = _NP2DT[x.dtype]
    out, d = M.vecdot_check(x.shape, dx, y.shape, _NP2DT[y.dtype], dim)
    if dx.category == _dt.COMPLEX:
        x = np.conj(x)
    p = _NumpyOps.mul(x, y)
    return _NumpyOps.sum(p, (d - p.ndim,) if p.ndim else (), False)


def multi_dot(tensors):
    shapes = [t.shape for t in tensors]
    dts = [_NP2DT[t.dtype] for t in tensors]
    out, first_vec, last_vec = M.multi_dot_check(shapes, dts)
    return _chain(tensors, out, dts[0])


def _chain(tensors, out, d):
    """at::linalg_multi_dot: mm in the cheapest order (matrix chain order, as ATen picks it)."""
    mats = list(tensors)
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    split = chain_order([m.shape for m in mats])

    def run(i, j):
        if i == j:
            return mats[i]
        k = split(i, j)
        return mm(run(i, k), run(k + 1, j))
    return run(0, len(mats) - 1).reshape(out)


def chain_matmul(matrices):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=4)
    shapes = [t.shape for t in matrices]
    dts = [_NP2DT[t.dtype] for t in matrices]
    out = M.chain_matmul_check(shapes, dts)
    if len(matrices) == 1:
        return matrices[0].copy()
    return _chain(matrices, out, dts[0])


def matrix_power(a, n):
    d = _NP2DT[a.dtype]
    M.matrix_power_check(a.shape, d, n)
    if n == 0:
        if d is _C32:  # torch builds the identity with eye, which has no ComplexHalf kernel
            M.not_implemented("eye", d)
        r = np.zeros(a.shape, a.dtype)
        k = a.shape[-1]
        idx = np.arange(k)
        r[..., idx, idx] = 1
        return r
    if n < 0:
        a = linalg_inv(a)
        n = -n
    if d is _bool:
        if n == 1:
            return a.copy()
        M.not_implemented("bmm" if a.ndim > 2 else "addmm_impl_cpu_", d)
    if n == 1:
        return a.copy()
    try:
        if n == 2:
            return _mul(a, a)
        if n == 3:
            return _mul(_mul(a, a), a)
        # binary decomposition, as at::linalg_matrix_power
        z = None
        result = None
        while n > 0:
            z = a if z is None else _mul(z, z)
            if n & 1:
                result = z if result is None else _mul(result, z)
            n >>= 1
    except TypeError:  # complex32: torch's products have no ComplexHalf kernel
        if d is not _C32:
            raise
        M.not_implemented("bmm" if a.ndim > 2 else "addmm_impl_cpu_", d)
    return result if result is not a else a.copy()


# ---- diagonals ----------------------------------------------------------------------------
def _diag_view(r, offset, d1, d2):
    """A writable view of diagonal `offset` of array r over dims d1, d2 (moved last)."""
    st = r.strides
    ln = M.diag_len(r.shape, offset, d1, d2)
    start = offset * st[d2] if offset >= 0 else -offset * st[d1]
    keep = [i for i in range(r.ndim) if i not in (d1, d2)]
    shape = tuple(r.shape[i] for i in keep) + (ln,)
    strides = tuple(st[i] for i in keep) + (st[d1] + st[d2],)
    if ln == 0 or r.size == 0:
        return np.zeros(shape, r.dtype)
    return np.lib.stride_tricks.as_strided(r.reshape(-1)[start // r.itemsize:], shape, strides)


def diag(a, diagonal=0):
    shape = M.diag_shape(a.shape, diagonal)
    if a.ndim == 1:
        r = np.zeros(shape, a.dtype)
        if a.size:
            _diag_view(r, diagonal, 0, 1)[...] = a
        return r
    return np.diagonal(a, diagonal).copy()


def diag_embed(a, offset=0, dim1=-2, dim2=-1):
    shape, d1, d2 = M.diag_embed_check(a.shape, offset, dim1, dim2)
    r = np.zeros(shape, a.dtype)
    if a.size:
        _diag_view(r, offset, d1, d2)[...] = a
    return r


def diagflat(a, offset=0):
    return diag(a.reshape(-1), offset)


def trace(a):
    d = _NP2DT[a.dtype]
    try:
        M.trace_check(a.shape)
    except RuntimeError:
        if d is _C32:  # torch's dtype dispatch comes first; it has no ComplexHalf kernel
            M.not_implemented("trace", d)
        raise
    if d is _bool:
        M.not_implemented("trace", d)
    if d.category <= _dt.INT:
        return np.asarray(np.trace(a, dtype=_I64))
    if a.dtype in _LOWNP:
        return np.asarray(np.trace(a.astype(_F32))).astype(a.dtype)
    return np.asarray(np.trace(a))


# ---- norms --------------------------------------------------------------------------------
def _vector_norm(x, o, dims, keepdim, rd):
    """|x|_o over dims (None: all) -> array of real dtype rd."""
    if x.dtype in _LOWNP:
        x = x.astype(_F32)
    try:
        ax = np.abs(x)
    except TypeError:  # complex32: |z| in float, as linalg.vector_norm computes it
        if x.dtype != _chalf.C32:
            raise
        ax = np.abs(_chalf.widen(x))
    axis = dims if x.ndim else None
    if o == 2.0:
        r = np.sqrt(np.sum(ax * ax, axis=axis, keepdims=keepdim))
    elif o == 1.0:
        r = np.sum(ax, axis=axis, keepdims=keepdim)
    elif o == _INF:
        r = _amax(ax, axis, keepdim)
    elif o == -_INF:
        r = np.min(ax, axis=axis, keepdims=keepdim)
    elif o == 0.0:
        r = np.sum(ax != 0, axis=axis, keepdims=keepdim, dtype=ax.dtype)
    else:
        r = np.power(np.sum(np.power(ax, o), axis=axis, keepdims=keepdim), 1.0 / o)
    return np.asarray(r, dtype=rd.np)


def _amax(x, axis, keepdim):
    if x.size == 0:
        shape = x.shape
        if axis is None:
            axis = tuple(range(x.ndim))
        axis = (axis,) if isinstance(axis, int) else axis
        axis = tuple(a % x.ndim for a in axis)
        return np.zeros(tuple(1 if i in axis else s for i, s in enumerate(shape)) if keepdim else
                        tuple(s for i, s in enumerate(shape) if i not in axis), x.dtype)
    return np.max(x, axis=axis, keepdims=keepdim)


def _amin(x, axis, keepdim, shown):
    if x.shape[axis] == 0:
        raise IndexError(f"amin(): Expected reduction dim {shown} to have non-zero size.")
    return np.min(x, axis=axis, keepdims=keepdim)


def _svdvals(x):
    if x.dtype in _LOWNP:
        x = x.astype(_F32)
    if x.size == 0:
        return np.zeros(x.shape[:-2] + (min(x.shape[-2:]),), x.real.dtype)
    return np.linalg.svd(x, compute_uv=False)


def _matrix_norm(a, ord, dim, keepdim, dtype):
    shape, rd, (d0, d1) = M.matrix_norm_check(a.shape, _NP2DT[a.dtype], ord, dim, keepdim, dtype)
    x = a if dtype is None else a.astype(dtype.np)
    if ord == "fro":
        return _vector_norm(x, 2.0, (d0, d1), keepdim, rd)
    if ord == "nuc" or abs(float(ord)) == 2.0:
        xm = np.moveaxis(x, (d0, d1), (-2, -1))
        sv = _svdvals(xm)
        if ord == "nuc":
            r = sv.sum(axis=-1)
        elif float(ord) > 0:
            r = _amax(sv, -1, False)
        else:
            r = _amin(sv, -1, False, -1)
        if keepdim:
            r = np.expand_dims(r, tuple(sorted((d0, d1))))
        return np.asarray(r, dtype=rd.np)
    o = float(ord)
    e0, e1 = (d1, d0) if abs(o) == _INF else (d0, d1)
    if not keepdim and e0 < e1:
        e1 -= 1
    v = _vector_norm(x, 1.0, (e0,), keepdim, rd)
    if o > 0:
        r = _amax(v, e1, keepdim)
    else:
        r = _amin(v, e1, keepdim, e1)
    return np.asarray(r, dtype=rd.np)


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    return _matrix_norm(a, ord, dim, keepdim, dtype)


def norm(a, ord=None, dim=None, keepdim=False, dtype=None):
    plan = M.linalg_norm_plan(a.shape, ord, dim, isinstance(ord, str))
    if plan[0] == "matrix":
        return _matrix_norm(a, plan[1], plan[2], keepdim, dtype)
    shape, rd, dims = M.vector_norm_check(a.shape, _NP2DT[a.dtype], plan[1], plan[2], keepdim,
                                          dtype)
    x = a if dtype is None else a.astype(dtype.np)
    return _vector_norm(x, float(plan[1]), dims, keepdim, rd)


# ---- einsum -------------------------------------------------------------------------------
class _NumpyOps:
    """einsum's tensor operations on arrays (PyTorch's dtype rules)."""

    @staticmethod
    def shape(x):
        return x.shape

    @staticmethod
    def dtype(x):
        return _NP2DT[x.dtype]

    @staticmethod
    def diagonal(x, d1, d2):
        return np.moveaxis(np.diagonal(x, 0, d1, d2), -1, d1)

    @staticmethod
    def unsqueeze(x, d):
        return np.expand_dims(x, d)

    @staticmethod
    def permute(x, perm):
        return x.transpose(perm)

    @staticmethod
    def reshape(x, shape):
        return x.reshape(shape)

    @staticmethod
    def sum(x, dims, keepdim=True):
        dims = tuple(dims)
        if x.dtype.kind in "biu":
            return np.asarray(x.sum(axis=dims, keepdims=keepdim, dtype=_I64))
        if x.dtype in _LOWNP:
            return np.asarray(x.astype(_F32).sum(axis=dims, keepdims=keepdim)).astype(x.dtype)
        try:
            return np.asarray(x.sum(axis=dims, keepdims=keepdim))
        except TypeError:  # complex32: torch's sum has no ComplexHalf kernel
            if x.dtype != _chalf.C32:
                raise
            raise _chalf.refuse("sum_cpu") from None

    @staticmethod
    def mul(a, b):
        rt = _dt.promote_types(_NP2DT[a.dtype], _NP2DT[b.dtype])
        ct = _F32 if rt in M.LOW else rt.np
        try:
            r = np.multiply(a.astype(ct, copy=False), b.astype(ct, copy=False))
        except TypeError:  # complex32 (NumPy has no loops or casts for it)
            if not _chalf.any_chalf(a, b):
                raise
            return _chalf.mul(a, b, ct)
        return r if r.dtype == rt.np else r.astype(rt.np)

    @staticmethod
    def bmm(a, b):
        da, db = _NP2DT[a.dtype], _NP2DT[b.dtype]
        if da is not db:
            raise RuntimeError(f"expected scalar type {da._short} but found {db._short}")
        if da is _bool:
            if a.shape[0] * a.shape[1] * b.shape[2] and a.shape[2]:
                M.not_implemented("bmm", da)
            return np.zeros((a.shape[0], a.shape[1], b.shape[2]), _BOOL)
        try:
            return _mul(a, b)
        except TypeError:  # complex32: torch's bmm has no ComplexHalf kernel
            if da is not _C32:
                raise
            M.not_implemented("bmm", da)


def einsum(equation, tensors, path=None):
    r = _einsum(equation, tensors, path, _NumpyOps)
    if r is None:  # a view of the single operand in PyTorch: same layout, own memory here
        r = _einsum_view(equation, tensors)
        return np.array(r, order="K", copy=True)
    return r


def _einsum_view(equation, tensors):
    """Redo the single-operand rearrangement (diagonals + permutation) to get the view."""
    class _Keep(_NumpyOps):
        last = None

        @staticmethod
        def permute(x, perm):
            r = x.transpose(perm)
            _Keep.last = r
            return r
    _einsum(equation, tensors, None, _Keep)
    return _Keep.last


# ---- decompositions (torch.linalg) --------------------------------------------------------
class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a linear-algebra routine failed (singular matrix, ...)."""


LinAlgError.__module__ = "ember.linalg"


def _fcontig(r):
    """r in ATen's batched column-major layout (LAPACK results)."""
    if r.ndim < 2:
        return r
    return np.ascontiguousarray(r.swapaxes(-1, -2)).swapaxes(-1, -2)


def _batch_prefix(shape, b):
    return f"(Batch element {b}): " if len(shape) > 2 else ""


def _lu(m):
    """Unblocked LU with partial pivoting (LAPACK getf2) of one matrix, in place.
    Returns (perm, info): info is the 1-based index of the first exactly-zero pivot."""
    n = m.shape[0]
    perm = np.arange(n)
    info = 0
    for k in range(n):
        p = k + int(np.argmax(np.abs(m[k:, k])))
        if m[p, k] == 0:
            if info == 0:
                info = k + 1
            continue
        if p != k:
            m[[k, p]] = m[[p, k]]
            perm[[k, p]] = perm[[p, k]]
        m[k + 1:, k] /= m[k, k]
        m[k + 1:, k + 1:] -= np.multiply.outer(m[k + 1:, k], m[k, k + 1:])
    return perm, info


def _lu_solve(m, perm, rhs):
    """Solve with the factors of _lu (zero pivots give inf/nan, as LAPACK's getrs)."""
    n = m.shape[0]
    x = rhs[perm].astype(m.dtype, copy=True)
    for k in range(n):
        x[k + 1:] -= np.multiply.outer(m[k + 1:, k], x[k])
    for k in range(n - 1, -1, -1):
        x[k] = (x[k] - m[k, k + 1:] @ x[k + 1:]) / m[k, k]
    return x


def _solve_batched(a, b, name, check_errors, singular_msg):
    """x = a^-1 b, b in matrix form with the broadcast batch; info over a's own batch."""
    abatch = a.shape[:-2]
    n = a.shape[-1]
    full = b.shape[:-2]
    if a.size == 0 or b.size == 0:
        return np.zeros(b.shape, np.result_type(a.dtype, b.dtype)), np.zeros(abatch, np.int32)
    try:
        x = np.linalg.solve(np.broadcast_to(a, full + (n, n)), b)
        return x, np.zeros(abatch, np.int32)
    except np.linalg.LinAlgError:
        pass
    af = a.reshape((-1, n, n))
    info = np.zeros(af.shape[0], np.int32)
    facs = []
    for i in range(af.shape[0]):
        m = af[i].copy()
        perm, info[i] = _lu(m)
        facs.append((m, perm))
    if check_errors:
        for i in range(af.shape[0]):
            if info[i]:
                raise LinAlgError(name + ": " + _batch_prefix(a.shape, i) +
                                  singular_msg.format(info[i]))
    which = np.broadcast_to(np.arange(af.shape[0]).reshape(abatch), full).reshape(-1)
    bf = b.reshape((-1,) + b.shape[-2:])
    x = np.empty(bf.shape, np.result_type(a.dtype, b.dtype))
    for i in range(bf.shape[0]):
        m, perm = facs[which[i]]
        x[i] = _lu_solve(m, perm, bf[i])
    return x.reshape(b.shape), info.reshape(abatch)


_INV_MSG = ("The diagonal element {} is zero, the inversion could not be completed because the "
            "input matrix is singular.")
_SOLVE_MSG = "The solver failed because the input matrix is singular."


def _inv(a, name, check_errors):
    M.inv_check(a.shape, _NP2DT[a.dtype])
    n = a.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape)
    x, info = _solve_batched(a, eye, name, check_errors, _INV_MSG)
    return _fcontig(x), info


def linalg_inv(a):
    return _inv(a, "linalg.inv", True)[0]


def linalg_inv_ex(a, check_errors=False):
    return _inv(a, "linalg.inv_ex", check_errors)


def _solve(a, b, left, name, check_errors):
    shape, vector, bshape = M.solve_check(a.shape, _NP2DT[a.dtype], b.shape, _NP2DT[b.dtype], left)
    M.lowp_not_implemented(_NP2DT[a.dtype], "lu_cpu")
    b_ = b[..., None] if vector else b
    if left:
        aa = a
        bb = np.broadcast_to(b_, bshape)
    else:  # X A = B  <=>  A^T X^T = B^T
        aa = a.swapaxes(-1, -2)
        bb = np.broadcast_to(b_, bshape).swapaxes(-1, -2)
    x, info = _solve_batched(aa, bb, name, check_errors, _SOLVE_MSG)
    if not left:
        return np.ascontiguousarray(x.swapaxes(-1, -2)), info
    if vector:
        x = x[..., 0]
    return _fcontig(x), info


def linalg_solve(a, b, left=True):
    return _solve(a, b, left, "torch.linalg.solve", True)[0]


def linalg_solve_ex(a, b, left=True, check_errors=False):
    return _solve(a, b, left, "torch.linalg.solve_ex", check_errors)


def det(a):
    d = _NP2DT[a.dtype]
    M.det_check(a.shape, d)
    M.lowp_not_implemented(d, "lu_cpu")
    return np.asarray(np.linalg.det(a), dtype=a.dtype)


def slogdet(a):
    M.slogdet_check(a.shape, _NP2DT[a.dtype])
    sign, logabs = np.linalg.slogdet(a)
    return np.asarray(sign, dtype=a.dtype), np.asarray(logabs, dtype=a.real.dtype)


def logdet(a):
    M.slogdet_check(a.shape, _NP2DT[a.dtype], "logdet")
    sign, logabs = np.linalg.slogdet(a)
    if np.iscomplexobj(a):
        return np.asarray(np.log(sign) + logabs, dtype=a.dtype)
    return np.asarray(np.where(sign < 0, np.nan, logabs), dtype=a.dtype)


def _empty_svd(a, full_matrices, real):
    b = a.shape[:-2]
    u, s, vh = M.svd_shapes(a.shape, full_matrices)
    U = np.zeros(u, a.dtype)
    Vh = np.zeros(vh, a.dtype)
    if U.size and u[-1] == u[-2]:
        U[...] = np.eye(u[-1], dtype=a.dtype)
    if Vh.size and vh[-1] == vh[-2]:
        Vh[...] = np.eye(vh[-1], dtype=a.dtype)
    return U, np.zeros(b + s[-1:], real), Vh


def linalg_svd(a, full_matrices=True, driver=None):
    M.svd_check(a.shape, _NP2DT[a.dtype], driver)
    if a.size == 0:
        U, S, Vh = _empty_svd(a, full_matrices, a.real.dtype)
    else:
        U, S, Vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _fcontig(U), np.ascontiguousarray(S), _fcontig(Vh)


def svd(a, some=True, compute_uv=True):
    if a.ndim < 2:
        raise RuntimeError("linalg.svd: input should have at least 2 dimensions, but has "
                           f"{a.ndim} dimensions instead")
    M.svd_check(a.shape, _NP2DT[a.dtype])
    m, n = a.shape[-2:]
    b = a.shape[:-2]
    if not compute_uv:
        return (np.zeros(b + (m, m), a.dtype), linalg_svdvals(a),
                _fcontig(np.zeros(b + (n, n), a.dtype)))
    U, S, Vh = linalg_svd(a, not some)
    return U, S, np.ascontiguousarray(np.conj(Vh.swapaxes(-1, -2)))


def linalg_svdvals(a, driver=None):
    M.svd_check(a.shape, _NP2DT[a.dtype], driver)
    return np.ascontiguousarray(_svdvals(a))


def linalg_qr(a, mode="reduced"):
    M.qr_check(a.shape, _NP2DT[a.dtype], mode)
    qs, rs = M.qr_shapes(a.shape, mode)
    if a.size == 0:
        q = np.zeros(qs, a.dtype)
        if mode == "complete" and q.size:
            q[...] = np.eye(qs[-1], dtype=a.dtype)
        return _fcontig(q), _fcontig(np.zeros(rs, a.dtype))
    if mode == "r":
        return np.zeros((0,), a.dtype), _fcontig(np.linalg.qr(a, mode="r"))
    q, r = np.linalg.qr(a, mode=mode)
    return _fcontig(q), _fcontig(r)


def qr(a, some=True):
    global _qr_warned
    if not _qr_warned:
        _qr_warned = True
        warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                      "future PyTorch release.\nThe boolean parameter 'some' has been replaced with "
                      "a string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced "
                      "with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')",
                      UserWarning, stacklevel=4)
    return linalg_qr(a, "reduced" if some else "complete")


_qr_warned = False
_CHOL_MSG = ("The factorization could not be completed because the input is not positive-definite "
             "(the leading minor of order {} is not positive-definite).")


def _cholesky(a, upper, name, check_errors):
    batch = a.shape[:-2]
    try:
        L = np.linalg.cholesky(a) if a.size else np.zeros(a.shape, a.dtype)
        info = np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        n = a.shape[-1]
        af = a.reshape((-1, n, n))
        Lf = np.zeros(af.shape, a.dtype)
        info = np.zeros(af.shape[0], np.int32)
        for i in range(af.shape[0]):
            Lf[i], info[i] = _potf2(af[i])
        if check_errors:
            for i in range(af.shape[0]):
                if info[i]:
                    raise LinAlgError(name + ": " + _batch_prefix(a.shape, i) +
                                      _CHOL_MSG.format(info[i]))
        L = Lf.reshape(a.shape)
        info = info.reshape(batch)
    if upper:
        L = np.conj(L.swapaxes(-1, -2))
    return _fcontig(L), info


def _potf2(m):
    """Unblocked lower Cholesky (LAPACK potf2): the partial factor and info on failure."""
    n = m.shape[0]
    L = np.tril(m).astype(m.dtype, copy=True)
    for j in range(n):
        row = L[j, :j]
        d = (L[j, j] - np.vdot(row, row)).real
        if not d > 0:
            L[j, j] = d
            return L, j + 1
        L[j, j] = np.sqrt(d)
        if j + 1 < n:
            L[j + 1:, j] = (L[j + 1:, j] - L[j + 1:, :j] @ np.conj(row)) / L[j, j]
    return L, 0


def linalg_cholesky(a, upper=False):
    M.cholesky_check(a.shape, _NP2DT[a.dtype])
    return _cholesky(a, upper, "linalg.cholesky", True)[0]


def linalg_cholesky_ex(a, upper=False, check_errors=False):
    M.cholesky_check(a.shape, _NP2DT[a.dtype])
    return _cholesky(a, upper, "linalg.cholesky_ex", check_errors)


_chol_warned = []


def cholesky(a, upper=False):
    if not _chol_warned:
        _chol_warned.append(True)
        warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                      "removed in a future PyTorch release.\nL = torch.cholesky(A)\nshould be "
                      "replaced with\nL = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, "
                      "upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                      "This transform will produce equivalent results for all valid (symmetric "
                      "positive definite) inputs.", UserWarning, stacklevel=4)
    M.cholesky_check(a.shape, _NP2DT[a.dtype], "cholesky")
    return _cholesky(a, upper, "cholesky", True)[0]


def linalg_eigh(a, UPLO="L"):
    M.eigh_check(a.shape, _NP2DT[a.dtype], UPLO)
    if a.size == 0:
        return np.zeros(a.shape[:-1], a.real.dtype), _fcontig(np.zeros(a.shape, a.dtype))
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return np.ascontiguousarray(w), _fcontig(v)


def linalg_eigvalsh(a, UPLO="L"):
    M.eigh_check(a.shape, _NP2DT[a.dtype], UPLO)
    if a.size == 0:
        return np.zeros(a.shape[:-1], a.real.dtype)
    return np.ascontiguousarray(np.linalg.eigvalsh(a, UPLO=UPLO))


# ---- eig, pinv, matrix_rank, matrix_exp, triangular / LU / Cholesky solves -----------------
def _complex_np(a):
    return a.dtype if a.dtype.kind == "c" else np.result_type(a.dtype, np.complex64)


def linalg_eig(a):
    M.eig_check(a.shape, _NP2DT[a.dtype])
    ct = _complex_np(a)
    if a.size == 0:
        return np.zeros(a.shape[:-1], ct), _fcontig(np.zeros(a.shape, ct))
    w, v = np.linalg.eig(a)
    return np.ascontiguousarray(w.astype(ct, copy=False)), _fcontig(v.astype(ct, copy=False))


def linalg_eigvals(a):
    M.eig_check(a.shape, _NP2DT[a.dtype], "linalg.eigvals")
    ct = _complex_np(a)
    if a.size == 0:
        return np.zeros(a.shape[:-1], ct)
    return np.ascontiguousarray(np.linalg.eigvals(a).astype(ct, copy=False))


def _eps(a):
    return float(np.finfo(a.real.dtype).eps)


def _atol_rtol(a, atol, rtol):
    """ATen's get_atol_rtol: rtol defaults to eps * max(m, n), or 0 when a positive atol is given."""
    default = _eps(a) * max(a.shape[-1], a.shape[-2])
    if rtol is None:
        rtol = default if atol is None or not atol > 0 else 0.0
    return (0.0 if atol is None else float(atol)), float(rtol)


def linalg_pinv(a, atol=None, rtol=None, hermitian=False):
    M.pinv_check(a.shape, _NP2DT[a.dtype])
    atol, rtol = _atol_rtol(a, atol, rtol)
    out = a.shape[:-2] + (a.shape[-1], a.shape[-2])
    if hermitian:
        M.eigh_check(a.shape, _NP2DT[a.dtype], "L")
    if a.size == 0:
        return np.zeros(out, a.dtype)
    if not hermitian:
        U, S, Vh = np.linalg.svd(a, full_matrices=False)
        tol = np.maximum(atol, rtol * S[..., :1])
        Sinv = np.where(S > tol, 1.0 / np.where(S > tol, S, 1), 0).astype(a.dtype)
        V = np.conj(Vh.swapaxes(-1, -2))
        return np.ascontiguousarray(np.matmul(V * Sinv[..., None, :], np.conj(U.swapaxes(-1, -2))))
    w, U = np.linalg.eigh(a)
    aw = np.abs(w)
    tol = np.maximum(atol, rtol * aw.max(axis=-1, keepdims=True))
    Winv = np.where(aw > tol, 1.0 / np.where(aw > tol, w, 1), 0).astype(a.dtype)
    return np.ascontiguousarray(np.matmul(U * Winv[..., None, :], np.conj(U.swapaxes(-1, -2))))


def linalg_pinv_rcond(a, rcond=1e-15, hermitian=False):
    return linalg_pinv(a, 0.0, rcond, hermitian)


def linalg_matrix_rank(a, atol=None, rtol=None, hermitian=False):
    M.matrix_rank_check(a.shape, _NP2DT[a.dtype])
    if hermitian:
        M.eigh_check(a.shape, _NP2DT[a.dtype], "L")
    atol, rtol = _atol_rtol(a, atol, rtol)
    if a.size == 0:
        return np.zeros(a.shape[:-2], _I64)
    S = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    tol = np.maximum(atol, rtol * S.max(axis=-1, keepdims=True))
    return np.asarray(np.sum(S > tol, axis=-1), dtype=_I64)


def linalg_matrix_rank_tol(a, tol, hermitian=False):
    return linalg_matrix_rank(a, tol, 0.0, hermitian)


# torch's CPU linalg_matrix_exp (LinearAlgebra.cpp, mexp): Bader-Blanes-Casas optimised Taylor
# polynomials of degree 1, 2, 4, 8, 12, 18 picked by the operator 1-norm, degree 18 with scaling and
# squaring above the last threshold; everything runs in the input's dtype, coefficients rounded to
# its real dtype, linear combinations summed in coefficient order like _compute_linear_combination.
_MEXP_THETAS = {
    np.float32: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                 5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
    np.float64: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                 4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
}
_MEXP_B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
             (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
              0.01108844528519167989),
             (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
              0.00610700528898058230),
             (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
              -0.00675951846863086359))
_MEXP_B18 = ((0., -1.00365581030144618291e-01, -8.02924648241156932449e-03,
              -8.92138498045729985177e-04, 0.),
             (0., 3.97849749499645077844e-01, 1.36783778460411720168e+00,
              4.98289622525382669416e-01, -6.37898194594723280150e-04),
             (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
              -6.98210122488052056106e-03, 3.34975017086070470649e-05),
             (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
              2.95552570429315521194e-02, -1.39180257516060693404e-05),
             (0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02,
              -1.40086798182036094347e-05))


def _mexp_t8_coeffs(rt):
    """compute_T8's constexpr scalar_t constants: each expression in double, stored as scalar_t."""
    s177 = float(rt(0.1330413469565007072504e+2))
    x3 = float(rt(2. / 3.))
    return tuple(rt(v) for v in (
        x3 * ((1. + s177) / 88.), x3 * ((1. + s177) / 352.), x3,
        (-271. + 29. * s177) / (315. * x3), (-11. + 11. * s177) / (1260. * x3),
        (-99. + 11. * s177) / (5040. * x3), (89. - s177) / (5040. * x3), (857. - 58. * s177) / 630.))


def _mexp_lin(mats, coeffs, rt):
    """_compute_linear_combination for one output: 0 + m[0]*c[0] + m[1]*c[1] + ... in order."""
    out = np.zeros_like(mats[0])
    for m, c in zip(mats, coeffs):
        out += m * rt(c)
    return out


def _mexp_mm(a, b):
    """a @ b rounded as torch's CPU matmul (MKL, and bmm's naive kernel below 400 multiply-adds)
    rounds the small real products here: k summed in order, each product rounded, up to 11 x 11
    (from 12 on MKL's order is NumPy's BLAS's fused one; at 9-11 the in-order sum agrees in most,
    not all, places). The squarings amplify every rounding difference, so the order matters here.
    Complex products keep NumPy's order (MKL's small complex kernels follow neither)."""
    n = a.shape[-1]
    if n > 11 or a.dtype.kind == "c":
        return a @ b
    acc = a[..., :, :1] * b[..., :1, :]
    for k in range(1, n):
        acc += a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return acc


def _mexp_powers(a, k):
    """the first k of {I, A, A^2, A^3, A^6} (_fill_matrix_powers)."""
    n = a.shape[-1]
    p = [np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape).copy(), a]
    if k > 2:
        p.append(_mexp_mm(a, a))
    if k > 3:
        p.append(_mexp_mm(a, p[2]))
    if k > 4:
        p.append(_mexp_mm(p[3], p[3]))
    return p


def _mexp_t(i, a, rt):
    if i == 0:  # I + A
        return sum(_mexp_powers(a, 2))
    if i == 1:  # I + A + A^2 / 2
        p = _mexp_powers(a, 3)
        return p[0] + p[1] + p[2] / rt(2.0)
    if i == 2:  # I + A + A^2 (I/2 + A/6 + A^2/24)
        p = _mexp_powers(a, 3)
        p.append(_mexp_mm(p[2], _mexp_lin(p, (1 / 2.0, 1 / 6.0, 1 / 24.0), rt)))
        return _mexp_lin(p, (1.0, 1.0, 0.0, 1.0), rt)
    if i == 3:
        x1, x2, x3, x4, x5, x6, x7, y2 = _mexp_t8_coeffs(rt)
        p = _mexp_powers(a, 3)
        p.append(_mexp_mm(p[2], _mexp_lin(p[1:3], (x1, x2), rt)))  # A4 = A2 (x1 A + x2 A2)
        p.append(_mexp_mm(_mexp_lin(p[2:4], (x3, 1.0), rt), _mexp_lin(p, (x4, x5, x6, x7), rt)))
        return _mexp_lin(p, (1.0, 1.0, y2, 0.0, 1.0), rt)
    if i == 4:
        p = _mexp_powers(a, 4)
        B = [_mexp_lin(p, row, rt) for row in _MEXP_B12]
        B[2] += _mexp_mm(B[3], B[3])
        return B[0] + _mexp_mm(B[1] + B[2], B[2])
    p = _mexp_powers(a, 5)
    B = [_mexp_lin(p, row, rt) for row in _MEXP_B18]
    B[3] += _mexp_mm(B[0], B[4])
    return B[1] + _mexp_mm(B[2] + B[3], B[3])


def _mexp(x):
    """mexp on a (batch, n, n) stack with n >= 2, in x's dtype."""
    rt = np.float32 if x.dtype in (np.float32, np.complex64) else np.float64
    th = tuple(rt(t) for t in _MEXP_THETAS[rt])
    norm = np.abs(x).sum(axis=-2).max(axis=-1)
    res = np.full(x.shape, np.nan, x.dtype)  # torch leaves nan-norm entries uninitialised
    # torch 2.13 (checked against it) picks the degree by norm for a single matrix only; a batch of
    # several goes through degree 18 with scaling and squaring (compute_highest_degree_approx)
    for i in range(5 if x.shape[0] == 1 else 0):
        lo = th[i - 1] if i else rt(-1)
        idx = np.nonzero((lo < norm) & (norm <= th[i]))[0]
        if idx.size:
            res[idx] = _mexp_t(i, x[idx], rt)
    idx = np.nonzero(norm >= th[4])[0] if x.shape[0] == 1 else np.arange(x.shape[0])
    if idx.size:
        nrm = norm[idx]
        with np.errstate(all="ignore"):
            s = np.maximum(np.zeros_like(nrm), np.ceil(np.log2(nrm / th[5])))
        s = np.where(np.isfinite(s), s, 0).astype(np.int64)
        m = _mexp_t(5, x[idx] / np.ldexp(rt(1), s)[:, None, None], rt)
        for p in range(1, int(s.max()) + 1):  # each matrix squared s times (matrix-wise order)
            sel = s >= p
            m[sel] = _mexp_mm(m[sel], m[sel])
        res[idx] = m
    return res


def matrix_exp(a):
    M.matrix_exp_check(a.shape, _NP2DT[a.dtype])
    n = a.shape[-1]
    if a.size == 0:
        return np.zeros(a.shape, a.dtype)
    if n == 1:
        from ember.kernels.cpu.pointwise import exp  # torch: n == 1 is a.exp()
        return exp(a)
    x = a.reshape((-1,) + a.shape[-2:])
    if x.dtype not in _BLAS:  # float16/bfloat16: in float64 (torch's CPU kernel returns nan/inf)
        x = x.astype(np.float64)
    r = _mexp(x)
    bad = ~np.isfinite(x).all(axis=(-2, -1))
    if bad.any():
        r[bad] = np.nan
    return r.reshape(a.shape).astype(a.dtype, copy=False)


def _tri(a, upper, unit):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        idx = np.arange(n)
        t[..., idx, idx] = 1
    return t


def _tsolve(t, b):
    """t^-1 b for (batched) triangular t: zero pivots give inf/nan like LAPACK's trtrs."""
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        with np.errstate(all="ignore"):
            n = t.shape[-1]
            x = np.array(b, dtype=np.result_type(t.dtype, b.dtype), copy=True)
            low = np.allclose(t, np.tril(t))
            rng = range(n) if low else range(n - 1, -1, -1)
            for k in rng:
                others = slice(0, k) if low else slice(k + 1, n)
                x[..., k, :] = (x[..., k, :] - np.einsum("...j,...jc->...c", t[..., k, others],
                                                         x[..., others, :])) / t[..., k, k][..., None]
            return x


def solve_triangular(a, b, upper, left=True, unitriangular=False):
    out = M.solve_triangular_check(a.shape, _NP2DT[a.dtype], b.shape, _NP2DT[b.dtype], left)
    if b.dtype != a.dtype:
        b = b.astype(a.dtype)
    if a.size == 0 or b.size == 0:
        return _fcontig(np.zeros(out, a.dtype))
    batch = out[:-2]
    n = a.shape[-1]
    t = np.broadcast_to(_tri(a, upper, unitriangular), batch + (n, n))
    bb = np.broadcast_to(b, out)
    if left:
        x = _tsolve(t, bb)
    else:
        x = _tsolve(t.swapaxes(-1, -2), bb.swapaxes(-1, -2)).swapaxes(-1, -2)
    return _fcontig(x.astype(a.dtype, copy=False))


def _getf2(m):
    """LAPACK getf2 on one (m x n) matrix in place: 1-based pivots and info."""
    mm, nn = m.shape
    k_ = min(mm, nn)
    ipiv = np.arange(1, k_ + 1, dtype=np.int32)
    info = 0
    cplx = m.dtype.kind == "c"
    for k in range(k_):
        col = m[k:, k]
        mag = (np.abs(col.real) + np.abs(col.imag)) if cplx else np.abs(col)
        p = k + int(np.argmax(mag))
        ipiv[k] = p + 1
        if m[p, k] == 0:
            if info == 0:
                info = k + 1
            continue
        if p != k:
            m[[k, p]] = m[[p, k]]
        m[k + 1:, k] /= m[k, k]
        m[k + 1:, k + 1:] -= np.multiply.outer(m[k + 1:, k], m[k, k + 1:])
    return ipiv, info


def _lu_factor(a, name, check_errors):
    n_m, n_n = a.shape[-2:]
    k = min(n_m, n_n)
    batch = a.shape[:-2]
    LU = np.array(a, copy=True).reshape((_numel(batch), n_m, n_n))
    piv = np.zeros((LU.shape[0], k), np.int32)
    info = np.zeros(LU.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for i in range(LU.shape[0]):
            piv[i], info[i] = _getf2(LU[i])
    if check_errors:
        for i in range(LU.shape[0]):
            if info[i]:
                raise RuntimeError(f"{name}: " + _batch_prefix(a.shape, i) +
                                   f"U[{info[i]},{info[i]}] is zero and using it on lu_solve would "
                                   "result in a division by zero. If you still want to perform the "
                                   "factorization, consider calling linalg.lu(A, pivot) or "
                                   "linalg.lu_factor_ex(A, pivot)")
    return LU.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def lu_factor(a, pivot=True):
    M.lu_factor_check(a.shape, _NP2DT[a.dtype], pivot)
    LU, piv, _ = _lu_factor(a, "torch.linalg.lu_factor", True)
    return _fcontig(LU), piv


def lu_factor_ex(a, pivot=True, check_errors=False):
    M.lu_factor_check(a.shape, _NP2DT[a.dtype], pivot, "torch.lu_factor_ex")
    LU, piv, info = _lu_factor(a, "torch.linalg.lu_factor_ex", check_errors)
    return _fcontig(LU), piv, info


def _perm_from_pivots(piv, m):
    """Row permutation (as indices) that LAPACK's row swaps apply, per batch element."""
    flat = piv.reshape((_numel(piv.shape[:-1]), piv.shape[-1]))
    perms = np.tile(np.arange(m), (flat.shape[0], 1))
    for i in range(flat.shape[0]):
        p = perms[i]
        for k, q in enumerate(flat[i]):
            q -= 1
            if q != k:
                p[[k, q]] = p[[q, k]]
    return perms.reshape(piv.shape[:-1] + (m,))


def lu(a, pivot=True):
    M.lu_factor_check(a.shape, _NP2DT[a.dtype], pivot, "linalg.lu")
    LU, piv, _ = _lu_factor(a, "torch.linalg.lu", False)
    m, n = a.shape[-2:]
    k = min(m, n)
    L = np.tril(LU[..., :, :k], -1)
    idx = np.arange(k)
    L[..., idx, idx] = 1
    U = np.triu(LU[..., :k, :])
    perm = _perm_from_pivots(piv, m)  # row i of P^T A is row perm[i] of A
    P = np.zeros(a.shape[:-2] + (m, m), a.dtype)
    np.put_along_axis(P, perm[..., None, :], 1, axis=-2)
    return P, np.ascontiguousarray(L), np.ascontiguousarray(U)


def lu_solve(LU, pivots, B, left=True, adjoint=False):
    out = M.lu_solve_check(LU.shape, _NP2DT[LU.dtype], pivots.shape, B.shape, _NP2DT[B.dtype], left)
    if LU.size == 0 or B.size == 0:
        return _fcontig(np.zeros(out, B.dtype))
    n = LU.shape[-1]
    batch = out[:-2]
    L = _tri(LU, False, True)
    U = np.triu(LU)
    perm = _perm_from_pivots(pivots, n)
    P = np.zeros(LU.shape[:-2] + (n, n), LU.dtype)
    np.put_along_axis(P, perm[..., None, :], 1, axis=-2)
    A = np.broadcast_to(np.matmul(P, np.matmul(L, U)), batch + (n, n))  # A = P L U
    if adjoint:
        A = np.conj(A.swapaxes(-1, -2))
    bb = np.broadcast_to(B, out)
    with np.errstate(all="ignore"):
        if left:
            x = _tsolve(A, bb)
        else:
            x = _tsolve(A.swapaxes(-1, -2), bb.swapaxes(-1, -2)).swapaxes(-1, -2)
    return _fcontig(x.astype(B.dtype, copy=False))


def cholesky_solve(b, a, upper=False):
    out = M.cholesky_solve_check(b.shape, _NP2DT[b.dtype], a.shape, _NP2DT[a.dtype])
    if a.size == 0 or b.size == 0:
        return _fcontig(np.zeros(out, b.dtype))
    batch = out[:-2]
    n = a.shape[-1]
    f = np.broadcast_to(np.triu(a) if upper else np.tril(a), batch + (n, n))
    fh = np.conj(f.swapaxes(-1, -2))
    lo, hi = (fh, f) if upper else (f, fh)  # A = lo @ hi
    bb = np.broadcast_to(b, out)
    with np.errstate(all="ignore"):
        x = _tsolve(hi, _tsolve(lo, bb))
    return _fcontig(x.astype(b.dtype, copy=False))


def cholesky_inverse(a, upper=False):
    M.cholesky_inverse_check(a.shape, _NP2DT[a.dtype])
    if a.size == 0:
        return _fcontig(np.zeros(a.shape, a.dtype))
    n = a.shape[-1]
    eye = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape)
    return cholesky_solve(np.ascontiguousarray(eye), a, upper)
