"""compile_nodes: a captured node list -> one generated Python module ("output code") and its call.

Pipeline: lowering (lowering.py: pointwise scalar programs, BLAS matmuls, externs) -> CSE and DCE
-> fusion (scheduler.fuse) -> buffer plan (scheduler.plan) -> kernel sources (codegen.py), loaded
through runtime.load_module (numba's disk cache hits across processes) -> the output-code module:
imports, the kernels' sources, `call(...)` (straight-line: unwrap `._np` once, kernels, externs
through op.call, wrap outputs) and `benchmark_compiled_module()`.

The callable has compile_replay's convention: positional slot values in, a tuple out; `.source`
is the module text, `.kernels`/`.externs` count what it calls. Anything that cannot be lowered
runs as an extern call to op.call inside the generated code, so every graph compiles; graphs
touching non-CPU tensors are replayed (ember._dynamo.codegen.compile_replay); a graph with a
symbolic size is replayed except at the sizes compiled for it (BySize).

Where it is used: ember.compile's "inductor" backend compiles AOT autograd's forward and backward
graphs with grad0=None (no autograd inside), and every other segment (inference graphs, and
segments AOT autograd does not take: a whole training step with backward() and the optimizer
inside) with grad0 = the segment's grad mode: nodes that autograd must record run as externs under
their own grad mode, the rest as kernels. In a training step the forward's nodes need no recording
where the step's own backward() consumed their graph (`consumed`, from the capture).

What is lowered (lowering.py, steps.py): pointwise ops (fused into numba or NumPy kernels), in-place
pointwise ops (kernels writing the tensor's own memory), mm/addmm/bmm/matmul (np.matmul on the
calling thread into a planned buffer, the bias and activation in the next kernel), views that only
kernels read (NumPy views, no dispatcher), sum/mean/amax/amin/softmax/log_softmax and the softmax
backwards (NumPy statements into a planned buffer; not yet fused with their prologue), and as
steps: nll_loss's CPU kernels on arrays, AccumulateGrad's first copy, `.grad = None`.

mode="reduce-overhead": intermediate buffers that never escape are allocated once, when the graph
is compiled, and reused by every call (no allocation in call); outputs are fresh arrays each call,
so a returned tensor is never overwritten by a later call. mode="max-autotune" also times each
kernel's variants (autotune.py); "max-autotune-no-cudagraphs" does that without the static buffers.
"""
import re

import numpy as np

from ember._dynamo import codegen as _cg
from ember._dynamo import capture as _cap
from ember._dynamo.capture import Ref, Sym
from ember._inductor import autotune, codegen, config, ir, lowering, runtime, scheduler, steps
from ember.core import dtype as _dt, tls
from ember.autograd import profiler as _profiler
from ember.autograd.graph import freed_history, release_graph
from ember.kernels.cpu import linalg as _linalg
from ember.kernels.cpu.copy import empty_laid_out as _empty_laid_out
from ember.core.tensor_impl import wrap_cpu

_HALF = (_dt.float16, _dt.bfloat16)
stats = {"graphs": 0, "kernels": 0, "externs": 0, "fallbacks": 0}


class _Seg:
    def __init__(self, nodes, grad0=True):
        self.nodes, self.grad0 = nodes, grad0


def _is_tensor(v):
    return v is not None and hasattr(v, "_shape") and hasattr(v, "_dtype")


def _cpu_ok(v):
    dev = getattr(v, "_device", None)
    return getattr(dev, "type", None) == "cpu" and getattr(v, "_np", None) is not None


def _replay(nodes, ins, outs, name, why, grad0=None):
    stats["fallbacks"] += 1
    fn = _cg.compile_replay(_Seg(nodes, grad0), ins, outs, name, grad_toggles=grad0 is not None)
    fn.source = f"# inductor: replayed through the dispatcher ({why})\n" + fn.source
    fn.kernels = 0
    return fn


