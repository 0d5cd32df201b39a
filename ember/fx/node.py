"""fx Node (torch/fx/node.py): one operation of a Graph.

A Node's `op` is one of placeholder, get_attr, call_function, call_method, call_module, output.
Its `args`/`kwargs` may hold other Nodes (inside tuples, lists, dicts, slices); setting them keeps
the `users` of every input Node in step, so `replace_all_uses_with` and dead-code elimination
only read dictionaries. Nodes form a doubly linked list owned by their Graph.
"""
import builtins
import operator
import types

import ember
from ember.dispatch.operator import OperatorHandle

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Target", "Argument"]

Target = object
Argument = object

_OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

# functions kept by dead-code elimination although nothing uses their result
_side_effectful_functions = {operator.setitem}


def has_side_effect(fn):
    """Registers `fn` so that Graph.eliminate_dead_code keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


def _random_functions():
    # read late: the op namespace is complete only after `import ember` finished
    found = {getattr(ember, n) for n in ("rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                                          "randint_like", "bernoulli", "multinomial", "normal", "poisson")
             if hasattr(ember, n)}
    # state changes a captured graph must keep (torch's _side_effectful_need_to_be_preserved_pre_dispatch)
    for owner, name in ((getattr(ember, "_C", None), "_set_grad_enabled"), (getattr(ember, "amp", None),
                        "_enter_autocast"), (getattr(ember, "amp", None), "_exit_autocast"),
                        (ember, "_assert")):
        fn = getattr(owner, name, None)
        if fn is not None:
            _side_effectful_functions.add(fn)
    return found


_RANDOM = []


def _is_impure_function(op):
    if not _RANDOM:
        _RANDOM.append(_random_functions())
    try:
        if op in _side_effectful_functions:
            return True
    except TypeError:   # an unhashable callable
        return False
    if isinstance(op, OperatorHandle):
        schema = op.schema
        if any(a.is_write for a in schema.arguments):   # a `!` alias: mutates an input or out=
            return True
        if "nondeterministic_seeded" in op.tags:
            return True
        return False
    try:
        return op in _RANDOM[0]
    except TypeError:
        return False


def _find_module_of(obj):
    name = getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if name is not None:
        for ns, prefix in ((ember, "ember"), (ember.nn.functional, "ember.nn.functional")):
            if getattr(ns, name, None) is obj:
                return prefix
        if getattr(ember.Tensor, name, None) is obj:
            return "ember.Tensor"
    if module is None:
        raise RuntimeError(f"cannot find module for {obj}")
    return module


def _get_qualified_name(func):
    """`ember.relu`, `ember.ops.aten.add.Tensor`, `operator.add`, `getattr`, `mymod.fn`."""
    if isinstance(func, OperatorHandle):
        return f"ember.ops.{func.ns}.{func.name}.{func.overload or 'default'}"
    name = getattr(func, "__name__", None)
    if name is not None and getattr(builtins, name, None) is func:
        return name
    if name == "<lambda>":
        raise RuntimeError("Unable to represent lambda")
    module = _find_module_of(func)
    if module == "ember.Tensor":
        return f"ember.Tensor.{name}"
    if module.startswith("ember"):
        return f"{module}.{name}"
    return f"{module}.{name}"


def _type_repr(obj):
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _format_arg(arg):
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(_format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation of a Graph: `op`, `target`, `args`, `kwargs`, a unique `name`, its `users`
    (the Nodes that read it) and a free `meta` dict (`val`, `tensor_meta`, `stack_trace`, ...)."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPCODES:
            raise AssertionError(f"Unknown opcode {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._args = ()
        self._kwargs = {}
        self.meta = {}
        self.__update_args_kwargs(args, kwargs)

    # ---- linked list -------------------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Insert `x` before this node (moving it if it is already in the graph)."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Insert `x` after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- arguments ---------------------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def __update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        new_args = tuple(new_args) if new_args is not None else ()
        new_kwargs = dict(new_kwargs) if new_kwargs is not None else {}

        def collect(n):
            self._input_nodes.setdefault(n)
            return n
        self._args = map_aggregate(new_args, lambda x: collect(x) if isinstance(x, Node) else x)
        self._kwargs = map_aggregate(new_kwargs, lambda x: collect(x) if isinstance(x, Node) else x)
        for n in self._input_nodes:
            n.users.setdefault(self)

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    # ---- printing ----------------------------------------------------------------------------
    def __repr__(self):
        return self.name

    @staticmethod
    def _pretty_print_target(target):
        if isinstance(target, str):
            return target
        name = getattr(target, "__name__", None)
        module = getattr(target, "__module__", None)
        if name is not None and module == "builtins":
            return f"builtins.{name}"
        if name is not None and module == "_operator":
            return f"operator.{name}"
        return _get_qualified_name(target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        users = f"[num_users={len(self.users)}]"
        if self.op == "placeholder":
            arg_str = self.target
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typename}{users} = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return f"%{self.name} : {typename}{users} = {self.op}[target={self._pretty_print_target(self.target)}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        return (f"%{self.name} : {typename}{users} = {self.op}[target={self._pretty_print_target(self.target)}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    # ---- rewriting ---------------------------------------------------------------------------
    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *, propagate_meta=False):
        """Make every user of this node read `replace_with` instead; returns the changed users."""
        if propagate_meta:
            if len(replace_with.meta) != 0:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for use_node in to_process:
            use_node.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input, new_input):
        def swap(n):
            return new_input if n is old_input else n
        self.__update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self, impure_random=True):
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return getattr(mod.get_submodule(self.target), "_is_impure", False)
        if self.op == "call_function":
            if not impure_random and isinstance(self.target, OperatorHandle) and \
                    not any(a.is_write for a in self.target.schema.arguments) and \
                    self.target not in _side_effectful_functions:
                return False
            return _is_impure_function(self.target)
        return False


def map_aggregate(a, fn):
    """Apply `fn` to every leaf of `a` (tuples, namedtuples, lists, dicts and slices are walked)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply `fn` to every Node inside `a`."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)
