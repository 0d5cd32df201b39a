"""Autograd codegen (tools/autograd): Node classes and Autograd-key kernels from derivatives*.yaml.

A derivatives entry names an operator overload by its schema and gives one Python expression per
differentiable input, written with ember operators and the helpers of ember/autograd/formulas.py.
Names a formula may use: `grad` (or `grads[i]` for several outputs), the op's arguments,
`result` (or the output names), and `<tensor arg>_sizes` / `_dtype` / `_device` when only the
metadata is needed (then the tensor itself is not saved).
"""
import ast
import glob
import os
import re

import yaml

_HERE = os.path.dirname(os.path.abspath(__file__))
OPS_DIR = os.path.join(_HERE, "..", "ops")
META_SUFFIXES = ("_sizes", "_strides", "_dtype", "_device", "_numel", "_dim")


def load_derivatives():
    files = [os.path.join(OPS_DIR, "derivatives.yaml")] + sorted(
        glob.glob(os.path.join(OPS_DIR, "derivatives", "*.yaml")))
    out = []
    for f in files:
        if os.path.exists(f):
            with open(f) as fh:
                out.extend(yaml.safe_load(fh) or [])
    return out


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_") if p)


def pyname(n):
    import keyword
    return n + "_" if keyword.iskeyword(n) else n


