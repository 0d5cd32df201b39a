"""torch.nn.functional.affine_grid and grid_sample, composed of ember ops (floor, round, where, gather, bmm).

The sampling follows ATen's CPU grid sampler (aten/src/ATen/native/GridSampler.h and
cpu/GridSamplerKernel.cpp): grid coordinates are unnormalized to pixel space, mapped through the
padding mode (clip_coordinates / reflect_coordinates), and the input is gathered at the integer
neighbours; out-of-range neighbours read 0. Autograd differentiates the composition, which gives
ATen's gradients for input and grid (border points count as outside for the clipping gradient).
"""
import itertools
import warnings

import ember

__all__ = ["affine_grid", "grid_sample"]

_DEFAULT_ALIGN_CORNERS_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
    "Please specify align_corners=True if the old behavior is desired. "
    "See the documentation of grid_sample for details.")

_CUBIC_A = -0.75  # ATen's cubic convolution coefficient (as in upsample_bicubic2d)


def _numel(sizes):
    count = 1
    for s in sizes:
        count *= s
    return count


# ---- affine_grid ---------------------------------------------------------------------------------
def _linspace_from_neg_one(theta, num_steps, align_corners):
    if num_steps <= 1:
        return ember.zeros(1, dtype=theta.dtype, device=theta.device)
    steps = ember.linspace(-1, 1, num_steps, dtype=theta.dtype, device=theta.device)
    if not align_corners:
        steps = steps * (num_steps - 1) / num_steps
    return steps


