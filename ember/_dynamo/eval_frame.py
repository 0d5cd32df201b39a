"""ember.compile: capture at the dispatcher, guard, replay.

Design (what runs, and its limits)
----------------------------------
* First call with new inputs: the function runs eagerly (so its result is eager's, bit for bit)
  under the capture recorder (ember/_dynamo/capture.py), a __torch_dispatch__ mode below Autograd
  that writes every aten op down as a node over slots. Data-dependent Python (item(), bool(),
  __index__, tolist(), ops with data-dependent output shapes) ends a segment; the observed value
  is the key of a branch. The compiled program is a tree of segments.
* Each segment is one graph: an ember.fx GraphModule handed to the backend, a callable
  `(gm, example_inputs) -> callable`. The built-in backends ("eager", and "aot_eager"/"inductor"
  for inference) run the same graph as direct Python over the dispatcher's typed front door
  (codegen.replay_source), Autograd included, so training through a compiled module records the
  autograd graph eagerly would. When an input or a parameter requires grad, "aot_eager" and
  "inductor" trace the joint forward+backward graph instead (ember/_functorch/aot_autograd.py)
  and run it as one autograd node, CompiledFunctionBackward. "inductor" compiles each graph
  (AOT's forward and backward, or the segment itself) to fused kernels (ember/_inductor).
* Later calls: the entry's generated guard function checks the inputs and the Python state the
  trace read (guards.py); on a hit the entry's generated runner (_entry_runner) replays the
  segments: segment 1, then the branch value is computed, and the child segment for it runs. A
  branch value not seen yet re-runs the whole function eagerly under capture (sound because a
  segment followed by a break must be pure: no in-place writes to state outside the call, no random
  numbers drawn - else the function runs eagerly) and grafts the new path into the tree: the other
  branch compiles once, then hits.
* Side effects (print, Python random, mutating globals / closure cells / attributes / lists the
  function can reach, ember.manual_seed) make the function run eagerly, with the reason recorded;
  fullgraph=True raises Unsupported instead. backward() inside the function is captured: the ops
  its engine runs and the .grad writes (Python steps) join the graph, and the forward nodes whose
  autograd graph it consumes are marked (capture.Recorder.note_backward) so that "inductor" can
  run them without recording it.
* Automatic dynamic shapes: when a later call differs from an entry only in one size of one
  contiguous input (both sizes >= 2; 0 and 1 stay specialized, as in torch), the new trace and the
  entry's are compared op by op: if they differ only in int arguments that are affine in that
  size (`view(B * T, C)`), those become symbolic (`s0 * 8`) and the entry is recompiled once as a
  dynamic graph. A size first seen by a dynamic entry is checked by one capturing (eager) run
  whose trace must equal the symbolic graph at that size; only then does the entry serve it, so
  size-dependent Python (`if x.shape[0] > 10`) can never be served a wrong graph: it gets its own
  entry. Batch sizes 1..64 cost 2 compiles (1 specialized, then symbolic from the third size on:
  the second size's trace is kept, not compiled, until the third shows which size varies).
  dynamic=False keeps every size static (sizes marked with mark_dynamic still become symbolic,
  as in torch). mark_dynamic(t, d) and dynamic=True ask for symbolic sizes from the first compile;
  one trace cannot show how the ops follow a size, so that first trace is kept "symbolic pending"
  (the call ran eagerly, as every capturing call does; nothing is compiled) and the next call at
  another size generalizes the two traces and compiles once: sizes 2..N cost one compile, as in
  torch. A second call at the same size compiles the static graph, and the next size recompiles
  it symbolic. Where the ops change with a marked size, torch raises ConstraintViolationError if
  the code specialized it and guards if it branched; ember cannot tell the two apart, so it
  compiles a separate entry and logs why (EMBER_LOGS=recompiles). An entry has one symbolic size:
  with dynamic=True the first one that changes; a call changing two sizes at once gets a static
  entry. With aot_eager/inductor the joint graph is traced at two sizes and generalized the same
  way (the size is an input of the forward and, where needed, of the backward). Graphs with
  breaks stay static.
* Past config.recompile_limit entries: a warning in torch's words, then eager execution.
* Limits: Python code that reads tensor memory without an op (`t._np`, numpy arrays built from
  `__array__` inside ember) is not seen; attributes of arbitrary objects read by the traced code
  are guarded only when reachable (one or two levels) from globals, closure cells, arguments or
  modules; tensor subclasses with __torch_dispatch__ and active user dispatch modes run eagerly.
"""
import builtins
import functools
import inspect
import logging
import os
import sys
import time
import types

from ember._dynamo import backends as _backends, capture as _cap, codegen as _cg, config, exc, logs
from ember._dynamo.capture import Ref
from ember._dynamo.guards import GuardBuilder
import ember.compiler as _compiler
from ember.core import tls
from ember.core.keys import DispatchKey as K
from ember.nn.modules.module import Module
from ember.tensor import Tensor

_st = tls.current
_PYTHON_BIT = 1 << K.Python
_log = logging.getLogger("ember._dynamo")
_CONTAINERS = (list, tuple, dict)
_bcompile = builtins.compile  # this module defines compile()
_EAGER = object()        # a branch child whose path runs eagerly

# > 0 while a capture runs (nested compiled functions then run their Python, inlined into it) or
# inside ember._dynamo.disable
_depth = [0]
# every compiled function, for reset()
_ALL = []
_frame_counter = [0]
# graph counts and break reasons of the current explain() run
_explain_sink = []


def _flatten(x, L):
    c = x.__class__
    if c is list or c is tuple:
        return (c, tuple(_flatten(e, L) for e in x))
    if c is dict:
        return (dict, tuple(x), tuple(_flatten(e, L) for e in x.values()))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (c, tuple(_flatten(e, L) for e in x))
    L.append(x)
    return 0


def flatten(args, kwargs):
    if not kwargs:
        for a in args:
            if a.__class__ in _CONTAINERS:
                break
        else:
            return args, len(args)
    L = []
    spec = (_flatten(args, L), tuple(kwargs), _flatten(tuple(kwargs.values()), L)) if kwargs else _flatten(args, L)
    return L, spec


