"""Metadata of views: (shape, strides, storage offset) computed from the input's (ATen's view rules).

The geometry functions (`*_geom`) work on plain tuples (shape, strides, offset) in elements so the
CPU kernels can reuse them when NumPy's own view would have different strides than PyTorch's.
"""
from ember.core.errors import fmt_shape, wrap_dim, wrap_dims

VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")

_LEGACY = {"Float": "torch.FloatTensor", "Double": "torch.DoubleTensor", "Half": "torch.HalfTensor",
           "Long": "torch.LongTensor", "Int": "torch.IntTensor", "Short": "torch.ShortTensor",
           "Char": "torch.CharTensor", "Byte": "torch.ByteTensor"}


def type_str(short, device_type="cpu"):
    """PyTorch's toString() of a tensor type, as in error messages (torch.FloatTensor, MetaFloatType)."""
    if device_type == "cpu":
        legacy = _LEGACY.get(short)
        if legacy is not None:
            return legacy
        return f"CPU{short}Type"
    return f"{device_type.capitalize()}{short}Type"


def infer_size(size, numel):
    known = 1
    neg = -1
    for i, s in enumerate(size):
        if s >= 0:
            known *= s
        elif s == -1 and neg < 0:
            neg = i
        else:
            return _infer_size_error(size, s, i)
    if neg < 0:
        if known != numel:
            raise RuntimeError(f"shape '{fmt_shape(size)}' is invalid for input of size {numel}")
        return tuple(size)
    if known == 0:
        raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {fmt_shape(size)} "
                           "because the unspecified dimension size -1 can be any value and is "
                           "ambiguous")
    if numel % known:
        raise RuntimeError(f"shape '{fmt_shape(size)}' is invalid for input of size {numel}")
    size = tuple(size)
    return size[:neg] + (numel // known,) + size[neg + 1:]


def _infer_size_error(size, s, i):
    if s == -1:
        raise RuntimeError("only one dimension can be inferred")
    raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {fmt_shape(size)}")


def view_strides(oldshape, oldstride, newshape, unit=1):
    """ATen's computeStride: strides for viewing (oldshape, oldstride) as newshape, or None.
    (`unit`: the stride of one element, the itemsize when strides are in bytes.)"""
    if not oldshape:
        return (unit,) * len(newshape)
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        out = []
        acc = unit
        for s in reversed(newshape):
            out.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(out))
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1] if oldstride else unit
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


# ---- geometry on tuples ------------------------------------------------------------------------
def select_geom(shape, strides, offset, dim, index):
    n = len(shape)
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{fmt_shape(shape)} at dimension {dim}")
    if index < 0:
        index += size
    return (shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:], offset + index * strides[d])


