"""fx Graph (torch/fx/graph.py): a list of Nodes, and the code generator that turns it into Python.

The printed forms follow torch.fx: `str(graph)` lists `%name : [num_users=N] = op[target=...](args =
..., kwargs = {})`, and `python_code()` writes `def forward(self, x): ...` with operators printed as
operators, `del`-style `;  x = None` after each value's last use, and ember objects named by their
qualified names (`ember.relu`, `ember.ops.aten.add.Tensor`) with `ember` bound in the globals.
"""
import builtins
import contextlib
import copy
import enum
import inspect
import keyword
import math
import re
from dataclasses import dataclass

import ember
from ember.dispatch.operator import OperatorHandle
from ember.fx.node import Node, _get_qualified_name, _type_repr, map_arg

__all__ = ["Graph", "PythonCode", "CodeGen"]


def _is_magic(x):
    return x.startswith("__") and x.endswith("__")


_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])")


def _snake_case(s):
    return _snake_case_sub.sub(r"_\1", s).lower()


_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")

# names the generated code's globals always hold (torch's _custom_builtins, with ember for torch)
_custom_builtins = {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "ember": ember,
                    "device": ember.device}

_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)
_illegal_names.update(_custom_builtins)


class _Namespace:
    """Unique names for objects: each object one name, each name used once, builtins not shadowed."""

    def __init__(self):
        self._obj_to_name = {}
        self._used_names = set()
        self._base_count = {}

    def create_name(self, candidate, obj):
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate)
            if not candidate:
                candidate = "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name, obj):
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise AssertionError("obj is already associated")


@dataclass
class PythonCode:
    """The source of `forward` and the globals it runs with."""
    src: str
    globals: dict
    _lineno_map: dict = None


def _format_target(base, target):
    r = base
    for e in target.split("."):
        r = f"{r}.{e}" if e.isidentifier() else f'getattr({r}, "{e}")'
    return r


reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "and_": "{} & {}", "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}", **reflectable_magic_methods,
}
inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}", "imod": "{} %= {}",
    "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}", "irshift": "{} >>= {}",
    "isub": "{} -= {}", "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}

_STACK_RE = re.compile(r"^File \"(.+)\", line (\d+), in (.+)$")


def _stack_summary(stack_trace):
    """`File: path:line in fn, code: text` from the innermost frame of a formatted stack trace."""
    lines = stack_trace.strip().split("\n")
    for idx in range(len(lines) - 2, -1, -1):
        m = _STACK_RE.match(lines[idx].strip())
        if m:
            return f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {lines[idx + 1].strip()}"
    return None


def _dtype_abbr(dtype):
    name = str(dtype).split(".")[-1]
    return _DTYPE_ABBRS.get(name, name)


_DTYPE_ABBRS = {
    "bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16", "float8_e4m3fn": "f8e4m3fn",
    "float8_e5m2": "f8e5m2", "complex32": "c32", "complex64": "c64", "complex128": "c128", "int8": "i8",
    "int16": "i16", "int32": "i32", "int64": "i64", "bool": "b8", "uint8": "u8", "uint16": "u16",
    "uint32": "u32", "uint64": "u64",
}


