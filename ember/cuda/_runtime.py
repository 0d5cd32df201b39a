"""The CUDA runtime (c10/cuda): numba, device state, streams, events, allocation, pinned memory.

numba.cuda is imported on first use only (`cuda()`): importing it costs ~0.5 s and, with
EMBER_CUDA_SIM=1, NUMBA_ENABLE_CUDASIM=1 must be in the environment before that first import.

Each device gets a _DeviceState on first use: its default stream and its caching allocator
(ember.core.allocator, keyed on streams). The current device and the current stream per device
are thread-local, as in torch. CUDA memory is a CudaStorage: `data` is a 1-D uint8 numba device
array.

This layer sits below the kernels (kernels/cuda allocates, copies and launches through it) and
knows nothing above it: the CUDA backend registers its kernels with `on_init`, which runs them
when CUDA first initialises.
"""
import os
import threading

import numpy as np

from ember.core.device import device as _device
from ember.core.storage import UntypedStorage

_lock = threading.RLock()
_cuda = [None]          # the numba.cuda module once imported
_init = [False]         # lazy_init done (the on_init hooks have run)
_init_hooks = []        # run once by lazy_init (the CUDA backend registers its kernels)
_states = {}            # device index -> _DeviceState
STREAM_CLASS = [None]   # ember.cuda.streams puts its Stream class here (StreamBase until then)
_TORCH_MSG = "Torch not compiled with CUDA enabled"


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
                # numba warns about "low occupancy" at every launch of a small grid: ember
                # launches a grid sized to each tensor, small ones included, so the warning is
                # noise for users and its check costs time on every launch
                os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
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


def on_init(fn):
    """Run fn() when CUDA first initialises (at once if it has): the backend's registrations."""
    with _lock:
        _init_hooks.append(fn)
        if _init[0]:
            fn()


def lazy_init():
    """Make CUDA usable (once): check that it is available and run the on_init hooks."""
    if _init[0]:
        return
    with _lock:
        if _init[0]:
            return
        if not available():
            raise AssertionError(f"{_TORCH_MSG}: {unavailable_reason()}")
        for fn in _init_hooks:
            fn()
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
    if CAPTURES:
        check_sync(index)
    st = state(index)
    with _ctx(index):
        c.synchronize()
    st.pending = []


def unavailable_message():
    """Why CUDA cannot be used here, in torch's words plus what ember needs."""
    import importlib.util
    why = "needs numba with a GPU and a driver, or EMBER_CUDA_SIM=1 with numba's simulator"
    if importlib.util.find_spec("numba") is None:
        why += "; numba is not installed"
    else:
        v = os.environ.get("EMBER_CUDA_SIM")
        if v is None:
            why += "; EMBER_CUDA_SIM is not set"
        elif v != "1":
            why += f"; EMBER_CUDA_SIM is {v!r}, not '1'"
        r = unavailable_reason()
        if r and "EMBER_CUDA_SIM" not in r:
            why += f"; {r}"
        elif r:
            why += "; numba found no GPU or no CUDA driver"
    return f"{_TORCH_MSG}: ember has no CUDA backend registered ({why})"


def init():
    """torch.cuda's lazy init: raise (torch's message) when CUDA cannot be used, else initialise."""
    if _init[0]:
        return
    if not available():
        raise AssertionError(unavailable_message())
    lazy_init()


def device_index(dev, optional=True):
    """torch.cuda._utils._get_device_index: an index from a device, string, int or None."""
    if dev is None:
        init()
        return current_index()
    if isinstance(dev, str):
        dev = _device(dev)
    if isinstance(dev, _device):
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        if dev.index is None:
            init()
            return current_index()
        return dev.index
    return int(dev)


# ---- memory ----------------------------------------------------------------------------------
class CudaStorage(UntypedStorage):
    """Bytes in device memory: `data` is a 1-D uint8 numba device array. `typed` caches its
    typed views ((data, {numpy dtype: view})): making one costs tens of microseconds with
    numba-cuda, and each kernel launch needs one per operand."""
    __slots__ = ("typed",)

    def typed_view(self, np_dtype):
        d = self.data
        try:
            c = self.typed
        except AttributeError:
            c = None
        if c is None or c[0] is not d:
            c = self.typed = (d, {})
        v = c[1].get(np_dtype)
        if v is None:
            v = c[1][np_dtype] = d.view(np_dtype)
        return v

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


