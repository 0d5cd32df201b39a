"""Spatial nn ops PyTorch implements with other ops (CompositeImplicitAutograd), so autograd records
the nodes PyTorch records: conv1d/2d/3d and conv_transpose* call `convolution`
(ConvolutionBackward0), the 1-d poolings run the 2-d kernels on an unsqueezed input
(SqueezeBackward1 on top), adaptive_avg_pool2d to 1x1 is a mean (MeanBackward1), pad picks the
mode's kernel, _pad_circular copies slices (CopySlices), upsample *.vec resolve the output size.

`convolution_backward` (CompositeExplicitAutograd) returns None for the gradients output_mask
does not ask for, as ATen's does; it runs the NumPy kernel on CPU and computes shapes on Meta.
"""
import math
import warnings

import numpy as np

import ember
from ember._generated import ops as _ops
from ember.core import tls as _tls
from ember.core.errors import fmt_shape
from ember.kernels.meta import nn_spatial as _m
from ember.kernels.sparse import coo as _sparse_coo

_st = _tls.current


# ---- convolution ------------------------------------------------------------------------------------
def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    dev = input._device.type
    if dev == "cpu" and grad_output._device.type == "cpu" and weight._device.type == "cpu":
        from ember.kernels.cpu import nn_spatial as _cpu
        from ember.kernels.cpu._glue import wrap
        r = _cpu.convolution_backward(grad_output._np, input._np, weight._np, bias_sizes, stride,
                                      padding, dilation, transposed, output_padding, groups,
                                      output_mask)
        return tuple(None if a is None else wrap(a) for a in r)
    if dev == "meta":
        from ember.kernels.meta._glue import wrap
        _m.conv_setup(input._shape, weight._shape, bias_sizes, stride, padding, dilation, transposed,
                      output_padding, groups)
        nb = (weight._shape[1] * groups if transposed else weight._shape[0],)
        return (wrap((input._shape, input._dtype)) if output_mask[0] else None,
                wrap((weight._shape, weight._dtype)) if output_mask[1] else None,
                wrap((nb, grad_output._dtype)) if output_mask[2] else None)
    raise NotImplementedError(f"convolution_backward: no kernel for device '{dev}'")


def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    return _ops.convolution.call(x, w, b, stride, padding, dilation, transposed,
                                                 output_padding, groups)


def _unsqueeze0(x):
    return _ops.unsqueeze.call(x, 0)


def _squeeze(x, dim):
    return _ops.squeeze_dim.call(x, dim)


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd, name):
    _m.conv_bias_check(input._dtype, bias)
    batched = _m.conv_batchify(input._shape, nd, name)
    x = input if batched else _unsqueeze0(input)
    out = _convolution(x, weight, bias, stride, padding, dilation, False, (0,), groups)
    return out if batched else _squeeze(out, 0)


def conv1d(input, weight, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1),
           groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


_same_warned = [False]


def _convolution_same(x, w, b, stride, dilation, groups):
    k = len(w._shape)
    if k <= 2:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = k - 2
    if k != len(x._shape):
        raise RuntimeError(f"Expected {k}-dimensional input for {k}-dimensional weight"
                           f"{fmt_shape(w._shape)}, but got {len(x._shape)}-dimensional input of size "
                           f"{fmt_shape(x._shape)} instead")
    if len(stride) not in (dim, 1):
        raise RuntimeError(f"stride cannot broadcast to {dim} dimensions")
    if len(dilation) not in (dim, 1):
        raise RuntimeError(f"dilation cannot broadcast to {dim} dimensions")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pl, pr = [], []
    for i in range(dim):
        d = dilation[0] if len(dilation) == 1 else dilation[i]
        total = d * (w._shape[i + 2] - 1)
        left = total // 2
        pl.append(left)
        pr.append(total - left)
    if pl == pr:
        return _convolution(x, w, b, stride, pl, dilation, False, (0,) * dim, groups)
    if not _same_warned[0]:
        _same_warned[0] = True
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                      "zero-padded copy of the input be created", UserWarning, stacklevel=4)
    pad_nd = [0] * (2 * dim)
    for i in range(dim):
        delta = pr[i] - pl[i]
        idx = 2 * (dim - 1 - i)
        if delta > 0:
            pad_nd[idx + 1] = delta
        else:
            pad_nd[idx] = delta
            pl[i] = pr[i]
    xp = _ops.constant_pad_nd.call(x, pad_nd, 0)
    return _convolution(xp, w, b, stride, pl, dilation, False, (0,) * dim, groups)


