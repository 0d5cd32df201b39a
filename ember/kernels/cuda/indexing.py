"""Gathers, scatters and position-dependent fills on the CUDA backend: embedding (one thread per
output element reads its row index, then the weight element), embedding_dense_backward (atomic
adds of gradient rows into a zeroed table, as PyTorch's CUDA kernel does when determinism is not
requested), triu/tril (a copy, then a kernel that zeroes by row/column position) and arange.

Indices out of range cannot raise on the device without a synchronization: embedding writes NaN
(0 for non-float weights) and the backward skips them, where PyTorch's CUDA kernels stop on a
device-side assert."""
import math

from ember.core import dtype as _dt
from ember.kernels.cuda import _launch as L
from ember.kernels.cuda import pointwise as P
from ember.kernels.meta import creation as MCr
from ember.kernels.meta import nn_spatial as MS
from ember.kernels.meta import shape as MSh

_kcache = {}


def _compile(key, src, ct, od):
    k = _kcache.get(key)
    if k is None:
        k = _kcache[key] = L.compile_kernel(src, "kern", {"OT": L.nbtype(od)}, ct)
    return k


def _need(*ts):
    for t in ts:
        if not L.is_dev(t) or t._dtype not in L.SUPPORTED:
            raise L.Unsupported()


# ---- embedding ---------------------------------------------------------------------------------
def _emb_source(ni, bad):
    args = ["o", "w", "wo", "w0", "w1", "ix", "io"] + [f"is{k}" for k in range(ni)] + \
        [f"isz{k}" for k in range(ni)] + ["V", "D", "n"]
    s = [f"def kern({', '.join(args)}):",
         "    i = cuda.grid(1)",
         "    st = cuda.gridsize(1)",
         "    while i < n:",
         "        r = i // D",
         "        c = i - r * D"]
    s += L.pos_lines("r", "isz", ni, [("ip", "io", "is")])
    s += ["        v = ix[ip]",
          "        if v >= 0 and v < V:",
          "            o[i] = w[wo + v * w0 + c * w1]",
          "        else:",
          f"            o[i] = {bad}",
          "        i += st"]
    return "\n".join(s) + "\n"


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    shape, d = MS.embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)
    _need(weight, indices)
    out = L.empty(shape, d, weight._device)
    n = L.numel(shape)
    if n == 0:
        return out
    V, D = weight._shape
    isz, (ist,) = L.coalesce(list(indices._shape), [list(indices._strides)])
    bad = "OT(math.nan)" if d.category == _dt.FLOAT else "OT(0)"
    k = _compile(("emb", len(isz), d, indices._dtype), _emb_source(len(isz), bad), d, d)
    b, t = L.launch_1d(n)
    k[b, t, L.stream(weight._device)](L.flat(out), L.flat(weight), weight._offset,
                                      weight._strides[0], weight._strides[1], L.flat(indices),
                                      indices._offset, *ist, *isz, V, D, n)
    return out


def _emb_bwd_source(ni, ng):
    args = ["gw", "g", "go_"] + [f"gs{k}" for k in range(ng)] + [f"gsz{k}" for k in range(ng)] + \
        ["ix", "io"] + [f"is{k}" for k in range(ni)] + [f"isz{k}" for k in range(ni)] + \
        ["V", "D", "pad", "n"]
    s = [f"def kern({', '.join(args)}):",
         "    i = cuda.grid(1)",
         "    st = cuda.gridsize(1)",
         "    while i < n:",
         "        r = i // D",
         "        c = i - r * D"]
    s += L.pos_lines("r", "isz", ni, [("ip", "io", "is")])
    s += L.pos_lines("i", "gsz", ng, [("gp", "go_", "gs")])
    s += ["        v = ix[ip]",
          "        if v >= 0 and v < V and v != pad:",
          "            cuda.atomic.add(gw, v * D + c, OT(g[gp]))",
          "        i += st"]
    return "\n".join(s) + "\n"


def embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    shape, d = MS.embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                                           scale_grad_by_freq)
    _need(grad_output, indices)
    if scale_grad_by_freq or d not in (_dt.float32, _dt.float64):
        raise L.Unsupported()  # frequency scaling, and dtypes without atomic adds: host path
    D = shape[1]
    n = L.numel(grad_output._shape)
    if L.numel(indices._shape) * D != n:
        raise L.Unsupported()  # the CPU kernel's shape error
    dev = grad_output._device
    gw = L.glue().fill_(L.empty(shape, d, dev), 0)
    if n == 0:
        return gw
    isz, (ist,) = L.coalesce(list(indices._shape), [list(indices._strides)])
    gsz, (gst,) = L.coalesce(list(grad_output._shape), [list(grad_output._strides)])
    k = _compile(("embb", len(isz), len(gsz), d, grad_output._dtype, indices._dtype),
                 _emb_bwd_source(len(isz), len(gsz)), d, d)
    b, t = L.launch_1d(n)
    k[b, t, L.stream(dev)](L.flat(gw), L.flat(grad_output), grad_output._offset, *gst, *gsz,
                           L.flat(indices), indices._offset, *ist, *isz, num_weights, D,
                           padding_idx, n)
    return gw


# ---- triu / tril -------------------------------------------------------------------------------
_TRI = '''
def kern(o, R, C, diag, n, upper):
    i = cuda.grid(1)
    st = cuda.gridsize(1)
    while i < n:
        c = i % C
        r = (i // C) % R
        if (upper and c - r < diag) or (not upper and c - r > diag):
            o[i] = OT(0)
        i += st
'''


def _tri(upper):
    meta = MSh.triu if upper else MSh.tril

    def f(self, diagonal=0):
        shape, d = meta(self, diagonal)
        _need(self)
        out = P.run("a", L.empty(shape, d, self._device), (self,), ct=d)
        n = L.numel(shape)
        if n:
            k = _compile(("tri", d), _TRI, d, d)
            b, t = L.launch_1d(n)
            k[b, t, L.stream(self._device)](L.flat(out), shape[-2], shape[-1], diagonal, n, upper)
        return out
    return f


# ---- arange ------------------------------------------------------------------------------------
_ARANGE = '''
def kern(o, start, step, n):
    i = cuda.grid(1)
    st = cuda.gridsize(1)
    while i < n:
        o[i] = OT(start + CT(i) * step)
        i += st
'''


def arange_start_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    n, d, xs, xst = MCr.arange_plan(start, end, step, dtype)
    if d not in L.SUPPORTED or d is _dt.bool_:
        raise L.Unsupported()
    dev = L.glue().normalize(device)
    out = L.empty((n,), d, dev)
    if n:
        ct = _dt.int64 if d.category == _dt.INT else (_dt.float32 if d is _dt.float16 else _dt.float64)
        k = _compile(("arange", d, ct), _ARANGE, ct, d)
        b, t = L.launch_1d(n)
        k[b, t, L.stream(dev)](L.flat(out), L.cast_scalar(xs, ct), L.cast_scalar(xst, ct), n)
    return out


def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(0, end, 1, dtype, layout, device, pin_memory)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_start_step(start, end, 1, dtype, layout, device, pin_memory)


KERNELS = L.guarded({
    "embedding": embedding, "embedding_dense_backward": embedding_dense_backward,
    "triu": _tri(True), "tril": _tri(False),
    "arange": arange, "arange.start": arange_start, "arange.start_step": arange_start_step,
})
_ = math
