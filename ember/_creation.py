"""ember.tensor, as_tensor, asarray, from_numpy, from_dlpack: tensors from Python data
(torch/csrc/utils/tensor_new.cpp, tensor_numpy.cpp)."""
import warnings

import numpy as np

from ember.core import chalf as _chalf, dtype as _dt
from ember.core.device import device as _device
from ember.core.tensor_impl import TensorImpl, contiguous_strides, make_meta, set_empty_geometry, wrap_cpu
from ember.dispatch.backend_select import default_device
from ember.dispatch.resolve import to_dtype

_PROMOTE = _dt.PROMOTE
_NP2DT = _dt.NP2DT
_int64, _bool = _dt.int64, _dt.bool_
_COMPLEX128 = _dt.complex128
_COMPLEX32 = _dt.complex32
_BOOL, _INT, _FLOAT, _COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX
_SUPPORTED = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, "
              "and bool")
_MAX_DIMS = 64


def _np_dtype(npdt, what="np.ndarray"):
    d = _NP2DT.get(npdt)
    if d is None or d is _COMPLEX32:  # NumPy has no complex32: a structured array is no number array
        raise TypeError(f"can't convert {what} of type numpy.{np.dtype(npdt).type.__name__}. The only "
                        f"supported types are: {_SUPPORTED}.")
    return d


# ---- dtype inference (infer_scalar_type) -------------------------------------------------------
def _infer(data, flags):
    """PyTorch's dtype of `data`; flags[0] is set when a Tensor sits inside a sequence."""
    t = type(data)
    if t is float:
        return _dt.defaults.float
    if t is int:
        return _int64
    if t is bool:
        return _bool
    if isinstance(data, np.generic):
        return _np_dtype(data.dtype, "np.ndarray")
    if isinstance(data, float):
        return _dt.defaults.float
    if isinstance(data, int):
        return _bool if isinstance(data, bool) else _int64
    if isinstance(data, complex):
        return _dt.defaults.complex
    if isinstance(data, TensorImpl):
        flags[0] = True
        return data._dtype
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{t.__name__}'")
    if isinstance(data, np.ndarray):
        return _np_dtype(data.dtype)
    if t is list or t is tuple or _is_sequence(data):
        best = None
        fl = _dt.defaults.float
        for x in data:
            tx = type(x)
            if tx is float:
                d = fl
            elif tx is int:
                d = _int64
            else:
                d = _infer(x, flags)
            if best is None:
                best = d
            elif d is not best:
                best = _PROMOTE[(best, d)]
                if best is _COMPLEX128:
                    return best
        return fl if best is None else best
    raise RuntimeError(f"Could not infer dtype of {t.__name__}")


def _is_sequence(x):
    return hasattr(x, "__len__") and hasattr(x, "__getitem__") and not isinstance(x, (dict, str, bytes))


# ---- torch's messages for malformed nested data ---------------------------------------------------
def _seq(x):
    return isinstance(x, (list, tuple, np.ndarray, str, bytes, range)) or (
        _is_sequence(x) and not isinstance(x, TensorImpl))


def _sizes(data):
    sizes = []
    x = data
    while _seq(x) and not (isinstance(x, np.ndarray) and x.ndim == 0):
        n = len(x)
        sizes.append(n)
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type(x).__name__}'")
        if n == 0:
            break
        x = x[0]
    return sizes


def _ragged_error(data, d):
    sizes = _sizes(data)

    def walk(x, dim):
        if dim == len(sizes):
            if _seq(x) and not isinstance(x, np.ndarray):
                nm = type(x).__name__
                if d.category in (_INT, _BOOL):
                    raise TypeError(f"'{nm}' object cannot be interpreted as an integer")
                raise TypeError(f"must be real number, not {nm}")
            return
        if not _seq(x):
            raise TypeError("not a sequence")
        if len(x) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
        for y in x:
            walk(y, dim + 1)
    walk(data, 0)


def _detensor(x):
    """Tensors inside sequences are scalars (one element), as PyTorch reads them."""
    if isinstance(x, TensorImpl):
        if x.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x.item()
    if isinstance(x, (list, tuple)):
        return [_detensor(y) for y in x]
    return x


# ---- conversion -------------------------------------------------------------------------------
def _overflow(d):
    return RuntimeError(f"value cannot be converted to type {d.name} without overflow")


