"""Normalization, loss, distance and attention operators written with other ember operators
(ATen's LossNLL.cpp, Loss.cpp, Normalization.cpp, group_norm.cpp, layer_norm.cpp, Distance.cpp,
attention.cpp math path). Declared in ember/ops/native_functions/nn_norm_loss.yaml.

cross_entropy_loss is log_softmax + nll_loss_forward (two kernels, LogSoftmaxBackward0 and
NllLossBackward0 as in PyTorch). N-D nll_loss is flattened to 2-D (PyTorch: nll_loss2d).
"""
import math

import ember
from ember._generated import ops as _ops
from ember.core import dtype as _dt

_MEAN, _SUM = 1, 2
_CPP = {_dt.float32: "float", _dt.float64: "double", _dt.float16: "c10::Half",
        _dt.bfloat16: "c10::BFloat16", _dt.int64: "long int", _dt.int32: "int", _dt.int16: "short int",
        _dt.int8: "signed char", _dt.uint8: "unsigned char", _dt.complex64: "c10::complex<float>",
        _dt.complex128: "c10::complex<double>"}


def _cpp(d):
    return _CPP.get(d, d.name)




def _reduce(loss, reduction):
    if reduction == _MEAN:
        return loss.mean()
    if reduction == _SUM:
        return loss.sum()
    return loss


# ---- nll / cross entropy --------------------------------------------------------------------------
def nll_loss(self, target, weight=None, reduction=_MEAN, ignore_index=-100):
    return _ops.nll_loss_forward.call(self, target, weight, reduction, ignore_index)[0]


def nll_loss_nd(self, target, weight=None, reduction=_MEAN, ignore_index=-100):
    nd = self.dim()
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1 and self._shape[0] != target._shape[0] if target.dim() else nd != 1:
        raise ValueError(f"Expected input batch_size ({self._shape[0]}) to match target "
                         f"batch_size ({target._shape[0] if target.dim() else 1}).")
    # through nll_loss / nll_loss2d, as torch's nll_loss_nd: autocast lists those names (fp32)
    if nd <= 2:
        return _ops.nll_loss.call(self, target, weight, reduction, ignore_index)
    if nd == 4:
        return _ops.nll_loss2d.call(self, target, weight, reduction, ignore_index)
    n, c = self._shape[0], self._shape[1]
    expected = (n,) + tuple(self._shape[2:])
    if tuple(target._shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target._shape)}")
    x = self.reshape(n, c, 1, -1)
    out = _ops.nll_loss2d.call(x, target.reshape(n, 1, -1), weight, reduction, ignore_index)
    if reduction == 0:
        return out.view(expected)
    return out


def nll_loss2d(self, target, weight=None, reduction=_MEAN, ignore_index=-100):
    return _ops.nll_loss2d_forward.call(self, target, weight, reduction, ignore_index)[0]