def _convnd_padding(input, weight, bias, stride, padding, dilation, groups, nd, name):
    _m.conv_bias_check(input._dtype, bias)
    batched = _m.conv_batchify(input._shape, nd, name)
    x = input if batched else _unsqueeze0(input)
    if padding == "same":
        out = _convolution_same(x, weight, bias, stride, dilation, groups)
    elif padding == "valid":
        out = _convolution(x, weight, bias, stride, (0,), dilation, False, (0,), groups)
    else:
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    return out if batched else _squeeze(out, 0)


def conv1d_padding(input, weight, bias=None, stride=(1,), padding="valid", dilation=(1,), groups=1):
    return _convnd_padding(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d_padding(input, weight, bias=None, stride=(1, 1), padding="valid", dilation=(1, 1),
                   groups=1):
    return _convnd_padding(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d_padding(input, weight, bias=None, stride=(1, 1, 1), padding="valid", dilation=(1, 1, 1),
                   groups=1):
    return _convnd_padding(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    batched = _m.conv_batchify(input._shape, nd, name)
    x = input if batched else _unsqueeze0(input)
    out = _convolution(x, weight, bias, stride, padding, dilation, True, output_padding, groups)
    return out if batched else _squeeze(out, 0)


def conv_transpose1d(input, weight, bias=None, stride=(1,), padding=(0,), output_padding=(0,), groups=1,
                     dilation=(1,)):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                     groups=1, dilation=(1, 1)):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=(1, 1, 1), padding=(0, 0, 0),
                     output_padding=(0, 0, 0), groups=1, dilation=(1, 1, 1)):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                             "conv_transpose3d")


# ---- pooling ------------------------------------------------------------------------------------------
def _check_dim_range(name, x, lo, hi):
    n = len(x._shape)
    if not (lo <= n < hi):
        raise RuntimeError(f"Expected {lo} to {hi - 1} dimensions, but got {n}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {name})")


def _check1d(name, arg, v):
    if len(v) != 1:
        raise RuntimeError(f"{name}() argument '{arg}' should contain one int (got {len(v)})")


def _unsq(x, dim):
    return _ops.unsqueeze.call(x, dim)


def max_pool1d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    if not stride:
        stride = kernel_size
    _check_dim_range("max_pool1d", self, 2, 4)
    for arg, v in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding),
                   ("dilation", dilation)):
        _check1d("max_pool1d", arg, v)
    x = _unsq(self, -2)
    out, idx = _ops.max_pool2d_with_indices.call(
        x, (1, kernel_size[0]), (1, stride[0]), (0, padding[0]), (1, dilation[0]), ceil_mode)
    return _squeeze(out, -2), _squeeze(idx, -2)


def _check_max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode):
    n = len(self._shape)
    if n not in (2, 3):
        raise RuntimeError(f"max_pool1d() Expected 2D or 3D input tensor, but got {fmt_shape(self._shape)}")
    if len(kernel_size) != 1:
        raise RuntimeError(f"max_pool1d() kernel_size must be an int, list of ints or tuple of ints of "
                           f"size 1 but got size {len(kernel_size)}")
    if len(stride) not in (0, 1):
        raise RuntimeError(f"max_pool1d() stride must be None, an int, list of ints, or tuple of ints of "
                           f"size 1 but got size {len(stride)}")
    if len(padding) != 1:
        raise RuntimeError(f"max_pool1d() padding must be an int, list of ints, or tuple of ints of size "
                           f"1 but got size {len(padding)}")
    if len(dilation) != 1:
        raise RuntimeError(f"max_pool1d() dilation must be an int, list of ints or tuple of ints of size "
                           f"1 but got size {len(dilation)}")
    if not stride:
        stride = kernel_size
    k, s, p, d = kernel_size[0], stride[0], padding[0], dilation[0]
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    ow = _m.pooling_output_shape(self._shape[-1], k, p, s, d, ceil_mode)
    if ow <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {ow}")


