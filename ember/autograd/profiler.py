"""torch.autograd.profiler: the event collector behind ember.profiler, record_function, and the
legacy `profile` context manager.

How events are taken, at no cost while nothing records:
  * ops: the collector is a dispatcher observer (ember.dispatch.operator.observers). While one is
    present, cached dispatch entries are rebuilt wrapped, so every call through an op's table, the
    top-level dispatcher entry, makes one "aten::<name>" event; the ops a composite or a backward
    formula calls nest inside it. When it leaves, the entries are rebuilt plain.
  * autograd nodes: ember.autograd.engine.node_hook runs each node's apply inside
    "autograd::engine::evaluate_function: <Node>" and "<Node>" events.
  * record_function (user annotations, optimizers' "Optimizer.step#SGD.step"): a check of one
    module global when no profiler is on.
  * memory (profile_memory=True): an op's new output buffers count as allocations inside it;
    their release (when the array is collected) is a negative record, "[memory]" outside any op.
  * modules (with_modules=True with with_stack=True, as torch, whose module records come from its
    Python tracer): a global forward pre-hook and an always-called forward hook, registered only
    while recording, make an "nn.Module: Linear_0" span (category python_function) around each
    module call, and put that name into the op stacks at the module's place; the number counts
    the instances of that class in the order this window first saw them.
  * dispatch layers (ember only, profile(..., with_dispatch_layers=True)): the observer also wraps
    every layer kernel of each entry (operator.observers' wrap_kernel), so inside "aten::mul" sit
    "AutogradCPU: aten::mul" and below it "CPU: aten::mul" (category dispatch_layer); a compiled
    graph's generated kernels enter `_kernel_span(name)` (category compiled_kernel). An op's self
    time is then the front door's (key set, table look-up), each layer's the layer's own.
"""
import functools
import os
import sys
import threading
import time
import weakref
from array import array

import numpy as np

from ember.autograd import engine as _engine
from ember.autograd.profiler_util import (DeviceType, EventList, FunctionEvent, FunctionEventAvg,  # noqa: F401
                                          MemRecordsAcc, _chrome_trace, _format_memory, _format_time)
from ember.core.keys import DispatchKey as _K
from ember.dispatch import operator as _op

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "emit_nvtx",
           "load_nvprof", "kineto_available"]

_current = None           # the _Collector recording now, or None
_perf_ns = time.perf_counter_ns
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ember's files, and the code it generates at run time (front doors, compiled graphs, kernels)
_OWN_FILES = (_EMBER_DIR, "<front door of ", "<ember ")


def _now_us():
    return _perf_ns() / 1000.0


def kineto_available():
    return False


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _tensors(x, out):
    if isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    elif hasattr(x, "_shape") and hasattr(x, "_np"):
        out.append(x)
    return out


def _shapes(args):
    return [list(a._shape) if hasattr(a, "_shape") and hasattr(a, "_keys") else [] for a in args]


def _flops(name, args):
    try:
        if name in ("aten::mm", "aten::matmul") and len(args[0]._shape) == 2:
            (m, k), n = args[0]._shape, args[1]._shape[-1]
            return 2 * m * k * n
        if name == "aten::addmm":
            (m, k), n = args[1]._shape, args[2]._shape[-1]
            return 2 * m * k * n
        if name in ("aten::bmm", "aten::baddbmm"):
            a, b = (args[0], args[1]) if name == "aten::bmm" else (args[1], args[2])
            bs, m, k = a._shape
            return 2 * bs * m * k * b._shape[-1]
    except (AttributeError, IndexError, TypeError, ValueError):
        pass
    return 0


