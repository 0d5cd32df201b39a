"""Capture: run the user's function eagerly once while recording every aten op it reaches.

The recorder is a __torch_dispatch__ mode (ember/dispatch/python_key.py): it sits below Autograd,
so it sees the ops that really run (composite ops decomposed, the ops autograd formulas call when
backward runs under it). Each op is executed for real, so the capturing call returns exactly what
eager returns, and is written down as a node over *slots*: the function's tensor inputs, tensors
reached otherwise (module parameters, globals: captured by reference and guarded), and the outputs
of earlier nodes. Python values in an op's arguments (sizes, scalars, dtypes) are constants of the
graph: they can only come from guarded state (input shapes, guarded Python values) or from an
earlier break.

A data-dependent point ends the current segment: an op whose result is a Python value
(`_local_scalar_dense`, behind item(), __bool__, __index__, __float__...), Tensor.tolist(), or an
op whose output shape depends on data (nonzero, unique, masked_select, boolean indexing). The value
observed (the shapes, for the latter) is the key of a branch, and what follows is a child segment.
Tensor.numpy() hands out live memory, so it makes the function run eagerly.

Side effects are looked for while capturing with sys.setprofile (user frames entered, builtins
called, code of ember.random's seeding functions) and by comparing shallow snapshots of the Python
state the function can reach (globals its code names, closure cells, non-tensor arguments,
modules' __dict__) before and after the run. Any side effect makes the function run eagerly, with
the reason recorded (explain() and EMBER_LOGS=graph_breaks show it).
"""
import gc
import os
import sys
import types

import ember
import ember.compiler as _compiler
from ember.core import tls
from ember.dispatch import python_key as _pk
from ember.dispatch.operator import bind_kwargs
from ember.tensor import Tensor

_EMBER_DIR = os.path.dirname(os.path.abspath(ember.__file__)) + os.sep
_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_DYNAMO_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_DISPATCH_DIR = os.path.dirname(os.path.abspath(_pk.__file__)) + os.sep
_gettrace, _settrace = sys.gettrace, sys.settrace
_state = tls.current

# ops whose output shape depends on the input's values
_DD_SHAPE = frozenset(("nonzero", "unique", "_unique", "_unique2", "unique_consecutive", "unique_dim",
                       "unique_dim_consecutive", "masked_select", "argwhere", "bincount",
                       "repeat_interleave", "nonzero_numpy", "histogram", "_local_scalar_dense"))
# names of code that changes global RNG state or does I/O: a call to them is a side effect
_SIDE_EFFECT_CODE = frozenset(("manual_seed", "seed", "set_rng_state", "set_printoptions",
                               "set_default_dtype", "set_default_device", "use_deterministic_algorithms"))


class Ref:
    """A slot in the environment: an input, a tensor captured by reference, or a node's output."""
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"v{self.i}"


class Sym:
    """An int argument that follows a symbolic size: a * env[slot] + b (automatic dynamic shapes)."""
    __slots__ = ("a", "b", "slot")

    def __init__(self, a, b, slot):
        self.a, self.b, self.slot = a, b, slot

    def at(self, s):
        return self.a * s + self.b

    def __repr__(self):
        return f"({self.a} * s + {self.b})"


def generalize(nodes0, nodes1, s0, s1, slot):
    """nodes1 traced with size s1 where nodes0 saw s0: the nodes with every int that changed
    replaced by a Sym affine in the size, or None when the traces differ otherwise."""
    if len(nodes0) != len(nodes1):
        return None
    out = []
    for n0, n1 in zip(nodes0, nodes1):
        if n0.op is not n1.op or not _same_out(n0.out, n1.out):
            return None
        args = _gen_value(n0.args, n1.args, s0, s1, slot)
        if args is _NO:
            return None
        out.append(OpNode(n0.op, args, n0.out, n0.grad, n0.where, None))
    return out


def generalize_value(v0, v1, s0, s1, slot):
    r = _gen_value(v0, v1, s0, s1, slot)
    return None if r is _NO else (r,)


_NO = object()


def _same_out(a, b):
    if isinstance(a, Ref) and isinstance(b, Ref):
        return a.i == b.i
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_out(x, y) for x, y in zip(a, b))
    return a is None and b is None


