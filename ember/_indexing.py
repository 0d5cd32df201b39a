"""Tensor.__getitem__ / __setitem__ (torch/csrc/autograd/python_variable_indexing.cpp and
ATen's TensorIndexing.h).

Basic indices lower to views made by aten::select.int, aten::slice.Tensor and aten::unsqueeze (and
aten::alias for `x[...]`), exactly as PyTorch does, so shapes, strides, storage offsets and the
autograd history match; tensor, list and bool indices ("advanced" indexing) go to
aten::index.Tensor, assignments to copy_/fill_ on the view or to aten::index_put_.
"""
import operator
import sys
import warnings

import numpy as np

from ember._generated import ops as _ops
from ember.core import dtype as _dt
from ember.core.tensor_impl import TensorImpl, make_meta, wrap_cpu as _wrap
from ember.kernels.cpu.indexing import scalar_array
from ember.kernels.meta.indexing import check_scalar

# the operators indexing lowers to, called through the dispatcher's front door (positional, the
# key set computed from the Tensor arguments)
_select = _ops.select_int.call
_slice = _ops.slice_Tensor.call
_unsqueeze = _ops.unsqueeze.call
_alias = _ops.alias.call
_index = _ops.index_Tensor.call
_index_put_ = _ops.index_put_.call
_copy_ = _ops.copy_.call
_fill_t = _ops.fill__Tensor.call
_fill_s = _ops.fill__Scalar.call
_view = _ops.view.call
_expand = _ops.expand.call

_MAX = sys.maxsize
_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1
_INT_CAT, _BOOL = _dt.INT, _dt.bool_
_BYTE = _dt.uint8
_SEQ_WARN = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
             "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will "
             "be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an "
             "error or a different result")
_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
             "in C++ to convert a 0-dim tensor to a number")


def _tp_name(obj):
    t = type(obj)
    m = t.__module__
    return t.__qualname__ if m == "builtins" else f"{m}.{t.__qualname__}"


# ---- pieces of applySlicing -------------------------------------------------------------------
def _check_long(i):
    if i < _I64_MIN or i > _I64_MAX:
        raise ValueError("Overflow when unpacking long long")
    return i


def _apply_select(result, dim, index, real_dim):
    shape = result._shape
    if index == 0 and dim == 0 and not shape:
        raise IndexError(_ZERO_DIM)
    size = shape[dim] if dim < len(shape) else 0
    if not (-size <= index < size):
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size {size}")
    return _select(result, dim, index)


def _slice_index(v, default):
    if v is None:
        return default
    if v.__class__ is not int:
        v = operator.index(v)
    if v > _MAX:
        return _MAX
    if v < -_MAX - 1:
        return -_MAX - 1
    return v


def _unpack_slice(s):
    step = s.step
    if step is None:
        step = 1
    else:
        step = _slice_index(step, 1)
        if step == 0:
            raise ValueError("slice step cannot be zero")
    start = _slice_index(s.start, 0 if step > 0 else _MAX)
    stop = _slice_index(s.stop, _MAX if step > 0 else -_MAX - 1)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    return start, stop, step


def _apply_slice(result, dim, s, optimize):
    start, stop, step = _unpack_slice(s)
    shape = result._shape
    if optimize and shape and start == 0 and step == 1 and shape[dim] <= stop:
        return result
    if not shape:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    return _slice(result, dim, start, stop, step)


def _long_tensor(values, like):
    """A 1-d int64 tensor on `like`'s device (boolToIndexingTensor, converted lists)."""
    return _on_device(np.asarray(values, dtype=np.int64), like)


def _on_device(arr, like):
    dev = like._device
    if dev.type == "cpu":
        return _wrap(arr)
    if dev.type == "meta":
        return make_meta(arr.shape, _dt.NP2DT[arr.dtype])
    return _wrap(arr).to(dev)


def _is_sequence(obj):
    if isinstance(obj, (list, tuple, range, np.ndarray, str, bytes)):
        return True
    if isinstance(obj, (dict, TensorImpl)):
        return False
    t = type(obj)
    return hasattr(t, "__getitem__") and hasattr(t, "__len__")


