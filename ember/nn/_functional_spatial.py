"""torch.nn.functional's convolution, pooling (lp_pool*, adaptive, max unpooling), embedding, padding,
upsampling, fold/unfold and pixel shuffle functions (signatures and Python-level logic of
torch/nn/functional.py); the operators are in ember/ops/native_functions/nn_spatial.yaml.

F.pad is ember/nn/functional.py's (torch._C._nn.pad, nn_basic.yaml); its non-constant modes call this
family's reflection_pad*/replication_pad*/_pad_circular operators, so autograd records PyTorch's
nodes (ReflectionPad2DBackward0, ...).
"""
import math
import warnings

import numpy as np

from ember._generated import functions as _f
from ember._generated import functions_nn as _nn
from ember.kernels.cpu.nn_spatial import area_pixel_scale

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "adaptive_avg_pool3d", "lp_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "embedding", "embedding_bag", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
    "unfold", "fold", "pixel_shuffle", "pixel_unshuffle",
]

# the bindings PyTorch exposes directly (torch.conv2d is torch.nn.functional.conv2d)
conv1d = _f.conv1d
conv2d = _f.conv2d
conv3d = _f.conv3d
conv_transpose1d = _f.conv_transpose1d
conv_transpose2d = _f.conv_transpose2d
conv_transpose3d = _f.conv_transpose3d
avg_pool1d = _f.avg_pool1d
avg_pool2d = _nn.avg_pool2d
avg_pool3d = _nn.avg_pool3d
adaptive_avg_pool1d = _f.adaptive_avg_pool1d
pixel_shuffle = _f.pixel_shuffle
pixel_unshuffle = _f.pixel_unshuffle


def _ntuple(n):
    def parse(x):
        if isinstance(x, (list, tuple)):
            return tuple(x)
        return (x,) * n
    return parse


_single, _pair, _triple = _ntuple(1), _ntuple(2), _ntuple(3)