def _gen_value(v0, v1, s0, s1, slot):
    c0, c1 = v0.__class__, v1.__class__
    if c0 is Ref:
        return v0 if c1 is Ref and v0.i == v1.i else _NO
    if c0 is not c1:
        return _NO
    if c0 is int:
        if v0 == v1:
            return v0
        a, rem = divmod(v1 - v0, s1 - s0)
        if rem:
            return _NO
        return Sym(a, v0 - a * s0, slot)
    if c0 is list or c0 is tuple:
        if len(v0) != len(v1):
            return _NO
        out = []
        for x, y in zip(v0, v1):
            r = _gen_value(x, y, s0, s1, slot)
            if r is _NO:
                return _NO
            out.append(r)
        return c0(out)
    if c0 is dict:
        if list(v0) != list(v1):
            return _NO
        out = {}
        for k in v0:
            r = _gen_value(v0[k], v1[k], s0, s1, slot)
            if r is _NO:
                return _NO
            out[k] = r
        return out
    if isinstance(v0, Tensor):
        return v0 if v0 is v1 else _NO
    try:
        return v0 if v0 == v1 and c0 is c1 else _NO
    except Exception:
        return v0 if v0 is v1 else _NO


def matches(nodes_sym, nodes1, s):
    """Whether a trace at size s is what the symbolic nodes compute at s."""
    if len(nodes_sym) != len(nodes1):
        return False
    for n0, n1 in zip(nodes_sym, nodes1):
        if n0.op is not n1.op or not _same_out(n0.out, n1.out) or not _matches_value(n0.args, n1.args, s):
            return False
    return True


def matches_value(v0, v1, s):
    return _matches_value(v0, v1, s)


def _matches_value(v0, v1, s):
    c0 = v0.__class__
    if c0 is Sym:
        return v1.__class__ is int and v0.at(s) == v1
    if c0 is Ref:
        return v1.__class__ is Ref and v0.i == v1.i
    if c0 is not v1.__class__:
        return False
    if c0 is list or c0 is tuple:
        return len(v0) == len(v1) and all(_matches_value(x, y, s) for x, y in zip(v0, v1))
    if c0 is dict:
        return list(v0) == list(v1) and all(_matches_value(v0[k], v1[k], s) for k in v0)
    if isinstance(v0, Tensor):
        return v0 is v1
    try:
        return bool(v0 == v1)
    except Exception:
        return v0 is v1


class _NoSchema:
    arguments = ()
    returns = ()


class PyOp:
    """A Python step the graph replays where autograd writes state without an aten op: setting a
    tensor's .grad, and AccumulateGrad adding a leaf's gradient. It returns the leaf's .grad after
    the step, so later reads of `p.grad` are that slot."""
    schema = _NoSchema
    tags = ()
    overload = None

    def __init__(self, name, fn):
        self.name = name
        self.__module__ = __name__
        self.call = fn
        self.__name__ = name
        self.__qualname__ = name

    def __call__(self, *args):
        return self.call(*args)

    def __repr__(self):
        return f"ember._dynamo.{self.name}"


def _set_grad_step(t, value):
    t.grad = value
    return t.grad


def _accumulate_grad_step(var, g, mode=None):
    """AccumulateGrad.apply([g]) on var; mode: how the capturing run stored a first gradient
    ("steal": g itself, "clone": a copy; AccumulateGrad decides by reference counts, which differ
    between eager and replay), so the replay stores it the same way."""
    from ember.autograd.graph import AccumulateGrad  # lazy: replay of a recorded gradient accumulation
    m = var._ameta
    if mode == "steal" and (m is None or m.grad is None):
        from ember.autograd.meta import get_meta  # lazy: as Tensor.grad's setter
        m = get_meta(var)
        m.grad = g
        for h in list(m.post_acc_hooks or ()):
            h(var)
        return m.grad
    held = (g, g, g)  # noqa: F841 - more references than AccumulateGrad steals from: it copies, as it did
    AccumulateGrad(var).apply([g])
    return var.grad


SET_GRAD = PyOp("set_grad", _set_grad_step)
ACCUMULATE_GRAD = PyOp("accumulate_grad", _accumulate_grad_step)


class OpNode:
    __slots__ = ("op", "args", "out", "grad", "where", "val")

    def __init__(self, op, args, out, grad, where, val):
        self.op, self.args, self.out, self.grad, self.where, self.val = op, args, out, grad, where, val


