"""ember.save / ember.load: PyTorch's checkpoint formats (torch/serialization.py), without torch.

A checkpoint written here is the file torch.save writes, byte layout included: a zip archive (stored,
64-byte aligned records, data descriptors and zip64 end records, as PyTorch's miniz writer lays
them out) holding

    <archive>/data.pkl                 the pickled object; every tensor is a call of
                                       torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
                                       requires_grad, backward_hooks) whose storage is the
                                       persistent id ('storage', torch.FloatStorage, key, location,
                                       numel)
    <archive>/.format_version          "1"
    <archive>/.storage_alignment       "64"
    <archive>/byteorder                "little"
    <archive>/data/<key>               the raw little-endian bytes of each storage, saved once
    <archive>/version                  "3\\n"
    <archive>/.data/serialization_id   40 random digits

The pickle names torch's objects (torch._utils._rebuild_tensor_v2, torch.FloatStorage, torch.float32,
torch.Size, torch.device, collections.OrderedDict, ...) so torch.load reads ember's files, and
ember.load maps those names back to ember's. Tensors that share a storage are saved once and come
back sharing one buffer, with their sizes, strides and offsets. The legacy (non-zip) format of
`_use_new_zipfile_serialization=False` is written and read too.

`weights_only=True` (the default) unpickles with a restricted interpreter that, like torch's
_weights_only_unpickler, only builds the allowlisted globals (tensor and storage rebuilds, dtypes,
devices, Size, OrderedDict and basic containers, plus what add_safe_globals allows) and refuses
anything else before it can run.
"""
import _compat_pickle
import importlib
import io
import os
import pickle
import random
import re
import struct
import sys
import threading
import warnings
import zlib
from collections import Counter, OrderedDict
from pickle import UnpicklingError

import numpy as np

from ember._size import Size
from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.storage import UntypedStorage
from ember.core.tensor_impl import TensorImpl
from ember.tensor import Tensor

DEFAULT_PROTOCOL = 2
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
STORAGE_ALIGNMENT = 64
_MAX32 = 0xFFFFFFFF

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely "
    "succeed, but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)

_tls = threading.local()  # map_location of the load in progress (for the device-tensor rebuilds)


# ---- dtypes and storage types ------------------------------------------------------------------
class _UnsupportedDtype:
    """A torch dtype ember does not have (uint16, float8_e4m3fn, quantized, ...): it can be named in
    a checkpoint (and its storage bytes read), but no tensor of it can be built."""
    __slots__ = ("name", "itemsize")

    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_unsupported_dtype, (self.name,))


_UNSUPPORTED_SIZES = {
    "uint16": 2, "uint32": 4, "uint64": 8, "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1, "float8_e5m2": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1,
    "float4_e2m1fn_x2": 1, "bits8": 1, "bits16": 2, "bits1x8": 1, "bits2x4": 1, "bits4x2": 1,
    "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1,
    "uint1": 1, "uint2": 1, "uint3": 1, "uint4": 1, "uint5": 1, "uint6": 1, "uint7": 1,
    "int1": 1, "int2": 1, "int3": 1, "int4": 1, "int5": 1, "int6": 1, "int7": 1,
}
_UNSUPPORTED = {n: _UnsupportedDtype(n, s) for n, s in _UNSUPPORTED_SIZES.items()}


def _unsupported_dtype(name):
    return _UNSUPPORTED[name]


class StorageType:
    """A legacy typed-storage class name of a checkpoint (torch.FloatStorage, ...): its dtype.
    ember.save writes one as the global `torch.<name>`; ember.load reads such globals as these."""
    __slots__ = ("name", "dtype", "module")

    def __init__(self, name, dtype, module="torch"):
        self.name = name
        self.dtype = dtype
        self.module = module

    def __repr__(self):
        return f"StorageType(dtype={_dtype_repr(self.dtype)})"

    __str__ = __repr__


def _dtype_repr(d):
    return "torch." + d.name


_STORAGE_OF = {  # dtype name -> torch's legacy storage class name
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage", "bfloat16": "BFloat16Storage",
    "complex128": "ComplexDoubleStorage", "complex64": "ComplexFloatStorage",
    "qint8": "QInt8Storage", "qint32": "QInt32Storage", "quint8": "QUInt8Storage",
    "quint4x2": "QUInt4x2Storage", "quint2x4": "QUInt2x4Storage",
}


def _dtype_by_torch_name(name):
    d = _dt._NAMES.get(name)
    return d if d is not None else _UNSUPPORTED.get(name)


STORAGE_TYPES = {sname: StorageType(sname, _dtype_by_torch_name(dname))
                 for dname, sname in _STORAGE_OF.items()}
_STORAGE_FOR_DTYPE = {STORAGE_TYPES[s].dtype: STORAGE_TYPES[s] for s in STORAGE_TYPES}
# torch.storage.UntypedStorage: bytes
UNTYPED_STORAGE = StorageType("UntypedStorage", _dt.uint8, "torch.storage")


def _storage_type_by_name(name):
    """torch's find_class hook: a `...Storage` name of a checkpoint as its StorageType."""
    if name == "UntypedStorage":
        return UNTYPED_STORAGE
    return STORAGE_TYPES.get(name)


def _check_supported(dtype):
    if not isinstance(dtype, _dt.dtype):
        if isinstance(dtype, _UnsupportedDtype):
            raise RuntimeError(f"ember does not support dtype {dtype!r}: a tensor of it in this "
                               "checkpoint cannot be loaded")
        raise TypeError(f"expected a dtype, got {type(dtype).__name__}")
    if dtype.np is None:
        raise RuntimeError(f"cannot load a tensor of dtype {dtype!r}: it needs the ml_dtypes package")


# ---- rebuild functions (the callables of the pickles; named torch._utils.* in a checkpoint) ------
def _parameter_class():
    """ember.nn.Parameter when ember has one (imported already or importable), else None."""
    m = sys.modules.get("ember.nn")
    if m is None:
        try:
            m = importlib.import_module("ember.nn")
        except ImportError:
            return None
    return getattr(m, "Parameter", None)


def _as_loaded(storage):
    if isinstance(storage, _LoadedStorage):
        return storage
    raise TypeError(f"expected a storage loaded from the checkpoint, got {type(storage).__name__}")


def _apply_metadata(t, metadata):
    # the conjugate / negative bits of a saved view: ember has no lazy bits, so resolve them
    if metadata:
        if metadata.get("conj"):
            t = _resolve(t, ("conj_physical", "conj"), np.conj)
        if metadata.get("neg"):
            t = _resolve(t, ("neg",), np.negative)
    return t


def _resolve(t, names, np_fn):
    if t._device.type == "meta":
        return t
    for n in names:
        m = getattr(t, n, None)
        if m is not None:
            return m()
    import ember
    return ember.from_numpy(_contig(np_fn(t.detach().to("cpu").numpy()))).to(t.device)


