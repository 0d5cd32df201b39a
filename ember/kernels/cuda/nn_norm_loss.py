"""Losses and layer norm on the CUDA backend (the ops a training step needs besides pointwise,
reductions, softmax and matmul).

- nll_loss_forward/backward: one thread per sample gathers input[i, target[i]] (and the class
  weight) through strides, then the reduction kernels sum losses and weights. A target out of
  range poisons the loss with NaN (PyTorch's CUDA kernel stops with a device-side assert, which
  numba cannot raise as an exception without synchronizing).
- native_layer_norm: one block per row (the leading dims); the row's mean and variance come
  from two shared-memory tree sums (two passes over the row: no cancellation), then each thread
  writes its normalized, scaled and shifted elements. Its backward is composed from the
  pointwise and reduction kernels (row sums for grad_input, column sums for grad_weight/bias).
- mse_loss: the pointwise template, then a sum/mean reduction.
"""
import math

from ember.core import dtype as _dt
from ember.core.tensor_impl import make_view_meta
from ember.kernels.cuda import _launch as L
from ember.kernels.cuda import pointwise as P
from ember.kernels.cuda import reduction as R
from ember.kernels.meta import nn_norm_loss as MN

_kcache = {}

_NLL_FWD = '''
def kern(l, w, x, xo, xs0, xs1, t, to, ts0, wt, wo, ws0, has_w, N, C, ign):
    i = cuda.grid(1)
    st = cuda.gridsize(1)
    while i < N:
        c = t[to + i * ts0]
        if c == ign:
            l[i] = ACC(0)
            w[i] = ACC(0)
        elif c < 0 or c >= C:
            l[i] = ACC(math.nan)
            w[i] = ACC(math.nan)
        else:
            ww = ACC(wt[wo + c * ws0]) if has_w else ACC(1)
            l[i] = -ww * ACC(x[xo + i * xs0 + c * xs1])
            w[i] = ww
        i += st
'''

_NLL_BWD = '''
def kern(gi, gs0, gs1, g, go_, gst, t, to, ts0, wt, wo, ws0, has_w, tw, two, mean, N, C, ign):
    i = cuda.grid(1)
    st = cuda.gridsize(1)
    while i < N:
        c = t[to + i * ts0]
        if c != ign and c >= 0 and c < C:
            ww = ACC(wt[wo + c * ws0]) if has_w else ACC(1)
            gv = ACC(g[go_ + i * gst])
            if mean:
                gv = gv / ACC(tw[two])
            gi[i * gs0 + c * gs1] = OT(-ww * gv)
        i += st
'''


def _kernel(name, src, ct, od):
    key = (name, ct, od)
    k = _kcache.get(key)
    if k is None:
        k = _kcache[key] = L.compile_kernel(src, "kern", {"OT": L.nbtype(od),
                                                          "ACC": L.nbtype(ct)}, ct)
    return k


def _need(*ts):
    for t in ts:
        if t is not None and (not L.is_dev(t) or t._dtype not in L.SUPPORTED):
            raise L.Unsupported()


# ---- nll_loss ----------------------------------------------------------------------------------
def _geom2(x):
    if len(x._shape) == 1:
        return 1, x._shape[0], 0, x._strides[0]
    return x._shape[0], x._shape[1], x._strides[0], x._strides[1]


def _tstride(t):
    return t._strides[0] if t._shape else 0


def nll_loss_forward(self, target, weight, reduction, ignore_index):
    (oshape, d), (twshape, _) = MN.nll_loss_forward(self, target, weight, reduction, ignore_index)
    _need(self, target, weight)
    if self._dtype.category != _dt.FLOAT or target._dtype.category != _dt.INT:
        raise L.Unsupported()
    ct = L.opmath(d)
    N, C, xs0, xs1 = _geom2(self)
    dev = self._device
    losses = L.empty((N,), ct, dev)
    ws = L.empty((N,), ct, dev)
    wt = weight if weight is not None else self
    if N:
        k = _kernel("nll_fwd", _NLL_FWD, ct, ct)
        b, t = L.launch_1d(N)
        k[b, t, L.stream(dev)](L.flat(losses), L.flat(ws), L.flat(self), self._offset, xs0, xs1,
                               L.flat(target), target._offset, _tstride(target), L.flat(wt),
                               wt._offset, _tstride(wt) if weight is not None else 0,
                               weight is not None, N, C, ignore_index)
    if reduction == 0:
        out = L.empty(oshape, d, dev)
        src = losses if oshape else make_view_meta(losses, (), (), 0)
        P.run("a", out, (src,), ct=ct)
        return out, L.glue().fill_(L.empty((), d, dev), 0)
    tw = L.empty((), d, dev)
    R.reduce(ws, (0,), tw, "{0} + {1}", ct, 0)
    out = L.empty((), d, dev)
    if reduction == 2:
        R.reduce(losses, (0,), out, "{0} + {1}", ct, 0)
        return out, tw
    s = L.empty((), ct, dev)
    R.reduce(losses, (0,), s, "{0} + {1}", ct, 0)
    P.run("a / b", out, (s, tw), ct=ct)
    return out, tw