def _sequence_to_tensor(seq, like):
    """indexing_tensor_from_data: a list becomes a bool/uint8 tensor, or an int64 one."""
    try:
        arr = np.asarray(seq)
    except (ValueError, TypeError):
        raise TypeError("new(): invalid data type 'object'") from None
    k = arr.dtype.kind
    if k == "b" or arr.dtype == np.uint8:
        pass
    elif k in "iuf":
        arr = arr.astype(np.int64)
    elif k == "U" or k == "S":
        raise TypeError("new(): invalid data type 'str'")
    else:
        raise TypeError(f"new(): invalid data type '{arr.dtype}'")
    return _on_device(arr, like)


def _count_specified(items):
    n = 0
    for obj in items:
        if isinstance(obj, TensorImpl):
            d = obj._dtype
            n += len(obj._shape) if (d is _BOOL or d is _BYTE) else 1
        elif obj is not None and obj is not Ellipsis and obj is not True and obj is not False:
            n += 1
    return n


def _seq_as_tuple(index):
    """treatSequenceAsTuple: NumPy's heuristic for `x[[0, slice(None)]]`-style indices."""
    if isinstance(index, TensorImpl) or not _is_sequence(index) or isinstance(index, (str, bytes)):
        return False
    try:
        n = len(index)
    except TypeError:
        return False
    if n >= 32:
        return False
    for i in range(n):
        try:
            obj = index[i]
        except Exception:
            return False
        if isinstance(obj, (TensorImpl, slice)) or _is_sequence(obj) or obj is None or \
                obj is Ellipsis:
            warnings.warn(_SEQ_WARN, UserWarning, stacklevel=4)
            return True
    return False


def _record(out, dim, tensor):
    while len(out) <= dim:
        out.append(None)
    out[dim] = tensor


def _apply_slicing(t, items):
    """(result view, tensor indices list) for a tuple index (applySlicing)."""
    shape = t._shape
    ndim = len(shape)
    specified = _count_specified(items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result = t
    dim = 0
    slot = 0  # position in the index list: a k-d mask spans k dims but one slot
    tindices = []
    dev = t._device
    for i, obj in enumerate(items):
        c = obj.__class__
        if c is int:
            result = _apply_select(result, dim, _check_long(obj), i)
            continue
        if c is slice:
            result = _apply_slice(result, dim, obj, True)
            dim += 1
            slot += 1
            continue
        if obj is None:
            result = _unsqueeze(result, dim)
            dim += 1
            slot += 1
            continue
        if obj is Ellipsis:
            dim += ndim - specified
            slot += ndim - specified
            continue
        if obj is True or obj is False:
            result = _unsqueeze(result, dim)
            _record(tindices, slot, _long_tensor([0] if obj else [], t))
            dim += 1
            slot += 1
            continue
        if not isinstance(obj, TensorImpl):
            if isinstance(obj, np.integer):
                result = _apply_select(result, dim, _check_long(int(obj)), i)
                continue
            if _is_sequence(obj):
                obj = _sequence_to_tensor(obj, t)
            else:
                try:
                    v = operator.index(obj)
                except TypeError:
                    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long "
                                     f"or byte Variables are valid indices (got {_tp_name(obj)})"
                                     ) from None
                result = _apply_select(result, dim, _check_long(v), i)
                continue
        d = obj._dtype
        if not obj._shape and (d.category == _INT_CAT or d is _BOOL):
            if d is not _BOOL and d is not _BYTE:
                result = _apply_select(result, dim, int(obj.item()), i)
            else:
                result = _unsqueeze(result, dim)
                _record(tindices, slot, _long_tensor([0] if obj.item() else [], t))
                dim += 1
                slot += 1
            continue
        if obj._device is not dev and dev.type != "cpu" and obj._device.type == "cpu":
            obj = obj.to(dev)
        _record(tindices, slot, obj)
        dim += len(obj._shape) if (d is _BOOL or d is _BYTE) else 1
        slot += 1
    return result, tindices


