"""Backward helpers of the spatial nn family (FunctionsManual.cpp's convolution, pooling, embedding,
padding and upsampling parts).

First-order gradients call ATen's backward operators (convolution_backward,
max_pool2d_with_indices_backward, avg_pool2d_backward, ...: one NumPy kernel each, declared in
ops/native_functions/nn_spatial.yaml with variants: none); those have derivatives of their own in
ops/derivatives/nn_spatial.yaml, written with ember ops, so double backward works.

`convolution_backward` returns None for the gradients its output_mask leaves out. The generated
autograd kernel gives every differentiable output a history, so when the call itself is recorded
(grad mode on and an input requiring grad: create_graph=True) the helpers ask for all three.
"""
from ember._generated import ops as _ops
from ember.core import tls as _tls

__all__ = [
    "spatial_convolution_backward", "spatial_convolution_double_backward",
    "spatial_max_pool2d_backward", "spatial_max_pool3d_backward", "spatial_max_pool_double_backward",
    "spatial_avg_pool2d", "spatial_avg_pool3d", "spatial_avg_pool2d_backward",
    "spatial_avg_pool3d_backward", "spatial_adaptive_avg_pool2d",
    "spatial_adaptive_avg_pool2d_backward", "spatial_adaptive_max_pool2d_backward",
    "spatial_embedding_backward", "spatial_embedding_dense_double_backward",
    "spatial_embedding_bag_backward", "spatial_embedding_bag_psw_backward",
    "spatial_pad", "spatial_pad_backward", "spatial_upsample", "spatial_upsample_backward",
    "spatial_im2col", "spatial_col2im", "spatial_pixel_shuffle", "spatial_pixel_unshuffle",
]

_st = _tls.current


def _records(*ts):
    if not _st().ag:  # grad mode off
        return False
    for t in ts:
        m = getattr(t, "_ameta", None)
        if m is not None and m.requires_grad:
            return True
    return False


# ---- convolution -----------------------------------------------------------------------------------
def _conv_bwd(go, input, weight, stride, padding, dilation, transposed, output_padding, groups, mask):
    mask = tuple(bool(m) for m in mask)
    if _records(go, input, weight):
        mask = (True, True, True)
    bias_sizes = (weight._shape[1] * groups if transposed else weight._shape[0],) if mask[2] else None
    return _ops.convolution_backward.call(
        go, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
        mask)


def spatial_convolution_backward(grad, input, weight, stride, padding, dilation, transposed,
                                 output_padding, groups, mask):
    """(grad_input, grad_weight, grad_bias) of convolution."""
    if grad is None or not any(mask):
        return None, None, None
    r = _conv_bwd(grad, input, weight, stride, padding, dilation, transposed, output_padding, groups,
                  mask)
    return tuple(x if m else None for x, m in zip(r, mask))


def _conv(x, w, stride, padding, dilation, transposed, output_padding, groups):
    return _ops.convolution.call(x, w, None, stride, padding, dilation, transposed,
                                             output_padding, groups)


def spatial_convolution_double_backward(ggI, ggW, ggb, gO, weight, input, stride, padding, dilation,
                                        transposed, output_padding, groups, mask):
    """_convolution_double_backward: gradients of convolution_backward's outputs (grad_input,
    grad_weight, grad_bias) w.r.t. its inputs (grad_output, input, weight)."""
    g_go = g_in = g_w = None
    if mask[0]:
        if ggI is not None:
            g_go = _conv(ggI, weight, stride, padding, dilation, transposed, output_padding, groups)
        if ggW is not None:
            t = _conv(input, ggW, stride, padding, dilation, transposed, output_padding, groups)
            g_go = t if g_go is None else g_go + t
        if ggb is not None:
            shape = [1] * len(gO._shape)
            shape[1] = ggb._shape[0]
            t = ggb.reshape(shape).expand(gO._shape)
            g_go = t if g_go is None else g_go + t
        if g_go is None:
            g_go = gO.new_zeros(gO._shape)
    if mask[2] and ggI is not None:  # d/dW <ggI, grad_input(gO, W)> = grad_weight(ggI, gO)
        g_w = _conv_bwd(gO, ggI, weight, stride, padding, dilation, transposed, output_padding, groups,
                        (False, True, False))[1]
    if mask[1] and ggW is not None:  # d/dx <ggW, grad_weight(x, gO)> = grad_input(gO, ggW)
        g_in = _conv_bwd(gO, input, ggW, stride, padding, dilation, transposed, output_padding, groups,
                         (True, False, False))[0]
    return g_go, g_in, g_w