def slice_bounds(size, start, end, step):
    """Clamped (start, length) of slice(start, end, step) over a dimension of `size`."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    s = 0 if start is None else start
    e = size if end is None else end
    if s < 0:
        s += size
    if e < 0:
        e += size
    if s < 0:
        s = 0
    elif s >= size:
        s = size
    if e < s:
        e = s
    elif e >= size:
        e = size
    return s, (e - s + step - 1) // step


def slice_geom(shape, strides, offset, dim, start, end, step):
    n = len(shape)
    if n == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    s, length = slice_bounds(shape[d], start, end, step)
    return (shape[:d] + (length,) + shape[d + 1:],
            strides[:d] + (strides[d] * step,) + strides[d + 1:], offset + s * strides[d])


def unsqueeze_geom(shape, strides, dim):
    n = len(shape)
    d = wrap_dim(dim, n + 1)
    st = 1 if d >= n else shape[d] * strides[d]
    return shape[:d] + (1,) + shape[d:], strides[:d] + (st,) + strides[d:]


def squeeze_axes(shape, dim=None):
    """The dims squeeze removes: all size-1 dims (dim None), or those of `dim` (int or list) of size 1."""
    n = len(shape)
    if dim is None:
        return tuple(i for i, s in enumerate(shape) if s == 1)
    if isinstance(dim, int):
        d = wrap_dim(dim, n)
        return (d,) if n and shape[d] == 1 else ()
    ds = wrap_dims(dim, n)
    return tuple(sorted(d for d in ds if n and shape[d] == 1))


def squeeze_geom(shape, strides, dim=None):
    axes = squeeze_axes(shape, dim)
    if not axes:
        return tuple(shape), tuple(strides)
    return (tuple(s for i, s in enumerate(shape) if i not in axes),
            tuple(s for i, s in enumerate(strides) if i not in axes))


def expand_geom(shape, strides, size, tstr):
    """ATen's inferExpandGeometry; `tstr` is a callable giving the type string for the error."""
    ndim, tdim = len(size), len(shape)
    if ndim < tdim:
        raise RuntimeError(f"expand({tstr()}{{{fmt_shape(shape)}}}, size={fmt_shape(size)}): the "
                           f"number of sizes provided ({ndim}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({tdim})")
    out_sz = list(size)
    out_st = [0] * ndim
    lead = ndim - tdim
    for i in range(ndim - 1, lead - 1, -1):
        sz = shape[i - lead]
        target = out_sz[i]
        if target == sz or target == -1:
            out_sz[i] = sz
            out_st[i] = strides[i - lead]
        elif sz == 1 and target >= 0:
            out_st[i] = 0
        else:
            raise RuntimeError(f"The expanded size of the tensor ({target}) must match the "
                               f"existing size ({sz}) at non-singleton dimension {i}.  Target "
                               f"sizes: {fmt_shape(size)}.  Tensor sizes: {fmt_shape(shape)}")
    for i in range(lead - 1, -1, -1):
        target = out_sz[i]
        if target == -1:
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                               f"leading, non-existing dimension {i}")
        if target != 1:
            if target < 0:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the "
                                   f"existing size (1) at non-singleton dimension {i}.  Target "
                                   f"sizes: {fmt_shape(size)}.  Tensor sizes: {fmt_shape(shape)}")
            out_st[i] = 0
        else:
            out_st[i] = out_sz[i + 1] * out_st[i + 1] if i + 1 < ndim else 0
    return tuple(out_sz), tuple(out_st)


def permute_dims(ndim, dims):
    dims = tuple(dims)
    if len(dims) != ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not "
                           "match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {ndim} is not equal to len(dims) = {len(dims)}")
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return out


def diagonal_geom(shape, strides, offset, off, dim1, dim2):
    n = len(shape)
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if off >= 0:
        size = max(min(shape[d1], shape[d2] - off), 0)
    else:
        size = max(min(shape[d1] + off, shape[d2]), 0)
    if size:
        offset += off * strides[d2] if off >= 0 else -off * strides[d1]
    keep = [i for i in range(n) if i != d1 and i != d2]
    return (tuple(shape[i] for i in keep) + (size,),
            tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],), offset)


