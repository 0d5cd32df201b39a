"""The inductor on CUDA tensors: fused pointwise kernels as numba.cuda sources.

A graph whose tensors all live on one CUDA device is lowered like a CPU graph, pointwise ops only
(lowering.lower(pointwise_only=True)): they fuse into scheduler Kernels, and each Kernel becomes a
`cuda.jit` grid-stride loop written from the same scalar program as the CPU numba kernels
(codegen._body), with math through the CUDA backend's namespace for the kernel's compute dtype
(libdevice's expf/tanhf/... on a GPU, NumPy's on numba's simulator: kernels/cuda/_launch.py).
Everything else (matmuls, reductions, views, ops autograd records) runs as an extern call through
the dispatcher, on the device. Outputs are fresh device tensors from the caching allocator,
launched on the device's current stream.

Outputs are contiguous; inputs are read flat when contiguous and full-size, once when they have one
element, else through i's coordinates and their strides (broadcast, transposed). A prim without a
CUDA rendering makes the whole graph fall back to the replay through the dispatcher
(compile_fx's `_replay`).
"""
import numpy as np

from ember._dynamo import capture as _cap
from ember._dynamo import codegen as _cg
from ember._inductor import codegen, ir, lowering, scheduler

_F16 = np.dtype(np.float16)
_FLOAT_NP = (np.dtype(np.float32), np.dtype(np.float64))
# prims computed by the CUDA namespace's functions (libdevice on a GPU)
_MATH = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh", "erf": "erf",
         "sqrt": "sqrt", "rsqrt": "rsqrt"}


class NotFlat(Exception):
    """A graph this generator cannot write: it is replayed instead."""


def _expr(p, a):
    n, dt = p.name, p.dt
    if n in _MATH:
        return f"{_MATH[n]}({a[0]})"
    if n == "sigmoid":
        one = codegen._const(1.0, dt)
        return f"({one} / ({one} + exp(-{a[0]})))"
    if n == "pow":
        return f"pow({a[0]}, {a[1]})"
    if n in codegen.EXACT_PRIMS or n in ("neg", "abs"):
        return codegen._scalar_expr(p, a, [False])
    raise NotFlat(f"prim {n}")


def kernel_source(k, in_meta):
    """cuda.jit source of scheduler Kernel k: kern(o0, o0o, ..., x0, x0o, ..., n), each operand a
    flat typed view and its offset. Outputs are contiguous; an input that is full-size and
    contiguous is read at i, a one-element input once, any other (broadcast, strided) through the
    coordinates of i and its strides (compile-time constants: 0 on broadcast dims)."""
    shape = tuple(k.shape)
    nd = len(shape)
    n = 1
    for d in shape:
        n *= d
    lines = ["    i = cuda.grid(1)", "    st = cuda.gridsize(1)"]
    load_names, loads, coords = {}, [], False
    for j, s in enumerate(k.ins):
        ishape, strides, contig, dt = in_meta[s]
        size = 1
        for d in ishape:
            size *= d
        cast = codegen._NPNAME[np.dtype(lowering.compute_np(dt))]
        if size == 1 and n != 1:
            lines.append(f"    l{j} = {cast}(x{j}[x{j}o])")
        elif size == n and contig:
            loads.append(f"        l{j} = {cast}(x{j}[x{j}o + i])")
        else:
            off = nd - len(ishape)
            terms = [f"c{off + d} * {strides[d]}" for d in range(len(ishape))
                     if ishape[d] != 1 and strides[d] != 0]
            loads.append(f"        l{j} = {cast}(x{j}[x{j}o" + "".join(f" + {t}" for t in terms) + "])")
            coords = True
        load_names[s] = f"l{j}"
    body, env = codegen._body(k, load_names, _expr)
    lines.append("    while i < n:")
    if coords:   # i's coordinates in the kernel's (row-major) shape
        lines.append("        r_ = i")
        for d in range(nd - 1, -1, -1):
            lines.append(f"        c{d} = r_ % {shape[d]}" if d else "        c0 = r_")
            if d:
                lines.append(f"        r_ = r_ // {shape[d]}")
    lines += loads
    lines += ["        " + ln for ln in body]
    for j, s in enumerate(k.outs):
        lines.append(f"        o{j}[o{j}o + i] = OT{j}({env[s]})")
    lines.append("        i += st")
    args = [f"o{j}, o{j}o" for j in range(len(k.outs))] + [f"x{j}, x{j}o" for j in range(len(k.ins))] + ["n"]
    return f"def kern({', '.join(args)}):\n" + "\n".join(lines) + "\n"


def _compute_dtype(k):
    """The kernel's float compute dtype (one per kernel: the CUDA math namespace is per dtype)."""
    fl = {p.dt for m in k.members for p in m.prims if p.dt.kind == "f"}
    if len(fl) > 1:
        raise NotFlat("mixed float compute dtypes")
    return fl.pop() if fl else np.dtype(np.float32)