class _Collector:
    """Takes events while a profiler records (one per profiling window)."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 use_device=None, with_modules=False, with_dispatch_layers=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.use_device = use_device
        # torch records modules with its Python tracer, which with_stack starts: without it, none
        self.with_modules = bool(with_modules and with_stack)
        self.with_dispatch_layers = with_dispatch_layers
        self.module_names = {}    # id(module) -> (module, "nn.Module: Linear_0"), for this window
        self.module_counts = {}   # class name -> instances named so far
        self.module_frames = {}   # frame calling a module's forward -> its name (for the stacks)
        self.module_open = []     # (event, frame) of the module calls open now
        self._hooks = ()
        self._columns()
        self.stack = []
        self.mem_records = []     # (ts, bytes, total allocated, device type, device id, addr)
        self.allocated = 0
        self.live = {}            # id(root array) -> bytes, for the allocations this window saw
        self.on = False
        self.t_start = self.t_stop = None
        self.thread = threading.get_ident()

    # ---- lifecycle --------------------------------------------------------------------------
    def start(self):
        global _current
        self.on = True
        self.t_start = _now_us()
        _current = self
        self._observer = _LAYERS_OBSERVER if self.with_dispatch_layers else _OBSERVER
        _op.observers.append(self._observer)
        _op.invalidate()
        _engine.node_hook[0] = _evaluate_function
        if self.with_modules:
            # lazy: ember.nn sits above autograd; its hook registry is needed only for with_modules
            from ember.nn.modules import module as _module
            self._hooks = (_module.register_module_forward_pre_hook(_module_pre_hook),
                           _module.register_module_forward_hook(_module_post_hook, always_call=True))

    def stop(self):
        global _current
        if not self.on:
            return
        self.on = False
        self.t_stop = _now_us()
        while self.stack:  # ranges still open (a record_function entered inside) end here
            self.end(self.stack[-1])
        if _current is self:
            _current = None
        for h in self._hooks:
            h.remove()
        self._hooks = ()
        self.module_frames.clear()
        self.module_open.clear()
        self.module_names.clear()
        if self._observer in _op.observers:
            _op.observers.remove(self._observer)
            _op.invalidate()
        if _current is None:
            _engine.node_hook[0] = None

    # ---- events -----------------------------------------------------------------------------
    # While recording, event i is a row across flat columns (names, start/end ns, parent index):
    # a few big containers rather than an object per event, which the garbage collector would
    # walk again and again as the window grows. The fields most events leave at their default
    # (shapes, sequence number, stack, memory, flops) are sparse: index -> value. FunctionEvents
    # are made when the window closes.
    def _columns(self):
        self.names, self.cats = [], []
        self.t0, self.t1, self.parent = array("q"), array("q"), array("q")
        self.shapes, self.seqs, self.stacks, self.mem, self.flops = {}, {}, {}, {}, {}

    def begin(self, name, category="cpu_op", shapes=None, seq=-1):
        # the stack first: it allocates, so a garbage collection may run and free tensors, whose
        # [memory] records re-enter begin(); none may land between this event's column appends
        stack = self._stack_trace() if self.with_stack else None
        st = self.stack
        i = len(self.names)
        self.names.append(name)
        self.cats.append(category)
        self.parent.append(st[-1] if st else -1)
        self.t1.append(0)
        if shapes is not None:
            self.shapes[i] = shapes
        if seq != -1:
            self.seqs[i] = seq
        if stack is not None:
            self.stacks[i] = stack
        st.append(i)
        self.t0.append(_perf_ns())
        return i

    def begin_layer(self, name, category):
        """begin() for a span inside an op (a dispatch layer, a compiled kernel): no shapes, no
        stack (its op's), the fewest steps."""
        st = self.stack
        i = len(self.names)
        self.names.append(name)
        self.cats.append(category)
        self.parent.append(st[-1] if st else -1)
        self.t1.append(0)
        st.append(i)
        self.t0.append(_perf_ns())
        return i

    def end(self, i):
        t = _perf_ns()
        st = self.stack
        t1 = self.t1
        while st:
            top = st.pop()
            t1[top] = t
            if top == i:
                break

    def function_events(self):
        out = []
        tid = self.thread
        for i, name in enumerate(self.names):
            trace_name = name
            if name.startswith("ProfilerStep#"):  # torch's wildcard: steps aggregate in the table
                name = "ProfilerStep*"
            cat = self.cats[i]
            ev = FunctionEvent(i, name, tid, self.t0[i] / 1000.0, self.t1[i] / 1000.0, trace_name=trace_name,
                               input_shapes=self.shapes.get(i), use_device=self.use_device,
                               sequence_nr=self.seqs.get(i, -1), is_user_annotation=cat == "user_annotation",
                               category=cat, stack=self.stacks.get(i, []), cpu_memory_usage=self.mem.get(i, 0),
                               flops=self.flops.get(i))
            pi = self.parent[i]
            if pi >= 0:
                p = out[pi]
                ev.cpu_parent = p
                p.cpu_children.append(ev)
            out.append(ev)
        return out

    def _stack_trace(self):
        out = []
        f = sys._getframe(1)
        mods = self.module_frames
        while f is not None:  # innermost first, ember's own frames left out (torch keeps user frames)
            co = f.f_code
            fn = co.co_filename
            if not fn.startswith(_OWN_FILES):
                out.append(f"{fn}({f.f_lineno}): {co.co_name}")
            elif mods and f in mods:  # the frame that called a module's forward: torch's entry there
                out.append(mods[f])
            f = f.f_back
        return out

    # ---- modules ----------------------------------------------------------------------------
    def module_name(self, m):
        k = id(m)
        got = self.module_names.get(k)
        if got is not None:
            return got[1]
        cls = type(m).__name__
        n = self.module_counts.get(cls, 0)
        self.module_counts[cls] = n + 1
        name = f"nn.Module: {cls}_{n}"
        self.module_names[k] = (m, name)  # the module is held so its id is not reused this window
        return name

    # ---- memory -----------------------------------------------------------------------------
    def memory(self, nbytes, addr, device_type=0, device_id=-1):
        ts = _perf_ns()
        self.allocated += nbytes
        self.mem_records.append((ts / 1000.0, nbytes, self.allocated, device_type, device_id, addr))
        if self.stack:
            mem = self.mem
            for i in self.stack:  # an event's usage counts everything inside it
                mem[i] = mem.get(i, 0) + nbytes
        else:
            i = self.begin("[memory]", "cpu_instant_event", [] if self.record_shapes else None)
            self.stack.pop()
            self.t0[i] = self.t1[i] = ts
            self.mem[i] = nbytes

    def track(self, out, args):
        """Count the buffers `out` holds that no argument held and this window has not seen."""
        outs = [out] if hasattr(out, "_np") else _tensors(out, [])
        if not outs:
            return
        seen = None
        live = self.live
        for t in outs:
            a = t._np
            if a.__class__ is not np.ndarray:
                continue
            r = _root(a)
            k = id(r)
            if k in live:
                continue
            if seen is None:
                seen = {id(_root(x._np)) for x in _tensors(args, []) if x._np.__class__ is np.ndarray}
            if k in seen:
                continue
            seen.add(k)
            live[k] = (r.nbytes, weakref.ref(r, functools.partial(_freed, self, k)))
            self.memory(r.nbytes, r.__array_interface__["data"][0])


def _freed(c, k, _ref=None):
    n = c.live.pop(k, None)
    if n is not None and c.on:
        c.memory(-n[0], 0)


def _module_pre_hook(module, args):
    c = _current
    if c is None or not c.on or not c.with_modules:
        return None
    name = c.module_name(module)
    ev = c.begin(name, "python_function")
    frame = sys._getframe(1)  # Module._call_with_hooks, which calls forward next
    c.module_frames[frame] = name
    c.module_open.append((ev, frame))
    return None


def _module_post_hook(module, args, result):
    c = _current
    if c is None or not c.with_modules or not c.module_open:
        return None
    ev, frame = c.module_open.pop()
    c.module_frames.pop(frame, None)
    if ev in c.stack:
        c.end(ev)
    return None


def _key_name(key):
    try:
        return _K(key).name
    except ValueError:
        return getattr(key, "name", str(key))


class _Observer:
    """The dispatcher observer: wraps each op's whole entry; layer kernels pass unchanged."""

    @staticmethod
    def wrap_call(op, ks, entry):
        name = f"{op.ns}::{op.name}"
        c = _current
        if c is not None and not c.with_stack:
            return _bound_call(c, name, entry)

        def call(*args):
            c = _current
            if c is None or not c.on:
                return entry(*args)
            ev = c.begin(name, "cpu_op", _shapes(args) if c.record_shapes else None)
            if c.with_flops:
                c.flops[ev] = _flops(name, args)
            try:
                out = entry(*args)
                if c.profile_memory:  # inside the op's range: the op allocated it
                    c.track(out, args)
            finally:
                c.end(ev)
            return out
        return call

    @staticmethod
    def wrap_kernel(op, key, kernel, fn):
        return fn


def _bound_call(c, name, entry):
    """The op wrapper holding its window's columns (see _LayersObserver.wrap_kernel): begin and
    end inline. Not with with_stack, whose stack walk must come before the column appends."""
    names, cats, parent, t0, t1, st = c.names, c.cats, c.parent, c.t0, c.t1, c.stack
    shapes, record_shapes, with_flops, profile_memory = c.shapes, c.record_shapes, c.with_flops, c.profile_memory

    def call(*args):
        if not c.on:
            return entry(*args)
        # the shapes first: they allocate, so a collection may free tensors whose [memory] records
        # re-enter begin(); none may land between this event's column appends
        sh = _shapes(args) if record_shapes else None
        i = len(names)
        names.append(name)
        cats.append("cpu_op")
        parent.append(st[-1] if st else -1)
        t1.append(0)
        if sh is not None:
            shapes[i] = sh
        st.append(i)
        if with_flops:
            c.flops[i] = _flops(name, args)
        t0.append(_perf_ns())
        try:
            out = entry(*args)
            if profile_memory:  # inside the op's range: the op allocated it
                c.track(out, args)
        finally:
            t = _perf_ns()
            while st:  # c.end(i)
                top = st.pop()
                t1[top] = t
                if top == i:
                    break
        return out
    return call


class _LayersObserver(_Observer):
    """with_dispatch_layers=True: each layer kernel of an entry is a span inside the op's span."""

    @staticmethod
    def wrap_kernel(op, key, kernel, fn):
        # a composite kernel serving a runtime key is named by its alias, as it is registered
        layer = _key_name(key)
        for alias in (_K.CompositeImplicitAutograd, _K.CompositeExplicitAutograd):
            if op.kernels.get(alias) is kernel:
                layer = alias.name
                break
        name = f"{layer}: {op.ns}::{op.name}"
        c = _current
        if c is None:
            def layer(*args):
                c = _current
                if c is None or not c.on:
                    return fn(*args)
                ev = c.begin_layer(name, "dispatch_layer")
                try:
                    return fn(*args)
                finally:
                    c.end(ev)
            return layer
        # entries are built while a window records and dropped when it ends (invalidate), so the
        # wrapper may hold that window's columns: begin_layer and end inline, a layer costs ~0.5 us
        names, cats, parent, t0, t1, st = c.names, c.cats, c.parent, c.t0, c.t1, c.stack

        def layer(*args):
            if not c.on:
                return fn(*args)
            i = len(names)
            names.append(name)
            cats.append("dispatch_layer")
            parent.append(st[-1] if st else -1)
            t1.append(0)
            st.append(i)
            t0.append(_perf_ns())
            try:
                return fn(*args)
            finally:
                t = _perf_ns()
                while st:  # c.end(i)
                    top = st.pop()
                    t1[top] = t
                    if top == i:
                        break
        return layer


_OBSERVER = _Observer()
_LAYERS_OBSERVER = _LayersObserver()


class _NullSpan:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NULL_SPAN = _NullSpan()


class _Span:
    __slots__ = ("c", "ev")

    def __init__(self, c, name, category):
        self.c = c
        self.ev = c.begin_layer(name, category)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        c = self.c
        if self.ev in c.stack:
            c.end(self.ev)
        return False


def _kernel_span(name):
    """A span for one kernel of a compiled graph (ember.compile's generated code), recorded while a
    profiler with with_dispatch_layers=True runs; otherwise a shared no-op context (~0.2 us).

        with _kernel_span("cpp_fused_add_mul_0"):
            kernel(buf0, arg0_1, arg1_1)

    Code that runs kernels in a tight loop can test `ember.autograd.profiler._current is None` first.
    """
    c = _current
    if c is None or not c.on or not c.with_dispatch_layers:
        return _NULL_SPAN
    return _Span(c, name, "compiled_kernel")


def _evaluate_function(node, buf):
    c = _current
    if c is None or not c.on:
        return node.apply(buf)
    name = node.name()
    outer = c.begin("autograd::engine::evaluate_function: " + name, "cpu_op",
                    [] if c.record_shapes else None, seq=getattr(node, "_seq", -1))
    try:
        inner = c.begin(name, "cpu_op", [] if c.record_shapes else None, seq=getattr(node, "_seq", -1))
        try:
            outs = node.apply(buf)
        finally:
            c.end(inner)
        # torch validates the outputs (sum_to / view to the input's shape) inside evaluate_function:
        # done here, the engine's own check then finds nothing to change
        nf = node._next
        outs = list(outs)
        for i, (e, g) in enumerate(zip(nf, outs)):
            if e is None or g is None:
                continue
            nxt, nr = e
            im = nxt._input_meta
            if nr < len(im):
                meta = im[nr]
                if meta is not None and (g._dtype is not meta[1] or g._shape != meta[0]):
                    outs[i] = _engine._validate(g, meta, node, _engine._position(nf, outs, e, g))
        return outs
    finally:
        c.end(outer)


# ---- record_function ------------------------------------------------------------------------
class record_function:
    """A user range in the profile (a context manager, or a decorator): "user_annotation" events."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self.record = None
        self._ev = None
        self._c = None

    def __enter__(self):
        c = _current
        if c is not None and c.on:
            self._c = c
            self._ev = c.begin(self.name, "user_annotation", [] if c.record_shapes else None)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if not self.run_callbacks_on_exit:
            return
        c, ev = self._c, self._ev
        self._c = self._ev = None
        if c is not None and ev in c.stack:
            c.end(ev)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper

    def _call_end_callbacks_on_future(self, fut):
        self.run_callbacks_on_exit = False
        self.__exit__(None, None, None)
        return fut


def _finish(c):
    """The events of a finished window, as torch lists them: in start order."""
    return EventList(c.function_events(), use_device=c.use_device, profile_memory=c.profile_memory,
                     with_flops=c.with_flops)


# ---- the legacy profiler --------------------------------------------------------------------
class profile:
    """torch.autograd.profiler.profile: record while inside `with`, then read the events."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 with_dispatch_layers=False):
        self.enabled = enabled
        if not enabled:
            return
        self.use_cuda = use_cuda
        if use_cuda:
            use_device = "cuda"
        self.use_device = use_device
        self.function_events = None
        self.entered = False
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.record_shapes |= self.with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.with_dispatch_layers = with_dispatch_layers
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self._collector = None

    def __enter__(self):
        if not self.enabled:
            return
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._prepare_trace()
        self._start_trace()
        return self

    def _prepare_trace(self):
        self.entered = True
        self._collector = _Collector(self.record_shapes, self.profile_memory, self.with_stack,
                                     self.with_flops, self.use_device, self.with_modules,
                                     self.with_dispatch_layers)

    def _start_trace(self):
        self.entered = True
        self._collector.start()

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return
        self._collector.stop()
        self.function_events = _finish(self._collector)
        self.entered = False
        return False

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _ensure_function_events(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._ensure_function_events()
        return self.function_events.table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width, max_shapes_column_width=max_shapes_column_width,
            header=header, top_level_events_only=top_level_events_only, time_unit=time_unit)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        self._ensure_function_events()
        c = self._collector
        with open(path, "w") as f:
            import json  # lazy: only when a trace is written
            json.dump(_chrome_trace(self.function_events, c.mem_records,
                                    {"profile_memory": int(c.profile_memory), "record_shapes": int(c.record_shapes),
                                     "traceName": path}), f)
        return path

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._ensure_function_events()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._ensure_function_events()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self):
        self._ensure_function_events()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._ensure_function_events()
        return self.function_events.self_cpu_time_total


class emit_nvtx:
    """NVTX ranges (no NVTX in ember): a context manager that does nothing."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def load_nvprof(path):
    raise NotImplementedError("load_nvprof: ember has no nvprof traces")