# ---- pooling --------------------------------------------------------------------------------------
def spatial_max_pool2d_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return _ops.max_pool2d_with_indices_backward.call(
        grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices)


def spatial_max_pool3d_backward(grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
    return _ops.max_pool3d_with_indices_backward.call(
        grad, self, kernel_size, stride, padding, dilation, ceil_mode, indices)


def spatial_max_pool_double_backward(grad, indices, dim):
    """The gradient at the argmax positions: grad.flatten(-dim).gather(-1, indices.flatten(-dim))."""
    n = len(indices._shape)
    g = grad.flatten(n - dim) if n else grad
    i = indices.flatten(n - dim)
    return g.gather(-1, i).reshape(indices._shape)


def spatial_avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    return _ops.avg_pool2d.call(grad, kernel_size, stride, padding, ceil_mode,
                                            count_include_pad, divisor_override)


def spatial_avg_pool3d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    return _ops.avg_pool3d.call(grad, kernel_size, stride, padding, ceil_mode,
                                            count_include_pad, divisor_override)


def spatial_avg_pool2d_backward(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override):
    return _ops.avg_pool2d_backward.call(
        grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def spatial_avg_pool3d_backward(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override):
    return _ops.avg_pool3d_backward.call(
        grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def spatial_adaptive_avg_pool2d(grad, output_size):
    return _ops._adaptive_avg_pool2d.call(grad, tuple(output_size))


def spatial_adaptive_avg_pool2d_backward(grad, self):
    return _ops._adaptive_avg_pool2d_backward.call(grad, self)


def spatial_adaptive_max_pool2d_backward(grad, self, indices):
    return _ops.adaptive_max_pool2d_backward.call(grad, self, indices)


# ---- embedding ------------------------------------------------------------------------------------
def spatial_embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    return _ops.embedding_backward.call(grad, indices, num_weights, padding_idx,
                                                            scale_grad_by_freq, sparse)


def spatial_embedding_dense_double_backward(grad, indices, padding_idx):
    gg = grad.index_select(0, indices.reshape(-1))
    if padding_idx >= 0:
        gg = gg.masked_fill((indices == padding_idx).reshape(-1, 1), 0)
    return gg.reshape(tuple(indices._shape) + (-1,))


def spatial_embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, max_indices,
                                   num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights,
                                   padding_idx):
    return _ops._embedding_bag_backward.call(
        grad, indices, offsets, offset2bag, bag_size, max_indices, num_weights, scale_grad_by_freq,
        mode, sparse, per_sample_weights, padding_idx)


def spatial_embedding_bag_psw_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx):
    return _ops._embedding_bag_per_sample_weights_backward.call(
        grad, weight, indices, offsets, offset2bag, mode, padding_idx)


# ---- padding, upsampling, im2col, pixel shuffle ------------------------------------------------------
def spatial_pad(grad, kind, padding):
    return getattr(_ops, kind).call(grad, padding)


def spatial_pad_backward(grad, self, kind, padding):
    return getattr(_ops, kind + "_backward").call(grad, self, padding)


def spatial_upsample(grad, op, output_size, *args):
    return getattr(_ops, op).call(grad, output_size, *args)


def spatial_upsample_backward(grad, op, output_size, input_size, *args):
    return getattr(_ops, op + "_backward").call(grad, output_size, tuple(input_size), *args)


def spatial_im2col(grad, kernel_size, dilation, padding, stride):
    return _ops.im2col.call(grad, kernel_size, dilation, padding, stride)


def spatial_col2im(grad, output_size, kernel_size, dilation, padding, stride):
    return _ops.col2im.call(grad, tuple(output_size), kernel_size, dilation, padding, stride)


def spatial_pixel_shuffle(grad, r):
    return _ops.pixel_shuffle.call(grad, r)


def spatial_pixel_unshuffle(grad, r):
    return _ops.pixel_unshuffle.call(grad, r)

