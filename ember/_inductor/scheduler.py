"""Scheduling: CSE, DCE, fusion into kernels, and the buffer plan.

Fusion (Inductor's scheduler, reduced to what a CPU loop generator needs):
- vertical: a pointwise node joins the open kernel of its iteration space (its output shape); a
  value produced inside that kernel and read only there never touches memory;
- horizontal: independent pointwise nodes over the same shape join the same open kernel, so they
  share one pass over memory;
- a matmul's pointwise epilogue (bias, activation) is the kernel right after it, writing in place
  into the BLAS result when that result dies there.
A kernel is "open" until something outside it needs one of its values (an extern, a matmul, a
pointwise node of another shape) or an extern writes in place (it may write a slot the kernel
reads): then it is emitted at that point. Each fusion decision saves the bytes of one buffer
written and read again (`Kernel.saved_bytes`, the score Inductor ranks fusions by); a kernel is
capped at config.max_fusion_size ops.

Memory planning: liveness over the kernel sequence; a buffer whose last reader has run goes to a
pool keyed by (shape, dtype) and is reused; a kernel's output takes over a same-sized input buffer
that dies in that kernel (in place: kernels load every operand of an element before storing).
Graph inputs are never written. Graph outputs and buffers handed to externs (which may return
views of them) are fresh arrays that never go back to the pool.
"""
from ember._inductor import config, ir


class Kernel:
    """A fused group of pointwise nodes over one iteration space."""

    def __init__(self, shape):
        self.shape = shape
        self.members = []
        self.produced = set()
        self.outs = []       # materialised slots, in member order
        self.ins = []        # slots loaded from memory
        self.saved_bytes = 0
        self.reduction = None    # an ir.NpOp row reduction of one member's value, ending the kernel

    def reads(self):
        return list(self.ins)


def cse(items, alias, graph_outs):
    """Drop pointwise nodes computing what an earlier one computed (same op, same arguments)."""
    seen = {}
    out = []
    for it in items:
        _remap(it, alias)
        if it.kind == "pointwise" and it.inplace:
            # a write to an input: what was computed from its old value is not its new value's
            seen = {k: v for k, v in seen.items() if it.out not in v.loads}
        if it.kind == "pointwise" and it.out not in graph_outs:
            key = (it.origin, tuple(it.loads), _prims_key(it))
            prev = seen.get(key)
            if prev is not None and prev.shape == it.shape and prev.dtype is it.dtype:
                alias[it.out] = prev.out
                continue
            seen[key] = it
        out.append(it)
    return out


def _prims_key(it):
    def v(x):
        return (x.kind, x.a if x.kind != "const" else repr(x.a), str(x.dt))
    return tuple((p.name, str(p.dt), tuple(v(a) for a in p.args)) for p in it.prims)


def _remap(it, alias):
    if not alias:
        return
    if it.kind == "pointwise":
        it.loads = [alias.get(s, s) for s in it.loads]
        for p in it.prims:
            p.args = tuple(ir.V("load", alias.get(a.a, a.a), a.dt) if a.kind == "load" else a for a in p.args)
        if it.result.kind == "load":
            it.result = ir.V("load", alias.get(it.result.a, it.result.a), it.result.dt)
    elif it.kind == "matmul":
        it.a, it.b = alias.get(it.a, it.a), alias.get(it.b, it.b)
        if it.bias is not None:
            it.bias = alias.get(it.bias, it.bias)
    elif it.kind == "view":
        it.src = alias.get(it.src, it.src)
    else:
        it._reads = [alias.get(s, s) for s in it._reads]


def dce(items, graph_outs):
    """Drop pure nodes (pointwise, matmul) whose value nobody reads."""
    live = set(graph_outs)
    keep = []
    for it in reversed(items):
        if it.kind in ("pointwise", "matmul", "view", "npop") and it.out not in live:
            continue
        keep.append(it)
        live.update(it.reads())
    keep.reverse()
    return keep


