"""The device runtime of the async example backend: streams (a queue and a worker thread each),
events, synchronization, and one caching allocator per device over host memory it owns.

The model is CUDA's: the host *enqueues* work on a stream and goes on at once; a stream runs its
work in order; different streams run concurrently; an event is a marker in a stream that
completes when the stream reaches it; the host learns about results only by waiting
(synchronize, event.synchronize, or an operation that needs the data, like .item()).
"""
import contextlib
import queue
import threading
import time
import weakref

import numpy as np

from ember.core.allocator import CachingAllocator
from ember.profiler import _device as _profiler_device

DEVICE_COUNT = 2
_STOP = object()


class AsyncKernelError(RuntimeError):
    """A kernel failed on a worker; reported at the next synchronization (as CUDA reports
    asynchronous errors at a later API call)."""


class _Worker:
    """One thread running a stream's work in order."""

    def __init__(self, name):
        self.q = queue.SimpleQueue()
        self.cv = threading.Condition()
        self.pending = 0          # tasks enqueued and not finished (guarded by cv)
        self.error = None         # first exception raised by a task, until reported
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def put(self, fn):
        with self.cv:
            self.pending += 1
        self.q.put(fn)

    def _run(self):
        q, cv = self.q, self.cv
        while True:
            fn = q.get()
            if fn is _STOP:
                return
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported to the host at sync time
                if self.error is None:
                    self.error = e
            fn = None  # drop the task's references (its buffers) before reporting completion
            with cv:
                self.pending -= 1
                if self.pending == 0:
                    cv.notify_all()

    def wait_idle(self):
        with self.cv:
            while self.pending:
                self.cv.wait()

    def stop(self):
        self.q.put(_STOP)
        self.thread.join(timeout=5)


class Stream:
    """A queue of device work (torch.cuda.Stream). Stream(device=None, priority=0)."""

    _next_id = [1]

    def __init__(self, device=None, priority=0, *, _default=False):
        self.device_index = _index(device)
        self.priority = priority
        if _default:
            self.stream_id = 0
        else:
            self.stream_id = Stream._next_id[0]
            Stream._next_id[0] += 1
        self._worker = None
        self._lock = threading.Lock()
        _ALL_STREAMS.add(self)

    @property
    def device(self):
        import ember
        return ember.device(_state.name, self.device_index)

    def _w(self):
        w = self._worker
        if w is None:
            with self._lock:
                w = self._worker
                if w is None:
                    w = self._worker = _Worker(f"{_state.name}:{self.device_index}/stream{self.stream_id}")
                    weakref.finalize(self, w.q.put, _STOP)
        return w

    def launch(self, fn):
        """Enqueue fn() on this stream and return at once (timed on this stream's track while
        ember.profiler records ProfilerActivity.PrivateUse1)."""
        self._w().put(_profiler_device.enqueue(fn, self.stream_id, self.device_index))

    def query(self):
        w = self._worker
        if w is None:
            return True
        with w.cv:
            idle = w.pending == 0
        if idle:
            self._raise_error()
        return idle

    def synchronize(self):
        w = self._worker
        if w is not None:
            w.wait_idle()
            self._raise_error()

    def _raise_error(self):
        w = self._worker
        if w is not None and w.error is not None:
            e, w.error = w.error, None
            raise AsyncKernelError(f"a kernel on {self!r} failed: {type(e).__name__}: {e}") from e

    def wait_event(self, event):
        """Work enqueued on this stream after this call waits for `event` to complete."""
        flag = event._flag
        if flag is not None:
            self.launch(flag.wait)

    def wait_stream(self, stream):
        """Work enqueued on this stream after this call waits for the work already enqueued
        on `stream`."""
        if stream is not self:
            ev = Event()
            ev.record(stream)
            self.wait_event(ev)

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __enter__(self):
        self._ctx = stream(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)

    def __repr__(self):
        return (f"<{_state.name}.Stream device={_state.name}:{self.device_index} "
                f"stream_id={self.stream_id}>")


