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
from ember.core.keys import DispatchKey

_MEAN, _SUM = 1, 2
_BATCHED = 1 << DispatchKey.FuncTorchBatched
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
    # at::norm (NormBackward1), not Tensor.norm's linalg.vector_norm
    return _ops.norm_ScalarOpt_dim.call(x1 - x2 + eps, p, [d - 1], keepdim)


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
    batch and head count and one head size, no dropout, and a mask that broadcasts to the scores and
    does not require grad (ember keeps the math for empty inputs too)."""
    if dropout_p != 0.0 or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return False
    qs, ks, vs = q._shape, k._shape, v._shape
    if q._device.type != "cpu" or qs[:2] != ks[:2] or ks[:3] != vs[:3] or not (
            qs[3] == ks[3] == vs[3]) or 0 in qs or 0 in ks:
        return False
    if q._dtype.category != _dt.FLOAT or (enable_gqa and qs[1] != ks[1]):
        return False
    if mask is not None:
        if mask.requires_grad and ember.is_grad_enabled():
            return False  # the fused kernel gives no gradient for the mask: PyTorch takes the math path
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
        # the fill is a no-op (values and gradients) when no row is fully masked: skip it on CPU (not
        # under vmap, where bool() of a batched tensor is data-dependent control flow)
        if query.device.type != "cpu" or full._keys & _BATCHED or bool(full.any()):
            soft = soft.masked_fill(full, 0.0)
        attn = soft
    else:
        attn = ember.softmax(attn, -1)
    if dropout_p > 0.0:
        attn = ember.dropout(attn, dropout_p, True)
    return ember.matmul(attn, value)


# ---- margin, ranking, embedding and likelihood losses (ATen's Loss.cpp) -------------------------
_EPSILON = 1e-12  # cosine_embedding_loss's guard against zero-norm inputs (ATen's EPSILON)


def _scalar_sub(s, t):
    """ATen's `scalar - tensor` (a sub of the scalar as a tensor: SubBackward0, not RsubBackward0)."""
    return ember.sub(ember.full_like(t, s), t)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=_MEAN):
    """mean/sum/none of max(0, -target * (input1 - input2) + margin)."""
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(self, target, margin=1.0, reduction=_MEAN):
    """self where target != -1, plus max(0, margin - self) where target != 1."""
    zeros = ember.zeros_like(self)
    output_margin = ember.where(target != 1, _scalar_sub(margin, self).clamp_min(0), zeros)
    output_self = ember.where(target != -1, self, zeros)
    return _reduce(output_margin + output_self, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=_MEAN):
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin) where target == -1."""
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if targ_dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + _EPSILON
    mag_square2 = (input2 * input2).sum(targ_dim) + _EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = ember.zeros_like(cos)
    output_pos = ember.where(target == 1, _scalar_sub(1, cos), zeros)
    output_neg = ember.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(output_pos + output_neg, reduction)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Negative log likelihood of target ~ Poisson(exp(input)) (or Poisson(input))."""
    if log_input:
        loss = ember.exp(input) - target * input
    else:
        loss = input - target * ember.log(input + eps)
    if full:
        # Stirling's approximation of log(target!), counted only where target > 1
        stirling_term = target * ember.log(target) - target + 0.5 * ember.log(2 * math.pi * target)
        loss = loss + stirling_term.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=_MEAN):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm pairwise distance."""
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same "
                           f"number of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and "
                           f"negative {n_dim}D inputs")
    dist_pos = ember.pairwise_distance(anchor, positive, p, eps)
    dist_neg = ember.pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ember.minimum(dist_neg, ember.pairwise_distance(positive, negative, p, eps))
    return _reduce(ember.clamp_min(margin + dist_pos - dist_neg, 0), reduction)


# ---- soft_margin_loss, multi_margin_loss, multilabel_margin_loss (kernels in PyTorch) -------------
# CompositeExplicitAutograd: they run below Autograd, whose formulas (SoftMarginLossBackward0,
# MultiMarginLossBackward0, MultilabelMarginLossBackward0) call the *_backward ops below.
def _check_no_requires_grad(t, arg, fname):
    # PyTorch's autograd kernel refuses an input it has no formula for
    if t is not None and t.requires_grad and ember.is_grad_enabled():
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


def _check_float_kernel(input, kernel):
    # the CPU kernels are dispatched for float and double only
    if input.dtype not in (ember.float32, ember.float64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._short}'")


def _check_long(target):
    if target.dtype != ember.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._short}")


def _check_vector_or_matrix(input):
    ndims = input.dim()
    if not ((ndims == 2 and input.size(1) != 0) or (ndims == 1 and input.size(0) != 0) or ndims == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but "
                           f"got: {list(input.shape)}")


def _has_values(t):
    return t.device.type != "meta"  # meta tensors hold no values to check


def soft_margin_loss(self, target, reduction=_MEAN):
    """mean/sum/none of log(1 + exp(-target * self)); the result has self's shape and dtype."""
    _check_no_requires_grad(target, "target", "soft_margin_loss")
    z = -self * target
    if z.shape != self.shape:  # ATen writes -self * target into a tensor of self's shape
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(z.shape)}")
    return _reduce(z.to(self.dtype).exp().log1p(), reduction)