class Break:
    """Where a segment ends: what is computed eagerly and turned into the key of the next segment."""
    __slots__ = ("kind", "op", "args", "out", "where", "source", "children", "reason", "key", "fast")

    def __init__(self, kind, op, args, out, where, source, reason, key):
        self.kind, self.op, self.args, self.out = kind, op, args, out
        self.where, self.source, self.reason, self.key = where, source, reason, key
        self.children = {}


class Segment:
    """A straight run of ops: one graph."""
    __slots__ = ("nodes", "ins", "outs", "fn", "gm", "brk", "output", "grad0", "index", "aot", "impure",
                 "n_ops", "codegen", "random", "step", "build", "dynamic", "deps", "writer", "consumed",
                 "release")

    def __init__(self, grad0):
        self.nodes = []
        # data flow, for a training step's analysis (Recorder.note_backward): per node the indices of
        # the nodes that last wrote the slots it reads; the last writer of each slot; the nodes
        # recorded under grad mode whose autograd graph a backward() inside the segment consumed
        self.deps = []
        self.writer = {}
        self.consumed = set()
        self.release = ()      # consumed nodes that must record after all: their graph is freed at the end
        self.ins, self.outs = [], []
        self.fn = self.gm = self.brk = self.aot = None
        self.output = None     # the function's return template, on the last segment of a path
        self.grad0 = grad0
        self.impure = False    # mutates state that exists outside the call
        self.random = False    # draws from the default generator
        self.dynamic = False   # has symbolic sizes
        self.n_ops = 0
        self.codegen = None


class SideEffect(Exception):
    pass