def _affine_grid_generator(theta, size, align_corners):
    n, spatial = size[0], list(size[2:])
    # one axis of the base grid per spatial dim, ordered x (last dim), y, z, then the homogeneous 1
    axes = [_linspace_from_neg_one(theta, s, align_corners) for s in reversed(spatial)]
    shaped = []
    for k, ax in enumerate(axes):
        view = [1] * len(spatial)
        view[len(spatial) - 1 - k] = spatial[len(spatial) - 1 - k]
        shaped.append(ax.reshape(view).expand(spatial))
    shaped.append(ember.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = ember.stack(shaped, dim=-1)
    npoints = _numel(spatial)
    base = base.reshape(1, npoints, len(spatial) + 1).expand(n, npoints, len(spatial) + 1)
    return base.bmm(theta.transpose(1, 2)).reshape([n] + spatial + [len(spatial)])


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, *spatial, k) of the affine maps `theta` (N, k, k+1) over an output of `size`."""
    if align_corners is None:
        warnings.warn(_DEFAULT_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got {theta.shape}.")
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got {theta.shape}.")
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {size}.")
    if align_corners and min(spatial_size) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. "
            "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return _affine_grid_generator(theta, [int(s) for s in size], align_corners)


# ---- grid_sample: coordinate maps ----------------------------------------------------------------
def _unnormalize(coord, size, align_corners):
    # [-1, 1] -> pixel index: the corner pixels' centres (align_corners) or their outer edges
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return (coord + 1) * (size / 2) - 0.5


def _clip_coordinates(x, size):
    # where() rather than clamp: ATen counts the borders as outside (zero gradient there)
    x = ember.where(x <= 0, 0.0, x)
    return ember.where(x >= size - 1, float(size - 1), x)


def _zeros_from(x):
    """Zeros shaped like x that keep x in the autograd graph with a zero gradient (as ATen's backward)."""
    return ember.where(ember.zeros_like(x, dtype=ember.bool), x, 0.0)


def _reflect_coordinates(x, twice_low, twice_high):
    if twice_low == twice_high:
        return _zeros_from(x)  # a one-pixel span reflects everything onto 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = x - low
    x = ember.where(x < 0, -x, x)  # |x| with gradient -1/+1 (ATen's sign, +1 at 0)
    flips = ember.floor(x / span)
    extra = x - flips * span
    return ember.where(ember.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _compute_coordinates(x, size, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip_coordinates(x, size)
    if padding_mode == "reflection":
        if align_corners:
            x = _reflect_coordinates(x, 0, 2 * (size - 1))
        else:
            x = _reflect_coordinates(x, -1, 2 * size - 1)
        return _clip_coordinates(x, size)
    return x


# ---- grid_sample: gathering ----------------------------------------------------------------------
def _gather(flat, coords, sizes):
    """flat (N, C, L) read at integer-valued float coords [(N, P) for x, y, z]; outside reads 0."""
    mask = None
    index = None
    stride = 1
    for c, size in zip(coords, reversed(sizes)):
        inside = (c > -1) & (c < size)
        mask = inside if mask is None else mask & inside
        stride_index = stride * ember.where(inside, c, 0.0).long()
        index = stride_index if index is None else index + stride_index
        stride *= size
    n, ch, p = flat.shape[0], flat.shape[1], index.shape[1]
    vals = flat.gather(2, index.unsqueeze(1).expand(n, ch, p))
    return ember.where(mask.unsqueeze(1), vals, 0.0)


def _cubic_coefficients(t):
    def conv1(x):
        return ((_CUBIC_A + 2) * x - (_CUBIC_A + 3)) * x * x + 1

    def conv2(x):
        return ((_CUBIC_A * x - 5 * _CUBIC_A) * x + 8 * _CUBIC_A) * x - 4 * _CUBIC_A

    rest = 1.0 - t
    return [conv2(t + 1.0), conv1(t), conv1(rest), conv2(rest + 1.0)]


def _check_grid_sampler(input, grid, mode):
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got grid "
            f"with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                f"{list(input.shape)} with dimension {i} being empty")
    nd = 4 if input.dim() == 4 else 5
    if input.dim() != nd or grid.dim() != nd:
        raise RuntimeError(
            f"grid_sampler(): expected {nd}D input and grid with same number of dimensions, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if nd == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        kernel = "grid_sampler_2d_cpu_kernel_impl" if nd == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{input.dtype._short}\'')
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype._short} but found {grid.dtype._short}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample `input` (N, C, *in_spatial) at the normalized points of `grid` (N, *out_spatial, k)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_DEFAULT_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    _check_grid_sampler(input, grid, mode)

    n, ch = input.shape[0], input.shape[1]
    sizes = list(input.shape[2:])
    out_spatial = list(grid.shape[1:-1])
    k = len(sizes)
    # explicit sizes: -1 is ambiguous when N or C is 0
    flat = input.reshape(n, ch, _numel(sizes))
    points = grid.reshape(n, _numel(out_spatial), k)
    # grid component j indexes spatial dim k-1-j (x -> W, y -> H, z -> D)
    unnorm = [_unnormalize(points[:, :, j], sizes[k - 1 - j], align_corners) for j in range(k)]

    if mode == "bicubic":
        x, y = unnorm
        x0, y0 = ember.floor(x), ember.floor(y)
        wx, wy = _cubic_coefficients(x - x0), _cubic_coefficients(y - y0)
        out = None
        for j in range(4):
            ty = _compute_coordinates(y0 + (j - 1), sizes[0], padding_mode, align_corners)
            row = None
            for i in range(4):
                tx = _compute_coordinates(x0 + (i - 1), sizes[1], padding_mode, align_corners)
                term = _gather(flat, [tx, ty], sizes) * wx[i].unsqueeze(1)
                row = term if row is None else row + term
            row = row * wy[j].unsqueeze(1)
            out = row if out is None else out + row
    else:
        src = [_compute_coordinates(u, sizes[k - 1 - j], padding_mode, align_corners)
               for j, u in enumerate(unnorm)]
        if mode == "nearest":
            nearest = [ember.round(s) for s in src]  # nearbyint: half to even
            out = _gather(flat, nearest, sizes)
            # the output depends on grid only through indices; ATen still gives grid a zero gradient
            for r in nearest:
                out = out + _zeros_from(r).unsqueeze(1)
        else:
            lo = [ember.floor(s) for s in src]
            out = None
            for corner in itertools.product((0, 1), repeat=k):
                weight = None
                for s, c0, hi in zip(src, lo, corner):
                    w = s - c0 if hi else (c0 + 1) - s
                    weight = w if weight is None else weight * w
                term = _gather(flat, [c0 + hi for c0, hi in zip(lo, corner)], sizes) * weight.unsqueeze(1)
                out = term if out is None else out + term
    return out.reshape([n, ch] + out_spatial)
