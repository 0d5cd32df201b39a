"""ember.tensor, as_tensor, from_numpy, from_dlpack: tensors from Python data (torch/csrc/utils/tensor_new)."""
import numbers

import numpy as np

from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.tensor_impl import TensorImpl, make_meta, wrap_cpu
from ember.dispatch.resolve import to_dtype


def _infer_dtype(data):
    """PyTorch's inference: bool < int64 < default float < default complex, over nested data."""
    if isinstance(data, TensorImpl):
        return data._dtype
    if isinstance(data, np.ndarray):
        return _dt.from_numpy_dtype(data.dtype)
    if isinstance(data, (np.generic,)):
        return _dt.from_numpy_dtype(data.dtype) if not isinstance(data, np.floating) or \
            data.dtype != np.float64 else _dt.float64
    if isinstance(data, bool):
        return _dt.bool_
    if isinstance(data, numbers.Integral):
        return _dt.int64
    if isinstance(data, numbers.Real):
        return _dt.defaults.float
    if isinstance(data, numbers.Complex):
        return _dt.defaults.complex
    if isinstance(data, (list, tuple)):
        best = None
        for x in data:
            d = _infer_dtype(x)
            if best is None:
                best = d
            elif d is not best:
                best = _dt.result_type_of(((best, 0), (d, 0)))
        return best or _dt.defaults.float
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _to_array(data, npdt):
    if isinstance(data, TensorImpl):
        return np.array(data.detach().cpu()._np, dtype=npdt)
    if isinstance(data, (list, tuple)) and any(isinstance(x, TensorImpl) for x in _flat(data)):
        data = _detensor(data)
    try:
        a = np.array(data, dtype=npdt)
    except (ValueError, OverflowError) as e:
        msg = str(e)
        if "inhomogeneous" in msg or "sequence" in msg:
            raise ValueError(f"expected sequence of equal length lists: {msg.split('.')[0]}") from None
        if isinstance(e, OverflowError) or "out of bounds" in msg:
            raise RuntimeError(f"value cannot be converted to type {npdt} without overflow") from None
        raise TypeError(msg) from None
    if a.dtype == object:
        raise TypeError("tensor(): data must be a number or a (nested) sequence of numbers")
    return a


def _flat(x):
    for y in x:
        if isinstance(y, (list, tuple)):
            yield from _flat(y)
        else:
            yield y


def _detensor(x):
    if isinstance(x, TensorImpl):
        return x.detach().cpu()._np
    if isinstance(x, (list, tuple)):
        return [_detensor(y) for y in x]
    return x


def _place(arr, dev):
    if dev is None or dev.type == "cpu":
        return wrap_cpu(arr)
    if dev.type == "meta":
        return make_meta(arr.shape, _dt.from_numpy_dtype(arr.dtype))
    return wrap_cpu(arr).to(dev)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    if isinstance(data, TensorImpl):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    dtype = to_dtype(dtype) if dtype is not None else _infer_dtype(data)
    dev = _device(device) if device is not None else _default_device()
    arr = _to_array(data, dtype.np)
    t = _place(np.ascontiguousarray(arr), dev)
    if requires_grad:
        t.requires_grad_()
    return t


def _default_device():
    from ember._bindings import default_device
    return default_device.device


def as_tensor(data, dtype=None, device=None):
    dtype = to_dtype(dtype)
    dev = _device(device) if device is not None else None
    if isinstance(data, TensorImpl):
        r = data
        if dtype is not None and dtype is not data._dtype:
            r = r.to(dtype)
        if dev is not None and dev != r._device:
            r = r.to(dev)
        return r
    if isinstance(data, np.ndarray) and (dev is None or dev.type == "cpu"):
        src = _dt.from_numpy_dtype(data.dtype)
        if dtype is None or dtype is src:
            return from_numpy(data)
        return wrap_cpu(data.astype(dtype.np))
    return tensor(data, dtype=dtype, device=dev)


asarray = as_tensor


def from_numpy(ndarray):
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dt.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with "
                         "negative strides are not currently supported. (You can probably work "
                         "around this by making a copy of your array  with array.copy().) ")
    if ndarray.itemsize and any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy "
                         "the numpy array to reallocate the memory.")
    return wrap_cpu(ndarray)


def from_dlpack(ext_tensor):
    if isinstance(ext_tensor, TensorImpl):
        return ext_tensor
    arr = np.from_dlpack(ext_tensor)
    return wrap_cpu(arr)


def scalar_tensor_for(value, like):
    """A Python number as a 0-d tensor on `like`'s device, for reflected operators."""
    if isinstance(value, TensorImpl):
        return value
    d = _dt.scalar_dtype(value)
    return tensor(value, dtype=d, device=like._device if like._device.type != "cpu" else None)
