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
        # dtypes read only by a top-level handle_r_to_c(<dtype>, ...): a gradient reaching the node
        # is complex only when its output is, so the kernel stores them only for a complex result
        other_uses = set()
        for _keys, expr in self.formulas:
            rc = _split_r_to_c(expr)
            inner = rc[1] if rc else expr
            other_uses |= {n.id for n in ast.walk(ast.parse(inner, mode="eval")) if isinstance(n, ast.Name)}
        self.r_to_c_only = [n for n in self.saved_meta if n.endswith("_dtype") and n not in other_uses
                            and n.rsplit("_", 1)[0] not in self.list_args]


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


def _emit_unpack(e, info, n, ind):
    """Unpack saved tensor `n` into a local of the same name, as inline as possible."""
    v = pyname(n)
    if n in info.list_args:
        e(f"{ind}{v} = _unpack_list(_node.{_slot(n)})")
    elif n in info.saved_outputs:  # outputs are always SavedVariables (see graph.save)
        e(f"{ind}{v} = _node.{_slot(n)}.unpack(_node)")
    else:  # the tuple form (tensor, version, output_nr), or a SavedVariable
        e(f"{ind}_s = _node.{_slot(n)}")
        e(f"{ind}if _s.__class__ is _T:  # saved at version 0")
        e(f"{ind}    {v} = _s")
        e(f"{ind}    if _s._vc is not None and _s._vc[0]:")
        e(f"{ind}        _verr((_s, 0, 0))")
        e(f"{ind}elif _s.__class__ is tuple:")
        e(f"{ind}    {v} = _s[0]")
        e(f"{ind}    _vc = {v}._vc")
        e(f"{ind}    if _vc is not None and _vc[0] != _s[1]:")
        e(f"{ind}        _verr(_s)")
        e(f"{ind}else:")
        e(f"{ind}    {v} = _s.unpack(_node)")


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
    if not (info.saved_tensors or info.saved_outputs):
        e("    _saves = False")
    e("    __init__ = object.__init__  # the kernel sets the fields: a C-level init is the cheapest call")
    e()
    e("    def apply(_node, grads):")
    single = len(info.outnames) == 1
    if single:
        e("        grad = grads[0]")
    e("        _nf = _node._next")
    # positions of each differentiable input in _nf
    lst = next((n for n in info.diff_inputs if n in info.list_args), None)
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
        expr = _inline_helpers(info, expr)
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
                _emit_unpack(e, info, n, "            ")
        for n in info.saved_values:
            if n in names:
                e(f"            {pyname(n)} = _node.{_slot(n)}")
        for n in info.saved_meta:
            if n in names and n not in info.r_to_c_only:
                e(f"            {n} = _node.{n}")
        if len(keys) == 1:
            k = keys[0]
            if k in info.list_args:
                e(f"            _out[{pos[k]}:{pos[k]} + _k] = {expr}")
            else:
                rc = _split_r_to_c(expr)
                if rc is None:
                    e(f"            {target[k]} = {expr}")
                else:
                    e(f"            _g = {rc[1]}")
                    dt = (f"getattr(_node, {rc[0]!r}, _REAL)" if rc[0] in info.r_to_c_only
                          else rc[0])  # (unset: the output and so the inputs were real)
                    e(f"            if _g is not None and _g._dtype.category == 3 and {dt}.category != 3:")
                    e("                _g = _g.real")
                    e(f"            {target[k]} = _g")
        else:
            e(f"            _r = {expr}")
            for i, k in enumerate(keys):
                e(f"            {target[k]} = _r[{i}]")
    if lst:
        e("        return _out")
    else:
        e("        return (" + "".join(target[n] + ", " for n in info.diff_inputs).rstrip() + ")")
    e()
    e("    def release_variables(_node):")
    e("        _node._released = True")
    saved = info.saved_tensors + info.saved_outputs
    if saved:
        e("        " + " = ".join(f"_node.{_slot(n)}" for n in saved) + " = _FREED")
    e()
    for n in info.saved_tensors + info.saved_outputs:
        e("    @property")
        e(f"    def _saved_{n}(_node):")
        if n in info.list_args:
            e(f"        return _unpack_list(_node.{_slot(n)})")
        else:
            e(f"        return _unpack(_node.{_slot(n)})")
        e()
    for n in info.saved_values:
        e("    @property")
        e(f"    def _saved_{n}(_node):")
        e(f"        return _node.{_slot(n)}")
        e()
    for n in info.saved_meta:
        if n in info.r_to_c_only:
            continue
        e("    @property")
        e(f"    def _saved_{n}(_node):")
        e(f"        return _node.{n}")
        e()
    e()