def _compile_cuda(nodes, ins, outs, values, name, grad0):
    """A graph on a CUDA device: fused numba.cuda kernels (cuda_codegen), or the replay."""
    from ember._inductor import cuda_codegen  # lazy: only graphs on CUDA tensors
    if any(s is None for s in ins) or any(s is None for s in outs):
        return _replay(nodes, ins, outs, name, "a size input or output", grad0)
    try:
        fn = cuda_codegen.compile_graph(nodes, ins, outs, values, name, grad0)
    except cuda_codegen.NotFlat as e:
        return _replay(nodes, ins, outs, name, f"CUDA: {e}", grad0)
    stats["graphs"] += 1
    stats["kernels"] += fn.kernels
    stats["externs"] += fn.externs
    return fn


def _out_slots(out):
    return _cg._out_slots(out)


def empty_buffer(shape, strides, npd):
    """A zero-size output buffer with torch's strides, recorded (see core/tensor_impl.py)."""
    return _empty_laid_out(shape, strides, np.dtype(npd))


def _contig(arr):
    return arr.flags.c_contiguous


def compile_nodes(nodes, ins, outs, values, name, mode=None, options=None, grad0=None, consumed=(), release=()):
    """A callable (positional slot values -> tuple) computing `outs` from `ins` with fused kernels.

    grad0=None: the graph runs without autograd (an inference segment, or AOT autograd's forward
    and backward graphs). grad0=True/False: the segment's grad mode, with each node's own (n.grad)
    kept: a node recorded with grad mode on over a tensor that requires grad runs as an extern
    through the dispatcher (Autograd records it, as in eager), under that node's grad mode; the
    rest (a whole training step's backward and optimizer ops) is lowered as usual.

    consumed: indices of nodes whose autograd graph the step's own backward() consumed (capture's
    Segment.consumed): they run without autograd, lowered like the rest, and those of the outputs
    that required grad in eager get a stand-in grad_fn (CompiledFunctionBackward: backward through
    it raises eager's "backward through the graph a second time"). release: nodes that record, whose
    graph the step's backward freed in eager: the call frees their saved tensors at its end."""
    ins, outs = list(ins), list(outs)
    use_numba = runtime.have_numba()
    # --- can this graph be compiled at all?
    for n in nodes:
        if not hasattr(n.op, "schema") or not hasattr(n.op, "call"):
            return _replay(nodes, ins, outs, name, "an op without a schema", grad0)
        if any(isinstance(x, Sym) for x in _slots_in_args(n.args)):
            return _replay(nodes, ins, outs, name, "symbolic sizes", grad0)
        for s in _cg.template_slots(n.args, []) + _out_slots(n.out):
            v = values[s] if s < len(values) else None
            if _is_tensor(v) and not _cpu_ok(v):
                if getattr(getattr(v, "_device", None), "type", None) == "cuda":
                    return _compile_cuda(nodes, ins, outs, values, name, grad0)
                return _replay(nodes, ins, outs, name, "a tensor that is not on the CPU", grad0)
    for s in ins:
        if s is None:
            return _replay(nodes, ins, outs, name, "a size input", grad0)
        v = values[s] if s < len(values) else None
        if not _is_tensor(v):
            return _replay(nodes, ins, outs, name, "a non-tensor input", grad0)
    for s in outs:
        if s is None or not _is_tensor(values[s] if s < len(values) else None):
            return _replay(nodes, ins, outs, name, "a non-tensor output", grad0)
    vals = list(values)
    # --- lowering
    items = []
    made_by = {}
    for k, n in enumerate(nodes):
        for s in _out_slots(n.out):
            made_by[s] = k

    def needs_grad(s):   # at replay: what a consumed node makes does not require grad
        return getattr(vals[s], "requires_grad", False) and made_by.get(s) not in consumed
    recorded = [grad0 is not None and n.grad and k not in consumed and n.op is not _cap.SET_GRAD and any(
        needs_grad(s) for s in _cg.template_slots(n.args, [])) for k, n in enumerate(nodes)]
    no_grad = {id(nodes[k]) for k in consumed}
    freed = set()
    for k in consumed:
        for s in _out_slots(nodes[k].out):
            if s in outs and getattr(vals[s], "requires_grad", False):
                freed.add(s)
    if any(recorded) or consumed:
        # A whole training step (backward and optimizer inside the graph): its kernels are the
        # backward's and optimizer's small pointwise ops, whose numerics feed the next step's
        # forward; the NumPy generator runs eager's own ufuncs (np.exp...), so a long training
        # run follows eager's losses step for step (numba's polynomial exp, 1 ulp off NumPy's,
        # drifts a CNN's loss by 1.1e-4 relative after 174 SGD steps). A kernel of exact operations
        # only (+ - * / sqrt, comparisons, selects, casts: IEEE-rounded the same way in a numba
        # loop without fast-math as in a ufunc) is still a numba loop: one pass, not one per op.
        exact_numba = use_numba
        use_numba = False
    else:
        exact_numba = False
    graph_ins = set(ins)
    for n, autograd in zip(nodes, recorded):
        pyop = isinstance(n.op, _cap.PyOp)
        low = None if (pyop or autograd) else lowering.lower(n, vals, numpy_only=not use_numba)
        if low is None and not autograd and (grad0 is None or id(n) in no_grad or not n.grad or n.op is _cap.SET_GRAD):
            low = steps.lower_step(n, vals)
        if low is None and not autograd and not pyop:
            low = lowering.lower_inplace(n, vals, graph_ins, numpy_only=not use_numba)
        if low is None:
            reads = [s for s in _cg.template_slots(n.args, [])]
            writes = pyop or any(sa.is_write for sa in n.op.schema.arguments) or bool(
                getattr(n.op.schema, "is_mutable", False))
            items.append(ir.Extern(n, reads, _out_slots(n.out), writes))
        elif low.kind == "matmul" and low.bias is not None:
            # addmm: the BLAS product into a new slot, the bias added by the epilogue kernel
            p = len(vals)
            vals.append(ir.Meta(low.shape, low.dtype, np.empty(low.shape, low.dtype.np)))
            mm = ir.MatMul(p, low.shape, low.dtype, low.a, low.b, None, "addmm")
            c = lowering._Ctx(vals)
            r = lowering._binary("add")(c, low.dtype, Ref(p), Ref(low.bias))
            items.append(mm)
            items.append(ir.Pointwise(low.out, low.shape, low.dtype, c.loads, c.prims, r, "addmm.bias"))
        else:
            items.append(low)
    # inputs written in place are stored like outputs: never dropped, merged or pooled
    written = {it.out for it in items if it.kind == "pointwise" and it.inplace}
    graph_outs = set(outs) | written
    alias = {}
    items = scheduler.cse(items, alias, graph_outs)
    items = scheduler.dce(items, graph_outs)
    items = _views_to_externs(items, graph_outs)

    def itemsize(s):
        return vals[s]._dtype.itemsize
    seq = scheduler.fuse(items, graph_outs, itemsize, row_ok=use_numba and config.fuse_reductions)
    # --- layout facts
    meta = {}
    for e in seq:
        outs_e = [getattr(e, "out", None)]
        if isinstance(e, scheduler.Kernel):
            outs_e = e.outs + ([e.reduction.out] if e.reduction is not None else [])
        for s in outs_e:
            if s is None or isinstance(e, ir.Extern):
                continue
            v = vals[s]
            contig = s >= len(values) or _contig(v._np)
            meta[s] = (tuple(v._shape), lowering.compute_np(v._dtype), contig)
    # max-autotune: CUDA graphs in torch; on ember's CPU the same static buffers as reduce-overhead
    ro = mode in ("reduce-overhead", "max-autotune")
    decision = scheduler.plan(seq, ins, graph_outs, meta, reduce_overhead=ro)
    free = [s for k in sorted(release) for s in _out_slots(nodes[k].out)
            if getattr(vals[s], "grad_fn", None) is not None]
    tune = mode in ("max-autotune", "max-autotune-no-cudagraphs")
    opts = _EmitOptions(use_numba=use_numba, exact_numba=exact_numba, reduce_overhead=ro, tune=tune, grad0=grad0,
                        no_grad=no_grad, freed=freed, free=free, written=written)
    return _emit(seq, ins, outs, vals, alias, decision, meta, name, opts)