def _compile(src, ct, out_dts):
    from ember.kernels.cuda import _launch as L  # lazy: the CUDA backend's kernel machinery
    if ct not in L.SUPPORTED or any(d not in L.SUPPORTED for d in out_dts):
        raise NotFlat("a dtype the CUDA kernels do not handle")
    extra = {"np": np}
    for j, d in enumerate(out_dts):
        extra[f"OT{j}"] = L.nbtype(d)
    return L.compile_kernel(src, "kern", extra, ct)


def _launch(k, n, nout, *ts):
    """Launch fused kernel k over n elements: operands as flat typed views and offsets."""
    from ember.kernels.cuda import _launch as L  # lazy: as above
    args = []
    for t in ts:
        args += [L.flat(t), t._offset]
    args.append(n)
    blocks, tpb = L.launch_1d(n)
    k[blocks, tpb, L.stream(ts[0]._device)](*args)


def _empty(shape, dtype, device):
    from ember.kernels.cuda import _launch as L  # lazy: as above
    return L.empty(shape, dtype, device)


def compile_graph(nodes, ins, outs, values, name, grad0):
    """A callable (positional slot values -> tuple) running the graph with fused CUDA kernels, or
    raises NotFlat."""
    from ember.core import dtype as _dt  # the compute dtype of a kernel, as ember's dtype
    vals = list(values)
    dev = None
    for s in ins:
        v = vals[s]
        if getattr(getattr(v, "_device", None), "type", None) != "cuda" or (dev is not None and v._device != dev):
            raise NotFlat("an input that is not on the one CUDA device")
        dev = v._device
    items = []
    for n in nodes:
        recorded = grad0 is not None and n.grad and any(
            getattr(vals[s], "requires_grad", False) for s in _cg.template_slots(n.args, []))
        low = None
        if not recorded and not isinstance(n.op, _cap.PyOp):
            low = lowering.lower(n, vals, pointwise_only=True)
        if low is None:
            pyop = isinstance(n.op, _cap.PyOp)
            writes = pyop or any(sa.is_write for sa in n.op.schema.arguments)
            items.append(ir.Extern(n, _cg.template_slots(n.args, []), _cg._out_slots(n.out), writes))
        else:
            items.append(low)
    graph_outs = set(outs)
    alias = {}
    items = scheduler.cse(items, alias, graph_outs)
    items = scheduler.dce(items, graph_outs)
    seq = scheduler.fuse(items, graph_outs, lambda s: vals[s]._dtype.itemsize)
    g = {"_set_grad": _cg._set_grad, "_launch": _launch, "_empty": _empty, "_dev": dev}
    ksrc = {}
    body, n_k, n_e = [], 0, 0
    ext_names = {}
    cur = [grad0, False]
    for e in seq:
        if isinstance(e, scheduler.Kernel):
            in_meta = {}
            for s in e.ins:
                v = vals[s]
                in_meta[s] = (tuple(v._shape), tuple(v.stride()), v.is_contiguous(), v._dtype)
            src = kernel_source(e, in_meta)
            ct = _dt.NP2DT[_compute_dtype(e)]
            kname = f"kernel{n_k}"
            g[kname] = _compile(src, ct, [vals[s]._dtype for s in e.outs])
            ksrc[kname] = src
            n_k += 1
            numel = 1
            for d in e.shape:
                numel *= d
            for s in e.outs:
                v = vals[s]
                g[f"_dt{s}"] = v._dtype
                body.append(f"    v{s} = _empty({tuple(v._shape)!r}, _dt{s}, _dev)")
            args = ", ".join([f"v{s}" for s in e.outs] + [f"v{alias.get(s, s)}" for s in e.ins])
            body.append(f"    _launch({kname}, {numel}, {len(e.outs)}, {args})  # "
                        + ", ".join(m.origin for m in e.members))
        elif isinstance(e, ir.Extern):
            n = e.node
            n_e += 1
            on = f"{str(n.op.name)}_{n.op.overload or 'default'}"
            g[on] = n.op.call
            ext_names[on] = str(n.op)
            if grad0 is not None and n.grad is not cur[0]:
                body.append(f"    _set_grad({n.grad})")
                cur[0], cur[1] = n.grad, True
            call = f"{on}({', '.join(_cg.extern_arg(a, lambda s: f'v{alias.get(s, s)}', g) for a in n.args)})"
            body.append(_cg.assign(n.out, call))
        else:
            raise NotFlat(f"item {e.kind}")
    body.append(f"    return ({''.join(f'v{alias.get(s, s)}, ' for s in outs)})")
    if cur[1]:
        body = ["    try:"] + ["    " + ln for ln in body] + ["    finally:", f"        _set_grad({grad0})"]
    params = ", ".join(f"v{i}" for i in ins)
    src = f"def call({params}):\n" + "\n".join(body) + "\n"
    exec(compile(src, f"<ember inductor cuda {name}>", "exec"), g)
    fn = g["call"]
    fn.source = (f"# ember inductor output code for {name}: {n_k} CUDA kernel(s), {n_e} extern call(s)\n"
                 + "".join(f"{k} = ember.ops.{p}.call\n" for k, p in sorted(ext_names.items()))
                 + "".join(f"\n# {k}\n{v}" for k, v in ksrc.items())
                 + "\n" + src)
    fn.kernels, fn.externs = n_k, n_e
    return fn