def _leaf_names(fn, args, kwargs):
    """Names of the flattened leaves, as torch words them in guard failures ('x', 'xs[0]')."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []

    def walk(x, n):
        c = x.__class__
        if c in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
            for i, e in enumerate(x):
                walk(e, f"{n}[{i}]")
        elif c is dict:
            for k, e in x.items():
                walk(e, f"{n}[{k!r}]")
        else:
            names.append(n)
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
    for i, a in enumerate(args):
        walk(a, pos[i].name if i < len(pos) else f"{var}[{i - len(pos)}]")
    for k, v in kwargs.items():
        walk(v, k)
    return names


def _template(x, slot, rec):
    """The return value with tensors replaced by slots (their Ref)."""
    if isinstance(x, Tensor):
        i = slot.get(id(x))
        if i is None:
            i = rec._new(x, "const")
        return Ref(i)
    c = x.__class__
    if c is list or c is tuple:
        return c(_template(e, slot, rec) for e in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return _cg._Obj(c, tuple(_template(e, slot, rec) for e in x))
    if c is dict:
        return {k: _template(e, slot, rec) for k, e in x.items()}
    return x


def _build(t, env):
    c = t.__class__
    if c is Ref:
        return env[t.i]
    if c is tuple or c is list:
        return c(_build(e, env) for e in t)
    if c is dict:
        return {k: _build(e, env) for k, e in t.items()}
    if c is _cg._Obj:
        return t.cls(*(_build(e, env) for e in t.fields))
    return t


def _walk_sources(root, path, found, depth, seen):
    """Tensors reachable from a root object: id -> (path, getter chain)."""
    if id(root) in seen or depth < 0:
        return
    seen.add(id(root))
    import ember  # lazy: nn.Module for the walk
    if isinstance(root, Tensor):
        found.setdefault(id(root), path)
        g = root.grad
        if g is not None:
            found.setdefault(id(g), path + (("grad",),))
        return
    if isinstance(root, ember.nn.Module):
        for mn, m in root.named_modules(remove_duplicate=False):
            for k, v in m.__dict__.items():
                if isinstance(v, Tensor):   # a plain tensor attribute (not a parameter or buffer)
                    found.setdefault(id(v), path + (("attr", f"{mn}.{k}" if mn else k),))
        for n, p in root.named_parameters(remove_duplicate=False):
            found.setdefault(id(p), path + (("param", n),))
            if p.grad is not None:
                found.setdefault(id(p.grad), path + (("param", n), ("grad",)))
        for n, b in root.named_buffers(remove_duplicate=False):
            found.setdefault(id(b), path + (("buffer", n),))
        return
    if isinstance(root, (list, tuple)):
        for i, e in enumerate(root):
            _walk_sources(e, path + (("item", i),), found, depth - 1, seen)
    elif isinstance(root, dict):
        for i, (k, e) in enumerate(list(root.items())):
            # a tensor key (an optimizer's state, keyed by parameter): named by its position
            step = ("tkey", k, f"p{i}") if isinstance(k, Tensor) else ("item", k)
            _walk_sources(e, path + (step,), found, depth - 1, seen)
    else:
        d = getattr(root, "__dict__", None)
        if isinstance(d, dict) and not isinstance(root, type) and not inspect.ismodule(root) and \
                not inspect.isfunction(root):
            for k, e in list(d.items()):
                _walk_sources(e, path + (("attr", k),), found, depth - 1, seen)


def _resolve(root, path):
    x = root
    for step in path:
        k = step[0]
        if k == "grad":
            x = x.grad
        elif k == "param":
            x = x.get_parameter(step[1])
        elif k == "buffer":
            x = x.get_buffer(step[1])
        elif k == "item" or k == "tkey":
            x = x[step[1]]
        else:
            for part in step[1].split("."):
                x = getattr(x, part)
    return x


class _Entry:
    """One compiled entry: guards, the segment tree, and how to fill the environment."""

    def __init__(self, owner, index):
        self.owner = owner
        self.index = index
        self.check = self.failure = None
        self.root = None
        self.nslots = 0
        self.inmap = ()
        self.base = []
        self.eager_reason = None
        self.guard_descr = []

    rng = False   # a segment before a break draws random numbers: rewind them on a branch miss
    sizes = ()    # (slot, leaf index, dim): symbolic sizes read from the inputs
    gradins = ()  # (slot, tensor): gradients present at entry, read from tensor.grad on each call
    dyn = None    # (leaf index, dim, sizes validated, slot) once a size became symbolic

    def run(self, L, args, kwargs):
        snap = _rng_snapshot() if self.rng else None
        env = self.base[:]
        for i, s in self.inmap:
            env[s] = L[i]
        for s, i, d in self.sizes:
            env[s] = L[i]._shape[d]
        for s, t in self.gradins:
            env[s] = t.grad
        seg = self.root
        while True:
            seg.step(env)
            b = seg.brk
            if b is None:
                return seg.build(env)
            child = b.children.get(b.fast(env))
            if child is None:
                if snap is not None:
                    _rng_restore(snap)
                return self.owner._branch_miss(self, args, kwargs)
            if child is _EAGER:
                if snap is not None:
                    _rng_restore(snap)
                with _Disabled():
                    return self.owner.fn(*args, **kwargs)
            seg = child


def _entry_runner(entry):
    """entry.run as one generated function: the segment tree written out as straight-line code
    over local variables (one per slot), branches as if-chains on the break's key. It does what
    _Entry.run does without the environment list and the loop (about 1 us per call on torch's toy);
    off the known paths (an unseen key, a path that runs eagerly) it hands over to _off_path."""
    g = {"_off": _off_path, "_E": entry, "_snapshot": _rng_snapshot, "_freeze": _cap.freeze}
    base = entry.base
    ins = dict((s, f"L[{i}]") for i, s in entry.inmap)
    lines = ["def run(L, args, kwargs):"]
    if entry.rng:
        lines.append("    snap = _snapshot()")
    snap = "snap" if entry.rng else "None"
    for i, s in entry.inmap:
        lines.append(f"    v{s} = L[{i}]")
    for s, i, d in entry.sizes:
        lines.append(f"    v{s} = L[{i}]._shape[{d}]")
    for s, t in entry.gradins:
        lines.append(f"    v{s} = {_const(t, g)}.grad")
    bound = set(ins) | {s for s, _i, _d in entry.sizes} | {s for s, _t in entry.gradins}

    def slot(s, have):
        if s in have:
            return f"v{s}"
        if s < len(base) and base[s] is not None:
            return _const(base[s], g)
        return "None"

    def emit(seg, have, ind):
        pad = "    " * ind
        call = f"{_const(seg.fn, g)}({', '.join(slot(s, have) for s in seg.ins)})"
        if seg.outs:
            lines.append(f"{pad}r = {call}")
            for k, s in enumerate(seg.outs):
                lines.append(f"{pad}v{s} = r[{k}]")
        else:
            lines.append(f"{pad}{call}")
        have = have | set(seg.outs)
        b = seg.brk
        if b is None:
            lines.append(f"{pad}return {_template_expr(seg.output, g, lambda s: slot(s, have))}")
            return
        if b.kind == "value" and all(isinstance(a, Ref) or not isinstance(a, (list, tuple)) for a in b.args):
            # the key as _break_fn's fast key computes it, inline
            args = ", ".join(slot(a.i, have) if isinstance(a, Ref) else _const(a, g) for a in b.args)
            lines.append(f"{pad}v = {_const(b.op.call, g)}({args})")
            lines.append(f"{pad}k = (v.__class__, _freeze(v) if v.__class__ is list else v)")
        else:
            # the key as _break_fn's key(env) computes it, on a dict holding the slots it reads
            reads = sorted(set(_cg.template_slots(list(b.args), [])))
            env = "{" + ", ".join(f"{s}: {slot(s, have)}" for s in reads) + "}"
            lines.append(f"{pad}env = {env}")
            lines.append(f"{pad}k = {_const(b.fast, g)}(env)")
        if b.kind == "shape":
            outs = _cg._out_slots(b.out)
            for s in outs:
                lines.append(f"{pad}v{s} = env.get({s})")
            have = have | set(outs)
        kids = [(k, c) for k, c in b.children.items() if c is not _EAGER]
        index = {k: n for n, (k, _c) in enumerate(kids)}
        lines.append(f"{pad}i = {_const(index, g)}.get(k)")
        for n, (_k, c) in enumerate(kids):
            lines.append(f"{pad}{'if' if n == 0 else 'elif'} i == {n}:")
            emit(c, have, ind + 1)
        lines.append(f"{pad}return _off(_E, {_const(b.children, g)}.get(k), {snap}, args, kwargs)")
    emit(entry.root, bound, 1)
    src = "\n".join(lines) + "\n"
    exec(_bcompile(src, "<ember entry>", "exec"), g)
    run = g["run"]
    run.source = src
    return run


def _off_path(entry, child, snap, args, kwargs):
    """A branch key the generated runner does not know: capture the new path (child None) or run
    the function eagerly (a path past the recompile limit), as _Entry.run does."""
    if snap is not None:
        _rng_restore(snap)
    if child is None:
        return entry.owner._branch_miss(entry, args, kwargs)
    with _Disabled():
        return entry.owner.fn(*args, **kwargs)


def _step_fn(seg, fn):
    """env -> None: run the segment's callable on its slots and store its outputs."""
    src = (f"def step(env):\n    r = fn({', '.join(f'env[{i}]' for i in seg.ins)})\n" +
           "".join(f"    env[{s}] = r[{k}]\n" for k, s in enumerate(seg.outs)))
    g = {"fn": fn}
    exec(_bcompile(src, "<ember segment step>", "exec"), g)
    return g["step"]


def _template_expr(t, g, slot):
    """Python source rebuilding the output template t; slot(i) is the source of slot i's value."""
    def expr(x):
        c = x.__class__
        if c is Ref:
            return slot(x.i)
        if c is _cap.Sym:
            return f"({x.a} * {slot(x.slot)} + {x.b})"
        if c is tuple:
            return "(" + "".join(expr(e) + ", " for e in x) + ")"
        if c is list:
            return "[" + ", ".join(expr(e) for e in x) + "]"
        if c is dict:
            return "{" + ", ".join(f"{_const(k, g)}: {expr(e)}" for k, e in x.items()) + "}"
        if c is _cg._Obj:
            return f"{_const(x.cls, g)}(" + ", ".join(expr(e) for e in x.fields) + ")"
        return _const(x, g)
    return expr(t)


def _build_fn(t):
    """env -> the function's return value, rebuilt from the output template."""
    g = {}
    src = f"def build(env):\n    return {_template_expr(t, g, lambda i: f'env[{i}]')}\n"
    exec(_bcompile(src, "<ember output>", "exec"), g)
    return g["build"]


def _const(v, g):
    if v is None or v.__class__ in (bool, int, str):
        return repr(v)
    name = f"k{len(g)}"
    g[name] = v
    return name


def _break_fn(b):
    """env -> the branch key: the break's op run eagerly on its slots."""
    kind = b.kind
    if kind == "value" and all(isinstance(a, Ref) or not isinstance(a, (list, tuple)) for a in b.args):
        g = {"op": b.op.call, "freeze": _cap.freeze}
        args = ", ".join(f"env[{a.i}]" if isinstance(a, Ref) else _const(a, g) for a in b.args)
        src = (f"def key(env):\n    v = op({args})\n"
               f"    return (v.__class__, freeze(v) if v.__class__ is list else v)\n")
        exec(_bcompile(src, "<ember break>", "exec"), g)
        return g["key"]

    def key(env):
        return _cap.branch_key(kind, _break_value(b, env))
    return key


def _rng_snapshot():
    from ember.core import generator as _gen  # lazy: only entries that draw random numbers
    eng = _gen.default_generator._rng
    eng.mt_state()
    return (eng, eng._mtv[1].copy(), eng.fresh, eng.next_float, eng.next_double, eng.seed)


def _rng_restore(snap):
    eng, key, fresh, nf, nd, seed = snap
    eng.mt_state()
    eng._mtv[1][:] = key
    eng.fresh, eng.next_float, eng.next_double, eng.seed = fresh, nf, nd, seed


def _break_value(b, env):
    args = [_cg_arg(a, env) for a in b.args]
    if b.kind == "tolist":
        return args[0].tolist()
    r = b.op.call(*args)
    if b.kind == "shape":
        if isinstance(b.out, Ref):
            env[b.out.i] = r
        elif isinstance(b.out, tuple):
            for o, v in zip(b.out, r):
                if isinstance(o, Ref):
                    env[o.i] = v
    return r


def _cg_arg(a, env):
    if isinstance(a, Ref):
        return env[a.i]
    if isinstance(a, (list, tuple)) and a and any(isinstance(e, Ref) for e in a):
        return type(a)(_cg_arg(e, env) for e in a)
    return a


class _Disabled:
    def __enter__(self):
        _depth[0] += 1

    def __exit__(self, *e):
        _depth[0] -= 1


class CompiledFunction:
    """What ember.compile returns for a function: call it like the function."""

    def __init__(self, fn, backend, fullgraph=False, dynamic=None, mode=None, options=None, module=None):
        self.fn = fn
        self.backend_arg = backend
        self.backend = _backends.lookup_backend(backend)
        self.builtin = self.backend in (_backends.eager, _backends.aot_eager) or \
            getattr(self.backend, "_ember_builtin", False)
        self.aot = self.backend is _backends.aot_eager or getattr(self.backend, "_ember_aot", False)
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.mode = mode
        self.options = dict(options or {})
        self.module = module if module is not None else getattr(fn, "__self__", None)
        self.entries = []
        self.eager_reason = None
        self.limit_hit = False
        self.frame_id = _frame_counter[0]
        _frame_counter[0] += 1
        self.compile_times = []
        self.graph_count = 0
        self.break_reasons = []
        self.graphs = []
        self.n_compiles = 0
        self.debug_dir = None
        self.deferred = None      # a trace whose size may become symbolic at the next size (not compiled)
        self._told = set()        # (entry, size) pairs whose failed generalization was logged
        functools.update_wrapper(self, fn, updated=())
        _ALL.append(self)

    def __get__(self, obj, objtype=None):
        # @ember.compile on a method: bind the instance as the first argument
        if obj is None:
            return self
        return functools.partial(self, obj)

    # the hot path ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _depth[0] or self.eager_reason is not None:
            return self.fn(*args, **kwargs)
        L, spec = flatten(args, kwargs)
        entries = self.entries
        for e in entries:
            if e.spec == spec and e.check(L):
                if e is not entries[0]:
                    # the entry that hit is tried first next time (torch's cache moves it to the
                    # front too): a training step's first entry (no .grad yet) fails its whole
                    # guard before the steady-state one is tried
                    entries.remove(e)
                    entries.insert(0, e)
                return e.run(L, args, kwargs)
        return self._miss(args, kwargs, L, spec)

    # misses ---------------------------------------------------------------------------------------
    def _reasons(self, L, spec):
        out = []
        for e in reversed(self.entries):
            why = "argument structure changed" if e.spec != spec else e.failure(L)
            out.append(f"{self.frame_id}/{e.index}: {why}")
        return out

    def _where(self):
        code = getattr(self.fn, "__code__", None) or getattr(getattr(self.fn, "__func__", None), "__code__", None)
        if code is None:
            return getattr(self.fn, "__name__", "fn"), "?", 0
        return code.co_name, code.co_filename, code.co_firstlineno

    def _miss(self, args, kwargs, L, spec):
        if self.entries:
            reasons = self._reasons(L, spec)
            name, fn, line = self._where()
            if len(self.entries) >= config.recompile_limit:
                if not self.limit_hit:
                    self.limit_hit = True
                    _log.warning(
                        "ember._dynamo hit config.recompile_limit (%s)\n   function: '%s' (%s:%s)\n   last reason: %s\n"
                        'To log all recompilation reasons, use EMBER_LOGS="recompiles".\n'
                        "To diagnose recompilation issues, see https://docs.pytorch.org/docs/main/user_guide/"
                        "torch_compiler/compile/programming_model.recompilation.html",
                        config.recompile_limit, name, fn, line, reasons[0])
                with _Disabled():
                    return self.fn(*args, **kwargs)
            if logs.recompiles:
                logs.emit("recompiles", f"Recompiling function {name} in {fn}:{line}\n"
                          "    triggered by the following guard failure(s):\n" +
                          "\n".join(f"    - {r}" for r in reasons))
            self.last_recompile_reasons = reasons
        return self._capture(args, kwargs, L, spec, None)

    def _branch_miss(self, entry, args, kwargs):
        return self._capture(args, kwargs, None, None, entry)

    # capture ---------------------------------------------------------------------------------------
    def _capture(self, args, kwargs, L, spec, graft_into):
        if L is None:
            L, spec = flatten(args, kwargs)
        if sys.gettrace() is not None:
            return self._go_eager("a trace function is active (sys.settrace: a debugger or coverage): capture "
                                  "needs the trace hook to find side effects", args, kwargs)
        if any(isinstance(t, Tensor) and (t._keys & _PYTHON_BIT) for t in L) or _st().dispatch_modes:
            return self._go_eager("tensor subclass with __torch_dispatch__ or an active dispatch mode", args, kwargs)
        t0 = time.perf_counter()
        tensors = [x for x in L if isinstance(x, Tensor)]
        rec = _cap.Recorder(tensors, _st()._grad, fullgraph=self.fullgraph)
        w = _cap.Watcher(rec)
        roots = self._roots(args, kwargs, L)
        before = [(d, r, _cap.snapshot(r)) for d, r in roots]
        closure = self._closure_cells()
        # gradients present at entry on tensors the function can reach: inputs of the graph, read
        # from `t.grad` on every call (whether each is present is guarded)
        owners = []
        seen_t = set()
        for x in list(L) + _reachable_tensors(roots, closure):
            if isinstance(x, Tensor) and id(x) not in seen_t:
                seen_t.add(id(x))
                owners.append(x)
        gradins = []
        for t in owners:
            g = t.grad
            if g is not None and id(g) not in rec.slot:
                gradins.append((rec._new(g, "gradin"), t))
        grad_state = [(t, t.grad is None) for t in owners]
        for _d, r in roots:
            rec.note_reachable(r)
        for _n, c in closure:
            try:
                rec.note_reachable(c.cell_contents)
            except ValueError:
                pass
        cells_before = {}
        for n, c in closure:
            try:
                cells_before[n] = v = c.cell_contents
            except ValueError:
                continue
            if not callable(v) or hasattr(v, "named_modules"):
                before.append((f"closure variable '{n}'", v, _cap.snapshot(v)))
        grad_before = _st()._grad
        dk_before = _st().dk
        _depth[0] += 1
        try:
            with _cap.capturing(rec, w):
                result = self.fn(*args, **kwargs)
        finally:
            _depth[0] -= 1
        reason = w.effect
        if reason is None:
            for d, g, n, v in w.rebind:
                if g.get(n, _EAGER) is not v:
                    reason = f"assignment to {d} (a side effect)"
                    break
            for n, c in closure:
                try:
                    if c.cell_contents is not cells_before.get(n, _EAGER):
                        reason = f"assignment to closure variable '{n}' (a side effect)"
                except ValueError:
                    pass
        if reason is None:
            for d, r, s in before + [(d, r, s) for d, r, s in w.snaps]:
                if not _cap.same_snapshot(s, _cap.snapshot(r)):
                    reason = f"mutation of {d} (a side effect)"
                    break
        if reason is None:
            reason = _grad_writes_unrecorded(rec)
        if reason is None and rec.unrecorded_write():
            reason = "a tensor was written without an ember op (a NumPy fast path), which replay would skip"
        if reason is None and (_st()._grad is not grad_before or _st().dk != dk_before):
            reason = "the function changed grad mode or dispatch state for its caller"
        if reason is None and rec.segments[-1].brk is not None:
            reason = "a break after the last op"
        if _compiler._lazy_state_init:
            # an optimizer created its state (ember.compiler.note_lazy_state_init): this run was
            # eager's, its trace is not kept; the next call captures again with the state in place
            if logs.graph_breaks:
                logs.emit("graph_breaks", f"{self._where()[0]}: state created lazily while capturing "
                          f"({reason or 'new tensors kept outside the call'}); capturing again on the next call")
            return result
        if reason is not None:
            if self.fullgraph:
                raise exc.Unsupported(_side_effect_message(reason, self, w.where))
            self._record_break(reason, w.where)
            if graft_into is not None:
                graft_into.owner_eager = reason
            self.eager_reason = reason
            if logs.graph_breaks:
                logs.emit("graph_breaks", f"Graph break: running {self._where()[0]} eagerly: {reason}")
            return result
        # impure segment followed by a break -> the tree cannot re-run a prefix: eager
        for s in rec.segments[:-1]:
            if s.impure:
                self.eager_reason = ("in-place write to outside state or random numbers before a graph break: "
                                     "replaying the prefix to reach another branch would repeat it")
                self._record_break(self.eager_reason, None)
                return result
        rec.active = False
        _cap.settle_consumed(rec)
        names = _leaf_names(self.fn, args, kwargs)
        out_t = _template(result, rec.slot, rec)
        rec.segments[-1].output = out_t
        # tensors captured by reference: where they come from
        found = {}
        seen = set()
        for desc, r in roots:
            _walk_sources(r, (desc,), found, 3, seen)
        for (_g, n, v) in w.globals_read.values():
            _walk_sources(v, (("global", n),), found, 3, seen)
        for n, c in closure:
            try:
                _walk_sources(c.cell_contents, (("closure", n),), found, 3, seen)
            except ValueError:
                pass
        for i, x in enumerate(L):
            if isinstance(x, Tensor) and x.grad is not None:
                found.setdefault(id(x.grad), (("input", i), ("grad",)))
        out_slots = set(_cg.template_slots(out_t, []))
        for s, t in rec.consts.items():
            if id(t) not in found and (s in rec.mutated or s in out_slots):
                self.eager_reason = ("a tensor not produced by an ember op (e.g. ember.tensor(data)) is "
                                     "returned or written in place")
                self._record_break(self.eager_reason, None)
                return result
        if graft_into is not None:
            ok = self._graft(graft_into, rec)
            if not ok:
                self.eager_reason = "the traced ops changed between two runs with equal guards"
            self.compile_times.append(time.perf_counter() - t0)
            return result
        if self._automatic_dynamic(rec, L, spec):
            self.compile_times.append(time.perf_counter() - t0)
            return result

        def make_entry(finalize=True):
            entry = _Entry(self, len(self.entries))
            entry.spec = spec
            entry.example = list(L)
            slot_of_leaf = []
            tensor_idx = []
            first = {}
            for i, x in enumerate(L):
                if isinstance(x, Tensor) and id(x) not in first:
                    first[id(x)] = i
                    tensor_idx.append(i)
                    slot_of_leaf.append((i, rec.slot[id(x)]))
            root_objs = dict(roots)
            example = list(L)

            states = {}
            for _d, r, snap in before + [(d, r, snp) for d, r, snp in w.snaps]:
                if not hasattr(r, "named_modules") and not isinstance(r, (type, types.ModuleType)):
                    states.setdefault(id(r), snap)

            # what the guards need, without the recorder (which holds every tensor of the capture)
            globals_read = list(w.globals_read.values())
            const_tensors = list(rec.consts.values())
            grad_seen = set(rec.grad_read) | set(rec.grad_after)
            path_guard = self._path_guard
            w_globals = w.globals_read

            def build_guards(dyn=None, relaxed=False):
                """The entry's check: dyn = (leaf index, dim, valid sizes) makes one size symbolic."""
                gb = GuardBuilder()
                firsts = {}
                for i, x in enumerate(example):
                    nm = names[i] if i < len(names) else f"arg{i}"
                    if isinstance(x, Tensor):
                        if id(x) in firsts:
                            j = firsts[id(x)]
                            gb.same(i, j, nm, names[j] if j < len(names) else "?")
                        else:
                            firsts[id(x)] = i
                            dd = None
                            if dyn is not None and dyn[0] == i:
                                dd = (dyn[1], None if relaxed else dyn[2])
                            gb.tensor(i, nm, x, dd)
                    else:
                        gb.value(f"L[{i}]", nm, x, None, states.get(id(x)))
                gb.distinct(tensor_idx, [names[i] if i < len(names) else f"arg{i}" for i in tensor_idx])
                gb.global_state()
                for desc, r in roots:
                    if hasattr(r, "named_modules"):
                        gb.module(r, desc)
                for (g, n, v) in globals_read:
                    gc = gb.const(g)
                    gb.value(f"{gc}.get({n!r})", f"G['{n}']", v, None, states.get(id(v)))
                    if hasattr(v, "named_modules"):
                        gb.module(v, f"G['{n}']")
                for n, c in closure:
                    try:
                        v = c.cell_contents
                    except ValueError:
                        continue
                    cc = gb.const(c)
                    gb.value(f"{cc}.cell_contents", f"L['{n}'] (closure)", v, None, states.get(id(v)))
                    if hasattr(v, "named_modules"):
                        gb.module(v, f"L['{n}']")
                # tensors reached through attributes and containers: identity through their path
                for t in const_tensors:
                    p = found.get(id(t))
                    if p is None or len(p) == 1 or len(p) == 2 and p[1][0] in ("param", "buffer"):
                        continue  # the root itself, or a module's own parameter: guarded above
                    path_guard(gb, p, t, root_objs, w_globals, closure)
                for t, none in grad_state:
                    if id(t) not in grad_seen:
                        continue   # the function never looked at this .grad
                    tc = gb.const(t)
                    gb.add(f"({tc}.grad is None) is {none}",
                           lambda L, none=none: f"a .grad became {'set' if none else 'None'}",
                           f"GRAD_PRESENCE: grad is None == {none}")
                check, failure = gb.build()
                return check, failure, gb.descr
            entry.build_guards = build_guards
            entry.check, entry.failure, entry.guard_descr = build_guards()
            if logs.guards:
                logs.emit("guards", "GUARDS:\n" + "\n".join(f"  {d}" for d in entry.guard_descr))
            entry.inmap = tuple(slot_of_leaf)
            entry.gradins = tuple(gradins)
            entry.nslots = len(rec.values)
            entry.base = [None] * entry.nslots
            for s, t in rec.consts.items():
                entry.base[s] = t
            entry.root = rec.segments[0]
            entry.rng = any(sg.random for sg in rec.segments[:-1])
            entry.rec_kind = rec.kind
            entry.names = self._slot_names(rec, names, L, found)
            entry.values = rec.values if not finalize else None
            if finalize:
                self._finalize(entry, rec.values)
                self.n_compiles += 1
            return entry

        d, self.deferred = self.deferred, None
        if d is not None:
            dmake, dL, dspec = d
            if dspec == spec and _one_size_change(dL, L) is not None:
                e = dmake(finalize=False)   # the deferred trace and this one: make the size symbolic
                self.entries.append(e)
                if self._automatic_dynamic(rec, L, spec):
                    self.compile_times.append(time.perf_counter() - t0)
                    return result
                self._finalize(e, e.values)
                self.n_compiles += 1
        if (d is None and len(rec.segments) == 1 and not _explain_sink and
                not any(e.spec == spec for e in self.entries)):
            why = self._dynamic_request(L)
            if why is not None:
                # symbolic pending: the first trace with a size marked dynamic is kept, not compiled;
                # the next call at another size makes that size symbolic and compiles once (torch
                # compiles symbolic at once; one trace cannot show how the ops follow a size)
                self.deferred = (make_entry, list(L), spec)
                if logs.recompiles:
                    name, fn, line = self._where()
                    logs.emit("recompiles", f"Compile of {name} ({fn}:{line}) deferred: {why}; the next call "
                              "at another size compiles a symbolic graph (this call ran eagerly)")
                self.compile_times.append(time.perf_counter() - t0)
                return result
        if (self.dynamic is not False and config.automatic_dynamic_shapes and len(rec.segments) == 1 and
                any(e.spec == spec and e.dyn is None and _one_size_change(e.example, L, 1) is not None
                    for e in self.entries)):
            # a size changed from a specialized 1: wait for a third size to make it symbolic (torch
            # compiles the second size dynamic at once); the next call sees whether it stays
            self.deferred = (make_entry, list(L), spec)
            self.compile_times.append(time.perf_counter() - t0)
            return result
        self.entries.append(make_entry())
        self.compile_times.append(time.perf_counter() - t0)
        return result

    # automatic dynamic shapes --------------------------------------------------------------------
    def _automatic_dynamic(self, rec, L, spec):
        """A size changed: make it symbolic in an existing entry (generalize the two traces), or
        check a new size against an entry's symbolic graph. True when the entry now serves L."""
        if len(rec.segments) != 1:
            return False
        auto = self.dynamic is not False and config.automatic_dynamic_shapes
        new = rec.segments[0]
        for e in self.entries:
            if e.spec != spec or e.root.brk is not None or len(rec.values) != e.nslots - (e.dyn is not None):
                continue
            if any(e.base[sl] is not t for sl, t in rec.consts.items()):
                continue
            if e.dyn is not None:
                i, d, valid, S = e.dyn
                if not e.check_relaxed(L):
                    continue
                sz = L[i]._shape[d]
                if _cap.matches(e.root.nodes, new.nodes, sz) and _cap.matches_value(e.root.output, new.output, sz):
                    check_joint = getattr(e.root.fn, "validate", None)
                    if check_joint is not None and not check_joint(
                            [rec.values[k] if k < len(rec.values) else sz for k in e.root.ins]):
                        continue
                    valid.add(sz)
                    self._specialize(e, new, rec.values, sz)
                    return True
                continue
            cand = _one_size_change(e.example, L)
            if cand is None:
                continue
            i, d, s0, s1 = cand
            asked = self._dynamic_why(L, i, d) or self._dynamic_why(e.example, i, d)
            if not (auto or asked):
                continue
            S = e.nslots
            nodes = _cap.generalize(e.root.nodes, new.nodes, s0, s1, S)
            out = _cap.generalize_value(e.root.output, new.output, s0, s1, S)
            if nodes is None or out is None:
                if asked and logs.recompiles and (e.index, s1) not in self._told:
                    self._told.add((e.index, s1))
                    logs.emit("recompiles", f"{self.frame_id}/{e.index}: {asked}, but the captured ops change with "
                              f"it ({s0} -> {s1}: the code specializes or branches on it); compiling a separate "
                              "static entry (torch raises ConstraintViolationError where the code specializes a "
                              "marked size; ember cannot tell a specialization from a branch)")
                continue
            valid = {s0, s1}
            relaxed = e.build_guards((i, d, valid), relaxed=True)[0]
            if not relaxed(L):
                continue
            e.check_relaxed = relaxed
            e.check, e.failure, e.guard_descr = e.build_guards((i, d, valid))
            e.dyn = (i, d, valid, S)
            e.sizes = ((S, i, d),)
            e.nslots += 1
            e.base.append(None)
            e.names[S] = "s0"
            old_fn, old_ins, old_outs = e.root.fn, list(e.root.ins), list(e.root.outs)
            e.root.nodes = nodes
            e.root.output = out[0]
            e.root.fn = None
            e.root.dynamic = True
            self._finalize(e, rec.values)
            by_size = e.root.fn
            if getattr(by_size, "fns", None) is not None:
                # the static graph compiled at s0 serves s0 still; s1 gets its own from this trace
                if old_ins == [k for k in e.root.ins if k != S] and old_outs == e.root.outs and old_fn is not None:
                    by_size.add(s0, old_fn)
                self._specialize(e, new, rec.values, s1)
            self.n_compiles += 1
            if logs.recompiles:
                logs.emit("recompiles", f"{asked or 'automatic dynamic shapes'}: {self.frame_id}/{e.index} made size "
                          f"{d} of input {i} symbolic ({s0} -> {s1})")
            return True
        return False

    def _specialize(self, e, seg, values, size):
        """A dynamic entry's inductor graph at one size the capturing run just checked: compiled for
        that size from its trace (seg, values), so later calls at it run fused kernels (already in
        the kernel cache) instead of the symbolic replay through the dispatcher."""
        by_size = e.root.fn
        if getattr(by_size, "fns", None) is None or size in by_size.fns or len(by_size.fns) >= by_size.limit:
            return
        from ember._inductor import compile_fx  # lazy: the code generator sits beside us
        S = e.dyn[3]
        name = f"{self._where()[0]}_{self.frame_id}_{e.index}_{e.root.index}_s{size}"
        fn = compile_fx.compile_nodes(seg.nodes, [k for k in e.root.ins if k != S], e.root.outs, values, name,
                                      self.mode, self.options, seg.grad0, seg.consumed, seg.release)
        if logs.output_code:
            logs.emit("output_code", f"Output code ({name}):\n{fn.source}")
        by_size.add(size, fn)

    def _dynamic_why(self, L, i, d):
        """Why size d of leaf i is dynamic by request (mark_dynamic or dynamic=True), or None."""
        x = L[i] if i < len(L) else None
        if not isinstance(x, Tensor) or d >= len(x._shape):
            return None
        if _marked(x, d):
            return f"size {d} of input {i} is marked dynamic (mark_dynamic)"
        if self.dynamic is True and d not in getattr(x, "_dynamo_static_indices", ()):
            return f"size {d} of input {i} is dynamic (dynamic=True)"
        return None

    def _dynamic_request(self, L):
        """For a first compile: why a size of the inputs is dynamic from the start, or None. Sizes
        0 and 1 stay specialized (torch's specialize_zero_one); non-contiguous inputs stay static."""
        for i, x in enumerate(L):
            if isinstance(x, Tensor) and x.is_contiguous():
                for d, n in enumerate(x._shape):
                    if n >= 2:
                        why = self._dynamic_why(L, i, d)
                        if why is not None:
                            return why
        return None

    def _path_guard(self, gb, p, t, root_objs, globals_read, closure):
        head = p[0]
        if isinstance(head, tuple) and head[0] == "global":
            g = next((g for (g, n, v) in globals_read.values() if n == head[1]), None)
            if g is None:
                return
            root = g.get(head[1])
        elif isinstance(head, tuple) and head[0] == "closure":
            root = next((c.cell_contents for n, c in closure if n == head[1]), None)
        elif isinstance(head, tuple) and head[0] == "input":
            pc = gb.const(p[1:])
            gb.add(f"_resolve(L[{head[1]}], {pc}) is {gb.const(t)}",
                   lambda L, p=p: f"___check_obj_id({_path_str(p)}, ...)", f"ID_MATCH: {_path_str(p)}")
            gb.g["_resolve"] = _safe_resolve
            return
        else:
            root = root_objs.get(head)
        rest = p[1:]
        if root is None or not rest:
            return
        rc, pc = gb.const(root), gb.const(rest)
        gb.add(f"_resolve({rc}, {pc}) is {gb.const(t)}", lambda L, p=p: f"___check_obj_id({_path_str(p)}, ...)",
               f"ID_MATCH: {_path_str(p)}")
        gb.g["_resolve"] = _safe_resolve

    def _slot_names(self, rec, names, L, found):
        out = {}
        tensors = [(i, x) for i, x in enumerate(L) if isinstance(x, Tensor)]
        for i, x in tensors:
            s = rec.slot.get(id(x))
            if s is not None and s not in out:
                nm = names[i] if i < len(names) else f"arg{i}"
                out[s] = "L_" + "".join(ch if ch.isalnum() else "_" for ch in nm) + "_"
        for s, t in rec.consts.items():
            p = found.get(id(t))
            if p is not None:
                out[s] = "L_" + "_".join(str(step[-1]) if isinstance(step, tuple) else str(step) for step in p
                                          ).replace(".", "_").replace("'", "").replace("[", "_").replace("]", "")
                out[s] = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in out[s]) + "_"
            else:
                out[s] = f"c{s}"
        return out

    def _roots(self, args, kwargs, L):
        roots = []
        if self.module is not None:
            roots.append(("L['self']", self.module))
        for i, x in enumerate(L):
            if not isinstance(x, Tensor) and not isinstance(x, _cap._SCALARS) and not callable(x) or \
                    hasattr(x, "named_modules"):
                roots.append((f"L[{i}]", x))
        return roots

    def _closure_cells(self):
        f = getattr(self.fn, "__func__", self.fn)
        cl = getattr(f, "__closure__", None)
        code = getattr(f, "__code__", None)
        if not cl or code is None:
            return []
        return list(zip(code.co_freevars, cl))

    def _go_eager(self, reason, args, kwargs):
        self._record_break(reason, None)
        with _Disabled():
            return self.fn(*args, **kwargs)

    def _record_break(self, reason, where):
        self.break_reasons.append((reason, where))

    # compile the tree ------------------------------------------------------------------------------
    def _segments(self, seg, acc):
        acc.append(seg)
        if seg.brk is not None:
            for c in seg.brk.children.values():
                if c is not _EAGER:
                    self._segments(c, acc)
        return acc

    def _finalize(self, entry, values):
        """Give every segment its inputs and outputs (what later segments on any known path read)
        and compile the ones whose signature changed."""
        def need_after(seg):
            acc = set()
            b = seg.brk
            if b is None:
                acc.update(_cg.template_slots(seg.output, []))
                return acc
            for a in b.args:
                _cg.template_slots(a, list_acc := [])
                acc.update(list_acc)
            for c in b.children.values():
                if c is _EAGER:
                    continue
                ins, _ = _cg.reads(c)
                acc.update(ins)
                acc.update(need_after(c))
            return acc
        for seg in self._segments(entry.root, []):
            ins, produced = _cg.reads(seg)
            if seg.dynamic and entry.dyn is not None and entry.dyn[3] not in ins:
                ins.append(entry.dyn[3])   # the size: AOT's backward may need it though the forward does not
            outs = sorted(s for s in need_after(seg) if s in produced)
            if seg.fn is not None and seg.ins == ins and seg.outs == outs:
                continue
            seg.ins, seg.outs = ins, outs
            self._compile_segment(entry, seg, values)
        entry.run = _entry_runner(entry)

    def _fix_children(self, seg):
        b = seg.brk
        if b is None:
            return
        b.children = {k: v for k, v in b.children.items() if v is not None}
        for c in b.children.values():
            if c is not _EAGER:
                self._fix_children(c)

    def _compile_segment(self, entry, seg, values):
        seg.index = self.graph_count
        self.graph_count += 1
        name = f"{self._where()[0]}_{self.frame_id}_{entry.index}_{seg.index}"
        need_gm = not self.builtin or logs.graph_code or logs.output_code or self._debug() or _explain_sink
        example = [values[i] if i < len(values) else None for i in seg.ins]  # a size slot: None
        gm = None
        if need_gm:
            gm = _cg.build_graph_module(seg, seg.ins, seg.outs, entry.names, values)
            seg.gm = gm
            if logs.graph_code:
                logs.emit("graph_code", f"TRACED GRAPH\n ===== __compiled_fn_{seg.index} =====\n" +
                          gm.print_readable(print_output=False))
            self.graphs.append(gm)
        replay = _cg.compile_replay(seg, seg.ins, seg.outs, name)
        seg.codegen = replay.source
        if self.builtin:
            fn = replay
            if self.aot and _needs_grad(seg, values) and not any(isinstance(n.op, _cap.PyOp) for n in seg.nodes):
                from ember._functorch import aot_autograd  # lazy: the AOT layer sits beside us
                dyn = None
                if seg.dynamic:
                    dyn = _size_examples(entry, seg, example, values)
                if seg.dynamic and dyn is None:
                    fn = replay
                else:
                    fn = aot_autograd.compile_segment(seg, example, replay, self, entry.names, values, dyn)
            if fn is replay and getattr(self.backend, "_ember_inductor", False) and not seg.dynamic:
                # no AOT graph: fused kernels, with what autograd must see run through the dispatcher
                from ember._inductor import compile_fx  # lazy: the code generator sits beside us
                fn = compile_fx.compile_nodes(seg.nodes, seg.ins, seg.outs, values, name, self.mode, self.options,
                                              seg.grad0, seg.consumed, seg.release)
            elif fn is replay and getattr(self.backend, "_ember_inductor", False) and entry.dyn is not None \
                    and entry.dyn[3] in seg.ins:
                # symbolic sizes: replayed, except at the sizes a capturing run checked (_specialize)
                from ember._inductor import compile_fx  # lazy: the code generator sits beside us
                fn = compile_fx.BySize(replay, seg.ins.index(entry.dyn[3]))
        else:
            try:
                compiled = self.backend(gm, example)
            except Exception as e:
                raise exc.BackendCompilerFailed(self.backend, e) from e
            fn = _tuple_result(compiled, any(n.grad is not seg.grad0 for n in seg.nodes))
        out_src = getattr(fn, "source", None) or replay.source
        if logs.output_code:
            logs.emit("output_code", f"Output code ({name}):\n{out_src}")
        if self._debug():
            self._write_debug(name, gm, out_src)
        seg.fn = fn
        seg.step = _step_fn(seg, fn)
        seg.build = _build_fn(seg.output) if seg.brk is None else None
        if seg.brk is not None:
            seg.brk.fast = _break_fn(seg.brk)

    def _debug(self):
        return os.environ.get("EMBER_COMPILE_DEBUG", "") not in ("", "0") or self.options.get("trace.enabled")

    def _write_debug(self, name, gm, src):
        d = self.debug_dir
        if d is None:
            root = config.debug_dir_root or os.path.join(os.getcwd(), "ember_compile_debug")
            d = self.debug_dir = os.path.join(root, f"run_{time.strftime('%Y_%m_%d_%H_%M_%S')}_pid_{os.getpid()}",
                                              "ember_dynamo", name.rsplit("_", 3)[0])
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{name}_fx_graph_readable.py"), "w") as f:
            f.write(gm.print_readable(print_output=False) if gm is not None else src)
        with open(os.path.join(d, f"{name}_output_code.py"), "w") as f:
            f.write(src)

    def _graft(self, entry, rec):
        """Attach the new path's unseen branch to the entry's tree."""
        cur = entry.root
        for j, s in enumerate(rec.segments):
            if len(s.nodes) != len(cur.nodes) or any(a.op is not b.op for a, b in zip(s.nodes, cur.nodes)):
                return False
            if s.brk is None or cur.brk is None:
                return s.brk is None and cur.brk is None
            if s.brk.kind != cur.brk.kind:
                return False
            child = cur.brk.children.get(s.brk.key)
            if child is None:
                if len(cur.brk.children) >= config.recompile_limit:
                    cur.brk.children[s.brk.key] = _EAGER
                    return True
                nxt = rec.segments[j + 1]
                rec.segments[-1].output = rec.segments[-1].output
                cur.brk.children[s.brk.key] = nxt
                if len(rec.values) > entry.nslots:
                    entry.base.extend([None] * (len(rec.values) - entry.nslots))
                    entry.nslots = len(rec.values)
                for sl, t in rec.consts.items():
                    if entry.base[sl] is None:
                        entry.base[sl] = t
                    elif entry.base[sl] is not t:
                        return False
                for sl in range(len(rec.values)):
                    if sl not in entry.names:
                        entry.names[sl] = f"v{sl}"
                entry.rng = entry.rng or any(sg.random for sg in rec.segments[:-1])
                self._finalize(entry, rec.values)
                self.n_compiles += 1
                return True
            if child is _EAGER:
                return True
            cur = child
        return False


