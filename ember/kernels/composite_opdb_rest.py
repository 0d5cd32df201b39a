"""Compositions for op_db's remaining CPU operators: the softmax family's _softmax_backward_data and
_safe_softmax, native_dropout_backward, _unsafe_masked_index(_put_accumulate) and _batch_norm_with_update.

Each is written with ember ops, so autograd runs through the composition: the gradients are those of
PyTorch's explicit formulas (a softmax backward is linear in grad; a masked index's backward is the
masked accumulate and the other way round)."""
import numpy as np

import ember
from ember._generated import ops as _ops
from ember.core.errors import wrap_dim


# ---- softmax ------------------------------------------------------------------------------------
def softmax_backward_data(grad_output, output, dim, input_dtype):
    g, o = grad_output, output
    if tuple(g.shape) != tuple(o.shape):
        raise RuntimeError(f"Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 "
                           f"'output'; but {list(g.shape)} does not equal {list(o.shape)} (while checking "
                           "arguments for softmax_backward)")
    n = max(g.ndim, 1)
    d = wrap_dim(dim, g.ndim)
    if not g.is_floating_point():
        kernel = "softmax_backward_lastdim_kernel_impl" if d == n - 1 else "softmax_backward_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{g.dtype._short}'")
    # the CPU kernel writes grad's dtype; PyTorch's half_to_float form (float grad, Half input) has no CPU kernel
    if g.dtype == ember.float32 and input_dtype == ember.float16:
        raise RuntimeError("expected scalar type Float but found Half")
    if o.dtype != g.dtype:
        raise RuntimeError(f"expected scalar type {g.dtype._short} but found {o.dtype._short}")
    return o * (g - (g * o).sum(dim, True))


def safe_softmax(self, dim, dtype=None):
    # softmax, except that a slice along `dim` that is -inf everywhere gives zeros instead of NaNs. Those
    # slices are softmaxed as zeros and then zeroed, so their gradient is zero as in PyTorch's formula
    # (_softmax_backward_data of a zero result) instead of NaN
    dead = self.eq(float("-inf")).all(dim, True)
    out = _ops.softmax_int.call(_ops.where_ScalarOther.call(dead, 0, self), dim, dtype)
    return _ops.where_ScalarOther.call(dead, 0, out)


# ---- dropout ------------------------------------------------------------------------------------
def native_dropout_backward(grad_output, mask, scale):
    return grad_output * mask * scale


# ---- masked indexing ----------------------------------------------------------------------------
def _clamped(self, indices):
    """PyTorch's clamp of each index to [-size, size - 1] (masked-off indices may be out of range)."""
    out = []
    for i, index in enumerate(indices):
        if index is not None:
            if index.dtype not in (ember.int64, ember.int32):
                raise RuntimeError(f"_unsafe_masked_index found unexpected index type {index.dtype._short}")
            size = self.shape[i] if i < self.ndim else 0
            index = index.clamp(-size, size - 1) if size else ember.full_like(index, -1)
        out.append(index)
    return out


def unsafe_masked_index(self, mask, indices, fill):
    clamped = _clamped(self, indices)
    if self.numel() == 0:
        # a dimension of size 0 that is indexed reads one fill value (every index there is clamped to -1)
        sizes = [1 if i < len(indices) and indices[i] is not None and s == 0 else s
                 for i, s in enumerate(self.shape)]
        return _ops.index_Tensor.call(self.new_full(sizes, fill), clamped)
    return _ops.index_Tensor.call(self, clamped).masked_fill(mask.logical_not(), fill)


def unsafe_masked_index_put_accumulate(self, mask, indices, values):
    clamped = _clamped(self, indices)
    if self.numel() == 0:
        return self.clone()
    return _ops.index_put.call(self, clamped, values.masked_fill(mask.logical_not(), 0), True)


# ---- batch norm ---------------------------------------------------------------------------------
def batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    out, save_mean, save_invstd = _ops.native_batch_norm.call(input, weight, bias, running_mean, running_var, True,
                                                              momentum, eps)
    # the fourth result is cuDNN's reserve space: empty on the CPU
    return out, save_mean, save_invstd, ember.empty(0, dtype=ember.uint8, device=input.device)


# ---- segment_reduce -----------------------------------------------------------------------------
_SEGMENT_REDUCE = {"max": "amax", "amax": "amax", "min": "amin", "amin": "amin", "sum": "sum", "prod": "prod",
                   "mean": "mean"}
_SEGMENT_EMPTY = {"amax": float("-inf"), "amin": float("inf"), "sum": 0.0, "prod": 1.0, "mean": 0.0}


