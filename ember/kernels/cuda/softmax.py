"""softmax / log_softmax along any dim on the CUDA backend.

One block per row (every position of the other dims; grid-stride over rows): its threads stride
along `dim` through the input's stride, so any layout works without a copy. Three passes over
the row: the maximum (shared-memory tree), the sum of exp(x - max) (tree), then the write:
exp(x - max) / sum, or x - max - log(sum). Rows shorter than a warp use one thread per row
instead (three sequential loops). Arithmetic in opmath (float for half).
"""
from ember.core import dtype as _dt
from ember.core.errors import wrap_dim
from ember.kernels.cuda import _launch as L
from ember.kernels.meta import reduction as MR

_kcache = {}


def _source(kind, nk, log, tpb):
    args = ["o", "oo", "od"] + [f"os{k}" for k in range(nk)] + ["x", "xo", "xd"] + \
        [f"xk{k}" for k in range(nk)] + [f"ks{k}" for k in range(nk)] + ["M", "R", "ninf"]
    out_expr = "OT(v - ls)" if log else "OT(exp(v) / s)"
    L_ = [f"def kern({', '.join(args)}):"]
    if kind == "block":
        L_ += [f"    sv = cuda.shared.array({tpb}, ACC)",
               "    tid = cuda.threadIdx.x",
               "    b = cuda.blockIdx.x",
               "    while b < M:"]
        L_ += L.pos_lines("b", "ks", nk, [("ob", "oo", "os"), ("xb", "xo", "xk")])
        L_ += ["        m = ninf",
               "        j = tid",
               "        while j < R:",
               "            m = maxn(m, ACC(x[xb + j * xd]))",
               f"            j += {tpb}",
               "        sv[tid] = m",
               ] + L.tree_lines(tpb, "maxn({0}, {1})") + [
               "        m = sv[0]",
               "        cuda.syncthreads()",
               "        s = ACC(0)",
               "        j = tid",
               "        while j < R:",
               "            s += exp(ACC(x[xb + j * xd]) - m)",
               f"            j += {tpb}",
               "        sv[tid] = s",
               ] + L.tree_lines(tpb, "{0} + {1}") + [
               "        s = sv[0]",
               "        cuda.syncthreads()",
               "        ls = log(s)",
               "        j = tid",
               "        while j < R:",
               "            v = ACC(x[xb + j * xd]) - m",
               f"            o[ob + j * od] = {out_expr}",
               f"            j += {tpb}",
               "        b += cuda.gridDim.x"]
    else:
        L_ += ["    b = cuda.grid(1)",
               "    st = cuda.gridsize(1)",
               "    while b < M:"]
        L_ += L.pos_lines("b", "ks", nk, [("ob", "oo", "os"), ("xb", "xo", "xk")])
        L_ += ["        m = ninf",
               "        for j in range(R):",
               "            m = maxn(m, ACC(x[xb + j * xd]))",
               "        s = ACC(0)",
               "        for j in range(R):",
               "            s += exp(ACC(x[xb + j * xd]) - m)",
               "        ls = log(s)",
               "        for j in range(R):",
               "            v = ACC(x[xb + j * xd]) - m",
               f"            o[ob + j * od] = {out_expr}",
               "        b += st"]
    return "\n".join(L_) + "\n"


def softmax_into(x, dim, out, log):
    """out <- (log_)softmax of device tensor x along wrapped dim `dim`."""
    if x._dtype not in L.SUPPORTED or out._dtype not in L.SUPPORTED:
        raise L.Unsupported()
    n = L.numel(x._shape)
    if n == 0:
        return out
    acc = L.opmath(out._dtype)
    if acc.category != _dt.FLOAT:
        raise L.Unsupported()
    if x._shape:
        R, xd, od = x._shape[dim], x._strides[dim], out._strides[dim]
        dims = (dim,)
    else:
        R, xd, od, dims = 1, 0, 0, ()
    ks, kxs, kos, _, _ = L.split_dims(x, dims, L.kept_out_strides(out, len(x._shape), dims, True))
    M = L.numel(ks)
    nk = len(ks)
    tpb = L.reduce_tpb()
    kind = "block" if R > 32 else "thread"
    key = (kind, nk, log, x._dtype, out._dtype, acc, tpb)
    k = _kcache.get(key)
    if k is None:
        k = _kcache[key] = L.compile_kernel(_source(kind, nk, log, tpb), "kern",
                                            {"OT": L.nbtype(out._dtype), "ACC": L.nbtype(acc)}, acc)
    args = [L.flat(out), out._offset, od, *kos, L.flat(x), x._offset, xd, *kxs, *ks, M, R,
            L.cast_scalar(float("-inf"), acc)]
    s = L.stream(x._device)
    if kind == "block":
        k[min(M, 8 if L.simulated() else 65535), tpb, s](*args)
    else:
        blocks, threads = L.launch_1d(M)
        k[blocks, threads, s](*args)
    return out


def _wrap(x, dim):
    return wrap_dim(dim, len(x._shape)) if x._shape else 0


def _softmax_int(log):
    meta = MR.log_softmax if log else MR.softmax

    def f(self, dim, dtype=None):
        shape, d = meta(self, dim, dtype)
        out = L.empty(shape, d, self._device)
        return softmax_into(self, _wrap(self, dim), out, log)
    return f


def _softmax_raw(log):
    meta = MR._log_softmax if log else MR._softmax

    def f(self, dim, half_to_float):
        if half_to_float and self._dtype is _dt.float16:
            wrap_dim(dim, len(self._shape))
            shape, d = self._shape, _dt.float32  # CUDA supports half -> float outputs
        else:
            shape, d = meta(self, dim, False)
        out = L.empty(shape, d, self._device)
        return softmax_into(self, _wrap(self, dim), out, log)
    return f


KERNELS = L.guarded({
    "softmax.int": _softmax_int(False), "log_softmax.int": _softmax_int(True),
    "special_softmax": _softmax_int(False), "special_log_softmax": _softmax_int(True),
    "_softmax": _softmax_raw(False), "_log_softmax": _softmax_raw(True),
})
