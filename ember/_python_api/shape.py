"""Python-level shape API (torch/functional.py, torch/_tensor.py): split, tensor_split, Tensor.view
with a dtype, meshgrid, broadcast_shapes, atleast_*d, hsplit/vsplit/dsplit."""
from ember._bindings import is_dtype as _is_dtype, to_dtype as _to_dtype
import warnings as _warnings
from collections.abc import Sequence as _Sequence

from ember._generated import functions as _gf, ops as _ops
# the generated Tensor methods, where the hand-written ones below fall back
from ember._generated.tensor_base import _TensorBase as _TB
from ember.core import keys as _keys
from ember.core.tensor_impl import TensorImpl as _TI

_gen_view = _TB.view


_int = int


def _view(self, *shape, dtype=None, size=None):
    """Tensor.view(*shape) / Tensor.view(dtype)."""
    if shape and dtype is None and size is None:
        if len(shape) == 1 and shape[0].__class__ is not _int:
            s0 = shape[0]
            if isinstance(s0, (tuple, list)):
                shape = tuple(s0)
            elif s0 is not None and not isinstance(s0, _TI) and _is_dtype(s0):
                return _ops.view_dtype.call(self, _to_dtype(s0))
            else:
                return _gen_view(self, *shape)
        for s in shape:
            if s.__class__ is not _int:
                return _gen_view(self, shape)
        return _ops.view.call(self, shape)
    if dtype is not None:
        if shape or size is not None:
            raise TypeError("view() received an invalid combination of arguments")
        return _ops.view_dtype.call(self, _to_dtype(dtype))
    if size is not None:
        return _gen_view(self, size=size)
    # view() with nothing: torch's parser lists both overloads (dtype, size)
    from ember.dispatch.resolve import fail  # lazy: only this error needs the parser's message
    fail("view", [_ops.view_dtype.schema, _ops.view.schema], (), {}, method=True)


def movedim(input, source, destination):
    """ember.movedim / moveaxis (int or sequence of dims)."""
    from ember.kernels.composite_shape import movedim as _movedim
    if not isinstance(input, _TI):
        return _gf.movedim(input, source, destination)
    return _movedim(input, source if isinstance(source, _int) else tuple(source),
                    destination if isinstance(destination, _int) else tuple(destination))


_gen_squeeze = _TB.squeeze


def squeeze(input, dim=None, *, axis=None):
    """ember.squeeze / Tensor.squeeze: all size-1 dims, one dim, or a list of dims."""
    if axis is not None:  # NumPy's name, accepted by torch's argument parser
        if dim is not None:
            raise TypeError("squeeze() got an unexpected keyword argument 'axis'")
        dim = axis
    if isinstance(input, _TI):
        if dim is None:
            return _ops.squeeze.call(input)
        if dim.__class__ is int:
            return _ops.squeeze_dim.call(input, dim)
        if dim.__class__ in (tuple, list) and all(d.__class__ is int for d in dim):
            return _ops.squeeze_dims.call(input, tuple(dim))
    return _gen_squeeze(input) if dim is None else _gen_squeeze(input, dim)


def _squeeze_method(self, *dims, dim=None, axis=None):
    if axis is not None:
        if dim is not None or dims:
            raise TypeError("squeeze() got an unexpected keyword argument 'axis'")
        dim = axis
    if dims:
        if dim is not None:
            raise TypeError("squeeze() got multiple values for argument 'dim'")
        dim = dims[0] if len(dims) == 1 else dims
    return squeeze(self, dim)


def _to_int(v):
    if isinstance(v, _TI):
        return int(v.item())
    return v.__index__()


def _is_int_like(v):
    return isinstance(v, int) or (hasattr(v, "__index__") and not isinstance(v, (list, tuple, _TI))) \
        or (isinstance(v, _TI) and v.dim() == 0 and v._dtype.category == 1)


def split(tensor, split_size_or_sections, dim=0):
    """Tensor.split / ember.split: equal pieces of split_size, or pieces of the listed sizes."""
    s = split_size_or_sections
    if isinstance(s, _TI) and s.dim() == 0:
        s = int(s.item())
    dim = dim.__index__()
    if isinstance(s, int) or (_is_int_like(s) and not isinstance(s, _TI)):
        return _ops.split_Tensor.call(tensor, s.__index__(), dim)
    sizes = tuple(_to_int(x) for x in s)
    return _ops.split_with_sizes.call(tensor, sizes, dim)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """ember.tensor_split: sections (int or 0-d tensor), indices (list or 1-d tensor)."""
    s = indices_or_sections
    for alt in (sections, indices, tensor_indices_or_sections):
        if alt is not None:
            if s is not None:
                raise TypeError("tensor_split() received an invalid combination of arguments")
            s = alt
    if s is None:
        raise TypeError("tensor_split() missing required argument 'indices_or_sections'")
    dim = dim.__index__()
    if isinstance(s, _TI):
        if s._device.type != "cpu":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, but "
                               f"it's on {s._device}")
        if s._dtype.name != "int64":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of "
                               f"long, but got {s._dtype._short}")
        if s.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{s.dim()} dims")
        s = int(s.item()) if s.dim() == 0 else [int(x) for x in s.tolist()]
    if isinstance(s, (list, tuple)):
        idx = tuple(_to_int(x) for x in s)
        return _ops.tensor_split_indices.call(input, idx, dim)
    return _ops.tensor_split_sections.call(input, s.__index__(), dim)




