"""CUDA Graphs (torch.cuda.graphs): capture the work a stream would run, replay it later.

torch records the kernels a stream would run into a cudaGraph and launches them all at once on
replay. ember does the same one level up: while a CUDAGraph captures on a stream, every launch
the CUDA backend enqueues on that stream (`_runtime.Kernel`) and every device-side copy
(`_runtime.device_copy`) is recorded with its arguments (the device arrays over the tensors'
memory) instead of run; `replay()` enqueues the recorded launches, in order, on the current
stream. As in torch, nothing runs during capture: tensors made during capture hold garbage until
the first replay, and each replay rewrites the same memory (the "static" inputs and outputs).

Memory: while a graph captures, the caching allocator serves the capturing stream from the
graph's private pool (an allocator pool keyed on a `_Pool` object instead of a stream), so
the memory the recorded launches read and write is never handed to eager tensors. Blocks freed
during capture go back to the private pool, where later allocations of the same capture (or of
another capture that shares the pool: `pool=g.pool()` / `graph_pool_handle()`) reuse them, as
torch's private pools do. (empty_cache() may hand a private pool's entirely free segments back
while their graph lives: the recorded launches hold the numba arrays over that memory, so the
memory itself stays alive and replays stay correct; memory_reserved() just stops counting it.)

Host synchronization during capture raises CUDA's "operation not permitted when stream is
capturing" (a synchronize, `.item()`, a device-to-host copy, a copy from pageable host memory)
and invalidates the capture, so capture_end() then raises "operation failed due to a previous
error during capture", as torch does. The CUDA backend runs some ops on the host (bfloat16,
complex, ops without a numba kernel, random numbers): those raise the same error with a note
saying why, instead of running once at capture time and never again.

make_graphed_callables is torch's function over these pieces, with torch's semantics, the
known sharp edge included: the backward returns the graph's static grad buffers, so a
parameter's first .grad aliases one (pytorch/pytorch#181723; clear .grad each step, or clone
in a hook, before accumulating over several backwards).

Several streams: a stream that waits on an event recorded during the capture (`s2.wait_stream(
capturing)`) joins the capture, as with cudaStreamWaitEvent; its work is recorded in issue order
and must be joined back (`capturing.wait_stream(s2)`) before capture_end, else capture_end raises
CUDA's unjoined-fork error.

Events recorded during capture are capture nodes: the host cannot wait on them (query and
synchronize raise); a stream that joined back counts as joined up to the event it waited on.

Not modelled: RNG state registration (random ops raise during capture), the capture modes'
rules for "unsafe" calls from other threads (the mode is checked and kept; synchronizing a
capturing stream, or the whole device, raises in every mode), timing events inside a graph,
`check_input_liveness`, conditional nodes, graph annotations, and a real cudaGraph to dump
(debug_dump writes the recorded node list as a dot file).
"""
import itertools
import threading
import warnings

import numpy as np

from ember.cuda import _runtime
from ember.cuda._runtime import CAPTURES, cuda_error
from ember.cuda.memory import empty_cache
from ember.cuda.streams import Stream, StreamContext

__all__ = ["is_current_stream_capturing", "graph_pool_handle", "CUDAGraph", "graph",
           "make_graphed_callables"]

_MODES = ("global", "thread_local", "relaxed")
_user_ids = itertools.count(1)    # graph_pool_handle(): (0, n)
_graph_ids = itertools.count(1)   # a capture's own pool: (n, 0)
_pools = {}                       # pool handle -> _Pool (the allocator key)
_lock = threading.Lock()


class _Pool:
    """A private memory pool: the key under which the caching allocator keeps its blocks."""
    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle

    def __repr__(self):
        return f"<ember.cuda graph pool {self.handle}>"


def _pool_of(handle):
    with _lock:
        p = _pools.get(handle)
        if p is None:
            p = _pools[handle] = _Pool(handle)
        return p


def _as_handle(pool):
    try:
        a, b = pool
        return int(a), int(b)
    except (TypeError, ValueError):
        raise TypeError(f"capture_begin(): pool must be a tuple of two ints (a graph pool handle), "
                        f"got {type(pool).__name__}") from None


def _no_cuda(name):
    """torch built without CUDA: its graph classes are dummies that raise when used."""
    if not _runtime.available():
        raise RuntimeError(f"Tried to instantiate dummy base class {name}")