class Event:
    """A marker in a stream (torch.cuda.Event). Not recorded yet: complete."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._flag = None
        self._time = None
        self._stream = None

    def record(self, stream=None):
        if stream is None:
            stream = current_stream()
        flag = threading.Event()
        self._flag, self._time, self._stream = flag, None, stream
        timing = self.enable_timing

        def mark(ev=self):
            if timing:
                ev._time = time.perf_counter()
            flag.set()
        stream.launch(mark)

    def query(self):
        return self._flag is None or self._flag.is_set()

    def synchronize(self):
        if self._flag is not None:
            self._flag.wait()
            self._stream._raise_error()

    def wait(self, stream=None):
        (stream or current_stream()).wait_event(self)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and end_event completing on their streams."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._flag is None or end_event._flag is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

    def __repr__(self):
        return f"<{_state.name}.Event {'recorded' if self._flag is not None else 'unrecorded'}>"


# ---- per-device state -------------------------------------------------------------------------
class _State:
    name = "adev"


_state = _State()
_ALL_STREAMS = weakref.WeakSet()  # a dead stream's thread ends after its work
_DEFAULT = {}             # device index -> default Stream
_ALLOCATORS = {}          # device index -> CachingAllocator
_tls = threading.local()  # .current: device index -> Stream; .device: current device index
_PINNED = {}              # id(root ndarray) -> weakref of host buffers from pin_memory()


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        idx = device
    else:
        import ember
        d = ember.device(device) if isinstance(device, str) else device
        if d.type != _state.name:
            raise ValueError(f"Expected a {_state.name} device, but got: {d}")
        idx = current_device() if d.index is None else d.index
    if not 0 <= idx < DEVICE_COUNT:
        raise RuntimeError(f"{_state.name} error: invalid device ordinal {idx}")
    return idx


def current_device():
    return getattr(_tls, "device", 0)


def set_device(device):
    _tls.device = _index(device)


def default_stream(device=None):
    i = _index(device)
    s = _DEFAULT.get(i)
    if s is None:
        s = _DEFAULT.setdefault(i, Stream(i, _default=True))
    return s


def current_stream(device=None):
    i = _index(device)
    cur = getattr(_tls, "current", None)
    if cur is not None:
        s = cur.get(i)
        if s is not None:
            return s
    return default_stream(i)


def set_stream(s):
    cur = getattr(_tls, "current", None)
    if cur is None:
        cur = _tls.current = {}
    cur[s.device_index] = s


@contextlib.contextmanager
def stream(s):
    """Make `s` the current stream (of its device) inside the block (torch.cuda.stream)."""
    if s is None:
        yield
        return
    prev = current_stream(s.device_index)
    set_stream(s)
    try:
        yield s
    finally:
        set_stream(prev)


class device:  # noqa: N801 - torch.cuda.device's name
    """Context manager changing the current device."""

    def __init__(self, dev):
        self.idx = _index(dev) if dev is not None and dev != -1 else None

    def __enter__(self):
        self.prev = current_device()
        if self.idx is not None:
            set_device(self.idx)

    def __exit__(self, *exc):
        set_device(self.prev)


def synchronize(device=None):
    """Wait for all work on every stream of the device."""
    i = _index(device)
    for s in list(_ALL_STREAMS):
        if s.device_index == i:
            s.synchronize()


def _synchronize_all():
    for s in list(_ALL_STREAMS):
        s.synchronize()


def _sleep(seconds, stream=None):
    """A kernel that keeps the stream busy (torch.cuda._sleep(cycles) spins on the GPU)."""
    (stream or current_stream()).launch(lambda: time.sleep(seconds))


# ---- memory -----------------------------------------------------------------------------------
def _raw_malloc(nbytes):
    return np.empty(nbytes, np.uint8)


def allocator(device=None):
    i = _index(device)
    a = _ALLOCATORS.get(i)
    if a is None:
        a = _ALLOCATORS.setdefault(i, CachingAllocator(_raw_malloc, None, record_event=_record_event,
                                                       device_index=i))
    return a


def _record_event(stream):
    ev = Event()
    ev.record(stream)
    return ev


def memory_allocated(device=None):
    return allocator(device).memory_allocated()


def max_memory_allocated(device=None):
    return allocator(device).max_memory_allocated()


def memory_reserved(device=None):
    return allocator(device).memory_reserved()


def max_memory_reserved(device=None):
    return allocator(device).max_memory_reserved()


def reset_peak_memory_stats(device=None):
    allocator(device).reset_peak_memory_stats()


def reset_accumulated_memory_stats(device=None):
    allocator(device).reset_accumulated_memory_stats()


def memory_stats(device=None):
    return allocator(device).memory_stats()


def memory_summary(device=None, abbreviated=False):
    return allocator(device).memory_summary(_index(device), abbreviated, title=_state.name)


def empty_cache():
    for a in list(_ALLOCATORS.values()):
        a.empty_cache()


def _shutdown():
    """Stop every worker thread and forget all state (the example's uninstall)."""
    for s in list(_ALL_STREAMS):
        try:
            s.synchronize()
        except AsyncKernelError:
            pass  # unreported kernel errors die with the device
    for s in list(_ALL_STREAMS):
        if s._worker is not None:
            s._worker.stop()
            s._worker = None
    _ALL_STREAMS.clear()
    _DEFAULT.clear()
    _ALLOCATORS.clear()
    _PINNED.clear()
    cur = getattr(_tls, "current", None)
    if cur is not None:
        cur.clear()
    _tls.device = 0