# ---- max pooling (boolean dispatch on return_indices, as torch.nn.functional) ----------------------
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _f.max_pool1d_with_indices(input, kernel_size, () if stride is None else stride, padding,
                                      dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _nn.max_pool2d_with_indices(input, kernel_size, () if stride is None else stride, padding,
                                       dilation, ceil_mode)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _nn.max_pool3d_with_indices(input, kernel_size, () if stride is None else stride, padding,
                                       dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _f.max_pool1d(input, kernel_size, () if stride is None else stride, padding, dilation,
                         ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _f.max_pool2d(input, kernel_size, () if stride is None else stride, padding, dilation,
                         ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _f.max_pool3d(input, kernel_size, () if stride is None else stride, padding, dilation,
                         ceil_mode)


def _lp_finish(out, k, norm_type):
    import ember
    return (ember.sign(out) * ember.relu(ember.abs(out))).mul(k).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool1d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kernel_size, norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = _pair(kernel_size)
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool2d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return _lp_finish(out, kw * kh, norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
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

# ---- adaptive pooling ------------------------------------------------------------------------------
def _list_with_default(out_size, defaults):
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _f.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    if return_indices:
        return adaptive_max_pool1d_with_indices(input, output_size)
    return _f.adaptive_max_pool1d(input, output_size)[0]


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    output_size = _pair(_list_with_default(output_size, tuple(input.shape)))
    return _nn.adaptive_max_pool2d(input, output_size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    if return_indices:
        return adaptive_max_pool2d_with_indices(input, output_size)
    return adaptive_max_pool2d_with_indices(input, output_size)[0]


def adaptive_avg_pool2d(input, output_size):
    return _nn.adaptive_avg_pool2d(input, _pair(_list_with_default(output_size, tuple(input.shape))))



def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    output_size = _triple(_list_with_default(output_size, tuple(input.shape)))
    return _nn.adaptive_max_pool3d(input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    if return_indices:
        return adaptive_max_pool3d_with_indices(input, output_size)
    return adaptive_max_pool3d_with_indices(input, output_size)[0]


def adaptive_avg_pool3d(input, output_size):
    return _nn.adaptive_avg_pool3d(input, _triple(_list_with_default(output_size, tuple(input.shape))))


# ---- max unpooling (partial inverses of max_pool*d) --------------------------------------------------
def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """torch.nn.functional's output size of max_unpoolNd: the default or a checked output_size."""
    n = len(kernel_size)
    input_size = input.size()
    default = [(input_size[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has "
                             f"a length of '{len(output_size)}'")
        for d in range(n):
            min_size, max_size = default[d] - stride[d], default[d] + stride[d]
            if not (min_size < output_size[d] < max_size):
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {min_size} and '
                                 f'{max_size})')
        ret = output_size
    for d in range(n):
        if ret[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={ret[d]}")
    return ret


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _single(kernel_size)
    _stride = _single(stride) if stride is not None else kernel_size
    padding = _single(padding)
    output_size = _unpool_output_size(input, kernel_size, _stride, padding, output_size)
    if isinstance(output_size, list):
        output_size = output_size + [1]
    else:
        output_size = output_size + (1,)
    return _nn.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), output_size).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _pair(kernel_size)
    _stride = _pair(stride) if stride is not None else kernel_size
    padding = _pair(padding)
    output_size = _unpool_output_size(input, kernel_size, _stride, padding, output_size)
    return _nn.max_unpool2d(input, indices, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _triple(kernel_size)
    _stride = _triple(stride) if stride is not None else kernel_size
    padding = _triple(padding)
    output_size = _unpool_output_size(input, kernel_size, _stride, padding, output_size)
    return _nn.max_unpool3d(input, indices, output_size, _stride, padding)

# ---- embedding ---------------------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        _f.embedding_renorm_(weight.detach(), input, max_norm, norm_type)
    return _f.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    import ember
    if weight.dtype == ember.long and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
                         f"then it must have the same shape as the input ({input.shape})")
    if not weight.dim() == 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a "
                             "mini-batch of fixed length sequences. However, found offsets of type "
                             f"{type(offsets)}")
        offsets = ember.arange(0, input.numel(), input.size(1), dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode == "sum":
        mode_enum = 0
    elif mode == "mean":
        mode_enum = 1
    elif mode == "max":
        mode_enum = 2
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    else:
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _f.embedding_renorm_(weight.detach(), input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
            f"mode='sum' (got mode='{mode}'). Please open a feature request on GitHub.")
    return _f.embedding_bag(weight, input, offsets, scale_grad_by_freq, mode_enum, sparse,
                            per_sample_weights, include_last_offset, padding_idx)[0]


# ---- interpolation -------------------------------------------------------------------------------------
def _is_integer(x):
    import ember
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, ember.Tensor) and not x.is_floating_point()


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            output_size = [int(x) for x in size]
        else:
            output_size = [size for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = scale_factor
        else:
            scale_factors = [scale_factor for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [int(math.floor(float(input.size(i + 2) * scale_factors[i]))) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
                         "requires a 4-D tensor as input")
    if scale_factors is not None:
        scale_factors = [float(s) for s in scale_factors]
    nd = input.dim()
    if mode == "nearest" and nd in (3, 4):
        fn = _nn.upsample_nearest1d if nd == 3 else _nn.upsample_nearest2d
        return fn(input, output_size, scale_factors)
    if mode == "nearest-exact" and nd in (3, 4):
        fn = _nn._upsample_nearest_exact1d if nd == 3 else _nn._upsample_nearest_exact2d
        return fn(input, output_size, scale_factors)
    if mode == "area" and nd in (3, 4):
        return adaptive_avg_pool1d(input, output_size) if nd == 3 else adaptive_avg_pool2d(input, output_size)
    if nd == 3 and mode == "linear":
        return _nn.upsample_linear1d(input, output_size, align_corners, scale_factors)
    if nd == 4 and mode == "bilinear":
        if antialias:
            return _nn._upsample_bilinear2d_aa(input, output_size, align_corners, scale_factors)
        return _nn.upsample_bilinear2d(input, output_size, align_corners, scale_factors)
    if nd == 5 and mode == "area":
        return adaptive_avg_pool3d(input, output_size)
    if nd == 5 and mode in ("nearest", "nearest-exact", "trilinear"):
        # upsample_nearest3d / _upsample_nearest_exact3d / upsample_trilinear3d: ATen interpolates one
        # spatial dim after another (innermost first); the 1-d kernels along each dim give its values
        if mode == "nearest":
            return _per_dim(input, output_size, scale_factors, _nn.upsample_nearest1d)
        if mode == "nearest-exact":
            return _per_dim(input, output_size, scale_factors, _nn._upsample_nearest_exact1d)
        return _per_dim(input, output_size, scale_factors,
                        lambda x, o, s: _nn.upsample_linear1d(x, o, align_corners, s))
    if nd == 4 and mode == "bicubic":
        if antialias:
            raise NotImplementedError("interpolate: antialias=True is not supported by ember")
        return _bicubic2d(input, output_size, scale_factors, align_corners)
    if nd == 4 and mode == "lanczos":
        raise NotImplementedError(f"interpolate: mode '{mode}' is not supported by ember")
    if nd == 3 and mode == "bilinear":
        raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
    if nd == 3 and mode == "trilinear":
        raise NotImplementedError("Got 3D input, but trilinear mode needs 5D input")
    if nd == 4 and mode == "linear":
        raise NotImplementedError("Got 4D input, but linear mode needs 3D input")
    if nd == 4 and mode == "trilinear":
        raise NotImplementedError("Got 4D input, but trilinear mode needs 5D input")
    if nd == 5 and mode == "linear":
        raise NotImplementedError("Got 5D input, but linear mode needs 3D input")
    if nd == 5 and mode == "bilinear":
        raise NotImplementedError("Got 5D input, but bilinear mode needs 4D input")
    raise NotImplementedError(
        "Input Error: Only 3D, 4D and 5D input Tensors supported"
        f" (got {nd}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
        f"area | nearest-exact (got {mode})")


def _per_dim(input, output_size, scale_factors, op1d):
    """A separable N-d upsampling as the 1-d op along each spatial dim, the innermost first (the order
    of ATen's nested interpolation, so the values are the N-d kernel's)."""
    x = input
    k = input.dim() - 2
    for i in reversed(range(k)):
        xt = x.movedim(2 + i, -1)
        lead = tuple(xt.shape[:-1])
        rows = 1
        for n in lead[1:]:
            rows *= n
        y = op1d(xt.reshape(lead[0], rows, xt.shape[-1]),
                 None if output_size is None else [output_size[i]],
                 None if scale_factors is None else [scale_factors[i]])
        x = y.reshape(lead + (y.shape[-1],)).movedim(-1, 2 + i)
    return x.contiguous()


def _cubic_taps(n_in, n_out, align_corners, scale, opdt):
    """(indices (4, n_out), weights (4, n_out)) of ATen's compute_indices_weights_cubic (A = -0.75):
    the four input positions around each output's source position, clamped to the input, and their
    cubic-convolution coefficients, computed in the op's math dtype `opdt`."""
    t = opdt.type
    sc = area_pixel_scale(n_in, n_out, align_corners, scale, t)
    j = np.arange(n_out).astype(opdt)
    src = sc * j if align_corners else sc * (j + t(0.5)) - t(0.5)  # cubic: no clamping at 0
    i0 = np.floor(src)
    frac = (src - i0).astype(opdt)
    a = t(-0.75)

    def conv1(x):
        return ((a + t(2)) * x - (a + t(3))) * x * x + t(1)

    def conv2(x):
        return ((a * x - t(5) * a) * x + t(8) * a) * x - t(4) * a
    w = np.stack([conv2(frac + t(1)), conv1(frac), conv1(t(1) - frac), conv2(t(1) - frac + t(1))])
    idx = np.stack([np.clip(i0.astype(np.int64) - 1 + k, 0, n_in - 1) for k in range(4)])
    return idx, w.astype(opdt)


def _bicubic2d(input, output_size, scale_factors, align_corners):
    """upsample_bicubic2d as ember ops (so autograd follows): along each spatial dim, innermost first,
    the weighted sum of four clamped neighbours (ATen's cpu_upsample_generic<..., 2, 4>)."""
    import ember
    if not input.is_floating_point():
        raise NotImplementedError(f"\"compute_indices_weights_cubic\" not implemented for '{input.dtype._short}'")
    if output_size is None:
        output_size = [int(math.floor(input.shape[2 + i] * scale_factors[i])) for i in range(2)]
    if any(n <= 0 for n in output_size) or any(n <= 0 for n in input.shape[2:]):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (H: "
                           f"{input.shape[2]}, W: {input.shape[3]}) output (H: {output_size[0]}, W: "
                           f"{output_size[1]})")
    low = input.dtype in (ember.float16, ember.bfloat16)
    x = input.float() if low else input
    opdt = np.float64 if x.dtype == ember.float64 else np.float32
    for i in (1, 0):
        ax = 2 + i
        idx, w = _cubic_taps(x.shape[ax], output_size[i],
                             align_corners, None if scale_factors is None else scale_factors[i], np.dtype(opdt))
        shape = [1] * x.dim()
        shape[ax] = output_size[i]
        out = None
        for k in range(4):
            term = x.index_select(ax, ember.from_numpy(idx[k]).to(x.device)) * \
                ember.from_numpy(w[k]).to(x.device).reshape(shape)
            out = term if out is None else out + term
        x = out
    return (x.to(input.dtype) if low else x).contiguous()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- fold / unfold --------------------------------------------------------------------------------------
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _nn.im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _nn.col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding),
                      _pair(stride))