def _cast(a, d):
    """An array NumPy built from Python scalars, converted to d as PyTorch stores each scalar."""
    k = a.dtype.kind
    c = d.category
    npd = d.np
    if a.dtype == npd:
        return a
    if c == _INT:
        if k == "c":
            raise TypeError("'complex' object cannot be interpreted as an integer")
        if k in "uO":
            raise ValueError("Overflow when unpacking long long")
        lo, hi = _LIMITS[d.name]
        if a.size:
            if k == "f":
                if not (np.all(a >= lo) and np.all(a <= hi)):  # NaN fails too
                    raise _overflow(d)
            elif k == "i" and d is not _int64:
                mn, mx = a.min(), a.max()
                if (mn < -hi or mx > hi) if lo == 0 else (mn < lo or mx > hi):
                    raise _overflow(d)
        return a.astype(npd)
    if k == "c" and c == _FLOAT:
        raise TypeError("must be real number, not complex")
    if k == "O":
        a = np.array(a.tolist(), dtype=np.float64 if c != _COMPLEX else np.complex128)
    return _astype(a, d)


def _astype(a, d):
    """a.astype(d.np); NumPy cannot convert numbers into complex32's structured dtype."""
    return _chalf.narrow(a) if d is _COMPLEX32 else a.astype(d.np)


_LIMITS = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767),
           "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}


def _to_array(data, d, flags):
    if flags[0]:
        data = _detensor(data)
    if isinstance(data, np.ndarray):
        return _astype(data, d)
    try:
        a = np.array(data)
    except (ValueError, TypeError, OverflowError):
        _ragged_error(data, d)
        raise
    k = a.dtype.kind
    if k not in "biufc":
        _ragged_error(data, d)
        if k != "O" or a.ndim != len(_sizes(data)):
            raise TypeError(f"tensor(): could not convert data of type {a.dtype}")
    return _cast(a, d)


def _default_device():
    return default_device.device


def _place(arr, dev):
    if dev is None or dev.type == "cpu":
        return wrap_cpu(arr)
    if dev.type == "meta":
        return make_meta(arr.shape, _NP2DT[arr.dtype])
    return wrap_cpu(arr).to(dev)