def _views_to_externs(items, graph_outs):
    """A view whose value an extern reads or the graph returns needs the dispatcher's view (a
    Tensor sharing its base's storage and version counter): it stays an extern."""
    while True:
        ext_reads = set(graph_outs)
        for it in items:
            if it.kind == "extern":
                ext_reads.update(it.reads())
            elif it.kind == "step":
                ext_reads.update(it.as_tensor)
        changed = False
        for k, it in enumerate(items):
            if it.kind == "view" and it.out in ext_reads:
                n = it.node
                items[k] = ir.Extern(n, _cg.template_slots(n.args, []), _out_slots(n.out), False)
                changed = True
        if not changed:
            return items


def _slots_in_args(args):
    out = []

    def walk(a):
        if isinstance(a, Sym):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            for e in a:
                walk(e)
    walk(args)
    return out


def _layout(arr):
    """('C', None) for a C-contiguous array, ('P', perm) for a dense permutation of one, else None."""
    if arr.flags.c_contiguous:
        return ("C", None)
    shape, strides = arr.shape, arr.strides
    perm = sorted(range(arr.ndim), key=lambda d: (-strides[d], d))
    expect = arr.itemsize
    for d in reversed(perm):
        if shape[d] != 1 and strides[d] != expect:
            return None
        expect *= shape[d]
    return ("P", perm)


