"""torch.nn.functional's normalization, loss, distance and attention functions (signatures,
legacy size_average/reduce arguments with torch's warnings (ember/nn/_reduction.py), and the
Python-level checks of torch/nn/functional.py); the operators are in
ember/ops/native_functions/nn_norm_loss.yaml. The functions torch writes in Python
(multilabel_soft_margin_loss, gaussian_nll_loss, triplet_margin_with_distance_loss,
local_response_norm) are written here the same way."""
import math
import warnings

import ember
from ember._generated import functions as _f
from ember._generated import functions_nn as _nn
from ember._python_api.distance import pdist
from ember.nn import _reduction as _Reduction
from ember.nn._functional_spatial import avg_pool2d, avg_pool3d

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
    "pairwise_distance", "pdist", "layer_norm", "batch_norm", "group_norm", "rms_norm", "instance_norm",
    "local_response_norm", "channel_shuffle", "native_channel_shuffle",
    "scaled_dot_product_attention", "multi_head_attention_forward",
    "margin_ranking_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "multi_margin_loss", "multilabel_margin_loss",
]


def _size_warn(input, target):
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=3)


# ---- losses -------------------------------------------------------------------------------------
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    return _nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction), ignore_index,
                                  label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    return _nn.nll_loss_nd(input, target, weight, _Reduction.get_enum(reduction), ignore_index)