def keep_alive(index, stream, host):
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


# ---- CUDA graph capture (ember.cuda.graphs) -------------------------------------------------------
# While a CUDAGraph captures on a stream, the work enqueued on that stream is recorded, not run:
# kernel launches (through Kernel below) and device-side copies become the graph's nodes, new
# memory comes from the graph's private pool, and whatever needs the host to wait for the stream
# (a synchronize, a device-to-host copy, an op the backend runs on the host) raises CUDA's
# "operation not permitted when stream is capturing" and invalidates the capture.
CAPTURES = {}  # id(numba stream) -> the capture recording it; empty when no capture is underway


def cuda_error(what):
    """RuntimeError in the words torch's AT_CUDA_CHECK uses for a failed CUDA call."""
    return RuntimeError(
        f"CUDA error: {what}\nCUDA kernel errors might be asynchronously reported at some other "
        "API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
        "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
        "assertions.\n")


def capture_of(ns):
    """The capture recording numba stream `ns`, or None."""
    return CAPTURES.get(id(ns)) if CAPTURES else None


def not_capturing(ns, why=None):
    """Raise (and invalidate the capture) when numba stream `ns` is capturing: the caller is
    about to make the host wait for it. `why` says what ember was doing, for the message."""
    cap = CAPTURES.get(id(ns)) if CAPTURES else None
    if cap is not None:
        cap.invalidate()
        err = cuda_error("operation not permitted when stream is capturing")
        if why:
            err.args = (f"{err.args[0]}(ember: {why})",)
        raise err


def check_sync(index, why=None):
    """A device-wide synchronize: invalid while any stream of the device captures, whatever the
    capture mode (CUDA: synchronizing a handle that encompasses an active capture)."""
    for cap in list(CAPTURES.values()):
        if cap.device_index == index:
            not_capturing(cap.ns, why)


def alloc_key(stream):
    """The allocator pool for memory allocated on ember stream `stream`: the capturing graph's
    private pool while it captures, else the stream's own."""
    cap = CAPTURES.get(id(stream._ns))
    return stream if cap is None else cap.pool_key


class Kernel:
    """A compiled numba kernel (`k[grid, block, stream](*args)`) whose launches on a capturing
    stream are recorded by the capture instead of run."""
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __getitem__(self, cfg):
        if CAPTURES and len(cfg) > 2:
            cap = CAPTURES.get(id(cfg[2]))
            if cap is not None:
                return cap.launcher(self.k, cfg)
        return self.k[cfg]

    def __getattr__(self, name):
        if name == "k":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.k, name)


def device_copy(dst, src, ns):
    """dst.copy_to_device(src) on numba stream ns (device arrays both): recorded while capturing."""
    cap = CAPTURES.get(id(ns)) if CAPTURES else None
    if cap is not None:
        cap.add_copy(dst, src, ns)
        return
    dst.copy_to_device(src, stream=ns)


def active_capture(ev):
    """The capture an ember Event was recorded in, while that capture is still underway."""
    cap = getattr(ev, "_cap", None)
    if cap is not None and CAPTURES.get(id(cap.ns)) is cap:
        return cap
    return None


def capture_record(ev, stream):
    """Event.record on `stream`: remember the capture (and the point in it) it was recorded at."""
    cap = CAPTURES.get(id(stream._ns))
    ev._cap = cap
    if cap is not None:
        ev._cap_at = (id(stream._ns), cap.seq)


def capture_wait(ev, stream):
    """stream.wait_event(ev) for an event recorded during a capture: a stream outside the capture
    joins it (a fork, as cudaStreamWaitEvent does); a stream inside it joins the event's stream
    back (up to the point the event was recorded)."""
    cap = active_capture(ev)
    if cap is None:
        return
    cur = CAPTURES.get(id(stream._ns))
    if cur is None:
        cap.fork(stream)
    elif cur is cap:
        cap.join(*ev._cap_at)