class _EmitOptions:
    """What compile_nodes decided for the output code: use_numba (numba kernels for everything),
    exact_numba (a training graph: numba only for exact kernels), reduce_overhead (static buffers),
    tune (max-autotune), grad0 (the graph's grad mode, None: no autograd inside), no_grad (ids of
    nodes that run without autograd: consumed by the step's backward), freed (outputs that get a
    CompiledFunctionBackward), free (tensors whose graph the call frees at its end), written (slots
    written in place by kernels)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _emit(seq, ins, outs, vals, alias, decision, meta, name, opts):
    use_numba, exact_numba, ro, tune, grad0 = (opts.use_numba, opts.exact_numba, opts.reduce_overhead, opts.tune,
                                               opts.grad0)
    no_grad, freed, free, written = opts.no_grad, opts.freed, opts.free, opts.written
    graph_ins = set(ins)
    g = {"np": np, "wrap_cpu": wrap_cpu, "_bf16": _dt.bfloat16.np, "_set_grad": _cg._set_grad,
         "_freed_history": freed_history, "_release": release_graph, "_matmul": _linalg.matmul_out,
         "_empty": empty_buffer}
    cur_grad = [grad0, False]      # the grad mode the generated code is in; whether it ever changes
    ext_names = {}
    step_names = {}
    tune_report = []
    kern_srcs = []
    have_arr, have_f, have_t = set(), set(), set(ins)
    static = {}
    body = []
    n_kernels = n_externs = 0

    def tname(s):
        return f"v{s}"

    def empty_strides(s):
        """torch's strides of slot s where it has no elements (its example value's), else None:
        NumPy's empty arrays report their own strides (core/tensor_impl.py, empty_geometry), so a
        zero-size buffer the code allocates is laid out and recorded as eager's result was."""
        v = vals[s]
        if 0 not in tuple(v._shape) or not hasattr(v, "stride"):
            return None
        return tuple(v.stride())

    def need_tensor(s):
        if s in have_t:
            return tname(s)
        if vals[s]._dtype in _HALF and s not in have_arr:
            st = empty_strides(s)
            if st is not None:  # astype would lose the empty buffer's recorded strides
                body.append(f"    a{s} = _empty({tuple(vals[s]._shape)!r}, {st!r}, "
                            f"{_np_name(vals[s]._dtype)})")
            else:
                body.append(f"    a{s} = f{s}.astype({_np_name(vals[s]._dtype)})")
            have_arr.add(s)
        body.append(f"    v{s} = wrap_cpu(a{s})")
        have_t.add(s)
        return tname(s)

    def need_kernel_arr(s):
        """The compute-dtype array of slot s."""
        half = vals[s]._dtype in _HALF
        if half:
            if s in have_f:
                return f"f{s}"
            if s not in have_arr:
                body.append(f"    a{s} = v{s}._np")
                have_arr.add(s)
            body.append(f"    f{s} = a{s}.astype(np.float32)")
            have_f.add(s)
            return f"f{s}"
        if s not in have_arr:
            body.append(f"    a{s} = v{s}._np")
            have_arr.add(s)
        return f"a{s}"

    def alloc(s):
        """Statement(s) giving the compute-dtype output array of slot s; returns its name."""
        if s in written and (s in have_arr or s in have_t):
            return need_kernel_arr(s)      # written in place: its own memory
        v = vals[s]
        shape = tuple(v._shape)
        cdt = lowering.compute_np(v._dtype)
        half = v._dtype in _HALF
        var = f"f{s}" if half else f"a{s}"
        kind, root = decision.get(s, ("fresh", None))
        st = empty_strides(s)
        if st is not None:  # zero-size: eager's strides, recorded (costs no memory, shares nothing)
            body.append(f"    {var} = buf{s} = _empty({shape!r}, {st!r}, {_np_name_np(cdt)})")
        elif kind == "reuse":
            body.append(f"    {var} = buf{root}  # reuses the buffer of v{root}")
        elif kind == "static":
            arr = np.empty(shape, cdt)
            static[f"static{s}"] = arr
            body.append(f"    {var} = buf{s} = static{s}  # allocated once (reduce-overhead)")
        else:
            lay = _layout(v._np) if s < len(vals) and isinstance(v._np, np.ndarray) else ("C", None)
            if lay is None or lay[0] == "C":
                body.append(f"    {var} = buf{s} = np.empty({shape!r}, {_np_name_np(cdt)})")
            else:
                perm = lay[1]
                inv = [perm.index(d) for d in range(len(perm))]
                pshape = tuple(shape[d] for d in perm)
                body.append(f"    {var} = buf{s} = np.empty({pshape!r}, {_np_name_np(cdt)}).transpose({tuple(inv)!r})")
        (have_f if half else have_arr).add(s)
        return var

    for e in seq:
        if isinstance(e, scheduler.Kernel):
            in_meta = {}
            for s in e.ins:
                v = vals[s]
                arr = v._np
                in_meta[s] = (tuple(v._shape), bool(arr.flags.c_contiguous) if isinstance(arr, np.ndarray) else True)
            red = e.reduction
            out_contig = all(_out_is_c(s, decision, vals) for s in e.outs)
            flat = codegen.flat_ok(e, in_meta, out_contig)
            numel = 1
            for d in e.shape:
                numel *= d
            # the row loop accumulates sequentially (float64, not vectorised): worth it while the
            # per-call overhead of a separate reduction dominates, not for large tensors
            fuse_red = (red is not None and red.row is not None and use_numba and flat
                        and numel <= (config.fuse_softmax_max_numel if red.row[0] in ("softmax", "log_softmax")
                                      else config.fuse_reductions_max_numel))
            if red is not None and not fuse_red and red.reads()[0] not in e.outs:
                e.outs.append(red.reads()[0])        # the reduction runs after the kernel, from memory
                flat = codegen.flat_ok(e, in_meta, all(_out_is_c(s, decision, vals) for s in e.outs))
            numel = 1
            for d in e.shape:
                numel *= d
            nb_ok = use_numba or (exact_numba and red is None and numel >= config.exact_numba_min_numel
                                  and codegen.exact(e))
            parallel = nb_ok and numel >= config.parallel_threshold and config.threads() > 1
            variants = [("numba" + (" parallel" if parallel else ""), nb_ok, parallel, None)] if nb_ok else [
                (f"numpy block {config.numpy_block}", False, False, config.numpy_block)]
            if tune:
                variants = autotune.variants(e, nb_ok, use_numba, fuse_red, flat, numel, variants[0])
            srcs = [(label, nb, codegen.numba_source(e, in_meta, flat, par, red if fuse_red else None) if nb
                     else codegen.numpy_source(e, in_meta, flat, block)) for label, nb, par, block in variants]
            k = n_kernels
            n_kernels += 1
            kname = f"kernel{k}"
            ops = ", ".join(m.origin for m in e.members) + (f", {red.origin}" if fuse_red else "")
            tuned = ""
            if len(srcs) > 1:
                pick, tuned = autotune.pick(srcs, e, vals, red if fuse_red else None, f"{name}_{kname}", ops)
                tune_report.append(pick)
            label, nb, src = srcs[0] if not tuned else next(v for v in srcs if v[0] == tune_report[-1]["choice"])
            kern_srcs.append((kname, src, ops + tuned, e, nb))
            arg_in = [need_kernel_arr(s) for s in e.ins]
            arg_out = [alloc(s) for s in e.outs]
            if fuse_red:
                arg_out.append(alloc(red.out))
                arg_in.append(str(red.row[1]))
            body.append(f"    {kname}({', '.join(arg_out + arg_in)})  # {ops}")
            for m in e.members:
                if m.inplace and (m.out in graph_ins or m.out in outs or m.out in have_t):
                    # the version bump of each in-place op on a tensor (a view's goes to its
                    # base's counter), as ADInplaceOrView makes it; the graph's own arrays have
                    # no counter and no observers
                    body.append(f"    {need_tensor(m.out)}._bump_version()")
            if red is not None and not fuse_red:
                ins_ = [need_kernel_arr(s) for s in red.reads()]
                o = alloc(red.out)
                for j, ln in enumerate(red.lines):
                    body.append(f"    {ln.format(*ins_, o=o)}" + (f"  # {red.origin}" if j == 0 else ""))
        elif isinstance(e, ir.View):
            body.append(f"    a{e.out} = {need_kernel_arr(e.src)}{e.expr}  # {e.origin}")
            have_arr.add(e.out)
        elif isinstance(e, ir.NpOp):
            ins_ = [need_kernel_arr(s) for s in e.reads()]
            o = alloc(e.out)
            for k, ln in enumerate(e.lines):
                body.append(f"    {ln.format(*ins_, o=o)}" + (f"  # {e.origin}" if k == 0 else ""))
        elif isinstance(e, ir.MatMul):
            a, b = need_kernel_arr(e.a), need_kernel_arr(e.b)
            o = alloc(e.out)
            body.append(f"    _matmul({a}, {b}, {o})  # {e.origin}")
        elif isinstance(e, ir.Step):
            g[e.name] = e.fn
            step_names[e.name] = f"{e.fn.__module__}.{e.fn.__name__}"

            def sarg(a, e=e):
                if isinstance(a, Ref):
                    s = alias.get(a.i, a.i)
                    return need_tensor(s) if s in e.as_tensor else need_kernel_arr(s)
                if isinstance(a, (list, tuple)):
                    return "(" + "".join(sarg(x) + ", " for x in a) + ")"
                return _cg._lit(a, g)
            call = f"{e.name}({', '.join(sarg(a) for a in e.args)})"
            if grad0 is not None and cur_grad[0] is not False and e.name != "_set_grad_none":
                body.append("    _set_grad(False)")
                cur_grad[0] = False
                cur_grad[1] = True
            p = "v" if e.out_tensor else "a"
            lhs = "".join(f"{p}{s}, " for s in e.outs)
            body.append(f"    {lhs[:-2] + ' = ' if len(e.outs) == 1 else lhs + '= ' if e.outs else ''}{call}"
                        f"  # {e.origin}")
            for s in e.outs:
                (have_t if e.out_tensor else have_arr).add(s)
                (have_arr if e.out_tensor else have_t).discard(s)
                have_f.discard(s)
        else:
            n = e.node
            n_externs += 1
            on = f"{str(n.op.name)}_{n.op.overload or 'default'}"
            g[on] = n.op.call
            ext_names[on] = str(n.op)

            call = f"{on}({', '.join(_cg.extern_arg(a, lambda s: need_tensor(alias.get(s, s)), g) for a in n.args)})"
            ng = False if id(n) in no_grad else n.grad
            if grad0 is not None and ng is not cur_grad[0]:
                body.append(f"    _set_grad({ng})")
                cur_grad[0] = ng
                cur_grad[1] = True
            out = n.out
            body.append(_cg.assign(out, call))
            if e.writes:
                for s in e.reads():
                    have_f.discard(s)
            for s in _out_slots(out):
                have_t.add(s)
                have_arr.discard(s)
                have_f.discard(s)
    rets = [need_tensor(alias.get(s, s)) for s in outs]
    if free:
        body.append(f"    _release({', '.join(need_tensor(alias.get(s, s)) for s in free)})"
                    "  # the step's backward() freed their graph")
    for s, r in zip(outs, rets):
        if s in freed:
            body.append(f"    _freed_history({r})  # its graph was consumed by the step's backward()")
    body.append(f"    return ({''.join(r + ', ' for r in rets)})")
    body = _free_dead(body, {f"v{i}" for i in ins})
    if cur_grad[1]:
        # grad mode is the caller's again however the call ends (an op may raise)
        body = ["    try:"] + ["    " + ln for ln in body] + ["    finally:", f"        _set_grad({grad0})"]
    # load the kernels
    ksections = []
    for kname, src, ops, e, nb in kern_srcs:
        mod = runtime.load_module(src, f"{'nb' if nb else 'np'}_{name}_{kname}")
        g[kname] = mod.kernel
        ksections.append(f"# {kname}: {ops}\n# shape {e.shape}, reads {['v%d' % s for s in e.ins]}, "
                         f"writes {['v%d' % s for s in e.outs]}, saves {e.saved_bytes} bytes of traffic\n"
                         f"{kname} = load_module('''\n{src}''', {kname!r}).kernel\n")
    g.update(static)
    params = ", ".join(f"v{i}" for i in ins)
    fn_src = f"def call({params}):\n" + "\n".join(body) + "\n"
    knames = [k for k, *_ in kern_srcs]
    if knames:
        # a profiler with with_dispatch_layers=True sees each kernel as a span: a second copy of
        # call() does that, so the plain one pays one test per call
        g["_prof"], g["_kernel_span"] = _profiler, _profiler._kernel_span
        fn_src = (f"def call({params}):\n    if _prof._current is not None:  # a profiler records: kernel spans\n"
                  f"        return call_traced({params})\n" + "\n".join(body) + "\n\n\n"
                  f"def call_traced({params}):\n" + "\n".join(_with_kernel_spans(body, knames, name)) + "\n")
    exec(compile(fn_src, f"<ember inductor {name}>", "exec"), g)
    fn = g["call"]
    header = (f"# ember inductor output code for {name}: {n_kernels} kernel(s) "
              f"({'numba' if use_numba else 'numpy, exact ones numba' if exact_numba else 'numpy'}), "
              f"{n_externs} extern call(s)"
              f"{', reduce-overhead' if ro else ''}\n"
              "import numpy as np\n\nimport ember\nfrom ember._inductor.runtime import load_module\n"
              "from ember.core.tensor_impl import wrap_cpu\n"
              "from ember.autograd.graph import freed_history as _freed_history, release_graph as _release\n"
              "from ember.kernels.cpu.linalg import matmul_out as _matmul\n"
              "from ember._inductor.compile_fx import empty_buffer as _empty\n"
              "from ember._dynamo.codegen import _set_grad\n"
              + ("from ember.autograd import profiler as _prof\n_kernel_span = _prof._kernel_span\n" if knames else "")
              + "\n_bf16 = ember.bfloat16.np\n")
    ext_src = "".join(f"{k} = ember.ops.{p}.call\n" if p.startswith("aten.") else f"# {k}: {p}.call\n"
                      for k, p in sorted(ext_names.items()))
    ext_src += "".join(f"from {p.rsplit('.', 1)[0]} import {p.rsplit('.', 1)[1]} as {k}\n"
                       for k, p in sorted(step_names.items()))
    consts = "".join(f"{k} = {_const_src(v)}\n" for k, v in sorted(g.items()) if k[:1] == "k" and k[1:].isdigit())
    statics = consts + "".join(f"{k} = np.empty({v.shape!r}, np.{v.dtype.name})\n" for k, v in static.items())
    bench = _bench_src(ins, vals)
    source = (header + ext_src + ("\n" if ext_src else "") + "\n".join(ksections) + "\n" + statics + "\n"
              + fn_src + bench)
    fn.source = source
    fn.kernels = n_kernels
    fn.externs = n_externs
    fn.autotune = tune_report
    stats["graphs"] += 1
    stats["kernels"] += n_kernels
    stats["externs"] += n_externs
    return fn