def is_current_stream_capturing():
    """True if CUDA graph capture is underway on the current CUDA stream (False, without
    initialising CUDA, when CUDA was never initialised)."""
    if not CAPTURES:
        if not _runtime.is_initialized():
            _no_cuda("_cuda_isCurrentStreamCapturing")
        return False
    if not _runtime.is_initialized():
        return False
    return id(_runtime.current_stream()._ns) in CAPTURES


def graph_pool_handle():
    """An opaque token naming a graph memory pool, for `graph(..., pool=)` and
    `make_graphed_callables(..., pool=)`."""
    _no_cuda("_graph_pool_handle")
    return 0, next(_user_ids)


class _Capture:
    """The recording of one capture: the nodes enqueued on the capturing stream so far."""

    def __init__(self, graph, stream, pool, mode):
        self.graph = graph
        self.stream = stream
        self.ns = stream._ns
        self.device_index = stream.device_index
        self.pool_key = pool
        self.mode = mode
        self.thread = threading.get_ident()
        self.nodes = []
        self.invalid = False
        self.forked = {}    # id(numba stream) -> ember stream: streams forked into this capture
        self.last = {}      # id(numba stream) -> node count after that stream's last node (or fork)
        self.joined = {}    # id(numba stream) -> node count up to which it was joined back

    @property
    def seq(self):
        return len(self.nodes)

    def launcher(self, kernel, cfg):
        nodes = self.nodes
        sid = id(cfg[2])
        last = self.last if sid in self.forked else None

        def launch(*args):
            nodes.append((kernel, tuple(cfg), args))
            if last is not None:
                last[sid] = len(nodes)
        return launch

    def add_copy(self, dst, src, ns):
        self.nodes.append((None, dst, src))
        sid = id(ns)
        if sid in self.forked:
            self.last[sid] = len(self.nodes)

    def invalidate(self):
        self.invalid = True

    def fork(self, stream):
        """`stream` waited on an event recorded in this capture: its work joins the capture.
        Recorded in issue order, the graph replays it in that order on one stream (a valid
        schedule: work depends only on work issued before it)."""
        sid = id(stream._ns)
        CAPTURES[sid] = self
        self.forked[sid] = stream
        self.last[sid] = self.seq

    def join(self, sid, at):
        if sid in self.forked and at > self.joined.get(sid, -1):
            self.joined[sid] = at

    def unjoined(self):
        return [s for sid, s in self.forked.items() if self.joined.get(sid, -1) < self.last[sid]]

    def close(self):
        """The capture is over: its streams (the origin and every fork) stop capturing."""
        for sid in [id(self.ns), *self.forked]:
            if CAPTURES.get(sid) is self:
                del CAPTURES[sid]


def _run(nodes, ns):
    """Enqueue recorded nodes on numba stream ns."""
    for k, a, b in nodes:
        if k is not None:
            k[(a[0], a[1], ns) + a[3:]](*b)
        elif isinstance(a, np.ndarray):   # device -> pinned host
            b.copy_to_host(a, stream=ns)
        else:                             # device -> device, or pinned host -> device
            a.copy_to_device(b, stream=ns)