def _weighted(loss, weight, input, reduction):
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _size_warn(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    i, t = ember.broadcast_tensors(input, target) if input.shape != target.shape else (input, target)
    if weight is not None:
        return _weighted(_nn.mse_loss(i, t, 0), weight, input, reduction)
    return _nn.mse_loss(i, t, _Reduction.get_enum(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _size_warn(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    i, t = ember.broadcast_tensors(input, target) if input.shape != target.shape else (input, target)
    if weight is not None:
        return _weighted(_nn.l1_loss(i, t, 0), weight, input, reduction)
    return _nn.l1_loss(i, t, _Reduction.get_enum(reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _size_warn(input, target)
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    i, t = ember.broadcast_tensors(input, target) if input.shape != target.shape else (input, target)
    if beta == 0.0:
        return _nn.l1_loss(i, t, _Reduction.get_enum(reduction))
    return _nn.smooth_l1_loss(i, t, _Reduction.get_enum(reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _size_warn(input, target)
    i, t = ember.broadcast_tensors(input, target) if input.shape != target.shape else (input, target)
    if weight is not None:
        return _weighted(_nn.huber_loss(i, t, 0, delta), weight, input, reduction)
    return _nn.huber_loss(i, t, _Reduction.get_enum(reduction), delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    if size_average is not None or reduce is not None:  # torch goes through legacy_get_enum here
        r = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        r = _Reduction.get_enum(reduction)
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         "size.")
    if weight is not None:
        new_size = ember.broadcast_shapes(input.shape, weight.shape)
        weight = weight.expand(new_size)
    return _nn.binary_cross_entropy(input, target, weight, r)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    if size_average is not None or reduce is not None:  # torch goes through legacy_get_enum here
        r = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        r = _Reduction.get_enum(reduction)
    if not (target.size() == input.size()):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    return ember.binary_cross_entropy_with_logits(input, target, weight, pos_weight, r)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.", stacklevel=2)
        reduction_enum = 2 if reduction == "batchmean" else _Reduction.get_enum(reduction)
    out = ember.kl_div(input, target, reduction_enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.size()[0]
    return out


cosine_similarity = ember.cosine_similarity
pairwise_distance = ember.pairwise_distance


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return ember.margin_ranking_loss(input1, input2, target, margin, reduction_enum)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    return ember.hinge_embedding_loss(input, target, margin, reduction_enum)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    return ember.cosine_embedding_loss(input1, input2, target, margin, reduction_enum)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    if reduction != "none" and reduction != "mean" and reduction != "sum":
        raise ValueError(reduction + " is not a valid value for reduction")
    return ember.poisson_nll_loss(input, target, log_input, full, eps, _Reduction.get_enum(reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of target ~ N(input, var); var is clamped to eps without gradient."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ember.ones_like(input)
    elif ember.any(var < 0):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            # homoscedastic: one variance for the whole last dimension
            var = ember.unsqueeze(var, -1)
        elif not (input.ndim == var.ndim
                  and sum(y for x, y in zip(input.size(), var.size(), strict=True) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction != "none" and reduction != "mean" and reduction != "sum":
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (ember.log(var) + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return ember.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction_enum)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (default: pairwise_distance)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same "
                           f"number of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and "
                           f"negative {n_dim}D inputs")
    if distance_function is None:
        distance_function = ember.pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        # Balntas et al.: use the positive as anchor when it is closer to the negative
        dist_neg = ember.minimum(dist_neg, distance_function(positive, negative))
    loss = ember.clamp_min(margin + dist_pos - dist_neg, 0)
    if reduction == "sum":
        return ember.sum(loss)
    if reduction == "mean":
        return ember.mean(loss)
    return loss


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    return _nn.soft_margin_loss(input, target, reduction_enum)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Binary logistic loss per class, averaged over the last (class) dimension."""
    if size_average is not None or reduce is not None:
        reduction = _Reduction.legacy_get_string(size_average, reduce)
    loss = -(target * _nn.log_sigmoid(input) + (1 - target) * _nn.log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    return _nn.multilabel_margin_loss(input, target, reduction_enum)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None:
        if weight.dim() != 1:
            raise ValueError("weight must be one-dimensional")
    return _nn.multi_margin_loss(input, target, p, margin, weight, reduction_enum)


# ---- normalization ------------------------------------------------------------------------------
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return ember.layer_norm(input, normalized_shape, weight, bias, eps, False)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return ember.rms_norm(input, normalized_shape, weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    return ember.group_norm(input, num_groups, weight, bias, eps, False)


def _verify_batch_size(size):
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training:
        _verify_batch_size(input.size())
    return ember.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                            eps, False)


def _verify_spatial_size(size):
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    if use_input_stats:
        _verify_spatial_size(input.size())
    # (torch passes torch.backends.cudnn.enabled, which only picks a CUDA kernel)
    return ember.instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                               momentum, eps, False)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Divides each element by (k + alpha * mean of squares over `size` neighbouring channels)^beta."""
    dim = input.dim()
    if dim < 3:
        # torch's message has this run of spaces
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = _nn.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = _nn.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# torch.nn.functional binds these directly (torch.channel_shuffle, torch.native_channel_shuffle)
channel_shuffle = _f.channel_shuffle
native_channel_shuffle = _f.native_channel_shuffle



# ---- attention ----------------------------------------------------------------------------------
scaled_dot_product_attention = _nn.scaled_dot_product_attention


def _in_projection_packed(q, k, v, w, b=None):
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = _nn.linear(q, w, b)
            a, b_, c = proj.chunk(3, -1)
            return a.contiguous(), b_.contiguous(), c.contiguous()
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = _nn.linear(q, w_q, b_q)
        kv = _nn.linear(k, w_kv, b_kv)
        k_, v_ = kv.chunk(2, -1)
        return q_proj, k_.contiguous(), v_.contiguous()
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return _nn.linear(q, w_q, b_q), _nn.linear(k, w_k, b_k), _nn.linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Sequence-first (L, N, E) or unbatched (L, E) inputs, as torch's function."""
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got "
                             f"{embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to create "
                           "this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        is_causal = False
    if not use_separate_proj_weight:
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q = _nn.linear(query, q_proj_weight, b_q)
        k = _nn.linear(key, k_proj_weight, b_k)
        v = _nn.linear(value, v_proj_weight, b_v)
    # masks -> float additive masks
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
        attn_mask = _float_mask(attn_mask, q.dtype)
    if bias_k is not None and bias_v is not None:
        k = ember.cat([k, bias_k.repeat(1, bsz, 1)])
        v = ember.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _nn.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _nn.pad(key_padding_mask, (0, 1))
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None
         else static_k)
    v = (v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None
         else static_v)
    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = ember.cat([k, ember.zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = ember.cat([v, ember.zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = _nn.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _nn.pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        kpm = _float_mask(key_padding_mask, q.dtype)
        kpm = kpm.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        import math
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:
            attn = ember.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            attn = ember.bmm(q_scaled, k.transpose(-2, -1))
        attn = ember.softmax(attn, -1)
        if dropout_p > 0.0:
            attn = ember.dropout(attn, dropout_p, True)
        out = ember.bmm(attn, v)
        out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = _nn.linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        attn = attn.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn = attn.mean(dim=1)
        if not is_batched:
            out = out[:, 0]
            attn = attn[0]
        return out, attn
    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.transpose(0, 2).transpose(1, 2).contiguous().view(bsz * tgt_len, embed_dim)
    out = _nn.linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out[:, 0]
    return out, None


def _float_mask(mask, dtype):
    if mask.dtype == ember.bool:
        return ember.zeros_like(mask, dtype=dtype).masked_fill_(mask, float("-inf"))
    return mask.to(dtype)
