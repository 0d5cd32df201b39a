"""Meta functions of shape-manipulating copies (cat, stack, flip, roll, repeat, tril, ...): output
shape, dtype and (where PyTorch keeps the input's layout) strides, with PyTorch's checks. The
checks are shared with the CPU kernels (ember/kernels/cpu/shape.py), which work on shapes too."""
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape, wrap_dim, wrap_dims
from ember.core.layout import preserve_strides


# ---- checks and shapes on plain tuples (shared with the CPU kernels) ----------------------------
def _skip(shape):
    return len(shape) == 1 and shape[0] == 0  # legacy: 1-D empty tensors are ignored by cat


def cat_shape(shapes, dim):
    """Output shape of cat over `shapes`, and the indices of the tensors that take part."""
    if not shapes:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, s in enumerate(shapes):
        if not s:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    valid = [i for i, s in enumerate(shapes) if not _skip(s)]
    if not valid:
        return (0,), valid, 0
    first = shapes[valid[0]]
    n = len(first)
    d = wrap_dim(dim, n)
    total = 0
    for i in valid:
        s = shapes[i]
        if len(s) != n:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {n} and {len(s)}")
        for k in range(n):
            if k != d and s[k] != first[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                                   f"size {first[k]} but got size {s[k]} for tensor number {i} in "
                                   "the list.")
        total += s[d]
    return first[:d] + (total,) + first[d + 1:], valid, d


def stack_shape(shapes, dim):
    if not shapes:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = shapes[0]
    d = wrap_dim(dim, len(first) + 1)
    for i, s in enumerate(shapes[1:], 1):
        if s != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{fmt_shape(first)} at entry 0 and {fmt_shape(s)} at entry {i}")
    return first[:d] + (len(shapes),) + first[d:], d


def promote(dtypes):
    r = dtypes[0]
    for d in dtypes[1:]:
        if d is not r:
            r = _dt.promote_types(r, d)
    return r


def flip_dims(ndim, dims):
    return wrap_dims(dims, ndim)


def roll_check(ndim, shifts, dims):
    shifts, dims = tuple(shifts), tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return shifts, None
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    return shifts, tuple(wrap_dim(d, ndim) for d in dims)


def repeat_shape(shape, repeats):
    repeats = tuple(repeats)
    if len(repeats) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    out = tuple(p * r for p, r in zip(padded, repeats))
    for s in out:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{fmt_shape(out)}")
    return out


def tri_check(ndim, name):
    if ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")


# empty_like(input, preserve_format)'s strides: the input's own when dense, else a dense layout in
# its dimension order (one rule in ember/core/layout.py)
dense_strides = preserve_strides


def ri_int_check(ndim, repeats, dim):
    d = wrap_dim(0 if dim is None else dim, ndim)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if dim is not None and ndim == 0:
        wrap_dim(d + 1, 1)  # PyTorch unsqueezes the 0-d input at dim + 1
    return d


def ri_int_shape(shape, repeats, dim, output_size):
    d = ri_int_check(len(shape), repeats, dim)
    if dim is None:
        n = 1
        for s in shape:
            n *= s
        shape = (n,)
    out = shape[:d] + (shape[d] * repeats,) + shape[d + 1:]
    if output_size is not None and output_size != out[d]:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {out[d]} but got "
                           f"{output_size}")
    return out


def ri_repeats_check(rdtype, rshape):
    if len(rshape) != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if rdtype not in (_dt.int64, _dt.int32):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for \'{rdtype._short}\'')


def ri_self_tensor_check(shape, rdtype, rshape, dim):
    """(input shape after flattening, dim, whether repeats broadcast)."""
    if dim is None:
        n = 1
        for s in shape:
            n *= s
        shape, dim = (n,), 0
    if len(shape) == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, len(shape))
    if len(rshape) == 0 or (len(rshape) == 1 and rshape[0] == 1):
        pass
    elif len(rshape) == 1:
        if rshape[0] != shape[d]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {rshape[0]} and input.size({d}) = {shape[d]}")
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if rdtype not in (_dt.int64, _dt.int32):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for \'{rdtype._short}\'')
    return shape, d


# ---- meta functions ------------------------------------------------------------------------------
def cat(tensors, dim=0):
    shape, _, _ = cat_shape([t._shape for t in tensors], dim)
    return shape, promote([t._dtype for t in tensors])


def stack(tensors, dim=0):
    shape, _ = stack_shape([t._shape for t in tensors], dim)
    return shape, promote([t._dtype for t in tensors])


def flip(t, dims):
    flip_dims(len(t._shape), dims)
    return t._shape, t._dtype, dense_strides(t._shape, t.stride())


def roll(t, shifts, dims=()):
    roll_check(len(t._shape), shifts, dims)
    return t._shape, t._dtype


def repeat(t, repeats):
    return repeat_shape(t._shape, repeats), t._dtype


def tril(t, diagonal=0):
    tri_check(len(t._shape), "tril")
    return t._shape, t._dtype


def triu(t, diagonal=0):
    tri_check(len(t._shape), "triu")
    return t._shape, t._dtype


def repeat_interleave_self_int(t, repeats, dim=None, output_size=None):
    return ri_int_shape(t._shape, repeats, dim, output_size), t._dtype


def repeat_interleave_self_tensor(t, repeats, dim=None, output_size=None):
    shape, d = ri_self_tensor_check(t._shape, repeats._dtype, repeats._shape, dim)
    if output_size is None:
        raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
    return shape[:d] + (output_size,) + shape[d + 1:], t._dtype


def repeat_interleave_tensor(repeats, output_size=None):
    ri_repeats_check(repeats._dtype, repeats._shape)
    if output_size is None:
        raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
    return (output_size,), repeats._dtype
