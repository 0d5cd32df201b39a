"""Overload resolution and argument checking for Python calls (torch's python_arg_parser).

The generated bindings parse their common signatures with plain Python parameters; this module
is the general path: it binds (args, kwargs) against each overload's schema in order, converts
values (int -> int[], str -> device, Python type -> dtype) and, when nothing matches, raises
the TypeError that lists every valid signature.
"""
import numbers

import numpy as np

from ember.core import dtype as _dt
from ember.core.device import device as _device
from ember.core.tensor_impl import TensorImpl, wrap_cpu

_NUM = (bool, int, float, complex, np.number, np.bool_)
_PYTYPE_DTYPE = {float: _dt.float64, int: _dt.int64, bool: _dt.bool_, complex: _dt.complex128}
_FAIL = object()


def _is_int(v):
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))) or (
        isinstance(v, TensorImpl) and len(v._shape) == 0 and v._dtype.category == _dt.INT)


def to_int(v):
    if type(v) is int:
        return v
    if _is_int(v):
        return int(v.item()) if isinstance(v, TensorImpl) else int(v)
    raise TypeError(f"expected int, got {type(v).__name__}")


def to_intlist(v, size=None):
    if type(v) is tuple:
        for x in v:
            if type(x) is not int:
                return tuple(to_int(x) for x in v)
        return v
    if _is_int(v):
        return (to_int(v),) * (size or 1)
    if isinstance(v, (list, tuple)):
        return tuple(to_int(x) for x in v)
    if isinstance(v, TensorImpl) and len(v._shape) == 1 and v._dtype.category == _dt.INT:
        return tuple(int(x) for x in v.tolist())
    raise TypeError(f"expected a tuple of ints, got {type(v).__name__}")


def to_dtype(v):
    if v is None or isinstance(v, _dt.dtype):
        return v
    d = _PYTYPE_DTYPE.get(v)
    if d is not None:
        return d
    if isinstance(v, (np.dtype, type)):
        try:
            return _dt.from_numpy_dtype(np.dtype(v))
        except TypeError:
            pass
    raise TypeError(f"expected a dtype, got {type(v).__name__}")


def to_device(v):
    if v is None or isinstance(v, _device):
        return v
    if isinstance(v, (str, int)) and not isinstance(v, bool):
        return _device(v)
    raise TypeError(f"expected a device, got {type(v).__name__}")


def to_scalar(v):
    if isinstance(v, _NUM):
        return v
    if isinstance(v, TensorImpl) and v.numel() == 1:
        return v.item()
    raise TypeError(f"expected a Number, got {type(v).__name__}")


def _convert(arg, v, allow_number):
    """Value converted for `arg`'s type, or _FAIL."""
    if v is None:
        return None if (arg.optional or arg.default is None and arg.has_default) else _FAIL
    b = arg.base
    try:
        if b == "Tensor":
            if arg.is_list:
                if isinstance(v, (list, tuple)) and all(
                        isinstance(x, TensorImpl) or (x is None and arg.optional) for x in v):
                    return list(v)
                return _FAIL
            if isinstance(v, TensorImpl):
                return v
            if allow_number and isinstance(v, _NUM):
                return v
            return _FAIL
        if b == "Scalar":
            if arg.is_list:
                return [to_scalar(x) for x in v] if isinstance(v, (list, tuple)) else _FAIL
            return to_scalar(v)
        if b in ("int", "SymInt"):
            if arg.is_list:
                return to_intlist(v, arg.list_size)
            return to_int(v)
        if b == "float":
            if arg.is_list:
                if isinstance(v, numbers.Real) and not isinstance(v, bool):
                    return (float(v),) * (arg.list_size or 1)
                return tuple(float(x) for x in v)
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                return v
            if isinstance(v, TensorImpl) and len(v._shape) == 0:
                return v.item()
            return _FAIL
        if b == "bool":
            if arg.is_list:
                return tuple(bool(x) for x in v)
            return bool(v) if isinstance(v, (bool, np.bool_)) else _FAIL
        if b == "str":
            return v if isinstance(v, str) else _FAIL
        if b == "ScalarType":
            return to_dtype(v)
        if b == "Device":
            return to_device(v)
        if b == "Generator":
            return v if hasattr(v, "_rng") else _FAIL
        return v  # Layout, MemoryFormat, Dimname: passed through
    except (TypeError, ValueError, RuntimeError):
        return _FAIL


