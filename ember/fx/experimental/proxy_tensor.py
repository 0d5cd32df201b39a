"""make_fx (torch/fx/experimental/proxy_tensor.py): trace a function to aten op overloads.

A TorchDispatchMode sits on the Python key, below Autograd: every op the function runs reaches it,
the ops of composite kernels and of backward formulas included (a function that calls
autograd.grad or backward records its backward ops too). The mode runs each op for real (or on
FakeTensors in tracing_mode="fake"), records a call_function node whose target is the op overload
(`ember.ops.aten.add.Tensor`), and remembers which node made each result tensor. Tensors the
function did not receive and did not make are stored as `_tensor_constant<N>` attributes.
"""
import inspect
import operator

import ember
from ember.dispatch.operator import OperatorHandle
from ember.utils import _pytree
from ember.fx.graph import Graph, _PyTreeCodeGen, _PyTreeInfo
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node, map_aggregate
from ember.fx.passes.shape_prop import _extract_tensor_metadata
from ember.fx.proxy import _user_stack_trace
from ember.utils._python_dispatch import TorchDispatchMode

__all__ = ["make_fx", "PythonKeyTracer", "ProxyTorchDispatchMode", "get_isolated_graphmodule"]


class PythonKeyTracer:
    """Holds the graph being built and the map from each traced tensor to the node that made it."""

    def __init__(self, record_stack_traces=True):
        self.graph = Graph()
        self.root = {}
        self.tensor_tracker = {}     # id(tensor) -> (tensor, node)
        self.alias_tracker = {}      # (version counter, geometry, dtype) -> node
        self.constant_count = 0
        self.record_stack_traces = record_stack_traces

    def track(self, t, node):
        self.tensor_tracker[id(t)] = (t, node)
        self.alias_tracker[_alias_key(t)] = node

    def node_of(self, t):
        hit = self.tensor_tracker.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        # a new tensor object over a traced tensor's memory, made without an op (the alias autograd
        # keeps of a saved output): the node of the traced tensor with the same memory and geometry
        return self.alias_tracker.get(_alias_key(t))

    def arg_of(self, a):
        """The graph argument for a value: the tracked node, a constant attribute, or the value."""
        if isinstance(a, ember.Tensor):
            n = self.node_of(a)
            if n is not None:
                return n
            if type(a).__name__ == "FakeTensor":
                raise RuntimeError(f"make_fx: a FakeTensor of size {tuple(a.shape)} reached an op, but it is "
                                   "neither an input of the traced function nor the result of a traced op; it "
                                   "cannot be kept as a constant of the graph")
            name = f"_tensor_constant{self.constant_count}"
            self.constant_count += 1
            self.root[name] = a
            node = self.graph.get_attr(name)
            node.meta["val"] = _snapshot(a)
            self.track(a, node)
            return node
        if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
            return type(a)(self.arg_of(v) for v in a)
        if isinstance(a, dict):
            return {k: self.arg_of(v) for k, v in a.items()}
        return a


def _alias_key(t):
    vc = t._vc if t._vc is not None else t._version_counter()
    return (id(vc), tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)


def _snapshot(t):
    """A FakeTensor with `t`'s metadata (t itself when it is fake already)."""
    from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # lazy: the fake-tensor library
    if isinstance(t, FakeTensor):
        return t
    mode = _snapshot_mode[0] if _snapshot_mode else None
    if mode is None:
        mode = FakeTensorMode()
        _snapshot_mode.append(mode)
    m = ember.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="meta")
    f = FakeTensor(mode, m, t.device)
    if t.requires_grad:
        f.requires_grad_()
    return f


_snapshot_mode = []


class ProxyTorchDispatchMode(TorchDispatchMode):
    """Records every aten op that reaches the Python key into the tracer's graph."""

    def __init__(self, tracer, tracing_mode, decomposition_table=None):
        super().__init__()
        self.tracer = tracer
        self.tracing_mode = tracing_mode
        self.decomposition_table = decomposition_table or {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        decomp = self.decomposition_table.get(func)
        if decomp is not None:
            with self:
                r = decomp(*args, **kwargs)
            if r is not NotImplemented:
                return r
        out = func(*args, **kwargs)
        tracer = self.tracer
        if isinstance(func, OperatorHandle):
            args, kwargs = _lists_as_lists(func, args, kwargs)
        node_args = tracer.arg_of(tuple(args))
        node_kwargs = tracer.arg_of(dict(kwargs))
        node = tracer.graph.create_node("call_function", func, node_args, node_kwargs,
                                        name=tracer.graph._target_to_str(_packet_name(func)))
        if tracer.record_stack_traces:
            trace = _user_stack_trace()
            if trace:
                node.meta["stack_trace"] = trace
        self._set_meta(node, out)
        if isinstance(out, ember.Tensor):
            tracer.track(out, node)
        elif isinstance(out, (tuple, list)):
            for i, o in enumerate(out):
                if isinstance(o, ember.Tensor):
                    g = tracer.graph.create_node("call_function", operator.getitem, (node, i), {})
                    self._set_meta(g, o)
                    tracer.track(o, g)
        return out

    def _set_meta(self, node, out):
        def snap(o):
            return _snapshot(o) if isinstance(o, ember.Tensor) else o
        node.meta["val"] = map_aggregate(out, snap) if isinstance(out, (tuple, list)) else snap(out)
        if isinstance(out, ember.Tensor):
            node.meta["tensor_meta"] = _extract_tensor_metadata(out)


def _lists_as_lists(func, args, kwargs):
    """int[] / Tensor[] arguments as lists, as torch's graphs hold them (`sum.dim_IntList(x, [0])`)."""
    sch = func.schema.arguments
    if not any(isinstance(a, tuple) for a in args) and not any(isinstance(v, tuple) for v in kwargs.values()):
        return args, kwargs
    args = tuple(list(a) if isinstance(a, tuple) and i < len(sch) and sch[i].is_list else a
                 for i, a in enumerate(args))
    by_name = {a.name: a for a in sch}
    kwargs = {k: list(v) if isinstance(v, tuple) and k in by_name and by_name[k].is_list else v
              for k, v in kwargs.items()}
    return args, kwargs


def _packet_name(func):
    if isinstance(func, OperatorHandle):
        return str(func.name)
    return getattr(func, "__name__", "op")


def _arg_names(f, args):
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"arg{i}" for i in range(len(args))]


