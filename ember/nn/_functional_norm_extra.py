"""torch.nn.functional's instance_norm, local_response_norm, channel_shuffle and pdist, composed of
ember ops the way torch/nn/functional.py and ATen's composite kernels compose them."""
import operator

import ember
from ember._generated import functions_nn as _nn
from ember._python_api.distance import pdist
from ember.nn._functional_spatial import avg_pool2d, avg_pool3d

__all__ = ["instance_norm", "local_response_norm", "channel_shuffle", "pdist"]


def _verify_spatial_size(size):
    size_prods = 1
    for s in size[2:]:
        size_prods *= s
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalizes each (sample, channel) plane: ATen's instance_norm, a batch_norm over the input
    viewed as (1, N*C, *) with per-channel tensors repeated N times; the running stats get the
    mean over the batch of the N updated copies."""
    if use_input_stats:
        _verify_spatial_size(input.size())
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    b, c = input.size(0), input.size(1)
    shape = list(input.shape)
    shape[0], shape[1] = 1, b * c

    def repeat(t):
        return None if t is None else t.repeat(b)

    running_mean_, running_var_ = repeat(running_mean), repeat(running_var)
    out = ember.batch_norm(input.reshape(shape), repeat(weight), repeat(bias), running_mean_,
                           running_var_, use_input_stats, momentum, eps, False)
    if running_mean is not None:
        running_mean.copy_(running_mean_.view(b, c).mean(0))
    if running_var is not None:
        running_var.copy_(running_var_.view(b, c).mean(0))
    return out.view(input.shape)


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


def channel_shuffle(input, groups):
    """(N, C, *) -> (N, C, *) with the channels, seen as (groups, C // groups), transposed."""
    if isinstance(groups, bool) or not hasattr(type(groups), "__index__"):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not "
                        f"{type(groups).__name__}")
    groups = operator.index(groups)
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    b, c = input.shape[0], input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
                           "groups.")
    rest = 1
    for s in input.shape[2:]:
        rest *= s
    # always a new tensor, as torch's kernel returns (the transpose is a plain view when groups is 1)
    shuffled = input.reshape(b, groups, c // groups, rest).transpose(1, 2)
    return shuffled.clone(memory_format=ember.contiguous_format).view(input.shape)