def max_pool1d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    sh = self._shape
    n = len(sh)
    if not ((n == 2 and sh[0] != 0 and sh[1] != 0) or (n == 3 and sh[1] != 0 and sh[2] != 0)):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{fmt_shape(sh)}")
    if self.requires_grad and _st().grad_enabled or self._device.type != "cpu":
        return max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]
    _check_max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode)
    _m.check_dtype("max_pool1d_impl", self._dtype, _m._FLOATS)
    return max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool2d(self, kernel_size, stride=(), padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    return _ops.max_pool2d_with_indices.call(self, kernel_size, stride, padding, dilation,
                                                          ceil_mode)[0]


def max_pool3d(self, kernel_size, stride=(), padding=(0, 0, 0), dilation=(1, 1, 1), ceil_mode=False):
    return _ops.max_pool3d_with_indices.call(self, kernel_size, stride, padding, dilation,
                                                          ceil_mode)[0]


def avg_pool1d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True):
    if not stride:
        stride = kernel_size
    _check_dim_range("avg_pool1d", self, 2, 4)
    for arg, v in (("kernel_size", kernel_size), ("stride", stride), ("padding", padding)):
        _check1d("avg_pool1d", arg, v)
    x = _unsq(self, -2)
    out = _ops.avg_pool2d.call(x, (1, kernel_size[0]), (1, stride[0]), (0, padding[0]),
                                        ceil_mode, count_include_pad, None)
    return _squeeze(out, -2)


def adaptive_avg_pool2d(self, output_size):
    if len(output_size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if output_size[0] < 0 or output_size[1] < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal "
                           f"to 0 but received {{{output_size[0]}, {output_size[1]}}}")
    if output_size[0] == 1 and output_size[1] == 1:
        return _ops.mean_dim.call(self, (-1, -2), True, None)
    return _ops._adaptive_avg_pool2d.call(self, output_size)


def adaptive_avg_pool1d(self, output_size):
    _check_dim_range("adaptive_avg_pool1d", self, 2, 4)
    _check1d("adaptive_avg_pool1d", "output_size", output_size)
    x = _unsq(self, -2)
    return _squeeze(adaptive_avg_pool2d(x, (1, output_size[0])), -2)


def adaptive_max_pool1d(self, output_size):
    _check_dim_range("adaptive_max_pool1d", self, 2, 4)
    _check1d("adaptive_max_pool1d", "output_size", output_size)
    sh = self._shape
    for i in range(1, len(sh)):
        if sh[i] <= 0:
            raise RuntimeError(f"adaptive_max_pool1d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {fmt_shape(sh)} with dimension {i} being "
                               f"empty")
    x = _unsq(self, -2)
    out, idx = _ops.adaptive_max_pool2d.call(x, (1, output_size[0]))
    return _squeeze(out, -2), _squeeze(idx, -2)


# ---- embedding ----------------------------------------------------------------------------------------
def embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq, sparse):
    if sparse:  # a sparse COO gradient (ember/kernels/sparse)
        return _sparse_coo.embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)
    return _ops.embedding_dense_backward.call(grad, indices, num_weights,
                                                                  padding_idx, scale_grad_by_freq)


def embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                              per_sample_weights, include_last_offset, padding_idx):
    pi = -1
    if padding_idx is not None:
        n = weight._shape[0]
        if not (-n <= padding_idx < n):
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} through "
                               f"{n - 1}, but got {padding_idx}")
        pi = padding_idx % n
    return _ops._embedding_bag.call(
        weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
        include_last_offset, pi)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False):
    return embedding_bag_padding_idx(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                                     per_sample_weights, include_last_offset, None)


