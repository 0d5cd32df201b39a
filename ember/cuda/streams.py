"""torch.cuda.Stream and torch.cuda.Event over numba streams and events.

Work enqueued on a stream runs in order; different streams may overlap. Events mark a point in a
stream: another stream can wait for it (wait_event), the host can poll (query) or block
(synchronize), and two timing events measure device time between them (elapsed_time).

On numba's simulator every launch runs to completion before it returns, so every event is
complete the moment it is recorded: query() is synthesized (True) and elapsed_time is measured
with the host clock between the two record() calls.
"""
import time

from ember.cuda import _runtime
from ember.cuda._runtime import device_index as _device_index, init as _lazy_init

__all__ = ["Stream", "Event", "ExternalStream", "StreamContext"]

# torch maps priorities into the device's range, lowest (0) to highest; numba creates streams
# without a priority, so ember keeps the mapped value for .priority only
_PRIO_RANGE = (-3, 0)


def _index_of(device):
    return _device_index(device, optional=True)


class Stream(_runtime.StreamBase):
    """A CUDA stream (torch.cuda.Stream(device=None, priority=0))."""

    def __new__(cls, device=None, priority=0, **kwargs):
        _lazy_init()
        idx = _index_of(device)
        _runtime.state(idx)
        c = _runtime.cuda()
        with _runtime._ctx(idx):
            ns = c.stream()
        prio = max(_PRIO_RANGE[0], min(_PRIO_RANGE[1], int(priority)))
        s = object.__new__(cls)
        s._setup(idx, ns, prio)
        return s

    def __init__(self, device=None, priority=0, **kwargs):
        pass

    @staticmethod
    def priority_range():
        return _PRIO_RANGE[1], _PRIO_RANGE[0]

    # ---- ordering ------------------------------------------------------------------------------
    def wait_event(self, event):
        """Work submitted to this stream from now on waits for `event`."""
        event.wait(self)

    def wait_stream(self, stream):
        """Work submitted to this stream from now on waits for all work queued on `stream`."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self):
        """Whether all work submitted so far has completed."""
        if _runtime.CAPTURES:
            _runtime.not_capturing(self._ns)
        if _runtime.is_sim():
            return True
        return self._record_event().query()

    def synchronize(self):
        if _runtime.CAPTURES:
            _runtime.not_capturing(self._ns)
        self._ns.synchronize()

    # ---- identity ------------------------------------------------------------------------------
    @property
    def cuda_stream(self):
        h = getattr(self._ns, "handle", None)
        if h is None:
            return 0 if self._default else id(self._ns)
        v = getattr(h, "value", h)
        return int(v or 0)

    @property
    def device_type(self):
        return 1

    def __eq__(self, other):
        return isinstance(other, _runtime.StreamBase) and other._ns is self._ns

    def __hash__(self):
        return hash((self.device_index, id(self._ns)))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"

    # torch.Stream is a context manager selecting itself
    def __enter__(self):
        self._ctx = StreamContext(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *a):
        self._ctx.__exit__(*a)
        return False


_runtime.STREAM_CLASS[0] = Stream


class ExternalStream(Stream):
    """A stream made elsewhere: wraps a numba stream object."""

    def __new__(cls, stream_ptr, device=None, **kwargs):
        _lazy_init()
        idx = _index_of(device)
        s = object.__new__(cls)
        s._setup(idx, stream_ptr, 0)
        return s


class Event:
    """A CUDA event (torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False))."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        _lazy_init()
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)
        self._ev = None          # the numba event, made at the first record
        self._stream = None
        self._host_t = None      # host clock at record (the simulator's timing)
        self._cap = None         # the CUDA graph capture it was recorded in (ember.cuda.graphs)

    def record(self, stream=None):
        if stream is None:
            stream = _runtime.current_stream()
        if self._ev is None:
            with _runtime._ctx(stream.device_index):
                self._ev = _runtime.new_event(self.enable_timing)
        elif self._stream is not None and stream.device_index != self._stream.device_index:
            raise RuntimeError(f"Event device cuda:{stream.device_index} does not match recording "
                               f"stream's device cuda:{self._stream.device_index}.")
        self._ev.record(stream._ns)
        if _runtime.CAPTURES or self._cap is not None:
            _runtime.capture_record(self, stream)
        self._stream = stream
        self._host_t = time.perf_counter()

    def wait(self, stream=None):
        if stream is None:
            stream = _runtime.current_stream()
        if self._ev is not None:
            self._ev.wait(stream._ns)
        if _runtime.CAPTURES:
            _runtime.capture_wait(self, stream)

    def query(self):
        if _runtime.CAPTURES and _runtime.active_capture(self) is not None:
            _runtime.not_capturing(_runtime.active_capture(self).ns)
        if self._ev is None or _runtime.is_sim():
            return True
        return bool(self._ev.query())

    def synchronize(self):
        if _runtime.CAPTURES and _runtime.active_capture(self) is not None:
            _runtime.not_capturing(_runtime.active_capture(self).ns)
        if self._ev is not None:
            self._ev.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds of device time between this event and end_event (both recorded)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._ev is None or end_event._ev is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if _runtime.is_sim():
            return (end_event._host_t - self._host_t) * 1000.0
        if not end_event.query():
            raise RuntimeError("CUDA error: device not ready")
        return float(self._ev.elapsed_time(end_event._ev))

    @property
    def cuda_event(self):
        return 0 if self._ev is None else id(self._ev)

    def __repr__(self):
        return f"<ember.cuda.Event {self.cuda_event:#x}>" if self._ev is not None else \
            "<ember.cuda.Event uninitialized>"


class StreamContext:
    """Select a stream (and its device) for the block; stream(None) does nothing."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return None
        _lazy_init()
        self._prev = (_runtime.current_index(), _runtime.current_stream(s.device_index))
        _runtime.set_current_index(s.device_index)
        _runtime.set_current_stream(s)
        return s

    def __exit__(self, *args):
        if self._prev is not None:
            idx, prev = self._prev
            _runtime.set_current_stream(prev)
            _runtime.set_current_index(idx)
            self._prev = None
        return False
