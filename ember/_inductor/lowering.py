"""Lowering: one captured aten node -> a pointwise scalar program (ir.Pointwise), a BLAS matmul
(ir.MatMul), or None (the node runs as an extern call to op.call).

A pointwise program is a list of primitive operations over scalars (ir.Prim), each with the NumPy
dtype it computes in. Type promotion is torch's (ember.core.dtype.result_type_of over the
arguments' (dtype, priority) parts); every operand is cast to the primitive's dtype explicitly, so
the numba and NumPy renderers never rely on their own promotion rules. float16/bfloat16 compute in
float32 (as torch's CPU kernels do) and round when stored. The lowered result dtype is checked
against the example output's dtype (the truth); any disagreement leaves the node as an extern.
"""
import math

import numpy as np

from ember._dynamo.capture import Ref, Sym
from ember._inductor import ir
from ember.core import dtype as _dt

F32 = np.dtype(np.float32)
BOOL = np.dtype(np.bool_)
_HALF = (_dt.float16, _dt.bfloat16)


class NotLowerable(Exception):
    pass


def compute_np(d):
    """The NumPy dtype an ember dtype computes in inside a kernel."""
    if d in _HALF:
        return F32
    if d.category > _dt.FLOAT:
        raise NotLowerable("complex")
    return d.np


def _part(v, values):
    if isinstance(v, Ref):
        t = values[v.i]
        return (t._dtype, 0 if len(t._shape) else 1)
    if isinstance(v, (bool, int, float)):
        return (_dt.scalar_dtype(v), 2)
    raise NotLowerable(f"argument {type(v).__name__}")


def promote(values, *args):
    return _dt.result_type_of(tuple(_part(a, values) for a in args if a is not None))


class _Ctx:
    """Builds one node's primitive list."""

    def __init__(self, values):
        self.values = values
        self.prims = []
        self.loads = []

    def arg(self, a):
        if isinstance(a, Ref):
            t = self.values[a.i]
            if a.i not in self.loads:
                self.loads.append(a.i)
            return ir.V("load", a.i, compute_np(t._dtype))
        if isinstance(a, bool):
            return ir.V("const", a, BOOL)
        if isinstance(a, int):
            return ir.V("const", a, np.dtype(np.int64))
        if isinstance(a, float):
            return ir.V("const", a, np.dtype(np.float64))
        raise NotLowerable(f"argument {type(a).__name__}")

    def const(self, v, dt):
        return self.cast(ir.V("const", v, np.dtype(type(v)) if not isinstance(v, float) else np.dtype(np.float64)), dt)

    def cast(self, v, dt):
        dt = np.dtype(dt)
        if v.dt == dt:
            return v
        if v.kind == "const":
            return ir.V("const", _cast_const(v.a, dt), dt)
        return self.op("cast", dt, v)

    def op(self, name, dt, *args):
        dt = np.dtype(dt)
        self.prims.append(ir.Prim(name, len(self.prims), args, dt))
        return ir.V("tmp", len(self.prims) - 1, dt)


def _cast_const(v, dt):
    if dt == BOOL:
        return bool(v)
    if dt.kind in "iu":
        if isinstance(v, float):
            if not math.isfinite(v):
                raise NotLowerable("non-finite int constant")
            v = int(v)
        return int(np.array(v, dtype=np.int64 if -2**63 <= v < 2**63 else np.uint64).astype(dt))
    return float(v)


# ---- rules: each gets (ctx, out_dtype(ember), *args) and returns the result value ---------------

_ARITH = {"add": "add", "sub": "sub", "mul": "mul"}


def _binary(name):
    def rule(c, od, a, b, alpha=1):
        d = promote(c.values, a, b)
        if d.category == _dt.BOOL and name != "mul":
            raise NotLowerable("bool add/sub")
        cd = compute_np(d)
        x, y = c.cast(c.arg(a), cd), c.cast(c.arg(b), cd)
        if alpha != 1:
            if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
                raise NotLowerable("alpha")
            y = c.op("mul", cd, y, c.const(alpha, cd))
        if d.category == _dt.BOOL:      # mul of bools is logical and
            return c.op("and", BOOL, x, y)
        return c.op(name, cd, x, y)
    return rule