class BySize:
    """A graph with a symbolic size, as ember.compile calls it (positional slot values, the size
    at `pos`): at a size a capturing run has checked, the graph compiled for that size (its kernels
    come from the kernel cache: no numba compile); at any other, the symbolic replay (`generic`).
    Up to `limit` sizes."""
    limit = 8

    def __init__(self, generic, pos):
        self.generic, self.pos, self.fns = generic, pos, {}
        self.source = generic.source
        self.kernels = 0

    def add(self, size, fn):
        if len(self.fns) < self.limit:
            self.fns[size] = fn

    def __call__(self, *args):
        f = self.fns.get(args[self.pos])
        if f is None:
            return self.generic(*args)
        p = self.pos
        return f(*args[:p], *args[p + 1:])


def _with_kernel_spans(body, knames, graph):
    """body with each kernel call inside `with _kernel_span("<graph>.<kernel>"):`."""
    out = []
    for ln in body:
        st = ln.lstrip()
        k = next((k for k in knames if st.startswith(k + "(")), None)
        if k is None:
            out.append(ln)
            continue
        ind = ln[:len(ln) - len(st)]
        out.append(f'{ind}with _kernel_span("{graph}.{k}"):')
        out.append(f"{ind}    {st}")
    return out


_NAME = re.compile(r"\b(?:a|f|v|buf)\d+\b")