def fuse(items, graph_outs, itemsize_of, row_ok=False):
    """The kernel sequence: Kernel, ir.MatMul and ir.Extern entries in execution order. With
    row_ok, a reduction over the trailing dims of a value an open kernel computes ends that kernel
    (the value need not be written to memory)."""
    seq = []
    open_k = {}          # shape -> open Kernel
    owner = {}           # slot -> open Kernel producing it

    def close(k):
        if open_k.get(k.shape) is k:
            del open_k[k.shape]
        for s in k.produced:
            owner.pop(s, None)
        seq.append(k)

    for it in items:
        if it.kind == "pointwise" and it.inplace:
            # a tensor written in place: every read of its old value (any open kernel) runs
            # first, and the write is a kernel of its own
            for k in list(open_k.values()):
                close(k)
        if it.kind == "pointwise":
            k = open_k.get(it.shape)
            for s in it.loads:
                h = owner.get(s)
                if h is not None and h is not k:
                    close(h)
            if k is not None and len(k.members) >= config.max_fusion_size:
                close(k)
                k = None
            if k is None:
                k = open_k[it.shape] = Kernel(it.shape)
            k.members.append(it)
            k.produced.add(it.out)
            owner[it.out] = k
            if it.inplace:
                # and ends it: a later read of the memory it writes, through a view of it, must
                # come after the write, which a member of the same kernel (loading at the start
                # of each element) or a kernel closed before this one would not guarantee
                close(k)
            continue
        if row_ok and it.kind == "npop" and it.row is not None:
            h = owner.get(it.reads()[0])
            if h is not None and h.reduction is None:
                h.reduction = it
                close(h)
                continue
        if it.kind in ("extern", "step") and it.writes:
            for k in list(open_k.values()):
                close(k)
        else:
            for s in it.reads():
                h = owner.get(s)
                if h is not None:
                    close(h)
        seq.append(it)
    for k in list(open_k.values()):
        close(k)
    # what each kernel reads from memory and must write to memory
    readers = {}
    for e in seq:
        if isinstance(e, Kernel):
            for m in e.members:
                for s in m.loads:
                    if s not in e.produced:
                        readers.setdefault(s, set()).add(id(e))
        else:
            for s in e.reads():
                readers.setdefault(s, set()).add(id(e))
    for e in seq:
        if not isinstance(e, Kernel):
            continue
        ins = []
        made = set()
        for m in e.members:
            for s in m.loads:
                if s not in made and s not in ins:   # (an in-place member reads its own slot from memory)
                    ins.append(s)
            made.add(m.out)
        e.ins = ins
        for m in e.members:
            if m.out in graph_outs or readers.get(m.out):
                e.outs.append(m.out)
                if e.reduction is not None and m.out == e.reduction.reads()[0]:
                    e.reduction.row = None    # stored anyway: reduce the stored copy (NumPy)
            else:
                n = 1
                for d in m.shape:
                    n *= d
                e.saved_bytes += 2 * n * itemsize_of(m.out)
    return seq


def plan(seq, graph_ins, graph_outs, meta, reduce_overhead=False):
    """Buffer plan: slot -> ("fresh", None) | ("reuse", slot) | ("static", None), for every slot
    a kernel or matmul writes. meta[slot] = (shape, np dtype, contiguous?)."""
    last = {}
    escaped = set(graph_outs)
    for k, e in enumerate(seq):
        for s in e.reads():
            last[s] = k
        if isinstance(e, (ir.Extern, ir.View)):
            escaped.update(e.reads())
    for s in graph_outs:
        last[s] = len(seq)
    ours = set()
    decision = {}
    pool = {}
    for k, e in enumerate(seq):
        if isinstance(e, Kernel):
            outs = e.outs + ([e.reduction.out] if e.reduction is not None else [])
        else:
            outs = [e.out] if isinstance(e, (ir.MatMul, ir.NpOp)) else []
        inplace_ok = isinstance(e, Kernel)
        used = set()
        for s in outs:
            shape, dt, contig = meta[s]
            got = None
            if s not in escaped and contig:
                if inplace_ok:
                    for r in e.ins:
                        if (r in ours and r not in escaped and r not in used and last.get(r) == k
                                and meta[r][:2] == (shape, dt) and meta[r][2]):
                            got = r
                            break
                if got is None:
                    lst = pool.get((shape, dt))
                    while lst:
                        cand = lst.pop()
                        if cand not in used:
                            got = cand
                            break
            if got is not None:
                used.add(got)
                decision[s] = ("reuse", decision[got][1] if decision[got][0] == "reuse" else got)
            else:
                decision[s] = ("static", None) if (reduce_overhead and s not in escaped and contig) else ("fresh", None)
            ours.add(s)
        # buffers whose last reader is this entry go back to the pool
        for s in e.reads():
            if last.get(s) == k and s in ours and s not in escaped and s not in used and s not in outs:
                shape, dt, contig = meta[s]
                if contig:
                    pool.setdefault((shape, dt), []).append(s)
    return decision