def _hvd_split(name, input, indices_or_sections, dim, min_dim):
    n = input.dim()
    if n < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but "
                           f"got a tensor with {n} dimensions!")
    s = indices_or_sections
    if isinstance(s, _TI) and s.dim() == 0:
        s = int(s.item())
    if not isinstance(s, (list, tuple, _TI)):
        s = s.__index__()
        if s == 0 or input._shape[dim] % s:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size "
                               f"of the dimension {input._shape[dim]} is not divisible by the "
                               f"split_size {s}!")
    return tensor_split(input, s, dim)


def _split_method(self, split_size, dim=0):
    return split(self, split_size, dim)


def hsplit(input, indices_or_sections):
    return _hvd_split("hsplit", input, indices_or_sections, 0 if input.dim() == 1 else 1, 1)


def vsplit(input, indices_or_sections):
    return _hvd_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    return _hvd_split("dsplit", input, indices_or_sections, 2, 3)


# ---- cat and its relatives ----------------------------------------------------------------------
def _check_out_cast(tensors, out, name):
    from ember.core import dtype as _dt
    from ember.kernels.meta.shape import promote
    ds = [t._dtype for t in tensors if isinstance(t, _TI)]
    if ds and isinstance(out, _TI):
        rd = promote(ds)
        if rd is not out._dtype and not _dt.can_cast(rd, out._dtype):
            raise TypeError(f"{name}: input types can't be cast to the desired output type "
                            f"{out._dtype._short}")


def _same_device(tensors):
    if isinstance(tensors, (list, tuple)) and len(tensors) > 1:
        d0 = getattr(tensors[0], "_device", None)
        for t in tensors:
            d = getattr(t, "_device", d0)
            if d != d0:
                if "meta" in (d.type, d0.type):  # the meta kernel's own check
                    raise RuntimeError(f"Tensor on device {d} is not on the expected device {d0}!")
                key = _keys.DEVICE_KEY.get(max(d, d0, key=lambda x: x.type != "cpu").type, "PrivateUse1")
                key = getattr(key, "name", key)
                raise RuntimeError(f"Expected all tensors to be on the same device, but got tensors is on {d}, "
                                   f"different from other tensors on {d0} (when checking argument in method "
                                   f"wrapper_{key}_cat)")


def cat(tensors, dim=0, *, out=None, axis=None):
    """ember.cat (also concat, concatenate): dtype promotion across the inputs, as torch.cat."""
    if axis is not None:  # NumPy's name, accepted by torch too
        dim = axis
    c = tensors.__class__
    if c is list or c is tuple:
        if not tensors:
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        if out is None and dim.__class__ is int:
            try:
                d0 = tensors[0]._device
                for t in tensors:
                    if t._device is not d0:
                        break
                else:
                    return _ops.cat.call(list(tensors), dim)
            except AttributeError:
                pass
    _same_device(tensors)
    if out is not None:
        _check_out_cast(tensors, out, "torch.cat()")
    return _gf.cat(tensors, dim, out=out)


def stack(tensors, dim=0, *, out=None, axis=None):
    if axis is not None:
        dim = axis
    if isinstance(tensors, (list, tuple)) and len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    return _gf.stack(tensors, dim, out=out)


def concat(tensors, dim=0, *, out=None, axis=None):
    return cat(tensors, dim if axis is None else axis, out=out)


def concatenate(tensors, axis=0, out=None, *, dim=None):
    return cat(tensors, axis if dim is None else dim, out=out)


def _nonempty(tensors, name):
    if isinstance(tensors, _TI):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors, *, out=None):
    ts = _atleast(_nonempty(tensors, "hstack"), 1)
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    return cat(_atleast(_nonempty(tensors, "vstack"), 2), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    return cat(_atleast(_nonempty(tensors, "dstack"), 3), 2, out=out)


def column_stack(tensors, *, out=None):
    ts = _nonempty(tensors, "column_stack")
    ts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts]
    return cat(ts, 1, out=out)


# ---- atleast_*d ---------------------------------------------------------------------------------
def _one(t, n):
    d = t.dim()
    if d >= n:
        return t
    if d == 0:
        return t.reshape((1,) * n)
    if n == 2 or d == 2:
        return t.unsqueeze(0) if n == 2 else t.unsqueeze(-1)
    return t.unsqueeze(0).unsqueeze(-1)  # 1-d to 3-d