# ---- __getitem__ ------------------------------------------------------------------------------
def _basic_tuple(t, index, alias=True):
    """Short path for a tuple of in-range ints and step-1 slices; None means "take the long way"
    (the general path then also produces any error)."""
    r = t
    dim = 0
    for it in index:
        ic = it.__class__
        if ic is int:
            size = r._shape[dim]
            if not -size <= it < size:
                return None
            r = _select(r, dim, it)
        elif ic is slice:
            if it.step is not None:
                return None
            start, stop = it.start, it.stop
            if start is None:
                start = 0
            elif start.__class__ is not int:
                return None
            if stop is None:
                stop = _MAX
            elif stop.__class__ is not int:
                return None
            if start != 0 or stop < r._shape[dim]:
                r = _slice(r, dim, start, stop, 1)
            dim += 1
        else:
            return None
    if r is t and alias:
        return _alias(t)
    return r


def getitem(t, index):
    c = index.__class__
    if c is int:
        shape = t._shape
        if shape:
            n = shape[0]
            if -n <= index < n:
                return _select(t, 0, index)
        return _apply_select(t, 0, _check_long(index), 0)
    if c is slice:
        if index.step is None and t._shape:
            start, stop = index.start, index.stop
            if (start is None or start.__class__ is int) and (stop is None or stop.__class__ is int):
                return _slice(
                    t, 0, 0 if start is None else start, _MAX if stop is None else stop, 1)
        return _apply_slice(t, 0, index, False)
    if c is tuple:
        if len(index) <= len(t._shape):
            r = _basic_tuple(t, index)
            if r is not None:
                return r
        items = index
    elif isinstance(index, TensorImpl) and index._shape and index._device is t._device:
        d = index._dtype
        n = len(index._shape) if (d is _BOOL or d is _BYTE) else 1
        if n > len(t._shape):
            raise IndexError(f"too many indices for tensor of dimension {len(t._shape)}")
        return _index(t, [index])
    elif index is None:
        return _unsqueeze(t, 0)
    elif index is Ellipsis:
        return _alias(t)
    elif index is True or index is False:
        r = _unsqueeze(t, 0)
        return _index(r, [_long_tensor([0] if index else [], t)])
    elif isinstance(index, np.integer):
        return _apply_select(t, 0, _check_long(int(index)), 0)
    elif _seq_as_tuple(index):
        items = tuple(index)
    else:
        items = (index,)
    result, tindices = _apply_slicing(t, items)
    if not tindices:
        return _alias(t) if result is t else result
    return _index(result, tindices)


# ---- __setitem__ ------------------------------------------------------------------------------
def _type_string(t):
    d = t._device.type
    return f"torch.{t._dtype._short}Tensor" if d == "cpu" else f"torch.{d}.{t._dtype._short}Tensor"


def _value_to_tensor(t, value):
    """valueToTensor: a Python number becomes a 0-d tensor of t's dtype (overflow-checked)."""
    vc = value.__class__
    if (vc is float or vc is int or vc is bool) and t._device.type == "cpu":
        dt = t._dtype
        if vc is int:
            _check_long(value)
        if dt is not _dt.float16 and dt is not _dt.bfloat16:
            check_scalar(value, dt)
        return _wrap(np.array(value, dtype=dt.np))
    if isinstance(value, (bool, int, np.integer)) and not isinstance(value, np.bool_):
        v = _check_long(int(value))
    elif isinstance(value, float):
        v = float(value)
    elif isinstance(value, complex):
        v = complex(value)
    else:
        raise TypeError(f"can't assign a {_tp_name(value)} to a {_type_string(t)}")
    dt = t._dtype
    if dt is not _dt.float16 and dt is not _dt.bfloat16:  # scalar_tensor_static skips the check
        check_scalar(v, dt)
    dev = t._device
    if dev.type == "meta":
        return make_meta((), dt)
    return _on_device(scalar_array(v, dt.np), t)


def _strip_leading_ones(shape):
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


