"""torch.nn.functional's 3-d adaptive pooling, max unpooling and 3-d power-average pooling.

PyTorch binds these to ATen kernels (adaptive_avg_pool3d, adaptive_max_pool3d, max_unpool2d/3d);
here they are compositions of ember ops (index_select, gather, scatter, sum), so autograd comes for
free and the gradients equal torch's: each input element gets the sum of the output gradients of
the bins / windows it belongs to. Checks and error messages follow the ATen kernels.
"""
import math

import numpy as np

from ember.core.errors import fmt_shape
from ember.nn._functional_spatial import _lp_finish, _list_with_default, _pair, _single, _triple, avg_pool3d, max_pool3d

__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "lp_pool3d"]

def _not_implemented(kernel, dtype):
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype._short}'")


# ---- adaptive pooling ------------------------------------------------------------------------------
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
    import ember
    table, length = _bin_table(x.shape[dim], out_size)
    k = table.shape[1]
    win = x.index_select(dim, ember.tensor(table.reshape(-1), device=x.device)).unflatten(dim, (out_size, k))
    if (length == k).all():
        return win.mean(dim + 1)
    trailing = (1,) * (x.dim() - dim - 1)
    valid = ember.tensor(np.arange(k) < length[:, None], device=x.device).reshape((out_size, k) + trailing)
    count = ember.tensor(length, dtype=x.dtype, device=x.device).reshape((out_size,) + trailing)
    return ember.where(valid, win, 0).sum(dim + 1) / count


def adaptive_avg_pool3d(input, output_size):
    """3-d adaptive average pooling over (N, C, D, H, W) or (C, D, H, W); None keeps that size."""
    import ember
    out = _triple(_list_with_default(output_size, tuple(input.shape)))
    if len(out) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if any(o < 0 for o in out):
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{out[0]}, {out[1]},{out[2]}}}")
    if out == (1, 1, 1):
        # ATen's global-pooling shortcut: checked and differentiated as a mean
        return input.mean((-1, -2, -3), keepdim=True)
    _adaptive_checks("adaptive_avg_pool3d", input, "")
    if not input.is_floating_point():
        raise _not_implemented("adaptive_avg_pool3d_cpu", input.dtype)
    dtype = input.dtype
    # half/bfloat16 are summed in float32 and rounded once (ATen's CPU kernel sums in the input dtype,
    # so the two differ by that rounding)
    x = input.float() if dtype in (ember.float16, ember.bfloat16) else input
    nd = x.dim()
    for i, o in enumerate(out):
        x = _adaptive_avg_dim(x, nd - 3 + i, o)
    return x.to(dtype)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """3-d adaptive max pooling; returns (values, indices), indices flat over each (D, H, W) plane."""
    import ember
    out = _triple(_list_with_default(output_size, tuple(input.shape)))
    _adaptive_checks("adaptive_max_pool3d", input, ":")
    if len(out) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    nd = input.dim()
    batch = tuple(input.shape[:-3])
    if any(o < 0 for o in out):
        ember.empty(batch + out)  # raises ATen's "Trying to create tensor with negative dimension"
    if not input.is_floating_point():
        raise _not_implemented("adaptive_max_pool3d_cpu", input.dtype)
    sizes = tuple(input.shape[-3:])
    tables = [_bin_table(n, o)[0] for n, o in zip(sizes, out)]
    ks = tuple(t.shape[1] for t in tables)
    win = input
    for i, t in enumerate(tables):
        dim = nd - 3 + 2 * i  # each earlier dim was split into (out, k)
        win = win.index_select(dim, ember.tensor(t.reshape(-1), device=input.device)).unflatten(dim, (out[i], ks[i]))
    b = len(batch)
    # (..., oD, kD, oH, kH, oW, kW) -> (..., oD, oH, oW, kD*kH*kW): one window per output, in (d, h, w) order
    win = win.permute(tuple(range(b)) + (b, b + 2, b + 4, b + 1, b + 3, b + 5)).reshape(batch + out + (math.prod(ks),))
    td, th, tw = tables
    flat = (td[:, None, None, :, None, None] * (sizes[1] * sizes[2]) + th[None, :, None, None, :, None] * sizes[2]
            + tw[None, None, :, None, None, :]).reshape(out + (math.prod(ks),))
    flat = ember.tensor(flat, device=input.device).expand(win.shape)
    # ATen keeps the first maximum, but a NaN always wins, so the last NaN of a window is taken
    kpos = ember.arange(win.shape[-1], device=input.device)
    last_nan = ember.where(win.isnan(), kpos, -1).amax(-1, keepdim=True)
    sel = ember.where(last_nan >= 0, last_nan, win.argmax(-1, keepdim=True))
    return win.gather(-1, sel).squeeze(-1), flat.gather(-1, sel).squeeze(-1)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-d adaptive max pooling; with return_indices=True also the flat (D, H, W) indices."""
    if return_indices:
        return adaptive_max_pool3d_with_indices(input, output_size)
    return adaptive_max_pool3d_with_indices(input, output_size)[0]


# ---- max unpooling ---------------------------------------------------------------------------------
def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch.nn.functional's output size of max_unpoolNd: the default or a checked output_size."""
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has "
                             f"a length of '{len(output_size)}'")
        for d in range(n):
            lo, hi = default[d] - stride[d], default[d] + stride[d]
            if not lo < output_size[d] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return ret


def _max_unpool(input, indices, output_size, nsp, stride=None):
    """ATen's max_unpool2d (nsp=2) / max_unpool3d (nsp=3): scatter each plane's values to their indices."""
    import ember
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
    bad = (flat_idx < 0) | (flat_idx >= plane)
    if input.device.type != "meta" and bad.any().item():  # meta tensors hold no indices to check
        # ATen reports one invalid index: the last one it met when it runs on one thread
        raise RuntimeError(f"Found an invalid max index: {flat_idx[bad][-1].item()} (output volumes are of size "
                           + "x".join(str(s) for s in output_size) + ")")
    out = ember.zeros(batch + (plane,), dtype=input.dtype, device=input.device)
    return out.scatter(-1, flat_idx, input.flatten(-nsp)).reshape(batch + output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool1d: values go back to their indices, zeros elsewhere."""
    kernel_size = _single(kernel_size)
    stride = _single(stride) if stride is not None else kernel_size
    output_size = _unpool_output_size(input, kernel_size, stride, _single(padding), output_size)
    output_size = list(output_size) + [1]
    # as torch: a 2-d unpooling over a trailing width of 1
    return _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), output_size, 2).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool2d: values go back to their indices, zeros elsewhere."""
    kernel_size = _pair(kernel_size)
    stride = _pair(stride) if stride is not None else kernel_size
    output_size = _unpool_output_size(input, kernel_size, stride, _pair(padding), output_size)
    return _max_unpool(input, indices, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool3d: values go back to their indices, zeros elsewhere."""
    kernel_size = _triple(kernel_size)
    stride = _triple(stride) if stride is not None else kernel_size
    output_size = _unpool_output_size(input, kernel_size, stride, _triple(padding), output_size)
    return _max_unpool(input, indices, output_size, 3, stride)


# ---- power-average pooling -------------------------------------------------------------------------
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-d power-average pooling: (sum over the window of x**p) ** (1/p)."""
    kd, kw, kh = _triple(kernel_size)
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool3d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kd * kw * kh, norm_type)
