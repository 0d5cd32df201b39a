"""AOT autograd for ember.compile's "aot_eager" and "inductor" backends (torch/_functorch/aot_autograd.py).

For one captured segment whose inputs require grad:

1. Trace the joint graph: replay the segment's forward on fresh leaves (detached aliases of the
   inputs that require grad) under the capture recorder with autograd on, then run
   `ember.autograd.grad(outputs, leaves, tangents)` under the same recorder. The recorder sits at
   the Python key, below Autograd, so the forward ops and the ops the backward formulas call are
   written into one joint trace: forward nodes over the inputs, backward nodes over forward values
   and the tangents. The global RNG state is restored afterwards, so tracing draws no numbers a
   later eager op would have drawn.
2. Partition it (partitioners.py): the forward graph returns the user's outputs plus the values
   the backward reads; the default partitioner saves what eager saves (exactly the forward values
   the backward formulas used); min_cut_rematerialization_partition (config.use_min_cut_partitioner
   or options={"partitioner": "min_cut"}) saves a minimum cut and recomputes the rest. The
   returned callable tells what was chosen: .partitioner, .saved_values, .saved_bytes,
   .default_saved_bytes, .recomputed.
3. Wrap the pair as one autograd Function named CompiledFunction: autograd sees a single node,
   CompiledFunctionBackward. Its forward runs the forward graph with grad mode off; its backward
   runs the backward graph (with grad mode as the engine set it, so create_graph works through
   ordinary ops).

Segments that write in place to their inputs or captured tensors, whose backward reaches tensors
outside the segment, or whose joint trace fails, fall back to replaying the segment through
the dispatcher with Autograd (the "eager" backend's path), and the reason is logged under
EMBER_LOGS=aot_graphs.
"""
import ember
from ember._dynamo import logs
from ember._dynamo import capture as _cap
from ember._dynamo import codegen as _cg
from ember._dynamo.capture import Ref, Segment
from ember._functorch import partitioners
from ember.autograd.function import Function
from ember.core import tls

_st = tls.current


class _Fallback(Exception):
    pass


def _trace_joint(seg, example, replay):
    """Run the segment's forward and backward under the recorder; return the joint trace."""
    from ember.core import generator as _gen
    leaves = []
    ins = []
    for v in example:
        if isinstance(v, ember.Tensor) and v.requires_grad:
            x = v.detach()
            x.requires_grad_(True)
            leaves.append(x)
            ins.append(x)
        else:
            ins.append(v)
    rng = _gen.get_rng_state()
    rec = _cap.Recorder([x for x in ins if isinstance(x, ember.Tensor)], True)
    rec.match_aliases = True
    w_ins = [rec.slot.get(id(x)) if isinstance(x, ember.Tensor) else None for x in ins]
    try:
        from ember.dispatch import python_key as _pk
        _pk.push_dispatch_mode(rec)
        try:
            with ember.enable_grad():
                outs = replay(*ins)
            n_fw = len(rec.seg.nodes)
            diff = [(k, o) for k, o in enumerate(outs) if isinstance(o, ember.Tensor) and o.requires_grad]
            rec.active = False
            tangents = [ember.ones_like(o) for _, o in diff]
            rec.active = True
            for t in tangents:
                rec._new(t, "tangent")
            if diff:
                grads = ember.autograd.grad([o for _, o in diff], leaves, grad_outputs=tangents,
                                            allow_unused=True, retain_graph=False)
            else:
                grads = [None] * len(leaves)
        finally:
            modes = _st().dispatch_modes
            if modes and modes[-1] is rec:
                _pk.pop_dispatch_mode()
    finally:
        _gen.set_rng_state(rng)
    if rec.seg.brk is not None or len(rec.segments) > 1:
        raise _Fallback("a data-dependent value inside the joint graph")
    if rec.consts and any(rec.kind[s] == "const" for s in rec.consts):
        raise _Fallback("the backward reached tensors outside the segment")
    nodes = rec.seg.nodes
    return rec, nodes[:n_fw], nodes[n_fw:], w_ins, outs, diff, tangents, leaves, grads


class _Joint:
    """The joint trace as partitioners see it."""

    def __init__(self, rec, fw_nodes, bw_nodes, in_slots, out_slots, tangent_slots, grad_slots, values):
        self.rec, self.fw_nodes, self.bw_nodes = rec, fw_nodes, bw_nodes
        self.in_slots, self.out_slots = in_slots, out_slots
        self.tangent_slots, self.grad_slots = tangent_slots, grad_slots
        self.values = values


