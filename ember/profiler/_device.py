"""Device kernels in the profile: each CUDA kernel launch as a "cudaLaunchKernel" CPU span inside
the op that launched it, the kernel itself as a span on its device's per-stream track, and a flow
arrow (Chrome trace ph "s" -> "f") from the launch to the kernel, as torch's Kineto traces show.

How launches are seen, at no cost while nothing records: every CUDA kernel ember launches goes
through ember.cuda._runtime.Kernel (`k[grid, block, stream](*args)`). While a profile with the
CUDA activity records, that class's __getitem__ is wrapped (from here, the profiler side) so the
configured launch is timed; when the window closes, the plain one is put back.

Timing: on numba's CUDA simulator (EMBER_CUDA_SIM=1) a kernel runs to completion inside its launch
call, so its span is the host time around that run and the gap between enqueue and execution is
zero. On a GPU the launch returns at once: a pair of timing events around it on the launch's
stream gives the kernel's start and end, placed on the host clock through a reference event
recorded (and waited for) when the window opened; the gap then shows.
"""
import sys
import threading
import time

from ember.autograd.profiler_util import DeviceType, FunctionEvent

_perf_ns = time.perf_counter_ns


def _runtime():
    """ember.cuda._runtime when CUDA is loaded and its launches go through Kernel, else None."""
    rt = sys.modules.get("ember.cuda._runtime")
    if rt is None or not isinstance(getattr(rt, "Kernel", None), type):
        return None
    return rt


class _Launch:
    """A configured kernel (`k[cfg]`): calling it launches, timed into the window's record."""
    __slots__ = ("rec", "kern", "cfg", "fn")

    def __init__(self, rec, kern, cfg, fn):
        self.rec, self.kern, self.cfg, self.fn = rec, kern, cfg, fn

    def __call__(self, *args):
        return self.rec.launch(self.kern, self.cfg, self.fn, args)


class LaunchRecorder:
    """The kernel launches of one profiling window (installed by ember.profiler.profile)."""

    def __init__(self, collector):
        self.c = collector
        self.rt = None
        self.orig = None
        self.launches = []     # (launch event index, op event index, name, device, stream, start, end)
        self.sim = True
        self.ref = None        # (reference numba event, host µs) on a GPU
        self.thread = threading.get_ident()

    # ---- install / remove -----------------------------------------------------------------------
    def install(self):
        rt = _runtime()
        if rt is None:
            return False
        self.rt = rt
        self.sim = bool(rt.is_sim())
        cls = rt.Kernel
        self.orig = cls.__dict__["__getitem__"]
        orig = self.orig
        rec = self

        def __getitem__(kern, cfg):
            fn = orig(kern, cfg)
            c = rec.c
            if not c.on or threading.get_ident() != rec.thread:
                return fn
            caps = getattr(rec.rt, "CAPTURES", None)
            if caps and len(cfg) > 2 and id(cfg[2]) in caps:
                return fn  # a CUDA graph capture records this launch; it does not run now
            return _Launch(rec, kern, cfg, fn)

        __getitem__.__wrapped__ = orig
        cls.__getitem__ = __getitem__
        if not self.sim:
            self._reference()
        return True

    def remove(self):
        if self.rt is not None and self.orig is not None:
            self.rt.Kernel.__getitem__ = self.orig
            self.orig = None

    def _reference(self):
        rt = self.rt
        ev = rt.new_event(True)
        ev.record(rt.current_stream()._ns)
        ev.synchronize()
        self.ref = (ev, _perf_ns() / 1000.0)

    # ---- one launch -----------------------------------------------------------------------------
    def _stream_of(self, cfg):
        rt = self.rt
        dev = rt._current_index()
        ns = cfg[2] if len(cfg) > 2 else None
        if isinstance(ns, int):  # numba's spelling of the default stream
            ns = None
        if ns is None or ns is rt.state(dev).default_stream._ns:
            return dev, 7, ns  # the default stream: torch's traces call it "stream 7"
        h = getattr(ns, "handle", None)
        v = getattr(h, "value", h) if h is not None else None  # ctypes (numba) or CUstream (numba-cuda)
        try:
            return dev, int(v), ns  # the id Stream.cuda_stream reports
        except (TypeError, ValueError):
            return dev, id(ns), ns  # the simulator's streams have no handle

    def _name(self, kern):
        k = getattr(kern, "k", kern)
        py = getattr(k, "py_func", None) or getattr(k, "fn", None)
        name = getattr(py, "__name__", None) or type(k).__name__
        c = self.c
        for i in reversed(c.stack):  # the op that launched it: "kern" alone would say little
            if c.cats[i] == "cpu_op":
                return f"{name} ({c.names[i]})"
        return name

    def launch(self, kern, cfg, fn, args):
        c = self.c
        if not c.on:
            return fn(*args)
        op = c.stack[-1] if c.stack else -1
        name = self._name(kern)
        dev, sid, ns = self._stream_of(cfg)
        i = c.begin("cudaLaunchKernel", "cuda_runtime", [] if c.record_shapes else None)
        if self.sim:
            try:
                t0 = _perf_ns()
                out = fn(*args)
                t1 = _perf_ns()
            finally:
                c.end(i)
            self.launches.append((i, op, name, dev, sid, t0 / 1000.0, t1 / 1000.0))
            return out
        ev0, ev1 = self.rt.new_event(True), self.rt.new_event(True)
        stream = ns if ns is not None else self.rt.current_stream()._ns
        try:
            ev0.record(stream)
            out = fn(*args)
            ev1.record(stream)
        finally:
            c.end(i)
        self.launches.append((i, op, name, dev, sid, ev0, ev1))
        return out

    # ---- the window's events ----------------------------------------------------------------------
    def finish(self, events):
        """Add the kernels to a finished window's EventList (see _add_kernels)."""
        launches = self.launches
        if launches and self.ref is not None:  # a GPU: event times onto the host clock
            ref_ev, ref_us = self.ref
            elapsed = self.rt.cuda().event_elapsed_time
            for la in launches:
                la[6].synchronize()
            launches = [(i, op, name, dev, sid, ref_us + elapsed(ref_ev, a) * 1000.0,
                         ref_us + elapsed(ref_ev, b) * 1000.0) for i, op, name, dev, sid, a, b in launches]
        return _add_kernels(events, launches, DeviceType.CUDA, "cuda", self.thread)