def soft_margin_loss_backward(grad_output, self, target, reduction):
    """-norm * target * exp(-target * self) / (1 + exp(-target * self)) * grad_output."""
    norm = 1.0 / self.numel() if reduction == _MEAN else 1.0
    z = (-target * self).exp()
    return (-norm * target * z / (z + 1) * grad_output).to(self.dtype)


def _multi_margin_setup(self, target, p, margin, weight):
    if p != 1 and p != 2:
        raise RuntimeError("only p == 1 and p == 2 supported")
    _check_vector_or_matrix(self)
    ndims = self.dim()
    nframe = 1 if ndims <= 1 else self.size(0)
    dim = 1 if ndims == 0 else self.size(ndims - 1)
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
            f"samples (batch size). Expected target size [{nframe}], but got {list(target.shape)}. "
            f"Input has shape {list(self.shape)}.")
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    _check_float_kernel(self, "multi_margin_loss_cpu_kernel")
    _check_long(target)
    if weight is not None and weight.dtype != self.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype._short} but found {weight.dtype._short}")
    if nframe and _has_values(target) and (bool(target.min() < 0) or bool(target.max() >= dim)):
        raise RuntimeError("target out of range")
    x = self.reshape(nframe, dim)
    y = target.reshape(nframe, 1)
    # z[n, d] = margin - x[n, y[n]] + x[n, d]; the target class itself is no margin violation
    z = margin - x.gather(1, y) + x
    active = (z > 0) & (ember.arange(dim, device=self.device) != y)
    return nframe, dim, x, y, z, active


def multi_margin_loss(self, target, p=1, margin=1, weight=None, reduction=_MEAN):
    """Per sample: sum over classes d != y of max(0, margin - x[y] + x[d])**p * weight[y], / C."""
    _check_no_requires_grad(weight, "weight", "multi_margin_loss")
    nframe, dim, x, y, z, active = _multi_margin_setup(self, target, p, margin, weight)
    z = ember.where(active, z, 0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y]
    loss = (z.sum(1) / dim).reshape(target.shape)
    return _reduce(loss, reduction)


def multi_margin_loss_backward(grad_output, self, target, p, margin, weight=None, reduction=_MEAN):
    """ATen's multi_margin_loss_backward_cpu_kernel: g (or 2 g z) * weight[y] at each violating class,
    minus their sum at the target class, g = 1 / C (1 / (N C) for a mean), times grad_output."""
    nframe, dim, x, y, z, active = _multi_margin_setup(self, target, p, margin, weight)
    g = 1.0 / (nframe * dim) if reduction == _MEAN else 1.0 / dim
    h = ember.where(active, g if p == 1 else 2 * g * z, 0)
    if weight is not None:
        h = h * weight[y]
    h = h.scatter(1, y, -h.sum(1, keepdim=True))
    go = grad_output.reshape(nframe, 1) if reduction == 0 and grad_output.dim() else grad_output
    return (h * go).to(self.dtype).reshape(self.shape)


