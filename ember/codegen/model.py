"""The declarations read from ops/native_functions/*.yaml, with in-place and out= variants derived."""
import glob
import os

import yaml

from _schema import _fmt_default, parse_schema  # loaded by path: the generator must run without ember

OPS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "ops")

# PyTorch lets these accept a Python number for their first Tensor argument too
NUMBERS_AS_TENSORS = {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                      "floor_divide", "remainder", "bitwise_and", "bitwise_or",
                      "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "pow"}


class Decl:
    """One operator overload as declared (functional, in-place or out)."""

    def __init__(self, schema_text, entry, kind, functional=None):
        self.schema = parse_schema(schema_text)
        self.text = schema_text.strip()
        self.entry = entry
        self.kind = kind            # "functional" | "inplace" | "out"
        self.functional = functional
        self.variants = [v.strip() for v in str(entry.get("variants", "function")).split(",")]
        self.dispatch = dict(entry.get("dispatch") or {})
        self.tags = [t.strip() for t in str(entry.get("tags", "")).split(",") if t.strip()]
        if entry.get("structured"):  # torch's `structured: True`: only the wrapper name depends on it
            self.tags.append("structured")
        self.python_module = entry.get("python_module")
        self.python_name = entry.get("python_name")
        self.inplace = None
        self.out = None

    @property
    def ident(self):
        s = self.schema
        return (s.name + ("_" + s.overload if s.overload else "")).replace(".", "_")

    @property
    def name(self):
        return self.schema.name


def _derive_inplace(schema, name):
    args = []
    for i, a in enumerate(schema.arguments):
        if i == 0:
            args.append(f"Tensor(a!) {a.name}")
        else:
            args.append(_arg_text(a))
    _insert_star(args, schema)
    ov = "." + schema.overload if schema.overload else ""
    return f"{name}{ov}({', '.join(args)}) -> Tensor(a!)"


def _arg_text(a):
    s = f"{a.type} {a.name}"
    if a.has_default:
        s += "=" + _fmt_default(a.default)
    return s


def _insert_star(args, schema):
    for i, a in enumerate(schema.arguments):
        if a.kwarg_only:
            args.insert(i, "*")
            return


def _derive_out(schema, spec):
    name, _, overload = spec.partition(".")
    args = [_arg_text(a) for a in schema.arguments]
    _insert_star(args, schema)
    if "*" not in args:
        args.append("*")
    rets = schema.returns
    if len(rets) == 1:   # the backward kernels' out= overloads name it grad_input, as in ATen
        args.append("Tensor(a!) grad_input" if overload == "grad_input" else "Tensor(a!) out")
        ret = "Tensor(a!)"
    else:
        letters = "abcdefgh"
        names = [r.name or f"out{i}" for i, r in enumerate(rets)]
        for i, n in enumerate(names):
            args.append(f"Tensor({letters[i]}!) {n}")
        ret = "(" + ", ".join(f"Tensor({letters[i]}!) {n}" for i, n in enumerate(names)) + ")"
    return f"{name}.{overload}({', '.join(args)}) -> {ret}"


def load():
    decls = []
    files = sorted(glob.glob(os.path.join(OPS_DIR, "native_functions", "*.yaml")))
    for f in files:
        with open(f) as fh:
            entries = yaml.safe_load(fh) or []
        for e in entries:
            d = Decl(e["func"], e, "functional")
            if d.schema.is_inplace:
                d.kind = "inplace"
            elif d.schema.is_out:
                d.kind = "out"
            decls.append(d)
            for spec in [s.strip() for s in str(e.get("autogen", "")).split(",") if s.strip()]:
                nm = spec.split(".")[0]
                if nm.endswith("_") and not d.name.endswith("_"):
                    sub = Decl(_derive_inplace(d.schema, nm), {"variants": "method",
                               "dispatch": {}}, "inplace", d)
                    d.inplace = sub
                    if "function" in e.get("inplace_variants", ""):
                        sub.variants = ["function", "method"]
                else:
                    sub = Decl(_derive_out(d.schema, spec), {"variants": "function", "dispatch": {},
                               "python_module": e.get("python_module")}, "out", d)
                    d.out = sub
                decls.append(sub)
    # explicitly declared out= overloads serve their functional op's binding (`out=` keyword)
    funcs = [d for d in decls if d.kind == "functional"]
    for o in decls:
        if o.kind != "out" or o.functional is not None:
            continue
        sig = [(a.name, a.type) for a in o.schema.arguments if not (a.is_write and a.kwarg_only)]
        for f in funcs:
            if f.name == o.name and f.out is None and \
                    [(a.name, a.type) for a in f.schema.arguments] == sig:
                f.out = o
                break
    names = set()
    for d in decls:
        k = d.schema.full_name
        if k in names:
            raise ValueError(f"operator declared twice: {k}")
        names.add(k)
    return decls