# python_arg_parser.cpp's numpy_compatibility_arg_names (dim and keepdim; ember binds self as input)
NUMPY_NAMES = {"dim": "axis", "keepdim": "keepdims"}


def bind(schema, args, kwargs, allow_numbers=True):
    """Schema-ordered converted values, or None when (args, kwargs) do not fit."""
    params = schema.arguments
    out = []
    npos = sum(1 for a in params if not a.kwarg_only)
    if len(args) > npos:
        return None
    used = set()
    for i, a in enumerate(params):
        if i < len(args):
            if a.kwarg_only:
                return None
            v = args[i]
        elif a.name in kwargs or (a.name == "self" and "input" in kwargs):
            nm = a.name if a.name in kwargs else "input"
            v = kwargs[nm]
            used.add(nm)
        elif a.name in NUMPY_NAMES and NUMPY_NAMES[a.name] in kwargs:  # sum(axis=0), as torch's parser
            nm = NUMPY_NAMES[a.name]
            v = kwargs[nm]
            used.add(nm)
        elif a.has_default:
            out.append(a.default)
            continue
        elif a.optional:
            out.append(None)
            continue
        else:
            return None
        if i == 0 and isinstance(v, _NUM) and schema.name in _NUMBERS_OK and a.base == "Tensor":
            c = _wrapped_number(v)  # torch.add(2, 3): self is a wrapped number
        else:
            c = _convert(a, v, allow_numbers and i > 0)
        if c is _FAIL:
            return None
        out.append(c)
    if set(kwargs) - used:
        return None
    if not any(isinstance(v, TensorImpl) or (v.__class__ is list and v) for v in out) and any(
            a.base == "Tensor" and not a.is_list for a in schema.arguments):
        return None  # numbers in every Tensor slot: torch's argument error (pow(2, 3))
    return tuple(out)


# python_arg_parser.cpp should_allow_numbers_as_tensors: these take a number as self too
# (`torch.add(2, 3)` is tensor(5)), as a 0-d "wrapped number" tensor
_NUMBERS_OK = frozenset(("add", "add_", "div", "div_", "mul", "mul_", "sub", "sub_", "true_divide",
                         "true_divide_", "floor_divide", "floor_divide_"))


def _wrapped_number(v):
    """A Python number as the 0-d tensor torch wraps it in: int64, bool, or the default dtype."""
    npd = (np.bool_ if isinstance(v, (bool, np.bool_)) else np.int64 if isinstance(v, (int, np.integer))
           else _dt.defaults.complex.np if isinstance(v, complex) else _dt.defaults.float.np)
    return wrap_cpu(np.asarray(v, dtype=npd))


_TYPE_NAMES = {"Scalar": "Number", "ScalarType": "torch.dtype", "SymInt": "int", "Device": "torch.device",
               "Generator": "torch.Generator", "Layout": "torch.layout", "MemoryFormat": "torch.memory_format"}


def _type_name(a):
    t = _TYPE_NAMES.get(a.base, a.base)
    if a.is_list:
        t = "tuple of Tensors" if a.base == "Tensor" else f"tuple of {t}s"
    return t


def python_signature(schema, method=False, with_out=False):
    parts = []
    star = False
    for i, a in enumerate(schema.arguments):
        if method and i == 0:
            continue
        if a.is_write and a.kwarg_only:
            continue
        if a.kwarg_only and not star:
            parts.append("*")
            star = True
        name = "input" if a.name == "self" else a.name
        s = f"{_type_name(a)} {name}"
        if a.has_default:
            s += " = " + ("None" if a.default is None else str(a.default))
        elif a.optional:
            s += " = None"
        parts.append(s)
    if with_out:
        if not star:
            parts.append("*")
        parts.append("Tensor out = None")
    return "(" + ", ".join(parts) + ")"