def _emit_edge(e, v, i):
    """The edge of differentiable input `v` into _e<i> (edge() inlined for a non-view with history),
    keeping its AutogradMeta in _m<i> (None for a number or a tensor without autograd fields)."""
    e("    try:")
    e(f"        _m{i} = {v}._ameta")
    e("    except AttributeError:")
    e(f"        _m{i} = None")
    e(f"    if _m{i} is None:")
    e(f"        _e{i} = None")
    e(f"    elif {v}._base is None:")
    e(f"        _f = _m{i}.grad_fn")
    e("        if _f is not None:")
    e(f"            _e{i} = (_f, _m{i}.output_nr)")
    e(f"        elif _m{i}.requires_grad:  # a leaf: its AccumulateGrad while the graph holds it")
    e(f"            _f = _m{i}.grad_accumulator")
    e("            _f = _f() if _f is not None else None")
    e(f"            _e{i} = (_f, 0) if _f is not None else _edge({v})")
    e("        else:")
    e(f"            _e{i} = None")
    e("    else:")
    e(f"        _e{i} = _edge({v})")


def emit_kernel(e, info, decl, kind):
    """Autograd kernel for the functional op or its in-place variant."""
    params = [pyname(a.name) for a in decl.schema.arguments]
    fn = f"_ag_{decl.ident}"
    e(f"def {fn}(below, {', '.join(params)}):")
    call = f"below({', '.join(params)})"
    e("    _ag = _st.ag")
    e("    if not _ag:")
    e(f"        return {call}")
    has_list = any(n in info.list_args for n in info.diff_inputs)
    meta_of = {}  # diff input -> the local holding its AutogradMeta
    edges = []
    for i, n in enumerate(info.diff_inputs):
        v = pyname(n)
        if n in info.list_args:
            edges.append(f"*[_edge(t) for t in {v}]")
        else:
            _emit_edge(e, v, i)
            meta_of[n] = f"_m{i}"
            edges.append(f"_e{i}")
    if has_list:
        e(f"    _e = ({', '.join(edges)},)")
        e("    if _e.count(None) == len(_e):")
        e(f"        return {call}")
    else:
        e(f"    if {' and '.join(x + ' is None' for x in edges)}:")
        e(f"        return {call}")
    inplace = kind == "inplace"
    if inplace:
        e(f"    _check_inplace({params[0]})")
    # saves of inputs happen before the call (the in-place op changes self)
    e(f"    _n = {info.cls}()")
    e("    _n._seq = _nseq()")
    e("    _n._next = _e" if has_list else f"    _n._next = ({''.join(x + ', ' for x in edges).rstrip()})")
    lst = next((n for n in info.diff_inputs if n in info.list_args), None)
    if lst:
        e(f"    _n._nlist = len({pyname(lst)})")
    single_tensor = (kind != "inplace" and len(info.outnames) == 1 and info.decl.schema.returns
                     and not info.decl.schema.returns[0].is_list)
    deferred = info.r_to_c_only if single_tensor else []  # stored after the call, if complex
    for n in info.saved_meta:
        if n not in deferred:
            e(f"    _n.{n} = {_meta_expr(n, info.list_args)}")
    for n in info.saved_values:
        e(f"    _n.{_slot(n)} = {pyname(n)}")
    plain = []  # saved inputs that take the inline tuple form
    for n in info.saved_tensors:
        v = pyname(n)
        if inplace and n == info.argnames[0]:
            e(f"    _n.{_slot(n)} = _save(_clone_nograd({v}))")
        elif n in info.list_args:
            e(f"    _n.{_slot(n)} = [_save(t) for t in {v}]")
        elif n in meta_of:
            plain.append(n)
        else:
            e(f"    _n.{_slot(n)} = _save({v})")
    if plain:
        # saved-tensor hooks see the tensors in schema order; without hooks, the tuple form
        e("    if _ag == 2:  # saved-tensor hooks (or anomaly mode): SavedVariable")
        for n in plain:
            e(f"        _n.{_slot(n)} = _SV({pyname(n)}, False)")
        e("    else:")
        for n in plain:
            v, m = pyname(n), meta_of[n]
            e("        try:")
            e(f"            _vc = {v}._vc")
            e("        except AttributeError:")
            e(f"            _n.{_slot(n)} = _SV({v}, False)")
            e("        else:")
            e(f"            if _vc is None and {v}.__class__ is _T and ({m} is None or not {m}.output_nr):")
            e(f"                _n.{_slot(n)} = {v}  # at version 0, output 0: no tuple needed")
            e("            else:")
            e(f"                _n.{_slot(n)} = ({v}, 0 if _vc is None else _vc[0], "
              f"0 if {m} is None else {m}.output_nr)")
    if inplace:
        e("    _n._input_meta = []")
        e(f"    {call}")
        e(f"    _rebase({params[0]}, _n)")
        for n in info.saved_outputs:
            e(f"    _n.{_slot(n)} = _SV({params[0]}, True)")
        e(f"    return {params[0]}")
    else:
        e(f"    result = {call}")
        if deferred:
            e("    if result._dtype.category == 3:  # a complex result: its real inputs take .real")
            for n in deferred:
                e(f"        _n.{n} = {_meta_expr(n, info.list_args)}")
        if len(info.outnames) == 1:
            if info.decl.schema.returns and info.decl.schema.returns[0].is_list:
                e("    _n._input_meta = []")
                e("    for _i, _t in enumerate(result):")
                e("        _sh(_t, _n, _i)")
            else:
                # set_history inlined for a fresh non-view result (the common case)
                e("    if result._ameta is None and result._base is None and _ag == 1:")
                e("        _m = result._ameta = _AM()")
                e("        _m.requires_grad = True")
                e("        _m.grad_fn = _n")
                e("        result._keys = _WAG.get(result._keys) or _wag(result)")
                e("        _n._input_meta = [(result._shape, result._dtype, result._device)]")
                e("    else:")
                e("        _n._input_meta = []")
                e("        _sh(result, _n)")
        else:
            e("    _n._input_meta = []")
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


HEADER = """from ember.autograd.formulas import *  # noqa: F401,F403
from ember.autograd.formulas import _device_of, _dim_of, _dtype_of, _numel_of, _sizes_of  # noqa: F401
from ember.autograd.graph import FREED as _FREED, Node, SavedVariable as _SV, edge as _edge, \\
    next_seq as _nseq, raise_version_error as _verr, save as _save, set_history as _sh, unpack as _unpack, \\
    unpack_list as _unpack_list
from ember.autograd.meta import _WITH_AUTOGRAD as _WAG, AutogradMeta as _AM, with_autograd_key as _wag
from ember.autograd.views import check_inplace as _check_inplace, clone_nograd as _clone_nograd, \\
    rebase_history as _rebase
from ember.core import tls as _tls
from ember.core.dtype import float32 as _REAL
from ember.core.tensor_impl import TensorImpl as _TI, tensor_class as _tcls
import ember  # noqa: F401

_st = _tls.state
_T = _tcls[0]  # ember.Tensor: the class whose conj() the formulas may skip for real dtypes
_new = object.__new__
"""


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