def segment_reduce(data, reduce, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    # one scatter_reduce along `axis` into a buffer that starts at `initial` (or the reduction's identity):
    # position p of a row goes to the segment whose end offset is the first one above p, and positions
    # outside every segment go to one extra slot that is cut off. Its backward is PyTorch's
    # _segment_reduce_backward (ties of max/min share the gradient; prod's zeros get the others' product)
    op = _SEGMENT_REDUCE.get(reduce)
    if op is None:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None and lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    axis = wrap_dim(axis, data.ndim)
    seg = lengths if lengths is not None else offsets
    if data.ndim < seg.ndim:
        raise RuntimeError("Expected data.dim() >= lengths_value.dim() to be true, but got false.  (Could this "
                           "error message be improved?  If so, please report an enhancement request to PyTorch.)")
    if seg.dtype not in (ember.int64, ember.int32):
        kind = "lengths" if lengths is not None else "offsets"
        raise NotImplementedError(f"\"_segment_reduce_{kind}_cpu_kernel1\" not implemented for '{seg.dtype._short}'")
    if not data.is_floating_point():
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for '{data.dtype._short}'")
    size = data.shape[axis]
    if lengths is not None:
        if not unsafe:
            if bool((lengths < 0).any()):
                raise RuntimeError("lengths contains negative value!")
            if not bool((lengths.sum(-1) == size).all()):
                raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                                   "data.size(lengths.dim()-1) when !unsafe.")
        ends, counts = lengths.cumsum(-1), lengths
        starts = ends - lengths
    else:
        ends, starts = offsets[..., 1:], offsets[..., :-1]
        counts = ends - starts
        if bool((counts < 0).any()):
            raise RuntimeError("Expected segment_length >= 0 to be true, but got false.  (Could this error message "
                               "be improved?  If so, please report an enhancement request to PyTorch.)")
    nseg = counts.shape[-1]
    # the segment of every position along axis, per row of the leading dimensions: nseg where it is in none
    pos = ember.arange(size, device=data.device).expand(tuple(counts.shape[:-1]) + (size,)).contiguous()
    ids = ember.searchsorted(ends.contiguous(), pos, right=True)
    ids = ids.masked_fill((pos < starts[..., :1]) | (ids >= nseg), nseg)
    tail = data.ndim - axis - 1
    ids = ids.reshape(tuple(ids.shape) + (1,) * tail).expand(tuple(data.shape))
    # max/min meet `initial` after the scatter: a tie with it sends the whole gradient to the data, as PyTorch's
    start = initial if initial is not None and op in ("sum", "prod") else _SEGMENT_EMPTY[op]
    shape = tuple(data.shape[:axis]) + (nseg + 1,) + tuple(data.shape[axis + 1:])
    red = "sum" if op == "mean" else op
    work = data.float() if data.dtype in (ember.float16, ember.bfloat16) else data  # half types sum in float
    out = ember.full(shape, start, dtype=work.dtype, device=data.device)
    out = out.scatter_reduce(axis, ids, work, red, include_self=True).narrow(axis, 0, nseg)
    if initial is not None and op in ("amax", "amin"):
        init = ember.full((), initial, dtype=work.dtype, device=data.device)
        out = ember.where(out < init if op == "amax" else out > init, init, out)
    elif op == "mean":
        n = counts.reshape(tuple(counts.shape) + (1,) * tail).to(work.dtype)
        if initial is not None:
            out = ember.where(n == 0, ember.full((), initial, dtype=work.dtype, device=data.device),
                              (out + initial) / n)
        else:
            out = out / n
    return out.to(data.dtype)


# ---- anti-aliased bilinear upsampling ------------------------------------------------------------
def _aa_weights(in_size, out_size, align_corners, scale, dt):
    """The (out_size, in_size) matrix of PyTorch's anti-aliased linear interpolation along one dimension: each
    output pixel averages the input pixels under a triangle filter stretched by the scale when downsampling
    (its support is `scale` pixels each side instead of 1), with its weights normalised to sum to 1. Computed
    in the input's dtype `dt` (float32 or float64), as PyTorch's kernel computes them."""
    if align_corners:
        s = dt((in_size - 1) / (out_size - 1) if out_size > 1 else 0.0)
    else:
        s = dt(1.0 / scale if scale is not None and scale > 0 else in_size / out_size)
    one, half = dt(1.0), dt(0.5)
    support = s if s >= one else one
    inv = one / s if s >= one else one
    w = np.zeros((out_size, in_size), dt)
    for i in range(out_size):
        center = s * (dt(i) + half)
        lo = max(int(center - support + half), 0)
        hi = min(int(center + support + half), in_size)
        f = np.maximum(one - np.abs((np.arange(lo, hi).astype(dt) - center + half) * inv), dt(0.0))
        total = dt(0.0)
        for v in f:  # summed in order, in dt
            total = dt(total + v)
        w[i, lo:hi] = f / total if total != 0.0 else f
    return w


def upsample_bilinear2d_aa(self, output_size, align_corners, scales_h=None, scales_w=None):
    if self.ndim != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {self.ndim}")
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    n, c, ih, iw = self.shape
    oh, ow = output_size
    if not (ih > 0 and iw > 0 and oh > 0 and ow > 0):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (H: {ih}, W: {iw}) "
                           f"output (H: {oh}, W: {ow})")
    if self.dtype not in (ember.float32, ember.float64, ember.uint8):
        raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for '{self.dtype._short}'")
    work = ember.float32 if self.dtype == ember.uint8 else self.dtype
    dt = np.float64 if work == ember.float64 else np.float32
    wh = ember.tensor(_aa_weights(ih, oh, align_corners, scales_h, dt), device=self.device)
    ww = ember.tensor(_aa_weights(iw, ow, align_corners, scales_w, dt), device=self.device)
    # the width pass first, then the height pass, as PyTorch's separable kernel
    out = wh.matmul(self.to(work).matmul(ww.t()))
    if self.dtype == ember.uint8:
        out = out.round().clamp(0, 255).to(ember.uint8)
    # a channels-last input gives a channels-last result (PyTorch allocates it with the input's memory format)
    if self.is_contiguous(memory_format=ember.channels_last) and not self.is_contiguous():
        out = out.clone(memory_format=ember.channels_last)
    return out


def upsample_bilinear2d_aa_vec(input, output_size, align_corners, scale_factors):
    from ember.kernels.composite_nn_spatial import _output_size
    osize = _output_size(input.shape, output_size, scale_factors)
    h, w = (None, None) if scale_factors is None else scale_factors
    return _ops._upsample_bilinear2d_aa.call(input, osize, align_corners, h, w)
