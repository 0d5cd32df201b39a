"""Tensor.to / Tensor.type and pickling support."""
import numpy as np

from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.tensor_impl import TensorImpl, make_meta, wrap_cpu
from ember.dispatch.resolve import to_dtype

_TYPE_NAMES = {"torch.FloatTensor": _dt.float32, "torch.DoubleTensor": _dt.float64,
               "torch.HalfTensor": _dt.float16, "torch.BFloat16Tensor": _dt.bfloat16,
               "torch.LongTensor": _dt.int64, "torch.IntTensor": _dt.int32,
               "torch.ShortTensor": _dt.int16, "torch.CharTensor": _dt.int8,
               "torch.ByteTensor": _dt.uint8, "torch.BoolTensor": _dt.bool_}
_LEGACY = {v: k for k, v in _TYPE_NAMES.items()}


def _parse_to(args, kwargs):
    dev = dtype = None
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    memory_format = kwargs.pop("memory_format", None)
    if "device" in kwargs:
        dev = kwargs.pop("device")
    if "dtype" in kwargs:
        dtype = kwargs.pop("dtype")
    if "other" in kwargs:
        args = (kwargs.pop("other"),) + tuple(args)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    rest = list(args)
    if rest and isinstance(rest[0], TensorImpl):
        o = rest.pop(0)
        dev, dtype = o._device, o._dtype
    elif rest and (isinstance(rest[0], (str, _device)) or (isinstance(rest[0], int)
                                                          and not isinstance(rest[0], bool))):
        dev = rest.pop(0)
    if rest and (isinstance(rest[0], _dt.dtype) or rest[0] in (float, int, bool, complex)):
        dtype = rest.pop(0)
    if rest and isinstance(rest[0], bool):
        non_blocking = rest.pop(0)
    if rest and isinstance(rest[0], bool):
        copy = rest.pop(0)
    if rest:
        raise TypeError(f"to() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    return (_device(dev) if dev is not None else None, to_dtype(dtype), non_blocking, copy,
            memory_format)


def to(self, *args, **kwargs):
    dev, dtype, non_blocking, copy, memory_format = _parse_to(args, kwargs)
    same_dev = dev is None or dev == self._device or (
        dev.type == self._device.type and dev.index is None and self._device.index in (None, 0))
    same_dt = dtype is None or dtype is self._dtype
    if same_dev and same_dt and not copy:
        return self
    return self._to_copy(dtype=dtype or self._dtype, device=dev or self._device,
                         non_blocking=non_blocking)


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return _LEGACY.get(self._dtype, "torch.Tensor")
    if isinstance(dtype, str):
        d = _TYPE_NAMES.get(dtype.replace("ember.", "torch."))
        if d is None:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = d
    return self.to(to_dtype(dtype))


def rebuild(arr, dtype_name, shape, device, requires_grad):
    d = _dt._by_name(dtype_name)
    if device == "meta":
        t = make_meta(shape, d)
    else:
        t = wrap_cpu(np.array(arr, dtype=d.np).reshape(shape))
        if device != "cpu":
            t = t.to(device)
    if requires_grad:
        t.requires_grad_()
    return t