def _reachable_tensors(roots, closure):
    out = []
    objs = [r for _d, r in roots]
    for _n, c in closure:
        try:
            objs.append(c.cell_contents)
        except ValueError:
            pass
    for r in objs:
        if isinstance(r, Module):
            out.extend(r.parameters())
            out.extend(r.buffers())
        elif isinstance(r, Tensor):
            out.append(r)
        elif isinstance(r, (list, tuple)):
            out.extend(x for x in r if isinstance(x, Tensor))
    return out


def _grad_writes_unrecorded(rec):
    """A .grad that changed other than through a recorded step (retain_grad, a direct write)."""
    for t in rec.keep:
        if not isinstance(t, Tensor):
            continue
        i = id(t)
        g = t.grad
        if i in rec.grad_after:
            if g is not rec.grad_after[i]:
                return "a tensor's .grad was written outside the steps ember records"
        elif i in rec.grad_before:
            if g is not rec.grad_before[i]:
                return "a tensor's .grad was written outside the steps ember records"
        elif g is not None:
            return "a tensor made inside the function got a .grad (retain_grad) that replay would not set"
    return None


def _marked(x, d):
    """ember._dynamo.mark_dynamic(x, d) was called."""
    return d in getattr(x, "_dynamo_dynamic_indices", ())