def _contig(a):
    """`a` as a C-contiguous array of the same shape (np.ascontiguousarray makes 0-d 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _set_grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    st = _as_loaded(storage)
    return st.tensor(st.dtype, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    t = _apply_metadata(_rebuild_tensor(storage, storage_offset, size, stride), metadata)
    return _set_grad(t, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    t = _as_loaded(storage).tensor(dtype, storage_offset, size, stride)
    return _set_grad(_apply_metadata(t, metadata), requires_grad)


def _make_parameter(data=None, requires_grad=True):
    P = _parameter_class()
    if P is not None:
        return P(data, requires_grad) if data is not None else P()
    if data is None:
        import ember
        data = ember.empty(0)
    return _set_grad(data, requires_grad and (data.is_floating_point() or data.is_complex()))


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return _make_parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_obj_state(_make_parameter(data, requires_grad), state)


def _set_obj_state(obj, state):
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    if dict_state:
        for k, v in dict_state.items():
            setattr(obj, k, v)
    if slots_state:
        for k, v in slots_state.items():
            setattr(obj, k, v)
    return obj


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if type(ret) is not new_type:
        ret = ret.as_subclass(new_type)
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        ret.__setstate__(state)
    else:
        ret = _set_obj_state(ret, state)
    return ret


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    import ember
    _check_supported(dtype)
    return ember.empty_strided(tuple(size), tuple(stride), dtype=dtype, device="meta",
                               requires_grad=requires_grad)


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    t = data.to(dtype=dtype, device=_restore_location_of(device))
    return _set_grad(t, requires_grad)


def _rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    import ember
    t = ember.from_numpy(data).to(dtype=dtype, device=_restore_location_of(device))
    return _set_grad(t, requires_grad)


def _restore_location_of(device):
    ml = getattr(_tls, "map_location", None)
    if ml is None:
        return device
    if isinstance(ml, dict):
        return ml.get(device, device)
    if isinstance(ml, (str, _device)):
        return ml
    raise RuntimeError("Callable map_location not supported with _rebuild_wrapper_subclass "
                       "or _rebuild_device_tensor_from_numpy")


def _unsupported_rebuild(name, kind):
    def rebuild(*args, **kwargs):
        raise RuntimeError(f"ember.load: {kind} tensors are not supported by ember")
    rebuild.__name__ = rebuild.__qualname__ = name
    return rebuild


_rebuild_qtensor = _unsupported_rebuild("_rebuild_qtensor", "quantized")


def _rebuild_sparse_tensor(layout, data):
    """torch._utils._rebuild_sparse_tensor: a sparse COO tensor from (indices, values, size[, is_coalesced])."""
    import ember  # lazy: the public namespace (sparse_coo_tensor), bound once ember is imported
    if layout is ember.sparse_csr:
        crow, col, values, size = data
        return ember.sparse_csr_tensor(crow, col, values, size, check_invariants=False)
    if layout is not ember.sparse_coo:
        raise RuntimeError(f"ember.load: {layout} tensors are not supported by ember")
    indices, values, size = data[:3]
    is_coalesced = data[3] if len(data) > 3 else None
    return ember.sparse_coo_tensor(indices, values, size, check_invariants=False, is_coalesced=is_coalesced)


_rebuild_nested_tensor = _unsupported_rebuild("_rebuild_nested_tensor", "nested")
_rebuild_wrapper_subclass = _unsupported_rebuild("_rebuild_wrapper_subclass", "wrapper subclass")


def _get_layout(name):
    """torch.serialization._get_layout: a layout from its name ('torch.strided')."""
    import ember
    short = name[6:] if name.startswith("torch.") else name
    lay = getattr(ember, short, None)
    if isinstance(lay, ember.layout):
        return lay
    return ember.layout(short)


# ---- names: ember objects <-> torch's global names --------------------------------------------
_TORCH_NAMES = {}   # id(ember object) -> (module, name) written in a checkpoint
_KEEP = []          # the objects of _TORCH_NAMES (ids stay valid)
_LOAD_NAMES = {}    # "module.name" -> ember object
_ALLOWED = {}       # the weights-only allowlist: "module.name" -> ember object
_tables_ready = [False]


def _name(obj, module, name, allowed=True):
    _TORCH_NAMES[id(obj)] = (module, name)
    _KEEP.append(obj)
    _LOAD_NAMES[f"{module}.{name}"] = obj
    if allowed:
        _ALLOWED[f"{module}.{name}"] = obj


def _build_tables():
    if _tables_ready[0]:
        return
    import ember
    for d in _dt.ALL:
        _name(d, "torch", d.name)
    for d in _UNSUPPORTED.values():
        _name(d, "torch", d.name)
    _name(_dt.dtype, "torch", "dtype", allowed=False)
    _name(Tensor, "torch", "Tensor")
    _name(Size, "torch", "Size")
    _name(_device, "torch", "device")
    for st in STORAGE_TYPES.values():
        _name(st, "torch", st.name)
    _name(UNTYPED_STORAGE, "torch.storage", "UntypedStorage")
    _LOAD_NAMES["torch.UntypedStorage"] = UNTYPED_STORAGE
    for f in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
              _rebuild_parameter_with_state, _rebuild_meta_tensor_no_storage,
              _rebuild_device_tensor_from_cpu_tensor, _rebuild_device_tensor_from_numpy,
              _rebuild_qtensor, _rebuild_sparse_tensor, _rebuild_nested_tensor,
              _rebuild_wrapper_subclass):
        _name(f, "torch._utils", f.__name__)
    _name(_rebuild_from_type_v2, "torch._tensor", "_rebuild_from_type_v2")
    _name(_get_layout, "torch.serialization", "_get_layout")
    for n in ("contiguous_format", "channels_last", "preserve_format"):
        _name(getattr(ember, n), "torch", n, allowed=False)
    _ALLOWED.update({
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "_codecs.encode": _codecs_encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "ember._size.Size": Size,
        "torch.nn.parameter.Parameter": _PARAM_GLOBAL,
    })
    _tables_ready[0] = True


def _codecs_encode(obj, encoding="utf-8", errors="strict"):
    import codecs
    return codecs.encode(obj, encoding, errors)


class _ParamGlobal:
    """torch.nn.parameter.Parameter of a checkpoint: ember.nn.Parameter when it exists."""

    def __call__(self, data=None, requires_grad=True):
        return _make_parameter(data, requires_grad)

    def __repr__(self):
        return "<class 'torch.nn.parameter.Parameter'>"


_PARAM_GLOBAL = _ParamGlobal()


def _torch_name_of(obj):
    n = _TORCH_NAMES.get(id(obj))
    if n is None:
        P = _parameter_class() if "ember.nn" in sys.modules else None
        if P is not None and obj is P:
            return ("torch.nn.parameter", "Parameter")
    return n


# public modules a function of a private ember module may be reached through, in torch's names
_PUBLIC_HOMES = ("ember.nn.functional", "ember", "ember.nn.init", "ember.linalg", "ember.special",
                 "ember.fft")


def _torch_path_of(obj, name=None):
    """torch's (module, qualname) for a class or function of ember's (ember.nn.modules.linear.Linear
    -> torch.nn.modules.linear.Linear), so that torch.load(weights_only=False) of a whole module
    builds torch's classes; None for everything else (pickled under its own name)."""
    module = getattr(obj, "__module__", None)
    qual = name or getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not module or not qual or not (module == "ember" or module.startswith("ember.")):
        return None
    if any(part.startswith("_") for part in module.split(".")[1:]):
        # a private module of ember's (ember._generated.functions, ember.nn._functional_x): the
        # public module that exposes the same object, if any
        short = qual.rsplit(".", 1)[-1]
        for home in _PUBLIC_HOMES:
            m = sys.modules.get(home)
            if m is not None and getattr(m, short, None) is obj:
                return "torch" + home[5:], short
        return None
    return "torch" + module[5:], qual


def _resolve_load_global(module, name):
    """The ember object a global of a checkpoint names (torch's names mapped to ember's)."""
    if module == "torch.tensor":
        module = "torch._tensor"
    full = f"{module}.{name}"
    obj = _LOAD_NAMES.get(full)
    if obj is not None:
        return obj
    if full == "torch.nn.parameter.Parameter" or full == "torch.nn.Parameter":
        P = _parameter_class()
        return P if P is not None else _PARAM_GLOBAL
    if module == "torch" or module.startswith("torch."):
        emod = "ember" + module[5:]
        try:
            m = importlib.import_module(emod)
        except ImportError:
            raise ModuleNotFoundError(f"ember.load: no module {emod!r} (ember's counterpart of "
                                      f"{module!r}) for the global {full}") from None
        try:
            obj = m
            for part in name.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(f"ember.load: {emod} has no {name!r} (ember's counterpart of the "
                                 f"global {full})") from None
        return obj
    return _MISSING


_MISSING = object()


# ---- user allowlist (torch.serialization.add_safe_globals) -------------------------------------
_safe_globals = set()


def add_safe_globals(safe_globals):
    """Allow these globals (objects, or (object, "module.name") pairs) in weights_only loads."""
    global _safe_globals
    _safe_globals = _safe_globals.union(set(safe_globals))


def get_safe_globals():
    return list(_safe_globals)