class Info:
    """One derivatives entry resolved against its declaration."""

    def __init__(self, entry, decl, cls_name):
        self.entry = entry
        self.decl = decl
        self.cls = cls_name
        s = decl.schema
        self.args = s.arguments
        self.argnames = [a.name for a in s.arguments]
        self.tensor_args = {a.name for a in s.arguments if a.base == "Tensor"}
        self.list_args = {a.name for a in s.arguments if a.is_tensor_list}
        rets = s.returns
        self.outnames = [r.name or (f"result{i}" if len(rets) > 1 else "result") for i, r in enumerate(rets)]
        od = entry.get("output_differentiability")
        # torch's conditional form: one Python expression over the arguments (e.g. _to_copy's
        # "the target dtype can carry a gradient"); false at run time, the result gets no history
        self.diff_cond = od[0] if od and isinstance(od[0], str) else None
        if self.diff_cond is not None:
            od = None
        self.out_diff = list(od) if od is not None else [r.type.startswith("Tensor") for r in rets]
        self.formulas = []  # (keys, expr)
        for k, v in entry.items():
            if k in ("name", "output_differentiability", "result", "dispatch", "node"):
                continue
            keys = [x.strip() for x in k.split(",")]
            for x in keys:
                if x not in self.tensor_args:
                    raise ValueError(f"{s.full_name}: formula key '{x}' is not a Tensor argument")
            self.formulas.append((keys, str(v)))
        # differentiable inputs in schema order
        keyset = {x for keys, _ in self.formulas for x in keys}
        self.diff_inputs = [a.name for a in s.arguments if a.name in keyset]
        if sum(1 for n in self.diff_inputs if n in self.list_args) > 1:
            raise ValueError(f"{s.full_name}: at most one differentiable Tensor[] argument")
        # what the formulas read
        self.uses = []
        for _keys, expr in self.formulas:
            names = {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
            self.uses.append(names)
        allnames = set().union(*self.uses) if self.uses else set()
        self.saved_tensors = [n for n in self.argnames if n in self.tensor_args and n in allnames]
        self.saved_meta = sorted(n for n in allnames if n.endswith(META_SUFFIXES)
                                 and n.rsplit("_", 1)[0] in self.tensor_args)
        self.saved_values = [n for n in self.argnames if n not in self.tensor_args and n in allnames]
        self.saved_outputs = [n for n in self.outnames if n in allnames]
        # dtypes read only by a top-level handle_r_to_c(<dtype>, ...): a gradient reaching the node
        # is complex only when its output is, so the kernel stores them only for a complex result
        other_uses = set()
        for _keys, expr in self.formulas:
            rc = _split_r_to_c(expr)
            inner = rc[1] if rc else expr
            other_uses |= {n.id for n in ast.walk(ast.parse(inner, mode="eval")) if isinstance(n, ast.Name)}
        self.r_to_c_only = [n for n in self.saved_meta if n.endswith("_dtype") and n not in other_uses
                            and n.rsplit("_", 1)[0] not in self.list_args]
        self.save_guard = self._save_guards(s)

    def _save_guards(self, s):
        """PyTorch's rule (gen_variable_type's guard_for): a Tensor input read by the formula of
        one other input only is saved only when that input needs a gradient (its edge is set),
        except in backward ops and ops with a Tensor[] input. name -> index in diff_inputs."""
        if "backward" in s.name or self.list_args or len(self.diff_inputs) <= 1:
            return {}
        plain = {a.name for a in s.arguments if a.is_tensor and not a.optional}
        guards = {}
        # ember also guards saved strides (computing them costs more than the node's other fields)
        for n in self.saved_tensors + [m for m in self.saved_meta if m.endswith("_strides")]:
            used = [keys for (keys, _), names in zip(self.formulas, self.uses) if n in names]
            base = n.rsplit("_", 1)[0] if n.endswith("_strides") else n
            if base in plain and len(used) == 1 and len(used[0]) == 1 and used[0][0] in self.diff_inputs:
                guards[n] = self.diff_inputs.index(used[0][0])
        return guards


def _slot(n):
    return n + "_"


def _meta_slot(info, n):
    """The slot of saved metadata `n`. A dtype read only by handle_r_to_c, and the metadata of a
    Tensor[] argument (cat's sizes), are no saved field of PyTorch's node (no `_saved_` accessor):
    their slot names start with an underscore."""
    return "_" + n if n in info.r_to_c_only or n.rsplit("_", 1)[0] in info.list_args else n


def _meta_expr(n, src):
    base, suf = n.rsplit("_", 1)
    if base in src:
        return {"sizes": f"[tuple(t._shape) for t in {pyname(base)}]",
                "dtype": f"[t._dtype for t in {pyname(base)}]",
                "device": f"[t._device for t in {pyname(base)}]",
                "numel": f"[t.numel() for t in {pyname(base)}]",
                "strides": f"[tuple(t.stride()) for t in {pyname(base)}]",
                "dim": f"[len(t._shape) for t in {pyname(base)}]"}[suf]
    v = pyname(base)
    # a Python number may stand for a Tensor argument: the helper handles it (the class test
    # first: it is cheaper than isinstance for the usual ember.Tensor)
    if suf == "dtype":
        return f"{v}._dtype if {v}.__class__ is _T or isinstance({v}, _TI) else _dtype_of({v})"
    if suf == "sizes":
        return f"{v}._shape if {v}.__class__ is _T or isinstance({v}, _TI) else _sizes_of({v})"
    return f"_{suf}_of({v})"


def _split_r_to_c(expr):
    """`handle_r_to_c(<name>, <expr>)` at the top of a formula -> (name, inner expr), else None,
    so the generated code checks the dtypes inline instead of calling the helper per node."""
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    if (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "handle_r_to_c"
            and len(tree.args) == 2 and not tree.keywords and isinstance(tree.args[0], ast.Name)):
        return tree.args[0].id, ast.unparse(tree.args[1])
    return None


class _Inline(ast.NodeTransformer):
    """Inline the commonest helper calls of formulas with a fast path that falls back to the
    helper: conj(t) of a real tensor is t; maybe_multiply(g, s) by the number 1 is g."""

    def __init__(self, tensors, values):
        self.tensors, self.values = tensors, values

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if not (isinstance(f, ast.Name) and not node.keywords and len(node.args) in (1, 2)):
            return node
        a = node.args
        if f.id == "conj" and len(a) == 1 and isinstance(a[0], ast.Name) and a[0].id in self.tensors:
            v = a[0].id
            fast = ast.parse(f"{v}.__class__ is _T and {v}._dtype.category != 3", mode="eval").body
            return ast.IfExp(test=fast, body=ast.Name(v, ast.Load()), orelse=node)
        if f.id == "maybe_multiply" and len(a) == 2 and isinstance(a[1], ast.Name) and a[1].id in self.values:
            s = a[1].id
            fast = ast.parse(f"({s}.__class__ is int or {s}.__class__ is float) and {s} == 1", mode="eval").body
            if isinstance(a[0], ast.Name):
                return ast.IfExp(test=fast, body=a[0], orelse=node)
            # evaluate the gradient once: bind it with a walrus in the test
            return node
        return node


def _inline_helpers(info, expr):
    tensors = {pyname(n) for n in info.saved_tensors + info.saved_outputs if n not in info.list_args}
    values = {pyname(n) for n in info.saved_values}
    tree = ast.parse(expr, mode="eval")
    new = ast.fix_missing_locations(_Inline(tensors, values).visit(tree))
    out = ast.unparse(new)
    return expr if out == ast.unparse(ast.parse(expr, mode="eval")) else out


class _Fields(ast.NodeTransformer):
    """Read saved argument values and metadata straight from the node's slots (`_node.alpha_`), as
    PyTorch's formulas read a node's members."""

    def __init__(self, fields):
        self.fields = fields  # name -> the expression that reads it

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.fields:
            return ast.parse(self.fields[node.id], mode="eval").body
        return node


def _formula_body(info, expr, names, grad=False):
    """The formula's expression for apply(), and the locals it needs first: the saved tensors it reads
    (unpacked: version-checked once), and values read more than once (one attribute read). With
    `grad`, the formula's `grad` is grads[0] (a local where it is read more than once). The last item:
    what to do to the result, a function of the variable that holds it."""
    post = lambda t: []  # noqa: E731
    rc = _split_r_to_c(expr)
    if rc is not None and rc[0] in info.saved_meta:
        # handle_r_to_c(dtype, g) only for a complex g: reading a dtype stored only for complex
        # results (getattr with a default) raises and catches an AttributeError when it is missing
        n, expr = rc
        dtype = f"getattr(_node, '_{n}', _REAL)" if n in info.r_to_c_only else f"_node.{_meta_slot(info, n)}"
        post = lambda t: [f"if {t} is not None and {t}._dtype.category == 3:",  # noqa: E731
                          f"    {t} = handle_r_to_c({dtype}, {t})"]
    expr = _inline_helpers(info, expr)
    pre, slots = [], {}
    for n in info.saved_tensors + info.saved_outputs:
        if n in names:
            v, slot = pyname(n), _slot(n)
            if n in info.list_args:
                pre.append(f"{v} = _unpack_list(_node.{slot}, _node)")
            elif n in info.saved_outputs:
                # inline: a bare alias at version 0 read with grad mode off (no double backward)
                pre.append(f"{v} = _s if (_s := _node.{slot}).__class__ is _T and not (_s._vc[0] or _st().ag) "
                           f"else _unpack_output(_s, _node)")
            else:  # inline: a tensor saved bare (at version 0) that no in-place op has touched since
                pre.append(f"{v} = _s if (_s := _node.{slot}).__class__ is _T and not (_s._vc or _V0)[0] "
                           f"else _unpack(_s, _node)")
    counts = {}
    for x in ast.walk(ast.parse(expr, mode="eval")):
        if isinstance(x, ast.Name):
            counts[x.id] = counts.get(x.id, 0) + 1
    fields = [(pyname(n), f"_node.{_slot(n)}") for n in info.saved_values if n in names]
    # a dtype read only by handle_r_to_c is stored only for a complex result
    fields += [(n, f"getattr(_node, '_{n}', _REAL)" if n in info.r_to_c_only else f"_node.{_meta_slot(info, n)}")
               for n in info.saved_meta if n in names]
    if grad:
        fields.insert(0, ("grad", "grads[0]"))
    for v, get in fields:
        if counts.get(v, 0) > 1:
            pre.append(f"{v} = {get}")
        else:
            slots[v] = get
    if slots:
        expr = ast.unparse(_Fields(slots).visit(ast.parse(expr, mode="eval")))
    return pre, expr, post


def emit_node(e, info):
    """The Node class: its slots (the saved fields, see record.TraceableFunction) and apply()."""
    slots = ([_slot(n) for n in info.saved_tensors + info.saved_outputs]
             + [_meta_slot(info, n) for n in info.saved_meta] + [_slot(n) for n in info.saved_values])
    lst = next((n for n in info.diff_inputs if n in info.list_args), None)
    if lst:
        slots.append("_nlist")
    # saved=k: the first k slots hold saved tensors, outputs=m: the last m of them outputs, meta=j:
    # the j slots after them saved metadata (TraceableFunction.__init_subclass__)
    k = len(info.saved_tensors + info.saved_outputs)
    m = len(info.saved_outputs)
    j = len(info.saved_meta)
    if (not slots and len(info.diff_inputs) == 1 and info.formulas[0][1].strip() == "zeros_like(grad)"
            and getattr(info, "node_name", info.cls) == info.cls):
        e(f"class {info.cls}(ZerosLikeGrad):")  # formulas.py: apply returns (zeros_like(grad),)
        e("    __slots__ = ()")
        e()
        return
    e(f"class {info.cls}(TraceableFunction{f', saved={k}' if k else ''}{f', outputs={m}' if m else ''}"
      f"{f', meta={j}' if j else ''}):")
    e(f"    __slots__ = {tuple(slots)!r}")
    if getattr(info, "node_name", info.cls) != info.cls:
        e(f"    _node_name = {info.node_name!r}")
    e("    def apply(_node, grads):")
    if len(info.diff_inputs) == 1 and not lst:
        # one input: the node exists only because that input needs a gradient
        (_keys, expr), names = info.formulas[0], info.uses[0]
        pre, expr, post = _formula_body(info, expr, names, len(info.outnames) == 1)
        for x in pre:
            e(f"        {x}")
        if post("_o0"):
            e(f"        _o0 = {expr}")
            for x in post("_o0"):
                e(f"        {x}")
            expr = "_o0"
        e(f"        return ({expr},)")
        e()
        return
    if len(info.outnames) == 1:
        e("        grad, _nf = grads[0], _node._next")
    else:
        e("        _nf = _node._next")
    if lst:
        # a Tensor[] input: its gradients fill a slice of the output list
        e("        _out = [None] * len(_nf)")
        e("        _k = _node._nlist")
        pos = {}
        off = "0"
        for n in info.diff_inputs:
            pos[n] = off
            off = f"{off} + {'_k' if n in info.list_args else '1'}"
        target = {k: f"_out[{p}]" for k, p in pos.items()}
    else:
        # fixed positions: one local per input, returned as a tuple
        pos = {n: str(i) for i, n in enumerate(info.diff_inputs)}
        target = {n: f"_o{i}" for i, n in enumerate(info.diff_inputs)}
        e("        " + " = ".join(target[n] for n in info.diff_inputs) + " = None")
    for (keys, expr), names in zip(info.formulas, info.uses):
        conds = []
        for k in keys:
            p = pos[k]
            if k in info.list_args:
                conds.append(f"any(x is not None for x in _nf[{p}:{p} + _k])")
            else:
                conds.append(f"_nf[{p}] is not None")
        e(f"        if {' or '.join(conds)}:")
        # saved tensors are unpacked only where a formula needs them: a tensor changed in place
        # since it was saved is an error only for the gradients that read it
        pre, expr, post = _formula_body(info, expr, names)
        for x in pre:
            e(f"            {x}")
        if len(keys) == 1:
            k = keys[0]
            if k in info.list_args:
                e(f"            _out[{pos[k]}:{pos[k]} + _k] = {expr}")
            else:
                e(f"            {target[k]} = {expr}")
                for x in post(target[k]):
                    e(f"            {x}")
        else:
            e(f"            {', '.join(target[k] for k in keys)}, *_ = {expr}")
    if lst:
        e("        return _out")
    else:
        e("        return (" + ", ".join(target[n] for n in info.diff_inputs) + ")")
    e()


def _assign(e, targets, values):
    """`_n.a, _n.b = x, y` on one line where it fits, else one line each."""
    line = f"    {', '.join(targets)} = {', '.join(values)}"
    if len(targets) == 1 or len(line) <= 190:
        e(line)
    else:
        for t, v in zip(targets, values):
            e(f"    {t} = {v}")


def _guarded(info, n, expr):
    """expr, or None when the only gradient that reads saved field n is not needed."""
    k = info.save_guard.get(n)
    return expr if k is None else f"{expr} if _next[{k}] is not None else None"


def emit_kernel(e, info, decl, kind):
    """Autograd kernel for the functional op or its in-place variant (VariableType's kernels): the
    node with its edges, the saved inputs, the call below, the history of the results."""
    params = [pyname(a.name) for a in decl.schema.arguments]
    fn = f"_ag_{decl.ident}"
    call = f"below({', '.join(params)})"
    inplace = kind == "inplace"
    inputs = [("*" if n in info.list_args else "") + pyname(n) for n in info.diff_inputs]
    if (inplace and inputs == [params[0]] and info.diff_cond is None and not info.saved_meta
            and not info.saved_values and not info.saved_tensors and not info.saved_outputs):
        # sign_, fill_, the random fills...: the shared kernel (record.py), one line instead of seven
        e(f"{fn} = _record_inplace_1({info.cls})")
        e()
        return fn
    e(f"def {fn}({', '.join(params)}, below=None):")  # below: bound by the dispatcher (operator._bind_below)
    if len(inputs) == 1 and inputs[0][0] == "*":
        edges = f"_collect_next_edges({inputs[0][1:]})"  # a Tensor[]
    elif len(inputs) <= 2 and not any(x[0] == "*" for x in inputs):
        edges = f"_collect_next_edges_{len(inputs)}({', '.join(inputs)})"  # no loop: most ops
    else:
        edges = f"_collect_next_edges(({', '.join(inputs)}))"
    # grad mode off, or no input needs a gradient: nothing to record
    e(f"    if not (_ag := _st().ag) or not (_next := {edges}):")
    e(f"        return {call}")
    if info.diff_cond is not None:
        e(f"    if not ({info.diff_cond}):")
        e(f"        return {call}")
    if inplace:
        e(f"    _check_inplace({params[0]})")
    e(f"    _n = {info.cls}()")
    lst = next((n for n in info.diff_inputs if n in info.list_args), None)
    if lst:
        e(f"    _n._nlist = len({pyname(lst)})")
    single_tensor = (not inplace and len(info.outnames) == 1 and info.decl.schema.returns
                     and not info.decl.schema.returns[0].is_list)
    deferred = info.r_to_c_only if single_tensor else []  # stored after the call, if complex
    metas = [n for n in info.saved_meta if n not in deferred]
    if metas:
        _assign(e, [f"_n.{_meta_slot(info, n)}" for n in metas], [_guarded(info, n, _meta_expr(n, info.list_args))
                                                                  for n in metas])
    if info.saved_values:
        _assign(e, [f"_n.{_slot(n)}" for n in info.saved_values], [pyname(n) for n in info.saved_values])
    # inputs are saved before the call (an in-place op changes self), in schema order
    targets, values = [], []
    for n in info.saved_tensors:
        v = pyname(n)
        targets.append(f"_n.{_slot(n)}")
        if inplace and n == info.argnames[0]:
            values.append(f"_save_input(_clone_nograd({v}), _ag)")
        elif n in info.list_args:
            values.append(f"_save_inputs({v}, _ag)")
        elif not inplace:
            values.append(_guarded(info, n, f"_save_input({v}, _ag)"))
        else:
            values.append(f"_save_input({v}, _ag)")
    if targets:
        _assign(e, targets, values)
    if inplace:
        e(f"    {call}")
        if not info.saved_outputs:
            e(f"    return _n._rebase_history({params[0]}, _next)")
        else:
            e(f"    _n._rebase_history({params[0]}, _next)")
            for n in info.saved_outputs:
                e(f"    _n.{_slot(n)} = _save_output({params[0]}, _ag)")
            e(f"    return {params[0]}")
        e()
        return fn
    if deferred:
        e(f"    result = {call}")
        e("    if result._dtype.category == 3:  # a complex result: its real inputs take .real")
        for n in deferred:
            e(f"        _n.{_meta_slot(info, n)} = {_meta_expr(n, info.list_args)}")
        call = "result"
    rets = info.decl.schema.returns
    if len(info.outnames) == 1 and not rets[0].is_list:
        hist = f"_n._set_history({call}, _next, _ag)"
    elif len(info.outnames) == 1 or all(info.out_diff):
        hist = f"_n._set_outputs_history({call}, _next)"
    else:
        which = tuple(i for i, d in enumerate(info.out_diff) if d)
        hist = f"_n._set_outputs_history({call}, _next, {which!r})"
    if not info.saved_outputs:
        e(f"    return {hist}")
    elif info.saved_outputs == ["result"] and hist.startswith("_n._set_history("):
        # the op's own result, saved in the same call (record.Node._set_history_saved)
        e(f"    return {hist.replace('_set_history(', '_set_history_saved(', 1)}")
    else:
        e(f"    result = {hist}")
        for n in info.saved_outputs:
            idx = info.outnames.index(n)
            val = "result" if len(info.outnames) == 1 else f"result[{idx}]"
            e(f"    _n.{_slot(n)} = _save_output({val}, _ag)")
        e("    return result")
    e()
    return fn


HEADER = """from ember.autograd.formulas import *  # noqa: F401,F403
from ember.autograd.formulas import _device_of, _dim_of, _dtype_of, _numel_of, _sizes_of, _strides_of  # noqa: F401
from ember.autograd.graph import collect_next_edges as _collect_next_edges, save_output as _save_output
from ember.autograd.graph import collect_next_edges_1 as _collect_next_edges_1, unpack as _unpack
from ember.autograd.graph import collect_next_edges_2 as _collect_next_edges_2, unpack_list as _unpack_list
from ember.autograd.graph import unpack_output as _unpack_output
from ember.autograd.record import TraceableFunction, record_inplace_1 as _record_inplace_1, save_input as _save_input
from ember.autograd.record import save_inputs as _save_inputs
from ember.autograd.views import check_inplace as _check_inplace, clone_nograd as _clone_nograd
from ember.autograd.views import out_kernel as _out_kernel
from ember.core import tls as _tls
from ember.core.dtype import float32 as _REAL
from ember.core.tensor_impl import TensorImpl as _TI, tensor_class as _tcls
import ember  # noqa: F401

_st = _tls.current
_T = _tcls[0]  # ember.Tensor: the class whose conj() the formulas may skip for real dtypes
_V0 = (0,)  # the version of a tensor without a counter yet (apply's inline check of a bare input)
"""


def _wrap(line, limit=150):
    """A long generated line broken after commas inside brackets, continuation lines indented 8 more."""
    if len(line) <= limit or "#" in line:
        return [line]
    cuts, depth, quote = [], 0, None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth > 0 and line[i + 1:i + 2] == " ":
            cuts.append(i + 2)
    pad = " " * (len(line) - len(line.lstrip()) + 8)
    out, start, width = [], 0, 0
    for j, cut in enumerate(cuts):
        nxt = cuts[j + 1] if j + 1 < len(cuts) else len(line)
        if width + nxt - start > limit:
            out.append(line[start:cut].rstrip())
            start, width = cut, len(pad)
    out.append(line[start:])
    return [out[0]] + [pad + x for x in out[1:]]


def gen_autograd(decls, header):
    from _model import Decl  # noqa: F401
    by_name = {d.schema.full_name: d for d in decls}
    lines = []

    def e(x=""):
        lines.append(x)
    e(header)
    e('"""Autograd Node classes and Autograd-key kernels."""')
    e(HEADER)
    for f in sorted(glob.glob(os.path.join(_HERE, "..", "autograd", "formulas_*.py"))):
        mod = os.path.basename(f)[:-3]
        e(f"from ember.autograd.{mod} import *  # noqa: F401,F403,E402")
    e()
    counters = {}
    used_cls = set()
    registrations = []
    entries = load_derivatives()
    from _schema import parse_schema as _ps
    own_entry = {_ps(en["name"]).full_name for en in entries}
    for entry in entries:
        from _schema import parse_schema
        full = parse_schema(entry["name"]).full_name
        decl = by_name.get(full)
        if decl is None:
            raise ValueError(f"derivatives entry for undeclared operator {full}")
        base = camel(decl.schema.name)
        n = counters.get(base, 0)
        counters[base] = n + 1
        node_name = entry.get("node") or f"{base}Backward{n}"
        cls = re.sub(r"\W", "_", node_name)
        k = 1
        while cls in used_cls:  # two entries may share PyTorch's node name: classes must differ
            cls = re.sub(r"\W", "_", node_name) + f"_{k}"
            k += 1
        used_cls.add(cls)
        info = Info(entry, decl, cls)
        info.node_name = node_name
        emit_node(e, info)
        fn = emit_kernel(e, info, decl, "inplace" if decl.kind == "inplace" else "functional")
        registrations.append((decl.ident, fn))
        if decl.inplace is not None and decl.inplace.schema.full_name not in own_entry:
            fn = emit_kernel(e, info, decl.inplace, "inplace")
            registrations.append((decl.inplace.ident, fn))
        if decl.out is not None:
            registrations.append((decl.out.ident, f"_out_kernel({decl.name!r})"))
    outs = [(i, f) for i, f in registrations if f.startswith("_out_kernel(")]
    assert all(f == "_ag_" + i for i, f in registrations if not f.startswith("_out_kernel("))
    e("# (operator overload, Autograd kernel) pairs: each _ag_<overload> above; then the out= variants,")
    e("# whose kernel refuses arguments that require grad (one line per op: its name, its out= overloads)")
    e('REGISTRATIONS = [(name[4:], fn) for name, fn in list(globals().items()) if name.startswith("_ag_")]')
    groups = {}
    for i, f in outs:
        groups.setdefault(f[len("_out_kernel("):-1], []).append(i)
    e("OUT_VARIANTS = [")
    for name, idents in groups.items():
        e(f"    ({name}, " + ", ".join(repr(i) for i in idents) + "),")
    e("]")
    e("REGISTRATIONS += [(ident, _out_kernel(name)) for name, *idents in OUT_VARIANTS for ident in idents]")
    # a Node class and its Autograd kernels read as one block: no blank line inside it
    out = [x for line in lines for x in _wrap(line)]
    out = [x for i, x in enumerate(out) if x or i + 1 == len(out) or not out[i + 1].startswith("def _ag_")]
    return "\n".join(out) + "\n"
