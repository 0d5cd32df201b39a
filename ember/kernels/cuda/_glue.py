"""The CUDA backend's tensor glue: CUDA tensors over the runtime's memory, host <-> device copies,
device-side copies and fills.

A CUDA tensor is a strided TensorImpl (`_np` None, explicit `_strides`/`_offset` in elements)
over a CudaStorage whose `data` is a 1-D uint8 numba device array handed out by the device's
CachingAllocator on the current stream. Kernels see typed device arrays (`flat`) and do their
own index math from `geometry`. Devices, streams and memory belong to the runtime below
(ember.cuda._runtime); the names the kernels use from it are re-exported here.
"""
import math

import numpy as np

from ember.core.keys import backend_keyset
from ember.core.tensor_impl import contiguous_strides, make_meta
from ember.cuda._runtime import (CudaStorage, _ctx, cuda, current_stream, is_pinned,  # noqa: F401
                                 is_sim, keep_alive, normalize, state, stream_of)
from ember.cuda._runtime import CAPTURES, Kernel, alloc_key, capture_of, device_copy, not_capturing

__all__ = ["cuda", "is_sim", "normalize", "state", "current_stream", "stream_of", "empty",
           "empty_like", "flat", "geometry", "to_host", "from_host", "copy_", "fill_",
           "launch_config", "numba_dtype_ok", "is_pinned", "CudaStorage"]

KEYS = backend_keyset("cuda")
_NUMBA_DTYPES = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 "
                          "float64".split())


def numba_dtype_ok(dtype):
    """Whether numba kernels can work on this ember dtype (else the host fallback serves it)."""
    return dtype.name in _NUMBA_DTYPES


# ---- allocation ------------------------------------------------------------------------------
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
    s = current_stream(dev.index)
    blk = alloc.malloc(nbytes, alloc_key(s) if CAPTURES else s)
    storage = CudaStorage(blk.buf, nbytes, dev)
    alloc.attach(storage, blk)
    t._storage = storage
    return t


def empty_like(t, dtype=None):
    return empty(t._shape, dtype or t._dtype, t._device)


def flat(t):
    """1-D typed device array over t's whole storage (index it with geometry(t))."""
    return t.untyped_storage().typed_view(t._dtype.np)


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
    if CAPTURES:
        not_capturing(s, "a device-to-host copy waits for the stream")
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
    host = arr
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
    if CAPTURES:
        cap = capture_of(s)
        if cap is not None:
            if non_blocking and np.may_share_memory(src, host):
                # an asynchronous copy from pinned memory: a graph node reading it at each replay
                cap.add_copy(buf[t._offset * isz:(t._offset + n) * isz], src, s)
                return
            not_capturing(s, "a host-to-device copy from pageable memory waits for the stream")
    with _ctx(dev.index or 0):
        buf[t._offset * isz:(t._offset + n) * isz].copy_to_device(src, stream=s)
    if non_blocking and not is_sim():
        keep_alive(dev.index or 0, current_stream(dev.index or 0), src)


# ---- device-side copies and fills (numba kernels compiled on first use) --------------------------
_kern = {}


def _kernels():
    """The strided copy/fill kernels (ember/kernels/cuda/_copy.py, compiled on first use)."""
    k = _kern.get("copy")
    if k is not None:
        return _kern
    cuda()
    from ember.kernels.cuda import _copy
    _kern["copy"] = Kernel(_copy.strided_copy)
    _kern["fill"] = Kernel(_copy.strided_fill)
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
            device_copy(db[dst._offset * isz:(dst._offset + n) * isz],
                        sb[src._offset * isz:(src._offset + n) * isz], s)
        return
    if not (numba_dtype_ok(dst._dtype) and numba_dtype_ok(src._dtype)):
        if CAPTURES:
            bad = dst._dtype if not numba_dtype_ok(dst._dtype) else src._dtype
            not_capturing(s, f"a copy from {src._dtype} to {dst._dtype} runs through the host "
                             f"(the CUDA backend has no kernels for {bad})")
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
        if CAPTURES:
            not_capturing(s, "a device-to-host copy waits for the stream")
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
            sv = src.untyped_storage().data[src._offset * isz:(src._offset + n) * isz]
            cap = capture_of(s)
            if cap is not None:  # a graph node writing the pinned buffer at each replay
                cap.add_copy(a.reshape(-1).view(np.uint8), sv, s)
                return dst
            with _ctx(src._device.index or 0):
                sv.copy_to_host(a.reshape(-1).view(np.uint8), stream=s)
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
        if CAPTURES:
            not_capturing(stream_of(t._device), f"filling a {t._dtype} tensor runs through the "
                                                f"host (the CUDA backend has no kernels for {t._dtype})")
        _store_host(t, v.reshape(()), False)
        return t
    dev = t._device
    s = stream_of(dev)
    shape, dstr = _pad(t._shape, t._strides)
    blocks, threads = launch_config(n)
    with _ctx(dev.index or 0):
        _kernels()["fill"][blocks, threads, s](flat(t), t._offset, dstr, v[0], shape, n)
    return t
