"""ember.library: define operators and register kernels from Python (torch.library)."""
from ember.core.keys import DispatchKey
from ember.dispatch import operator as _op
from ember.dispatch.operator import FALLTHROUGH, OPERATORS, OperatorHandle, register_fallback
from ember.dispatch.schema import parse_schema

fallthrough_kernel = FALLTHROUGH


class OpOverloadPacket:
    """ember.ops.<ns>.<name>: all overloads of one name; `.Tensor`, `.default`, ... pick one."""

    def __init__(self, ns, name):
        self._ns, self._name = ns, name
        self._overloads = {}

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        key = "" if overload == "default" else overload
        op = self._overloads.get(key)
        if op is None:
            raise AttributeError(f"The underlying op of '{self._ns}.{self._name}' has no overload "
                                 f"name '{overload}'")
        return op

    def overloads(self):
        return [k or "default" for k in self._overloads]

    def __call__(self, *args, **kwargs):
        from ember.dispatch.resolve import resolve
        op, args = resolve(list(self._overloads.values()), args, kwargs, self._name)
        return op.table[_op.keyset_of(args)](*args)

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._ns}.{self._name}')>"


class _Namespace:
    def __init__(self, ns):
        self._ns = ns
        self._packets = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        p = self._packets.get(name)
        if p is None:
            raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{name}'")
        return p


class _Ops:
    """ember.ops: namespaces of operators, e.g. ember.ops.aten.add.Tensor."""

    def __init__(self):
        self._namespaces = {}

    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        n = self._namespaces.get(ns)
        if n is None:
            n = self._namespaces[ns] = _Namespace(ns)
        return n


ops = _Ops()


def define_op(ns, schema_text, tags=(), lazy=False):
    if lazy:  # generated definitions: the name is read off the text, the parse waits for first use
        head = schema_text.split("(", 1)[0]
        name, _, overload = head.partition(".")
        op = OperatorHandle(ns, schema_text, tags, name, overload)
    else:
        op = OperatorHandle(ns, parse_schema(schema_text), tags)
        name, overload = op.name, op.overload
    qual = f"{ns}::{name}" + (f".{overload}" if overload else "")
    if qual in OPERATORS:
        raise RuntimeError(f"Tried to register an operator ({qual}) with the same name and overload "
                           "name multiple times.")
    OPERATORS[qual] = op
    nsobj = getattr(ops, ns)
    packet = nsobj._packets.get(name)
    if packet is None:
        packet = nsobj._packets[name] = OpOverloadPacket(ns, name)
    packet._overloads[overload] = op
    op.packet = packet
    return op


def lookup(qualname):
    """'aten::add.Tensor' -> OperatorHandle."""
    if "." not in qualname.split("::")[-1]:
        qualname += "."
        qualname = qualname[:-1]
    return OPERATORS[qualname]


def _key(k):
    if isinstance(k, DispatchKey):
        return k
    return DispatchKey[k]


class Library:
    """Library(ns, "DEF" | "IMPL" | "FRAGMENT", dispatch_key="")."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        if kind == "DEF" and ns in _DEFINED_NS:
            raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace "
                               f"{ns}; please put all of your definitions in a single TORCH_LIBRARY block.")
        if kind == "DEF":
            _DEFINED_NS.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defs, self._impls, self._fallbacks = [], [], []

    def define(self, schema, alias_analysis="", *, tags=()):
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed in an IMPL library")
        op = define_op(self.ns, schema, tags)
        self._defs.append(op)
        return op.schema.name

    def _op(self, name):
        if isinstance(name, OperatorHandle):
            return name
        qual = name if "::" in name else f"{self.ns}::{name}"
        ns, rest = qual.split("::", 1)
        nm, _, ov = rest.partition(".")
        op = OPERATORS.get(f"{ns}::{nm}" + (f".{ov}" if ov else ""))
        if op is None:
            raise RuntimeError(f"Could not find schema for {qual}")
        return op

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        key = _key(dispatch_key or self.dispatch_key or "CompositeImplicitAutograd")
        op = self._op(op_name)
        prev = op.kernels.get(key)
        op.register(key, fn, redispatch=with_keyset)
        self._impls.append((op, key, prev))

    def fallback(self, fn, dispatch_key="", *, with_keyset=False):
        key = _key(dispatch_key or self.dispatch_key)
        prev = _op.BACKEND_FALLBACKS.get(key)
        if fn is FALLTHROUGH:
            register_fallback(key, FALLTHROUGH)
        else:
            register_fallback(key, fn, boxed=True)
        self._fallbacks.append((key, prev))

    def _destroy(self):
        for op, key, prev in reversed(self._impls):
            if prev is None:
                op.deregister(key)
            else:
                op.kernels[key] = prev
                _op.invalidate(op)
        for key, prev in reversed(self._fallbacks):
            if prev is None:
                _op.BACKEND_FALLBACKS.pop(key, None)
            else:
                _op.BACKEND_FALLBACKS[key] = prev
            _op.invalidate()
        for op in self._defs:
            OPERATORS.pop(op.qualname, None)
            getattr(ops, op.ns)._packets.get(op.name)._overloads.pop(op.overload, None)
        if self.kind == "DEF":
            _DEFINED_NS.discard(self.ns)
        self._impls, self._fallbacks, self._defs = [], [], []

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self._destroy()


_DEFINED_NS = {"aten"}
