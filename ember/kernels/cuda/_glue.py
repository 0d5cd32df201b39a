"""Between the dispatcher and numba.cuda: CUDA tensors, device memory, streams, copies.

A CUDA tensor is a strided TensorImpl (`_np` None, explicit `_strides`/`_offset` in elements)
over a CudaStorage whose `data` is a 1-D uint8 numba device array handed out by the device's
CachingAllocator on the current stream. Kernels see typed device arrays (`flat`) and do their
own index math from `geometry`.

numba.cuda is imported on first use only (`cuda()`): importing it costs ~0.5 s and, with
EMBER_CUDA_SIM=1, NUMBA_ENABLE_CUDASIM=1 must be in the environment before that first import.
Nothing here imports a layer above kernels; ember.cuda (the torch.cuda surface) sits on top.
"""
import math
import os
import threading

import numpy as np

from ember.core.device import device as _device
from ember.core.keys import backend_keyset
from ember.core.storage import UntypedStorage
from ember.core.tensor_impl import contiguous_strides, make_meta

__all__ = ["cuda", "is_sim", "available", "unavailable_reason", "lazy_init", "device_count",
           "normalize", "state", "current_stream", "set_current_stream", "stream_of", "empty",
           "empty_like", "flat", "geometry", "to_host", "from_host", "copy_", "fill_",
           "synchronize", "launch_config", "numba_dtype_ok", "is_pinned", "pin", "StreamBase",
           "STREAM_CLASS", "CudaStorage"]

KEYS = backend_keyset("cuda")
_NUMBA_DTYPES = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 "
                          "float64".split())
_lock = threading.RLock()
_cuda = [None]          # the numba.cuda module once imported
_init = [False]         # lazy_init done (kernels registered, device states made)
_states = {}            # device index -> _DeviceState
STREAM_CLASS = [None]   # ember.cuda puts its Stream class here (StreamBase until then)


# ---- numba ---------------------------------------------------------------------------------------
def is_sim():
    return os.environ.get("EMBER_CUDA_SIM") == "1"


def cuda():
    """The numba.cuda module, imported on first use (the simulator when EMBER_CUDA_SIM=1)."""
    c = _cuda[0]
    if c is None:
        with _lock:
            if _cuda[0] is None:
                if is_sim():
                    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
                from numba import cuda as c  # noqa: PLC0415 - the lazy import is the point
                _cuda[0] = c
            c = _cuda[0]
    return c


_avail = [None]  # (bool, reason) once probed


def _probe():
    r = _avail[0]
    if r is not None:
        return r
    import importlib.util
    if importlib.util.find_spec("numba") is None:
        r = (False, "numba is not installed")
    else:
        try:
            c = cuda()
            ok = bool(c.is_available())
        except Exception as e:  # a broken driver install: say what numba said
            ok, c = False, None
            r = (False, f"numba.cuda failed to load: {e}")
        if c is not None:
            if ok:
                r = (True, "")
            else:
                r = (False, "numba found no GPU or no CUDA driver, and EMBER_CUDA_SIM is not set")
    _avail[0] = r
    return r


def available():
    return _probe()[0]


def unavailable_reason():
    return _probe()[1]


def device_count():
    if not available():
        return 0
    return len(cuda().gpus)


def numba_dtype_ok(dtype):
    """Whether numba kernels can work on this ember dtype (else the host fallback serves it)."""
    return dtype.name in _NUMBA_DTYPES


# ---- streams -------------------------------------------------------------------------------------
class StreamBase:
    """A numba stream on one device. ember.cuda.Stream subclasses it; the allocator keys its
    pools on these objects (identity)."""

    def _setup(self, device_index, ns, priority=0, default=False):
        self.device_index = device_index
        self._ns = ns
        self.priority = priority
        self._default = default
        return self

    @property
    def device(self):
        return _device("cuda", self.device_index)

    def _record_event(self):
        """An event recorded now on this stream (for the allocator's record_stream rule)."""
        ev = new_event(False)
        ev.record(self._ns)
        return ev


def new_event(timing):
    """A numba event (the simulator's take no arguments and never time anything)."""
    c = cuda()
    return c.event() if is_sim() else c.event(timing=timing)


