"""Tensor.to / Tensor.type, pickling and deepcopy support (torch/_tensor.py, python_arg_parser)."""
import numpy as np

from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.layout import suggest_memory_format
from ember.core.tensor_impl import TensorImpl, make_meta, wrap_cpu

_LEGACY_NAMES = _dt.LEGACY_NAMES
# "torch.FloatTensor" -> (dtype, device type or None); "ember." works as well as "torch."
_TYPE_NAMES = {}
for _d, _n in _LEGACY_NAMES.items():
    for _p in ("torch", "ember"):
        _TYPE_NAMES[f"{_p}.{_n}"] = (_d, "cpu")
        _TYPE_NAMES[f"{_p}.cuda.{_n}"] = (_d, "cuda")
_PYTYPES = {float: _dt.float64, int: _dt.int64, bool: _dt.bool_, complex: _dt.complex128}


def legacy_type_name(t):
    return _dt.legacy_type_name(t._dtype, t._device.type)


# ---- Tensor.to argument parsing -------------------------------------------------------------
def _is_dev(v):
    return v is None or isinstance(v, (str, _device)) or (isinstance(v, int)
                                                          and not isinstance(v, bool))


def _is_dt(v):
    return v is None or isinstance(v, _dt.dtype) or v is float or v is int or v is bool or \
        v is complex


def _is_dt_req(v):
    return v is not None and _is_dt(v)


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))


def _is_tensor(v):
    return isinstance(v, TensorImpl)


_OPT_TAIL = (("non_blocking", _is_bool), ("copy", _is_bool))
_SIGS = (
    (("device", _is_dev), ("dtype", _is_dt)) + _OPT_TAIL,
    (("dtype", _is_dt_req),) + _OPT_TAIL,
    (("tensor", _is_tensor),) + _OPT_TAIL,
)
_TO_SIGS = (
    " * (ember.device device = None, ember.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, ember.memory_format memory_format = None)\n"
    " * (ember.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "ember.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "ember.memory_format memory_format = None)\n")


def _tname(v):
    if isinstance(v, TensorImpl):
        return "Tensor"
    if isinstance(v, _dt.dtype):
        return "ember.dtype"
    if isinstance(v, _device):
        return "ember.device"
    return type(v).__name__


def invalid_args(name, args, kwargs, sigs):
    pos = [_tname(a) for a in args]
    kws = [f"{k}={_tname(v)}" for k, v in kwargs.items()]
    got = ", ".join(pos + kws) if pos else "".join(k + ", " for k in kws)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{sigs}")


def _bind(sig, args, kwargs):
    if len(args) > len(sig):
        return None
    vals = {}
    for (name, chk), a in zip(sig, args):
        if not chk(a):
            return None
        vals[name] = a
    for k, v in kwargs.items():
        if k == "memory_format":
            if v is not None and type(v).__name__ != "memory_format":
                return None
            vals[k] = v
            continue
        chk = None
        for name, c in sig:
            if name == k:
                chk = c
                break
        if chk is None:
            return None
        if k in vals or not chk(v):
            return None
        vals[k] = v
    first = sig[0][0]
    if first in ("dtype", "tensor") and first not in vals:
        return None
    return vals


def _parse_to(args, kwargs):
    for sig in _SIGS:
        vals = _bind(sig, args, kwargs)
        if vals is not None:
            break
    else:
        raise invalid_args("to", args, kwargs, _TO_SIGS)
    dev = vals.get("device")
    dtype = vals.get("dtype")
    o = vals.get("tensor")
    if o is not None:
        dev, dtype = o._device, o._dtype
    if dtype is not None and not isinstance(dtype, _dt.dtype):
        dtype = _PYTYPES[dtype]
    if dev is not None and not isinstance(dev, _device):
        dev = _device(dev)
    return (dev, dtype, bool(vals.get("non_blocking", False)), bool(vals.get("copy", False)),
            vals.get("memory_format"))


def _same_device(dev, cur):
    return dev is None or dev is cur or dev == cur or (
        dev.type == cur.type and dev.index is None and cur.index in (None, 0))


def to(self, *args, **kwargs):
    if not kwargs and len(args) == 1:
        a = args[0]
        if isinstance(a, _dt.dtype):  # fast path: t.to(dtype)
            return self if a is self._dtype else self._to_copy(dtype=a)
    dev, dtype, non_blocking, copy, memory_format = _parse_to(args, kwargs)
    same_dev = _same_device(dev, self._device)
    same_dt = dtype is None or dtype is self._dtype
    # to_will_alias: preserve_format, or the format the tensor's strides suggest already
    mf_ok = memory_format is None or memory_format.name == "preserve_format" or \
        suggest_memory_format(self._shape, self.stride()) is memory_format
    if same_dev and same_dt and not copy and mf_ok:
        return self
    return self._to_copy(dtype=dtype or self._dtype, device=self._device if same_dev else dev,
                         non_blocking=non_blocking, memory_format=memory_format)