def _div(c, od, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise NotLowerable("rounding_mode")
    d = promote(c.values, a, b)
    if d.category < _dt.FLOAT:
        d = _dt.defaults.float
    cd = compute_np(d)
    return c.op("div", cd, c.cast(c.arg(a), cd), c.cast(c.arg(b), cd))


def _float_unary(name):
    def rule(c, od, a):
        d = promote(c.values, a)
        if d.category < _dt.FLOAT:
            d = _dt.defaults.float
        cd = compute_np(d)
        return c.op(name, cd, c.cast(c.arg(a), cd))
    return rule


def _same_unary(name, allow_bool=False):
    def rule(c, od, a):
        d = promote(c.values, a)
        if d.category == _dt.BOOL and not allow_bool:
            raise NotLowerable("bool")
        cd = compute_np(d)
        return c.op(name, cd, c.cast(c.arg(a), cd))
    return rule


def _relu(c, od, a):
    d = promote(c.values, a)
    if d.category == _dt.BOOL:
        raise NotLowerable("bool")
    cd = compute_np(d)
    return c.op("maximum", cd, c.cast(c.arg(a), cd), c.const(0, cd))


def _silu(c, od, a):
    d = promote(c.values, a)
    if d.category < _dt.FLOAT:
        raise NotLowerable("int")
    cd = compute_np(d)
    x = c.cast(c.arg(a), cd)
    return c.op("mul", cd, x, c.op("sigmoid", cd, x))


def _gelu_fw(c, cd, x, approximate):
    half, one = c.const(0.5, cd), c.const(1.0, cd)
    if approximate == "tanh":
        x3 = c.op("mul", cd, c.op("mul", cd, x, x), x)
        inner = c.op("mul", cd, c.const(math.sqrt(2.0 / math.pi), cd),
                     c.op("add", cd, x, c.op("mul", cd, c.const(0.044715, cd), x3)))
        return c.op("mul", cd, c.op("mul", cd, half, x), c.op("add", cd, one, c.op("tanh", cd, inner)))
    if approximate != "none":
        raise NotLowerable("approximate")
    e = c.op("erf", cd, c.op("mul", cd, x, c.const(math.sqrt(0.5), cd)))
    return c.op("mul", cd, c.op("mul", cd, half, x), c.op("add", cd, one, e))


def _gelu(c, od, a, approximate="none"):
    d = promote(c.values, a)
    if d.category < _dt.FLOAT:
        raise NotLowerable("int")
    cd = compute_np(d)
    return _gelu_fw(c, cd, c.cast(c.arg(a), cd), approximate)


def _pow_scalar(c, od, a, e):
    d = promote(c.values, a, e)
    if d.category < _dt.FLOAT or isinstance(e, bool) or not isinstance(e, (int, float)):
        raise NotLowerable("int pow")
    cd = compute_np(d)
    x = c.cast(c.arg(a), cd)
    if e == 2:
        return c.op("mul", cd, x, x)
    if e == 1:
        return c.op("mul", cd, x, c.const(1.0, cd))
    if e == 0.5:
        return c.op("sqrt", cd, x)
    if e == -1:
        return c.op("recip", cd, x)
    if e == 3:
        return c.op("mul", cd, c.op("mul", cd, x, x), x)
    return c.op("pow", cd, x, c.const(float(e), cd))


def _minmax(name):
    def rule(c, od, a, b):
        d = promote(c.values, a, b)
        cd = compute_np(d)
        if d.category == _dt.BOOL:
            return c.op("or" if name == "maximum" else "and", BOOL, c.arg(a), c.arg(b))
        return c.op(name, cd, c.cast(c.arg(a), cd), c.cast(c.arg(b), cd))
    return rule


def _clamp(c, od, a, lo=None, hi=None):
    if lo is None and hi is None:
        raise NotLowerable("clamp without bounds")
    if od.category == _dt.BOOL:
        raise NotLowerable("bool clamp")
    cd = compute_np(od)
    x = c.cast(c.arg(a), cd)
    if lo is not None:
        x = c.op("maximum", cd, x, c.cast(c.arg(lo), cd))
    if hi is not None:
        x = c.op("minimum", cd, x, c.cast(c.arg(hi), cd))
    return x


def _cmp(name):
    def rule(c, od, a, b):
        d = promote(c.values, a, b)
        cd = compute_np(d)
        return c.op(name, BOOL, c.cast(c.arg(a), cd), c.cast(c.arg(b), cd))
    return rule


def _logical(name):
    def rule(c, od, a, b=None):
        x = c.cast(c.arg(a), BOOL)
        if name == "not":
            return c.op("not", BOOL, x)
        return c.op(name, BOOL, x, c.cast(c.arg(b), BOOL))
    return rule


def _where(c, od, cond, a, b):
    d = promote(c.values, a, b)
    cd = compute_np(d)
    return c.op("where", cd, c.cast(c.arg(cond), BOOL), c.cast(c.arg(a), cd), c.cast(c.arg(b), cd))


def _grad_float(c, *args):
    d = promote(c.values, *args)
    if d.category < _dt.FLOAT:
        raise NotLowerable("int grad")
    cd = compute_np(d)
    return cd, [c.cast(c.arg(a), cd) for a in args]


def _threshold_backward(c, od, g, x, threshold):
    d = promote(c.values, g, x)
    cd = compute_np(d)
    gv, xv = c.cast(c.arg(g), cd), c.cast(c.arg(x), cd)
    return c.op("where", cd, c.op("le", BOOL, xv, c.const(threshold, cd)), c.const(0, cd), gv)


def _tanh_backward(c, od, g, y):
    cd, (gv, yv) = _grad_float(c, g, y)
    return c.op("mul", cd, gv, c.op("sub", cd, c.const(1.0, cd), c.op("mul", cd, yv, yv)))


def _sigmoid_backward(c, od, g, y):
    cd, (gv, yv) = _grad_float(c, g, y)
    return c.op("mul", cd, c.op("mul", cd, gv, c.op("sub", cd, c.const(1.0, cd), yv)), yv)


def _silu_backward(c, od, g, x):
    cd, (gv, xv) = _grad_float(c, g, x)
    s = c.op("sigmoid", cd, xv)
    one = c.const(1.0, cd)
    inner = c.op("add", cd, one, c.op("mul", cd, xv, c.op("sub", cd, one, s)))
    return c.op("mul", cd, c.op("mul", cd, gv, s), inner)


def _gelu_backward(c, od, g, x, approximate="none"):
    cd, (gv, xv) = _grad_float(c, g, x)
    k = c.const
    if approximate == "tanh":
        beta = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5
        kappa = 0.044715
        x2 = c.op("mul", cd, xv, xv)
        x3 = c.op("mul", cd, x2, xv)
        inner = c.op("mul", cd, k(beta, cd), c.op("add", cd, xv, c.op("mul", cd, k(kappa, cd), x3)))
        th = c.op("tanh", cd, inner)
        left = c.op("mul", cd, k(0.5, cd), xv)
        right = c.op("add", cd, k(1.0, cd), th)
        dleft = c.op("mul", cd, k(0.5, cd), right)
        t2 = c.op("sub", cd, k(1.0, cd), c.op("mul", cd, th, th))
        dinner = c.op("mul", cd, k(beta, cd), c.op("add", cd, k(1.0, cd), c.op("mul", cd, k(3 * kappa, cd), x2)))
        dright = c.op("mul", cd, c.op("mul", cd, left, t2), dinner)
        return c.op("mul", cd, gv, c.op("add", cd, dleft, dright))
    if approximate != "none":
        raise NotLowerable("approximate")
    cdf = c.op("mul", cd, k(0.5, cd), c.op("add", cd, k(1.0, cd),
                                            c.op("erf", cd, c.op("mul", cd, xv, k(math.sqrt(0.5), cd)))))
    pdf = c.op("mul", cd, c.op("exp", cd, c.op("mul", cd, k(-0.5, cd), c.op("mul", cd, xv, xv))),
               k(2.0 / math.sqrt(math.pi) * math.sqrt(0.5) * 0.5, cd))
    return c.op("mul", cd, gv, c.op("add", cd, cdf, c.op("mul", cd, xv, pdf)))


def _to_copy(c, od, a, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    if layout is not None or (device is not None and getattr(device, "type", device) != "cpu"):
        raise NotLowerable("device/layout")
    if od.category > _dt.FLOAT:
        raise NotLowerable("complex")
    x = c.arg(a)
    src = c.values[a.i]._dtype
    if src.category > _dt.FLOAT:
        raise NotLowerable("complex")
    cd = compute_np(od)
    if x.dt == cd:       # same compute dtype (a copy, or half <-> float32 handled by the store)
        return c.op("mul", cd, x, c.const(1, cd)) if cd != BOOL else c.op("and", BOOL, x, c.const(True, BOOL))
    return c.cast(x, cd) if cd != BOOL else c.op("ne", BOOL, x, c.const(0, x.dt))


def _clone(c, od, a, memory_format=None):
    x = c.arg(a)
    if x.dt == BOOL:
        return c.op("and", BOOL, x, c.const(True, BOOL))
    return c.op("mul", x.dt, x, c.const(1, x.dt))


def _rsub(c, od, a, b, alpha=1):
    return _binary("sub")(c, od, b, a, alpha)


def _lerp(c, od, a, end, weight):
    """torch's lerp with a number weight, as eager's kernel computes it: x + w (e - x) for |w| < 0.5,
    else e - (e - x)(1 - w), with w and 1 - w rounded to the compute type."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or abs(weight) > 3.4e38:
        raise NotLowerable("weight")
    d = promote(c.values, a, end)
    if d.category < _dt.FLOAT:
        raise NotLowerable("integer lerp")
    cd = compute_np(d)
    x, e = c.cast(c.arg(a), cd), c.cast(c.arg(end), cd)
    w = cd.type(weight)
    dd = c.op("sub", cd, e, x)
    if abs(w) < 0.5:
        return c.op("add", cd, x, c.op("mul", cd, c.const(float(w), cd), dd))
    return c.op("sub", cd, e, c.op("mul", cd, dd, c.const(float(cd.type(1) - w), cd)))


def _addc(kind):
    """addcmul / addcdiv: x + v * y * z (or / z), in eager's order: ((v * y) op z) + x."""
    def rule(c, od, a, t1, t2, value=1):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise NotLowerable("value")
        d = promote(c.values, a, t1, t2)
        if d.category < _dt.FLOAT:
            raise NotLowerable("integer addcmul/addcdiv")
        cd = compute_np(d)
        x, y, z = (c.cast(c.arg(v), cd) for v in (a, t1, t2))
        p = c.op(kind, cd, c.op("mul", cd, c.const(value, cd), y), z)
        return c.op("add", cd, x, p)
    return rule


def _pow_number(c, od, base, e):
    """pow.Scalar: a number raised to a tensor (Adam's beta1 ** step)."""
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise NotLowerable("base")
    d = promote(c.values, base, e)
    if d.category < _dt.FLOAT:
        raise NotLowerable("int pow")
    cd = compute_np(d)
    return c.op("pow", cd, c.const(float(base), cd), c.cast(c.arg(e), cd))


RULES = {
    ("pow", "Scalar"): _pow_number,
    ("lerp", "Scalar"): _lerp, ("addcmul", ""): _addc("mul"), ("addcdiv", ""): _addc("div"),
    ("add", "Tensor"): _binary("add"), ("add", "Scalar"): _binary("add"),
    ("sub", "Tensor"): _binary("sub"), ("sub", "Scalar"): _binary("sub"),
    ("rsub", "Scalar"): _rsub, ("rsub", "Tensor"): _rsub,
    ("mul", "Tensor"): _binary("mul"), ("mul", "Scalar"): _binary("mul"),
    ("div", "Tensor"): _div, ("div", "Scalar"): _div, ("div", "Tensor_mode"): _div, ("div", "Scalar_mode"): _div,
    ("neg", ""): _same_unary("neg"), ("abs", ""): _same_unary("abs"),
    ("exp", ""): _float_unary("exp"), ("log", ""): _float_unary("log"), ("log1p", ""): _float_unary("log1p"),
    ("expm1", ""): _float_unary("expm1"), ("sqrt", ""): _float_unary("sqrt"), ("rsqrt", ""): _float_unary("rsqrt"),
    ("tanh", ""): _float_unary("tanh"), ("sigmoid", ""): _float_unary("sigmoid"),
    ("reciprocal", ""): _float_unary("recip"), ("erf", ""): _float_unary("erf"),
    ("relu", ""): _relu, ("silu", ""): _silu, ("gelu", ""): _gelu,
    ("pow", "Tensor_Scalar"): _pow_scalar,
    ("maximum", ""): _minmax("maximum"), ("minimum", ""): _minmax("minimum"),
    ("clamp", ""): _clamp, ("clamp", "Tensor"): _clamp,
    ("clamp_min", ""): lambda c, od, a, lo: _clamp(c, od, a, lo, None),
    ("clamp_max", ""): lambda c, od, a, hi: _clamp(c, od, a, None, hi),
    ("where", "self"): _where, ("where", "ScalarOther"): _where, ("where", "ScalarSelf"): _where,
    ("where", "Scalar"): _where,
    ("logical_and", ""): _logical("and"), ("logical_or", ""): _logical("or"), ("logical_not", ""): _logical("not"),
    ("logical_xor", ""): _logical("ne"),
    ("threshold_backward", ""): _threshold_backward, ("tanh_backward", ""): _tanh_backward,
    ("sigmoid_backward", ""): _sigmoid_backward, ("gelu_backward", ""): _gelu_backward,
    ("silu_backward", ""): _silu_backward,
    ("_to_copy", ""): _to_copy, ("clone", ""): _clone,
}
for _n in ("eq", "ne", "lt", "le", "gt", "ge"):
    RULES[(_n, "Tensor")] = RULES[(_n, "Scalar")] = _cmp(_n)

# prims the NumPy generator cannot express with ufuncs: nodes using them stay externs there
NUMPY_UNSUPPORTED = frozenset(("erf",))
_MATMUL = {"mm", "matmul", "bmm", "addmm"}


def _has_sym(a):
    if isinstance(a, Sym):
        return True
    if isinstance(a, (list, tuple)):
        return any(_has_sym(e) for e in a)
    return False


def lower(node, values, numpy_only=False, pointwise_only=False):
    """ir.Pointwise / ir.MatMul for the node, or None (extern). pointwise_only: only ir.Pointwise,
    for tensors of any device (the CUDA generator's lowering: no NumPy arrays behind them)."""
    op = node.op
    if not isinstance(node.out, Ref) or any(_has_sym(a) for a in node.args):
        return None
    name, ov = str(op.name), op.overload or ""
    out = values[node.out.i]
    if out is None or not hasattr(out, "_np"):
        return None
    for a in node.args:
        if isinstance(a, Ref):
            v = values[a.i]
            if v is None or not hasattr(v, "_dtype") or (not pointwise_only and getattr(v, "_np", None) is None):
                return None
    if pointwise_only:
        if name in _MATMUL or name in _VIEWS or (name, ov) in _NPOPS:
            return None
    elif out._np is None:
        return None
    if name in _MATMUL:
        return _lower_matmul(node, name, values)
    if name in _VIEWS:
        return _lower_view(node, name, ov, values)
    if (name, ov) in _NPOPS:
        return _lower_npop(node, name, ov, values)
    rule = RULES.get((name, ov))
    if rule is None:
        return None
    try:
        c = _Ctx(values)
        r = rule(c, out._dtype, *node.args)
        store = compute_np(out._dtype)
        if r.dt != store:
            # the lowered dtype must be the recorded one (half types: float32 until the store)
            return None
        if r.kind != "tmp":
            raise NotLowerable("constant result")
    except (NotLowerable, KeyError, TypeError, ValueError, OverflowError):
        return None
    if numpy_only and any(p.name in NUMPY_UNSUPPORTED for p in c.prims):
        return None
    shape = tuple(out._shape)
    for s in c.loads:
        if not _broadcasts(tuple(values[s]._shape), shape):
            return None
    return ir.Pointwise(node.out.i, shape, out._dtype, c.loads, c.prims, r, f"{name}.{ov or 'default'}")


def _broadcasts(src, dst):
    if len(src) > len(dst):
        return False
    for a, b in zip(reversed(src), reversed(dst)):
        if a != b and a != 1:
            return False
    return True


def _lower_matmul(node, name, values):
    args = node.args
    out = values[node.out.i]
    if out._dtype not in (_dt.float32, _dt.float64):
        return None
    bias = None
    if name == "addmm":
        bias, a, b, beta, alpha = args
        if beta != 1 or alpha != 1 or not isinstance(bias, Ref):
            return None
    else:
        a, b = args[0], args[1]
    if not (isinstance(a, Ref) and isinstance(b, Ref)):
        return None
    ta, tb = values[a.i], values[b.i]
    if ta._dtype is not out._dtype or tb._dtype is not out._dtype:
        return None
    if name in ("mm", "addmm") and (len(ta._shape) != 2 or len(tb._shape) != 2):
        return None
    if name == "bmm" and (len(ta._shape) != 3 or len(tb._shape) != 3):
        return None
    if name == "matmul" and (len(ta._shape) < 1 or len(tb._shape) < 1 or len(out._shape) == 0):
        return None
    if not out._np.flags.c_contiguous:
        return None
    if bias is not None:
        tbias = values[bias.i]
        if tbias._dtype is not out._dtype or not _broadcasts(tuple(tbias._shape), tuple(out._shape)):
            return None
    return ir.MatMul(node.out.i, tuple(out._shape), out._dtype, a.i, b.i,
                     bias.i if bias is not None else None, name)


class _Node:
    __slots__ = ("op", "args", "out")

    def __init__(self, op, args, out):
        self.op, self.args, self.out = op, args, out


def lower_inplace(node, values, graph_ins, numpy_only=False):
    """An in-place pointwise op (an optimizer's `exp_avg.lerp_(grad, 0.1)`) as an ir.Pointwise of
    its out-of-place twin whose output is the written tensor's own memory (`inplace`): the fused
    kernel writes there, the call bumps the version. C-contiguous float32/float64 tensors: graph
    inputs and values the graph made."""
    op = node.op
    name = str(op.name)
    args = node.args
    if not name.endswith("_") or not isinstance(node.out, Ref) or not args or not isinstance(args[0], Ref):
        return None
    s = args[0].i
    t = values[s]
    if node.out.i != s or t._dtype not in (_dt.float32, _dt.float64):
        return None
    a = getattr(t, "_np", None)
    if not isinstance(a, np.ndarray) or not a.flags.c_contiguous or not a.flags.writeable:
        return None
    import ember  # lazy: the out-of-place overload, from the operator namespace
    packet = getattr(ember.ops.aten, name[:-1], None)
    twin = getattr(packet, op.overload or "default", None) if packet is not None else None
    if twin is None or any(isinstance(x, Ref) and values[x.i] is t for x in args[1:]):
        return None
    p = lower(_Node(twin, args, node.out), values, numpy_only)
    if p is None or p.kind != "pointwise" or p.shape != tuple(t._shape):
        return None
    p.inplace = True
    p.origin = f"{name}.{op.overload or 'default'}"
    return p


_VIEWS = {"view", "_unsafe_view", "t", "permute", "transpose", "unsqueeze", "squeeze", "expand", "reshape"}


def _lower_view(node, name, ov, values):
    """A view as a NumPy view expression on the source array, when applying it to the example
    gives the recorded shape and strides (the call then makes it without the dispatcher)."""
    src = node.args[0]
    if not isinstance(src, Ref):
        return None
    ts, out = values[src.i], values[node.out.i]
    if ts._dtype in _HALF or ts._dtype.category > _dt.FLOAT:
        return None
    shape = tuple(out._shape)
    if name in ("view", "_unsafe_view", "unsqueeze", "squeeze", "reshape"):
        expr = f".reshape({shape!r})"
    elif name == "t":
        expr = ".T"
    elif name == "permute":
        nd = len(ts._shape)
        expr = f".transpose({tuple(d % nd for d in node.args[1])!r})" if nd else ""
    elif name == "transpose":
        nd = len(ts._shape)
        if nd == 0:
            expr = ""
        else:
            perm = list(range(nd))
            d0, d1 = node.args[1] % nd, node.args[2] % nd
            perm[d0], perm[d1] = perm[d1], perm[d0]
            expr = f".transpose({tuple(perm)!r})"
    elif name == "expand":
        return None
    else:
        return None
    a = ts._np
    try:
        got = eval("a" + expr, {"a": a})
    except Exception:
        return None
    if (got.shape != out._np.shape or got.strides != out._np.strides or not np.shares_memory(got, a)
            and got.size > 0):
        return None
    return ir.View(node.out.i, shape, out._dtype, src.i, expr, f"{name}.{ov or 'default'}", node)


def _axes(dim, nd):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return None
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % nd for d in dim)) if nd else None