def _tn(v):
    if isinstance(v, TensorImpl):
        return "Tensor"
    if isinstance(v, (list, tuple)):
        return f"{type(v).__name__} of [{', '.join(_tn(x) for x in v)}]"
    t = type(v)
    if t.__module__.split(".")[0] == "ember":   # torch's parser names its own types torch.dtype, ...
        return f"torch.{t.__name__}"
    return t.__name__


def _passed(schema, args, kwargs):
    """What the caller passed: bindings hand over every parameter, so drop the untouched defaults."""
    by_name = {("input" if a.name == "self" else a.name): a for a in schema.arguments}
    pos, kw = list(args), []
    for k, v in kwargs.items():
        a = by_name.get(k) or by_name.get("self" if k == "input" else k)
        if v is _MISSING or (a is not None and ((a.has_default and v is a.default)
                                                or (v is None and (a.optional or a.has_default)))):
            continue
        if k == "out" and v is None:
            continue
        if a is not None and not a.kwarg_only and len(kw) == 0 and schema.arguments.index(a) == len(pos):
            pos.append(v)  # positional only while no parameter before it was left out
        else:
            kw.append((k, v))
    return pos, kw


def fail(name, schemas, args, kwargs, method=False):
    funcs = [s for s in schemas if not s.is_out]
    has_out = {s.name for s in schemas if s.is_out}
    # rendered against the overload that takes most of the arguments positionally
    pos, kw = min((_passed(f, args, kwargs) for f in funcs or schemas), key=lambda pk: len(pk[1]))
    got = "(" + ", ".join([_tn(v) for v in pos] + [f"{k}={_tn(v)}" for k, v in kw]) + ")"
    # torch's parser names the bad argument when only one overload can take that many arguments
    n = len(pos) + len(kw)
    fit = [s for s in funcs if sum(1 for a in s.arguments if not a.has_default and not a.optional) <= n
           <= sum(1 for a in s.arguments if not (a.is_write and a.kwarg_only))]
    if len(funcs) == 1 or len(fit) == 1:
        sch = funcs[0] if len(funcs) == 1 else fit[0]
        params = [a for a in sch.arguments if not (a.is_write and a.kwarg_only)]
        vals = {}
        for i, v in enumerate(pos):
            if i < len(params):
                vals[params[i].name] = (i + 1, v)
        numpy_param = {v: k for k, v in NUMPY_NAMES.items()}
        for k, v in kw:
            k = numpy_param.get(k, k)
            vals["self" if k == "input" else k] = (None, v)
        for j, a in enumerate(params):
            if a.name in vals:
                p, v = vals[a.name]
                if _convert(a, v, j > 0) is _FAIL:
                    where = f" (position {p})" if p is not None else ""
                    an = "input" if a.name == "self" else a.name
                    raise TypeError(f"{name}(): argument '{an}'{where} must be {_type_name(a)}, not "
                                    f"{type(v).__name__}")
            elif not a.has_default and not a.optional:
                # python_arg_parser's missing_args, its plural included ("1 ... arguments")
                req = [("input" if b.name == "self" else b.name) for b in params[j:]
                       if not b.has_default and not b.optional]
                raise TypeError(f"{name}() missing {len(req)} required positional argument"
                                f"{'s' if len(req) == 1 else ''}: {', '.join(f'{chr(34)}{r}{chr(34)}' for r in req)}")
    sigs = "\n".join(" * " + python_signature(s, method, s.name in has_out) for s in funcs or schemas)
    raise TypeError(f"{name}() received an invalid combination of arguments - got {got}, but expected "
                    f"one of:\n{sigs}")


def resolve(ops, args, kwargs, name, method=False):
    for op in ops:
        r = bind(op.schema, args, kwargs)
        if r is not None:
            return op, r
    fail(name, [o.schema for o in ops], args, kwargs, method)


def check_args(name, ops, args, kwargs, err, method=False):
    """Called when a fast binding raised: a clean TypeError if the arguments were bad."""
    for op in ops:
        if bind(op.schema, args, {k: v for k, v in kwargs.items() if v is not _MISSING}) is not None:
            return  # the arguments were fine: the original error stands
    fail(name, [o.schema for o in ops], args, {k: v for k, v in kwargs.items() if v is not _MISSING},
         method)


class _Missing:
    __slots__ = ()

    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()
MISSING = _MISSING
