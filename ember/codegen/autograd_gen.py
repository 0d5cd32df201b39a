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
META_SUFFIXES = ("_sizes", "_dtype", "_device", "_numel", "_dim")


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


def _slot(n):
    return n + "_"


def _meta_expr(n, src):
    base, suf = n.rsplit("_", 1)
    if base in src:
        return {"sizes": f"[tuple(t._shape) for t in {pyname(base)}]",
                "dtype": f"[t._dtype for t in {pyname(base)}]",
                "device": f"[t._device for t in {pyname(base)}]",
                "numel": f"[t.numel() for t in {pyname(base)}]",
                "dim": f"[len(t._shape) for t in {pyname(base)}]"}[suf]
    v = pyname(base)
    if suf == "dtype":  # a Python number may stand for a Tensor argument: the helper handles it
        return f"{v}._dtype if isinstance({v}, _TI) else _dtype_of({v})"
    if suf == "sizes":
        return f"{v}._shape if isinstance({v}, _TI) else _sizes_of({v})"
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


def emit_node(e, info):
    slots = ([_slot(n) for n in info.saved_tensors + info.saved_outputs] + info.saved_meta
             + [_slot(n) for n in info.saved_values])
    if info.list_args & set(info.diff_inputs):
        slots.append("_nlist")
    e(f"class {info.cls}(Node):")
    e(f"    __slots__ = {tuple(slots)!r}")
    if getattr(info, "node_name", info.cls) != info.cls:
        e()
        e("    def name(_node):")
        e(f"        return {info.node_name!r}")
    e(f"    _saved_tensors_names = {tuple(info.saved_tensors + info.saved_outputs)!r}")
    e()
    e("    def apply(_node, grads):")
    single = len(info.outnames) == 1
    if single:
        e("        grad = grads[0]")
    e("        _nf = _node._next")
    e("        _out = [None] * len(_nf)")
    # positions of each differentiable input in _nf
    lst = next((n for n in info.diff_inputs if n in info.list_args), None)
    if lst:
        e("        _k = _node._nlist")
    pos = {}
    off = "0"
    for n in info.diff_inputs:
        pos[n] = off
        off = f"{off} + {'_k' if n in info.list_args else '1'}"
    for (keys, expr), names in zip(info.formulas, info.uses):
        conds = []
        for k in keys:
            p = pos[k]
            if k in info.list_args:
                conds.append(f"any(x is not None for x in _nf[{p}:{p} + _k])")
            else:
                conds.append(f"_nf[{p}] is not None")
        e(f"        if {' or '.join(conds)}:")
        for n in info.saved_tensors + info.saved_outputs:
            if n in names:
                if n in info.list_args:
                    e(f"            {pyname(n)} = [s.unpack() for s in _node.{_slot(n)}]")
                else:
                    e(f"            {pyname(n)} = _node.{_slot(n)}.unpack(_node)")
        for n in info.saved_values:
            if n in names:
                e(f"            {pyname(n)} = _node.{_slot(n)}")
        for n in info.saved_meta:
            if n in names:
                e(f"            {n} = _node.{n}")
        if len(keys) == 1:
            k = keys[0]
            if k in info.list_args:
                e(f"            _out[{pos[k]}:{pos[k]} + _k] = {expr}")
            else:
                rc = _split_r_to_c(expr)
                if rc is None:
                    e(f"            _out[{pos[k]}] = {expr}")
                else:
                    e(f"            _g = {rc[1]}")
                    e(f"            if _g is not None and _g._dtype.category == 3 and {rc[0]}.category != 3:")
                    e("                _g = _g.real")
                    e(f"            _out[{pos[k]}] = _g")
        else:
            e(f"            _r = {expr}")
            for i, k in enumerate(keys):
                e(f"            _out[{pos[k]}] = _r[{i}]")
    e("        return _out")
    e()
    e("    def release_variables(_node):")
    e("        _node._released = True")
    for n in info.saved_tensors + info.saved_outputs:
        if n in info.list_args:
            e(f"        for _s in _node.{_slot(n)}:")
            e("            _s.release()")
        else:  # SavedVariable.release, inlined
            e(f"        _s = _node.{_slot(n)}")
            e("        _s._released = True")
            e("        _s.data = _s.packed = None")
    e()
    for n in info.saved_tensors + info.saved_outputs:
        e("    @property")
        e(f"    def _saved_{n}(_node):")
        if n in info.list_args:
            e(f"        return [s.unpack() for s in _node.{_slot(n)}]")
        else:
            e(f"        return _node.{_slot(n)}.unpack()")
        e()
    for n in info.saved_values:
        e("    @property")
        e(f"    def _saved_{n}(_node):")
        e(f"        return _node.{_slot(n)}")
        e()
    for n in info.saved_meta:
        e("    @property")
        e(f"    def _saved_{n}(_node):")
        e(f"        return _node.{n}")
        e()
    e()


