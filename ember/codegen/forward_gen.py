"""Forward-mode AD codegen: the tangent formula table from the `result:` entries of derivatives*.yaml.

PyTorch's forms (tools/autograd/derivatives.yaml):
- `result: <expr>`: the tangent of the result, written with ember ops. Names: the op's arguments (the
  primals; PyTorch's `<arg>_p` is accepted too), `<arg>_t` for the tangent of each differentiable
  input (a zero tensor where the input has none; a list for a Tensor[] input), and the outputs (`result`
  or their schema names). A multi-output op gives a tuple with None for outputs without a tangent.
- `result: auto_element_wise`: the backward formula of the op's one differentiable input with `grad`
  replaced by the conjugated tangent, conjugated (valid for element-wise ops: the Jacobian is diagonal).
- `result: auto_linear`: the op is linear in its differentiable inputs: the tangent is the op applied to
  the tangents.
- `result: linearized`: the tangent is the transpose of the backward formula (u -> J^T u is linear in u,
  so J t is the gradient of <J^T u, t> with respect to u): ember's form for the ops whose PyTorch forward
  formula is not written in ember terms yet; the numbers are the same Jacobian's.
An entry without `result:` has no forward derivative: forward AD through it raises PyTorch's error
(`result: not_implemented("name")`: the same, naming the function PyTorch names).
In-place variants use their functional op's formula (the forward AD layer updates the tangent in place).
"""
import ast
import re

from _agen import META_SUFFIXES, Info, _wrap, load_derivatives, pyname  # noqa: F401

HEADER = '''"""Forward-mode AD tangent formulas, one line per op: `"op.overload": _f(differentiable input positions,
formula)`. The formula takes the op's arguments, then one tangent per differentiable input, then the
outputs; LINEAR, LINEARIZED: see ember/codegen/forward_gen.py; None (or the name PyTorch's error gives):
no forward derivative."""
from ember.autograd.formulas import *  # noqa: F401,F403
from ember.autograd.formulas import _device_of, _dim_of, _dtype_of, _numel_of, _sizes_of  # noqa: F401
from ember.autograd.forward_formulas import *  # noqa: F401,F403
from ember.autograd.forward_formulas import LINEAR, LINEARIZED, formula as _f
import ember  # noqa: F401
'''


class _Rename(ast.NodeTransformer):
    def __init__(self, table):
        self.table = table

    def visit_Name(self, node):
        new = self.table.get(node.id)
        if new is not None and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.parse(new, mode="eval").body, node)
        return node


def _rename(expr, table):
    tree = ast.parse(expr, mode="eval")
    return ast.unparse(ast.fix_missing_locations(_Rename(table).visit(tree)))


def _meta_names(info, expr):
    out = {}
    for n in ast.walk(ast.parse(expr, mode="eval")):
        if isinstance(n, ast.Name) and n.id.endswith(META_SUFFIXES):
            base, suf = n.id.rsplit("_", 1)
            if base in info.tensor_args:
                out[n.id] = f"_{suf}_of({pyname(base)})"
    return out


def forward_expr(info, result):
    """The formula's Python expression, or the LINEAR / LINEARIZED marker."""
    if result == "auto_linear":
        return "LINEAR"
    if result == "linearized":
        return "LINEARIZED"
    if result == "auto_element_wise":
        if len(info.diff_inputs) != 1 or len(info.formulas) != 1:
            raise ValueError(f"{info.decl.schema.full_name}: auto_element_wise needs one differentiable input")
        x = info.diff_inputs[0]
        expr = info.formulas[0][1]
        table = _meta_names(info, expr)
        table["grad"] = f"conj({pyname(x)}_t)"
        return f"conj({_rename(expr, table)})"
    table = _meta_names(info, result)
    for a in info.argnames:
        table[f"{a}_p"] = pyname(a)
    return _rename(result, table)


def gen_forward(decls, header):
    by_name = {d.schema.full_name: d for d in decls}
    from _schema import parse_schema
    import glob
    import os
    lines = [header, HEADER.rstrip("\n")]
    for f in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "autograd",
                                           "formulas_*.py"))):
        lines.append(f"from ember.autograd.{os.path.basename(f)[:-3]} import *  # noqa: F401,F403")
    lines += ["", "FORMULAS = {"]
    for entry in load_derivatives():
        full = parse_schema(entry["name"]).full_name
        decl = by_name[full]
        info = Info(entry, decl, "_")
        result = entry.get("result")
        if result is None:
            if decl.kind == "inplace":
                continue  # the forward AD layer uses the functional op's formula, or its error
            lines.append(f"    {full!r}: None,")
            continue
        m = re.fullmatch(r'not_implemented\("([\w:]+)"\)', str(result))
        if m:  # no forward derivative; PyTorch's error names this function
            lines.append(f"    {full!r}: {m.group(1)!r},")
            continue
        expr = forward_expr(info, str(result))
        pos = tuple(info.argnames.index(n) for n in info.diff_inputs)
        extra = ""
        lst = next((i for i, n in zip(pos, info.diff_inputs) if n in info.list_args), None)
        if lst is not None:
            extra += f", lst={lst}"
        if len(info.outnames) > 1 and not all(info.out_diff):
            extra += f", outs={tuple(info.out_diff)!r}"
        if expr in ("LINEAR", "LINEARIZED"):
            lines.append(f"    {full!r}: _f({pos!r}, {expr}{extra}),")
            continue
        params = [pyname(a) for a in info.argnames] + [f"{pyname(n)}_t" for n in info.diff_inputs]
        params += [pyname(n) for n in info.outnames]
        lines.append(f"    {full!r}: _f({pos!r}, lambda {', '.join(params)}: {expr}{extra}),")
    lines.append("}")
    out = [x for line in lines for x in _wrap(line)]
    text = "\n".join(out) + "\n"
    assert not re.search(r"^.{201,}$", text, re.M)
    return text