def _user_frame(f):
    """The innermost frame of user code at or above f: (file, line, function) and its source line."""
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_EMBER_DIR) and not fn.startswith(_STDLIB) and not fn.startswith("<"):
            return (fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def source_line(where):
    if where is None:
        return ""
    import linecache  # lazy: only break messages read source lines
    return linecache.getline(where[0], where[1]).rstrip()


_RANDOM_OPS = ("bernoulli", "bernoulli_", "normal", "normal_", "uniform_", "rand", "randn", "randint",
               "randperm", "multinomial", "exponential_", "geometric_", "cauchy_", "log_normal_",
               "random_", "rand_like", "randn_like", "randint_like", "native_dropout", "poisson",
               "_standard_gamma", "rrelu_with_noise", "_fused_dropout")


class Recorder:
    """The dispatch mode that writes the path down. `slots` maps id(tensor) -> slot; `keep` holds
    every tensor seen so ids stay unique while capturing."""

    def __init__(self, inputs, grad0, fullgraph=False):
        # version counters: id(counter) -> (counter, version an ember op left it at). A write that
        # bypasses the dispatcher (an optimizer's NumPy fast path) shows as a version nobody recorded.
        self.vers = {}
        self.written = set()      # ids of version counters a recorded op or step wrote
        self.grad_before = {}
        self.grad_read = set()    # ids of tensors whose .grad the traced code read
        self.slot = {}
        self.keep = []
        self.values = []          # slot -> the tensor seen while capturing (example values)
        self.kind = []            # slot -> "input" | "const" | "node"
        self.consts = {}          # slot -> tensor captured by reference
        self.fullgraph = fullgraph
        for t in inputs:
            if id(t) not in self.slot:
                self._new(t, "input")
            else:
                self.values.append(None)
                self.kind.append("alias")
        self.seg = Segment(grad0)
        self.segments = [self.seg]
        self.mutated = set()      # slots written in place
        self.unsupported = None   # a reason this function must run eagerly
        self.active = True
        self.suspend = 0          # > 0 inside a recorded Python step (its own ops are not recorded)
        for t in inputs:
            self.grad_before[id(t)] = t.grad
            self.note(t)
        self.grad_after = {}      # id(tensor) -> its .grad after the last recorded step
        self._pyk = {}            # id(Python step node) -> (segment, index) until it finishes

    match_aliases = False   # the joint trace: a saved tensor unpacked as a new alias object is its slot

    def _alias_of(self, x):
        try:
            key = (x.data_ptr(), x._shape, x.stride(), x._dtype, x._device)
        except Exception:
            return None
        for i, t in enumerate(self.values):
            if t is not None and t.data_ptr() == key[0] and (t._shape, t.stride(), t._dtype, t._device) == key[1:]:
                self.slot[id(x)] = i
                self.keep.append(x)
                return i
        return None

    def note(self, t):
        vc = t._version_counter()
        if id(vc) not in self.vers:
            self.vers[id(vc)] = (vc, vc[0])

    def note_reachable(self, obj, depth=4, seen=None):
        """Note the versions of the tensors reachable from obj (modules, containers, attributes)."""
        seen = set() if seen is None else seen
        if id(obj) in seen or depth < 0:
            return
        seen.add(id(obj))
        if isinstance(obj, Tensor):
            self.note(obj)
            g = obj.grad
            if g is not None:
                self.note(g)
            return
        if isinstance(obj, ember.nn.Module):
            for t in obj.parameters():
                self.note_reachable(t, 0, seen)
            for t in obj.buffers():
                self.note(t)
            return
        if isinstance(obj, (list, tuple)):
            for e in obj:
                self.note_reachable(e, depth - 1, seen)
        elif isinstance(obj, dict):
            for e in list(obj.values()):
                self.note_reachable(e, depth - 1, seen)
        elif not isinstance(obj, (type, types.ModuleType, types.FunctionType)) and isinstance(
                getattr(obj, "__dict__", None), dict):
            for e in list(obj.__dict__.values()):
                self.note_reachable(e, depth - 1, seen)

    def unrecorded_write(self):
        """A version counter that moved though no recorded op or step wrote its tensor. (The
        ADInplaceOrView layer above the Python key bumps versions after the recorder saw the op,
        so a recorded write marks its counter instead of predicting the version.)"""
        for key, (vc, v) in self.vers.items():
            if vc[0] != v and key not in self.written:
                return True
        return False

    def _new(self, t, kind):
        if kind == "const":
            self.grad_before.setdefault(id(t), t.grad)
        self.note(t)
        i = len(self.values)
        self.slot[id(t)] = i
        self.keep.append(t)
        self.values.append(t)
        self.kind.append(kind)
        if kind == "const":
            self.consts[i] = t
        return i

    def ref(self, x):
        if isinstance(x, Tensor):
            i = self.slot.get(id(x))
            if i is None:
                # a saved tensor unpacked in backward is a new object over a known slot's memory;
                # with grad mode off an alias reads the same as its slot
                i = self._alias_of(x) if self.match_aliases or not _state()._grad else None
                if i is None:
                    i = self._new(x, "const")
            return Ref(i)
        if isinstance(x, (list, tuple)) and x and any(isinstance(e, Tensor) for e in x):
            return type(x)(self.ref(e) for e in x) if type(x) in (list, tuple) else [self.ref(e) for e in x]
        return x

    def out(self, r):
        if isinstance(r, Tensor):
            i = self.slot.get(id(r))
            return Ref(i if i is not None else self._new(r, "node"))
        if isinstance(r, (list, tuple)):
            return tuple(self.out(e) for e in r)
        return None

    # ---- the dispatch mode -------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args, kwargs):
        tr = _gettrace()
        if tr is None:
            return self._dispatch(func, args, kwargs)
        _settrace(None)   # the recorder and the kernels run untraced: the watcher looks at user code
        try:
            return self._dispatch(func, args, kwargs)
        finally:
            _settrace(tr)

    def _dispatch(self, func, args, kwargs):
        full = bind_kwargs(func.schema, args, kwargs) if kwargs or len(args) < len(func.schema.arguments) else args
        r = func(*full)
        if not self.active or self.suspend:
            return r
        name = str(func.name)
        refs = tuple(self.ref(a) for a in full)
        where = _user_frame(sys._getframe(1))
        if name in _DD_SHAPE or (name == "index" and _bool_index(full)) or not _has_tensor(r):
            self._break(func, refs, r, where)
            return r
        if name.endswith("_") or _writes(func):
            for a, sa, x in zip(refs, func.schema.arguments, full):
                if isinstance(a, Ref) and sa.is_write:
                    self.mutated.add(a.i)
                    vc = x._version_counter()
                    self.written.add(id(vc))
                    if self.kind[a.i] != "node":
                        self.seg.impure = True
        if name in _RANDOM_OPS:
            # the default generator's draws can be rewound (eval_frame's rng snapshot); another
            # generator's cannot
            if any(type(a).__name__ == "Generator" for a in full):
                self.seg.impure = True
            else:
                self.seg.random = True
        node = OpNode(func, refs, self.out(r), _state()._grad, where, None)
        self._link(node, [s for a, sa in zip(refs, func.schema.arguments) if sa.is_write for s in ref_slots(a)])
        return r

    def _link(self, node, writes=()):
        """Append node to the segment with its data flow (Segment.deps / writer)."""
        seg = self.seg
        w = seg.writer
        seg.deps.append(tuple(w.get(s) for s in ref_slots(node.args)))
        k = len(seg.nodes)
        seg.nodes.append(node)
        seg.n_ops += 1
        for s in ref_slots(node.out):
            w[s] = k
        for s in writes:
            w[s] = k
        return k

    def note_backward(self, tensors):
        """`backward()` on `tensors` that frees the graph it runs (retain_graph and create_graph off, no
        inputs=), seen by the watcher as it is called: the recorded nodes that produced the roots,
        back through nodes recorded under grad mode, join seg.consumed. A compiled replay runs them
        without recording autograd (the step's backward is in the graph already); see
        settle_consumed for when it may. Only where eager's graph saves tensors, so that backward
        through an output again raises in eager as it will from the compiled output's stand-in node."""
        if not self.active or self.suspend:
            return
        roots = [t for t in (tensors if isinstance(tensors, (list, tuple)) else (tensors,)) if isinstance(t, Tensor)]
        if not _graph_saves([t.grad_fn for t in roots]):
            return
        seg = self.seg
        stack = [seg.writer.get(self.slot.get(id(t))) for t in roots]
        while stack:
            k = stack.pop()
            if k is None or k in seg.consumed:
                continue
            n = seg.nodes[k]
            if not n.grad or isinstance(n.op, PyOp):
                continue
            seg.consumed.add(k)
            stack.extend(seg.deps[k])

    def _break(self, func, refs, r, where, kind=None):
        if kind is None:
            kind = "value" if not _has_tensor(r) else "shape"
        out = self.out(r) if kind == "shape" else None
        key = _key(r, kind)
        if kind == "value":
            reason = ("Data-dependent branching" if isinstance(r, bool) or where is not None and "if " in
                      source_line(where) else f"Tensor.item() / {func} reads a value out of a tensor")
            reason = f"generic_jump TensorVariable(): {reason}" if reason == "Data-dependent branching" else reason
        elif kind == "tolist":
            reason = "Tensor.tolist() reads values out of a tensor"
        else:
            reason = f"dynamic shape operator: {func} (its output shape depends on data)"
        brk = Break(kind, func, refs, out, where, source_line(where), reason, key)
        if self.fullgraph:
            self.active = False
            raise _unsupported_for(brk)
        self.seg.brk = brk
        self.seg = Segment(_state()._grad)
        brk.children[key] = self.seg
        self.segments.append(self.seg)

    def py_step(self, op, t, value):
        """Record `op(t, value)` (SET_GRAD / ACCUMULATE_GRAD), run by the watcher before the step
        runs; `finish_py_step` maps its result (t.grad afterwards) to a slot."""
        args = (self.ref(t), self.ref(value) if value is not None else None)
        if op is ACCUMULATE_GRAD:
            args += (None,)
        node = OpNode(op, args, None, _state()._grad, _user_frame(sys._getframe(2)), None)
        node.val = (t.grad is None, value)
        self._pyk[id(node)] = (self.seg, self._link(node))
        self.seg.impure = True
        return node

    def finish_py_step(self, node, t):
        g = t.grad
        if node.op is ACCUMULATE_GRAD and node.val[0] and _state()._grad is False:
            node.args = node.args[:2] + ("steal" if g is node.val[1] else "clone",)
        node.val = None
        node.out = self.out(g) if g is not None else None
        seg, k = self._pyk.pop(id(node))
        if g is not None:
            seg.writer[node.out.i] = k
        self.grad_after[id(t)] = g
        if g is not None:
            self.written.add(id(g._version_counter()))

    def tolist_break(self, t, value, caller=None):
        if not self.active:
            return
        self._break(None, (self.ref(t),), value, _user_frame(caller or sys._getframe(2)), kind="tolist")


def ref_slots(v, acc=None):
    """The slots a node's argument or output template names, in order."""
    acc = [] if acc is None else acc
    if isinstance(v, Ref):
        acc.append(v.i)
    elif isinstance(v, (list, tuple)):
        for e in v:
            ref_slots(e, acc)
    return acc


def _graph_saves(fns):
    """Whether the autograd graph under grad_fns holds a saved tensor (backward through it a second
    time raises in eager)."""
    seen = set()
    stack = [f for f in fns if f is not None]
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        slots = getattr(f, "_tensor_slots", None)
        if slots and any(getattr(f, s, None) is not None for s in slots):
            return True
        stack.extend(e[0] for e in getattr(f, "_next", ()) if e is not None and e[0] is not None)
    return False


def settle_consumed(rec):
    """Keep a segment's consumed set only where running those nodes without autograd cannot show:
    no graph break (a later segment may read them), and no node outside the set that records autograd
    (its output requires grad) or sets a .grad reads one of them. Outputs among them get a stand-in
    grad_fn (compile_fx). Where a later node does read them they record after all, and the replay
    frees their saved tensors at its end (seg.release), as eager's backward did."""
    for seg in rec.segments:
        c = seg.consumed
        if not c:
            continue
        if seg.brk is not None:
            c.clear()
            continue
        for k, n in enumerate(seg.nodes):
            if k in c or not any(d in c for d in seg.deps[k]):
                continue
            if isinstance(n.op, PyOp):
                bad = seg.deps[k][0] in c if seg.deps[k] else False
            else:
                bad = any(getattr(rec.values[s], "requires_grad", False) for s in ref_slots(n.out))
            if bad:
                seg.release = frozenset(c)
                c.clear()
                break


def _unsupported_for(brk):
    from ember._dynamo import exc
    if brk.kind == "value":
        title = "Data-dependent branching"
        expl = ("Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not "
                "support tracing dynamic control flow.") if "branching" in brk.reason else (
            "Dynamo does not support reading a Python value out of a tensor (Tensor.item(), int(), "
            "float(), bool()) inside a fullgraph region.")
        hints = ["Use `ember.where` or make the code branchless by always applying the transform.",
                 "This graph break is fundamental - it is unlikely that Dynamo will ever be able to "
                 "trace through your code. Consider finding a workaround."]
    elif brk.kind == "tolist":
        title, expl = "Unsupported Tensor.tolist() call", "Tensor.tolist() reads data out of a tensor."
        hints = ["Keep the values in a tensor."]
    else:
        title = "Dynamic shape operator"
        expl = f"Operator `{brk.op}`'s output shape depends on input Tensor data."
        hints = ["Enable tracing of dynamic shape operators with "
                 "`ember._dynamo.config.capture_dynamic_output_shape_ops = True`"]
    msg = exc.format_break(title, expl, hints, brk.where, brk.source, context=brk.reason)
    return exc.Unsupported(msg, gb_type=title, reason=brk.reason, user_stack=[brk.where])


def _bool_index(args):
    idx = args[1] if len(args) > 1 else ()
    for t in idx or ():
        if isinstance(t, Tensor) and t._dtype.name in ("bool", "uint8"):
            return True
    return False


def _has_tensor(r):
    if isinstance(r, Tensor):
        return True
    if isinstance(r, (list, tuple)):
        return any(isinstance(e, Tensor) for e in r)
    return False


def _writes(func):
    try:
        return any(a.is_write for a in func.schema.arguments)
    except AttributeError:
        return False


def freeze(v):
    if isinstance(v, list):
        return tuple(freeze(e) for e in v)
    return v


def _key(r, kind):
    if kind == "shape":
        if isinstance(r, Tensor):
            return r._shape
        return tuple(e._shape if isinstance(e, Tensor) else e for e in r)
    # a value: its type is part of the key (True == 1, 1.0 == 1)
    return (type(r), freeze(r))


def branch_key(kind, r):
    return _key(r, kind)


# ---- side effects ------------------------------------------------------------------------------
_SCALARS = (int, float, bool, str, type(None), complex, bytes)


class Watcher:
    """The trace hook while capturing (sys.settrace, 'call' events only: no line or C-call events,
    so ember's own frames cost one classification look-up each): user frames entered (the globals
    their code names are snapshot before they run), ember's seeding functions, Python's random
    module, Tensor.numpy(), Tensor.tolist() (a break), .grad reads and writes and AccumulateGrad
    (recorded as Python steps), custom autograd Functions. print() is watched by wrapping
    builtins.print for the capture; the states of Python's and NumPy's global random generators are
    compared before and after."""

    def __init__(self, recorder):
        self.rec = recorder
        self.codes = {}          # code -> "user" | "ember" | "other" | a kind | side-effect reason
        self.effect = None
        self.where = None        # the user's (file, line, function) of the side effect, where known
        self.globals_read = {}   # (id(globals dict), name) -> (dict, name, value)
        self.snaps = []          # (description, obj, snapshot)
        self.rebind = []         # (description, globals dict, name, value): rebinding is a side effect
        self.user_codes = []
        self.prev = None
        self._tolist = Tensor.tolist.__code__
        self._numpy = Tensor.numpy.__code__
        from ember.autograd.function import Function
        from ember.autograd.graph import AccumulateGrad
        self._fn_apply = Function.apply.__func__.__code__
        self._grad_set = Tensor.grad.fset.__code__
        self._grad_get = Tensor.grad.fget.__code__
        self._acc = AccumulateGrad.apply.__code__
        self._backward = ember.autograd.backward.__code__
        self._pending = {}        # frame -> (node, tensor) of a Python step being recorded

    def __enter__(self):
        import builtins
        import random  # lazy: the global generators whose state a capture compares
        self._random = random.getstate()
        self._np_random = _np_random_state()
        self._print = builtins.print
        watcher = self
        orig = self._print

        def print(*a, **k):   # noqa: A001 - stands in for the builtin while capturing
            if watcher.effect is None:
                watcher.effect = "print() is a side effect"
                watcher.where = _user_frame(sys._getframe(1))
                watcher.rec.active = False
            return orig(*a, **k)
        builtins.print = print
        for cb in gc.callbacks:  # a collection may run one in any frame: it is not the user's code
            code = getattr(cb, "__code__", None)
            if code is not None:
                self.codes[code] = "other"
        self.prev = sys.gettrace()
        sys.settrace(self.trace)
        return self

    def __exit__(self, *e):
        import builtins
        import random
        sys.settrace(self.prev)
        builtins.print = self._print
        if self.effect is None:
            if random.getstate() != self._random:
                self.effect = "call to Python's random module"
            elif _np_random_state() != self._np_random:
                self.effect = "call to NumPy's global random generator"

    def _classify(self, code):
        fn = code.co_filename
        if code is self._tolist:
            return "tolist"
        if code is self._numpy:
            return "Tensor.numpy() hands out the tensor's memory"
        if code is self._fn_apply:
            return "function_apply"
        if code is self._grad_set or code is self._acc:
            return "grad_step"
        if code is self._grad_get:
            return "grad_read"
        if code is self._backward:
            return "backward"
        if code is _pk.push_dispatch_mode.__code__ or code is _pk.push_function_mode.__code__:
            return "mode_push"
        if fn.startswith(_EMBER_DIR):
            if code.co_name in _SIDE_EFFECT_CODE and ("random" in fn or fn.endswith("__init__.py")):
                return f"call to ember.{code.co_name}() changes global state"
            return "ember"
        if fn.startswith(_STDLIB) or fn.startswith("<"):
            return "other"
        return "user"

    def trace(self, frame, event, arg):
        code = frame.f_code
        k = self.codes.get(code)
        if k is None:
            k = self.codes[code] = self._classify(code)
            if k == "user":
                self.user_codes.append(code)
        if k == "ember" or k == "other":
            return None
        if k == "user":
            g = frame.f_globals
            gr = self.globals_read
            for n in code.co_names:
                if n in g and (id(g), n) not in gr:
                    v = g[n]
                    gr[(id(g), n)] = (g, n, v)
                    self.rebind.append((f"global '{n}'", g, n, v))
                    self.rec.note_reachable(v)
                    if not isinstance(v, (types.ModuleType, type, types.FunctionType)):
                        self.snaps.append((f"global '{n}'", v, snapshot(v)))
            return None
        rec = self.rec
        if k == "tolist":
            if rec.active and not rec.suspend:
                frame.f_trace_lines = False
                return self._local
            return None
        if k == "grad_read":
            caller = frame.f_back
            if caller is None or not caller.f_code.co_filename.startswith(_DYNAMO_DIR):
                rec.grad_read.add(id(frame.f_locals.get("self")))
            return None
        if k == "backward":
            loc = frame.f_locals
            if not loc.get("retain_graph") and not loc.get("create_graph") and loc.get("inputs") is None:
                rec.note_backward(loc.get("tensors"))
            return None
        if k == "grad_step":
            if rec.active and not rec.suspend:
                loc = frame.f_locals
                if code is self._grad_set:
                    t = loc.get("self")
                    node = rec.py_step(SET_GRAD, t, loc.get("value"))
                else:
                    t = loc["self"].variable
                    gs = loc.get("grads")
                    g = gs[0] if gs else None
                    if g is None:
                        return None
                    node = rec.py_step(ACCUMULATE_GRAD, t, g)
                rec.suspend += 1
                self._pending[frame] = (node, t)
                frame.f_trace_lines = False
                return self._local
            return None
        if k == "mode_push":
            # the python key re-pushes the mode it popped around each handler: only a push from
            # outside ember's dispatch (a user's `with Mode():`) is a mode entered inside the function
            caller = frame.f_back
            fn = caller.f_code.co_filename if caller is not None else ""
            if not fn.startswith(_DISPATCH_DIR) and self.effect is None:
                self.effect = "a dispatch or function mode entered inside a compiled function (modes run eagerly)"
                self.where = _user_frame(caller)
                rec.active = False
            return None
        if k == "function_apply":
            if _state()._grad and self.effect is None:
                self.effect = ("a custom autograd.Function runs with grad mode on: the graph would keep its "
                               "forward ops but not its backward")
                rec.active = False
            return None
        if self.effect is None:
            self.effect = k
            self.where = _user_frame(frame.f_back)
            rec.active = False
        return None

    def _local(self, frame, event, arg):
        if event == "return":
            rec = self.rec
            if frame.f_code is self._tolist:
                if rec.active and not rec.suspend:
                    rec.tolist_break(frame.f_locals.get("self"), arg, frame.f_back)
            elif frame in self._pending:
                node, t = self._pending.pop(frame)
                rec.suspend -= 1
                rec.finish_py_step(node, t)
        return self._local


def _np_random_state():
    import numpy as np  # lazy: NumPy's legacy global generator
    try:
        st = np.random.get_state()
    except Exception:
        return None
    return (st[0], st[1].tobytes(), st[2], st[3], st[4])


def snapshot(v, depth=4):
    """A shallow picture of a Python object's state: values compared by identity (by value for
    scalars)."""
    if isinstance(v, _SCALARS) or isinstance(v, Tensor):
        return v
    if depth <= 0:
        return id(v)
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(snapshot(e, depth - 1) for e in v))
    if isinstance(v, dict):
        return (dict, tuple((k, snapshot(e, depth - 1)) for k, e in v.items()))
    if isinstance(v, (set, frozenset)):
        return (type(v), frozenset(map(id, v)))
    if isinstance(v, ember.nn.Module):
        return (ember.nn.Module, tuple((m, _mod_state(m)) for m in v.modules()))
    if isinstance(v, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return id(v)
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict):
        return ("obj", type(v), tuple((k, snapshot(e, depth - 1)) for k, e in d.items()))
    return id(v)