def _placeholder_names(f, args):
    """torch's names: `x_1` for a tensor argument `x`, `xs_1, xs_2` for the leaves of a list
    argument, `arg0_1, arg1_1` for *args."""
    names = []
    for base, a in zip(_arg_names(f, args), args):
        names.extend(f"{base}_{j + 1}" for j in range(len(_pytree.tree_leaves(a))))
    return names


def make_fx(f, decomposition_table=None, tracing_mode="real", _allow_non_fake_inputs=False, *,
            pre_dispatch=False, record_module_stack=False, _allow_fake_constant=False,
            _error_on_data_dependent_ops=True, record_stack_traces=True):
    """`make_fx(f)(*args)`: a GraphModule of the aten op overloads `f` runs on `args`.

    tracing_mode="real" runs the ops on the real inputs; "fake" runs them on FakeTensors (metadata
    only, Meta kernels); "symbolic" (symbolic shapes) is not supported by ember yet."""
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise AssertionError(f"Unexpected tracing type: {tracing_mode}")
    if tracing_mode == "symbolic":
        raise NotImplementedError("make_fx(tracing_mode='symbolic') is not supported by ember yet: symbolic "
                                  "shapes (SymInt) are not implemented; use tracing_mode='real' or 'fake'")
    if pre_dispatch:
        raise NotImplementedError("make_fx(pre_dispatch=True) is not supported by ember yet: it records ops "
                                  "above Autograd; use the default (the Python key, below Autograd)")

    def wrapped(*args):
        tracer = PythonKeyTracer(record_stack_traces)
        names = _placeholder_names(f, args)
        leaves, in_spec = _pytree.tree_flatten(list(args))
        fake_mode = None
        if tracing_mode == "fake":
            from ember._subclasses.fake_tensor import FakeTensorMode  # lazy: the fake-tensor library
            fake_mode = FakeTensorMode(allow_non_fake_inputs=_allow_non_fake_inputs)
            leaves = [fake_mode.from_tensor(x) if isinstance(x, ember.Tensor) else x for x in leaves]
        for name, leaf in zip(names, leaves):
            node = tracer.graph.placeholder(name)
            if isinstance(leaf, ember.Tensor):
                node.meta["val"] = _snapshot(leaf)
                node.meta["tensor_meta"] = _extract_tensor_metadata(leaf)
                tracer.track(leaf, node)
            else:
                node.meta["val"] = leaf
        call_args = _pytree.tree_unflatten(leaves, in_spec)
        mode = ProxyTorchDispatchMode(tracer, tracing_mode, decomposition_table)
        if fake_mode is not None:
            with fake_mode, mode:
                out = f(*call_args)
        else:
            with mode:
                out = f(*call_args)

        def out_arg(o):
            if isinstance(o, ember.Tensor):
                return tracer.arg_of(o)
            return o
        if any(isinstance(a, (list, tuple, dict)) for a in args):
            # nested inputs: forward takes them as given and flattens them (torch's _PyTreeCodeGen)
            out_leaves, out_spec = _pytree.tree_flatten(out)
            tracer.graph.set_codegen(_PyTreeCodeGen(_PyTreeInfo(_arg_names(f, args), in_spec, out_spec)))
            tracer.graph.output([out_arg(o) for o in out_leaves])
        else:
            tracer.graph.output(map_aggregate(out, out_arg) if not isinstance(out, Node) else out)
        name = getattr(f, "__name__", "f")
        return GraphModule(tracer.root, tracer.graph, name)
    return wrapped


def get_isolated_graphmodule(func, args, kwargs, tracing_mode="real", decomposition_table=None):
    """make_fx of `func(*args, **kwargs)`, as torch's helper of the same name."""
    return make_fx(lambda *a: func(*a, **kwargs), decomposition_table, tracing_mode)(*args)