def cross_entropy_loss(self, target, weight=None, reduction=_MEAN, ignore_index=-100,
                       label_smoothing=0.0):
    class_dim = 0 if self.dim() == 1 else 1
    if self._shape == target._shape:
        if target._dtype.category != _dt.FLOAT:
            raise RuntimeError("Expected floating point type for target with class probabilities, "
                               f"got {target._dtype.name.capitalize() if target._dtype is not _dt.int64 else 'Long'}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        return _ce_prob(self, target, weight, reduction, label_smoothing, class_dim)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    logp = ember.log_softmax(self, class_dim)
    if label_smoothing > 0.0:
        return _ce_smooth(logp, target, weight, reduction, ignore_index, label_smoothing,
                          class_dim)
    return nll_loss_nd(logp, target, weight, reduction, ignore_index)


def _wview(weight, nd, class_dim, n_classes):
    shape = [1] * nd
    shape[class_dim] = n_classes
    return weight.view(shape)


def _ce_prob(self, target, weight, reduction, label_smoothing, class_dim):
    n_classes = self._shape[class_dim]
    logp = ember.log_softmax(self, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        if weight.numel() != n_classes:
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                               f"{n_classes} classes or no classes but got weight tensor of shape: "
                               f"{list(weight._shape)}")
        prod = prod * _wview(weight, self.dim(), class_dim, n_classes)
    if reduction == _MEAN:
        if self.numel() == 0:
            return -prod.sum().fill_(float("nan"))
        return -prod.sum() / (self.numel() // n_classes)
    if reduction == _SUM:
        return -prod.sum()
    return -prod.sum(class_dim)


def _ce_smooth(logp, target, weight, reduction, ignore_index, ls, class_dim):
    n_classes = logp._shape[class_dim]
    nll = nll_loss_nd(logp, target, weight, reduction, ignore_index)
    ignore = target == ignore_index
    if weight is not None:
        smooth = -(logp * _wview(weight, logp.dim(), class_dim, n_classes)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == _MEAN:
        if weight is not None:
            ret = smooth.sum() / weight.gather(0, target.masked_select(~ignore).flatten()).sum()
        else:
            ret = smooth.sum() / (~ignore).sum()
    elif reduction == _SUM:
        ret = smooth.sum()
    else:
        ret = smooth
    return (1 - ls) * nll + ret * (ls / n_classes)


# ---- pointwise losses --------------------------------------------------------------------------
def l1_loss(self, target, reduction=_MEAN):
    return _reduce((self - target).abs(), reduction)


def kl_div(self, target, reduction=_MEAN, log_target=False):
    if log_target:
        loss = ember.exp(target) * (target - self)
    else:
        xlogx = ember.where(target == 0, ember.zeros_like(target), target * ember.log(target))
        loss = xlogx - target * self
    return _reduce(loss, reduction)


# ---- distances ----------------------------------------------------------------------------------
def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    if x1._shape != x2._shape:
        x1, x2 = ember.broadcast_tensors(x1, x2)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    d = max(x1.dim(), x2.dim())
    if d == 0:
        return (x1 - x2 + eps).abs()
    return (x1 - x2 + eps).norm(p, d - 1, keepdim=keepdim)


# ---- normalization ------------------------------------------------------------------------------
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return ember.native_layer_norm(input, normalized_shape, weight, bias, eps)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    normalized_shape = tuple(normalized_shape)
    nn = len(normalized_shape)
    shape = tuple(input._shape)
    if shape[len(shape) - nn:] != normalized_shape or len(shape) < nn:
        ns = ", ".join(str(s) for s in normalized_shape)
        raise RuntimeError(f"Given normalized_shape=[{ns}], expected input with shape [*, {ns}], "
                           f"but got input of size{list(shape)}".replace(", ", ", "))
    if weight is not None and tuple(weight._shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight._shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")
    if eps is None:
        eps = ember.finfo(input._dtype).eps
    dims = tuple(range(len(shape) - nn, len(shape)))
    y = input * ember.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    if weight is not None:
        y = y * weight
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    shape = tuple(input._shape)
    n = shape[0]
    c = shape[1] if len(shape) > 1 else 1
    hxw = 1
    for s in shape[2:]:
        hxw *= s
    return ember.native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)[0]


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    if input.numel() == 0:
        # ATen's batch_norm: an empty input gives an empty output, running stats unchanged
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    return ember.native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                   momentum, eps)[0]


# ---- attention ----------------------------------------------------------------------------------
def _flash_ok(q, k, v, mask, dropout_p, enable_gqa):
    """PyTorch's CPU SDPA takes its fused kernel (not the composite math) for 4-D CPU inputs of one
    batch and head count and one head size, no dropout, and a mask that broadcasts to the scores
    (ember keeps the math for empty inputs too)."""
    if dropout_p != 0.0 or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return False
    qs, ks, vs = q._shape, k._shape, v._shape
    if q._device.type != "cpu" or qs[:2] != ks[:2] or ks[:3] != vs[:3] or not (
            qs[3] == ks[3] == vs[3]) or 0 in qs or 0 in ks:
        return False
    if q._dtype.category != _dt.FLOAT or (enable_gqa and qs[1] != ks[1]):
        return False
    if mask is not None:
        ms = tuple(mask._shape)
        full = (qs[0], qs[1], qs[2], ks[2])
        if len(ms) > 4 or any(m not in (1, f) for m, f in zip(ms[::-1], full[::-1])):
            return False
    return True


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    qd, kd, vd = query._dtype, key._dtype, value._dtype
    if not (qd is kd and kd is vd):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_cpp(qd)} key.dtype: {_cpp(kd)} and value.dtype: "
                           f"{_cpp(vd)} instead.")
    L, S = query._shape[-2], key._shape[-2]
    scale_factor = 1 / math.sqrt(query._shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key._shape[-3] != query._shape[-3]:
        hq, hk = query._shape[-3], key._shape[-3]
        if hq % hk:
            raise RuntimeError(f"number of heads in query ({hq}) must be divisible by the "
                               f"number of heads in key/value ({hk})")
        lead = tuple(query._shape[:-3])
        q = query.reshape(lead + (hk, hq // hk) + tuple(query._shape[-2:]))
        k = key.unsqueeze(-3)
        v = value.unsqueeze(-3)
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale=scale)
        return out.reshape(lead + (hq,) + tuple(out._shape[-2:]))
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if attn_mask is not None and attn_mask._dtype not in (_dt.bool_, _dt.float32, qd):
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, "
                           f"but got attn_mask.dtype: {_cpp(attn_mask._dtype)} and  query.dtype: "
                           f"{_cpp(qd)} instead.")
    if _flash_ok(query, key, value, attn_mask, dropout_p, enable_gqa):
        return ember._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, 0.0, is_causal, attn_mask=attn_mask, scale=scale)[0]
    attn = ember.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        above = ember.ones((L, S), dtype=_dt.bool_, device=query.device).triu(1)  # ~tril()
        attn = attn.masked_fill(above, float("-inf"))
    if attn_mask is not None:
        if attn_mask._dtype is _dt.bool_:
            attn = attn.masked_fill(~attn_mask, float("-inf"))
        else:
            attn = attn + attn_mask
    masked = is_causal or attn_mask is not None
    if masked:
        # PyTorch's _safe_softmax: rows that are entirely -inf give zeros, not nan
        full = (attn == float("-inf")).all(-1, keepdim=True)
        soft = ember.softmax(attn, -1)
        # the fill is a no-op (values and gradients) when no row is fully masked: skip it on CPU
        if query.device.type != "cpu" or bool(full.any()):
            soft = soft.masked_fill(full, 0.0)
        attn = soft
    else:
        attn = ember.softmax(attn, -1)
    if dropout_p > 0.0:
        attn = ember.dropout(attn, dropout_p, True)
    return ember.matmul(attn, value)