# ---- padding ------------------------------------------------------------------------------------------
def pad_circular(self, pad):
    shape = self._shape
    nd = len(shape)
    npad = len(pad) // 2
    nnon = nd - npad
    if nnon not in (1, 2):
        raise RuntimeError(f"Invalid padding size, expected 1 or 2 non-padded dimensions, which would be "
                           f"equivalent to padding of length {(nd - 1) * 2} or {(nd - 2) * 2} "
                           f"respectively but got {len(pad)}")
    out_shape = list(shape[:nnon])
    for i in range(npad):
        lo, hi = pad[2 * (npad - i - 1)], pad[2 * (npad - i - 1) + 1]
        size = shape[nnon + i]
        out_shape.append(size + lo + hi)
        if not (lo <= size and hi <= size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out_shape[-1] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = self.new_empty(out_shape)
    out_slice, in_slice = out, self
    for i in range(npad):
        dim = npad - i + nnon - 1
        lo, hi = pad[2 * i], pad[2 * i + 1]
        out_slice = out_slice.narrow(dim, max(lo, 0), out_shape[dim] - max(hi, 0) - max(lo, 0))
        in_slice = in_slice.narrow(dim, max(-lo, 0), shape[dim] - max(-hi, 0) - max(-lo, 0))
    out_slice.copy_(in_slice)
    for i in range(npad):
        dim = npad - i + nnon - 1
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo > 0:
            out.narrow(dim, 0, lo).copy_(out.narrow(dim, out_shape[dim] - lo - max(hi, 0), lo))
        if hi > 0:
            out.narrow(dim, out_shape[dim] - hi, hi).copy_(out.narrow(dim, max(lo, 0), hi))
    return out


# ---- upsampling ----------------------------------------------------------------------------------------
def _output_size(shape, output_size, scale_factors):
    dim = len(shape) - 2
    if output_size is not None:
        if scale_factors is not None:
            raise RuntimeError("Must specify exactly one of output_size and scale_factors")
        if len(output_size) != dim:
            raise RuntimeError("Expected static_cast<int64_t>(output_size->size()) == spatial_dimensions "
                               "to be true, but got false.  (Could this error message be improved?  If so, "
                               "please report an enhancement request to PyTorch.)")
        return tuple(output_size)
    if scale_factors is not None:
        if len(scale_factors) != dim:
            raise RuntimeError("Expected static_cast<int64_t>(scale_factors->size()) == spatial_dimensions "
                               "to be true, but got false.  (Could this error message be improved?  If so, "
                               "please report an enhancement request to PyTorch.)")
        return tuple(int(float(shape[i + 2]) * scale_factors[i]) for i in range(dim))
    raise RuntimeError("Must specify exactly one of output_size and scale_factors")


def _scale(scale_factors, i):
    return None if scale_factors is None else scale_factors[i]


def _upsample_vec(op, input, output_size, scale_factors, *flags):
    osize = _output_size(input._shape, output_size, scale_factors)
    scales = tuple(_scale(scale_factors, i) for i in range(len(osize)))
    return op.call(input, osize, *flags, *scales)


def upsample_nearest1d_vec(input, output_size, scale_factors):
    return _upsample_vec(_ops.upsample_nearest1d, input, output_size, scale_factors)


def upsample_nearest2d_vec(input, output_size, scale_factors):
    return _upsample_vec(_ops.upsample_nearest2d, input, output_size, scale_factors)


def upsample_nearest_exact1d_vec(input, output_size, scale_factors):
    return _upsample_vec(_ops._upsample_nearest_exact1d, input, output_size, scale_factors)


def upsample_nearest_exact2d_vec(input, output_size, scale_factors):
    return _upsample_vec(_ops._upsample_nearest_exact2d, input, output_size, scale_factors)


def upsample_linear1d_vec(input, output_size, align_corners, scale_factors):
    return _upsample_vec(_ops.upsample_linear1d, input, output_size, scale_factors, align_corners)


def upsample_bilinear2d_vec(input, output_size, align_corners, scale_factors):
    return _upsample_vec(_ops.upsample_bilinear2d, input, output_size, scale_factors, align_corners)


# ---- 3-d adaptive pooling, max unpooling, channel_shuffle ------------------------------------------
# PyTorch's kernels (AdaptiveAveragePooling3d.cpp, AdaptiveMaxPooling3d.cpp, MaxUnpooling.cpp,
# ChanelShuffle.cpp) as CompositeExplicitAutograd compositions of ember ops: they run below Autograd,
# whose nodes come from ember/ops/derivatives/nn_spatial.yaml.
def _not_implemented(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype._short}'")


def _bin_table(in_size, out_size):
    """Input positions of every adaptive bin along one dim, as an (out_size, k) table.

    Bin i covers [floor(i*in/out), ceil((i+1)*in/out)) as in ATen; k is the longest bin, and
    shorter bins repeat their last position (harmless for max, masked out for the average).
    Returns the table and the bin lengths.
    """
    i = np.arange(out_size, dtype=np.int64)
    start = (i * in_size) // out_size
    end = -((-(i + 1) * in_size) // out_size)
    length = end - start
    k = int(length.max()) if out_size else 1
    return np.minimum(start[:, None] + np.arange(k), end[:, None] - 1), length


def _adaptive_checks(name, input, sep):
    if input.dim() not in (4, 5):
        raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got{sep} {fmt_shape(input.shape)}")
    for d in range(1, input.dim()):
        if input.shape[d] <= 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                               f"but input has sizes {fmt_shape(input.shape)} with dimension {d} being empty")


def _adaptive_avg_dim(x, dim, out_size):
    """Average the adaptive bins of one dim (the 3-d average is separable: a mean of means)."""
    table, length = _bin_table(x.shape[dim], out_size)
    k = table.shape[1]
    win = x.index_select(dim, ember.tensor(table.reshape(-1), device=x.device)).unflatten(dim, (out_size, k))
    if (length == k).all():
        return win.mean(dim + 1)
    trailing = (1,) * (x.dim() - dim - 1)
    valid = ember.tensor(np.arange(k) < length[:, None], device=x.device).reshape((out_size, k) + trailing)
    count = ember.tensor(length, dtype=x.dtype, device=x.device).reshape((out_size,) + trailing)
    return ember.where(valid, win, 0).sum(dim + 1) / count


def adaptive_avg_pool3d(self, output_size):
    """ATen's adaptive_avg_pool3d: a mean for a 1x1x1 output, _adaptive_avg_pool3d otherwise."""
    out = tuple(output_size)
    if len(out) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if any(o < 0 for o in out):
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{out[0]}, {out[1]},{out[2]}}}")
    if out == (1, 1, 1):
        return _ops.mean_dim.call(self, (-1, -2, -3), True, None)
    return _ops._adaptive_avg_pool3d.call(self, out)