def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    shape, d = MN.nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                                    total_weight)
    _need(grad_output, self, target, weight, total_weight)
    if d.category != _dt.FLOAT or target._dtype.category != _dt.INT:
        raise L.Unsupported()
    ct = L.opmath(d)
    dev = self._device
    gi = L.glue().fill_(L.empty(shape, d, dev), 0)
    N, C, _, _ = _geom2(self)
    if N == 0:
        return gi
    gs0, gs1 = (0, 1) if len(shape) == 1 else (shape[1], 1)
    gst = grad_output._strides[0] if (reduction == 0 and grad_output._shape) else 0
    wt = weight if weight is not None else self
    k = _kernel("nll_bwd", _NLL_BWD, ct, d)
    b, t = L.launch_1d(N)
    k[b, t, L.stream(dev)](L.flat(gi), gs0, gs1, L.flat(grad_output), grad_output._offset, gst,
                           L.flat(target), target._offset, _tstride(target), L.flat(wt),
                           wt._offset, _tstride(wt) if weight is not None else 0,
                           weight is not None, L.flat(total_weight), total_weight._offset,
                           reduction == 1, N, C, ignore_index)
    return gi


# ---- layer norm --------------------------------------------------------------------------------
def _ln_source(nk, nr, tpb):
    args = (["y", "mo", "ro", "x", "xo"] + [f"xk{k}" for k in range(nk)] +
            [f"xr{k}" for k in range(nr)] + [f"ks{k}" for k in range(nk)] +
            [f"rs{k}" for k in range(nr)] + ["M", "R", "w", "wo", "b", "bo", "has_w", "has_b", "eps"])
    s = [f"def kern({', '.join(args)}):",
         f"    sv = cuda.shared.array({tpb}, ACC)",
         "    tid = cuda.threadIdx.x",
         "    row = cuda.blockIdx.x",
         "    rn = ACC(R)",
         "    while row < M:"]
    s += L.pos_lines("row", "ks", nk, [("xb", "xo", "xk")])
    loop = ["        j = tid", "        while j < R:"]
    pos = L.pos_lines("j", "rs", nr, [("xp", "xb", "xr")], "            ")

    def tree():
        return L.tree_lines(tpb, "{0} + {1}")
    s += ["        acc = ACC(0)"] + loop + pos + ["            acc += ACC(x[xp])",
                                                  f"            j += {tpb}",
                                                  "        sv[tid] = acc"] + tree()
    s += ["        mean = sv[0] / rn",
          "        cuda.syncthreads()",
          "        acc = ACC(0)"] + loop + pos + ["            v = ACC(x[xp]) - mean",
                                                 "            acc += v * v",
                                                 f"            j += {tpb}",
                                                 "        sv[tid] = acc"] + tree()
    s += ["        rstd = ACC(1) / sqrt(sv[0] / rn + eps)",
          "        cuda.syncthreads()"] + loop + pos + [
        "            v = (ACC(x[xp]) - mean) * rstd",
        "            if has_w:",
        "                v = v * ACC(w[wo + j])",
        "            if has_b:",
        "                v = v + ACC(b[bo + j])",
        "            y[row * R + j] = OT(v)",
        f"            j += {tpb}",
        "        if tid == 0:",
        "            mo[row] = OT(mean)",
        "            ro[row] = OT(rstd)",
        "        row += cuda.gridDim.x"]
    return "\n".join(s) + "\n"