def to_dtype_fast(self, d, memory_format=None):
    """t.float(), t.long(), ...: self when the dtype already matches (and the memory format too:
    Tensor.to's rule)."""
    if memory_format is not None:
        return to(self, d, memory_format=memory_format)
    return self if d is self._dtype else self._to_copy(dtype=d)


def type_(self, dtype=None, non_blocking=False, **kwargs):
    if dtype is None:
        if kwargs:
            raise TypeError(f"type() got an unexpected keyword argument '{next(iter(kwargs))}'")
        return legacy_type_name(self)
    dev = None
    if isinstance(dtype, _dt.dtype):
        d = dtype
    else:
        if isinstance(dtype, type):
            mod = dtype.__module__
            name = dtype.__name__ if mod == "builtins" else f"{mod}.{dtype.__name__}"
            if hasattr(dtype, "dtype") and isinstance(getattr(dtype, "dtype", None), _dt.dtype):
                name = getattr(dtype, "__legacy_name__", name)
        elif isinstance(dtype, str):
            name = dtype
        else:
            raise TypeError("dtype must be a type, str, or dtype object")
        r = _TYPE_NAMES.get(name)
        if r is None:
            raise ValueError(f"invalid type: '{name}'")
        d, devtype = r
        if devtype != self._device.type:
            dev = _device(devtype)
    if d is self._dtype and dev is None:
        return self
    return self._to_copy(dtype=d, device=dev or self._device, non_blocking=non_blocking)


# ---- pickling and deepcopy ------------------------------------------------------------------
def _storage_layout(t):
    """(flat uint8 buffer, byte offset, byte strides) of a CPU tensor within its storage."""
    a = t._np
    isz = a.itemsize
    st = t.untyped_storage()
    buf = st.data
    if (buf is not None and buf.ndim == 1 and buf.dtype == np.uint8 and buf.flags.c_contiguous):
        off = t.storage_offset() * isz
        return buf, off, a.strides
    # an exotic owner: the tensor's own elements, compacted
    c = np.ascontiguousarray(a)
    return c.reshape(-1).view(np.uint8), 0, c.strides


def _as_view(buf, dtype, shape, strides, offset):
    if 0 in shape:
        return np.zeros(shape, dtype=dtype.np)
    return np.ndarray(shape, dtype=dtype.np, buffer=buf, offset=offset, strides=strides)


def reduce_tensor(t):
    cls = type(t)
    dev = t._device
    state = t._dict_or_none() or None
    if dev.type == "meta":
        args = (None, t._dtype.name, tuple(t._shape), tuple(t.stride()), 0, "meta",
                t.requires_grad, cls, state)
        return (rebuild, args)
    src = t if dev.type == "cpu" else t.detach().to("cpu")
    if src._np is None:
        src = src.contiguous()
    buf, off, strides = _storage_layout(src)
    return (rebuild, (buf, t._dtype.name, tuple(t._shape), strides, off, str(dev),
                      t.requires_grad, cls, state))


def rebuild(buf, dtype_name, shape, strides, offset, device, requires_grad, cls=None, state=None):
    d = _dt._by_name(dtype_name)
    if device == "meta":
        t = make_meta(shape, d, strides)
    else:
        t = wrap_cpu(_as_view(buf, d, shape, strides, offset))
        if device != "cpu":
            t = t.to(device)
    _finish(t, cls, state, requires_grad)
    return t


def _finish(t, cls, state, requires_grad):
    if cls is not None and cls is not type(t):
        t.__class__ = cls
    if requires_grad:
        t.requires_grad_()
    if state:
        t.__dict__.update(state)


_NOT_LEAF = ("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
             "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
             "because of a torch.nn.utils.weight_norm usage, see "
             "https://github.com/pytorch/pytorch/pull/103001")


def deepcopy_tensor(self, memo):
    import copy
    if not self.is_leaf:
        raise RuntimeError(_NOT_LEAF)
    r = memo.get(id(self))
    if r is not None:
        return r
    if self._device.type == "cpu" and self._np is not None:
        # copy the storage once per deepcopy call, so views copied together stay views
        st = self.untyped_storage()
        buf, off, strides = _storage_layout(self)
        key = ("ember.storage", id(st))
        new_buf = memo.get(key)
        if new_buf is None:
            new_buf = memo[key] = buf.copy()
            memo.setdefault(id(memo), []).append(st)  # keep `st` alive while its id is a key
        r = wrap_cpu(_as_view(new_buf, self._dtype, tuple(self._shape), strides, off))
    else:
        r = self.detach().clone()
    if type(self) is not type(r):
        r.__class__ = type(self)
    if self.requires_grad:
        r.requires_grad_()
    g = self.grad
    if g is not None:
        r.grad = g.__deepcopy__(memo)
    d = self._dict_or_none()
    if d:
        r.__dict__.update(copy.deepcopy(d, memo))
    memo[id(self)] = r
    return r


__all__ = ["to", "type_", "rebuild", "reduce_tensor", "deepcopy_tensor", "legacy_type_name"]
