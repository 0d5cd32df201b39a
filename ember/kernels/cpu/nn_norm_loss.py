"""CPU kernels of nll_loss_forward and native_layer_norm (ATen's LossNLL.cpp, layer_norm_kernel.cpp).

float16/bfloat16 inputs are computed in float32 and rounded back, as PyTorch's CPU kernels do.
"""
import math

import numpy as np

from ember.core import dtype as _dt
from ember.kernels.meta import nn_norm_loss as _m

_NP2DT = _dt.NP2DT
_F32 = np.dtype(np.float32)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}


def nll_loss_forward(a, target, weight, reduction, ignore_index):
    _m.nll_check(a.shape, _NP2DT[a.dtype], target.shape, _NP2DT[target.dtype],
                 None if weight is None else weight.shape,
                 None if weight is None else _NP2DT[weight.dtype], reduction)
    return _nll(a, target, weight, reduction, ignore_index)


def nll_loss2d_forward(a, target, weight, reduction, ignore_index):
    _m.nll2d_check(a.shape, _NP2DT[a.dtype], target.shape, _NP2DT[target.dtype],
                   None if weight is None else weight.shape)
    x = np.moveaxis(a, 1, -1).reshape(-1, a.shape[1])
    out, tw = _nll(x, target.reshape(-1), weight, reduction, ignore_index)
    if reduction == 0:
        out = out.reshape(target.shape)
    return out, tw


_FAST = (np.dtype(np.float32), np.dtype(np.float64))
_I64 = np.dtype(np.int64)
_ARANGE = {}


def _rows(n):
    """np.arange(n), cached (row indices of the picked class entries)."""
    r = _ARANGE.get(n)
    if r is None:
        r = np.arange(n)
        if n <= 1 << 16:
            _ARANGE[n] = r
    return r


def _all_valid(t, n_classes, ignore_index):
    """True when every target is a class index and none is ignore_index (the common case: a
    negative ignore_index, so one minimum decides; an index past the classes raises IndexError in
    the gather, where the caller falls back to the general path and its error)."""
    return ignore_index < 0 and t.size and _MIN(t) >= 0 and t.dtype is _I64


_MIN = np.minimum.reduce
_MAX = np.maximum.reduce