def clear_safe_globals():
    global _safe_globals
    _safe_globals = set()


class safe_globals:
    """Context manager adding globals to the weights_only allowlist for its duration."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _safe_globals
        _safe_globals = _safe_globals - set(self.safe_globals)


def _user_allowed_globals():
    rc = {}
    for f in _safe_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), "
                                 f"but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full path, "
                                f"but got: {type(f[1])}")
            f, name = f
            rc[name] = f
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


# ---- saving ------------------------------------------------------------------------------------
class _Reduced:
    """An object that pickles as a precomputed reduce tuple."""
    __slots__ = ("rv",)

    def __init__(self, rv):
        self.rv = rv


class _StorageRef:
    """A (typed) storage of a tensor being saved: the persistent id it pickles as."""
    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class _SavedStorage:
    __slots__ = ("key", "nbytes", "dtype", "data", "tensor", "keep")

    def __init__(self, key, nbytes, dtype, data=None, tensor=None, keep=None):
        self.key = key
        self.nbytes = nbytes
        self.dtype = dtype
        self.data = data        # flat contiguous uint8 CPU array, or None (fetched from `tensor`)
        self.tensor = tensor    # a device tensor whose whole storage is to be copied out
        self.keep = keep

    def buffer(self):
        if self.data is None:
            self.data = _device_storage_bytes(self.tensor, self.nbytes)
        return self.data


def _device_storage_bytes(t, nbytes):
    isz = t._dtype.itemsize
    whole = t.detach().as_strided((nbytes // isz,), (1,), 0).to("cpu")
    a = _contig(whole._np)
    return a.reshape(-1).view(np.uint8)


def _location_tag(dev):
    if dev.type == "cpu":
        return "cpu"
    if dev.type == "meta":
        return "meta"
    if dev.type == "cuda":
        return f"cuda:{dev.index or 0}"
    return str(dev)


_PLAIN_TYPES = frozenset((int, float, str, bytes, bool, type(None), tuple, list, dict, OrderedDict,
                          complex, bytearray, set, frozenset))


class _SaveContext:
    def __init__(self, legacy=False):
        self.storages = {}      # dedup key -> _SavedStorage
        self.order = []         # _SavedStorage in the order of first use
        self.ptr_dtype = {}     # data pointer -> dtype (torch refuses two dtypes over one memory)
        self.legacy = legacy
        self._param = _parameter_class() if "ember.nn" in sys.modules else None

    # the (typed) storage of a tensor: (persistent-id object, storage offset, strides)
    def storage_of(self, t):
        dev = t._device
        isz = t._dtype.itemsize
        if dev.type == "cpu":
            a = t._np
            if a is None:
                a = t.detach().contiguous()._np
            st = t.untyped_storage()
            data = st.data
            nbytes = st.nbytes()
            ok = (data is not None and data.ndim == 1 and data.dtype == np.uint8
                  and data.flags.c_contiguous and nbytes == data.size and nbytes % isz == 0)
            if ok:
                if a.size:
                    boff = a.__array_interface__["data"][0] - data.__array_interface__["data"][0]
                    strides = a.strides
                    ok = boff >= 0 and boff % isz == 0 and all(s >= 0 and s % isz == 0
                                                               for s in strides)
                    offset = boff // isz
                    strides = tuple(s // isz for s in strides)
                else:
                    offset, strides = 0, tuple(t.stride())
            if ok:
                ptr = data.__array_interface__["data"][0] if nbytes else None
                dkey = (ptr, nbytes) if nbytes else ("empty", id(st))
                entry = self._entry(dkey, ptr, nbytes, t._dtype, data, None, st)
                return entry, "cpu", offset, strides
            # an exotic memory owner: save this tensor's elements compactly, unshared
            c = _contig(a)
            flat = c.reshape(-1).view(np.uint8)
            entry = self._entry(("compact", id(c)), None, flat.size, t._dtype, flat, None, c)
            return entry, "cpu", 0, tuple(s // isz if isz else 0 for s in c.strides)
        # another device with storage: copy the whole storage to the host at write time
        st = t.untyped_storage()
        nbytes = st.nbytes()
        offset, strides = t.storage_offset(), tuple(t.stride())
        if nbytes % isz:
            c = t.detach().contiguous()
            st, nbytes, offset, strides = c.untyped_storage(), c.numel() * isz, 0, tuple(c.stride())
            t = c
        entry = self._entry(("dev", id(st)), None, nbytes, t._dtype, None, t, st)
        return entry, _location_tag(dev), offset, strides

    def _entry(self, dkey, ptr, nbytes, dtype, data, tensor, keep):
        e = self.storages.get(dkey)
        if ptr is not None:
            d0 = self.ptr_dtype.setdefault(ptr, dtype)
            if d0 is not dtype:
                raise RuntimeError("Cannot save multiple tensors or storages that view the same "
                                   "data as different types")
        if e is None:
            e = _SavedStorage(str(len(self.order)), nbytes, dtype, data, tensor, keep)
            self.storages[dkey] = e
            self.order.append(e)
        elif e.dtype is not dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data "
                               "as different types")
        return e

    def plain_reduce(self, t, requires_grad):
        shape = tuple(t._shape)
        if t._device.type == "meta":
            return (_rebuild_meta_tensor_no_storage, (t._dtype, shape, tuple(t.stride()),
                                                      requires_grad))
        entry, location, offset, strides = self.storage_of(t)
        stype = _STORAGE_FOR_DTYPE.get(t._dtype)
        if stype is None:  # no legacy storage class (complex32): torch writes bytes and _rebuild_tensor_v3
            pid = ("storage", UNTYPED_STORAGE, entry.key, location, entry.nbytes)
            if self.legacy:
                pid += (None,)
            return (_rebuild_tensor_v3, (_StorageRef(pid), offset, shape, strides, requires_grad,
                                         OrderedDict(), t._dtype))
        numel = entry.nbytes // t._dtype.itemsize
        if self.legacy:
            pid = ("storage", stype, entry.key, location, numel, None)
        else:
            pid = ("storage", stype, entry.key, location, numel)
        return (_rebuild_tensor_v2, (_StorageRef(pid), offset, shape, strides, requires_grad,
                                     OrderedDict()))

    def reduce_tensor(self, t):
        sp = getattr(t, "_sp", None)
        if sp is not None:  # sparse COO and CSR: torch's _reduce_ex_internal writes their fields
            if not hasattr(sp, "indices"):
                return (_rebuild_sparse_tensor, (t.layout, (sp.crow_indices, sp.col_indices, sp.values,
                                                            Size(t._shape))))
            return (_rebuild_sparse_tensor, (t.layout, (sp.indices, sp.values, Size(t._shape), sp.coalesced)))
        P = self._param
        if P is not None and isinstance(t, P):
            state = t._dict_or_none()
            data = _Reduced(self.plain_reduce(t, False))
            if state:
                return (_rebuild_parameter_with_state, (data, t.requires_grad, OrderedDict(),
                                                        state))
            return (_rebuild_parameter, (data, t.requires_grad, OrderedDict()))
        rv = self.plain_reduce(t, t.requires_grad)
        state = t._dict_or_none()
        if type(t) is Tensor and not state:
            return rv
        return (_rebuild_from_type_v2, (rv[0], type(t), rv[1], state or None))


class _Pickler(pickle._Pickler):
    """The pure-Python pickler (its save_global can be overridden): ember's objects are written
    under torch's names, tensors as torch's rebuild calls over persistent storage ids."""

    def __init__(self, file, protocol, ctx):
        super().__init__(file, protocol)
        self._ctx = ctx

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return obj.pid
        return None

    def reducer_override(self, obj):
        t = type(obj)
        if t in _PLAIN_TYPES:
            return NotImplemented
        if isinstance(obj, TensorImpl):
            return self._ctx.reduce_tensor(obj)
        if t is _dt.dtype or t is _UnsupportedDtype:
            return obj.name
        if t is StorageType:
            return obj.name
        if t is _device:
            # a fresh string, as torch.device.__reduce__ makes (so the pickle is torch's, byte for byte)
            ty = "".join(list(obj.type))
            return (_device, (ty,) if obj.index is None else (ty, obj.index))
        if t is Size:
            return (Size, (tuple(obj),))
        if t is _Reduced:
            return obj.rv
        name = t.__name__
        if name == "layout" and t.__module__ == "ember":
            return (_get_layout, ("torch." + obj.name,))
        if name == "memory_format" and t.__module__ == "ember":
            return obj.name
        return NotImplemented

    def save_global(self, obj, name=None):
        tn = _torch_name_of(obj)
        if tn is None:
            tn = _torch_path_of(obj, name)
        if tn is None:
            return super().save_global(obj, name)
        module, qual = tn
        if self.proto >= 4:
            self.save(module)
            self.save(qual)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + qual.encode("utf-8")
                       + b"\n")
        self.memoize(obj)

    # pickle's dispatch table holds the base save_global for functions: route them through ours
    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[type(_rebuild_tensor)] = save_global


def _pickle(obj, ctx, protocol):
    _build_tables()
    buf = io.BytesIO()
    _Pickler(buf, protocol, ctx).dump(obj)
    return buf.getvalue()


class _ZipWriter:
    """Writes a stored zip archive the way PyTorch's miniz-based writer does: every record's data
    64-byte aligned through an 'FB' padding extra field, flags 0x0808 with a data descriptor after
    the data, zip64 fields past 4 GiB, and zip64 end-of-central-directory records."""

    def __init__(self, f, archive_name, alignment=STORAGE_ALIGNMENT):
        self.f = f
        self.pos = 0
        self.prefix = archive_name + "/"
        self.alignment = alignment
        self.entries = []

    def _write(self, b):
        self.f.write(b)
        self.pos += len(b) if isinstance(b, (bytes, bytearray)) else memoryview(b).nbytes

    def write_record(self, name, data):
        full = (self.prefix + name).encode("utf-8")
        if isinstance(data, str):
            data = data.encode("utf-8")
        size = len(data) if isinstance(data, (bytes, bytearray)) else data.nbytes
        offset = self.pos
        z64 = _zip64_extra(size, offset)
        start = offset + 30 + len(full) + len(z64) + 4
        pad = (-start) % self.alignment
        extra = z64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        crc = zlib.crc32(data) & _MAX32 if size else 0
        flags = 0x0808 if size else 0x0800  # miniz: a data descriptor follows non-empty data
        self._write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, flags, 0, 0, 0, 0, 0, 0,
                                len(full), len(extra)) + full + extra)
        if size:
            self._write(data)
            if z64:
                self._write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
            else:
                self._write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        self.entries.append((full, crc, size, offset, flags))

    def finish(self):
        cd_start = self.pos
        for full, crc, size, offset, flags in self.entries:
            extra = _zip64_extra(size, offset)
            self._write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 0, flags, 0, 0, 0, crc,
                                    _cap(size), _cap(size), len(full), len(extra), 0, 0, 0, 0,
                                    _cap(offset)) + full + extra)
        cd_size = self.pos - cd_start
        n = len(self.entries)
        z64_at = self.pos
        self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, 0, 0, n, n, cd_size,
                                cd_start))
        self._write(struct.pack("<IIQI", 0x07064B50, 0, z64_at, 1))
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                                _cap(cd_size), _cap(cd_start), 0))


_ZIP64_AT = _MAX32  # sizes and offsets from here on are written in zip64 extra fields


def _cap(v):
    return _MAX32 if v >= _ZIP64_AT else v


def _zip64_extra(size, offset):
    fields = []
    if size >= _ZIP64_AT:
        fields += [size, size]
    if offset >= _ZIP64_AT:
        fields.append(offset)
    if not fields:
        return b""
    return struct.pack("<HH", 1, 8 * len(fields)) + struct.pack(f"<{len(fields)}Q", *fields)


def _archive_name(path):
    base = os.path.basename(path)
    dot = base.rfind(".")
    if dot != -1:
        base = base[:dot]
    if not base or not base.isascii():
        return "archive"
    return base


def _serialization_id():
    r = random.SystemRandom()
    return f"{r.getrandbits(64):020d}{r.getrandbits(64):020d}"


def _save_zip(obj, f, archive_name, protocol, byteorder_record=True):
    ctx = _SaveContext()
    data_pkl = _pickle(obj, ctx, protocol)
    z = _ZipWriter(f, archive_name)
    z.write_record("data.pkl", data_pkl)
    z.write_record(".format_version", "1")
    z.write_record(".storage_alignment", str(STORAGE_ALIGNMENT))
    if byteorder_record:
        z.write_record("byteorder", sys.byteorder)
    for e in ctx.order:
        z.write_record(f"data/{e.key}", e.buffer())
    z.write_record("version", "3\n")
    z.write_record(".data/serialization_id", _serialization_id())
    z.finish()


def _save_legacy(obj, f, protocol):
    ctx = _SaveContext(legacy=True)
    sys_info = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    pickle.dump(MAGIC_NUMBER, f, protocol=protocol)
    pickle.dump(PROTOCOL_VERSION, f, protocol=protocol)
    pickle.dump(sys_info, f, protocol=protocol)
    f.write(_pickle(obj, ctx, protocol))
    keys = sorted(e.key for e in ctx.order)
    pickle.dump(keys, f, protocol=protocol)
    by_key = {e.key: e for e in ctx.order}
    for k in keys:
        e = by_key[k]
        f.write(struct.pack("<q", e.nbytes // e.dtype.itemsize))
        buf = e.buffer()
        if buf.size:
            f.write(buf)


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Save `obj` to `f` (a path or a writable file-like object) in PyTorch's checkpoint format,
    readable by torch.load and ember.load. Tensors sharing a storage are saved once.

    `pickle_module` is accepted for compatibility; ember always pickles with its own pickler
    (the standard library's, writing ember's objects under torch's names)."""
    if not _is_path(f) and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             "'write' attribute")
    if _is_path(f):
        path = os.fspath(f)
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        with open(path, "wb") as fh:
            _save_to(obj, fh, _archive_name(path), pickle_protocol,
                     _use_new_zipfile_serialization, _disable_byteorder_record)
        return
    _save_to(obj, f, "archive", pickle_protocol, _use_new_zipfile_serialization,
             _disable_byteorder_record)
    flush = getattr(f, "flush", None)
    if flush is not None:
        flush()