def _new_stream(cls, index, ns, priority=0, default=False):
    s = object.__new__(cls)
    StreamBase._setup(s, index, ns, priority, default)
    return s


class _DeviceState:
    def __init__(self, index):
        from ember.core.allocator import CachingAllocator
        c = cuda()
        self.index = index
        with _ctx(index):
            # the simulator has no default_stream(); its streams are synchronous anyway
            ns = c.stream() if is_sim() else c.default_stream()
        self.default_stream = _new_stream(STREAM_CLASS[0] or StreamBase, index, ns, 0, True)
        self.allocator = CachingAllocator(self._raw_malloc, None,
                                          record_event=None if is_sim() else _record_event,
                                          device_index=index)
        self.pending = []   # (event, host array) of asynchronous copies still reading host memory
        self.empty_buf = None

    def _raw_malloc(self, nbytes):
        c = cuda()
        try:
            with _ctx(self.index):
                return c.device_array(nbytes, dtype=np.uint8)
        except Exception as e:
            if "OUT_OF_MEMORY" in str(e) or "out of memory" in str(e).lower():
                raise MemoryError(str(e)) from e
            raise


def _record_event(stream):
    return stream._record_event()


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_NULL = _NullCtx()


def _ctx(index):
    """numba's context for device `index` (nothing to switch with a single device)."""
    c = cuda()
    if index == 0 and len(c.gpus) == 1:
        return _NULL
    return c.gpus[index]


_tls = threading.local()


def _current_map():
    m = getattr(_tls, "streams", None)
    if m is None:
        m = _tls.streams = {}
    return m


def _current_index():
    i = getattr(_tls, "device", None)
    return 0 if i is None else i


def set_current_index(i):
    _tls.device = i


def current_index():
    return _current_index()


# ---- initialisation ------------------------------------------------------------------------------
def _ordinal_error():
    return RuntimeError(
        "CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at "
        "some other API call, so the stacktrace below might be incorrect.\nFor debugging consider "
        "passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
        "assertions.\n")


def lazy_init():
    """Make the backend usable: import numba.cuda and register the CUDA kernels (once)."""
    if _init[0]:
        return
    with _lock:
        if _init[0]:
            return
        if not available():
            raise AssertionError(f"Torch not compiled with CUDA enabled: {unavailable_reason()}")
        from ember.kernels import cuda as _k
        _k.register()
        _init[0] = True


def is_initialized():
    return _init[0]


def state(index):
    s = _states.get(index)
    if s is None:
        lazy_init()
        with _lock:
            s = _states.get(index)
            if s is None:
                if not 0 <= index < device_count():
                    raise _ordinal_error()
                s = _states[index] = _DeviceState(index)
    return s


def normalize(dev):
    """cuda -> cuda:<current>; checks the index (torch's "invalid device ordinal")."""
    if dev is None:
        return _device("cuda", _current_index())
    if not isinstance(dev, _device):
        dev = _device(dev)
    i = dev.index
    if i is None:
        return _device("cuda", _current_index())
    if i >= device_count():
        raise _ordinal_error()
    return dev


def current_stream(index=None):
    if index is None:
        index = _current_index()
    s = _current_map().get(index)
    if s is None:
        s = state(index).default_stream
    return s


def set_current_stream(stream):
    _current_map()[stream.device_index] = stream


def stream_of(dev):
    """The current numba stream of a device (an ember device, or an index)."""
    i = dev if isinstance(dev, int) else (dev.index or 0)
    return current_stream(i)._ns


def synchronize(index=None):
    """Wait for all work on every stream of a device (cudaDeviceSynchronize)."""
    c = cuda()
    if index is None:
        index = _current_index()
    st = state(index)
    with _ctx(index):
        c.synchronize()
    st.pending = []


# ---- allocation ------------------------------------------------------------------------------
class CudaStorage(UntypedStorage):
    """Bytes in device memory: `data` is a 1-D uint8 numba device array."""
    __slots__ = ()

    def data_ptr(self):
        d = self.data
        if d is None or d.size == 0:
            return 0
        cai = getattr(d, "__cuda_array_interface__", None)
        if cai is None:  # the simulator wraps a NumPy array
            return d._ary.__array_interface__["data"][0]
        return cai["data"][0]

    def tolist(self):
        return self.data.copy_to_host().tolist()

    def __repr__(self):
        return f"ember.UntypedStorage(nbytes={self._nbytes}, device={self.device})"


