"""torch.FloatTensor, torch.LongTensor, ... (torch/csrc/tensor/python_tensor.cpp): the legacy
tensor types. Each is a class whose metaclass is `tensortype`: calling it is the legacy
constructor in that dtype (torch/csrc/utils/tensor_new.cpp legacy_tensor_new), and
`isinstance(t, torch.FloatTensor)` is true for a float32 tensor on the CPU. torch.cuda.FloatTensor
and the others are the same types for CUDA tensors (ember.cuda gets them from ember/__init__.py)."""
import numpy as np

from ember._size import Size
from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.layout import strided
from ember.core.tensor_impl import TensorImpl

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]

# c10's names of the scalar types, as TensorOptions prints them
_CPP = {_dt.float32: "float", _dt.float64: "double", _dt.float16: "c10::Half",
        _dt.bfloat16: "c10::BFloat16", _dt.int64: "long int", _dt.int32: "int",
        _dt.int16: "short int", _dt.int8: "signed char", _dt.uint8: "unsigned char",
        _dt.bool_: "bool", _dt.complex64: "c10::complex<float>",
        _dt.complex128: "c10::complex<double>"}

_SIGNATURES = ("new() received an invalid combination of arguments - got ({}), but expected one of:\n"
               " * (*, torch.device device = None)\n"
               " * (torch.Storage storage)\n"
               " * (Tensor other)\n"
               " * (tuple of ints size, *, torch.device device = None)\n"
               " * (object data, *, torch.device device = None)\n")


def _argtype(v):
    if isinstance(v, TensorImpl):
        return "Tensor"
    if isinstance(v, _dt.dtype):
        return "torch.dtype"
    if isinstance(v, _device):
        return "torch.device"
    if isinstance(v, Size):
        return "torch.Size"
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _options(dtype, device_type):
    return (f"TensorOptions(dtype={_CPP[dtype]}, device={device_type}, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")


def _is_int(v):
    return isinstance(v, (int, np.integer))


def legacy_new(dtype, device_type, args, kwargs):
    """legacy_tensor_new: the constructor of a legacy type in `dtype` on `device_type`."""
    import ember  # lazy: the factories are the public functions, bound after this module
    bad = [k for k in kwargs if k != "device"]
    if bad:
        got = ", ".join([_argtype(a) for a in args] + [f"{k}={_argtype(v)}" for k, v in kwargs.items()])
        raise TypeError(_SIGNATURES.format(got))
    device = kwargs.get("device")
    if device is not None:
        dv = device if isinstance(device, _device) else _device(device)
        if dv.type != device_type:
            raise RuntimeError(f"legacy constructor expects device type: {device_type} but device "
                               f"type: {dv.type} was passed")
    if device_type == "cuda":
        from ember import cuda  # lazy: CUDA is initialised only when a CUDA type is used
        if not cuda.is_available():
            raise TypeError(f"type torch.cuda.{_dt.LEGACY_NAMES[dtype]} not available. Torch not "
                            "compiled with CUDA enabled.")
    dev = _device(device_type)
    if not args:
        return ember.empty(0, dtype=dtype, device=dev)
    a0 = args[0]
    if len(args) == 1 and isinstance(a0, TensorImpl):
        if device is not None:
            raise RuntimeError("Legacy tensor constructor of the form torch.Tensor(tensor, "
                               "device=device) is not supported.  Use torch.tensor(...) or "
                               "torch.as_tensor(...) instead.")
        if a0._dtype is not dtype or a0._device.type != device_type:
            raise TypeError(f"expected {_options(dtype, device_type)} (got "
                            f"{_options(a0._dtype, a0._device.type)})")
        return ember.ops.aten.alias(a0)
    if len(args) == 1 and isinstance(a0, Size):
        return ember.empty(tuple(a0), dtype=dtype, device=dev)
    if _is_int(a0) and not isinstance(a0, bool):  # a bool first is data, later ones are sizes
        for i, a in enumerate(args):
            if not _is_int(a):
                raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {i + 1} "
                                f"with error \"type must be tuple of ints,but got {_argtype(a)}\"")
        size = [int(a) for a in args]
        for s in size:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {size}")
        return ember.empty(tuple(size), dtype=dtype, device=dev)
    if len(args) > 1:
        got = ", ".join([_argtype(a) for a in args] + [f"{k}={_argtype(v)}" for k, v in kwargs.items()])
        raise TypeError(_SIGNATURES.format(got))
    if isinstance(a0, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(a0, (list, tuple, np.ndarray)):
        raise TypeError(f"new(): data must be a sequence (got {_argtype(a0)})")
    return ember.tensor(a0, dtype=dtype, device=dev)


class tensortype(type):
    """The metaclass of the legacy tensor types (torch.tensortype)."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, TensorImpl) and obj._dtype is cls.dtype
                and obj._device.type == cls._device_type)

    def __call__(cls, *args, **kwargs):
        return legacy_new(cls.dtype, cls._device_type, args, kwargs)

    @property
    def is_cuda(cls):
        return cls._device_type == "cuda"

    @property
    def is_sparse(cls):
        return False


def _make(dtype, device_type):
    name = _dt.LEGACY_NAMES[dtype]
    module = "ember" if device_type == "cpu" else "ember.cuda"
    return tensortype(name, (), {"dtype": dtype, "_device_type": device_type, "layout": strided,
                                 "__module__": module, "__qualname__": name, "__slots__": ()})


_CPU = {d: _make(d, "cpu") for d in _dt.LEGACY_NAMES}
CUDA_TYPES = {d: _make(d, "cuda") for d in _dt.LEGACY_NAMES}
FloatTensor = _CPU[_dt.float32]
DoubleTensor = _CPU[_dt.float64]
HalfTensor = _CPU[_dt.float16]
BFloat16Tensor = _CPU[_dt.bfloat16]
LongTensor = _CPU[_dt.int64]
IntTensor = _CPU[_dt.int32]
ShortTensor = _CPU[_dt.int16]
CharTensor = _CPU[_dt.int8]
ByteTensor = _CPU[_dt.uint8]
BoolTensor = _CPU[_dt.bool_]
