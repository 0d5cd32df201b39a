"""Segments to code: the fx GraphModule a backend receives, and ember's direct replay function.

A segment's graph takes as placeholders the slots it reads from outside itself (the function's
inputs, tensors captured by reference such as parameters, values of earlier segments) and returns
the slots needed after it. Ops are called with every schema argument positional, the way the
recorder saw them below Autograd. The replay function is the same program written as straight
Python over `op.call` (the dispatcher's typed front door), which is what the built-in backends run:
each op goes through the whole dispatcher again, Autograd included, as in eager.
"""
import math

from ember._dynamo.capture import Ref, Sym
from ember.core import tls

_st = tls.current


def _set_grad(on):
    _st().grad_enabled = on


def reads(seg):
    """Slots a segment reads, in first-use order, and the slots it writes."""
    produced, ins = set(), []

    def use(a):
        if isinstance(a, Ref) or isinstance(a, Sym):
            i = a.i if isinstance(a, Ref) else a.slot
            if i not in produced and i not in seen:
                seen.add(i)
                ins.append(i)
        elif isinstance(a, (list, tuple)):
            for e in a:
                use(e)
    seen = set()
    for n in seg.nodes:
        for a in n.args:
            use(a)
        for s in _out_slots(n.out):
            produced.add(s)
    return ins, produced


def _out_slots(out):
    if isinstance(out, Ref):
        return [out.i]
    if isinstance(out, tuple):
        r = []
        for e in out:
            r.extend(_out_slots(e))
        return r
    return []


def template_slots(t, acc):
    if isinstance(t, Ref):
        acc.append(t.i)
    elif isinstance(t, Sym):
        acc.append(t.slot)
    elif isinstance(t, (list, tuple)):
        for e in t:
            template_slots(e, acc)
    elif isinstance(t, dict):
        for e in t.values():
            template_slots(e, acc)
    elif isinstance(t, _Obj):
        for e in t.fields:
            template_slots(e, acc)
    return acc


class _Obj:
    """A namedtuple or dataclass-like return value rebuilt from its fields."""
    __slots__ = ("cls", "fields")

    def __init__(self, cls, fields):
        self.cls, self.fields = cls, fields


def assign(out, call):
    """The line running `call` and binding its outputs (template `out`) to their slot names."""
    if isinstance(out, Ref):
        return f"    v{out.i} = {call}"
    if isinstance(out, tuple) and out:
        names = ", ".join(f"v{e.i}" if isinstance(e, Ref) else "_" for e in out)
        return f"    {names}{',' if len(out) == 1 else ''} = {call}"
    return f"    {call}"


def extern_arg(a, name_of, g):
    """Source for argument template `a` of an extern call: slots through name_of(slot), containers
    element by element, other values as literals (_lit)."""
    if isinstance(a, Ref):
        return name_of(a.i)
    if isinstance(a, list):
        return "[" + ", ".join(extern_arg(x, name_of, g) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + "".join(extern_arg(x, name_of, g) + ", " for x in a) + ")"
    return _lit(a, g)


def _lit(v, g):
    """Python source for a constant argument."""
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, float):
        if math.isfinite(v):
            return repr(v)
    if isinstance(v, Ref):
        return f"v{v.i}"
    if isinstance(v, Sym):
        return f"({v.a} * v{v.slot} + {v.b})"
    if isinstance(v, list):
        return "[" + ", ".join(_lit(e, g) for e in v) + "]"
    if isinstance(v, tuple):
        return "(" + "".join(_lit(e, g) + ", " for e in v) + ")"
    name = f"k{len(g)}"
    g[name] = v
    return name