def unfold_geom(shape, strides, dimension, size, step, unit=1):
    n = len(shape)
    d = wrap_dim(dimension, n)
    max_size = shape[d] if n else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {max_size} but size is "
                           f"{size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not n:
        return (size,), (unit,)
    return (shape[:d] + ((shape[d] - size) // step + 1,) + shape[d + 1:] + (size,),
            strides[:d] + (strides[d] * step,) + strides[d + 1:] + (strides[d],))


def view_dtype_geom(shape, strides, offset, old, new):
    """Viewing elements of dtype `old` as `new`: ATen's view(dtype) rules."""
    osz, nsz = old.itemsize, new.itemsize
    if osz == nsz:
        return tuple(shape), tuple(strides), offset
    what = f"to view {old._short} as {new._short} (different element sizes)"
    n = len(shape)
    if n == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    if osz > nsz:
        r = osz // nsz
        return (shape[:-1] + (shape[-1] * r,), tuple(s * r for s in strides[:-1]) + (1,),
                offset * r)
    r = nsz // osz
    if shape[-1] % r:
        raise RuntimeError(f"self.size(-1) must be divisible by {r} {what}, but got {shape[-1]}")
    if offset % r:
        raise RuntimeError(f"self.storage_offset() must be divisible by {r} {what}, but got "
                           f"{offset}")
    for i in range(n - 1):
        if strides[i] % r:
            raise RuntimeError(f"self.stride({i}) must be divisible by {r} {what}, but got "
                               f"{strides[i]}")
    return (shape[:-1] + (shape[-1] // r,), tuple(s // r for s in strides[:-1]) + (1,),
            offset // r)


def view_as_real_geom(shape, strides, offset):
    return tuple(shape) + (2,), tuple(s * 2 for s in strides) + (1,), offset * 2


def view_as_complex_check(shape, strides, offset, dtype):
    from ember.core import dtype as _dt
    if dtype not in (_dt.float32, _dt.float64, _dt.float16):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, "
                           f"but got a tensor of scalar type: {dtype._short}")
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    for s in strides[:-1]:
        if s % 2:
            raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return tuple(shape[:-1]), tuple(s // 2 for s in strides[:-1]), offset // 2


# ---- meta functions ----------------------------------------------------------------------------
def transpose(t, dim0, dim1):
    n = len(t._shape)
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    shape, strides = list(t._shape), list(t.stride())
    if n >= 2:
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
    return tuple(shape), tuple(strides), t.storage_offset()


def detach(t):
    return t._shape, t.stride(), t.storage_offset()


alias = detach


def view(t, size):
    shape = infer_size(size, t.numel())
    st = view_strides(t._shape, t.stride(), shape)
    if st is None:
        raise RuntimeError(VIEW_ERROR)
    return shape, st, t.storage_offset()


def unsafe_view(t, size):
    shape, st, _ = view(t, size)
    return shape, t._dtype, st


def check_in_bounds(size, stride, offset, itemsize, storage_nbytes):
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    for s in stride:
        if s < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                               f"strides: {fmt_shape(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(s == 0 for s in size):
        need = 0
    else:
        need = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * itemsize
    if need > storage_nbytes:
        raise RuntimeError(f"setStorage: sizes {fmt_shape(size)}, strides {fmt_shape(stride)}, "
                           f"storage offset {offset}, and itemsize {itemsize} requiring a storage "
                           f"size of {need} are out of bounds for storage of size {storage_nbytes}")


def as_strided(t, size, stride, storage_offset=None):
    off = t.storage_offset() if storage_offset is None else storage_offset
    check_in_bounds(size, stride, off, t._dtype.itemsize, t.untyped_storage().nbytes())
    return tuple(size), tuple(stride), off


def select(t, dim, index):
    return select_geom(t._shape, t.stride(), t.storage_offset(), dim, index)


def slice(t, dim=0, start=None, end=None, step=1):  # noqa: A001
    return slice_geom(t._shape, t.stride(), t.storage_offset(), dim, start, end, step)


def unsqueeze(t, dim):
    shape, strides = unsqueeze_geom(t._shape, t.stride(), dim)
    return shape, strides, t.storage_offset()


def squeeze(t, dim=None):
    shape, strides = squeeze_geom(t._shape, t.stride(), dim)
    return shape, strides, t.storage_offset()


def expand(t, size, implicit=False):
    shape, strides = expand_geom(t._shape, t.stride(), size,
                                 lambda: type_str(t._dtype._short, t._device.type))
    return shape, strides, t.storage_offset()


def permute(t, dims):
    p = permute_dims(len(t._shape), dims)
    shape, strides = t._shape, t.stride()
    return tuple(shape[i] for i in p), tuple(strides[i] for i in p), t.storage_offset()


def diagonal(t, offset=0, dim1=0, dim2=1):
    return diagonal_geom(t._shape, t.stride(), t.storage_offset(), offset, dim1, dim2)


def unfold(t, dimension, size, step):
    shape, strides = unfold_geom(t._shape, t.stride(), dimension, size, step)
    return shape, strides, t.storage_offset()


def view_dtype(t, dtype):
    return view_dtype_geom(t._shape, t.stride(), t.storage_offset(), t._dtype, dtype)


def view_as_real(t):
    if t._dtype.category != 3:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return view_as_real_geom(t._shape, t.stride(), t.storage_offset())


def view_as_complex(t):
    return view_as_complex_check(t._shape, t.stride(), t.storage_offset(), t._dtype)