# (name, overload) -> function(args, values) giving (lines, tensor-arg positions); lines use {o} for the
# planned output array and {0}, {1} for the tensor arguments (by position in the node's args)
def _red(fn_name, mean=False):
    def rule(args, values, out):
        src = values[args[0].i]
        nd = len(src._shape)
        if len(args) > 3 and args[3] is not None:          # dtype=
            return None
        dim = args[1] if len(args) > 1 else None
        kd = bool(args[2]) if len(args) > 2 else False
        ax = _axes(dim, nd)
        if mean or fn_name != "add":
            n = 1
            for d in src._shape:
                n *= d
            if n == 0:
                return None
        lines = [f"np.{fn_name}.reduce({{0}}, axis={ax!r}, keepdims={kd}, out={{o}})"]
        cnt = 1
        for d in (range(nd) if ax is None else ax):
            cnt *= src._shape[d]
        if mean:
            lines.append(f"np.divide({{o}}, {{o}}.dtype.type({cnt}), out={{o}})")
        row = None
        if ax is None or ax == tuple(range(nd - len(ax), nd)):
            # over the trailing dims: a row reduction a fused kernel can end with
            row = ({"add": "mean" if mean else "sum", "maximum": "max", "minimum": "min"}[fn_name], cnt)
        return lines, [0], row
    return rule