class CUDAGraph:
    """Wrapper around a CUDA graph (torch.cuda.CUDAGraph(keep_graph=False)).

    keep_graph=False instantiates the graph at the end of capture_end(); keep_graph=True leaves
    that to instantiate() or the first replay()."""

    def __init__(self, keep_graph=False):
        _no_cuda("CUDAGraph")
        _runtime.init()
        self._keep_graph = bool(keep_graph)
        self._capture = None          # the _Capture while capturing
        self._nodes = None            # the captured graph (has_graph)
        self._exec = None             # the instantiated graph (has_graph_exec)
        self._capture_ended = False
        self._pool = None             # the pool handle of the last capture
        self._pool_key = None         # its _Pool, kept alive with the graph
        self._stream = _runtime.current_stream()
        self._device_index = self._stream.device_index
        self._debug = False

    def capture_begin(self, pool=None, capture_error_mode="global", check_input_liveness=False):
        """Begin capturing CUDA work on the current stream (normally through `graph`)."""
        if capture_error_mode not in _MODES:
            raise RuntimeError("Unknown capture error mode. Expected `global`, `thread_local`, or "
                               f"`relaxed`, got {capture_error_mode}")
        if self._exec is not None or self._capture is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To capture "
                               "a new graph, create a new instance.")
        stream = _runtime.current_stream()
        if stream._default:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        if id(stream._ns) in CAPTURES:
            raise cuda_error("operation not permitted when stream is capturing")
        if pool is None:
            handle = (next(_graph_ids), 0)
        else:
            handle = _as_handle(pool)
        self._stream = stream
        self._device_index = stream.device_index
        self._pool = handle
        self._pool_key = _pool_of(handle)
        cap = self._capture = _Capture(self, stream, self._pool_key, capture_error_mode)
        CAPTURES[id(stream._ns)] = cap

    def capture_end(self):
        """End CUDA graph capture on the current stream."""
        stream = _runtime.current_stream()
        cap = self._capture
        if cap is None:
            if stream._ns is self._stream._ns:
                raise cuda_error("operation not permitted when stream is not capturing")
            raise RuntimeError("Capture must end on the same stream it began on.")
        if stream._ns is not cap.ns:
            raise RuntimeError("Capture must end on the same stream it began on.")
        cap.close()
        self._capture = None
        if cap.invalid:
            raise cuda_error("operation failed due to a previous error during capture")
        if cap.unjoined():
            # cudaErrorStreamCaptureUnjoined
            raise cuda_error("capture sequence contains a fork that was not joined to the primary "
                             "stream")
        self._nodes = tuple(cap.nodes)
        if not self._nodes:
            warnings.warn("The CUDA Graph is empty. This usually means that the graph was "
                          "attempted to be captured on wrong device or stream.", UserWarning,
                          stacklevel=2)
        self._capture_ended = True
        if not self._keep_graph:
            self.instantiate()
            if not self._debug:
                self._nodes = None

    def instantiate(self):
        """Make the captured graph replayable (capture_end does it unless keep_graph=True)."""
        if not self._capture_ended:
            raise RuntimeError("capture_end() must have been called before calling instantiate")
        if self._exec is not None and not self._keep_graph:
            raise RuntimeError("instantiate() is intended to be called by the user only when "
                               "keep_graph=true")
        self._exec = self._nodes

    def replay(self):
        """Enqueue the captured work on the current stream."""
        if not self._capture_ended:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        if self._exec is None:
            self.instantiate()
        ns = _runtime.current_stream(self._device_index)._ns
        cap = _runtime.capture_of(ns)
        if cap is not None:  # replayed inside another capture: becomes part of that graph
            cap.nodes.extend(self._exec)
            return
        with _runtime._ctx(self._device_index):
            _run(self._exec, ns)

    def reset(self):
        """Delete the graph this instance holds (its memory goes back with its pool)."""
        cap = self._capture
        if cap is not None:
            cap.close()
            self._capture = None
        self._capture_ended = False
        self._nodes = self._exec = None
        self._pool_key = None

    def pool(self):
        """The id of this graph's memory pool: pass it to another capture to share the pool."""
        if not self._capture_ended:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return self._pool

    def enable_debug_mode(self):
        self._debug = True

    def debug_dump(self, debug_path):
        if self._debug or self._keep_graph:
            warnings.warn("DEBUG: calling debug_dump()", UserWarning, stacklevel=2)
            if self._nodes is not None:
                with open(debug_path, "w") as f:
                    f.write("digraph ember_cuda_graph {\n")
                    for i, (k, _a, _b) in enumerate(self._nodes):
                        name = "memcpy" if k is None else getattr(getattr(k, "py_func", k),
                                                                  "__name__", "kernel")
                        f.write(f'  n{i} [label="{name}"];\n')
                        if i:
                            f.write(f"  n{i - 1} -> n{i};\n")
                    f.write("}\n")
        else:
            warnings.warn("CUDA Graphs debug not enabled, set with [graph].enable_debug_mode()",
                          UserWarning, stacklevel=2)

    def raw_cuda_graph(self):
        if not self._keep_graph:
            raise RuntimeError("You cannot access the raw cudaGraph_t instance unless CUDAGraph "
                               "was initialized with keep_graph=true")
        if self._nodes is None:
            raise RuntimeError("You cannot access the raw cudaGraph_t instance until "
                               "capture_end() has been called")
        return id(self._nodes)

    def raw_cuda_graph_exec(self):
        if self._exec is None:
            raise RuntimeError("You cannot access the raw cudaGraphExec_t instance until "
                               "instantiate() has been called")
        return id(self._exec)

    def __del__(self):
        try:
            cap = self._capture
            if cap is not None:
                cap.close()
        except Exception:  # noqa: S110 - never raise under GC
            pass