def _multilabel_setup(self, target):
    _check_vector_or_matrix(self)
    ndims = self.dim()
    if ndims <= 1:
        nframe, dim = 1, (1 if ndims == 0 else self.size(0))
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        nframe, dim = self.size(0), self.size(1)
        ok = target.dim() == 2 and target.size(0) == nframe and target.size(1) == dim
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(self.shape)}")
    # ATen reads min/max as int64 (truncating a float target) before checking the dtypes
    if target.numel() and _has_values(target) and (int(target.min()) < -1 or int(target.max()) >= dim):
        raise RuntimeError("argument #2 'target' is out of range")
    _check_float_kernel(self, "multilabel_margin_loss_forward_out_frame")
    _check_long(target)
    x = self.reshape(nframe, dim)
    y = target.reshape(nframe, dim)
    valid = (y < 0).cumsum(1) == 0  # the labels before the first -1
    y = y.clamp_min(0)
    hits = (y.unsqueeze(2) == ember.arange(dim, device=self.device)) & valid.unsqueeze(2)
    is_target = hits.any(1)
    # [sample, label j, class i]: the pairs (target label, non-target class) with a positive margin
    z = 1 - x.gather(1, y).unsqueeze(2) + x.unsqueeze(1)
    active = valid.unsqueeze(2) & ~is_target.unsqueeze(1) & (z > 0)
    return ndims, nframe, dim, y, z, active, is_target


def multilabel_margin_loss_forward(self, target, reduction):
    """Per sample: sum over target classes j (the labels before the first -1) and non-target
    classes i of max(0, 1 - (x[j] - x[i])), / C; and is_target, 1 at each sample's target classes."""
    ndims, nframe, dim, y, z, active, is_target = _multilabel_setup(self, target)
    loss = ember.where(active, z, 0).sum((1, 2)) / dim
    if ndims <= 1:
        loss = loss.reshape(())
    is_target = is_target.to(self.dtype).reshape(target.shape)
    return _reduce(loss, reduction), is_target


def multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target):
    """ATen's multilabel_margin_loss_backward_out_frame: each active (label j, class i) pair adds g
    at class i and takes g from class y[j]; g = 1 / C (1 / (N C) for a mean), times grad_output."""
    ndims, nframe, dim, y, z, active, _ = _multilabel_setup(self, target)
    g = 1.0 / (nframe * dim) if reduction == _MEAN else 1.0 / dim
    a = active.to(self.dtype)
    gi = a.sum(1).scatter_add(1, y, -a.sum(2)) * g
    go = grad_output.reshape(nframe, 1) if reduction == 0 and grad_output.dim() else grad_output
    return (gi * go).reshape(self.shape)


def multilabel_margin_loss(self, target, reduction=_MEAN):
    return _ops.multilabel_margin_loss_forward.call(self, target, reduction)[0]


# ---- instance_norm (ATen's Normalization.cpp) ------------------------------------------------------
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled):
    """A batch_norm over the input viewed as (1, N*C, *) with the per-channel tensors repeated N
    times; the running stats get the mean over the batch of the N updated copies."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    b, c = input.size(0), input.size(1)
    shape = list(input.shape)
    shape[0], shape[1] = 1, b * c

    def repeat(t):
        return None if t is None else t.repeat(b)

    running_mean_, running_var_ = repeat(running_mean), repeat(running_var)
    out = ember.batch_norm(input.contiguous().view(shape), repeat(weight), repeat(bias), running_mean_,
                           running_var_, use_input_stats, momentum, eps, cudnn_enabled)
    with ember.no_grad():  # ATen copies into an alias of the running stats
        if running_mean is not None:
            running_mean.copy_(running_mean_.view(b, c).mean(0))
        if running_var is not None:
            running_var.copy_(running_var_.view(b, c).mean(0))
    return out.view(input.shape)
