"""Matrix products on the CUDA backend: the shared-memory tiled matmul.

One kernel serves mm, bmm, matmul (all its dot/mv/mm/batched cases, broadcast batch dims
included), addmm, baddbmm, mv, addmv and dot: a T x T block of threads computes a T x T tile of
C = A @ B. For each of the K/T steps, every thread loads one element of A's tile and one of B's
into shared memory (threads with consecutive x read consecutive k of A / n of B: coalesced when
the operand is row-major), the block synchronizes, each thread accumulates T products from
shared memory, and the block synchronizes again. Operands are read through their strides (a
transposed weight costs no copy; a 1-D operand is a matrix with a zero stride), batch dims are
coalesced and walked with index math (stride 0 where broadcast), grid z strides over the batch.
The epilogue applies alpha and adds beta * addend (addmm/baddbmm/addmv) before the store.

When CuPy is importable on a real GPU, float16/32/64 products go through cuBLAS instead
(cupy.matmul on zero-copy views of the same device memory, on the same stream), except while a
CUDA graph is being captured: ember's capture records its own launches, not CuPy's.
"""
from ember.core import dtype as _dt
from ember.kernels.cuda import _launch as L
from ember.kernels.meta import linalg as ML

_kcache = {}


def _tile():
    return 8 if L.simulated() else 16


def _source(nb, epi, T):
    args = (["C", "co", "cm", "cn"] + [f"cb{k}" for k in range(nb)] +
            ["A", "ao", "am", "ak"] + [f"ab{k}" for k in range(nb)] +
            ["B", "bo", "bk", "bn"] + [f"bb{k}" for k in range(nb)] +
            ["D", "do_", "dm", "dn"] + [f"db{k}" for k in range(nb)] +
            [f"bs{k}" for k in range(nb)] + ["NB", "M", "N", "K", "alpha", "beta"])
    if epi == "plain":
        val = "acc"
    elif epi == "alpha":
        val = "alpha * acc"
    else:
        val = "alpha * acc + beta * ACC(D[dz + row * dm + col * dn])"
    s = [f"def kern({', '.join(args)}):",
         f"    sA = cuda.shared.array(({T}, {T}), ACC)",
         f"    sB = cuda.shared.array(({T}, {T}), ACC)",
         "    tx = cuda.threadIdx.x",
         "    ty = cuda.threadIdx.y",
         f"    row = cuda.blockIdx.y * {T} + ty",
         f"    col = cuda.blockIdx.x * {T} + tx",
         "    z = cuda.blockIdx.z",
         "    while z < NB:"]
    s += L.pos_lines("z", "bs", nb, [("cz", "co", "cb"), ("az", "ao", "ab"), ("bz", "bo", "bb"),
                                     ("dz", "do_", "db")])
    s += ["        acc = ACC(0)",
          f"        for t in range((K + {T - 1}) // {T}):",
          f"            k = t * {T} + tx",
          "            if row < M and k < K:",
          "                sA[ty, tx] = ACC(A[az + row * am + k * ak])",
          "            else:",
          "                sA[ty, tx] = ACC(0)",
          f"            k = t * {T} + ty",
          "            if k < K and col < N:",
          "                sB[ty, tx] = ACC(B[bz + k * bk + col * bn])",
          "            else:",
          "                sB[ty, tx] = ACC(0)",
          "            cuda.syncthreads()",
          f"            for i in range({T}):",
          "                acc += sA[ty, i] * sB[i, tx]",
          "            cuda.syncthreads()",
          "        if row < M and col < N:",
          f"            C[cz + row * cm + col * cn] = OT({val})",
          "        z += cuda.gridDim.z"]
    return "\n".join(s) + "\n"


def _rb_config():
    """(BM, BN, BK, TM, TN) of the register-blocked kernel: 64x64 tiles, 4x4 outputs per thread
    (256 threads) on a GPU; a scaled-down copy on the simulator (same code, fewer threads)."""
    return (16, 16, 4, 2, 2) if L.simulated() else (64, 64, 8, 4, 4)