def _softmax(log):
    def rule(args, values, out):
        if len(args) > 2 and args[2] not in (None, False):
            return None
        src = values[args[0].i]
        nd = len(src._shape)
        if nd == 0 or 0 in tuple(src._shape):
            return None
        d = args[1] % nd
        lines = [f"_m = np.maximum.reduce({{0}}, axis={d}, keepdims=True)",
                 "np.subtract({0}, _m, out={o})"]
        if log:
            lines += [f"_s = np.add.reduce(np.exp({{o}}), axis={d}, keepdims=True)",
                      "np.subtract({o}, np.log(_s), out={o})"]
        else:
            lines += ["np.exp({o}, out={o})",
                      f"np.divide({{o}}, np.add.reduce({{o}}, axis={d}, keepdims=True), out={{o}})"]
        # over the last dim: a row kernel can end the kernel computing its input (codegen)
        row = ("log_softmax" if log else "softmax", src._shape[-1]) if d == nd - 1 else None
        return lines, [0], row
    return rule


def _softmax_bw(log):
    def rule(args, values, out):
        g, y = values[args[0].i], values[args[1].i]
        nd = len(g._shape)
        if nd == 0 or tuple(g._shape) != tuple(y._shape) or 0 in tuple(g._shape):
            return None
        d = args[2] % nd
        if log:
            lines = [f"_s = np.add.reduce({{0}}, axis={d}, keepdims=True)",
                     "np.multiply(np.exp({1}), _s, out={o})", "np.subtract({0}, {o}, out={o})"]
        else:
            lines = ["np.multiply({0}, {1}, out={o})", f"_s = np.add.reduce({{o}}, axis={d}, keepdims=True)",
                     "np.subtract({0}, _s, out={o})", "np.multiply({o}, {1}, out={o})"]
        return lines, [0, 1]
    return rule