def _check_ndarray(a):
    if any(s < 0 for s in a.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with "
                         "negative strides are not currently supported. (You can probably work "
                         "around this by making a copy of your array  with array.copy().) ")
    if not a.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. "
                         "Conversion between byte orders is currently not supported.")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested sequences, NumPy arrays, scalars, tensors)."""
    if dtype is not None and dtype.__class__ is not _dt.dtype:
        dtype = to_dtype(dtype)
    dev = _device(device) if device is not None else _default_device()
    if isinstance(data, TensorImpl):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        r = _copy_to(data.detach(), dtype, dev)
    else:
        if isinstance(data, np.ndarray):
            _check_ndarray(data)
            d = dtype or _np_dtype(data.dtype)
            arr = _chalf.narrow(data) if d is _COMPLEX32 else np.array(data, dtype=d.np, order="K", copy=True)
        else:
            flags = [False]
            try:
                inferred = _infer(data, flags)
            except TypeError:
                if not isinstance(data, (str, bytes)):
                    _sizes(data)  # ['a']: PyTorch reports the endless str nesting first
                raise
            d = dtype or inferred
            arr = _to_array(data, d, flags)
            if arr.ndim and not arr.flags.c_contiguous:
                arr = np.ascontiguousarray(arr)
        if arr.size == 0 and arr.ndim:  # NumPy gives empty arrays 0 strides; PyTorch contiguous ones
            arr = np.lib.stride_tricks.as_strided(
                np.empty(1, arr.dtype), arr.shape,
                tuple(s * arr.itemsize for s in contiguous_strides(arr.shape)))
        r = _place(arr, dev)
    if requires_grad:
        r.requires_grad_()
    return r


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor, sharing memory with a tensor or NumPy array when dtype and device allow."""
    dtype = to_dtype(dtype)
    dev = _device(device) if device is not None else None
    if isinstance(data, TensorImpl):
        if (dtype is not None and dtype is not data._dtype) or (dev is not None and dev != data._device):
            return data.to(device=dev or data._device, dtype=dtype or data._dtype)
        return data
    if isinstance(data, np.ndarray):
        _check_ndarray(data)
        src = _np_dtype(data.dtype)
        if dev is None:
            dev = _default_device()
        if dev is None or dev.type == "cpu":
            if dtype is None or dtype is src:
                return from_numpy(data)
            return wrap_cpu(_astype(data, dtype))
        return _place(_astype(data, dtype or src), dev)
    return tensor(data, dtype=dtype, device=dev)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: share memory with tensors, arrays, DLPack and buffer objects unless copy=True."""
    dtype = to_dtype(dtype)
    dev = _device(device) if device is not None else None
    r = None
    if isinstance(obj, TensorImpl):
        r = obj
    elif hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        r = from_dlpack(obj)
    elif isinstance(obj, np.ndarray):
        _check_ndarray(obj)
        r = from_numpy(obj)
    elif isinstance(obj, np.generic):
        r = wrap_cpu(np.array(obj))
    elif isinstance(obj, (bytes, bytearray, memoryview)) or _has_buffer(obj):
        d = dtype or _dt.defaults.float
        mv = memoryview(obj)
        if not isinstance(obj, (bytes, bytearray)) and mv.format not in ("B", "b", "c") and dtype is None:
            arr = np.asarray(obj)
            r = wrap_cpu(arr)
        else:
            n = mv.nbytes
            if n % d.itemsize:
                raise ValueError(f"buffer length ({n} bytes) after offset (0 bytes) must be a multiple "
                                 f"of element size ({d.itemsize})")
            if isinstance(obj, bytes) and not _warned_buffer[0]:
                _warned_buffer[0] = True
                warnings.warn("The given buffer is not writable, and PyTorch does not support "
                              "non-writable tensors. This means you can write to the underlying "
                              "(supposedly non-writable) buffer using the tensor. You may want to copy "
                              "the buffer to protect its data or make it writable before converting it "
                              "to a tensor. This type of warning will be suppressed for the rest of "
                              "this program.", UserWarning, stacklevel=2)
            r = wrap_cpu(np.frombuffer(obj, dtype=d.np))
    if r is None:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        r = tensor(obj, dtype=dtype, device=dev)
    else:
        same = (dtype is None or dtype is r._dtype) and (dev is None or dev == r._device)
        if copy is False and not same:
            if dtype is not None and dtype is not r._dtype:
                raise ValueError(f"can't alias tensor with dtype '{r._dtype._short}' into dtype "
                                 f"'{dtype._short}'.")
            raise ValueError(f"can't alias tensor on device '{r._device}' into device '{dev}'.")
        if copy:
            r = _copy_to(r.detach(), dtype, dev)
        elif not same:
            r = r.to(device=dev or r._device, dtype=dtype or r._dtype)
    if requires_grad:
        r.requires_grad_()
    return r


def _copy_to(t, dtype, dev):
    """A copy of t with dtype/device changed where given."""
    if (dtype is not None and dtype is not t._dtype) or (dev is not None and dev != t._device):
        return t.to(device=dev or t._device, dtype=dtype or t._dtype)
    return t.clone()


def _has_buffer(obj):
    try:
        memoryview(obj)
    except TypeError:
        return False
    return not isinstance(obj, (list, tuple))


_warned_readonly = [False]
_warned_buffer = [False]


def from_numpy(ndarray):
    """A CPU tensor sharing memory with `ndarray`."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _check_ndarray(ndarray)
    _np_dtype(ndarray.dtype)
    if ndarray.itemsize and any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy "
                         "the numpy array to reallocate the memory.")
    if not ndarray.flags.writeable and not _warned_readonly[0]:
        _warned_readonly[0] = True
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support "
                      "non-writable tensors. This means writing to this tensor will result in "
                      "undefined behavior. You may want to copy the array to protect its data or "
                      "make it writable before converting it to a tensor. This type of warning will "
                      "be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    if not ndarray.size:  # torch keeps NumPy's strides, which an empty tensor would not report
        set_empty_geometry(ndarray, [s // ndarray.itemsize for s in ndarray.strides], 0)
    return wrap_cpu(ndarray)


class _Capsule:
    """A bare DLPack capsule, given the __dlpack__ protocol NumPy's from_dlpack expects."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with an object exporting DLPack (a torch tensor, a NumPy array...)."""
    if isinstance(ext_tensor, TensorImpl):
        return ext_tensor.detach()
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ == "PyCapsule":
            ext_tensor = _Capsule(ext_tensor)
        else:
            raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules can "
                               "be consumed only once, so you might have already constructed a tensor "
                               "from it once.")
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev = ext_tensor.__dlpack_device__()
        if int(dev[0]) != 1:
            raise RuntimeError(f"from_dlpack: only CPU (kDLCPU) memory is supported here, got device "
                               f"type {int(dev[0])}")
    try:
        arr = np.from_dlpack(ext_tensor)
    except (BufferError, TypeError, RuntimeError) as e:
        raise RuntimeError(f"from_dlpack: {e}") from None
    _np_dtype(arr.dtype)
    return wrap_cpu(arr)


def scalar_tensor_for(value, like):
    """A Python number as a 0-d tensor on `like`'s device, for reflected operators."""
    if isinstance(value, TensorImpl):
        return value
    d = _dt.scalar_dtype(value)
    if like._device.type == "cpu":
        return wrap_cpu(np.array(value, dtype=d.np))
    return tensor(value, dtype=d, device=like._device)