def _one_size_change(example, L, min_size=2):
    """(leaf, dim, old size, new size) when L differs from example in exactly one size of one
    contiguous tensor, everything else about the tensors equal; both sizes at least min_size
    (sizes 0 and 1 stay specialized, as in torch)."""
    if len(example) != len(L):
        return None
    found = None
    for i, (a, b) in enumerate(zip(example, L)):
        ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
        if ta != tb:
            return None
        if not ta:
            continue
        if (type(a) is not type(b) or a._dtype is not b._dtype or a._device != b._device or a._keys != b._keys
                or len(a._shape) != len(b._shape)):
            return None
        for d, (p, q) in enumerate(zip(a._shape, b._shape)):
            if p != q:
                if found is not None or not a.is_contiguous() or not b.is_contiguous() or \
                        min(p, q) < min_size or max(p, q) < 2:
                    return None
                found = (i, d, p, q)
    return found


def _safe_resolve(root, path):
    try:
        return _resolve(root, path)
    except Exception:
        return None


def _path_str(p):
    out = (f"L[{p[0][1]}]" if p[0][0] == "input" else str(p[0][1])) if isinstance(p[0], tuple) else str(p[0])
    for step in p[1:]:
        out += f".{step[1]}" if step[0] in ("attr", "param", "buffer") else (
            ".grad" if step[0] == "grad" else f"[{step[2]}]" if step[0] == "tkey" else f"[{step[1]!r}]")
    return out