def _atleast(tensors, n):
    return tuple(_one(t, n) for t in tensors)


def _atleast_api(tensors, n):
    if len(tensors) == 1:
        tensors = tensors[0]
    if isinstance(tensors, _TI):
        return _one(tensors, n)
    return _atleast(tensors, n)


def atleast_1d(*tensors):
    return _atleast_api(tensors, 1)


def atleast_2d(*tensors):
    return _atleast_api(tensors, 2)


def atleast_3d(*tensors):
    return _atleast_api(tensors, 3)


# ---- broadcasting ---------------------------------------------------------------------------------
def broadcast_shapes(*shapes):
    """ember.broadcast_shapes: the shape all of `shapes` broadcast to (torch._refs' rules)."""
    from ember._size import Size
    shapes = tuple((x,) if _is_int_like(x) and not isinstance(x, (list, tuple)) else x
                   for x in shapes if x is not None)
    if not shapes:
        return Size([])
    for shape in shapes:
        if not isinstance(shape, _Sequence):
            raise RuntimeError("Input shapes should be of type ints, a tuple of ints, or a list of "
                               f"ints, got {shape}")
    common = [1] * max(len(s) for s in shapes)
    for arg_idx, shape in enumerate(shapes):
        for idx in range(-1, -1 - len(shape), -1):
            v = shape[idx]
            if v == common[idx]:
                continue
            if common[idx] == 1:
                if v < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[idx] = v
            if v == 1:
                continue
            if common[idx] != v:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {v} at {idx}! "
                                   f"Mismatching argument at index {arg_idx} had {shape}; but "
                                   f"expected shape should be broadcastable to {common}")
    return Size(common)


def broadcast_tensors(*tensors):
    """ember.broadcast_tensors: views of the inputs expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    for t in tensors:
        if not isinstance(t, _TI):
            raise TypeError(f"broadcast_tensors(): argument 'tensors' must be tuple of Tensors, "
                            f"but found element of type {type(t).__name__}")
    shape = ()
    for t in tensors:
        shape = _infer_size(shape, t._shape)
    # a tensor already of the common shape is returned as it is (PyTorch's expand_outplace)
    return tuple(t if t._shape == shape else _ops.expand.call(t, shape, False)
                 for t in tensors)


def _infer_size(a, b):
    """ATen's infer_size: the broadcast of shapes a and b, checked from the last dim."""
    n = max(len(a), len(b))
    out = [0] * n
    for i in range(n - 1, -1, -1):
        off = n - 1 - i
        da, db = len(a) - 1 - off, len(b) - 1 - off
        sa = a[da] if da >= 0 else 1
        sb = b[db] if db >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) "
                               f"at non-singleton dimension {i}")
        out[i] = sb if sa == 1 else sa
    return tuple(out)


_meshgrid_warned = [False]


def meshgrid(*tensors, indexing=None):
    """ember.meshgrid: grids (expanded views) from 0-d or 1-d tensors; indexing 'ij' or 'xy'."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if indexing is None:
        if not _meshgrid_warned[0]:
            _meshgrid_warned[0] = True
            _warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                           "the indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    ts = list(tensors)
    n = len(ts)
    if n == 0:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for i in range(n - 1):
        if ts[i]._dtype is not ts[i + 1]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if ts[i]._device != ts[i + 1]._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    swap = False
    if indexing == "xy":
        swap = n >= 2
        if swap:
            ts[0], ts[1] = ts[1], ts[0]
    elif indexing != "ij":
        raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f"{indexing}")
    for t in ts:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    shape = tuple(t.numel() for t in ts)
    grids = []
    for i, t in enumerate(ts):
        vs = [1] * n
        vs[i] = -1
        v = _ops.view.call(t, tuple(vs))
        grids.append(_ops.expand.call(v, shape, False))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# ---- repeat_interleave --------------------------------------------------------------------------
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """ember.repeat_interleave(input, repeats, dim) / ember.repeat_interleave(repeats)."""
    if dim is not None:
        dim = dim.__index__()
    if output_size is not None:
        output_size = output_size.__index__()
    if repeats is None:
        if not isinstance(input, _TI):
            raise TypeError("repeat_interleave(): argument 'repeats' must be Tensor")
        return _ops.repeat_interleave_Tensor.call(input, output_size)
    if isinstance(repeats, _TI):
        return _ops.repeat_interleave_self_Tensor.call(input, repeats, dim, output_size)
    return _ops.repeat_interleave_self_int.call(input, repeats.__index__(), dim,
                                                           output_size)


__all__ = ["split", "tensor_split", "squeeze", "hsplit", "vsplit", "dsplit", "cat", "concat",
           "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack", "atleast_1d",
           "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "meshgrid",
           "repeat_interleave", "movedim", "moveaxis"]
moveaxis = movedim


def _view_as(self, other):
    return _view(self, *other._shape) if other._shape else _ops.view.call(self, ())