def compile_segment(seg, example, replay, cf, names, values, dyn=None):
    """An aot_eager callable for `seg` (same signature as `replay`), or `replay` itself when the
    segment cannot be split.

    dyn = (position of the size argument, the example at another size): a segment with a symbolic
    size. The joint graph is traced at both sizes and its int arguments that follow the size
    become symbolic (capture.generalize), as the segment's own were."""
    if seg.impure and any(_writes_outside(n, seg) for n in seg.nodes):
        return _fallback(replay, "the segment writes in place to its inputs")
    try:
        rec, fw, bw, w_ins, outs, diff, tangents, leaves, grads = _trace_joint(seg, example, replay)
    except _Fallback as e:
        return _fallback(replay, str(e))
    in_slots = list(w_ins)
    size_pos = None
    if dyn is not None:
        size_pos, example0 = dyn
        try:
            rec0, fw0, bw0, *_ = _trace_joint(seg, example0, replay)
        except _Fallback as e:
            return _fallback(replay, str(e))
        S = len(rec.values)
        s0, s1 = example0[size_pos], example[size_pos]
        if len(rec0.values) != S:
            return _fallback(replay, "the joint graphs at two sizes differ")
        fw = _cap.generalize(fw0, fw, s0, s1, S)
        bw = _cap.generalize(bw0, bw, s0, s1, S)
        if fw is None or bw is None:
            return _fallback(replay, "the joint graphs at two sizes differ")
        in_slots[size_pos] = S
    out_slots = [rec.slot.get(id(o)) if isinstance(o, ember.Tensor) else None for o in outs]
    tangent_slots = [rec.slot[id(t)] for t in tangents]
    grad_slots = [rec.slot.get(id(g)) if g is not None else None for g in grads]
    joint = _Joint(rec, fw, bw, in_slots, out_slots, tangent_slots, grad_slots, rec.values)
    if any(s is None for s in out_slots) or any(s is not None and rec.kind[s] == "input" and False
                                                for s in grad_slots):
        return _fallback(replay, "an output that is not a tensor")
    choice = cf.options.get("partitioner") if getattr(cf, "options", None) else None
    if choice is None:
        choice = getattr(cf.backend, "_ember_partitioner", None)
    if choice is None:
        choice = "min_cut" if ember._dynamo.config.use_min_cut_partitioner else "default"
    if choice not in ("default", "min_cut"):
        raise ValueError(f"options['partitioner'] must be 'default' or 'min_cut', got {choice!r}")
    d_saved = partitioners.default_partition(joint)[2]
    part = (partitioners.min_cut_rematerialization_partition if choice == "min_cut"
            else partitioners.default_partition)
    partitioners.last_decision[0] = None
    fw_nodes, bw_nodes, saved = part(joint)
    decision = partitioners.last_decision[0]
    name = f"{cf._where()[0]}_{seg.index}"
    fseg = Segment(True)
    fseg.nodes = fw_nodes
    fw_ins = list(in_slots)
    fw_outs = list(out_slots) + list(saved)
    fw_fn = _cg.compile_replay(fseg, fw_ins, fw_outs, name + "_fw", grad_toggles=False)
    inductor = getattr(cf.backend, "_ember_inductor", False) and size_pos is None
    if inductor:
        from ember._inductor import compile_fx  # lazy: the code generator sits beside us
        fw_fn = compile_fx.compile_nodes(fw_nodes, fw_ins, fw_outs, rec.values, name + "_fw", cf.mode, cf.options)
    bseg = Segment(True)
    bseg.nodes = bw_nodes
    bw_ins = list(saved) + tangent_slots
    bw_size = size_pos is not None and _uses_sym(bw_nodes)
    if bw_size:
        bw_ins.append(in_slots[size_pos])
    bw_outs = [s for s in grad_slots if s is not None]
    bw_fn = _cg.compile_replay(bseg, bw_ins, bw_outs, name + "_bw", grad_toggles=False)
    if inductor:
        bw_fn = compile_fx.compile_backward(bw_nodes, bw_ins, bw_outs, rec.values, name + "_bw", cf.mode,
                                            cf.options, bw_fn)
    if logs.aot_joint_graph:
        jseg = Segment(True)
        jseg.nodes = fw + bw
        logs.emit("aot_joint_graph", "Joint graph:\n" + _cg.replay_source(jseg, [s for s in fw_ins if s is not None]
                                                                           + tangent_slots, bw_outs, False)[0])
    if logs.aot_graphs:
        logs.emit("aot_graphs", f"Forward graph:\n{fw_fn.source}\nBackward graph:\n{bw_fn.source}")
    if cf._debug():
        import os  # lazy: debug files only
        cf._write_debug(name + "_aot", None, "")
        d = cf.debug_dir
        jseg = Segment(True)
        jseg.nodes = fw + bw
        joint_src = _cg.replay_source(jseg, list(fw_ins) + tangent_slots, list(out_slots) + bw_outs, False)[0]
        for tag, src in (("forward", fw_fn.source), ("backward", bw_fn.source), ("joint", joint_src)):
            with open(os.path.join(d, f"{name}_{tag}_graph.py"), "w") as f:
                f.write(src)
    n_out = len(out_slots)
    grad_pos = []   # for each segment input: index into bw outputs, or None
    k = 0
    leaf_idx = [i for i, v in enumerate(example) if isinstance(v, ember.Tensor) and v.requires_grad]
    per_leaf = {}
    for j, i in enumerate(leaf_idx):
        if grad_slots[j] is not None:
            per_leaf[i] = k
            k += 1
    for i in range(len(example)):
        grad_pos.append(per_leaf.get(i))
    diff_pos = [kk for kk, _ in diff]
    run = _make_function(fw_fn, bw_fn, n_out, grad_pos, diff_pos, len(example), replay, in_slots,
                         size_pos if bw_size else None)
    # what the partition chose, for tests and debugging: the saved values (an input's position,
    # or the op that made it) and their bytes against the default partition's
    run.partitioner = choice
    run.partition_note = decision
    run.saved_values = [_describe(s, in_slots, fw + bw) for s in saved]
    run.saved_bytes = partitioners.saved_bytes(joint, saved)
    run.default_saved_bytes = partitioners.saved_bytes(joint, d_saved)
    fw_ids = {id(n) for n in fw}
    run.recomputed = [str(getattr(n.op, "_opname", n.op.name)) for n in bw_nodes if id(n) in fw_ids]
    if size_pos is not None:
        fw_sym, bw_sym = fw, bw

        def validate(example_at_size):
            """A size first seen: the joint graph traced there must be the symbolic one at it."""
            try:
                _r, fwn, bwn, *_ = _trace_joint(seg, example_at_size, replay)
            except _Fallback:
                return False
            sz = example_at_size[size_pos]
            return _cap.matches(fw_sym, fwn, sz) and _cap.matches(bw_sym, bwn, sz)
        run.validate = validate
    return run