def _save_to(obj, f, archive_name, protocol, zip_format, no_byteorder):
    if zip_format:
        _save_zip(obj, f, archive_name, protocol, not no_byteorder)
    else:
        _save_legacy(obj, f, protocol)


# ---- loading: storages -------------------------------------------------------------------------
class _LoadedStorage:
    """A storage read from a checkpoint (a TypedStorage of torch): its bytes on the host (`flat`),
    or where they were restored to. Tensors rebuilt over it share its memory."""
    __slots__ = ("dtype", "nbytes", "device", "flat", "bases", "ustorage")

    def __init__(self, dtype, nbytes, device, flat):
        self.dtype = dtype
        self.nbytes = nbytes
        self.device = device
        self.flat = flat
        self.bases = {}
        self.ustorage = None

    def __repr__(self):
        return f"<storage of {self.nbytes} bytes on {self.device}>"

    def _base(self, dtype):
        b = self.bases.get(dtype)
        if b is None:
            import ember
            n = self.nbytes // dtype.itemsize
            if self.device.type == "meta":
                b = ember.empty(n, dtype=dtype, device="meta")
            else:
                host = _from_array(self.flat[:n * dtype.itemsize].view(dtype.np))
                b = host.to(self.device)
            self.bases[dtype] = b
        return b

    def fill_device(self):
        """After the bytes of a legacy checkpoint were read into `flat`: copy them to the device."""
        for dtype, b in self.bases.items():
            n = self.nbytes // dtype.itemsize
            b.copy_(_from_array(self.flat[:n * dtype.itemsize].view(dtype.np)))

    def tensor(self, dtype, offset, size, stride):
        _check_supported(dtype)
        size = tuple(int(s) for s in size)
        stride = tuple(int(s) for s in stride)
        offset = int(offset)
        if len(size) != len(stride):
            raise RuntimeError(f"mismatch in length of strides and shape: sizes {list(size)} and "
                               f"strides {list(stride)}")
        if offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
            raise RuntimeError(f"cannot rebuild a tensor with sizes {list(size)}, strides "
                               f"{list(stride)} and storage offset {offset}")
        isz = dtype.itemsize
        numel = 1
        for s in size:
            numel *= s
        if numel:
            need = (offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * isz
            if need > self.nbytes:
                raise RuntimeError(
                    f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                    f"{offset}, and itemsize {isz} requiring a storage size of {need} are out of "
                    f"bounds for storage of size {self.nbytes}")
        dev = self.device.type
        if dev == "cpu":
            bstrides = tuple(s * isz for s in stride)
            if numel:
                arr = np.ndarray(size, dtype=dtype.np, buffer=self.flat, offset=offset * isz,
                                 strides=bstrides)
            else:
                arr = np.ndarray(size, dtype=dtype.np, buffer=self.flat[:0], offset=0,
                                 strides=bstrides)
            return _from_array(arr)
        base = self._base(dtype)
        return base.as_strided(size, stride, offset)


def _from_array(arr):
    """ember.from_numpy, which refuses complex32's structured arrays (NumPy has no complex32)."""
    import ember
    if arr.dtype == _dt.CHALF_NP:
        from ember.core.tensor_impl import wrap_cpu
        return wrap_cpu(arr)
    return ember.from_numpy(arr)


def _decode(s):
    return s.decode("ascii") if isinstance(s, bytes) else s


_CUDA_LIKE_MSG = ("Attempting to deserialize object on a {T} device but torch.{t}.is_available() is "
                  "False. If you are running on a CPU-only machine, please use torch.load with "
                  "map_location=torch.device('cpu') to map your storages to the CPU.")


_DEVICE_PACKAGES = ("cuda", "hpu", "xpu", "mtia", "privateuseone")  # torch's registered tags


def _restore_device(location):
    """default_restore_location: the device a storage tagged `location` is loaded to."""
    if location == "cpu":
        return _device("cpu")
    if location == "meta":
        return _device("meta")
    from ember.core.device import _privateuse1_name
    backends = _DEVICE_PACKAGES + (_privateuse1_name[0], "mps")
    m = re.match(r"([a-zA-Z_]+)(?::|[0-9]|$)", location) if isinstance(location, str) else None
    if m is None or m.group(1) not in backends:
        raise RuntimeError("don't know how to restore data location of "
                           f"torch.storage.UntypedStorage (tagged with {location})")
    kind = m.group(1)
    if kind == "mps":
        raise RuntimeError("torch.UntypedStorage(): Storage device not recognized: mps")
    import ember
    try:
        dev = _device(location)
        ember.empty(0, device=dev)
    except Exception:
        raise RuntimeError(_CUDA_LIKE_MSG.format(T=kind.upper(), t=kind)) from None
    return dev


def _is_meta_location(map_location):
    if isinstance(map_location, str):
        return map_location == "meta"
    if isinstance(map_location, _device):
        return map_location.type == "meta"
    return False


class _Loader:
    """persistent_load of one checkpoint: reads each storage once, restores it to its device."""

    def __init__(self, map_location, read_bytes, swap, legacy=False):
        self.map_location = map_location
        self.read_bytes = read_bytes    # key, nbytes -> flat uint8 array (None: legacy, read later)
        self.swap = swap                # the file's byte order differs from this machine's
        self.legacy = legacy
        self.storages = {}
        self.meta = _is_meta_location(map_location)

    def restore(self, flat, nbytes, location):
        ml = self.map_location
        if ml is None:
            loc = location
        elif isinstance(ml, dict):
            loc = ml.get(location, location)
        elif isinstance(ml, (str, bytes)):
            loc = _decode(ml)
        elif isinstance(ml, _device):
            loc = str(ml)
        else:
            us = UntypedStorage(flat, nbytes, _device("cpu"))
            r = ml(us, location)
            if r is not None:
                if isinstance(r, UntypedStorage):
                    if r.device.type == "meta":
                        return _device("meta"), None
                    if r.device.type == "cpu" and r.data is not None:
                        return _device("cpu"), r.data
                    raise RuntimeError("ember.load: a map_location callable must return a CPU or "
                                       f"meta storage or None, got a storage on {r.device}")
                if isinstance(r, (str, _device)):
                    loc = str(r)
                else:
                    raise RuntimeError("ember.load: a map_location callable must return a "
                                       f"storage or None, got {type(r).__name__}")
            else:
                loc = location
        if isinstance(loc, _device):
            loc = str(loc)
        return _restore_device(loc), flat

    def persistent_load(self, saved_id):
        if not isinstance(saved_id, tuple):
            raise AssertionError(f"saved_id must be a tuple, got {type(saved_id).__name__}")
        typename = _decode(saved_id[0])
        data = saved_id[1:]
        if self.legacy and typename == "module":
            return data[0]
        if typename != "storage":
            if self.legacy:
                raise RuntimeError(f"Unknown saved id type: {saved_id[0]}")
            raise AssertionError("Unknown typename for persistent_load, expected 'storage' but got "
                                 f"'{typename}'")
        if self.legacy:
            storage_type, key, location, numel, view_metadata = data
        else:
            storage_type, key, location, numel = data
            view_metadata = None
        if not isinstance(storage_type, StorageType):
            raise UnpicklingError(f"expected a storage type, got {type(storage_type).__name__}")
        dtype = storage_type.dtype
        st = self.storages.get(key)
        if st is None:
            st = self.storages[key] = self.load_storage(dtype, numel * dtype.itemsize, key,
                                                        _decode(location))
        if view_metadata is not None:
            raise RuntimeError("ember.load: legacy storage views are not supported")
        return st

    def load_storage(self, dtype, nbytes, key, location):
        if self.meta:
            return _LoadedStorage(dtype, nbytes, _device("meta"), None)
        flat = self.read_bytes(key, nbytes) if self.read_bytes is not None else \
            np.empty(nbytes, dtype=np.uint8)
        if self.swap and self.read_bytes is not None:
            _byteswap(flat, dtype)
        dev, flat = self.restore(flat, nbytes, location)
        return _LoadedStorage(dtype, nbytes, dev, flat)


def _byteswap(flat, dtype):
    isz = dtype.itemsize
    if isz > 1 and flat.size % isz == 0 and isinstance(dtype, _dt.dtype) and dtype.np is not None:
        v = flat.view(dtype.np)
        v.byteswap(inplace=True)
    elif isz > 1 and flat.size % isz == 0:
        v = flat.reshape(-1, isz)
        v[:] = v[:, ::-1].copy()


# ---- loading: the weights-only unpickler -------------------------------------------------------
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


def _read_global(module, name):
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return module, name


class _WeightsUnpickler:
    """An interpreter of the pickle opcodes that cannot run code: globals are looked up in the
    allowlist (never imported), REDUCE/NEWOBJ only call allowlisted objects, BUILD only fills
    tensors, OrderedDicts and allowlisted types."""

    def __init__(self, file, *, encoding="bytes", persistent_load=None):
        self.encoding = encoding
        self.readline = file.readline
        self.read = file.read
        self.memo = {}
        self.proto = -1
        self._persistent_load = persistent_load
        _build_tables()
        self.allowed = _ALLOWED
        self.user = _user_allowed_globals()
        self._allowed_values = None

    def persistent_load(self, pid):
        if self._persistent_load is None:
            raise UnpicklingError("unsupported persistent id encountered")
        return self._persistent_load(pid)

    def _is_allowed_value(self, obj):
        ids = self._allowed_values
        if ids is None:
            ids = self._allowed_values = ({id(v) for v in self.allowed.values()}
                                          | {id(v) for v in self.user.values()})
            self._keep = (list(self.allowed.values()), list(self.user.values()))
        if id(obj) in ids:
            return True
        P = _parameter_class() if "ember.nn" in sys.modules else None
        return P is not None and obj is P

    def _global(self, module, name):
        module, name = _read_global(module, name)
        full_path = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module "
                                  f"{module} is blocked.")
        obj = self.allowed.get(full_path)
        if obj is not None:
            if obj is _PARAM_GLOBAL:
                P = _parameter_class()
                return P if P is not None else obj
            return obj
        obj = self.user.get(full_path)
        if obj is not None:
            return obj
        if full_path in ("torch.nested._internal.nested_tensor.NestedTensor",
                         "torch.nested._internal.nested_tensor._rebuild_njt",
                         "torch._dynamo.decorators._DimRange"):
            raise UnpicklingError("``torch.nested`` and ``torch._dynamo`` must be imported to load "
                                  "nested jagged tensors (NJTs)")
        if full_path in ("torch.distributed.device_mesh.DeviceMesh",
                         "torch.distributed.tensor._dtensor_spec.DTensorSpec",
                         "torch.distributed.tensor._dtensor_spec.TensorMeta",
                         "torch.distributed.tensor.DTensor",
                         "torch.distributed.tensor.placement_types.Partial",
                         "torch.distributed.tensor.placement_types.Replicate",
                         "torch.distributed.tensor.placement_types.Shard"):
            raise UnpicklingError("``torch.distributed.tensor`` must be imported to load DTensors")
        if full_path.startswith("builtins"):
            rest = full_path[len("builtins"):]
            full_path = rest[1:] if rest.startswith(".") else "builtins" + rest
        raise UnpicklingError(
            f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. "
            f"Please use `torch.serialization.add_safe_globals([{full_path}])` or the "
            f"`torch.serialization.safe_globals([{full_path}])` context manager to allowlist this "
            "global if you trust this class/function.")

    def load(self):
        self.metastack = []
        self.stack = []
        read = self.read
        while True:
            key = read(1)
            if not key:
                raise EOFError
            op = key[0]
            fn = _DISPATCH.get(op)
            if fn is None:
                raise UnpicklingError(f"Unsupported operand {op}")
            if fn(self):  # STOP
                return self.stack.pop()

    def pop_mark(self):
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    # ---- opcodes ----
    def _global_op(self):
        module = self.readline()[:-1].decode("utf-8")
        name = self.readline()[:-1].decode("utf-8")
        self.stack.append(self._global(module, name))

    def _stack_global(self):
        name = self.stack.pop()
        module = self.stack.pop()
        if type(name) is not str or type(module) is not str:
            raise UnpicklingError("STACK_GLOBAL requires str")
        self.stack.append(self._global(module, name))

    def _newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        P = _parameter_class() if "ember.nn" in sys.modules else None
        if cls is _PARAM_GLOBAL or (P is not None and cls is P):
            self.stack.append(_make_parameter(*args))
        elif isinstance(cls, type) and self._is_allowed_value(cls):
            self.stack.append(cls.__new__(cls, *args))
        else:
            raise UnpicklingError("Can only create new object for nn.Parameter or classes "
                                  f"allowlisted via `add_safe_globals` but got {cls}")

    def _reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if not self._is_allowed_value(func):
            msg = f"Trying to call reduce for unrecognized function {func}"
            if hasattr(func, "__self__"):
                msg += f" which belongs to {func.__self__}"
            raise UnpicklingError(msg)
        if type(args) is not tuple:
            raise UnpicklingError("REDUCE requires a tuple of arguments")
        self.stack[-1] = func(*args)

    def _build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        t = type(inst)
        P = _parameter_class() if "ember.nn" in sys.modules else None
        if t is Tensor:
            if not isinstance(state, tuple) or not hasattr(inst, "set_"):
                raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types "
                                      f"allowlisted via `add_safe_globals`, but got {t}")
            inst.set_(*state)
        elif P is not None and t is P:
            inst.__setstate__(state)
        elif t is OrderedDict:
            inst.__dict__.update(state)
        elif self._is_allowed_value(t):
            if hasattr(inst, "__setstate__"):
                inst.__setstate__(state)
            else:
                slotstate = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slotstate = state
                if state:
                    inst.__dict__.update(state)
                if slotstate:
                    for k, v in slotstate.items():
                        setattr(inst, k, v)
        else:
            raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types "
                                  f"allowlisted via `add_safe_globals`, but got {t}")

    def _append(self):
        item = self.stack.pop()
        lst = self.stack[-1]
        if type(lst) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(lst)}")
        lst.append(item)

    def _appends(self):
        items = self.pop_mark()
        lst = self.stack[-1]
        if type(lst) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(lst)}")
        lst.extend(items)

    def _check_set_item_target(self, opcode):
        if type(self.stack[-1]) not in (dict, OrderedDict, Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                  f"collections.Counter, but got {type(self.stack[-1])}")

    def _setitem(self):
        v = self.stack.pop()
        k = self.stack.pop()
        self._check_set_item_target("SETITEM")
        self.stack[-1][k] = v

    def _setitems(self):
        items = self.pop_mark()
        self._check_set_item_target("SETITEMS")
        d = self.stack[-1]
        for i in range(0, len(items), 2):
            d[items[i]] = items[i + 1]

    def _additems(self):
        items = self.pop_mark()
        s = self.stack[-1]
        if type(s) is not set:
            raise UnpicklingError(f"Can only add items to sets, but got {type(s)}")
        s.update(items)

    def _frozenset(self):
        items = self.pop_mark()
        self.stack.append(frozenset(items))

    def _mark(self):
        self.metastack.append(self.stack)
        self.stack = []

    def _pop(self):
        if self.stack:
            self.stack.pop()
        else:
            self.pop_mark()

    def _pop_mark(self):
        self.pop_mark()

    def _tuple(self):
        items = self.pop_mark()
        self.stack.append(tuple(items))

    def _tuple1(self):
        self.stack[-1] = (self.stack[-1],)

    def _tuple2(self):
        self.stack[-2:] = [(self.stack[-2], self.stack[-1])]

    def _tuple3(self):
        self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]

    def _list(self):
        items = self.pop_mark()
        self.stack.append(items)

    def _dict(self):
        items = self.pop_mark()
        self.stack.append({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def _persid_bin(self):
        pid = self.stack.pop()
        if type(pid) is not tuple and type(pid) is not int:
            raise UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
        if type(pid) is tuple and len(pid) > 0 and _decode(pid[0]) != "storage":
            raise UnpicklingError(f"Only persistent_load of storage is allowed, but got "
                                  f"{type(pid[0])}")
        self.stack.append(self.persistent_load(pid))

    def _binget(self):
        self.stack.append(self.memo[self.read(1)[0]])

    def _long_binget(self):
        self.stack.append(self.memo[struct.unpack("<I", self.read(4))[0]])

    def _binput(self):
        self.memo[self.read(1)[0]] = self.stack[-1]

    def _long_binput(self):
        self.memo[struct.unpack("<I", self.read(4))[0]] = self.stack[-1]

    def _memoize(self):
        self.memo[len(self.memo)] = self.stack[-1]

    def _proto(self):
        self.proto = self.read(1)[0]
        if self.proto != 2:
            warnings.warn(f"Detected pickle protocol {self.proto} in the checkpoint, which was not "
                          "the default pickle protocol used by `torch.load` (2). The weights_only "
                          "Unpickler might not support all instructions implemented by this "
                          "protocol, please file an issue for adding support if you encounter "
                          "this.", stacklevel=4)

    def _frame(self):
        self.read(8)

    def _stop(self):
        return True

    def _none(self):
        self.stack.append(None)

    def _false(self):
        self.stack.append(False)

    def _true(self):
        self.stack.append(True)

    def _empty_tuple(self):
        self.stack.append(())

    def _empty_list(self):
        self.stack.append([])

    def _empty_dict(self):
        self.stack.append({})

    def _empty_set(self):
        self.stack.append(set())

    def _binint(self):
        self.stack.append(struct.unpack("<i", self.read(4))[0])

    def _binint1(self):
        self.stack.append(self.read(1)[0])

    def _binint2(self):
        self.stack.append(struct.unpack("<H", self.read(2))[0])

    def _long1(self):
        n = self.read(1)[0]
        self.stack.append(pickle.decode_long(self.read(n)))

    def _long4(self):
        n = struct.unpack("<i", self.read(4))[0]
        if n < 0:
            raise UnpicklingError("LONG pickle has negative byte count")
        self.stack.append(pickle.decode_long(self.read(n)))

    def _binfloat(self):
        self.stack.append(struct.unpack(">d", self.read(8))[0])

    def _unicode(self, n):
        if n > sys.maxsize:
            raise UnpicklingError("String is too long")
        self.stack.append(str(self.read(n), "utf-8", "surrogatepass"))

    def _binunicode(self):
        self._unicode(struct.unpack("<I", self.read(4))[0])

    def _short_binunicode(self):
        self._unicode(self.read(1)[0])

    def _binunicode8(self):
        self._unicode(struct.unpack("<Q", self.read(8))[0])

    def _string(self, n):
        data = self.read(n)
        if self.encoding != "bytes":
            data = data.decode(self.encoding, "strict")
        self.stack.append(data)

    def _short_binstring(self):
        self._string(self.read(1)[0])

    def _binstring(self):
        n = struct.unpack("<i", self.read(4))[0]
        if n < 0:
            raise UnpicklingError("BINSTRING pickle has negative byte count")
        self._string(n)

    def _short_binbytes(self):
        self.stack.append(self.read(self.read(1)[0]))

    def _binbytes(self):
        self.stack.append(self.read(struct.unpack("<I", self.read(4))[0]))

    def _binbytes8(self):
        self.stack.append(self.read(struct.unpack("<Q", self.read(8))[0]))

    def _bytearray8(self):
        self.stack.append(bytearray(self.read(struct.unpack("<Q", self.read(8))[0])))


_W = _WeightsUnpickler
_DISPATCH = {
    pickle.GLOBAL[0]: _W._global_op, pickle.STACK_GLOBAL[0]: _W._stack_global,
    pickle.NEWOBJ[0]: _W._newobj, pickle.REDUCE[0]: _W._reduce, pickle.BUILD[0]: _W._build,
    pickle.APPEND[0]: _W._append, pickle.APPENDS[0]: _W._appends, pickle.SETITEM[0]: _W._setitem,
    pickle.SETITEMS[0]: _W._setitems, pickle.ADDITEMS[0]: _W._additems,
    pickle.FROZENSET[0]: _W._frozenset, pickle.MARK[0]: _W._mark, pickle.POP[0]: _W._pop,
    pickle.POP_MARK[0]: _W._pop_mark, pickle.TUPLE[0]: _W._tuple, pickle.TUPLE1[0]: _W._tuple1,
    pickle.TUPLE2[0]: _W._tuple2, pickle.TUPLE3[0]: _W._tuple3, pickle.LIST[0]: _W._list,
    pickle.DICT[0]: _W._dict, pickle.NONE[0]: _W._none, pickle.NEWFALSE[0]: _W._false,
    pickle.NEWTRUE[0]: _W._true, pickle.EMPTY_TUPLE[0]: _W._empty_tuple,
    pickle.EMPTY_LIST[0]: _W._empty_list, pickle.EMPTY_DICT[0]: _W._empty_dict,
    pickle.EMPTY_SET[0]: _W._empty_set, pickle.BININT[0]: _W._binint,
    pickle.BININT1[0]: _W._binint1, pickle.BININT2[0]: _W._binint2, pickle.LONG1[0]: _W._long1,
    pickle.LONG4[0]: _W._long4, pickle.BINFLOAT[0]: _W._binfloat,
    pickle.BINUNICODE[0]: _W._binunicode, pickle.SHORT_BINUNICODE[0]: _W._short_binunicode,
    pickle.BINUNICODE8[0]: _W._binunicode8, pickle.SHORT_BINSTRING[0]: _W._short_binstring,
    pickle.BINSTRING[0]: _W._binstring, pickle.SHORT_BINBYTES[0]: _W._short_binbytes,
    pickle.BINBYTES[0]: _W._binbytes, pickle.BINBYTES8[0]: _W._binbytes8,
    pickle.BYTEARRAY8[0]: _W._bytearray8, pickle.BINPERSID[0]: _W._persid_bin,
    pickle.BINGET[0]: _W._binget, pickle.LONG_BINGET[0]: _W._long_binget,
    pickle.BINPUT[0]: _W._binput, pickle.LONG_BINPUT[0]: _W._long_binput,
    pickle.MEMOIZE[0]: _W._memoize, pickle.PROTO[0]: _W._proto, pickle.FRAME[0]: _W._frame,
    pickle.STOP[0]: _W._stop,
}
del _W


def _wo_message(message):
    has_unsafe_global = re.search(r"GLOBAL (\S+) was not an allowed global by default.",
                                  message) is not None
    has_blocklist = re.search(r"whose module (\S+) is blocked", message) is not None
    has_import = re.search(r"(\S+) must be (\S+) to load", message) is not None
    if has_unsafe_global:
        updated = ("Weights only load failed. This file can still be loaded, to do so you have two "
                   "options, \033[1mdo those steps only if you trust the source of the checkpoint"
                   f"\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
                   "`weights_only=True` please check the recommended steps in the following error "
                   "message.\n\tWeightsUnpickler error: " + message)
    else:
        if has_import:
            return f"Weights only load failed. {message}\n {UNSAFE_MESSAGE}\n"
        updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if not has_blocklist:
            updated += ("Please file an issue with the following so that we can make "
                        "`weights_only=True` compatible with your use case: WeightsUnpickler "
                        "error: ")
        updated += "\n\n" + message
    return updated + _DOCS_MESSAGE


# ---- loading: the full unpickler (weights_only=False) ------------------------------------------
def _full_unpickler(pickle_module, file, persistent_load, **kwargs):
    _build_tables()
    base = pickle_module.Unpickler

    class _Unpickler(base):
        def find_class(self, mod_name, name):
            if type(name) is str and "Storage" in name:
                st = _storage_type_by_name(name)
                if st is not None:
                    return st
            obj = _resolve_load_global(mod_name, name)
            if obj is not _MISSING:
                return obj
            return super().find_class(mod_name, name)

    u = _Unpickler(file, **kwargs)
    u.persistent_load = persistent_load
    return u


# ---- loading: archives -------------------------------------------------------------------------
class _ZipReader:
    def __init__(self, fh, mmap_path=None):
        import zipfile  # only load() reads archives: `import ember` does not pay for zipfile (~7 ms)
        self.fh = fh
        self.zf = zipfile.ZipFile(fh)
        infos = self.zf.infolist()
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: failed finding "
                               "central directory")
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: file in archive "
                               "is not in a subdirectory: " + first)
        self.prefix = first[:first.index("/") + 1]
        self.infos = {i.filename: i for i in infos}
        self._mm = None
        if mmap_path is not None:
            import mmap
            with open(mmap_path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                self._mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY) if size else None

    def has_record(self, name):
        return self.prefix + name in self.infos

    def _info(self, name):
        info = self.infos.get(self.prefix + name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        return info

    def get_record(self, name):
        return self.zf.read(self._info(name))

    def _data_offset(self, info):
        self.fh.seek(info.header_offset)
        h = self.fh.read(30)
        if len(h) != 30 or h[:4] != b"PK\x03\x04":
            raise RuntimeError(f"PytorchStreamReader failed reading file {info.filename}: "
                               "invalid header or archive is corrupted")
        n, e = struct.unpack("<HH", h[26:30])
        return info.header_offset + 30 + n + e

    def read_storage(self, key, nbytes):
        name = f"data/{key}"
        info = self._info(name)
        if info.file_size < nbytes:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: the record has "
                               f"{info.file_size} bytes, the storage needs {nbytes}")
        if info.compress_type != 0:  # zipfile.ZIP_STORED
            return np.frombuffer(bytearray(self.zf.read(info)[:nbytes]), dtype=np.uint8)
        off = self._data_offset(info)
        if self._mm is not None:
            if nbytes == 0:
                return np.empty(0, dtype=np.uint8)
            return np.frombuffer(self._mm, dtype=np.uint8, count=nbytes, offset=off)
        flat = np.empty(nbytes, dtype=np.uint8)
        if nbytes:
            self.fh.seek(off)
            _read_into(self.fh, flat)
            if info.file_size == nbytes and (zlib.crc32(flat) & _MAX32) != info.CRC:
                raise RuntimeError(f"PytorchStreamReader failed reading file {name}: invalid "
                                   "crc-32 checksum")
        return flat


