"""GraphModule (torch/fx/graph_module.py): an nn.Module whose forward is generated from a Graph.

Each GraphModule gets its own subclass so that `recompile()` can set `forward` on the class, as
torch does. The generated source is registered with linecache under a `<eval_with_key>.N` name,
so tracebacks and `inspect.getsource` show the generated lines.
"""
import copy
import itertools
import linecache

import ember
from ember.fx.graph import Graph, _custom_builtins
from ember.nn.modules.module import Module, _addindent

__all__ = ["GraphModule"]

_next_id = itertools.count()


def _exec_with_source(src, globals_):
    key = f"<eval_with_key>.{next(_next_id)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)
    return key


def _forward_from_src(src, globals_):
    globals_copy = dict(globals_)
    globals_copy.update(_custom_builtins)
    _exec_with_source(src, globals_copy)
    return globals_copy["forward"]


def _copy_attr(from_module, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, ember.nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, ember.nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class GraphModule(Module):
    """GraphModule(root, graph, class_name='GraphModule'): `root` (an nn.Module or a dict from
    qualified names to modules/tensors) supplies what the graph's get_attr and call_module read."""

    def __new__(cls, *args, **kwargs):
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was "
                                           "not provided in ``root``!")
                    targets.append(node.target)
            targets.sort(key=lambda t: t.count("."))
            for target in targets:
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.meta = {}
        self._code = None
        self.graph = graph

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Regenerate `forward` from the graph; call it after changing the graph."""
        info = getattr(self._graph._codegen, "pytree_info", None)
        if info is not None:
            self.__dict__["_in_spec"] = info.in_spec
            self.__dict__["_out_spec"] = info.out_spec
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        self.__dict__["_lineno_map"] = python_code._lineno_map
        cls = type(self)
        cls.forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False, colored=False):
        """The module as readable Python: `class GraphModule(ember.nn.Module): def forward(...)`."""
        return _print_readable(self, self.__class__.__name__, print_output, include_stride, include_device)

    def __str__(self):
        orig = super().__str__()
        reminder = "# To see more debug info, please use `graph_module.print_readable()`"
        return "\n".join([orig, self._code, reminder])

    def __copy__(self):
        res = GraphModule(self, self.graph, self.__class__.__name__)
        res.meta = getattr(self, "meta", {})
        return res

    def __deepcopy__(self, memo):
        res = Module.__new__(Module)
        memo[id(self)] = res
        fake_mod = Module()
        fake_mod.__dict__ = copy.deepcopy(self.__dict__, memo)
        graph = fake_mod.__dict__.pop("_graph")
        result = GraphModule(fake_mod, graph, self.__class__.__name__)
        result.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return result

    def __reduce__(self):
        raise NotImplementedError("pickling a GraphModule is not supported by ember.fx yet")

    def add_submodule(self, target, m):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                mod.add_module(item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod):
            return False
        if not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self):
        used = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                for i in range(1, len(fullpath) + 1):
                    used.append(".".join(fullpath[:i]))
                if node.op == "call_module":
                    sub = self.get_submodule(node.target)
                    for name, _ in sub.named_modules():
                        if name != "":
                            used.append(f"{node.target}.{name}")
        to_delete = [name for name, _ in self.named_modules() if name not in used]
        for name in to_delete:
            if name:
                self.delete_submodule(name)


def _print_readable(module, module_name, print_output=True, include_stride=False, include_device=False):
    verbose_code = module.graph.python_code(root_module="self", verbose=True, include_stride=include_stride,
                                            include_device=include_device)
    module_code = verbose_code.src.lstrip("\n")
    module_code = f"class {module_name}(ember.nn.Module):\n" + module_code
    module_code = _addindent(module_code, 4)
    parts = [""]
    for name, sub in module.named_children():
        if isinstance(sub, GraphModule):
            parts.append(_print_readable(sub, name, False, include_stride, include_device))
    submodule_code = _addindent("\n".join(parts), 4)
    output = module_code + submodule_code
    if print_output:
        print(output)
    return output

