"""FunctionSchema: PyTorch's operator schema grammar (aten/src/ATen/native/README.md)."""
import re


class Argument:
    __slots__ = ("name", "type", "default", "has_default", "kwarg_only", "alias", "is_write",
                 "optional", "is_list", "list_size", "base")

    def __init__(self, name, type_, default, has_default, kwarg_only):
        self.name = name
        self.type = type_
        self.default = default
        self.has_default = has_default
        self.kwarg_only = kwarg_only
        m = re.match(r"^(\w+)(\((\w)(!?)\))?(\[(\d*)\])?(\?)?(\[(\d*)\])?(\?)?$", type_)
        if m is None:
            raise ValueError(f"bad type in schema: {type_}")
        self.base = m.group(1)
        self.alias = m.group(3)
        self.is_write = bool(m.group(4))
        self.is_list = bool(m.group(5) or m.group(8))
        size = m.group(6) or m.group(9)
        self.list_size = int(size) if size else None
        self.optional = bool(m.group(7) or m.group(10))

    @property
    def is_tensor(self):
        return self.base == "Tensor" and not self.is_list

    @property
    def is_tensor_list(self):
        return self.base == "Tensor" and self.is_list

    def __repr__(self):
        s = f"{self.type} {self.name}"
        if self.has_default:
            s += "=" + _fmt_default(self.default)
        return s


class Return:
    __slots__ = ("name", "type", "alias", "is_write", "is_list")

    def __init__(self, type_, name):
        self.type = type_
        self.name = name
        m = re.match(r"^(\w+)(\((\w)(!?)\))?(\[\])?$", type_)
        self.alias = m.group(3) if m else None
        self.is_write = bool(m and m.group(4))
        self.is_list = bool(m and m.group(5))


def _fmt_default(v):
    if v is None:
        return "None"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(str(x) for x in v) + "]"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def _parse_default(s):
    s = s.strip()
    if s == "None":
        return None
    if s == "True":
        return True
    if s == "False":
        return False
    if s.startswith("[") and s.endswith("]"):
        inner = s[1:-1].strip()
        return tuple(_parse_default(x) for x in inner.split(",")) if inner else ()
    if s.startswith(("'", '"')):
        return s[1:-1]
    if s in ("contiguous_format", "Mean", "long"):  # enum-valued defaults kept as names
        return {"Mean": 1}.get(s, s)
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def _split_top(s):
    """Split on commas outside brackets."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [x.strip() for x in out]


class FunctionSchema:
    __slots__ = ("name", "overload", "arguments", "returns", "text")

    def __init__(self, name, overload, arguments, returns, text):
        self.name = name
        self.overload = overload
        self.arguments = arguments
        self.returns = returns
        self.text = text

    @property
    def full_name(self):
        return self.name + ("." + self.overload if self.overload else "")

    @property
    def is_inplace(self):
        return self.name.endswith("_") and bool(self.arguments) and self.arguments[0].is_write

    @property
    def is_out(self):
        return any(a.is_write and a.kwarg_only for a in self.arguments)

    @property
    def is_view(self):
        return any(r.alias and not r.is_write for r in self.returns)

    @property
    def out_args(self):
        return [a for a in self.arguments if a.is_write and a.kwarg_only]

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"FunctionSchema({self.text})"


def parse_schema(text):
    text = text.strip()
    m = re.match(r"^([\w:]+)(?:\.(\w+))?\((.*)\)\s*->\s*(.+)$", text)
    if m is None:
        raise ValueError(f"cannot parse schema: {text}")
    name, overload, args_s, ret_s = m.groups()
    if "::" in name:
        name = name.split("::", 1)[1]
    args = []
    kwarg_only = False
    for part in _split_top(args_s):
        if part == "*":
            kwarg_only = True
            continue
        if "=" in part:
            decl, default = part.split("=", 1)
            has_default, default = True, _parse_default(default)
        else:
            decl, has_default, default = part, False, None
        type_, aname = decl.rsplit(None, 1)
        args.append(Argument(aname, type_.strip(), default, has_default, kwarg_only))
    ret_s = ret_s.strip()
    if ret_s.startswith("(") and ret_s.endswith(")"):
        parts = _split_top(ret_s[1:-1])
    else:
        parts = [ret_s]
    rets = []
    for p in parts:
        if not p:
            continue
        bits = p.split()
        rets.append(Return(bits[0], bits[1] if len(bits) > 1 else None))
    return FunctionSchema(name, overload or "", args, rets, text)
