"""Metadata of views: (shape, strides, storage offset) computed from the input's (ATen's view rules)."""
from ember.core.errors import fmt_shape, wrap_dim

VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def infer_size(size, numel):
    size = tuple(size)
    neg = [i for i, s in enumerate(size) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in size:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in size:
        if s != -1:
            known *= s
    if neg:
        if known == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {fmt_shape(size)} "
                               "because the unspecified dimension size -1 can be any value and is "
                               "ambiguous")
        if numel % known:
            raise RuntimeError(f"shape '{fmt_shape(size)}' is invalid for input of size {numel}")
        size = size[:neg[0]] + (numel // known,) + size[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{fmt_shape(size)}' is invalid for input of size {numel}")
    return size


def view_strides(oldshape, oldstride, newshape):
    """ATen's computeStride: strides for viewing (oldshape, oldstride) as newshape, or None."""
    numel = 1
    for s in oldshape:
        numel *= s
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        out = []
        acc = 1
        for s in reversed(newshape):
            out.append(acc)
            acc *= max(s, 1)
        return tuple(reversed(out))
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1] if oldstride else 1
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


def view(t, size):
    shape = infer_size(size, t.numel())
    st = view_strides(t._shape, t.stride(), shape)
    if st is None:
        raise RuntimeError(VIEW_ERROR)
    return shape, st, t.storage_offset()


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