def replay_source(seg, ins, outs, grad_toggles=True):
    """def seg(v0, v3): ... return (v5, v7)  -- calling op.call for each node. Without
    grad_toggles the code runs under the caller's grad mode (AOT graphs: autograd sets it)."""
    g = {"_set_grad": _set_grad}
    ops = {}
    lines = [f"def segment({', '.join(f'v{i}' for i in ins)}):"]
    grad = seg.grad0
    toggled = False
    # a value made here dies after its last reader (`del`), as Inductor's output code frees its
    # buffers: holding every intermediate until the return kept a 1M-element chain's 13 arrays
    # alive, so each call's arrays were fresh pages from the OS (17 ms against eager's 3.8 ms)
    keep = set(ins) | set(outs)
    last = {}
    for k, n in enumerate(seg.nodes):
        for a in n.args:
            for s in template_slots(a, []):
                last[s] = k
    for k, n in enumerate(seg.nodes):
        for s in _out_slots(n.out):
            last.setdefault(s, k)
    dies = {}
    for s, k in last.items():
        if s not in keep:
            dies.setdefault(k, []).append(s)
    made = set()   # slots assigned so far (a slot read before any node makes it is an input)
    for k, n in enumerate(seg.nodes):
        if n.grad is not grad and grad_toggles:
            lines.append(f"    _set_grad({n.grad})")
            grad = n.grad
            toggled = True
        on = ops.get(n.op)
        if on is None:
            on = ops[n.op] = f"{str(n.op.name)}_{n.op.overload or 'default'}"
            g[on] = n.op.call
        call = f"{on}({', '.join(_lit(a, g) for a in n.args)})"
        lines.append(assign(n.out, call))
        made.update(_out_slots(n.out))
        gone = sorted(s for s in dies.get(k, ()) if s in made)
        if gone:
            lines.append(f"    del {', '.join(f'v{s}' for s in gone)}")
    ret = f"    return ({''.join(f'v{i}, ' for i in outs)})"
    if toggled:
        # grad mode is the caller's again however the segment ends (an op may raise)
        body = ["    " + ln for ln in lines[1:]]
        lines = [lines[0], "    try:"] + body + ["    " + ret, "    finally:", f"        _set_grad({seg.grad0})"]
    else:
        lines.append(ret)
    return "\n".join(lines) + "\n", g


def compile_replay(seg, ins, outs, name, grad_toggles=True):
    src, g = replay_source(seg, ins, outs, grad_toggles)
    exec(compile(src, f"<ember compiled {name}>", "exec"), g)
    fn = g["segment"]
    fn.source = src
    return fn


def build_graph_module(seg, ins, outs, names, values):
    """The segment as an ember.fx GraphModule (placeholders named after their sources)."""
    import ember  # lazy: ember.fx is a library above us
    from ember.fx import Graph, GraphModule
    graph = Graph()
    env = {}
    for i in ins:
        p = graph.placeholder(names.get(i, f"v{i}"))
        v = values[i] if i < len(values) else None
        if v is not None:
            p.meta["val"] = v
            p.meta["example_value"] = v
        env[i] = p

    def arg(a):
        if isinstance(a, Ref):
            return env[a.i]
        if isinstance(a, Sym):
            import operator  # lazy: a symbolic size is arithmetic on the size placeholder
            n = env[a.slot]
            if a.a != 1:
                n = graph.call_function(operator.mul, (n, a.a))
            if a.b:
                n = graph.call_function(operator.add, (n, a.b))
            return n
        if isinstance(a, list):
            return [arg(e) for e in a]
        if isinstance(a, tuple):
            return tuple(arg(e) for e in a)
        return a
    set_grad = getattr(ember._C, "_set_grad_enabled", _set_grad)
    grad = seg.grad0
    for n in seg.nodes:
        if n.grad is not grad:
            graph.call_function(set_grad, (n.grad,))
            grad = n.grad
        node = graph.call_function(n.op, tuple(arg(a) for a in n.args))
        if n.where is not None:
            node.meta["stack_trace"] = f'  File "{n.where[0]}", line {n.where[1]}, in {n.where[2]}\n'
        out = n.out
        if isinstance(out, Ref):
            env[out.i] = node
            v = values[out.i]
            if v is not None:
                node.meta["val"] = v
        elif isinstance(out, tuple):
            import operator  # lazy: getitem nodes for multi-output ops
            for k, e in enumerate(out):
                if isinstance(e, Ref):
                    gi = graph.call_function(operator.getitem, (node, k))
                    env[e.i] = gi
                    gi.meta["val"] = values[e.i]
    if grad is not seg.grad0:
        graph.call_function(set_grad, (seg.grad0,))
    graph.output(tuple(env[i] for i in outs))
    gm = GraphModule(ember.nn.Module(), graph)
    return gm
