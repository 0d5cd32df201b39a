"""The four ember.viz widgets for the report, measured on a representative op of the profiled run.

The representative op is the one with the most CPU time (total) among the ops the report knows how to
call again from their recorded input shapes (matmuls, linear, conv2d, common pointwise ops), on
inputs that are not all 0-d;
when the run has none, a small default workload (linear on a 64x128 input) stands in, and the
report says so.
"""
import io
import re

import ember

# aten name -> (how to call it, which function overhead_curve sweeps)
_UNARY = ("relu", "tanh", "sigmoid", "exp", "log", "sqrt", "abs", "neg", "sin", "cos", "gelu", "silu")
_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")


def _fn(name):
    F = ember.nn.functional
    if name in ("linear", "conv1d", "conv2d", "gelu", "silu"):
        return getattr(F, name)
    return getattr(ember, name)


# aten names whose first recorded shapes map straight onto a public call
_KNOWN = {"mm": ("mm", 2, "matmul"), "bmm": ("bmm", 2, "matmul"), "matmul": ("matmul", 2, "matmul"),
          "addmm": ("addmm", 3, "matmul"), "linear": ("linear", 3, "matmul"), "conv2d": ("conv2d", 3, "add"),
          "conv1d": ("conv1d", 3, "add")}
_KNOWN.update({n: (n, 1, n if n not in ("gelu", "silu") else "exp") for n in _UNARY})
_KNOWN.update({n: (n, 2, n) for n in _BINARY})
_CURVE_OK = set(_UNARY) - {"gelu", "silu"} | set(_BINARY) | {"matmul"}


class Workload:
    """A call to measure: `fn()` runs the op on fixed inputs, `grad_fn()` the same op on inputs
    that require grad, `expr()` that op's result summed (an expression for the autograd graph);
    `curve_op` is the public function overhead_curve sweeps."""

    def __init__(self, label, description, fn, grad_fn, expr, curve_op, from_run):
        self.label, self.description, self.fn, self.grad_fn, self.expr = label, description, fn, grad_fn, expr
        self.curve_op, self.from_run = curve_op, from_run


def _shapes_by_op(events):
    """aten name -> the input shapes its most frequent call had (from record_shapes)."""
    counts = {}
    for e in events:
        name = getattr(e, "name", "")
        if not name.startswith("aten::") or not e.input_shapes:
            continue
        key = (name[6:], tuple(tuple(s) for s in e.input_shapes))
        counts[key] = counts.get(key, 0) + 1
    best = {}
    for (op, shapes), n in counts.items():
        if op not in best or n > best[op][1]:
            best[op] = (shapes, n)
    return {op: [list(s) for s in shapes] for op, (shapes, _) in best.items()}


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _build(op, shapes):
    call_name, arity, curve = _KNOWN[op]
    tensor_shapes = [s for s in shapes[:arity]]
    if len(tensor_shapes) < arity and call_name in ("linear", "conv1d", "conv2d"):
        tensor_shapes = tensor_shapes[:2]
    if len(tensor_shapes) < min(arity, 2 if arity > 1 else 1):
        return None
    if sum(_numel(s) for s in tensor_shapes) > 1 << 24 or any(d == 0 for s in tensor_shapes for d in s):
        return None
    g = ember.Generator().manual_seed(0)
    f = _fn(call_name)

    def inputs(requires_grad):
        return [ember.randn(*s, generator=g).requires_grad_(requires_grad) if s else
                ember.tensor(0.5, requires_grad=requires_grad) for s in tensor_shapes]

    plain = inputs(False)
    leaves = inputs(True)
    try:  # the recorded shapes may not be enough to call it again (a convolution's padding, ...)
        f(*plain)
        out = f(*leaves)
        if out.grad_fn is None:
            return None
    except Exception:  # noqa: BLE001 - any failure: try the next op, or the default workload
        return None
    desc = f"{call_name}(" + ", ".join("x".join(map(str, s)) or "scalar" for s in tensor_shapes) + ")"
    if call_name.startswith("conv"):
        desc += " (stride and padding are not recorded: the defaults)"
    return Workload(f"aten::{op}", desc, lambda: f(*plain), lambda: f(*leaves), lambda: f(*leaves).sum(),
                    curve if curve in _CURVE_OK else "add", True)