def _read_into(fh, flat):
    mv = memoryview(flat)
    readinto = getattr(fh, "readinto", None)
    got = 0
    n = flat.size
    while got < n:
        if readinto is not None:
            k = readinto(mv[got:])
        else:
            b = fh.read(n - got)
            k = len(b)
            mv[got:got + k] = b
        if not k:
            raise RuntimeError("PytorchStreamReader failed reading file data: file read failed")
        got += k


def _load_zip(reader, map_location, unpickle, pickle_load_args):
    if reader.has_record("constants.pkl"):
        raise _TorchScriptArchive()
    swap = False
    if reader.has_record("byteorder"):
        bo = reader.get_record("byteorder")
        if bo not in (b"little", b"big"):
            raise ValueError("Unknown endianness type: " + bo.decode())
        swap = bo.decode() != sys.byteorder
    else:
        swap = sys.byteorder != "little"
    loader = _Loader(map_location, reader.read_storage, swap)
    data = io.BytesIO(reader.get_record("data.pkl"))
    _tls.map_location = map_location
    try:
        return unpickle(data, loader.persistent_load, pickle_load_args).load()
    finally:
        _tls.map_location = None


class _TorchScriptArchive(Exception):
    pass


def _load_legacy(f, map_location, unpickle, pickle_load_args):
    def load_one():
        return unpickle(f, None, pickle_load_args).load()

    magic = load_one()
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    version = load_one()
    if version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info = load_one()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    loader = _Loader(map_location, None, False, legacy=True)
    _tls.map_location = map_location
    try:
        result = unpickle(f, loader.persistent_load, pickle_load_args).load()
    finally:
        _tls.map_location = None
    keys = load_one()
    if loader.meta:
        return result
    for key in keys:
        st = loader.storages.get(key)
        if st is None:
            raise AssertionError(f"storage key {key!r} not found in deserialized_objects")
        head = f.read(8)
        if len(head) != 8:
            raise RuntimeError("unexpected end of file while reading a storage")
        (numel,) = struct.unpack("<q" if little else ">q", head)
        nbytes = numel * st.dtype.itemsize
        flat = st.flat if st.flat is not None and st.flat.size == nbytes else \
            np.empty(nbytes, dtype=np.uint8)
        if nbytes:
            _read_into(f, flat)
        if little != (sys.byteorder == "little"):
            _byteswap(flat, st.dtype)
        if st.flat is not None and flat is not st.flat:
            n = min(flat.size, st.flat.size)
            st.flat[:n] = flat[:n]
        if st.device.type not in ("cpu", "meta"):
            st.fill_device()
    return result