def _half_to_float(x):
    # half/bfloat16 are summed in float32 and rounded once
    return x.float() if x.dtype in (ember.float16, ember.bfloat16) else x


def adaptive_avg_pool3d_kernel(self, output_size):
    """_adaptive_avg_pool3d over (N, C, D, H, W) or (C, D, H, W)."""
    out = tuple(output_size)
    _adaptive_checks("adaptive_avg_pool3d", self, "")
    if not self.is_floating_point():
        raise _not_implemented("adaptive_avg_pool3d_cpu", self.dtype)
    x = _half_to_float(self)
    nd = x.dim()
    for i, o in enumerate(out):
        x = _adaptive_avg_dim(x, nd - 3 + i, o)
    return x.to(self.dtype)


def adaptive_avg_pool3d_backward(grad_output, self):
    """Each input element gets grad / (bin volume) of every bin it belongs to: the transposed
    averaging matrices of the three dims applied to grad_output."""
    g = _half_to_float(grad_output)
    nd = g.dim()
    for i in range(3):
        d = nd - 3 + i
        n_in, n_out = self.shape[d], g.shape[d]
        table, length = _bin_table(n_in, n_out)
        m = np.zeros((n_out, n_in))
        for o in range(n_out):
            m[o, table[o, 0]:table[o, 0] + length[o]] = 1.0 / length[o]
        mt = ember.tensor(m.T.copy(), dtype=g.dtype, device=g.device)  # (n_in, n_out)
        g = ember.matmul(g.movedim(d, -1), mt.t()).movedim(-1, d)
    return g.to(grad_output.dtype).contiguous()