def _contig(t):
    if t is None or t.is_contiguous():
        return t
    return P._clone(t)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    (ys, d), (ss, _), _ = MN.native_layer_norm(input, normalized_shape, weight, bias, eps)
    _need(input, weight, bias)
    x = input
    nd, k = len(x._shape), len(tuple(normalized_shape))
    dims = tuple(range(nd - k, nd))
    Rn = L.numel(x._shape[nd - k:])
    M = L.numel(x._shape[:nd - k])
    if Rn == 0 or M == 0:
        raise L.Unsupported()  # the CPU kernel's conventions for empty rows
    ct = L.opmath(d)
    dev = x._device
    y, mean, rstd = L.empty(ys, d, dev), L.empty(ss, d, dev), L.empty(ss, d, dev)
    w, b = _contig(weight), _contig(bias)
    ks, kxs, _, rs, rxs = L.split_dims(x, dims, [0] * (nd - k))
    tpb = L.reduce_tpb()
    key = ("ln", len(ks), len(rs), x._dtype, d, ct, tpb,
           None if w is None else w._dtype, None if b is None else b._dtype)
    kern = _kcache.get(key)
    if kern is None:
        kern = _kcache[key] = L.compile_kernel(_ln_source(len(ks), len(rs), tpb), "kern",
                                               {"OT": L.nbtype(d), "ACC": L.nbtype(ct)}, ct)
    wt, bt = (w if w is not None else x), (b if b is not None else x)
    kern[min(M, 8 if L.simulated() else 65535), tpb, L.stream(dev)](
        L.flat(y), L.flat(mean), L.flat(rstd), L.flat(x), x._offset, *kxs, *rxs, *ks, *rs, M, Rn,
        L.flat(wt), wt._offset, L.flat(bt), bt._offset, w is not None, b is not None,
        L.cast_scalar(eps, ct))
    return y, mean, rstd


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    (gis, d), (gws, dw), (gbs, db) = MN.native_layer_norm_backward(
        grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    _need(grad_out, input, mean, rstd, weight, bias)
    if d.category != _dt.FLOAT:
        raise L.Unsupported()
    x, g = input, grad_out
    dev = x._device
    nd, k = len(x._shape), len(tuple(normalized_shape))
    norm_dims = tuple(range(nd - k, nd))
    lead = tuple(range(nd - k))
    Rn = L.numel(x._shape[nd - k:])
    ct = L.opmath(d)
    xhat = P.run("(a - b) * c", L.empty(x._shape, ct, dev), (x, mean, rstd), ct=ct)
    gi = gw = gb = None
    if output_mask[0]:
        gw_ = g if weight is None else P.run("a * b", L.empty(x._shape, ct, dev), (g, weight), ct=ct)
        stat = tuple(1 if i in norm_dims else s for i, s in enumerate(x._shape))
        s1 = R.reduce(gw_, norm_dims, L.empty(stat, ct, dev), "{0} + {1}", ct, 0, keepdim=True)
        p = P.run("a * b", L.empty(x._shape, ct, dev), (gw_, xhat), ct=ct)
        s2 = R.reduce(p, norm_dims, L.empty(stat, ct, dev), "{0} + {1}", ct, 0, keepdim=True)
        gi = P.run("f * (a - b / p0 - c * e / p0)", L.empty(gis, d, dev),
                   (gw_, s1, xhat, s2, rstd), (float(Rn),), ct=ct)
    else:
        gi = L.empty(gis, d, dev)
    if output_mask[1] and weight is not None:
        p = P.run("a * b", L.empty(x._shape, ct, dev), (g, xhat), ct=ct)
        gw = R.reduce(p, lead, L.empty(gws, dw, dev), "{0} + {1}", ct, 0)
    else:
        gw = L.empty(gws, dw, dev)
    if output_mask[2] and bias is not None:
        gb = R.reduce(g, lead, L.empty(gbs, db, dev), "{0} + {1}", ct, 0)
    else:
        gb = L.empty(gbs, db, dev)
    return gi, gw, gb


# ---- mse ---------------------------------------------------------------------------------------
def mse_loss(self, target, reduction=1):
    shape, d = MN.mse_loss(self, target, reduction)
    _need(self, target)
    ct = L.opmath(d)
    dev = self._device
    if reduction == 0:
        return P.run("(a - b) * (a - b)", L.empty(shape, d, dev), (self, target), ct=ct)
    full = MN.mse_loss(self, target, 0)[0]
    sq = P.run("(a - b) * (a - b)", L.empty(full, ct, dev), (self, target), ct=ct)
    out = L.empty((), d, dev)
    dims = tuple(range(len(full)))
    if reduction == 2:
        return R.reduce(sq, dims, out, "{0} + {1}", ct, 0)
    return R.reduce(sq, dims, out, "{0} + {1}", ct, 0, "{0} / p0", L.numel(full))


KERNELS = L.guarded({
    "nll_loss_forward": nll_loss_forward, "nll_loss_backward": nll_loss_backward,
    "native_layer_norm": native_layer_norm, "native_layer_norm_backward": native_layer_norm_backward,
    "mse_loss": mse_loss,
})
_ = math
