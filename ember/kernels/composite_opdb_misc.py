"""Thin compositions for op_db entries: grid_sampler_2d/3d, _native_batch_norm_legit, empty_permuted."""
import ember
from ember._generated import ops as _ops

_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    if interpolation_mode not in _MODES:
        raise RuntimeError(f"grid_sampler(): expected interpolation_mode to be 0, 1 or 2, but got "
                           f"{interpolation_mode}")
    if padding_mode not in _PADDING:
        raise RuntimeError(f"grid_sampler(): expected padding_mode to be 0, 1 or 2, but got {padding_mode}")
    return ember.nn.functional.grid_sample(input, grid, mode=_MODES[interpolation_mode],
                                           padding_mode=_PADDING[padding_mode], align_corners=align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def native_batch_norm_legit(input, weight, bias, running_mean, running_var, training, momentum, eps):
    return _ops.native_batch_norm.call(input, weight, bias, running_mean, running_var, training, momentum, eps)


def native_batch_norm_legit_no_stats(input, weight, bias, training, momentum, eps):
    return _ops.native_batch_norm.call(input, weight, bias, None, None, training, momentum, eps)


def empty_permuted(size, physical_layout, dtype=None, layout=None, device=None, pin_memory=None):
    size, perm = list(size), list(physical_layout)
    if len(size) != len(perm):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(perm)}")
    seen = set()
    for i, p in enumerate(perm):
        if not 0 <= p < len(perm):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(perm) - 1}, but got {p} "
                               f"at index {i}).  NB: negative dims not currently supported; file an issue if you "
                               "want it.")
        if p in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(p)
    phys = _ops.empty_memory_format.call([size[p] for p in perm], dtype, layout, device, pin_memory, None)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return phys.permute(inverse)