def _free_dead(body, params):
    """`del` each local array/tensor name after the line that uses it last, as Inductor's output
    code frees its buffers: arrays held to the return made each call take fresh pages from the
    OS once the graph's temporaries outgrew the allocator's reuse (a replayed 1M-element chain
    ran 17 ms against eager's 3.8 ms for that reason)."""
    last = {}
    for k, ln in enumerate(body):
        for nm in _NAME.findall(ln.split("  #", 1)[0]):
            last[nm] = k
    ret = len(body) - 1
    dies = {}
    for nm, k in last.items():
        if k < ret and nm not in params:
            dies.setdefault(k, []).append(nm)
    out = []
    for k, ln in enumerate(body):
        out.append(ln)
        if k in dies:
            out.append(f"    del {', '.join(sorted(dies[k]))}")
    return out


def _const_src(v):
    """Source for a constant argument of an extern (dtype, device, ...) where its repr evaluates."""
    import ember  # lazy: the public namespace, only to check a repr
    r = repr(v)
    try:
        if eval(r, {"ember": ember, "device": ember.device}) == v:
            return r
    except Exception:
        pass
    return f"None  # {r} (not expressible as source; the compiled call holds the object)"


def _out_is_c(s, decision, vals):
    if decision.get(s, ("fresh", None))[0] != "fresh":
        return True
    lay = _layout(vals[s]._np)
    return lay is None or lay[0] == "C"