def _is_zipfile(f):
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    return magic == b"PK\x03\x04"


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved with ember.save or torch.save (zip or legacy format).

    map_location: None (each storage where it was saved), a device or device string ("cpu",
    "meta": metadata only, nothing read), a dict remapping location tags, or a callable
    (storage, location) -> storage or None. weights_only (default True) refuses every global
    outside the allowlist; mmap=True maps the file (copy-on-write) instead of reading it."""
    weights_only_not_set = weights_only is None
    if weights_only_not_set:
        weights_only = pickle_module is None
    true_values = ("1", "y", "yes", "true")
    force_wo = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no_wo = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force_wo and force_no_wo:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force_wo:
        weights_only = True
    elif force_no_wo and weights_only_not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
                      "`weights_only` argument was not explicitly passed to `torch.load`, forcing "
                      "weights_only=False.", UserWarning, stacklevel=2)
        weights_only = False
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                               "specified")
    elif pickle_module is None:
        pickle_module = pickle
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    if "encoding" not in pickle_load_args:
        pickle_load_args["encoding"] = "utf-8"

    if weights_only:
        def unpickle(file, persistent_load, args):
            return _WeightsUnpickler(file, encoding=args.get("encoding", "bytes"),
                                     persistent_load=persistent_load)
    else:
        def unpickle(file, persistent_load, args):
            return _full_unpickler(pickle_module, file, persistent_load or _no_persistent, **args)

    if _is_path(f) and os.fspath(f).endswith(".safetensors"):
        return _load_safetensors(os.fspath(f), map_location)

    if _is_path(f):
        with open(f, "rb") as fh:
            return _load_opened(fh, f, map_location, weights_only, mmap, unpickle, pickle_load_args)
    return _load_opened(f, f, map_location, weights_only, mmap, unpickle, pickle_load_args)


def _no_persistent(pid):
    raise UnpicklingError("A load persistent id instruction was encountered, but no "
                          "persistent_load function was specified.")


def _load_opened(fh, f, map_location, weights_only, mmap, unpickle, pickle_load_args):
    try:
        if _is_zipfile(fh):
            if mmap and not _is_path(f):
                raise ValueError("f must be a file path in order to use the mmap argument")
            reader = _ZipReader(fh, os.fspath(f) if mmap else None)
            try:
                return _load_zip(reader, map_location, unpickle, pickle_load_args)
            except _TorchScriptArchive:
                if weights_only:
                    raise RuntimeError("Cannot use ``weights_only=True`` with TorchScript archives "
                                       "passed to ``torch.load``. " + UNSAFE_MESSAGE) from None
                raise RuntimeError("ember.load cannot load TorchScript archives (saved with "
                                   "torch.jit.save)") from None
        if mmap:
            f_name = "" if not isinstance(f, str) else f"{f}, "
            raise RuntimeError("mmap can only be used with files saved with "
                               f"`torch.save({f_name}_use_new_zipfile_serialization=True), "
                               "please torch.save your checkpoint with this option in order to use "
                               "mmap.")
        return _load_legacy(fh, map_location, unpickle, pickle_load_args)
    except UnpicklingError as e:
        if weights_only:
            raise UnpicklingError(_wo_message(str(e))) from None
        raise


def _load_safetensors(path, map_location):
    device = "cpu"
    if map_location is not None:
        if isinstance(map_location, (str, bytes, _device)):
            device = str(_decode(map_location))
        elif isinstance(map_location, dict):
            raise RuntimeError("Loading safetensors file with dict map_location is not supported. "
                               "Use a device string or torch.device instead.")
        elif callable(map_location):
            raise RuntimeError("Loading safetensors file with callable map_location is not "
                               "supported. Use a device string or torch.device instead.")
    try:
        from ember.utils import safetensors as _st
        return _st.load_file(path, device=device)
    except ImportError as e:
        raise RuntimeError("Attempting to load a safetensors file but safetensors is not "
                           "installed. Please install safetensors with: pip install safetensors"
                           ) from e


def get_unsafe_globals_in_checkpoint(f):
    """The globals a checkpoint names that a weights_only load would refuse (nothing is run)."""
    import pickletools
    _build_tables()
    allowed = set(_ALLOWED) | set(_user_allowed_globals())

    def scan(data):
        found = set()
        strings = []
        for op, arg, _ in pickletools.genops(data):
            if op.name == "GLOBAL":
                module, name = arg.split(" ", 1)
                module, name = _read_global(module, name)
                found.add(f"{module}.{name}")
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.add(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
        return found

    def from_file(fh):
        if _is_zipfile(fh):
            r = _ZipReader(fh)
            return scan(r.get_record("data.pkl"))
        out = set()
        for _ in range(5):  # magic, version, sys_info, the object, the storage keys
            try:
                out |= scan(fh)
            except Exception:
                break
        return out

    if _is_path(f):
        with open(f, "rb") as fh:
            found = from_file(fh)
    else:
        found = from_file(f)
    return sorted(g for g in found if g not in allowed)


__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "StorageType", "DEFAULT_PROTOCOL",
           "UNSAFE_MESSAGE"]