def _needs_grad(seg, values):
    if not _st()._grad:
        return False
    for n in seg.nodes:
        if n.grad:
            break
    else:
        return False
    return any(i < len(values) and isinstance(values[i], Tensor) and values[i].requires_grad for i in seg.ins)


def _size_examples(entry, seg, example, values):
    """For a dynamic segment: (position of the size in its inputs, the inputs at another size),
    with the current size filled into `example`."""
    if entry.dyn is None:
        return None
    i, d, valid, S = entry.dyn
    slot = dict(entry.inmap).get(i)
    if slot is None or S not in seg.ins or slot not in seg.ins:
        return None
    x = values[slot]
    s1 = x._shape[d]
    others = sorted(v for v in valid if v != s1)
    if not others:
        return None
    s0 = others[0]
    k, kx = seg.ins.index(S), seg.ins.index(slot)
    example[k] = s1
    ex0 = list(example)
    shape = list(x._shape)
    shape[d] = s0
    import ember  # lazy: a stand-in input at the other size
    x0 = ember.zeros(shape, dtype=x.dtype, device=x.device)
    if x.requires_grad:
        x0.requires_grad_(True)
    ex0[kx] = x0
    ex0[k] = s0
    return k, ex0


def _tuple_result(compiled, toggles_grad=False):
    if toggles_grad:
        def run(*a):
            prev = _st()._grad
            try:
                r = compiled(*a)
            finally:
                _st().grad_enabled = prev   # however the backend's code ends
            return tuple(r) if isinstance(r, (list, tuple)) else (r,)
    else:
        def run(*a):
            r = compiled(*a)
            return tuple(r) if isinstance(r, (list, tuple)) else (r,)
    run.inner = compiled
    return run


