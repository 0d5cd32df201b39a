"""The articles' four widgets, measured on the user's own code and drawn with matplotlib.

Each function runs what it is given, measures it (ember's dispatch trace: every call through the
dispatcher, each layer's time), draws a matplotlib Figure, writes it to `path` when one is given
(SVG or PNG, from the extension; SVG keeps its text as text) and returns the figure. The numbers
behind the picture are on `fig.ember_data`.

- dispatcher_trace_plot(fn): µs per dispatch layer for one call of fn, stacked, with autograd on and
  off and autocast on and off.
- autograd_graph_plot(expr_fn): the forward graph and the mirrored backward graph side by side, ops
  numbered in the order they ran, saved tensors marked.
- python_tax_timeline(fn): each op's host overhead and kernel time on a time line, eager and compiled.
- overhead_curve(op): framework time against kernel time as the tensor grows, for ember and torch,
  with the crossover (kernel time = framework time) marked.
"""
import importlib
import importlib.util
import re

import ember
from ember.viz import _measure as M
from ember.viz._deps import require

__all__ = ["dispatcher_trace_plot", "autograd_graph_plot", "python_tax_timeline", "overhead_curve"]

_US = 1e6
# colours by role: Python around the calls, the front door, the layers, the kernels
_FIXED_COLORS = {"Python": "#bbbbbb", "dispatch": "#6b6ecf", "CPU": "#2ca02c", "CUDA": "#98df8a",
                 "Meta": "#c5b0d5", "ADInplaceOrView": "#ff9896", "AutogradCPU": "#d62728",
                 "AutogradCUDA": "#e7969c", "AutocastCPU": "#ff7f0e", "AutocastCUDA": "#ffbb78",
                 "BackendSelect": "#8c564b", "Python key": "#17becf"}


def _figure(**kw):
    require("matplotlib")
    from matplotlib.figure import Figure  # lazy: matplotlib is the optional `viz` extra
    return Figure(**kw)


def _save(fig, path):
    if path is None:
        return fig
    mpl = require("matplotlib")
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ember"}):
        fig.savefig(path, bbox_inches="tight")
    return fig


def _color(name, palette={}):  # noqa: B006 - a per-process cache of colours for unnamed layers
    if name in _FIXED_COLORS:
        return _FIXED_COLORS[name]
    if name not in palette:
        extra = ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#c49c94"]
        palette[name] = extra[len(palette) % len(extra)]
    return palette[name]


# ---- 1. the dispatcher trace ----------------------------------------------------------------------