def _nll(a, target, weight, reduction, ignore_index):
    d = a.dtype
    if (weight is None and reduction and a.ndim == 2 and d in _FAST and target.ndim == 1
            and _all_valid(target, a.shape[1], ignore_index)):
        # every row counts with weight 1: the same sums as the general path below, fewer passes
        n = target.size
        try:
            picked = a[_rows(n), target]
        except IndexError:
            picked = None
        if picked is not None:
            out = np.negative(picked.sum(dtype=d))
            tw = d.type(n)
            if reduction == 1:
                out = out / tw
            return np.asarray(out, dtype=d), np.asarray(tw, dtype=d)
    h = d in _HALF
    x = a.astype(_F32) if h else a
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    t = target.reshape(-1).astype(np.int64, copy=False)
    n_classes = x2.shape[1]
    valid = t != ignore_index
    if valid.all():
        tv = t
    else:
        tv = np.where(valid, t, 0)
    if tv.size and (tv.min() < 0 or tv.max() >= n_classes):
        bad = tv[(tv < 0) | (tv >= n_classes)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = x2[np.arange(x2.shape[0]), tv]
    if weight is not None:
        w = weight.reshape(-1).astype(x.dtype, copy=False)[tv] * valid
    else:
        w = valid.astype(x.dtype)
    losses = -(picked * w)
    if reduction == 0:
        out = losses if a.ndim == 2 else losses.reshape(())
        tw = np.zeros((), x.dtype)
    else:
        tw = np.asarray(w.sum(dtype=x.dtype))
        out = np.asarray(losses.sum(dtype=x.dtype))
        if reduction == 1:
            out = np.asarray(out / tw if tw != 0 else (np.nan if losses.size else np.nan),
                             dtype=x.dtype)
    if h:
        return out.astype(d), tw.astype(d)
    return np.asarray(out, dtype=d), np.asarray(tw, dtype=d)


def native_layer_norm(a, normalized_shape, weight, bias, eps):
    d = a.dtype
    stat = _m.layer_norm_check(a.shape, normalized_shape,
                               None if weight is None else weight.shape,
                               None if bias is None else bias.shape)
    if d.kind != "f" and d not in _HALF:
        from ember.kernels.meta.compare import not_implemented
        raise not_implemented("LayerNormKernelImpl", _NP2DT[d])
    h = d in _HALF
    x = a.astype(_F32) if h else a
    nn = len(normalized_shape)
    lead = a.shape[:a.ndim - nn]
    rows = 1
    for s in lead:
        rows *= s
    n = x.size // rows if rows else 0
    x2 = x.reshape(rows, n)
    if n == 0 or rows == 0:
        mean = np.zeros((rows, 1), x.dtype)
        rstd = np.full((rows, 1), np.inf if n == 0 else 0, x.dtype)
        y = x2.copy()
    else:
        mean = x2.mean(axis=1, keepdims=True, dtype=x.dtype)
        xc = x2 - mean
        var = np.einsum("ij,ij->i", xc, xc).reshape(rows, 1) / n
        rstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
        y = xc * rstd
    y = y.reshape(a.shape)
    if weight is not None:
        y *= weight.astype(x.dtype, copy=False) if h else weight
    if bias is not None:
        y += bias.astype(x.dtype, copy=False) if h else bias
    mean = mean.reshape(stat)
    rstd = rstd.reshape(stat)
    if h:
        return y.astype(d), mean.astype(d), rstd.astype(d)
    return y, mean, rstd


def native_batch_norm(a, weight, bias, running_mean, running_var, training, momentum, eps):
    d = a.dtype

    def s(x):
        return None if x is None else x.shape
    c = _m.batch_norm_check(a.shape, _NP2DT[d], s(weight), s(bias), s(running_mean),
                            s(running_var), training)
    h = d in _HALF
    x = a.astype(_F32) if h else a
    ct = x.dtype
    nd = x.ndim
    aff = (1, c) + (1,) * (nd - 2) if nd > 1 else (c,)
    axes = (0,) + tuple(range(2, nd)) if nd > 1 else ()
    if training:
        n = x.size // c if c else 0
        mean = x.mean(axis=axes, dtype=ct) if n else np.full(c, np.nan, ct)
        xc = x - mean.reshape(aff)
        var = (xc * xc).mean(axis=axes, dtype=ct) if n else np.full(c, np.nan, ct)
        invstd = (1.0 / np.sqrt(var + eps)).astype(ct, copy=False)
        if running_mean is not None:
            rm = running_mean.reshape(-1)
            np.copyto(rm, (momentum * mean + (1 - momentum) * rm.astype(ct)), casting="unsafe")
        if running_var is not None:
            rv = running_var.reshape(-1)
            uv = var * (n / (n - 1)) if n > 1 else var * np.inf if n == 1 else var
            np.copyto(rv, (momentum * uv + (1 - momentum) * rv.astype(ct)), casting="unsafe")
        y = xc * invstd.reshape(aff)
        save_mean, save_invstd = mean.astype(ct, copy=False), invstd
    else:
        rm = running_mean.reshape(-1).astype(ct, copy=False)
        rv = running_var.reshape(-1).astype(ct, copy=False)
        y = (x - rm.reshape(aff)) * (1.0 / np.sqrt(rv + eps)).astype(ct).reshape(aff)
        save_mean = save_invstd = np.zeros(0, ct)
    if weight is not None:
        y = y * weight.reshape(aff).astype(ct, copy=False)
    if bias is not None:
        y = y + bias.reshape(aff).astype(ct, copy=False)
    return np.asarray(y, dtype=d), save_mean, save_invstd


def native_group_norm(a, weight, bias, N, C, HxW, group, eps):
    d = a.dtype
    _m.group_norm_check(a.shape, _NP2DT[d], None if weight is None else weight.shape,
                        None if bias is None else bias.shape, group)
    h = d in _HALF
    x = a.astype(_F32) if h else a
    ct = x.dtype
    x3 = x.reshape(N, group, (C // group) * HxW)  # (not -1: N may be 0)
    if x3.shape[2] == 0:
        mean = np.zeros((N, group, 1), ct)
        rstd = np.full((N, group, 1), np.nan, ct)  # PyTorch: 1 / sqrt(0 / 0 + eps)
        y = x3.copy()
    else:
        mean = x3.mean(axis=2, keepdims=True, dtype=ct)
        xc = x3 - mean
        var = (xc * xc).mean(axis=2, keepdims=True, dtype=ct)
        rstd = (1.0 / np.sqrt(var + eps)).astype(ct, copy=False)
        y = xc * rstd
    y = y.reshape(a.shape)
    aff = (1, C) + (1,) * (a.ndim - 2)
    if weight is not None:
        y = y * weight.astype(ct, copy=False).reshape(aff)
    if bias is not None:
        y = y + bias.astype(ct, copy=False).reshape(aff)
    return (np.asarray(y, dtype=d), mean.reshape(N, group).astype(d),
            rstd.reshape(N, group).astype(d))


# ---- pointwise losses ---------------------------------------------------------------------------
def _reduce(loss, reduction, d):
    if reduction == 1:
        r = loss.mean(dtype=loss.dtype) if loss.size else np.array(np.nan, loss.dtype)
    elif reduction == 2:
        r = loss.sum(dtype=loss.dtype)
    else:
        r = loss
    return np.asarray(r).astype(d, copy=False)


def _loss_inputs(a, b, kernel, promote=True):
    d = _m.loss_dtype(kernel, _NP2DT[a.dtype], _NP2DT[b.dtype], promote).np
    ct = _F32 if d in _HALF else d
    return a.astype(ct, copy=False), b.astype(ct, copy=False), d


def mse_loss(a, target, reduction=1):
    x, y, d = _loss_inputs(a, target, "mse_cpu")
    z = x - y
    return _reduce(z * z, reduction, d)


def smooth_l1_loss(a, target, reduction=1, beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, y, d = _loss_inputs(a, target, "smooth_l1_cpu")
    z = np.abs(x - y)
    if beta == 0:
        loss = z
    else:
        loss = np.where(z < beta, (0.5 / beta) * z * z, z - 0.5 * beta).astype(z.dtype, copy=False)
    return _reduce(loss, reduction, d)


def huber_loss(a, target, reduction=1, delta=1.0):
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, y, d = _loss_inputs(a, target, "huber_cpu", promote=False)
    z = np.abs(x - y)
    loss = np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)).astype(z.dtype, copy=False)
    return _reduce(loss, reduction, d)


def binary_cross_entropy(a, target, weight=None, reduction=1):
    d = a.dtype
    _m.bce_check(_NP2DT[d], _NP2DT[target.dtype], None)
    ct = _F32 if d in _HALF else d
    x = a.astype(ct, copy=False)
    y = target.astype(ct, copy=False)
    if x.size and ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    lx = np.maximum(np.log(x), -100)
    l1x = np.maximum(np.log1p(-x), -100)
    loss = (y - 1) * l1x - y * lx
    if weight is not None:
        loss = loss * weight.astype(ct, copy=False)
    return _reduce(np.asarray(loss, ct), reduction, d)


def binary_cross_entropy_with_logits(a, target, weight=None, pos_weight=None, reduction=1):
    x, y, d = _loss_inputs(a, target, "log_sigmoid_cpu")
    ct = x.dtype
    for w in (weight, pos_weight):
        if w is not None:
            _m.loss_dtype("log_sigmoid_cpu", _NP2DT[d], _NP2DT[w.dtype])
    sp = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # softplus(-x)
    if pos_weight is not None:
        lw = (pos_weight.astype(ct, copy=False) - 1) * y + 1
        loss = (1 - y) * x + lw * sp
    else:
        loss = (1 - y) * x + sp
    if weight is not None:
        loss = loss * weight.astype(ct, copy=False)
    return _reduce(np.asarray(loss, ct), reduction, d)


def nll_loss_backward(go, a, target, weight, reduction, ignore_index, total_weight):
    """Gradient of nll_loss_forward / nll_loss2d_forward w.r.t. self (1-D, 2-D or 4-D input)."""
    d = a.dtype
    if (weight is None and reduction and a.ndim == 2 and d in _FAST and target.ndim == 1
            and _all_valid(target, a.shape[1], ignore_index) and _MAX(target) < a.shape[1]):
        g = np.asarray(go, dtype=d)
        if reduction == 1:
            g = g / np.asarray(total_weight, dtype=d)
        gi = np.zeros(a.shape, d)
        gi[_rows(target.size), target] = -g
        return gi
    ct = _F32 if d in _HALF else d
    c = a.shape[0] if a.ndim == 1 else a.shape[1]
    t = target.reshape(-1).astype(np.int64, copy=False)
    valid = t != ignore_index
    tv = t if valid.all() else np.where(valid, t, 0)
    if weight is not None:
        w = weight.reshape(-1).astype(ct, copy=False)[tv] * valid
    else:
        w = valid.astype(ct)
    g = np.asarray(go, dtype=ct)
    if reduction == 0:
        vals = -(w * g.reshape(-1))
    else:
        if reduction == 1:
            g = g / np.asarray(total_weight, dtype=ct)
        vals = -(w * g)
    if a.ndim <= 2:
        gi = np.zeros((t.size, c), ct)
        gi[np.arange(t.size), tv] = vals
        gi = gi.reshape(a.shape)
    else:
        moved = (a.shape[0],) + a.shape[2:] + (c,)
        gm = np.zeros(moved, ct)
        gm.reshape(-1, c)[np.arange(t.size), tv] = vals
        gi = np.ascontiguousarray(np.moveaxis(gm, -1, 1))
    return gi.astype(d, copy=False)


def native_layer_norm_backward(go, a, normalized_shape, mean, rstd, weight, bias, output_mask):
    """(grad_input, grad_weight, grad_bias); an empty tensor where output_mask is False or the
    affine parameter is absent (PyTorch: an undefined tensor)."""
    d = a.dtype
    ct = _F32 if d in _HALF else d
    nn = len(normalized_shape)
    n = 1
    for s in normalized_shape:
        n *= s
    rows = 1
    for s in a.shape[:a.ndim - nn]:
        rows *= s
    x = a.astype(ct, copy=False).reshape(rows, n)
    g = go.astype(ct, copy=False).reshape(rows, n)
    m = mean.astype(ct, copy=False).reshape(rows, 1)
    r = rstd.astype(ct, copy=False).reshape(rows, 1)
    xhat = np.subtract(x, m)
    xhat *= r
    gi = gw = gb = np.zeros(0, d)
    if output_mask[0]:
        gwv = g * weight.astype(ct, copy=False).reshape(1, n) if weight is not None else g
        if n and rows:
            # r * (gwv - mean(gwv) - xhat * mean(gwv * xhat)), row means as sums / n
            inv_n = ct.type(1) / ct.type(n)
            c1 = np.add.reduce(gwv, axis=1, keepdims=True)
            c1 *= inv_n
            c2 = np.einsum("ij,ij->i", gwv, xhat).reshape(rows, 1)
            c2 *= inv_n
            gi = np.multiply(xhat, c2)
            np.subtract(gwv, gi, out=gi)
            gi -= c1
            gi *= r
        else:
            gi = np.zeros_like(gwv)
        gi = gi.reshape(a.shape).astype(d, copy=False)
    if output_mask[1] and weight is not None:
        xhat *= g
        gw = np.add.reduce(xhat, axis=0).reshape(weight.shape).astype(weight.dtype, copy=False)
    if output_mask[2] and bias is not None:
        gb = np.add.reduce(g, axis=0).reshape(bias.shape).astype(bias.dtype, copy=False)
    return gi, gw, gb


# ---- scaled dot product attention (ATen's flash attention for CPU, aten/native/cpu/FlashAttentionKernel.cpp)
_NEG_INF = float("-inf")


def _sdpa_scores(q, k, is_causal, attn_mask, scale):
    """scale * q k^T (+ mask) in q's dtype; True in a boolean mask means 'attend'."""
    s = np.matmul(q, np.swapaxes(k, -1, -2))
    s *= s.dtype.type(scale)
    L, S = s.shape[-2], s.shape[-1]
    if is_causal:
        s += _causal_bias(L, S, s.dtype)
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            s += np.where(attn_mask, s.dtype.type(0), s.dtype.type(_NEG_INF))
        else:
            s += attn_mask.astype(s.dtype, copy=False)
    return s


_CAUSAL = {}


def _causal_bias(L, S, dt):
    """(L, S): 0 on and below the diagonal, -inf above (cached, read-only)."""
    key = (L, S, dt)
    b = _CAUSAL.get(key)
    if b is None:
        b = np.triu(np.full((L, S), _NEG_INF, dt), 1)
        b.flags.writeable = False
        if L * S <= 1 << 20:
            _CAUSAL[key] = b
    return b


def _sdpa_dtypes(q):
    d = q.dtype
    return d, (_F32 if d in _HALF else d)


def sdpa_flash_cpu(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None):
    """(output, logsumexp): softmax(scale q k^T + mask) v with a numerically safe softmax (rows with
    nothing to attend give zeros), the row log-sum-exp kept for the backward."""
    _m.flash_check(tuple(_dt.NP2DT[x.dtype] for x in (q, k, v)), (q.shape, k.shape, v.shape), dropout_p,
                   None if attn_mask is None else _dt.NP2DT[attn_mask.dtype])
    d, ct = _sdpa_dtypes(q)
    if ct is not d:
        q, k, v = q.astype(ct), k.astype(ct), v.astype(ct)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else math.inf
    s = _sdpa_scores(q, k, is_causal, attn_mask, scale)
    m = s.max(axis=-1, keepdims=True) if s.shape[-1] else np.full(s.shape[:-1] + (1,), _NEG_INF, ct)
    empty = ~np.isfinite(m)
    if empty.any():
        m = np.where(empty, ct.type(0), m)
    s -= m
    np.exp(s, out=s)
    l = s.sum(axis=-1, keepdims=True)
    # reduced precision: PyTorch's kernel multiplies the probabilities rounded to the input dtype
    out = np.matmul(s if ct is d else s.astype(d).astype(ct), v)
    with np.errstate(divide="ignore", invalid="ignore"):
        out /= l
        lse = np.log(l)
    lse += m
    if empty.any():                # nothing to attend: zeros, and exp(s - lse) = 0 in the backward
        out = np.where(empty, ct.type(0), out)
        lse = np.where(empty, ct.type(np.inf), lse)
    lse = lse[..., 0]
    if ct is not d:
        out = out.astype(d)
    return out, lse


def sdpa_flash_cpu_backward(go, q, k, v, out, lse, dropout_p, is_causal, attn_mask=None,
                            scale=None):
    """(grad_query, grad_key, grad_value) of sdpa_flash_cpu, recomputing the probabilities."""
    d, ct = _sdpa_dtypes(q)
    if ct is not d:
        go, q, k, v, out = (x.astype(ct) for x in (go, q, k, v, out))
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else math.inf
    p = _sdpa_scores(q, k, is_causal, attn_mask, scale)
    p -= lse.astype(ct, copy=False)[..., None]
    np.exp(p, out=p)                                     # the attention probabilities
    gv = np.matmul(np.swapaxes(p, -1, -2), go)
    dp = np.matmul(go, np.swapaxes(v, -1, -2))
    dsum = np.einsum("...ij,...ij->...i", go, out)[..., None]
    dp -= dsum
    dp *= p                                              # d(scores)
    dp *= dp.dtype.type(scale)
    gq = np.matmul(dp, k)
    gk = np.matmul(np.swapaxes(dp, -1, -2), q)
    if ct is not d:
        return gq.astype(d), gk.astype(d), gv.astype(d)
    return gq, gk, gv