def _fill(value):
    def rule(args, values, out):
        if any(a not in (None, False) for a in args[1:]):
            return None      # another dtype, layout, device or memory format: the extern
        return [f"{{o}}[...] = {value}"], [0]
    return rule


_NPOPS = {
    ("ones_like", ""): _fill(1), ("zeros_like", ""): _fill(0),
    ("sum", ""): _red("add"), ("sum", "dim_IntList"): _red("add"),
    ("mean", ""): _red("add", mean=True), ("mean", "dim"): _red("add", mean=True),
    ("amax", ""): _red("maximum"), ("amin", ""): _red("minimum"),
    ("softmax", "int"): _softmax(False), ("_softmax", ""): _softmax(False),
    ("log_softmax", "int"): _softmax(True), ("_log_softmax", ""): _softmax(True),
    ("_softmax_backward_data", ""): _softmax_bw(False), ("_log_softmax_backward_data", ""): _softmax_bw(True),
}


def _lower_npop(node, name, ov, values):
    """Reductions and softmax as NumPy statements in the call, writing a planned buffer."""
    out = values[node.out.i]
    if out._dtype not in (_dt.float32, _dt.float64) or not out._np.flags.c_contiguous:
        return None
    args = node.args
    if name in ("sum", "mean") and ov == "" and len(args) > 1 and args[1] is not None:
        return None
    if name in ("sum", "mean") and ov == "":
        args = (args[0], None, False)
    for a in args:
        if isinstance(a, Ref) and values[a.i]._dtype is not out._dtype:
            return None
    r = _NPOPS[(name, ov)](args, values, out)
    if r is None:
        return None
    lines, pos = r[0], r[1]
    if not all(isinstance(args[p], Ref) for p in pos):
        return None
    reads = [args[p].i for p in pos]
    op = ir.NpOp(node.out.i, tuple(out._shape), out._dtype, reads, lines, f"{name}.{ov or 'default'}")
    op.row = r[2] if len(r) > 2 else None
    return op