class CodeGen:
    """Writes a Graph as the Python source of `forward` (torch.fx.graph.CodeGen)."""

    def __init__(self):
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args, repr_fn=repr):
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args):
        return args

    def process_outputs(self, outputs):
        return outputs

    def additional_globals(self):
        return []

    def _gen_python_code(self, nodes, root_module, namespace, *, verbose=False, include_stride=False,
                         include_device=False):
        free_vars = []
        body = []
        globals_ = {}
        maybe_return_annotation = [""]

        def add_global(name_hint, obj):
            if _is_from_ember(obj):
                return _get_qualified_name(obj)
            global_name = namespace.create_name(name_hint, obj)
            if global_name in globals_:
                if globals_[global_name] is not obj:
                    raise AssertionError(f"Global name {global_name} already assigned to different object")
                return global_name
            globals_[global_name] = obj
            return global_name

        for name, obj in _custom_builtins.items():
            add_global(name, obj)

        def type_repr(o):
            if o == ():
                return "()"
            return add_global(_type_repr(o), o)

        def _get_repr(arg):
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                qualified = _get_qualified_name(type(arg))
                return f"{add_global(qualified, type(arg))}{repr(tuple(arg))}"
            if isinstance(arg, OperatorHandle):
                return _get_qualified_name(arg)
            if isinstance(arg, enum.Enum):
                cls = arg.__class__
                return f"{add_global(cls.__name__, cls)}.{arg.name}"
            if isinstance(arg, ember.Tensor):
                return f"ember.Tensor(size={list(arg.size())}, dtype={str(arg.dtype).split('.')[-1]})"
            if isinstance(arg, tuple):
                if len(arg) == 1:
                    return f"({_get_repr(arg[0])},)"
                return "(" + ", ".join(_get_repr(a) for a in arg) + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(_get_repr(a) for a in arg) + "]"
            if isinstance(arg, dict):
                return "{" + ", ".join(f"{_get_repr(k)}: {_get_repr(v)}" for k, v in arg.items()) + "}"
            if isinstance(arg, slice):
                return f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, {_get_repr(arg.step)})"
            if isinstance(arg, type):
                return add_global(_type_repr(arg), arg)
            return repr(arg)

        def _format_args(args, kwargs):
            res = [_get_repr(a) for a in args]
            res.extend(f"{k} = {_get_repr(v)}" for k, v in kwargs.items())
            return ", ".join(res)

        # the first use seen walking backwards is each value's last use
        node_to_last_use = {}
        user_to_last_uses = {}
        for node in reversed(nodes):
            for input_node in node._input_nodes:
                if input_node not in node_to_last_use:
                    node_to_last_use[input_node] = node
                    user_to_last_uses.setdefault(node, []).append(input_node)

        def delete_unused_values(user):
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users) == 0:
                to_delete.append(user)
            if to_delete:
                body.append(";  " + " = ".join([repr(n) for n in to_delete] + ["None"]) + "\n")
            else:
                body.append("\n")

        prev_summary = [None]

        def append_stacktrace_summary(node):
            if node.op in ("placeholder", "output"):
                return
            summary = None
            if node.stack_trace:
                summary = _stack_summary(node.stack_trace)
            text = f"\n# {summary or 'No stacktrace found for following nodes'}\n"
            if text != prev_summary[0]:
                prev_summary[0] = text
                body.append(text)

        def annotation(node):
            if not verbose:
                return "" if node.type is None else f" : {type_repr(node.type)}"
            val = node.meta.get("val", node.meta.get("tensor_meta", node.meta.get("example_value")))
            shape = getattr(val, "shape", None)
            dtype = getattr(val, "dtype", None)
            if shape is not None and dtype is not None:
                core = f"{_dtype_abbr(dtype)}[{', '.join(str(s) for s in shape)}]"
                if include_stride and callable(getattr(val, "stride", None)):
                    core += f"[{', '.join(str(s) for s in val.stride())}]"
                elif include_stride and getattr(val, "stride", None) is not None:
                    core += f"[{', '.join(str(s) for s in val.stride)}]"
                if include_device and getattr(val, "device", None) is not None:
                    core += f"{val.device}"
                return f': "{core}"'
            if isinstance(val, (int, float, bool)) and not isinstance(val, enum.Enum):
                return ""
            return "" if node.type is None else f" : {type_repr(node.type)}"

        def emit_node(node):
            ann = annotation(node)
            if node.op == "placeholder":
                default = "" if not node.args else f" = {_get_repr(node.args[0])}"
                free_vars.append(f"{node.target}{ann}{default}")
                raw_name = node.target.replace("*", "")
                if raw_name != repr(node):
                    body.append(f"{repr(node)} = {raw_name}\n")
                return
            if node.op == "call_method":
                body.append(f"{repr(node)}{ann} = {_format_target(_get_repr(node.args[0]), node.target)}"
                            f"({_format_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                target = node.target
                tname = getattr(target, "__name__", "")
                if getattr(target, "__module__", "") == "_operator" and tname in magic_methods:
                    body.append(f"{repr(node)}{ann} = "
                                f"{magic_methods[tname].format(*(_get_repr(a) for a in node.args))}")
                    return
                if getattr(target, "__module__", "") == "_operator" and tname in inplace_methods:
                    body.append(f"{inplace_methods[tname].format(*(_get_repr(a) for a in node.args))};  "
                                f"{repr(node)}{ann} = {_get_repr(node.args[0])}")
                    return
                global_name = add_global(_get_qualified_name(target), target)
                if (global_name == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str)
                        and node.args[1].isidentifier()):
                    body.append(f"{repr(node)}{ann} = {_format_target(_get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{repr(node)}{ann} = {global_name}({_format_args(node.args, node.kwargs)})")
                return
            if node.op == "call_module":
                body.append(f"{repr(node)}{ann} = "
                            f"{_format_target(root_module, node.target)}({_format_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    maybe_return_annotation[0] = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(node.args[0], repr_fn=_get_repr))
                return
            raise NotImplementedError(f"node: {node.op} {node.target}")

        lineno_map = {}
        for i, node in enumerate(nodes):
            if verbose:
                append_stacktrace_summary(node)
            body.append(f"# COUNTER: {i}\n")
            emit_node(node)
            delete_unused_values(node)

        if len(body) == 0:
            body.append("pass\n")
        if self._body_transformer:
            body = self._body_transformer(body)
        for name, value in self.additional_globals():
            add_global(name, value)

        prologue = self.gen_fn_def(free_vars, maybe_return_annotation[0])
        prologue_len = prologue.count("\n") + 1
        new_lines = []
        cur = None
        for line in "".join(body).split("\n"):
            m = _COUNTER_RE.search(line)
            if m is not None:
                cur = int(m.group(1))
            else:
                lineno_map[len(new_lines) + prologue_len] = cur
                new_lines.append(line)
        code = "\n".join(new_lines).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        fn_code = f"\n\n\n{prologue}\n{code}"
        return PythonCode(fn_code, globals_, lineno_map)


_COUNTER_RE = re.compile(r"# COUNTER: (\d+)")


@dataclass
class _PyTreeInfo:
    orig_args: list
    in_spec: object
    out_spec: object


class _PyTreeCodeGen(CodeGen):
    """`forward` takes the original (nested) arguments and reads its flat placeholders with
    `fx_pytree.tree_flatten_spec(...)`; the output is rebuilt with `pytree.tree_unflatten`."""

    def __init__(self, pytree_info):
        super().__init__()
        self.pytree_info = pytree_info

    def process_inputs(self, *inputs):
        from ember.utils import _pytree  # lazy: needed only for nested inputs
        return _pytree.tree_leaves(list(inputs))

    def process_outputs(self, out):
        from ember.utils import _pytree  # lazy: as above
        if self.pytree_info is None or self.pytree_info.out_spec is None:
            return out
        if not isinstance(out, (list, tuple)):
            out = [out]
        return _pytree.tree_unflatten(out, self.pytree_info.out_spec)

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        if self.pytree_info is None:
            return super().gen_fn_def(free_vars, maybe_return_annotation)
        fn_args = list(self.pytree_info.orig_args)
        fn_def = f"def {self._func_name}({', '.join(['self'] + fn_args)}){maybe_return_annotation}:"
        names = [v.split(":")[0].split("=")[0].strip() for v in free_vars if v != "self"]
        if names:
            fn_def += (f"\n    {', '.join(names)}, = fx_pytree.tree_flatten_spec([{', '.join(fn_args)}], "
                       "self._in_spec)")
        return fn_def

    def generate_output(self, output_args, repr_fn=repr):
        if self.pytree_info is not None and self.pytree_info.out_spec is not None:
            return f"return pytree.tree_unflatten({repr_fn(output_args)}, self._out_spec)"
        return super().generate_output(output_args, repr_fn)

    def additional_globals(self):
        from ember.utils import _pytree  # lazy: as above
        return [("fx_pytree", _pytree), ("pytree", _pytree.pytree)]


def _is_from_ember(obj):
    """True when the generated code can name `obj` by its qualified name under `ember` (the name
    resolves to the object itself); other objects become globals of the generated code."""
    if isinstance(obj, OperatorHandle):
        return True
    if obj is ember or not callable(obj) or getattr(obj, "__name__", None) is None:
        return False
    module = getattr(obj, "__module__", None)
    name = obj.__name__
    if not (isinstance(module, str) and (module == "ember" or module.startswith("ember."))):
        if not any(getattr(ns, name, None) is obj for ns in (ember, ember.nn.functional)):
            return False
    if isinstance(module, str) and module.startswith(("ember._dynamo", "ember._inductor")):
        return False
    try:
        qualified = _get_qualified_name(obj)
    except RuntimeError:
        return False
    return _resolve(qualified) is obj


def _resolve(qualified):
    atoms = qualified.split(".")
    if atoms[0] != "ember":
        return None
    cur = ember
    for a in atoms[1:]:
        cur = getattr(cur, a, None)
        if cur is None:
            return None
    return cur


class _node_list:
    def __init__(self, graph, direction="_next"):
        self.graph = graph
        self.direction = direction

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return _node_list(self.graph, "_prev" if self.direction == "_next" else "_next")


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        self.graph._insert = self.orig_insert


class Graph:
    """The main data structure of fx: a doubly linked list of Nodes in topological order."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._used_names = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields = {}

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        return _node_list(self)

    def find_nodes(self, *, op, target=None, sort=True):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- building --------------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def process_inputs(self, *args):
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        return self._codegen.process_outputs(out)

    def set_codegen(self, codegen):
        self._codegen = codegen

    def erase_node(self, to_erase):
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings  # lazy: only on misuse
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        # drop this node from its inputs' users (its arguments keep their structure, Nodes become None)
        to_erase.args = map_arg(to_erase.args, lambda n: None)
        to_erase.kwargs = map_arg(to_erase.kwargs, lambda n: None)

    def inserting_before(self, n=None):
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        return self.create_node("call_function", the_function, args, kwargs, name=name, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node(op="output", target="output", args=(result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            output_val, old_output = output_vals
            new_output = g.output(output_val, type_expr=old_output.type)
            new_output.meta = copy.copy(old_output.meta)
        return g

    def _target_to_str(self, target):
        if isinstance(target, OperatorHandle):
            # torch's OpOverload.__name__: 'add.Tensor' (named `add_tensor` once made an identifier)
            op = getattr(target, "__name__", None) or f"{target.name}.{target.overload or 'default'}"
        elif callable(target):
            op = target.__name__
        else:
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    # ---- code ------------------------------------------------------------------------------
    def python_code(self, root_module, *, verbose=False, include_stride=False, include_device=False,
                    colored=False):
        namespace = _Namespace()
        for node in self.nodes:
            namespace.associate_name_with_obj(node.name, node)
            namespace._used_names.add(node.name)
        return self._codegen._gen_python_code(list(self.nodes), root_module, namespace, verbose=verbose,
                                              include_stride=include_stride, include_device=include_device)

    def __str__(self):
        placeholder_names = []
        maybe_return_typename = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self):
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        cells = [headers] + [[str(c) for c in r] for r in rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[1:]]
        print("\n".join(lines))

    # ---- checks and passes -----------------------------------------------------------------
    def lint(self):
        """Check that the graph is well formed (torch.fx.Graph.lint's checks and messages)."""
        def check_arg(arg, n=None):
            context = f" of Node '{n}' " if n else " "
            if arg.graph is not self:
                raise RuntimeError(f"Argument '{arg}'{context}does not belong to this Graph, "
                                   f"but was used as an argument! If you are copying nodes from another graph, "
                                   f"make sure to use ``arg_transform`` on node_copy() to remap values\n{self}")
            if arg not in seen_values:
                raise RuntimeError(f"Argument '{arg}'{context}was used before it has been defined! Please check "
                                   f"that Nodes in the graph are topologically ordered\n{self}")

        seen_names = set()
        seen_values = set()
        for node in self.nodes:
            if node.op not in ("placeholder", "call_method", "call_module", "call_function", "get_attr",
                               "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node not in self._graph_namespace._obj_to_name:
                raise RuntimeError(f"Node '{node}' is not added to the side table")
            for arg in node._input_nodes:
                check_arg(arg, node)
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)

        if self.owning_module:
            for node in self.nodes:
                if node.op == "call_function":
                    if not callable(node.target):
                        raise ValueError(f"Node {node} target {node.target} has type {type(node.target).__name__}"
                                         " but a Callable is expected")
                elif not isinstance(node.target, str):
                    raise ValueError(f"Node {node} target {node.target} has type {type(node.target).__name__}"
                                     " but a str is expected")
                if node.op in ("get_attr", "call_module"):
                    target_atoms = node.target.split(".")
                    m_itr = self.owning_module
                    for i, atom in enumerate(target_atoms):
                        new_m_itr = getattr(m_itr, atom, None)
                        seen_qualname = ".".join(target_atoms[:i])
                        if new_m_itr is None:
                            raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                               f"{atom} of {seen_qualname}")
                        if node.op == "call_module" and not isinstance(new_m_itr, ember.nn.Module):
                            raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen_qualname} does "
                                               "not reference an nn.Module")
                        m_itr = new_m_itr

    def eliminate_dead_code(self, is_impure_node=None):
        """Remove nodes that nothing uses and that have no side effect; True when the graph changed."""
        self.lint()
        impure = is_impure_node if is_impure_node is not None else (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    @contextlib.contextmanager
    def _set_insert(self, fn):
        old, self._insert = self._insert, fn
        try:
            yield
        finally:
            self._insert = old