def _copy_to(dst, src):
    if 0 in dst._shape:
        # nothing is written; PyTorch's shape checks still apply (views of empty arrays are
        # read-only in NumPy, so the copy itself is skipped)
        if dst._shape != src._shape and src._shape:
            s = _strip_leading_ones(src._shape)
            if s != src._shape:
                src = _view(src, s)
            if src._shape != dst._shape:
                _expand(src, dst._shape, False)
        return
    if dst._shape == src._shape:
        _copy_(dst, src, False)
        return
    if not src._shape and src._device.type == "cpu":
        _fill_t(dst, src)
        return
    s = _strip_leading_ones(src._shape)
    if s != src._shape:
        src = _view(src, s)
    if src._shape != dst._shape:
        src = _expand(src, dst._shape, False)
    _copy_(dst, src, False)


def setitem(t, index, value):
    c = index.__class__
    vc = value.__class__
    if (vc is float or vc is int or vc is bool) and (c is int or c is slice) and \
            t._dtype is not _dt.float16 and t._dtype is not _dt.bfloat16:
        # x[i] = number, x[a:b] = number: fill_ on the view (fill_.Scalar does PyTorch's
        # overflow check of the value, as the 0-d value tensor would)
        if vc is int:
            _check_long(value)
        dst = _apply_select(t, 0, _check_long(index), 0) if c is int else _apply_slice(t, 0, index, True)
        if 0 in dst._shape:
            check_scalar(value, t._dtype)
            return
        _fill_s(dst, value)
        return
    if c is tuple and len(index) <= len(t._shape):
        dst = _basic_tuple(t, index, False)
        if dst is not None:
            if (vc is float or vc is int or vc is bool) and t._dtype is not _dt.float16 and \
                    t._dtype is not _dt.bfloat16 and 0 not in dst._shape:
                if vc is int:
                    _check_long(value)
                _fill_s(dst, value)
            else:
                _copy_to(dst, value if isinstance(value, TensorImpl) else _value_to_tensor(t, value))
            return
    v = value if isinstance(value, TensorImpl) else _value_to_tensor(t, value)
    if c is int:
        _copy_to(_apply_select(t, 0, _check_long(index), 0), v)
        return
    if c is slice:
        _copy_to(_apply_slice(t, 0, index, True), v)
        return
    if c is tuple:
        items = index
    elif isinstance(index, TensorImpl) and index._shape and index._device is t._device:
        d = index._dtype
        n = len(index._shape) if (d is _BOOL or d is _BYTE) else 1
        if n > len(t._shape):
            raise IndexError(f"too many indices for tensor of dimension {len(t._shape)}")
        _index_put_v(t, [index], v)
        return
    elif index is False:
        return
    elif index is Ellipsis:
        _copy_to(t, v)
        return
    elif index is None or index is True:
        _copy_to(_unsqueeze(t, 0), v)
        return
    elif isinstance(index, np.integer):
        _copy_to(_apply_select(t, 0, _check_long(int(index)), 0), v)
        return
    elif _seq_as_tuple(index):
        items = tuple(index)
    else:
        items = (index,)
    sliced, tindices = _apply_slicing(t, items)
    if not tindices:
        _copy_to(sliced, v)
        return
    _index_put_v(sliced, tindices, v)


def _index_put_v(sliced, tindices, v):
    s = v._shape
    if s and s[0] == 1:
        s = _strip_leading_ones(s)
        v = _view(v, s)
    _index_put_(sliced, tindices, v, False)


# ---- Python-level API around nonzero (torch.nonzero(as_tuple=True)) --------------------------
def nonzero(input, *, out=None, as_tuple=False):
    """torch.nonzero with as_tuple: the generated binding has no as_tuple (not in the schema)."""
    if not as_tuple:
        if out is not None:
            return _ops.nonzero_out(input, out)
        return _ops.nonzero(input)
    if not input._shape:
        input = _unsqueeze(input, 0)
    nz = _ops.nonzero(input)
    return tuple(_select(nz, 1, j) for j in range(len(input._shape)))