def emit_kernel(e, info, decl, kind):
    """Autograd kernel for the functional op or its in-place variant."""
    params = [pyname(a.name) for a in decl.schema.arguments]
    fn = f"_ag_{decl.ident}"
    e(f"def {fn}(below, {', '.join(params)}):")
    call = f"below({', '.join(params)})"
    e("    if not _st.grad_enabled:")
    e(f"        return {call}")
    edges = []
    for n in info.diff_inputs:
        if n in info.list_args:
            edges.append(f"*[_edge(t) for t in {pyname(n)}]")
        else:
            edges.append(f"_edge({pyname(n)})")
    e(f"    _e = ({', '.join(edges)},)")
    e("    if _e.count(None) == len(_e):")
    e(f"        return {call}")
    inplace = kind == "inplace"
    if inplace:
        e(f"    _check_inplace({params[0]})")
    # saves of inputs happen before the call (the in-place op changes self)
    e(f"    _n = {info.cls}()")
    e("    _n._next = _e")
    lst = next((n for n in info.diff_inputs if n in info.list_args), None)
    if lst:
        e(f"    _n._nlist = len({pyname(lst)})")
    for n in info.saved_meta:
        src = info.list_args
        e(f"    _n.{n} = {_meta_expr(n, src)}")
    for n in info.saved_values:
        e(f"    _n.{_slot(n)} = {pyname(n)}")
    for n in info.saved_tensors:
        v = pyname(n)
        if inplace and n == info.argnames[0]:
            e(f"    _n.{_slot(n)} = _SV(_clone_nograd({v}), False)")
        elif n in info.list_args:
            e(f"    _n.{_slot(n)} = [_SV(t, False) for t in {v}]")
        else:
            e(f"    _n.{_slot(n)} = _SV({v}, False)")
    if inplace:
        e(f"    {call}")
        e(f"    _rebase({params[0]}, _n)")
        for n in info.saved_outputs:
            e(f"    _n.{_slot(n)} = _SV({params[0]}, True)")
        e(f"    return {params[0]}")
    else:
        e(f"    result = {call}")
        if len(info.outnames) == 1:
            if info.decl.schema.returns and info.decl.schema.returns[0].is_list:
                e("    for _i, _t in enumerate(result):")
                e("        _sh(_t, _n, _i)")
            else:
                e("    _sh(result, _n)")
        else:
            for i, d in enumerate(info.out_diff):
                if d:  # an output left out by a mask (None) gets no history
                    e(f"    if result[{i}] is not None:")
                    e(f"        _sh(result[{i}], _n, {i})")
        for n in info.saved_outputs:
            idx = info.outnames.index(n)
            val = "result" if len(info.outnames) == 1 else f"result[{idx}]"
            e(f"    _n.{_slot(n)} = _SV({val}, True)")
        e("    return result")
    e()
    return fn


HEADER = '''from ember.autograd.formulas import *  # noqa: F401,F403
from ember.autograd.formulas import _device_of, _dim_of, _dtype_of, _numel_of, _sizes_of  # noqa: F401
from ember.autograd.graph import Node, SavedVariable as _SV, edge as _edge, set_history as _sh
from ember.autograd.views import check_inplace as _check_inplace, clone_nograd as _clone_nograd, \\
    rebase_history as _rebase
from ember.core import tls as _tls
from ember.core.tensor_impl import TensorImpl as _TI
import ember  # noqa: F401

_st = _tls.state
'''


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
            cls = f"{node_name}_{k}"
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
    e("from ember.autograd.views import out_kernel as _out_kernel  # noqa: E402")
    e("REGISTRATIONS = [" + ", ".join(f"({i!r}, {f})" for i, f in registrations) + "]")
    return "\n".join(lines) + "\n"