def _side_effect_message(reason, cf, where=None):
    if where is None:
        name, fn, line = cf._where()
        where = (fn, line, name)
    return exc.format_break("Graph break: side effect", f"{reason}. Dynamo cannot keep this side effect "
                            "inside a graph.", ["Move the side effect out of the compiled function, or "
                                                "compile without fullgraph=True."],
                            where, _cap.source_line(where))


class OptimizedModule(Module):
    """ember.compile(module): a Module wrapping the original (`_orig_mod`), whose call runs the
    compiled `_orig_mod.__call__`. Parameters and state_dict keys are the original's under
    `_orig_mod.`, as in torch."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    @property
    def training(self):
        d = self.__dict__
        return d["_modules"]["_orig_mod"].training if "_modules" in d and "_orig_mod" in d["_modules"] else True

    @training.setter
    def training(self, v):
        d = self.__dict__
        if "_modules" in d and "_orig_mod" in d["_modules"]:
            d["_modules"]["_orig_mod"].training = v

    def __repr__(self):
        return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)"


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """ember.compile (torch.compile): a function, a Module, or used as a decorator."""
    if model is None:
        def deco(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return deco
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, reduce-overhead, max-autotune, "
                           "max-autotune-no-cudagraphs")
    if disable:
        return model
    if isinstance(model, Module):
        compiled = CompiledFunction(model.__call__, backend, fullgraph, dynamic, mode, options, module=model)
        return OptimizedModule(model, compiled)
    if not callable(model):
        raise RuntimeError("ember.compile: the model must be a callable (a function or an nn.Module)")
    return CompiledFunction(model, backend, fullgraph, dynamic, mode, options)


def optimize(backend="inductor", *, nopython=False, dynamic=None, disable=False):
    """torch._dynamo.optimize (older spelling): a decorator compiling with `backend`."""
    def deco(fn):
        return compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic, disable=disable)
    return deco


def disable(fn=None, recursive=True, *, reason=None):
    """Run `fn` eagerly even when it is called from a compiled function (torch._dynamo.disable):
    inside a capture it is still traced at the dispatcher, so its ops are part of the graph; on
    its own it never compiles."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if isinstance(fn, CompiledFunction):
        fn = fn.fn

    @functools.wraps(fn)
    def inner(*a, **k):
        return fn(*a, **k)
    inner._ember_dynamo_disable = True
    return inner


def reset():
    """Forget every compiled entry (torch._dynamo.reset)."""
    for cf in _ALL:
        cf.entries = []
        cf.eager_reason = None
        cf.limit_hit = False
        cf.graph_count = 0
        cf.break_reasons = []
        cf.graphs = []
        cf.compile_times = []
        cf.n_compiles = 0
        cf.deferred = None      # a kept (symbolic pending) trace
        cf._told = set()
    _frame_counter[0] = 0


def is_compiling():
    return _depth[0] > 0 and bool(_st().dispatch_modes)
