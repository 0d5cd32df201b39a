"""ember._dynamo (torch._dynamo): graph capture behind ember.compile.

See eval_frame.py's docstring for the design and its limits: capture at the dispatcher (a
__torch_dispatch__ recorder below Autograd) while the function runs eagerly once, a tree of graph
segments split at data-dependent values, generated guards, replay through the dispatcher.
"""
from ember._dynamo import config, exc  # noqa: F401
from ember._dynamo.backends import list_backends, lookup_backend, register_backend  # noqa: F401
from ember._dynamo.eval_frame import OptimizedModule, disable, is_compiling, optimize, reset  # noqa: F401
from ember._dynamo.explain import ExplainOutput, explain  # noqa: F401
from ember._dynamo.logs import set_logs  # noqa: F401

_ALLOWED = set()


def allow_in_graph(fn):
    """Mark `fn` as allowed in the graph (torch._dynamo.allow_in_graph). ember captures at the
    dispatcher, so every function a compiled call runs is already traced through to its aten ops:
    this records the mark and returns `fn` unchanged."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(x) for x in fn]
    _ALLOWED.add(fn)
    return fn


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):
    """Mark dimension(s) of `t` dynamic (torch._dynamo.mark_dynamic). Recorded on the tensor as
    `_dynamo_dynamic_indices`. A first compile with a marked size of 2 or more keeps its trace
    "symbolic pending" and the next call at another size compiles one symbolic graph (even with
    dynamic=False, as in torch); see eval_frame's docstring."""
    idx = [index] if isinstance(index, int) else list(index)
    s = getattr(t, "_dynamo_dynamic_indices", set())
    s.update(idx)
    t._dynamo_dynamic_indices = s


def mark_static(t, index=None):
    s = getattr(t, "_dynamo_static_indices", set())
    s.update([index] if isinstance(index, int) else (index or range(t.dim())))
    t._dynamo_static_indices = s


def maybe_mark_dynamic(t, index):
    mark_dynamic(t, index)


def graph_break():
    """An explicit graph break (torch._dynamo.graph_break): ember's segments end only at
    data-dependent values, so this is a no-op."""


def compiled_autograd(*a, **k):
    raise NotImplementedError("ember._dynamo.compiled_autograd is not implemented")