def _span(shape, strides):
    """Elements of storage a tensor of this geometry reaches from its offset."""
    n = 1
    for s, st in zip(shape, strides):
        if s == 0:
            return 0
        n += (s - 1) * st
    return n


def empty(shape, dtype, device, strides=None):
    """A CUDA tensor over fresh memory from the device's caching allocator (current stream)."""
    dev = normalize(device)
    shape = tuple(int(s) for s in shape)
    strides = contiguous_strides(shape) if strides is None else tuple(int(s) for s in strides)
    st = state(dev.index)
    nbytes = _span(shape, strides) * dtype.itemsize
    t = make_meta(shape, dtype, strides, device=dev, keys=KEYS)
    if nbytes == 0:
        buf = st.empty_buf
        if buf is None:
            with _ctx(dev.index):
                buf = st.empty_buf = cuda().device_array(0, dtype=np.uint8)
        t._storage = CudaStorage(buf, 0, dev)
        return t
    alloc = st.allocator
    blk = alloc.malloc(nbytes, current_stream(dev.index))
    storage = CudaStorage(blk.buf, nbytes, dev)
    alloc.attach(storage, blk)
    t._storage = storage
    return t


def empty_like(t, dtype=None):
    return empty(t._shape, dtype or t._dtype, t._device)


def flat(t):
    """1-D typed device array over t's whole storage (index it with geometry(t))."""
    return t.untyped_storage().data.view(t._dtype.np)


def geometry(t):
    """(shape, strides, offset), in elements."""
    return t._shape, t._strides, t._offset


def launch_config(n):
    """(blocks, threads) for a grid-stride loop over n elements. On the simulator every thread
    is a Python thread, so it gets one small block."""
    if is_sim():
        return 1, max(1, min(int(n), 32))
    threads = 256
    return max(1, min(math.ceil(n / threads), 4096)), threads


# ---- host <-> device -----------------------------------------------------------------------------
def _host_view(raw, dtype, shape, strides):
    """A NumPy view of `raw` (bytes copied from device, starting at the tensor's offset)."""
    typed = raw.view(dtype.np)
    isz = dtype.itemsize
    return np.lib.stride_tricks.as_strided(typed, shape, tuple(s * isz for s in strides))


def to_host(t):
    """The elements of CUDA tensor t as a fresh contiguous NumPy array. Synchronizes with the
    current stream (a device-to-host copy is a synchronization point)."""
    shape, strides, off = t._shape, t._strides, t._offset
    n = _span(shape, strides)
    dt = t._dtype
    if n == 0:
        return np.zeros(shape, dt.np)
    isz = dt.itemsize
    buf = t.untyped_storage().data
    s = stream_of(t._device)
    raw = np.empty(n * isz, np.uint8)
    with _ctx(t._device.index or 0):
        buf[off * isz:(off + n) * isz].copy_to_host(raw, stream=s)
        s.synchronize()
    if t.is_contiguous():
        return raw.view(dt.np).reshape(shape)
    return np.ascontiguousarray(_host_view(raw, dt, shape, strides))


def from_host(arr, device, dtype=None):
    """A new CUDA tensor holding a copy of NumPy array `arr` (converted to `dtype`)."""
    from ember.core.dtype import NP2DT
    arr = np.asarray(arr)
    dt = dtype or NP2DT[arr.dtype]
    t = empty(arr.shape, dt, device)
    _upload(t, arr, False)
    return t


def _upload(t, arr, non_blocking):
    """Contiguous CUDA tensor t <- host array of t's shape (cast to t's dtype)."""
    if t._dtype.np != arr.dtype:
        arr = arr.astype(t._dtype.np)
    n = t.numel()
    if n == 0:
        return
    src = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    isz = t._dtype.itemsize
    buf = t.untyped_storage().data
    dev = t._device
    s = stream_of(dev)
    with _ctx(dev.index or 0):
        buf[t._offset * isz:(t._offset + n) * isz].copy_to_device(src, stream=s)
    if non_blocking and not is_sim():
        _keep_alive(dev.index or 0, current_stream(dev.index or 0), src)