def _source_rb(nb, epi, cfg):
    """The tiled matmul with register blocking: each thread owns a TM x TN block of C, so each
    value read from shared memory feeds TM (or TN) multiply-adds instead of one."""
    BM, BN, BK, TM, TN = cfg
    nt = (BM // TM) * (BN // TN)
    la, lb = BM * BK // nt, BK * BN // nt
    args = (["C", "co", "cm", "cn"] + [f"cb{k}" for k in range(nb)] +
            ["A", "ao", "am", "ak"] + [f"ab{k}" for k in range(nb)] +
            ["B", "bo", "bk", "bn"] + [f"bb{k}" for k in range(nb)] +
            ["D", "do_", "dm", "dn"] + [f"db{k}" for k in range(nb)] +
            [f"bs{k}" for k in range(nb)] + ["NB", "M", "N", "K", "alpha", "beta"])
    if epi == "plain":
        val = "acc[i, j]"
    elif epi == "alpha":
        val = "alpha * acc[i, j]"
    else:
        val = "alpha * acc[i, j] + beta * ACC(D[dz + r * dm + c * dn])"
    s = [f"def kern({', '.join(args)}):",
         f"    sA = cuda.shared.array(({BK}, {BM}), ACC)",
         f"    sB = cuda.shared.array(({BK}, {BN}), ACC)",
         f"    acc = cuda.local.array(({TM}, {TN}), ACC)",
         f"    af = cuda.local.array({TM}, ACC)",
         f"    bf = cuda.local.array({TN}, ACC)",
         "    tid = cuda.threadIdx.x",
         f"    tx = tid % {BN // TN}",
         f"    ty = tid // {BN // TN}",
         f"    r0 = cuda.blockIdx.y * {BM}",
         f"    c0 = cuda.blockIdx.x * {BN}",
         "    z = cuda.blockIdx.z",
         "    while z < NB:"]
    s += L.pos_lines("z", "bs", nb, [("cz", "co", "cb"), ("az", "ao", "ab"), ("bz", "bo", "bb"),
                                     ("dz", "do_", "db")])
    s += [f"        for i in range({TM}):",
          f"            for j in range({TN}):",
          "                acc[i, j] = ACC(0)",
          f"        for k0 in range(0, K, {BK}):",
          f"            for q in range({la}):",
          f"                e = tid + q * {nt}",
          f"                rr = e // {BK}",
          f"                kk = e % {BK}",
          "                r = r0 + rr",
          "                k = k0 + kk",
          "                if r < M and k < K:",
          "                    sA[kk, rr] = ACC(A[az + r * am + k * ak])",
          "                else:",
          "                    sA[kk, rr] = ACC(0)",
          f"            for q in range({lb}):",
          f"                e = tid + q * {nt}",
          f"                kk = e // {BN}",
          f"                cc = e % {BN}",
          "                c = c0 + cc",
          "                k = k0 + kk",
          "                if k < K and c < N:",
          "                    sB[kk, cc] = ACC(B[bz + k * bk + c * bn])",
          "                else:",
          "                    sB[kk, cc] = ACC(0)",
          "            cuda.syncthreads()",
          f"            for kk in range({BK}):",
          f"                for i in range({TM}):",
          f"                    af[i] = sA[kk, ty * {TM} + i]",
          f"                for j in range({TN}):",
          f"                    bf[j] = sB[kk, tx * {TN} + j]",
          f"                for i in range({TM}):",
          f"                    for j in range({TN}):",
          "                        acc[i, j] += af[i] * bf[j]",
          "            cuda.syncthreads()",
          f"        for i in range({TM}):",
          f"            r = r0 + ty * {TM} + i",
          f"            for j in range({TN}):",
          f"                c = c0 + tx * {TN} + j",
          "                if r < M and c < N:",
          f"                    C[cz + r * cm + c * cn] = OT({val})",
          "        z += cuda.gridDim.z"]
    return "\n".join(s) + "\n"


def use_register_blocking(M, N, K):
    """The register-blocked kernel pays off once C has a few 64x64 tiles."""
    return not L.simulated() and M >= 64 and N >= 64


# ---- optional cuBLAS through CuPy (real GPU only) ------------------------------------------------
_cupy = []


def _cupy_mod():
    if not _cupy:
        cp = None
        if not L.simulated():
            try:
                import cupy as cp  # noqa: PLC0415 - optional dependency
            except Exception:
                cp = None
        _cupy.append(cp)
    return _cupy[0]


_BLAS = (_dt.float16, _dt.float32, _dt.float64)


def _cp_view(cp, t, shape, strides):
    """A CuPy view (no copy) of device tensor t with the given element shape/strides."""
    base = cp.asarray(L.flat(t))
    isz = t._dtype.itemsize
    return cp.lib.stride_tricks.as_strided(base[t._offset:], shape, tuple(s * isz for s in strides))


def _gemm_cupy(cp, C, A, B, D, bshape, st, M, N, K, alpha, beta, epi):
    h = L.stream(C._device).handle
    h = getattr(h, "value", h)  # ctypes handle (older numba) or a CUstream object (numba-cuda)
    with cp.cuda.ExternalStream(int(h) if h else 0):
        a = _cp_view(cp, A, tuple(bshape) + (M, K), tuple(st["a"]) + (st["am"], st["ak"]))
        b = _cp_view(cp, B, tuple(bshape) + (K, N), tuple(st["b"]) + (st["bk"], st["bn"]))
        r = cp.matmul(a, b)
        if epi != "plain":
            r *= alpha
        if epi == "addmm":
            r += beta * _cp_view(cp, D, tuple(bshape) + (M, N), tuple(st["d"]) + (st["dm"], st["dn"]))
        c = _cp_view(cp, C, tuple(bshape) + (M, N), tuple(st["c"]) + (st["cm"], st["cn"]))
        c[...] = r
    return C


# ---- the launcher ------------------------------------------------------------------------------
def gemm(C, A, B, bshape, st, M, N, K, alpha=1, beta=0, D=None):
    """C[b, m, n] = alpha * sum_k A[b, m, k] B[b, k, n] (+ beta * D[b, m, n]) over batch shape
    `bshape`; st holds element strides: a/b/c/d (batch lists), am ak bk bn cm cn dm dn."""
    od = C._dtype
    for t in (A, B, C) if D is None else (A, B, C, D):
        if t._dtype not in L.SUPPORTED:
            raise L.Unsupported()
    NB = L.numel(bshape)
    if NB == 0 or M == 0 or N == 0:
        return C
    epi = "addmm" if (D is not None and beta != 0) else (
        "plain" if (alpha.__class__ is int and alpha == 1) else "alpha")
    if K == 0 and epi != "addmm":
        return L.glue().fill_(C, 0)
    # a CUDA graph capture records ember's numba launches only, so a capture keeps the tiled kernel
    cp = _cupy_mod() if od in _BLAS and not L.glue().CAPTURES else None
    if cp is not None:
        return _gemm_cupy(cp, C, A, B, D, bshape, st, M, N, K, alpha, beta, epi)
    blist = [st["c"], st["a"], st["b"], st["d"] if D is not None else [0] * len(bshape)]
    bs, (cb, ab, bb, db) = L.coalesce(list(bshape), blist)
    nb = len(bs)
    rb = use_register_blocking(M, N, K)
    T = _tile()
    cfg = _rb_config()
    acc = L.opmath(od)
    key = (nb, epi, cfg if rb else T, od, A._dtype, B._dtype, D._dtype if D is not None else None)
    k = _kcache.get(key)
    if k is None:
        src = _source_rb(nb, epi, cfg) if rb else _source(nb, epi, T)
        k = _kcache[key] = L.compile_kernel(src, "kern", {"OT": L.nbtype(od), "ACC": L.nbtype(acc)},
                                            acc)
    Dt = D if D is not None else C
    args = ([L.flat(C), C._offset, st["cm"], st["cn"], *cb,
             L.flat(A), A._offset, st["am"], st["ak"], *ab,
             L.flat(B), B._offset, st["bk"], st["bn"], *bb,
             L.flat(Dt), Dt._offset, st.get("dm", 0), st.get("dn", 0), *db,
             *bs, NB, M, N, K, L.cast_scalar(alpha, acc), L.cast_scalar(beta, acc)])
    if rb:
        BM, BN, _, TM, TN = cfg
        gy, gx, block = (M + BM - 1) // BM, (N + BN - 1) // BN, (BM // TM) * (BN // TN)
    else:
        gy, gx, block = (M + T - 1) // T, (N + T - 1) // T, (T, T)
    if gy > 65535:
        raise L.Unsupported()
    k[(gx, gy, min(NB, 65535)), block, L.stream(C._device)](*args)
    return C


def _mat(t):
    """(rows, cols, row stride, col stride, batch shape, batch strides) of a >=1-D tensor; a 1-D
    tensor is a row (as a left operand: caller swaps for a column)."""
    s, st = t._shape, t._strides
    return s[-2], s[-1], st[-2], st[-1], list(s[:-2]), list(st[:-2])


def _bcast(shape, bshape, strides):
    n, k = len(bshape), len(shape)
    return [0] * (n - k) + [st if sz != 1 else 0 for sz, st in zip(shape, strides)]


def _matmul_into(out, a, b, alpha=1, beta=0, d=None):
    """out = alpha * (a @ b) (+ beta * d) with matmul's 1-D and batch broadcasting rules."""
    na, nb_ = len(a._shape), len(b._shape)
    if na == 1:
        M, K, am, ak, abs_, abst = 1, a._shape[0], 0, a._strides[0], [], []
    else:
        M, K, am, ak, abs_, abst = _mat(a)
    if nb_ == 1:
        N, bk, bn, bbs, bbst = 1, b._strides[0], 0, [], []
    else:
        _, N, bk, bn, bbs, bbst = _mat(b)
    bshape = list(out._shape[:max(len(abs_), len(bbs))]) if (abs_ or bbs) else []
    ost = list(out._strides)
    nbat = len(bshape)
    rest = ost[nbat:]
    cm = rest[0] if na != 1 else 0
    cn = rest[-1] if nb_ != 1 else 0
    st = {"a": _bcast(abs_, bshape, abst), "b": _bcast(bbs, bshape, bbst), "c": ost[:nbat],
          "am": am, "ak": ak, "bk": bk, "bn": bn, "cm": cm, "cn": cn}
    if d is not None:
        full = out._shape
        dst = L.broadcast_strides(d, full)
        st["d"] = dst[:nbat]
        st["dm"] = dst[nbat] if na != 1 else 0
        st["dn"] = dst[-1] if nb_ != 1 else 0
    return gemm(out, a, b, bshape, st, M, N, K, alpha, beta, d)


def _check_dev(*ts):
    for t in ts:
        if not L.is_dev(t):
            raise L.Unsupported()


def _product(meta):
    """mm, bmm, matmul, dot, mv: the Meta function gives the output, the one gemm path fills it."""
    def kernel(a, b):
        spec = meta(a, b)
        _check_dev(a, b)
        return _matmul_into(L.empty(spec[0], spec[1], a._device), a, b)
    return kernel


_mm, _bmm, _matmul, _dot, _mv = (_product(f) for f in (ML.mm, ML.bmm, ML.matmul, ML.dot, ML.mv))


def _addmm(self, mat1, mat2, beta=1, alpha=1):
    spec = ML.addmm(self, mat1, mat2, beta, alpha)
    _check_dev(self, mat1, mat2)
    return _matmul_into(L.empty(spec[0], spec[1], mat1._device), mat1, mat2, alpha, beta, self)


def _baddbmm(self, batch1, batch2, beta=1, alpha=1):
    spec = ML.baddbmm(self, batch1, batch2, beta, alpha)
    _check_dev(self, batch1, batch2)
    return _matmul_into(L.empty(spec[0], spec[1], batch1._device), batch1, batch2, alpha, beta,
                        self)


def _addmv(self, mat, vec, beta=1, alpha=1):
    spec = ML.addmv(self, mat, vec, beta, alpha)
    _check_dev(self, mat, vec)
    return _matmul_into(L.empty(spec[0], spec[1], mat._device), mat, vec, alpha, beta, self)


KERNELS = L.guarded({
    "mm": _mm, "bmm": _bmm, "matmul": _matmul, "_la_matmul": _matmul, "dot": _dot, "mv": _mv, "addmm": _addmm,
    "baddbmm": _baddbmm, "addmv": _addmv,
})
