"""make_dot: torchviz's picture of an autograd graph, for ember tensors.

The same drawing as torchviz.make_dot (same nodes, labels, colours and edges), built by walking
ember's backward graph: grad_fn nodes (named as torch names them), AccumulateGrad with the leaf it
feeds, saved tensors (show_saved) and saved values (show_attrs). It returns a graphviz.Digraph; the
`dot` binary is needed only to render it.
"""
import ember
from ember.viz._deps import require

__all__ = ["make_dot", "make_dot_from_trace", "resize_graph"]

# Saved attrs for grad_fn (incl. saved variables) begin with `._saved_*`
SAVED_PREFIX = "_saved_"


def _node_name(fn):
    """The node's name as torch's type(fn).__name__ gives it: generated nodes that share a name (one
    class per overload) report it through name(); AccumulateGrad's name() has torch's namespace."""
    name = fn.name() if callable(getattr(fn, "name", None)) else type(fn).__name__
    return name.rsplit("::", 1)[-1]


def _saved_attrs(fn):
    return [a for a in dir(fn) if a.startswith(SAVED_PREFIX)]


def _saved(fn, attr):
    """A saved value as torch returns it: a list of tensors (ember's TensorList saves) as a tuple."""
    val = getattr(fn, attr)
    return tuple(val) if isinstance(val, list) else val


def get_fn_name(fn, show_attrs, max_attr_chars):
    name = _node_name(fn)
    if not show_attrs:
        return name
    attrs = {}
    for attr in _saved_attrs(fn):
        val = _saved(fn, attr)
        attr = attr[len(SAVED_PREFIX):]
        if ember.is_tensor(val):
            attrs[attr] = "[saved tensor]"
        elif isinstance(val, tuple) and any(ember.is_tensor(t) for t in val):
            attrs[attr] = "[saved tensors]"
        else:
            attrs[attr] = str(val)
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    col1width = max(len(k) for k in attrs)
    col2width = min(max(len(str(v)) for v in attrs.values()), max_attr_chars)
    sep = "-" * max(col1width + col2width + 2, len(name))
    attrstr = "%-" + str(col1width) + "s: %" + str(col2width) + "s"

    def truncate(s):
        return s[:col2width - 3] + "..." if len(s) > col2width else s

    params = "\n".join(attrstr % (k, truncate(str(v))) for (k, v) in attrs.items())
    return name + "\n" + sep + "\n" + params


class _Unpacked:
    """Stands for a saved output as torch unpacks it: a new tensor object on every read, so each
    read is its own node in the picture (ember hands back the output itself)."""


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """Produce the Graphviz representation of an autograd graph (torchviz.make_dot).

    A backward function is a gray node; a tensor is blue (a leaf that requires grad, whose .grad
    backward fills), orange (a saved tensor), green (an output passed in) or dark green (the base
    of an output that is a view).

    Args:
        var: output tensor, or a tuple of them
        params: dict of (name, tensor) naming the leaves that require grad, e.g.
            dict(model.named_parameters())
        show_attrs: show the non-tensor values the backward nodes saved
        show_saved: show the tensors the backward nodes saved (a custom Function's saved tensors
            are always shown)
        max_attr_chars: with show_attrs, the most characters shown for one value
    """
    graphviz = require("graphviz")
    if params is not None:
        assert all(isinstance(p, ember.Tensor) for p in params.values())
        param_map = {id(v): k for k, v in params.items()}
    else:
        param_map = {}

    node_attr = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1", height="0.2",
                     fontname="monospace")
    dot = graphviz.Digraph(node_attr=node_attr, graph_attr=dict(size="12,12"))
    seen = set()
    keep = []  # keeps the stand-ins alive, so their ids stay unique

    def size_to_str(size):
        return "(" + (", ").join(["%d" % v for v in size]) + ")"

    def get_var_name(var, name=None):
        if not name:
            name = param_map[id(var)] if id(var) in param_map else ""
        return "%s\n %s" % (name, size_to_str(var.size()))

    def saved_id(fn, t):
        if t.grad_fn is fn:
            keep.append(_Unpacked())
            return str(id(keep[-1]))
        return str(id(t))

    def add_nodes(fn):
        assert not ember.is_tensor(fn)
        if fn in seen:
            return
        seen.add(fn)

        if show_saved:
            for attr in _saved_attrs(fn):
                val = _saved(fn, attr)
                if ember.is_tensor(val):  # (torchviz adds every value; only tensors are ever looked up)
                    seen.add(val)
                attr = attr[len(SAVED_PREFIX):]
                if ember.is_tensor(val):
                    vid = saved_id(fn, val)
                    dot.edge(str(id(fn)), vid, dir="none")
                    dot.node(vid, get_var_name(val, attr), fillcolor="orange")
                if isinstance(val, tuple):
                    for i, t in enumerate(val):
                        if ember.is_tensor(t):
                            name = attr + "[%s]" % str(i)
                            tid = saved_id(fn, t)
                            dot.edge(str(id(fn)), tid, dir="none")
                            dot.node(tid, get_var_name(t, name), fillcolor="orange")

        if hasattr(fn, "variable"):
            # an AccumulateGrad: add the node for the leaf it accumulates into
            var = fn.variable
            seen.add(var)
            dot.node(str(id(var)), get_var_name(var), fillcolor="lightblue")
            dot.edge(str(id(var)), str(id(fn)))

        dot.node(str(id(fn)), get_fn_name(fn, show_attrs, max_attr_chars))

        if hasattr(fn, "next_functions"):
            for u in fn.next_functions:
                if u[0] is not None:
                    dot.edge(str(id(u[0])), str(id(fn)))
                    add_nodes(u[0])

        # a custom Function's saved tensors
        if hasattr(fn, "saved_tensors"):
            for t in fn.saved_tensors:
                seen.add(t)
                dot.edge(str(id(t)), str(id(fn)), dir="none")
                dot.node(str(id(t)), get_var_name(t), fillcolor="orange")

    def add_base_tensor(var, color="darkolivegreen1"):
        if var in seen:
            return
        seen.add(var)
        dot.node(str(id(var)), get_var_name(var), fillcolor=color)
        if var.grad_fn:
            add_nodes(var.grad_fn)
            dot.edge(str(id(var.grad_fn)), str(id(var)))
        if var._is_view():
            add_base_tensor(var._base, color="darkolivegreen3")
            dot.edge(str(id(var._base)), str(id(var)), style="dotted")

    if isinstance(var, tuple):
        for v in var:
            add_base_tensor(v)
    else:
        add_base_tensor(var)

    resize_graph(dot)
    return dot


def make_dot_from_trace(trace):
    """Not available (as in torchviz): see ember.utils.tensorboard for graphs of traced models."""
    raise NotImplementedError("This function has been moved to pytorch core and "
                              "can be found here: https://pytorch.org/docs/stable/tensorboard.html")


def resize_graph(dot, size_per_element=0.15, min_size=12):
    """Resize the graph (in place) according to how much content it contains."""
    num_rows = len(dot.body)
    content_size = num_rows * size_per_element
    size = max(min_size, content_size)
    size_str = str(size) + "," + str(size)
    dot.graph_attr.update(size=size_str)