def dispatcher_trace_plot(fn, path=None, *, repeat=20, warmup=3, autocast_device="cpu", title=None):
    """Stacked µs per dispatch layer for one call of `fn` (no arguments), with autograd on and off
    (grad mode) and autocast on and off: four bars, each the median over `repeat` calls of each
    layer's own time. "Python" is the time fn spends outside the dispatcher (argument parsing,
    the bindings, your code); "dispatch" is the front door (key set, table look-up). Tensors fn uses
    must require grad for the autograd layer to have work to do."""
    configs = []
    for autocast in (False, True):
        for grad in (True, False):
            configs.append((f"autograd {'on' if grad else 'off'}\nautocast {'on' if autocast else 'off'}",
                            grad, autocast))
    per_config = {}
    order = ["Python", "dispatch"]
    for label, grad, autocast in configs:
        with ember.set_grad_enabled(grad), ember.autocast(autocast_device, enabled=autocast):
            runs = M.run_traced(fn, repeat, warmup)
        samples = []
        for wall, calls, _ in runs:
            acc = {}
            for c in calls:
                M.layer_seconds(c, acc)
            acc["Python"] = max(wall - sum(c.seconds for c in calls), 0.0)
            samples.append(acc)
            for k in acc:
                if k not in order:
                    order.append(k)
        per_config[label] = {k: M.median([s.get(k, 0.0) for s in samples]) * _US for k in order}
        per_config[label]["ops"] = M.median([float(len(calls)) for _, calls, _ in runs])
    # layers in dispatch order, those that never took time dropped
    layers = [k for k in order if any(per_config[c].get(k, 0.0) > 0 for c in per_config)]

    fig = _figure(figsize=(8, 5))
    ax = fig.add_subplot(1, 1, 1)
    labels = [c[0] for c in configs]
    bottoms = [0.0] * len(labels)
    for layer in layers:
        vals = [per_config[c].get(layer, 0.0) for c in labels]
        ax.bar(labels, vals, bottom=bottoms, label=layer, color=_color(layer), edgecolor="white", linewidth=0.5)
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    for i, total in enumerate(bottoms):
        ax.text(i, total, f"{total:.1f} µs", ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("µs per call (median, each layer's own time)")
    ax.set_title(title or f"Dispatcher trace: where one call of {_fn_name(fn)} spends its time")
    ax.legend(title="layer", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_ylim(0, max(bottoms) * 1.15 if max(bottoms) > 0 else 1)
    fig.ember_data = {"layers": layers, "us": per_config}
    return _save(fig, path)


def _fn_name(fn):
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "fn" if name == "<lambda>" else name


# ---- 2. the autograd graph ------------------------------------------------------------------------

def _node_name(fn):
    name = fn.name() if callable(getattr(fn, "name", None)) else type(fn).__name__
    return name.rsplit("::", 1)[-1]


def _op_name(node_name):
    """MulBackward0 -> mul, MseLossBackward0 -> mse_loss, TBackward0 -> t (the forward op)."""
    base = re.sub(r"Backward\d*$", "", node_name)
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", base).lower() or node_name


def _seq(fn):
    s = getattr(fn, "_sequence_nr", None)
    return s() if callable(s) else (s if s is not None else -1)


def _saved_tensors_of(fn):
    out = []
    for attr in dir(fn):
        if not attr.startswith("_saved_"):
            continue
        val = getattr(fn, attr)
        vals = val if isinstance(val, (tuple, list)) else (val,)
        for i, t in enumerate(vals):
            if ember.is_tensor(t):
                out.append((attr[len("_saved_"):] + (f"[{i}]" if len(vals) > 1 else ""), t))
    if hasattr(fn, "saved_tensors"):  # a custom Function's node
        for i, t in enumerate(fn.saved_tensors):
            out.append((f"saved_tensors[{i}]", t))
    return out


def autograd_graph_plot(expr_fn, path=None, *, params=None, title=None):
    """The forward graph and the mirrored backward graph of `expr_fn()` (a function of no arguments
    returning a tensor that requires grad), side by side. Forward ops are numbered in the order they
    ran (the nodes' sequence numbers): the graph grows op by op, each op adding its backward node on
    the right. Saved tensors are orange: in the backward graph the names each node saved, in the
    forward graph the tensors that were saved (a leaf, or an op's output)."""
    out = expr_fn()
    if isinstance(out, (tuple, list)):
        out = out[0]
    if not ember.is_tensor(out) or out.grad_fn is None:
        raise RuntimeError("autograd_graph_plot: expr_fn() must return a tensor with a grad_fn "
                           "(an expression of tensors that require grad)")
    param_map = {id(v): k for k, v in (params or {}).items()}

    # the backward graph: nodes, edges node -> next node
    nodes, edges, stack, seen = [], [], [out.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        nodes.append(fn)
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                edges.append((fn, nxt))
                stack.append(nxt)
    is_leaf = {fn: hasattr(fn, "variable") for fn in nodes}
    ops = sorted((fn for fn in nodes if not is_leaf[fn]), key=_seq)
    leaves = [fn for fn in nodes if is_leaf[fn]]
    step = {fn: i + 1 for i, fn in enumerate(ops)}

    # layout: ops left to right in the order they ran (one column each: the graph grows op by op),
    # leaves on a row below, each near the first op that used it
    gap = 2.0
    pos = {fn: (gap * step[fn], 0.0) for fn in ops}
    users = {}
    for a, b in edges:
        if is_leaf[b]:
            users.setdefault(b, []).append(a)
    leaf_x, last = {}, -1e9
    for leaf in sorted(leaves, key=lambda lf: min(step[u] for u in users[lf])):
        x = max(gap * min(step[u] for u in users[leaf]) - 0.7, last + 1.9)
        pos[leaf] = (x, -1.3)
        leaf_x[leaf] = last = x
    xmax = max(x for x, _ in pos.values()) + 1.0

    # what was saved, and by whom
    saved_by = {fn: _saved_tensors_of(fn) for fn in ops}
    saved_fwd = set()
    for items in saved_by.values():
        for _, t in items:
            if t.grad_fn is not None:
                saved_fwd.add(t.grad_fn)
            else:
                for leaf in leaves:
                    if leaf.variable is t:
                        saved_fwd.add(leaf)

    def leaf_label(fn):
        v = fn.variable
        name = param_map.get(id(v), "leaf")
        return f"{name}\n{tuple(v.shape)}"

    width = min(max(5.0, 0.9 * (xmax + gap)), 40.0)
    fig = _figure(figsize=(2 * width, 4.2))
    fig.subplots_adjust(left=0.01, right=0.99, wspace=0.04)
    axf = fig.add_subplot(1, 2, 1)
    axb = fig.add_subplot(1, 2, 2)
    box = dict(boxstyle="round,pad=0.3", linewidth=1.0)
    orange = "#d97700"

    def draw(ax, x, y, text, face, edge="#333333", lw=1.0):
        ax.text(x, y, text, ha="center", va="center", fontsize=8, family="monospace",
                bbox=dict(box, facecolor=face, edgecolor=edge, linewidth=lw), zorder=3)

    def arrow(ax, p, q, far=False):
        style = "arc3,rad=-0.35" if far else "arc3,rad=0"
        ax.annotate("", xy=q, xytext=p, zorder=1,
                    arrowprops=dict(arrowstyle="-|>", color="#555555", shrinkA=16, shrinkB=16,
                                    connectionstyle=style))

    def far(a, b):  # an op-to-op edge that would cross other ops: drawn as an arc
        return not is_leaf[b] and abs(step[a] - step[b]) > 1

    # forward: data flows from the leaves and earlier ops to later ones
    for fn in leaves + ops:
        x, y = pos[fn]
        edge, lw = (orange, 2.2) if fn in saved_fwd else ("#333333", 1.0)
        if is_leaf[fn]:
            draw(axf, x, y, leaf_label(fn), "lightblue", edge, lw)
        else:
            draw(axf, x, y, f"#{step[fn]}\n{_op_name(_node_name(fn))}", "#f2f2f2", edge, lw)
    for a, b in edges:  # backward edge a -> b is forward b -> a
        arrow(axf, pos[b], pos[a], far(a, b))
    ox, oy = pos[out.grad_fn]
    draw(axf, ox + gap * 0.8, oy, f"output\n{tuple(out.shape)}", "#caff70")
    arrow(axf, (ox, oy), (ox + gap * 0.8, oy))
    axf.set_title("forward: ops numbered in the order they ran; orange outline: saved for backward", fontsize=9)

    # backward, mirrored: the output's node on the left, the leaves' AccumulateGrad on the right
    def bpos(fn):
        return (xmax - pos[fn][0], pos[fn][1])
    for fn in leaves + ops:
        x, y = bpos(fn)
        if is_leaf[fn]:
            draw(axb, x, y, f"AccumulateGrad\n→ {leaf_label(fn).splitlines()[0]}.grad", "lightblue")
        else:
            draw(axb, x, y, f"{_node_name(fn)}\n(#{step[fn]})", "#dddddd")
            names = [n for n, _ in saved_by[fn]]
            if names:
                axb.text(x, y - 0.42, "saved: " + ", ".join(names), ha="center", va="top", fontsize=7,
                         family="monospace", color="#a04000",
                         bbox=dict(boxstyle="round,pad=0.2", facecolor="orange", alpha=0.35, linewidth=0))
    for a, b in edges:
        arrow(axb, bpos(a), bpos(b), far(a, b))
    bx, by = bpos(out.grad_fn)
    draw(axb, bx - gap * 0.8, by, "grad_output\n(ones)", "#caff70")
    arrow(axb, (bx - gap * 0.8, by), (bx, by))
    axb.set_title("backward, mirrored: gradients flow from the output to the leaves; orange: what each node saved",
                  fontsize=9)

    for ax in (axf, axb):
        ax.set_xlim(-0.2, xmax + gap)
        ax.set_ylim(-2.0, 1.2)
        ax.axis("off")
    axb.set_xlim(-gap, xmax + 0.2)
    fig.suptitle(title or f"autograd graph of {_fn_name(expr_fn)}(): {len(ops)} ops, {len(leaves)} leaves")
    fig.ember_data = {"forward": [(step[fn], _op_name(_node_name(fn))) for fn in ops],
                      "backward": [_node_name(fn) for fn in ops] + ["AccumulateGrad"] * len(leaves),
                      "saved": {_node_name(fn): [n for n, _ in saved_by[fn]] for fn in ops}}
    return _save(fig, path)


# ---- 3. the Python tax ----------------------------------------------------------------------------

def _timeline(fn, repeat, warmup):
    """One representative iteration of fn (the median by wall time): its calls as (name, start us,
    framework us, kernel us) relative to the iteration's start, and the wall µs."""
    runs = M.run_traced(fn, repeat, warmup)
    runs.sort(key=lambda r: r[0])
    wall, calls, t0 = runs[len(runs) // 2]
    rows = []
    for c in calls:
        k = M.kernel_seconds(c)
        rows.append((c.op.qualname if hasattr(c.op, "qualname") else str(c.op),
                     (c.start - t0) * _US, max(c.seconds - k, 0.0) * _US, k * _US))
    return rows, wall * _US


def python_tax_timeline(fn, path=None, *, compiled=True, backend="inductor", repeat=7, warmup=3, title=None):
    """Each dispatcher call of one run of `fn` (no arguments) on a time line: framework overhead
    (dispatch, autograd, autocast, ... everything above the backend kernel) and the kernel itself,
    with the gaps between calls (Python: your code and the bindings; in a compiled function also
    its own kernels, which do not go through the dispatcher). With compiled=True a second row shows
    ember.compile(fn, backend=backend) (compiled once, before timing)."""
    lines = [("eager", fn)]
    if compiled:
        lines.append((f"compiled ({backend})", ember.compile(fn, backend=backend)))
    data = {}
    for label, f in lines:
        rows, wall = _timeline(f, repeat, warmup)
        data[label] = {"ops": rows, "wall_us": wall,
                       "framework_us": sum(r[2] for r in rows), "kernel_us": sum(r[3] for r in rows)}

    fig = _figure(figsize=(11, 1.6 + 1.4 * len(lines)))
    ax = fig.add_subplot(1, 1, 1)
    for i, (label, _) in enumerate(lines):
        y = len(lines) - 1 - i
        d = data[label]
        ax.broken_barh([(0, d["wall_us"])], (y - 0.4, 0.8), facecolors="#eeeeee", edgecolor="#bbbbbb")
        ax.broken_barh([(s, fw) for _, s, fw, _ in d["ops"]], (y - 0.3, 0.6), facecolors=_color("dispatch"))
        ax.broken_barh([(s + fw, k) for _, s, fw, k in d["ops"]], (y - 0.3, 0.6), facecolors=_color("CPU"))
        for name, s, fw, k in d["ops"]:
            if fw + k > d["wall_us"] / 40:  # room for a name
                ax.text(s + (fw + k) / 2, y + 0.42, name.split("::")[-1], ha="center", va="bottom", fontsize=6,
                        rotation=45)
        other = max(d["wall_us"] - d["framework_us"] - d["kernel_us"], 0.0)
        ax.text(d["wall_us"], y, f"  {d['wall_us']:.0f} µs: {len(d['ops'])} ops, "
                f"framework {d['framework_us']:.0f}, kernels {d['kernel_us']:.0f}, Python/other {other:.0f}",
                va="center", fontsize=8)
    ax.set_yticks(range(len(lines)), [label for label, _ in reversed(lines)])
    ax.set_ylim(-0.6, len(lines) - 0.4 + 0.5)
    ax.set_xlabel("µs since the call began (one run, the median of the measured runs)")
    from matplotlib.patches import Patch  # lazy: matplotlib is the optional `viz` extra
    ax.legend(handles=[Patch(color=_color("dispatch"), label="framework overhead (dispatch + layers)"),
                       Patch(color=_color("CPU"), label="kernel"),
                       Patch(facecolor="#eeeeee", edgecolor="#bbbbbb", label="Python / outside the dispatcher")],
              fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    ax.set_title(title or f"The Python tax: host overhead against kernel time in {_fn_name(fn)}")
    fig.ember_data = data
    return _save(fig, path)


# ---- 4. overhead against size ---------------------------------------------------------------------

_ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "maximum": 2, "minimum": 2, "pow": 2, "atan2": 2,
          "matmul": 2, "mm": 2, "where": 3}


def _inputs(lib, op, n):
    import math
    if op in ("matmul", "mm"):
        side = max(int(round(math.sqrt(n))), 1)
        return [lib.randn(side, side) for _ in range(2)], side * side
    if op == "where":
        return [lib.randn(n) > 0, lib.randn(n), lib.randn(n)], n
    return [lib.randn(n) for _ in range(_ARITY.get(op, 1))], n


def _time_call(lib, f, args, min_run_time):
    from ember.utils.benchmark import Timer  # lazy: the benchmark module is only needed here
    g = {"f": f, "args": args}
    t = Timer("f(*args)", globals=g)
    if lib is not ember:  # torch's own timer conventions: one thread
        torch = lib
        prior = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return t.blocked_autorange(min_run_time=min_run_time).median
        finally:
            torch.set_num_threads(prior)
    return t.blocked_autorange(min_run_time=min_run_time).median


def _crossover(sizes, framework, kernel):
    """The size where kernel time first reaches framework time (log-linear interpolation), or None."""
    import math
    for i in range(1, len(sizes)):
        a0, a1 = kernel[i - 1] - framework[i - 1], kernel[i] - framework[i]
        if a0 < 0 <= a1:
            t = -a0 / (a1 - a0) if a1 != a0 else 0.0
            return math.exp(math.log(sizes[i - 1]) + t * (math.log(sizes[i]) - math.log(sizes[i - 1])))
    return None


def overhead_curve(op="add", path=None, *, sizes=(1, 64, 1024, 16384, 262144, 1048576), with_torch=True,
                   min_run_time=0.05, title=None):
    """Per-op framework time against kernel time as the tensor size grows, for one op (a name of a
    torch function: "add", "mul", "exp", "relu", "matmul", ...; float32 inputs of n elements, for
    matmul two square matrices of about n elements).

    ember: the total per call (Timer.blocked_autorange, median); the backend kernel's own time and
    the rest of each call (the framework) from the dispatch trace, less the trace's own cost. torch
    (when it is installed and with_torch): the total per call, one thread; its framework time is
    taken as the smallest total at the two smallest sizes (a fixed cost) and its kernel time as the
    rest. The crossover, where kernel time reaches framework time, is marked for each."""
    f_e = getattr(ember, op)
    curves = {}
    libs = [("ember", ember)]
    if with_torch and importlib.util.find_spec("torch") is not None:
        libs.append(("torch", importlib.import_module("torch")))  # lazy: the comparison, only when asked
    for name, lib in libs:
        f = getattr(lib, op)
        total, kernel, traced_fw, numels = [], [], [], []
        for n in sizes:
            args, numel = _inputs(lib, op, n)
            numels.append(numel)
            total.append(_time_call(lib, f, args, min_run_time))
            if lib is ember:
                # kernel and framework from the same traced calls (paired, so the kernel's noise at
                # large sizes does not land in the framework time)
                runs = M.run_traced(lambda a=args: f_e(*a), 25, 3)
                ks = [sum(M.kernel_seconds(c) for c in calls) for _, calls, _ in runs]
                kernel.append(M.median(ks))
                traced_fw.append(M.median([wall - k for (wall, _, _), k in zip(runs, ks)]))
        if lib is ember:
            # the trace's own wrappers cost time: estimated at the smallest size, where the untraced
            # total is framework + kernel with little noise, and taken off every size
            trace_cost = max(traced_fw[0] - max(total[0] - kernel[0], 0.0), 0.0)
            framework = [max(fw - trace_cost, 0.0) for fw in traced_fw]
        else:
            floor = min(total[:2])
            framework = [floor] * len(total)
            kernel = [max(t - floor, 0.0) for t in total]
        curves[name] = {"numel": numels, "total_us": [t * _US for t in total],
                        "kernel_us": [k * _US for k in kernel], "framework_us": [fw * _US for fw in framework],
                        "crossover": _crossover(numels, framework, kernel)}

    fig = _figure(figsize=(8, 5))
    ax = fig.add_subplot(1, 1, 1)
    styles = {"ember": ("#d62728", "o"), "torch": ("#1f77b4", "s")}
    for name, c in curves.items():
        color, marker = styles[name]
        ax.plot(c["numel"], [v if v > 0 else float("nan") for v in c["framework_us"]], color=color, marker=marker,
                linestyle="--", label=f"{name}: framework")
        ax.plot(c["numel"], [v if v > 0 else float("nan") for v in c["kernel_us"]], color=color, marker=marker,
                linestyle="-", label=f"{name}: kernel")
        ax.plot(c["numel"], c["total_us"], color=color, linestyle="-", linewidth=0.6, alpha=0.5,
                label=f"{name}: total per call")
        if c["crossover"] is not None:
            x = c["crossover"]
            ax.axvline(x, color=color, linestyle=":", linewidth=1)
            ax.annotate(f"{name} crossover\n≈{x:,.0f} elements", xy=(x, 0.02 if name == "ember" else 0.2),
                        xycoords=("data", "axes fraction"), xytext=(4, 0), textcoords="offset points", fontsize=8,
                        color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements per input tensor")
    ax.set_ylabel("µs per call")
    ax.set_title(title or f"Framework overhead against kernel time: {op}")
    ax.legend(fontsize=8)
    fig.ember_data = curves
    return _save(fig, path)