def _keep_alive(index, stream, host):
    """An asynchronous copy reads `host` later: keep it alive until the stream gets there."""
    st = state(index)
    st.pending = [(e, h) for e, h in st.pending if not e.query()]
    st.pending.append((stream._record_event(), host))


# ---- pinned host memory --------------------------------------------------------------------------
_pinned = {}  # id(root ndarray) -> weakref; page-locked host arrays made by pin()


def pin(arr):
    """A page-locked copy of NumPy array `arr` (on the simulator: a plain array, marked)."""
    import weakref
    lazy_init()
    c = cuda()
    out = c.pinned_array(arr.shape, dtype=arr.dtype)
    if not isinstance(out, np.ndarray):
        out = np.asarray(out)
    np.copyto(out, arr)
    key = id(out)
    _pinned[key] = weakref.ref(out, lambda _r, k=key: _pinned.pop(k, None))
    return out


def is_pinned(t):
    if t._np is None or not _pinned:
        return False
    from ember.core.storage import root_array
    r = root_array(t._np)
    w = _pinned.get(id(r))
    return w is not None and w() is r


# ---- device-side copies and fills (numba kernels compiled on first use) --------------------------
_kern = {}


def _kernels():
    """The strided copy/fill kernels (ember/kernels/cuda/_copy.py, compiled on first use)."""
    k = _kern.get("copy")
    if k is not None:
        return _kern
    cuda()
    from ember.kernels.cuda import _copy
    _kern["copy"] = _copy.strided_copy
    _kern["fill"] = _copy.strided_fill
    return _kern


def _pad(shape, strides):
    if not shape:
        return (1,), (0,)
    return tuple(shape), tuple(strides)


def _bcast_strides(src, shape):
    """src's strides seen with dst's shape (0 on broadcast dims), torch's expand rules."""
    sshape, sstr = src._shape, src._strides
    nd = len(shape)
    if len(sshape) > nd:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(sshape)}")
    out = [0] * nd
    for k in range(1, len(sshape) + 1):
        a, b = sshape[-k], shape[-k]
        if a == b:
            out[-k] = sstr[-k]
        elif a == 1:
            out[-k] = 0
        else:
            raise RuntimeError(f"The size of tensor a ({b}) must match the size of tensor b ({a}) "
                               f"at non-singleton dimension {nd - k}")
    return tuple(out)


def _device_copy(dst, src, sstrides=None):
    """dst <- src, both CUDA tensors on dst's device (src may broadcast; dtypes may differ)."""
    n = dst.numel()
    if n == 0:
        return
    if sstrides is None:
        sstrides = _bcast_strides(src, dst._shape)
    dev = dst._device
    s = stream_of(dev)
    if (src._dtype is dst._dtype and dst.is_contiguous() and sstrides == dst._strides
            and src._device == dev):
        isz = dst._dtype.itemsize
        db = dst.untyped_storage().data
        sb = src.untyped_storage().data
        with _ctx(dev.index or 0):
            db[dst._offset * isz:(dst._offset + n) * isz].copy_to_device(
                sb[src._offset * isz:(src._offset + n) * isz], stream=s)
        return
    if not (numba_dtype_ok(dst._dtype) and numba_dtype_ok(src._dtype)):
        host = _host_view_of(src, dst._shape, sstrides)
        _store_host(dst, host, False)
        return
    shape, dstr = _pad(dst._shape, dst._strides)
    _, sstr = _pad(dst._shape, sstrides)
    blocks, threads = launch_config(n)
    k = _kernels()["copy"]
    with _ctx(dev.index or 0):
        k[blocks, threads, s](flat(dst), dst._offset, dstr, flat(src), src._offset, sstr, shape, n)