def adaptive_max_pool3d(self, output_size):
    """3-d adaptive max pooling: (values, indices), indices flat over each (D, H, W) plane."""
    out = tuple(output_size)
    _adaptive_checks("adaptive_max_pool3d", self, ":")
    if len(out) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    nd = self.dim()
    batch = tuple(self.shape[:-3])
    if any(o < 0 for o in out):
        ember.empty(batch + out)  # raises ATen's "Trying to create tensor with negative dimension"
    if not self.is_floating_point():
        raise _not_implemented("adaptive_max_pool3d_cpu", self.dtype)
    sizes = tuple(self.shape[-3:])
    tables = [_bin_table(n, o)[0] for n, o in zip(sizes, out)]
    ks = tuple(t.shape[1] for t in tables)
    win = self
    for i, t in enumerate(tables):
        dim = nd - 3 + 2 * i  # each earlier dim was split into (out, k)
        win = win.index_select(dim, ember.tensor(t.reshape(-1), device=self.device)).unflatten(dim, (out[i], ks[i]))
    b = len(batch)
    # (..., oD, kD, oH, kH, oW, kW) -> (..., oD, oH, oW, kD*kH*kW): one window per output, in (d, h, w) order
    win = win.permute(tuple(range(b)) + (b, b + 2, b + 4, b + 1, b + 3, b + 5)).reshape(batch + out + (math.prod(ks),))
    td, th, tw = tables
    flat = (td[:, None, None, :, None, None] * (sizes[1] * sizes[2]) + th[None, :, None, None, :, None] * sizes[2]
            + tw[None, None, :, None, None, :]).reshape(out + (math.prod(ks),))
    flat = ember.tensor(flat, device=self.device).expand(win.shape)
    # ATen keeps the first maximum, but a NaN always wins, so the last NaN of a window is taken
    kpos = ember.arange(win.shape[-1], device=self.device)
    last_nan = ember.where(win.isnan(), kpos, -1).amax(-1, keepdim=True)
    sel = ember.where(last_nan >= 0, last_nan, win.argmax(-1, keepdim=True))
    return win.gather(-1, sel).squeeze(-1), flat.gather(-1, sel).squeeze(-1)


def adaptive_max_pool3d_backward(grad_output, self, indices):
    """grad_output summed into each plane at its argmax positions."""
    batch = tuple(self.shape[:-3])
    plane = math.prod(self.shape[-3:])
    out = ember.zeros(batch + (plane,), dtype=grad_output.dtype, device=grad_output.device)
    return out.scatter_add(-1, indices.flatten(-3), grad_output.flatten(-3)).view(self.shape)


def _max_unpool(input, indices, output_size, nsp, stride=None):
    """ATen's max_unpool2d (nsp=2) / max_unpool3d (nsp=3): scatter each plane's values to their indices."""
    name = f"max_unpooling{nsp}d"
    if indices.dtype != ember.int64:
        extra = f" but got: {indices.dtype._short}" if nsp == 2 else ""
        raise RuntimeError(f"elements in indices should be type int64{extra}")
    if input.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"Input to {name} should be a {nsp + 1}d or {nsp + 2}d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({fmt_shape(input.shape)}) but got indices tensor with shape: {fmt_shape(indices.shape)}")
    for d in range(1, input.dim()):
        if input.shape[d] <= 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got {fmt_shape(input.shape)} with dimension {d} being empty.")
    if stride is not None and not all(s > 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {fmt_shape(stride)}")
    if not input.is_floating_point():
        raise _not_implemented(f"max_unpool{nsp}d", input.dtype)
    output_size = tuple(int(s) for s in output_size)
    plane = math.prod(output_size)
    batch = tuple(input.shape[:-nsp])
    flat_idx = indices.flatten(-nsp)
    if input.device.type != "meta":  # meta tensors hold no indices to check
        bad = (flat_idx < 0) | (flat_idx >= plane)
        if bad.any().item():
            # ATen reports one invalid index: the last one it met when it runs on one thread
            raise RuntimeError(f"Found an invalid max index: {flat_idx[bad][-1].item()} (output volumes are of "
                               "size " + "x".join(str(s) for s in output_size) + ")")
    out = ember.zeros(batch + (plane,), dtype=input.dtype, device=input.device)
    return out.scatter(-1, flat_idx, input.flatten(-nsp)).reshape(batch + output_size)


def max_unpool2d(self, indices, output_size):
    return _max_unpool(self, indices, output_size, 2)


def max_unpool3d(self, indices, output_size, stride, padding):
    return _max_unpool(self, indices, output_size, 3, stride)


def channel_shuffle(self, groups):
    """(N, C, *) -> (N, C, *) with the channels, seen as (groups, C // groups), transposed."""
    if self.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(self.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    b, c = self.shape[0], self.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
                           "groups.")
    rest = math.prod(self.shape[2:])
    # always a new tensor, as torch's kernel returns (the transpose is a plain view when groups is 1)
    shuffled = self.reshape(b, groups, c // groups, rest).transpose(1, 2)
    return shuffled.clone(memory_format=ember.contiguous_format).view(self.shape)