def _describe(s, in_slots, nodes):
    if s in in_slots:
        return f"input{in_slots.index(s)}"
    for n in nodes:
        if s in partitioners._outs(n):
            return str(getattr(n.op, "_opname", n.op.name))
    return f"v{s}"


def _uses_sym(nodes):
    def has(a):
        if isinstance(a, _cap.Sym):
            return True
        if isinstance(a, (list, tuple)):
            return any(has(e) for e in a)
        return False
    return any(has(a) for n in nodes for a in n.args)


def _writes_outside(n, seg):
    for a, sa in zip(n.args, n.op.schema.arguments):
        if sa.is_write and isinstance(a, Ref):
            return True
    return False


def _fallback(replay, why):
    if logs.aot_graphs:
        logs.emit("aot_graphs", f"AOT autograd skipped ({why}): the segment replays through Autograd")
    return replay


def _make_function(fw_fn, bw_fn, n_out, grad_pos, diff_pos, n_in, replay, in_slots, size_pos=None):
    class CompiledFunction(Function):
        @staticmethod
        def forward(ctx, *args):
            r = fw_fn(*args)
            outs, saved = r[:n_out], r[n_out:]
            ctx.save_for_backward(*saved)
            if size_pos is not None:
                ctx.size = args[size_pos]
            nd = [o for k, o in enumerate(outs) if k not in diff_pos and isinstance(o, ember.Tensor)]
            if nd:
                ctx.mark_non_differentiable(*nd)
            return tuple(outs)

        @staticmethod
        def backward(ctx, *grads):
            saved = ctx.saved_tensors
            tg = []
            for k in diff_pos:
                g = grads[k]
                tg.append(g)
            r = bw_fn(*saved, *tg, ctx.size) if size_pos is not None else bw_fn(*saved, *tg)
            return tuple(r[p] if p is not None else None for p in grad_pos)

    def run(*args):
        if not _st()._grad:
            return replay(*args)
        return CompiledFunction.apply(*args)
    run.CompiledFunction = CompiledFunction
    run.forward_source = fw_fn.source
    run.backward_source = bw_fn.source
    return run


def aot_function(fn, fw_compiler=None, bw_compiler=None, partition_fn=None):
    """Not provided: ember's AOT autograd works on captured segments (ember.compile(backend="aot_eager"))."""
    raise NotImplementedError("ember._functorch.aot_autograd.aot_function is not implemented; use "
                              "ember.compile(fn, backend='aot_eager')")