def _host_view_of(src, shape, sstrides):
    """Host copy of src broadcast to `shape` with strides `sstrides`."""
    n = _span(shape, sstrides) if shape else 1
    dt = src._dtype
    isz = dt.itemsize
    raw = np.empty(max(n, 0) * isz, np.uint8)
    if n:
        s = stream_of(src._device)
        src.untyped_storage().data[src._offset * isz:(src._offset + n) * isz].copy_to_host(raw, stream=s)
        s.synchronize()
    return _host_view(raw, dt, shape, sstrides)


def _store_host(dst, host, non_blocking):
    """CUDA tensor dst <- host array broadcastable to dst's shape (cast to dst's dtype)."""
    host = np.broadcast_to(np.asarray(host), dst._shape)
    if dst.is_contiguous():
        _upload(dst, host, non_blocking)
        return
    tmp = empty(dst._shape, dst._dtype, dst._device)
    _upload(tmp, host, non_blocking)
    _device_copy(dst, tmp)


def _host_array(t):
    """A CPU tensor's NumPy array."""
    return t._np


def copy_(dst, src, non_blocking=False):
    """Tensor.copy_ when either side is on CUDA: host<->device, device<->device, with dtype
    conversion and broadcasting of src. A device-to-host copy synchronizes unless it is
    non_blocking into pinned memory; a host-to-device copy returns at once."""
    dcuda = dst._device.type == "cuda"
    scuda = src._device.type == "cuda"
    if dcuda and scuda:
        if src._device == dst._device:
            if src.untyped_storage() is dst.untyped_storage() and dst.numel() > 1 and not (
                    src._offset == dst._offset and src._strides == dst._strides
                    and src._shape == dst._shape):
                # the same memory read and written by one kernel would race: stage the source
                tmp = empty(src._shape, src._dtype, src._device)
                _device_copy(tmp, src)
                src = tmp
            _device_copy(dst, src)
        else:  # across devices: through the host (no peer access here)
            _store_host(dst, to_host(src), False)
    elif dcuda:
        a = _host_array(src)
        if a is None:
            raise RuntimeError(f"copy_: cannot copy from a {src._device.type} tensor to cuda")
        if dst._dtype.np != a.dtype:
            from ember.kernels.cpu._glue import wrap
            a = wrap(a).to(dst._dtype)._np  # ember's own cast rules (e.g. float -> bool)
        _store_host(dst, a, non_blocking and is_pinned(src))
    else:
        a = _host_array(dst)
        if a is None:
            raise RuntimeError(f"copy_: cannot copy from cuda to a {dst._device.type} tensor")
        if (non_blocking and is_pinned(dst) and dst.is_contiguous() and src.is_contiguous()
                and src._shape == dst._shape and src._dtype is dst._dtype and dst.numel()):
            # the asynchronous case: the host sees the data only after a synchronize
            n, isz = dst.numel(), dst._dtype.itemsize
            s = stream_of(src._device)
            with _ctx(src._device.index or 0):
                src.untyped_storage().data[src._offset * isz:(src._offset + n) * isz].copy_to_host(
                    a.reshape(-1).view(np.uint8), stream=s)
            return dst
        h = to_host(src)
        if h.dtype != a.dtype:
            from ember.kernels.cpu._glue import wrap
            h = wrap(h).to(dst._dtype)._np
        if not a.flags.writeable:
            raise RuntimeError("unsupported operation: more than one element of the written-to "
                               "tensor refers to a single memory location. Please clone() the "
                               "tensor before performing the operation.")
        np.copyto(a, np.broadcast_to(h, a.shape), casting="unsafe")
    return dst


def fill_(t, value):
    """Every element of CUDA tensor t <- value (a Python number)."""
    n = t.numel()
    if n == 0:
        return t
    from ember.kernels.cpu._glue import wrap
    v = wrap(np.asarray(value)).to(t._dtype)._np.reshape(1)  # ember's scalar cast
    if not numba_dtype_ok(t._dtype):
        _store_host(t, v.reshape(()), False)
        return t
    dev = t._device
    s = stream_of(dev)
    shape, dstr = _pad(t._shape, t._strides)
    blocks, threads = launch_config(n)
    with _ctx(dev.index or 0):
        _kernels()["fill"][blocks, threads, s](flat(t), t._offset, dstr, v[0], shape, n)
    return t
