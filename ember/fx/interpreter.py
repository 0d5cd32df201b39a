"""Interpreter and Transformer (torch/fx/interpreter.py): run a GraphModule node by node.

Override `call_function`, `call_method`, ... (or `run_node`) to change how nodes execute; a
Transformer runs the graph on Proxies and returns a new GraphModule.
"""
import inspect

from ember.fx.graph import Graph
from ember.fx.graph_module import GraphModule
from ember.fx.node import map_aggregate, map_arg
from ember.fx.proxy import Proxy
from ember.fx._symbolic_trace import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs `module`'s graph: `Interpreter(gm).run(*args)` equals `gm(*args)`."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(self.module.named_modules())
        if graph is not None:
            self.graph = graph
        else:
            self.graph = self.module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if self.garbage_collect_values:
            node_to_last_use = {}
            self.user_to_last_uses = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in node_to_last_use:
                        node_to_last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                output_val = self.env[node]
                return self.graph.process_outputs(output_val) if enable_io_processing else output_val
        return None

    def boxed_run(self, args_list):
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per opcode ----------------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not "
                               "passed in!") from si

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return submod(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---- helpers --------------------------------------------------------------------------
    def fetch_attr(self, target):
        target_atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(target_atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target_atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n):
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args, n):
        def load_arg(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load_arg)


class _TransformerTracer(Tracer):
    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}

    def is_leaf_module(self, m, module_qualified_name):
        return True


class Transformer(Interpreter):
    """Runs the graph on Proxies, writing a new graph: `Transformer(gm).transform()`."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        default_value = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default_value), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self):
        result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a
            new_output = self.new_graph.output(map_aggregate(result, strip_proxy))
            old_output = list(self.graph.nodes)[-1]
            for k, v in old_output.meta.items():
                new_output.meta[k] = v
        return GraphModule(self.module, self.new_graph)