def _np_name(d):
    if d is _dt.bfloat16:
        return "_bf16"
    return f"np.{d.np.name}"


def _np_name_np(npd):
    return f"np.{np.dtype(npd).name}"


def _bench_src(ins, vals):
    args = []
    for s in ins:
        v = vals[s]
        args.append(f"ember.randn({tuple(v._shape)!r}).to(ember.{v._dtype.name})" if v._dtype.is_floating_point
                    else f"ember.zeros({tuple(v._shape)!r}, dtype=ember.{v._dtype.name})")
    return ("\n\ndef benchmark_compiled_module(times=10, repeat=10):\n"
            "    import timeit\n"
            f"    args = [{', '.join(args)}]\n"
            "    t = min(timeit.repeat(lambda: call(*args), number=times, repeat=repeat)) / times\n"
            "    print(f'{t * 1e6:.1f} us per call')\n"
            "    return t\n\n\n"
            "if __name__ == '__main__':\n"
            "    benchmark_compiled_module()\n")


def compile_backward(nodes, ins, outs, values, name, mode, options, replay):
    """The backward graph compiled; under grad mode (backward with create_graph=True) it replays
    through the dispatcher so the gradient's own graph is recorded."""
    fn = compile_nodes(nodes, ins, outs, values, name, mode, options)
    if fn.kernels == 0 and getattr(fn, "externs", 0) == 0:
        return replay
    current = tls.current

    def backward(*args):
        if current()._grad:
            return replay(*args)
        return fn(*args)
    backward.source = fn.source
    backward.kernels = fn.kernels
    backward.compiled = fn
    return backward