class graph:
    """Context manager that captures CUDA work into a CUDAGraph (torch.cuda.graph).

    graph(cuda_graph, pool=None, stream=None, capture_error_mode="global"): the block runs with
    `stream` (by default a side stream shared by every `graph`) as the current stream, and the
    work it enqueues there is captured, not run."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global",
                 enable_annotations=False, check_input_liveness=False):
        if stream is None and self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.stream_ctx = StreamContext(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode
        self.check_input_liveness = check_input_liveness

    def __enter__(self):
        _runtime.synchronize()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode,
                                          check_input_liveness=self.check_input_liveness)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, *args):
        try:
            self.cuda_graph.capture_end()
        finally:
            # torch leaves the capture stream current when capture_end raises; ember restores
            # the previous stream either way, so a failed capture leaves the thread usable
            self.stream_ctx.__exit__(*args)


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False,
                           pool=None):
    """Graphed versions of callables (functions or nn.Modules): each forward replays a captured
    forward graph inside one autograd node whose backward replays a captured backward graph
    (torch.cuda.make_graphed_callables)."""
    # graphs sit in the CUDA runtime layer; the graphed callables are autograd Functions over
    # nn.Modules, layers above it, imported only when this is called
    import ember  # lazy: the public namespace (autograd.grad, empty_like), a layer above
    from ember.amp.autocast_mode import _region  # lazy: autocast state, a layer above
    from ember.autograd.function import Function, once_differentiable  # lazy: autograd, above
    from ember.nn import Module  # lazy: nn, a library above the runtime
    from ember.utils import _pytree  # lazy: pytree, a library above the runtime

    if ember.is_autocast_enabled() and _region()["cache_enabled"]:
        raise RuntimeError("make_graphed_callables does not support the autocast caching. Please "
                           "set `cache_enabled=False`.")

    just_one_callable = False
    if not isinstance(callables, tuple):
        just_one_callable = True
        callables = (callables,)
        sample_args = (sample_args,)

    flatten_sample_args = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, Module):
            if (getattr(c, "_backward_hooks", None) or getattr(c, "_forward_hooks", None)
                    or getattr(c, "_forward_pre_hooks", None)):
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. However, "
                    "registering hooks on modules after passing them through make_graphed_callables "
                    "is allowed.")
            if not all(b.requires_grad is False for b in c.buffers()):
                raise AssertionError(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, only "
                    "parameters may be trainable. All buffers must have ``requires_grad=False``.")
        flatten_arg = _pytree.tree_leaves(tuple(args))
        flatten_sample_args.append(tuple(flatten_arg))
        if not all(isinstance(arg, ember.Tensor) for arg in flatten_arg):
            raise AssertionError("In the beta API, sample_args for each callable must contain only "
                                 "Tensors. Other types are not allowed.")

    # a Module's graph reads its parameters too: they are part of its static input surface
    per_callable_len_user_args = [len(args) for args in flatten_sample_args]
    per_callable_module_params = [tuple(c.parameters()) if isinstance(c, Module) else ()
                                  for c in callables]
    per_callable_static_input_surfaces = [flatten_sample_args[i] + per_callable_module_params[i]
                                          for i in range(len(callables))]

    fwd_graphs = [CUDAGraph() for _ in range(len(callables))]
    bwd_graphs = [CUDAGraph() for _ in range(len(callables))]
    mempool = graph_pool_handle() if pool is None else pool

    # warm up on a side stream (lazy initialisation stays out of the captures)
    ember.cuda.synchronize()
    with ember.cuda.stream(ember.cuda.Stream()):
        for func, args, surface in zip(callables, sample_args, per_callable_static_input_surfaces):
            grad_inputs, outputs, outputs_grad = None, None, None
            for _ in range(num_warmup_iters):
                outputs = _pytree.tree_leaves(func(*args))
                outputs_grad = tuple(o for o in outputs if o.requires_grad)
                if len(outputs_grad) > 0:
                    grad_inputs = ember.autograd.grad(
                        outputs=outputs_grad,
                        inputs=tuple(i for i in surface if i.requires_grad),
                        grad_outputs=tuple(ember.empty_like(o) for o in outputs if o.requires_grad),
                        only_inputs=True, allow_unused=allow_unused_input)
            del outputs, outputs_grad, grad_inputs
    ember.cuda.synchronize()

    # capture every forward, then every backward in reverse order (the order they will run in,
    # so captures sharing the pool do not overwrite memory a later replay still needs)
    per_callable_static_outputs = []
    per_callable_output_unflatten_spec = []
    for func, args, fwd_graph in zip(callables, sample_args, fwd_graphs):
        with graph(fwd_graph, pool=mempool):
            func_outputs = func(*args)
        flatten_outputs, spec = _pytree.tree_flatten(func_outputs)
        per_callable_static_outputs.append(tuple(flatten_outputs))
        per_callable_output_unflatten_spec.append(spec)

    per_callable_static_grad_outputs = []
    per_callable_static_grad_inputs = []
    for surface, static_outputs, bwd_graph in zip(reversed(per_callable_static_input_surfaces),
                                                  reversed(per_callable_static_outputs),
                                                  reversed(bwd_graphs)):
        static_grad_outputs = tuple(ember.empty_like(o) if o.requires_grad else None
                                    for o in static_outputs)
        outputs_grad = tuple(o for o in static_outputs if o.requires_grad)
        grad_inputs = None
        if len(outputs_grad) > 0:
            with graph(bwd_graph, pool=mempool):
                grad_inputs = ember.autograd.grad(
                    outputs=outputs_grad,
                    inputs=tuple(i for i in surface if i.requires_grad),
                    grad_outputs=tuple(o for o in static_grad_outputs if o is not None),
                    only_inputs=True, allow_unused=allow_unused_input)
        static_grad_inputs = []
        grad_idx = 0
        for arg in surface:
            if arg.requires_grad and grad_inputs is not None:
                static_grad_inputs.append(grad_inputs[grad_idx])
                grad_idx += 1
            else:
                static_grad_inputs.append(None)
        per_callable_static_grad_outputs.append(static_grad_outputs)
        per_callable_static_grad_inputs.append(tuple(static_grad_inputs))
    per_callable_static_grad_outputs.reverse()
    per_callable_static_grad_inputs.reverse()

    def make_graphed_autograd_function(fwd_graph, bwd_graph, module_params, len_user_args,
                                       output_unflatten_spec, static_input_surface, static_outputs,
                                       static_grad_outputs, static_grad_inputs):
        class Graphed(Function):
            @staticmethod
            def forward(ctx, *inputs):
                # only the user args may be new tensors: copy them into the static inputs
                for i in range(len_user_args):
                    if static_input_surface[i].data_ptr() != inputs[i].data_ptr():
                        static_input_surface[i].copy_(inputs[i])
                fwd_graph.replay()
                return tuple(o.detach() for o in static_outputs)

            @staticmethod
            @once_differentiable
            def backward(ctx, *grads):
                if len(grads) != len(static_grad_outputs):
                    raise AssertionError(f"len(grads)={len(grads)} != "
                                         f"len(static_grad_outputs)={len(static_grad_outputs)}")
                for g, grad in zip(static_grad_outputs, grads):
                    if g is not None and g.data_ptr() != grad.data_ptr():
                        g.copy_(grad)
                bwd_graph.replay()
                return tuple(b.detach() if b is not None else b for b in static_grad_inputs)

        def functionalized(*user_args):
            flatten_user_args = _pytree.tree_leaves(tuple(user_args))
            out = Graphed.apply(*(tuple(flatten_user_args) + module_params))
            return _pytree.tree_unflatten(list(out), output_unflatten_spec)

        return functionalized

    ret = []
    for i, func in enumerate(callables):
        graphed = make_graphed_autograd_function(
            fwd_graphs[i], bwd_graphs[i], per_callable_module_params[i],
            per_callable_len_user_args[i], per_callable_output_unflatten_spec[i],
            per_callable_static_input_surfaces[i], per_callable_static_outputs[i],
            per_callable_static_grad_outputs[i], per_callable_static_grad_inputs[i])
        if isinstance(func, Module):
            def make_graphed_forward(func, graph_training_state, graphed, orig_fwd):
                def new_fwd(*user_args, **user_kwargs):
                    # the graph holds the training-mode (or eval-mode) work it was captured in
                    if func.training == graph_training_state:
                        return graphed(*user_args, **user_kwargs)
                    return orig_fwd(*user_args, **user_kwargs)
                return new_fwd
            func.forward = make_graphed_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)

    if just_one_callable:
        return ret[0]
    return tuple(ret)
