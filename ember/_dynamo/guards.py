"""Guards: when a compiled entry may be reused.

Each entry gets one generated check function (`check(L)`, L the flattened tensor and Python
arguments) that compares precomputed expected values in one pass: per tensor input its class,
dtype, device, shape, strides (NumPy's byte strides for CPU tensors, read without building a
tuple of element strides), dispatch key set (which carries requires_grad and subclass keys);
distinct inputs stay distinct (aliasing); grad mode and the thread's dispatch masks (autocast,
modes); Python arguments by value; the globals and closure cells the traced code read; the
modules reached (identity of every parameter, buffer and submodule, `training`, their scalar
attributes, hook counts). A failed check is explained afterwards, in torch's words, by `explain`
functions that walk the same list slowly.
"""
import types

from ember.core import tls
from ember.core.keys import DispatchKey as _K
from ember.tensor import Tensor

_CPU_BIT = 1 << _K.CPU

_st = tls.current
_SCALARS = (int, float, bool, str, type(None), complex, bytes)

_TORCH_DTYPE = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                "complex32": "ComplexHalf", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


def _dtname(d):
    return _TORCH_DTYPE.get(d.name if hasattr(d, "name") else str(d).replace("ember.", ""), str(d))


def _contiguous(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _np_strides(t):
    a = t._np
    return a.strides if a is not None else t._get_strides()


def _is_value(v):
    """A Python value guarded by equality (numbers, strings, None, containers of them)."""
    if isinstance(v, _SCALARS):
        return True
    if isinstance(v, (tuple, list)) and len(v) < 64:
        return all(_is_value(e) for e in v)
    if isinstance(v, dict) and len(v) < 64:
        return all(_is_value(k) and _is_value(e) for k, e in v.items())
    return False


def _copy(v):
    if isinstance(v, list):
        return [_copy(e) for e in v]
    if isinstance(v, dict):
        return {k: _copy(e) for k, e in v.items()}
    return v


class GuardBuilder:
    """Collects checks as (expression, explain) pairs; `build` writes the check function."""

    def __init__(self):
        self.exprs = []
        self.explain = []      # callables(L) -> reason or None, in the order of exprs
        self.g = {"_st": _st, "_np_strides": _np_strides}
        self.n = 0
        self.descr = []        # human readable, for explain's out_guards and EMBER_LOGS=guards

    def const(self, v):
        name = f"_c{self.n}"
        self.n += 1
        self.g[name] = v
        return name

    def add(self, expr, explain, descr):
        self.exprs.append(expr)
        self.explain.append(explain)
        self.descr.append(descr)

    # ---- inputs ---------------------------------------------------------------------------------
    def tensor(self, i, name, t, dyn=None):
        """dyn: (dim, valid sizes or None) for a dimension whose size is symbolic: any size passes
        that is in `valid` (None: any size), on a contiguous tensor."""
        a = f"L[{i}]"
        cls, dt, dev, shape, keys = type(t), t._dtype, t._device, t._shape, t._keys
        st = _np_strides(t)
        strides = t.stride()
        npy = t._np is not None
        # the first read binds the input to a local (x{i}); a CPU tensor's key set (compared before
        # its strides) implies it has a NumPy array and the one CPU device
        x = f"x{i}"
        cpu = npy and keys & _CPU_BIT
        if dyn is None:
            sh = (f"{x}._shape == {shape!r} and " +
                  (f"{x}._np.strides == {st!r}" if cpu else
                   f"{x}._np is not None and {x}._np.strides == {st!r}" if npy else
                   f"{x}._get_strides() == {strides!r}"))
        else:
            d, valid = dyn
            sh = (f"len({x}._shape) == {len(shape)} and {x}._shape[:{d}] == {shape[:d]!r} and "
                  f"{x}._shape[{d + 1}:] == {shape[d + 1:]!r} and {x}.is_contiguous()")
            if valid is not None:
                sh += f" and {x}._shape[{d}] in {self.const(valid)}"
        e = (f"({x} := {a}).__class__ is {self.const(cls)} and {x}._dtype is {self.const(dt)} and "
             f"{x}._keys == {keys} and {sh}")
        if not cpu:
            e += f" and ({x}._device is {(dc := self.const(dev))} or {x}._device == {dc})"
        rg = t.requires_grad

        def why(L, i=i, name=name):
            x = L[i]
            if not isinstance(x, Tensor):
                return f"expected type of '{name}' to be a tensor type, ' but found {type(x)}"
            if type(x) is not cls:
                return f"tensor '{name}' Tensor subclass mismatch. expected {cls.__name__}, actual {type(x).__name__}"
            if x._device != dev:
                return f"tensor '{name}' Tensor device mismatch. expected {dev}, actual {x._device}"
            if x._dtype is not dt:
                return f"tensor '{name}' dtype mismatch. expected {_dtname(dt)}, actual {_dtname(x._dtype)}"
            if x.requires_grad != rg:
                return f"tensor '{name}' requires_grad mismatch. expected requires_grad={int(rg)}"
            if len(x._shape) != len(shape):
                return f"tensor '{name}' rank mismatch. expected {len(shape)}, actual {len(x._shape)}"
            dd = dyn[0] if dyn is not None else -1
            for k, (p, q) in enumerate(zip(shape, x._shape)):
                if p != q and k != dd:
                    return f"tensor '{name}' size mismatch at index {k}. expected {p}, actual {q}"
            xs = x.stride()
            want = strides if dyn is None else _contiguous(x._shape)
            for k, (p, q) in enumerate(zip(want, xs)):
                if p != q:
                    return f"tensor '{name}' stride mismatch at index {k}. expected {p}, actual {q}"
            if dyn is not None and dyn[1] is not None and x._shape[dd] not in dyn[1]:
                return f"tensor '{name}' size {x._shape[dd]} at index {dd} not yet checked against the symbolic graph"
            if x._keys != keys:
                from ember.core.keys import format_keyset  # lazy: only failure messages name key sets
                return (f"tensor '{name}' dispatch key set mismatch. expected {format_keyset(keys)}, "
                        f"actual {format_keyset(x._keys)}")
            return f"tensor '{name}' stride mismatch at index 0. expected {strides}, actual {xs}"
        self.add(e, why, f"TENSOR_MATCH: {name}: {_dtname(dt)}{list(shape)} stride={strides} "
                 f"requires_grad={rg} device={dev}")

    def value(self, access, name, v, getter, state=None):
        """A Python value read by the trace: equal (values), or the same object (anything else);
        with `state` (its snapshot before the capturing call), an object's reachable attributes and
        items must still look the same (capture.snapshot: values by equality, objects by identity)."""
        if _is_value(v):
            c = self.const(_copy(v))
            tc = self.const(type(v))
            e = f"({access}).__class__ is {tc} and ({access}) == {c}"
            descr = f"{name} == {v!r}"
        else:
            c = self.const(v)
            e = f"({access}) is {c}"
            descr = f"___check_obj_id({name}, {id(v)})"

        def why(L, getter=getter, descr=descr):
            return descr
        self.add(e, why, descr)
        if state is not None and not _is_value(v):
            self.add(self.state_expr(access, v, state), lambda L, name=name: f"{name}'s state changed",
                     f"OBJECT_STATE: {name}")

    def state_expr(self, access, v, state, depth=4):
        """An expression true while `same_snapshot(snapshot(<access>), state)` holds, written out
        for v's structure (v: the object now, whose snapshot is `state`): class, length and key
        checks and one comparison per leaf, instead of building and comparing a snapshot per call
        (an optimizer's state: 50 us -> a few). Where v does not match `state`, or holds a module,
        the snapshot comparison itself."""
        from ember._dynamo import capture  # lazy: the snapshot functions live with the watcher
        out = []
        if capture.same_snapshot(capture.snapshot(v, depth), state) and self._state_exprs(access, v, depth, out):
            return " and ".join(out)
        self.g["_snap"], self.g["_same"] = capture.snapshot, capture.same_snapshot
        return f"_same(_snap({access}, {depth}), {self.const(state)})"

    def _local(self):
        self.n += 1
        return f"_s{self.n}"

    def _state_exprs(self, x, v, depth, out):
        """capture.snapshot's recursion, emitting checks on expression x; False where it cannot."""
        from ember.nn import Module  # lazy: modules keep the snapshot comparison
        if isinstance(v, Tensor):
            out.append(f"{x} is {self.const(v)}")
            return True
        if isinstance(v, _SCALARS):
            out.append(f"{x}.__class__ is {self.const(type(v))} and {x} == {self.const(v)}")
            return True
        if depth <= 0 or isinstance(v, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                                        types.MethodType)):
            out.append(f"id({x}) == {id(v)}")
            return True
        if isinstance(v, Module):
            return False
        y = self._local()
        if isinstance(v, (list, tuple)):
            out.append(f"({y} := {x}).__class__ is {self.const(type(v))} and len({y}) == {len(v)}")
            return all(self._state_exprs(f"{y}[{k}]", e, depth - 1, out) for k, e in enumerate(v))
        if isinstance(v, (set, frozenset)):
            out.append(f"({y} := {x}).__class__ is {self.const(type(v))} and "
                       f"frozenset(map(id, {y})) == {self.const(frozenset(map(id, v)))}")
            return True
        if isinstance(v, dict):
            out.append(f"isinstance({y} := {x}, dict)")
            d = v
        else:
            d = getattr(v, "__dict__", None)
            if not isinstance(d, dict):
                out.append(f"id({x}) == {id(v)}")
                return True
            out.append(f"({y} := {x}).__class__ is {self.const(type(v))}")
            y = f"{y}.__dict__"
        keys = list(d)
        if all(type(k) is str for k in keys):
            out.append(f"tuple({y}) == {self.const(tuple(keys))}")
        elif all(isinstance(k, Tensor) for k in keys):
            self.const(keys)   # held, so the ids below stay theirs
            out.append(f"[*map(id, {y})] == {self.const([id(k) for k in keys])}")
        else:
            return False
        if not keys:
            return True
        z = self._local()
        out.append(f"({z} := [*{y}.values()]) is not None")
        return all(self._state_exprs(f"{z}[{k}]", e, depth - 1, out) for k, e in enumerate(d.values()))

    def distinct(self, idx, names):
        """Tensor inputs that were distinct objects stay distinct (the aliasing guard)."""
        if len(idx) < 2:
            return
        if len(idx) <= 4:   # pairwise identity is cheaper than a set for a few inputs
            e = " and ".join(f"L[{i}] is not L[{j}]" for k, i in enumerate(idx) for j in idx[k + 1:])
        else:
            parts = ", ".join(f"id(L[{i}])" for i in idx)
            e = f"len({{{parts}}}) == {len(idx)}"

        def why(L):
            return f"Duplicate tensors found: {' is '.join(names)}"
        self.add(e, why, f"NO_TENSOR_ALIASING: {', '.join(names)}")

    def same(self, i, j, ni, nj):
        e = f"L[{i}] is L[{j}]"
        self.add(e, lambda L: f"{ni} is {nj}", f"{ni} is {nj}")

    def global_state(self):
        dk, grad = _st().dk, _st()._grad
        e = f"_st().dk == {self.const(dk)} and _st()._grad is {grad}"

        def why(L):
            if _st()._grad is not grad:
                return "GLOBAL_STATE changed: grad_mode "
            return "GLOBAL_STATE changed: dispatch key masks (autocast, modes, inference mode)"
        self.add(e, why, f"GLOBAL_STATE: grad_mode={grad}")

    _CALL_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
                   "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called")

    def module(self, m, path):
        """Every submodule of m: identity of parameters, buffers, submodules and plain tensor
        attributes; training; scalar attributes; the hooks a call runs (the module's and the global
        ones). Empty hook dicts are checked together in one expression."""
        empty = []
        for sub_name, sub in m.named_modules(remove_duplicate=False) if _has_named(m) else [("", m)]:
            p = f"{path}.{sub_name}" if sub_name else path
            d = sub.__dict__
            dn = self.const(d)
            for k, v in d.items():
                if k in ("_parameters", "_buffers", "_modules"):
                    inner = self.const(v)
                    for kk, vv in v.items():
                        self.add(f"{inner}.get({kk!r}) is {self.const(vv)}",
                                 lambda L, p=p, kk=kk: f"___check_obj_id({p}.{kk}, ...)",
                                 f"ID_MATCH: {p}.{kk}")
                    self.add(f"len({inner}) == {len(v)}", lambda L, p=p, k=k: f"len({p}.{k}) changed",
                             f"DICT_LENGTH: {p}.{k}")
                elif k in self._CALL_HOOKS and isinstance(v, dict):
                    if not v:
                        empty.append((self.const(v), f"{p}.{k}"))
                    else:
                        self.add(f"len({dn}[{k!r}]) == {len(v)}", lambda L, p=p, k=k: f"len({p}.{k}) changed",
                                 f"DICT_LENGTH: {p}.{k}")
                elif isinstance(v, Tensor):
                    self.add(f"{dn}.get({k!r}) is {self.const(v)}",
                             lambda L, p=p, k=k: f"___check_obj_id({p}.{k}, ...)", f"ID_MATCH: {p}.{k}")
                elif k == "training":
                    self.add(f"{dn}.get('training') is {v}",
                             lambda L, p=p, v=v: f"{p}.training == {v}", f"{p}.training == {v}")
                elif _is_value(v) and not k.startswith("_"):
                    self.add(f"{dn}.get({k!r}) == {self.const(_copy(v))}",
                             lambda L, p=p, k=k, v=v: f"{p}.{k} == {v!r}", f"{p}.{k} == {v!r}")
                elif not k.startswith("_") and _plain_state(v):
                    # a config object or container the forward may read: same object, same state
                    from ember._dynamo import capture  # lazy: the snapshot functions
                    self.add(f"{dn}.get({k!r}) is {self.const(v)} and "
                             + self.state_expr(f"{dn}.get({k!r})", v, capture.snapshot(v)),
                             lambda L, p=p, k=k: f"{p}.{k}'s state changed", f"OBJECT_STATE: {p}.{k}")
        if not self._global_hooks_guarded:
            self._global_hooks_guarded = True
            from ember.nn.modules import module as _mm  # lazy: nn's global hook registries
            for k in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                      "_global_backward_pre_hooks", "_global_forward_hooks_with_kwargs",
                      "_global_forward_hooks_always_called"):
                v = getattr(_mm, k, None)
                if isinstance(v, dict):
                    if not v:
                        empty.append((self.const(v), f"ember.nn.modules.module.{k}"))
                    else:
                        self.add(f"len({self.const(v)}) == {len(v)}", lambda L, k=k: f"len({k}) changed",
                                 f"DICT_LENGTH: {k}")
        if empty:
            names = [n for _, n in empty]
            consts = [c for c, _ in empty]

            def why(L, consts=consts, names=names):
                for c, n in zip(consts, names):
                    if self.g[c]:
                        return f"len({n}) changed"
                return "a hook was registered"
            self.add("not (" + " or ".join(consts) + ")", why, f"NO_HOOKS: {len(empty)} hook dicts empty")

    _global_hooks_guarded = False

    def build(self):
        body = " and\n        ".join(self.exprs) if self.exprs else "True"
        src = f"def check(L):\n    return ({body})\n"
        ns = dict(self.g)
        exec(compile(src, "<ember guards>", "exec"), ns)
        check = ns["check"]
        check.source = src
        exprs = [compile(f"({e})", "<guard>", "eval") for e in self.exprs]
        explains = list(self.explain)
        g = ns

        def failure(L):
            for code, why in zip(exprs, explains):
                try:
                    ok = eval(code, g, {"L": L})
                except Exception:
                    ok = False
                if not ok:
                    return why(L)
            return None
        return check, failure


def _plain_state(v):
    """An attribute whose contents can change what a forward computes: a plain object or a
    container (not a module, function, class, tensor or value)."""
    if isinstance(v, (list, dict, set)):
        return True
    if isinstance(v, (type, types.ModuleType, types.FunctionType, types.MethodType, Tensor)) or callable(v):
        return False
    return isinstance(getattr(v, "__dict__", None), dict) and not hasattr(v, "named_modules")


def _has_named(m):
    return hasattr(m, "named_modules")


def is_simple_function(v):
    return isinstance(v, (types.FunctionType, types.BuiltinFunctionType))