def _mod_state(m):
    return tuple((k, _shallow(v) if k.startswith("_") or isinstance(v, ember.nn.Module) else snapshot(v, 2))
                 for k, v in m.__dict__.items())


def _shallow(v):
    if isinstance(v, dict):
        return (dict, tuple((k, e if isinstance(e, _SCALARS) else id(e)) for k, e in v.items()))
    if isinstance(v, (list, set)):
        return (type(v), len(v))
    return v if isinstance(v, _SCALARS) else id(v)


def same_snapshot(a, b):
    if a is b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_snapshot(x, y) for x, y in zip(a, b))
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return a is b
    try:
        return type(a) is type(b) and a == b
    except Exception:
        return False


class capturing:
    """Push the recorder as the innermost dispatch mode and the watcher as the profile hook."""

    def __init__(self, rec, watcher):
        self.rec, self.w = rec, watcher

    def __enter__(self):
        _pk.push_dispatch_mode(self.rec)
        self.w.__enter__()
        _compiler._compiling += 1          # ember.compiler.is_compiling() (ember.optim asks it)
        _compiler._lazy_state_init = False

    def __exit__(self, *e):
        _compiler._compiling -= 1
        self.w.__exit__()
        modes = _state().dispatch_modes
        if modes and modes[-1] is self.rec:
            _pk.pop_dispatch_mode()
        elif self.rec in modes:  # something above us was not popped: take ours out
            _state().dispatch_modes = tuple(m for m in modes if m is not self.rec)