def default_workload():
    g = ember.Generator().manual_seed(0)
    x, w, b = ember.randn(64, 128, generator=g), ember.randn(64, 128, generator=g), ember.randn(64, generator=g)
    wl, bl = w.clone().requires_grad_(), b.clone().requires_grad_()
    F = ember.nn.functional
    return Workload("default workload", "linear(64x128, 64x128, 64)", lambda: F.linear(x, w, b),
                    lambda: F.linear(x, wl, bl), lambda: F.linear(x, wl, bl).relu().sum(), "matmul", False)


def representative(key_averages, events):
    """The Workload for the report's pictures (see the module's docstring)."""
    shapes = _shapes_by_op(events)
    ranked = sorted((e for e in key_averages if e.key.startswith("aten::")), key=lambda e: -e.cpu_time_total)
    for e in ranked:
        op = e.key[6:]
        # a call on real tensors, not on 0-d ones (an optimizer's bias correction, a loss's scalar)
        if op in _KNOWN and op in shapes and any(_numel(s) > 1 for s in shapes[op]):
            w = _build(op, shapes[op])
            if w is not None:
                return w
    return default_workload()


def _svg_text(fig, prefix):
    """A matplotlib figure as inline SVG markup, its ids made unique to this figure."""
    import matplotlib  # lazy: the optional `viz` extra

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "ember"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    s = buf.getvalue()
    s = s[s.index("<svg"):]
    ids = set(re.findall(r'\bid="([^"]+)"', s))
    if ids:
        pat = re.compile(r'(\bid="|#)(' + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)) +
                         r')(?=["\)])')
        s = pat.sub(lambda m: m.group(1) + prefix + m.group(2), s)
    return s


WIDGETS = (
    ("dispatcher", "Dispatcher trace",
     "µs per dispatch layer for one call, with autograd and autocast on and off (ember.viz.dispatcher_trace_plot)"),
    ("autograd", "Autograd graph",
     "the forward graph and the mirrored backward graph, saved tensors marked (ember.viz.autograd_graph_plot)"),
    ("tax", "The Python tax",
     "host overhead against kernel time per op, eager and compiled (ember.viz.python_tax_timeline)"),
    ("overhead", "Overhead against size",
     "framework time against kernel time as the tensor grows, crossover marked (ember.viz.overhead_curve)"),
)


def draw(work, fast=False):
    """{widget key: (svg markup or None, note)}: each widget measured on `work`."""
    import ember.viz as viz  # lazy: matplotlib is needed only here

    sizes = (1, 64, 1024, 16384) if fast else (1, 64, 1024, 16384, 262144)
    out = {}
    desc = work.description.split(" (")[0]  # the titles leave the page's notes out
    expr_desc = desc + (".sum()" if work.from_run else ".relu().sum()")
    jobs = {
        "dispatcher": lambda: viz.dispatcher_trace_plot(work.grad_fn, repeat=5 if fast else 15,
                                                        title=f"Dispatcher trace: {desc}"),
        "autograd": lambda: viz.autograd_graph_plot(work.expr, title=f"Autograd graph: {expr_desc}"),
        "tax": lambda: viz.python_tax_timeline(work.fn, compiled=not fast, repeat=3 if fast else 7,
                                               title=f"The Python tax: {desc}"),
        "overhead": lambda: viz.overhead_curve(work.curve_op, with_torch=False, sizes=sizes,
                                               min_run_time=0.01 if fast else 0.03),
    }
    for key, _, _ in WIDGETS:
        try:
            fig = jobs[key]()
            out[key] = (_svg_text(fig, f"w-{key}-"), "")
        except ImportError as e:
            out[key] = (None, str(e))
        except Exception as e:  # noqa: BLE001 - one picture failing must not lose the report
            out[key] = (None, f"{type(e).__name__}: {e}")
    return out