def _add_kernels(events, launches, device_type, default_use_device, thread):
    """One device event per launch (on its stream's track), linked from its launch event (the
    trace's flow) and counted as device time of the op that launched it."""
    if not launches:
        return events
    next_id = max((e.id for e in events), default=-1) + 1
    by_id = {e.id: e for e in events}
    use_device = getattr(events, "_use_device", None) or default_use_device
    for i, op, name, dev, sid, a, b in launches:
        launch_ev = by_id.get(i)
        k = FunctionEvent(next_id, name, launch_ev.thread if launch_ev else thread, a, b, use_device=use_device,
                          device_type=device_type, device_index=dev, category="kernel")
        k.stream = sid
        next_id += 1
        if launch_ev is not None:
            launch_ev.use_device = use_device
            launch_ev._launches = getattr(launch_ev, "_launches", []) + [k]
        owner = by_id.get(op)
        if owner is not None:
            owner.append_kernel(name, dev, b - a)
        events.append(k)
    return events


# ---- out-of-tree asynchronous backends (PrivateUse1) ------------------------------------------------
_ASYNC = []  # the AsyncRecorder of the window recording now, while one records


def enqueue(fn, stream_id, device_index=0):
    """For a PrivateUse1 backend whose streams run work on threads of their own (as
    examples/async_device does): call it with the work as it is enqueued. It returns fn itself
    unless a profile with ProfilerActivity.PrivateUse1 records; then an "<name>LaunchKernel" span
    marks the enqueue inside the op, and the returned function times fn's run on the stream,
    which shows as a kernel on that stream's track, with a flow arrow from the enqueue: the gap
    between them is the time the work waited in the queue. Work still queued when the window
    closes is not recorded (synchronize first, as with CUDA)."""
    if not _ASYNC:
        return fn
    return _ASYNC[0].enqueue(fn, stream_id, device_index)


class AsyncRecorder:
    """The enqueued work of one profiling window, for a PrivateUse1 backend (see enqueue)."""

    def __init__(self, collector, backend):
        self.c = collector
        self._backend = backend  # the backend's name, or a function giving it (it may be renamed later)
        self.launches = []
        self.thread = threading.get_ident()

    @property
    def backend(self):
        return self._backend() if callable(self._backend) else self._backend

    def install(self):
        _ASYNC[:] = [self]
        return True

    def remove(self):
        if _ASYNC and _ASYNC[0] is self:
            _ASYNC.clear()

    def enqueue(self, fn, stream_id, device_index):
        c = self.c
        if not c.on or threading.get_ident() != self.thread:
            return fn
        op = c.stack[-1] if c.stack else -1
        owner = next((c.names[j] for j in reversed(c.stack) if c.cats[j] == "cpu_op"), None)
        backend = self.backend
        name = f"{backend}_kernel" + (f" ({owner})" if owner else "")
        i = c.begin(f"{backend}LaunchKernel", "cuda_runtime", [] if c.record_shapes else None)
        c.end(i)
        launches = self.launches

        def run():
            t0 = _perf_ns()
            try:
                return fn()
            finally:
                launches.append((i, op, name, device_index, stream_id, t0 / 1000.0, _perf_ns() / 1000.0))
        return run

    def finish(self, events):
        name = self.backend
        if getattr(events, "_use_device", None) == "privateuseone" and name != "privateuseone":
            events._use_device = name  # the backend was named after the window opened: its columns say so
            for e in events:
                e.use_device = name
        return _add_kernels(events, list(self.launches), "PrivateUse1", name, self.thread)


def name_tracks(trace, labels=None):
    """Process and thread names for the device tracks of a Chrome trace (dict): "GPU <i>" (or
    labels[pid]) and "stream <id>", as Kineto names them, so chrome://tracing and Perfetto label
    the rows."""
    events = trace["traceEvents"]
    tracks = {}
    for e in events:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            tracks.setdefault(e["pid"], set()).add(e["tid"])
    ts = min((e["ts"] for e in events if "ts" in e), default=0)
    for pid, tids in sorted(tracks.items()):
        events.append({"ph": "M", "name": "process_name", "ts": ts, "pid": pid, "tid": 0,
                       "args": {"name": (labels or {}).get(pid, f"GPU {pid}")}})
        events.append({"ph": "M", "name": "process_labels", "ts": ts, "pid": pid, "tid": 0,
                       "args": {"labels": (labels or {}).get(pid, f"CUDA device {pid}")}})
        for tid in sorted(tids, key=str):
            events.append({"ph": "M", "name": "thread_name", "ts": ts, "pid": pid, "tid": tid,
                           "args": {"name": str(tid)}})
    return trace
