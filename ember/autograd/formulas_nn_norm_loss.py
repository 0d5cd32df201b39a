"""Backward helpers of ember/ops/derivatives/nn_norm_loss.yaml (prefixed nnl_), written with ember
ops so that double backward works."""
import ember
from ember._generated import ops as _ops

__all__ = ["nnl_nll_loss_backward", "nnl_nll_loss_double", "nnl_layer_norm_backward", "nnl_batch_norm_backward",
           "nnl_group_norm_backward", "nnl_mse_loss_backward", "nnl_smooth_l1_loss_backward",
           "nnl_huber_loss_backward", "nnl_bce_backward", "nnl_bce_target_backward",
           "nnl_bce_logits_backward", "nnl_bce_logits_target_backward", "nnl_sdpa_flash_backward",
           "nnl_not_implemented"]


def nnl_nll_loss_backward(grad, self, target, weight, reduction, ignore_index, total_weight):
    """d nll_loss_forward / d self (ATen's nll_loss_backward_out_frame)."""
    if not ember.is_grad_enabled():
        return _ops.nll_loss_backward.call(grad, self, target, weight, reduction, ignore_index,
                                           total_weight)
    valid = target != ignore_index
    tsafe = target.masked_fill(~valid, 0).long()
    if weight is not None:
        w = weight.index_select(0, tsafe.reshape(-1)).reshape(tsafe.shape) * valid
    else:
        w = valid.to(self.dtype)
    g = grad * w
    if reduction == 1:
        g = g / total_weight
    g = -g
    z = ember.zeros_like(self)
    if self.requires_grad and ember.is_grad_enabled():
        # create_graph: keep self in the graph (its second derivative is zero), as PyTorch's
        # nll_loss_backward node does
        z = ember.where(z.bool(), self, z)
    if self.dim() == 1:
        return z.scatter(0, tsafe.reshape(1), g.reshape(1))
    return z.scatter(1, tsafe.unsqueeze(1), g.unsqueeze(1))


def nnl_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight, bias, eps):
    """(grad_input, grad_weight, grad_bias) of native_layer_norm."""
    nn = len(normalized_shape)
    nd = input.dim()
    dims = tuple(range(nd - nn, nd))
    lead = tuple(range(nd - nn))
    if not ember.is_grad_enabled():
        gi, gw, gb = ember.native_layer_norm_backward(
            grad, input, normalized_shape, mean, rstd, weight, bias,
            [True, weight is not None, bias is not None])
        return gi, (gw if weight is not None else None), (gb if bias is not None else None)
    if input.requires_grad:
        # create_graph: the saved mean/rstd are constants; recompute them differentiably
        var, mean = ember.var_mean(input, dims, correction=0, keepdim=True)
        rstd = ember.rsqrt(var + eps)
    xhat = (input - mean) * rstd
    gw = grad * weight if weight is not None else grad
    gi = rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True))
    gweight = None
    gbias = None
    if weight is not None:
        gweight = (grad * xhat).sum(lead) if lead else grad * xhat
    if bias is not None:
        gbias = grad.sum(lead) if lead else grad
        if ember.is_grad_enabled() and (input.requires_grad or (
                weight is not None and weight.requires_grad)):
            # create_graph: PyTorch's backward node keeps input/weight as inputs of grad_bias
            # (second derivative zero)
            src = weight if weight is not None else xhat.sum(lead) if lead else xhat
            gbias = ember.where(ember.zeros_like(gbias, dtype=ember.bool), src, gbias)
    return gi, gweight, gbias


def nnl_batch_norm_backward(grad, input, weight, bias, running_mean, running_var, training, eps,
                            save_mean, save_invstd):
    """(grad_input, grad_weight, grad_bias) of native_batch_norm."""
    nd = input.dim()
    c = input.shape[1] if nd > 1 else input.shape[0]
    aff = (1, c) + (1,) * (nd - 2) if nd > 1 else (c,)
    axes = (0,) + tuple(range(2, nd)) if nd > 1 else ()
    create = ember.is_grad_enabled()
    if training:
        if create and input.requires_grad:
            var, mean = ember.var_mean(input, axes, correction=0, keepdim=True)
            invstd = ember.rsqrt(var + eps)
        else:
            mean = save_mean.reshape(aff).to(input.dtype)
            invstd = save_invstd.reshape(aff).to(input.dtype)
    else:
        mean = running_mean.reshape(aff).to(input.dtype)
        invstd = ember.rsqrt(running_var.reshape(aff).to(input.dtype) + eps)
    xhat = (input - mean) * invstd
    gw = grad * weight.reshape(aff) if weight is not None else grad
    if training:
        gi = invstd * (gw - gw.mean(axes, keepdim=True) - xhat * (gw * xhat).mean(axes, keepdim=True))
    else:
        gi = gw * invstd
    gweight = (grad * xhat).sum(axes) if weight is not None else None
    gbias = None
    if bias is not None:
        gbias = grad.sum(axes)
        if create and (input.requires_grad or (weight is not None and weight.requires_grad)):
            src = weight if weight is not None else xhat.sum(axes)
            gbias = ember.where(ember.zeros_like(gbias, dtype=ember.bool), src, gbias)
    return gi, gweight, gbias


