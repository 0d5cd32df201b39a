"""torch.nn.functional's margin, ranking, embedding and likelihood losses (margin_ranking_loss,
soft_margin_loss, multilabel_soft_margin_loss, hinge_embedding_loss, cosine_embedding_loss,
poisson_nll_loss, gaussian_nll_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
multi_margin_loss, multilabel_margin_loss).

They are compositions of ember ops, written as ATen's Loss.cpp / LossMultiMargin.cpp /
LossMultiLabelMargin.cpp and torch/nn/functional.py compute them, so autograd needs no extra
formulas; the checks of ATen's kernels are repeated here with PyTorch's messages."""
import math

import ember
from ember.kernels.composite_nn_norm_loss import _reduce  # ATen's apply_loss_reduction
from ember._generated.functions_nn import log_sigmoid as logsigmoid  # F.logsigmoid
from ember.nn._functional_norm_loss import _enum, _legacy

__all__ = [
    "margin_ranking_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "poisson_nll_loss", "gaussian_nll_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "multi_margin_loss", "multilabel_margin_loss",
]

_EPSILON = 1e-12  # cosine_embedding_loss's guard against zero-norm inputs (ATen's EPSILON)


def _reduction_enum(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce)
    return _enum(reduction)


def _check_no_requires_grad(t, arg, fname):
    # ATen has no derivative for these arguments; its autograd wrapper refuses them
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


# ---- pairwise and elementwise losses ------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """mean/sum/none of max(0, -target * (input1 - input2) + margin)."""
    r = _reduction_enum(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), r)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """mean/sum/none of log(1 + exp(-target * input)); the result has input's shape and dtype."""
    r = _reduction_enum(size_average, reduce, reduction)
    _check_no_requires_grad(target, "target", "soft_margin_loss")
    z = -input * target
    if z.shape != input.shape:  # ATen writes -input * target into a tensor of input's shape
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                           f"{list(z.shape)}")
    return _reduce(z.to(input.dtype).exp().log1p(), r)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Binary logistic loss per class, averaged over the last (class) dimension."""
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
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


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target != -1, plus max(0, margin - input) where target != 1."""
    r = _reduction_enum(size_average, reduce, reduction)
    zeros = ember.zeros_like(input)
    output_margin = ember.where(target != 1, (margin - input).clamp_min(0), zeros)
    output_self = ember.where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, r)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin) where target == -1."""
    r = _reduction_enum(size_average, reduce, reduction)
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
    output_pos = ember.where(target == 1, 1 - cos, zeros)
    output_neg = ember.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(output_pos + output_neg, r)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of target ~ Poisson(exp(input)) (or Poisson(input))."""
    r = _reduction_enum(size_average, reduce, reduction)
    if log_input:
        loss = ember.exp(input) - target * input
    else:
        loss = input - target * ember.log(input + eps)
    if full:
        # Stirling's approximation of log(target!), counted only where target > 1
        stirling_term = target * ember.log(target) - target + 0.5 * ember.log(2 * math.pi * target)
        loss = loss + stirling_term.masked_fill(target <= 1, 0)
    return _reduce(loss, r)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of target ~ N(input, var); var is clamped to eps without gradient."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ember.ones_like(input)
    elif ember.any(var < 0):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if tuple(input.size())[:-1] == tuple(var.size()):
            # homoscedastic: one variance for the whole last dimension
            var = ember.unsqueeze(var, -1)
        elif not (input.dim() == var.dim()
                  and sum(v for i, v in zip(input.size(), var.size()) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (ember.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ---- triplet losses -----------------------------------------------------------------------------
def _check_triplet_dims(anchor, positive, negative):
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same "
                           f"number of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and "
                           f"negative {n_dim}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with the p-norm pairwise distance."""
    r = _reduction_enum(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = ember.pairwise_distance(anchor, positive, p, eps)
    dist_neg = ember.pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ember.minimum(dist_neg, ember.pairwise_distance(positive, negative, p, eps))
    return _reduce(ember.clamp_min(margin + dist_pos - dist_neg, 0), r)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance_function(x1, x2) (default: pairwise_distance)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
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


# ---- multi-class margin losses ------------------------------------------------------------------
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Per sample: sum over classes d != y of max(0, margin - x[y] + x[d])**p * weight[y], / C."""
    r = _reduction_enum(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_no_requires_grad(weight, "weight", "multi_margin_loss")
    _check_vector_or_matrix(input)
    ndims = input.dim()
    nframe = 1 if ndims <= 1 else input.size(0)
    dim = 1 if ndims == 0 else input.size(ndims - 1)
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
            f"samples (batch size). Expected target size [{nframe}], but got {list(target.shape)}. "
            f"Input has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(weight.shape)}")
    _check_float_kernel(input, "multi_margin_loss_cpu_kernel")
    _check_long(target)
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype._short} but found {weight.dtype._short}")
    if nframe and (bool(target.min() < 0) or bool(target.max() >= dim)):
        raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    y = target.reshape(nframe, 1)
    z = (margin - x.gather(1, y) + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y]
    # the target class itself is not a margin violation
    z = z.masked_fill(ember.arange(dim, device=input.device) == y, 0)
    loss = (z.sum(1) / dim).reshape(target.shape)
    return _reduce(loss, r)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample: sum over target classes j (the labels before the first -1) and non-target
    classes i of max(0, 1 - (x[j] - x[i])), / C."""
    r = _reduction_enum(size_average, reduce, reduction)
    _check_vector_or_matrix(input)
    ndims = input.dim()
    if ndims <= 1:
        nframe, dim = 1, (1 if ndims == 0 else input.size(0))
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        nframe, dim = input.size(0), input.size(1)
        ok = target.dim() == 2 and target.size(0) == nframe and target.size(1) == dim
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    # ATen reads min/max as int64 (truncating a float target) before checking the dtypes
    if target.numel() and (int(target.min()) < -1 or int(target.max()) >= dim):
        raise RuntimeError("argument #2 'target' is out of range")
    _check_float_kernel(input, "multilabel_margin_loss_forward_out_frame")
    _check_long(target)
    x = input.reshape(nframe, dim)
    y = target.reshape(nframe, dim)
    valid = (y < 0).cumsum(1) == 0  # labels before the first -1
    y = y.clamp_min(0)
    hits = (y.unsqueeze(2) == ember.arange(dim, device=input.device)) & valid.unsqueeze(2)
    is_target = hits.any(1)
    z = (1 - x.gather(1, y).unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)  # [sample, label j, class i]
    z = z.masked_fill(~(valid.unsqueeze(2) & ~is_target.unsqueeze(1)), 0)
    loss = z.sum((1, 2)) / dim
    if ndims <= 1:
        loss = loss.reshape(())
    return _reduce(loss, r)