def nnl_group_norm_backward(grad, input, weight, bias, N, C, group, eps, mean, rstd, gmean=None, grstd=None):
    """(grad_input, grad_weight, grad_bias) of native_group_norm; the saved mean and rstd are outputs too
    (PyTorch's infinitely_differentiable_native_group_norm_backward adds their gradients' share to the
    input's: var_mean's backward of d var = -rstd^3 / 2 * d rstd and d mean)."""
    shape = input.shape
    if grad is None:
        grad = ember.zeros_like(input)
    nd = input.dim()
    aff = (1, C) + (1,) * (nd - 2)
    per = C // group
    for s in shape[2:]:
        per *= s
    x3 = input.reshape(N, group, per)  # (not -1: N may be 0)
    if input.requires_grad and ember.is_grad_enabled():
        var, m3 = ember.var_mean(x3, -1, correction=0, keepdim=True)
        r3 = ember.rsqrt(var + eps)
    else:
        m3 = mean.reshape(N, group, 1)
        r3 = rstd.reshape(N, group, 1)
    xhat3 = (x3 - m3) * r3
    gw = grad * weight.reshape(aff) if weight is not None else grad
    gw3 = gw.reshape(N, group, per)
    gi = (r3 * (gw3 - gw3.mean(-1, keepdim=True)
                - xhat3 * (gw3 * xhat3).mean(-1, keepdim=True))).reshape(shape)
    if gmean is not None and grstd is not None and per:
        dvar = (-0.5 * r3 * r3 * r3) * grstd.reshape(N, group, 1)
        gi = gi + ((2.0 / per) * (x3 - m3) * dvar + gmean.reshape(N, group, 1) / per).reshape(shape)
    axes = (0,) + tuple(range(2, nd))
    gweight = (grad * xhat3.reshape(shape)).sum(axes) if weight is not None else None
    gbias = None
    if bias is not None:
        gbias = grad.sum(axes)
        if ember.is_grad_enabled() and (input.requires_grad or (
                weight is not None and weight.requires_grad)):
            src = weight if weight is not None else xhat3.reshape(shape).sum(axes)
            gbias = ember.where(ember.zeros_like(gbias, dtype=ember.bool), src, gbias)
    return gi, gweight, gbias


def _nnl_scale(g, x, reduction):
    if reduction == 1:
        n = x.numel()
        return g / n if n else g
    return g


def nnl_mse_loss_backward(grad, self, target, reduction):
    """d/d self of mse_loss (also d/d target with the arguments swapped)."""
    return _nnl_scale(2 * (self - target) * grad, ember.broadcast_tensors(self, target)[0]
                      if self.shape != target.shape else self, reduction)


def nnl_smooth_l1_loss_backward(grad, self, target, reduction, beta):
    d = self - target
    if beta == 0:
        g = d.sign()
    else:
        g = ember.where(d.abs() < beta, d / beta, d.sign())
    return _nnl_scale(g * grad, d, reduction)


def nnl_huber_loss_backward(grad, self, target, reduction, delta):
    d = self - target
    return _nnl_scale(d.clamp(-delta, delta) * grad, d, reduction)


def nnl_bce_backward(grad, self, target, weight, reduction):
    g = grad * (self - target) / ((1 - self) * self).clamp_min(1e-12)
    if weight is not None:
        g = g * weight
    return _nnl_scale(g, self, reduction)


def nnl_bce_target_backward(grad, self, target, weight, reduction):
    g = grad * (ember.log1p(-self).clamp_min(-100) - ember.log(self).clamp_min(-100))
    if weight is not None:
        g = g * weight
    return _nnl_scale(g, self, reduction)


def nnl_bce_logits_backward(grad, self, target, weight, pos_weight, reduction):
    if pos_weight is not None:
        t = pos_weight * target
        g = (t + 1 - target) * self.sigmoid() - t
    else:
        g = self.sigmoid() - target
    g = g * grad
    if weight is not None:
        g = g * weight
    return _nnl_scale(g, g, reduction)


def nnl_bce_logits_target_backward(grad, self, target, weight, pos_weight, reduction):
    if pos_weight is not None:
        g = -self - (pos_weight - 1) * _ops.log_sigmoid.call(self)
    else:
        g = -self
    g = g * grad
    if weight is not None:
        g = g * weight
    return _nnl_scale(g, g, reduction)


def nnl_nll_loss_double(grad, target, weight, reduction, ignore_index):
    """d nll_loss_backward / d grad_output: nll_loss of the incoming gradient."""
    if grad.dim() == 4:
        return _ops.nll_loss2d_forward.call(grad, target, weight, reduction, ignore_index)[0]
    return _ops.nll_loss_forward.call(grad, target, weight, reduction, ignore_index)[0]


def nnl_sdpa_flash_backward(grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask,
                            scale):
    """(grad_query, grad_key, grad_value) of _scaled_dot_product_flash_attention_for_cpu."""
    return ember._scaled_dot_product_flash_attention_for_cpu_backward(
        grad, query, key, value, output, logsumexp, dropout_p, is_causal, attn_mask=attn_mask,
        scale=scale)


def nnl_not_implemented(op):
    """The error of PyTorch's NotImplemented node (an op without a derivative formula)."""
    raise RuntimeError(f"derivative for aten::{op} is not implemented")
