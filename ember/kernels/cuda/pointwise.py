"""Pointwise ops on the CUDA backend: ONE numba.cuda kernel template.

A kernel is generated per (expression, rank after coalescing, operand kinds and dtypes, output
dtype, compute dtype) and cached. It is a grid-stride loop over the output's elements; each
element's position in every operand comes from index math over the (coalesced) output shape and
the operand's strides (0 on broadcast dims), so broadcast, transposed and strided inputs need no
copies, and contiguous operands collapse to rank 1 (consecutive threads touch consecutive
addresses: coalesced). Shapes/strides/offsets travel as scalar kernel parameters (no per-launch
host-to-device copies). Output shape and dtype come from the op's Meta function; arithmetic runs
in PyTorch's opmath type (float for half). Python numbers and 0-d CPU tensors are scalar kernel
parameters, cast on the host to the compute dtype.
"""
import math

from ember.core import dtype as _dt
from ember.kernels.cuda import _launch as L
from ember.kernels.meta import activation as MA
from ember.kernels.meta import compare as MC
from ember.kernels.meta import pointwise as MP
from ember.core.tensor_impl import make_view_meta
from ember.kernels.meta._glue import store_inplace

_LETTERS = "abcefgh"
_kcache = {}


def _source(expr, kinds, nparams, nd):
    """Python source of a kernel; kinds[j] is 'T' (tensor), 'R' (raw tensor: no cast) or 'S'."""
    args = ["o", "oo"] + [f"os{k}" for k in range(nd)]
    loads = []
    for j, kind in enumerate(kinds):
        x = _LETTERS[j]
        if kind == "S":
            args.append(f"v{j}")
            loads.append(f"        {x} = v{j}")
        else:
            args += [f"x{j}", f"x{j}o"] + [f"x{j}s{k}" for k in range(nd)]
            ld = f"x{j}[i{j}]"
            loads.append(f"        {x} = {ld if kind == 'R' else f'CT({ld})'}")
    args += [f"p{k}" for k in range(nparams)] + [f"sz{k}" for k in range(nd)] + ["n"]
    tens = [j for j, kind in enumerate(kinds) if kind != "S"]
    lines = [f"def kern({', '.join(args)}):",
             "    i = cuda.grid(1)",
             "    st = cuda.gridsize(1)",
             "    while i < n:"]
    if nd == 0:
        lines.append("        io = oo")
        lines += [f"        i{j} = x{j}o" for j in tens]
    else:
        lines.append("        r = i")
        for k in range(nd - 1, -1, -1):
            if k:
                lines.append(f"        c = r % sz{k}")
                lines.append(f"        r = r // sz{k}")
            else:
                lines.append("        c = r")
            if k == nd - 1:
                lines.append(f"        io = oo + c * os{k}")
                lines += [f"        i{j} = x{j}o + c * x{j}s{k}" for j in tens]
            else:
                lines.append(f"        io += c * os{k}")
                lines += [f"        i{j} += c * x{j}s{k}" for j in tens]
    lines += loads
    lines.append(f"        o[io] = OT({expr})")
    lines.append("        i += st")
    return "\n".join(lines) + "\n"


def run(exprs, out, ops, params=(), ct=None, raw=()):
    """Compute `out[...] = expr(ops..., params...)` over out's shape; returns out.

    exprs: an expression string or a dict by compute category ('b', 'i', 'f');
    ops: operands (device tensors broadcast to out's shape, numbers, 0-d CPU tensors);
    ct: compute dtype (default: opmath of out's dtype); raw: operand positions loaded uncast.
    """
    od = out._dtype
    if ct is None:
        ct = L.opmath(od)
    if od not in L.SUPPORTED or ct not in L.SUPPORTED:
        raise L.Unsupported()
    expr = exprs if isinstance(exprs, str) else exprs.get(L.cat(ct))
    if expr is None:
        raise L.Unsupported()
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    kinds = []
    tens = []
    svals = []
    for j, x in enumerate(ops):
        if L.is_dev(x):
            if x._dtype not in L.SUPPORTED:
                raise L.Unsupported()
            kinds.append("R" if j in raw else "T")
            tens.append(x)
        else:
            v = L.scalar_of(x)
            kinds.append("S")
            svals.append(v if j in raw else L.cast_scalar(v, ct))
    shp, sts = L.coalesce(shape, [list(out._strides)] + [L.broadcast_strides(t, shape) for t in tens])
    nd = len(shp)
    pvals = [L.cast_scalar(p, ct) if not isinstance(p, tuple) else p[0] for p in params]
    key = (expr, tuple(kinds), nd, od, ct, tuple(t._dtype for t in tens),
           tuple(type(v) for v in svals), tuple(type(p) for p in pvals))
    k = _kcache.get(key)
    if k is None:
        k = _kcache[key] = L.compile_kernel(_source(expr, kinds, len(pvals), nd), "kern",
                                            {"OT": L.nbtype(od)}, ct)
    args = [L.flat(out), out._offset] + sts[0]
    ti = 1
    si = 0
    for kind in kinds:
        if kind == "S":
            args.append(svals[si])
            si += 1
        else:
            t = tens[ti - 1]
            args += [L.flat(t), t._offset] + sts[ti]
            ti += 1
    args += pvals + shp + [n]
    blocks, tpb = L.launch_1d(n)
    k[blocks, tpb, L.stream(out._device)](*args)
    return out


def _new(spec, *ops):
    return L.empty(spec[0], spec[1], L.device_of(*ops))


def functional(exprs, spec, ops, params=(), ct=None, raw=()):
    return run(exprs, _new(spec, *ops), ops, params, ct, raw)


def inplace(exprs, self, spec, name, ops, params=(), raw=()):
    """`self` op= ...: PyTorch's cast/shape checks, compute in the result type, store into self."""
    store_inplace(self, spec, name)
    return run(exprs, self, ops, params, L.opmath(spec[1]), raw)


KERNELS = {}


def _reg(names, fn):
    for nm in names.split():
        KERNELS[nm] = fn


# ---- arithmetic --------------------------------------------------------------------------------
def _addsub(sign, rev=False):
    def f(self, other, alpha=1):
        spec = (MP.sub if sign < 0 else MP.add)(other, self, alpha) if rev else \
            (MP.sub if sign < 0 else MP.add)(self, other, alpha)
        a, b = (other, self) if rev else (self, other)
        op = "-" if sign < 0 else "+"
        if alpha.__class__ is int and alpha == 1:
            return functional(f"a {op} b", spec, (a, b))
        return functional(f"a {op} p0 * b", spec, (a, b), (alpha,))

    def f_(self, other, alpha=1):
        spec = (MP.sub if sign < 0 else MP.add)(self, other, alpha)
        op = "-" if sign < 0 else "+"
        if alpha.__class__ is int and alpha == 1:
            return inplace(f"a {op} b", self, spec, "add_", (self, other))
        return inplace(f"a {op} p0 * b", self, spec, "add_", (self, other), (alpha,))
    return f, f_


_add, _add_ = _addsub(1)
_sub, _sub_ = _addsub(-1)
_rsub, _ = _addsub(-1, rev=True)
_reg("add.Tensor", _add)
_reg("add_.Tensor", _add_)
_reg("sub.Tensor subtract.Tensor", _sub)
_reg("sub_.Tensor subtract_.Tensor", _sub_)
_reg("rsub.Tensor", _rsub)


def _binary(exprs, meta=MP.binary, name=None):
    def f(self, other):
        return functional(exprs, meta(self, other), (self, other))

    def f_(self, other):
        return inplace(exprs, self, meta(self, other), name, (self, other))
    return f, f_


_DIV_FLOOR = {"i": "a // b", "f": "fdiv_f(a, b)"}
_DIV_TRUNC = {"i": "tdiv_i(a, b)", "f": "trunc(a / b)"}
_BINARY = {
    "mul.Tensor multiply.Tensor": ({"b": "a and b", "i": "a * b", "f": "a * b"}, MP.binary),
    "div.Tensor divide.Tensor true_divide.Tensor": ({"f": "a / b"}, MP.div),
    "floor_divide": (_DIV_FLOOR, MP.binary),
    "remainder.Tensor": ({"i": "a % b", "f": "rem_f(a, b)"}, MP.binary),
    "fmod.Tensor": ({"i": "a - b * tdiv_i(a, b)", "f": "fmod(a, b)"}, MP.fmod),
    "pow.Tensor_Tensor": ({"i": "ipow(a, b)", "f": "pow(a, b)"}, MP.binary),
    "atan2 arctan2": ({"f": "atan2(a, b)"}, MP.atan2),
    "hypot": ({"f": "hypot(a, b)"}, MP.hypot),
    "copysign.Tensor": ({"f": "copysign(a, b)"}, MP.binary_float),
    "maximum": ("maxn(a, b)", MP.maximum),
    "minimum": ("minn(a, b)", MP.minimum),
    "fmax": ({"b": "maxn(a, b)", "i": "maxn(a, b)", "f": "fmaxi(a, b)"}, MP.fmax),
    "fmin": ({"b": "minn(a, b)", "i": "minn(a, b)", "f": "fmini(a, b)"}, MP.fmin),
}
for _names, (_e, _m) in _BINARY.items():
    _f, _f_ = _binary(_e, _m, _names.split()[0].split(".")[0] + "_")
    _reg(_names, _f)
    _reg(" ".join(n.replace(".", "_.", 1) if "." in n else n + "_" for n in _names.split()
                  if n.split(".")[0] not in ("maximum", "minimum", "fmax", "fmin")), _f_)


def _div_mode(self, other, rounding_mode=None):
    spec = MP.div_mode(self, other, rounding_mode)
    e = {"f": "a / b"} if rounding_mode is None else (
        _DIV_TRUNC if rounding_mode == "trunc" else _DIV_FLOOR)
    return functional(e, spec, (self, other))


def _div_mode_(self, other, rounding_mode=None):
    spec = MP.div_mode(self, other, rounding_mode)
    e = {"f": "a / b"} if rounding_mode is None else (
        _DIV_TRUNC if rounding_mode == "trunc" else _DIV_FLOOR)
    return inplace(e, self, spec, "div_", (self, other))


_reg("div.Tensor_mode divide.Tensor_mode", _div_mode)
_reg("div_.Tensor_mode divide_.Tensor_mode", _div_mode_)


def _pow_ts(self, exponent):
    spec = MP.pow_tensor_scalar(self, exponent)
    ct = L.opmath(spec[1])
    if ct.category == _dt.FLOAT:
        if exponent == 2:
            return functional("a * a", spec, (self,))
        if exponent == 0.5:
            return functional("sqrt(a)", spec, (self,))
        return functional("pow(a, b)", spec, (self, exponent))
    return functional("ipow(a, b)", spec, (self, exponent))


def _pow_ts_(self, exponent):
    spec = MP.pow_tensor_scalar(self, exponent)
    return inplace({"i": "ipow(a, b)", "f": "pow(a, b)"}, self, spec, "pow_", (self, exponent))


def _pow_scalar(self, exponent):
    return functional({"i": "ipow(a, b)", "f": "pow(a, b)"}, MP.binary(self, exponent),
                      (self, exponent))


def _float_power(self, exponent):
    spec = MP.float_power(self, exponent)
    return functional({"f": "pow(a, b)"}, spec, (self, exponent))


_reg("pow.Tensor_Scalar", _pow_ts)
_reg("pow_.Tensor_Scalar", _pow_ts_)
_reg("pow.Scalar", _pow_scalar)
_reg("float_power.Tensor_Tensor float_power.Scalar float_power.Tensor_Scalar", _float_power)


# ---- unary -------------------------------------------------------------------------------------
def _unary(exprs, meta, name):
    def f(self):
        return functional(exprs, meta(self), (self,))

    def f_(self):
        return inplace(exprs, self, meta(self), name, (self,))
    return f, f_


_FLOAT_UNARY = {n: f"{n}(a)" for n in
                "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh "
                "cosh tanh asinh acosh atanh erf erfc".split()}
_FLOAT_UNARY.update({"arcsin": "asin(a)", "arccos": "acos(a)", "arctan": "atan(a)",
                     "arcsinh": "asinh(a)", "arccosh": "acosh(a)", "arctanh": "atanh(a)",
                     "sigmoid": "sigm(a)", "reciprocal": "CT(1) / a"})
for _n, _e in _FLOAT_UNARY.items():
    _f, _f_ = _unary({"f": _e}, MP.unary_float, _n + "_")
    _reg(_n, _f)
    _reg(_n + "_", _f_)

_SIGN = {"b": "a", "i": "CT(1) if a > 0 else (CT(-1) if a < 0 else CT(0))",
         "f": "CT(1) if a > 0 else (CT(-1) if a < 0 else CT(0))"}
_UNARY = {
    "neg negative": ({"i": "-a", "f": "-a"}, MP.neg),
    "square": ({"i": "a * a", "f": "a * a"}, MP.square),
    "floor": ({"i": "a", "f": "floor(a)"}, MP.unary),
    "ceil": ({"i": "a", "f": "ceil(a)"}, MP.unary),
    "trunc fix": ({"i": "a", "f": "trunc(a)"}, MP.unary),
    "round": ({"i": "a", "f": "rint(a)"}, MP.unary),
    "frac": ({"f": "a - trunc(a)"}, MP.unary),
    "sign sgn": (_SIGN, MP.unary),
    "deg2rad": ({"f": "a * CT(0.017453292519943295)"}, MP.deg2rad),
    "rad2deg": ({"f": "a * CT(57.29577951308232)"}, MP.rad2deg),
}
for _names, (_e, _m) in _UNARY.items():
    _f, _f_ = _unary(_e, _m, _names.split()[0] + "_")
    _reg(_names, _f)
    if _m is not MP.square or True:
        _reg(" ".join(n + "_" for n in _names.split()), _f_)

_ABS = {"i": "-a if a < 0 else a", "f": "fabs(a)"}


def _abs(self):
    return functional(_ABS, MP.abs(self), (self,))


def _abs_(self):
    MP.abs_(self)
    return inplace(_ABS, self, (self._shape, self._dtype), "abs_", (self,))


_reg("abs absolute", _abs)
_reg("abs_ absolute_", _abs_)


def _logit(self, eps=None):
    spec = MP.unary_float(self)
    if eps is None:
        return functional({"f": "log(a / (CT(1) - a))"}, spec, (self,))
    return functional({"f": "log(clampn(a, p0, p1) / (CT(1) - clampn(a, p0, p1)))"}, spec,
                      (self,), (eps, 1 - eps))


_reg("logit", _logit)


def _nan_to_num(self, nan=None, posinf=None, neginf=None):
    spec = MP.unary(self)
    d = self._dtype
    if d.category != _dt.FLOAT:
        return functional("a", spec, (self,))
    big = _FMAX[d]
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    return functional({"f": "p0 if a != a else (p1 if a == CT(math.inf) else "
                       "(p2 if a == -CT(math.inf) else a))"}, spec, (self,),
                      (0.0 if nan is None else nan, hi, lo))


_FMAX = {_dt.float16: 65504.0, _dt.float32: 3.4028234663852886e38,
         _dt.float64: 1.7976931348623157e308}
_reg("nan_to_num", _nan_to_num)


# ---- comparisons, logical, predicates, where -------------------------------------------------------
def _compare(op, meta):
    def f(self, other):
        spec = meta(self, other)
        ct = _dt.result_type_of((MP.part(self), MP.part(other)))
        return functional(f"a {op} b", spec, (self, other), ct=L.opmath(ct))

    def f_(self, other):
        spec = meta(self, other)
        ct = _dt.result_type_of((MP.part(self), MP.part(other)))
        store_inplace(self, (spec[0], self._dtype), op)
        return run(f"a {op} b", self, (self, other), (), L.opmath(ct))
    return f, f_


for _op, _names, _m in (("==", "eq", MC.compare), ("!=", "ne not_equal", MC.compare),
                        ("<", "lt less", MC.lt), ("<=", "le less_equal", MC.le),
                        (">", "gt greater", MC.gt), (">=", "ge greater_equal", MC.ge)):
    _f, _f_ = _compare(_op, _m)
    for _n in _names.split():
        _reg(f"{_n}.Tensor {_n}.Scalar", _f)
        _reg(f"{_n}_.Tensor {_n}_.Scalar", _f_)


def _logical(expr, meta):
    def f(self, other):
        return functional(expr, meta(self, other), (self, other), ct=_dt.bool_, raw=(0, 1))

    def f_(self, other):
        spec = meta(self, other)
        store_inplace(self, (spec[0], self._dtype), "logical")
        return run(expr, self, (self, other), (), _dt.bool_, raw=(0, 1))
    return f, f_


for _n, _e in (("and", "(a != 0) and (b != 0)"), ("or", "(a != 0) or (b != 0)"),
               ("xor", "(a != 0) != (b != 0)")):
    _f, _f_ = _logical(_e, getattr(MC, "logical_" + _n))
    _reg("logical_" + _n, _f)
    _reg(f"logical_{_n}_", _f_)


def _bitwise(op, meta, name):
    e = {"b": f"a {op} b", "i": f"a {op} b"}

    def f(self, other):
        return functional(e, meta(self, other), (self, other))

    def f_(self, other):
        return inplace(e, self, meta(self, other), name, (self, other))
    return f, f_


for _n, _o in (("and", "&"), ("or", "|"), ("xor", "^")):
    _f, _f_ = _bitwise(_o, getattr(MC, "bitwise_" + _n), f"bitwise_{_n}_")
    _reg(f"bitwise_{_n}.Tensor bitwise_{_n}.Scalar bitwise_{_n}.Scalar_Tensor", _f)
    _reg(f"bitwise_{_n}_.Tensor bitwise_{_n}_.Scalar", _f_)


def _bitwise_not(self):
    return functional({"b": "not a", "i": "~a"}, MC.bitwise_not(self), (self,))


_reg("bitwise_not", _bitwise_not)


def _predicate(exprs, meta=MC.predicate):
    def f(self):
        return functional(exprs, meta(self), (self,), ct=L.opmath(self._dtype))
    return f


_reg("logical_not", lambda self: functional("a == 0", MC.predicate(self), (self,),
                                            ct=_dt.bool_, raw=(0,)))
_reg("isnan", _predicate({"b": "False", "i": "False", "f": "a != a"}))
_reg("isinf", _predicate({"b": "False", "i": "False", "f": "a == CT(math.inf) or a == -CT(math.inf)"}))
_reg("isfinite", _predicate({"b": "True", "i": "True", "f": "a - a == CT(0)"}))
_reg("isposinf", _predicate({"b": "False", "i": "False", "f": "a == CT(math.inf)"}, MC.isposinf))
_reg("isneginf", _predicate({"b": "False", "i": "False", "f": "a == -CT(math.inf)"}, MC.isneginf))
_reg("signbit", _predicate({"b": "False", "i": "a < 0", "f": "copysign(CT(1), a) < CT(0)"},
                           MC.signbit))


def _where(condition, self, other):
    spec = MC.where(condition, self, other)
    return functional("b if a else c", spec, (condition, self, other), raw=(0,))


_reg("where.self where.ScalarSelf where.ScalarOther where.Scalar", _where)


def _masked_fill(self, mask, value):
    spec = MC.masked_fill(self, mask, value)
    return functional("c if b else a", spec, (self, mask, value), raw=(1,))


def _masked_fill_(self, mask, value):
    MC.masked_fill_(self, mask, value)
    return run("c if b else a", self, (self, mask, value), (), None, raw=(1,))


_reg("masked_fill.Scalar masked_fill.Tensor", _masked_fill)
_reg("masked_fill_.Scalar masked_fill_.Tensor", _masked_fill_)


# ---- clamp, lerp, addcmul/addcdiv --------------------------------------------------------------
def _clamp_expr(lo, hi):
    if lo is None:
        return "minn(a, c)"
    if hi is None:
        return "maxn(a, b)"
    return "clampn(a, b, c)"


def _clamp(self, min=None, max=None):
    spec = MP.clamp(self, min, max)
    return functional(_clamp_expr(min, max), spec, (self, 0 if min is None else min,
                                                    0 if max is None else max))


def _clamp_(self, min=None, max=None):
    spec = MP.clamp(self, min, max)
    return inplace(_clamp_expr(min, max), self, spec, "clamp_",
                   (self, 0 if min is None else min, 0 if max is None else max))


_reg("clamp clamp.Tensor clip clip.Tensor", _clamp)
_reg("clamp_ clamp_.Tensor clip_ clip_.Tensor", _clamp_)
_reg("clamp_min clamp_min.Tensor", lambda self, min: functional(
    "maxn(a, b)", MP.clamp_min(self, min), (self, min)))
_reg("clamp_max clamp_max.Tensor", lambda self, max: functional(
    "minn(a, b)", MP.clamp_max(self, max), (self, max)))
_reg("clamp_min_ clamp_min_.Tensor", lambda self, min: inplace(
    "maxn(a, b)", self, MP.clamp_min(self, min), "clamp_min_", (self, min)))
_reg("clamp_max_ clamp_max_.Tensor", lambda self, max: inplace(
    "minn(a, b)", self, MP.clamp_max(self, max), "clamp_max_", (self, max)))

_LERP = {"f": "a + c * (b - a) if fabs(c) < CT(0.5) else b - (b - a) * (CT(1) - c)"}


def _lerp(self, end, weight):
    return functional(_LERP, MP.lerp(self, end, weight), (self, end, weight))


def _lerp_(self, end, weight):
    return inplace(_LERP, self, MP.lerp(self, end, weight), "lerp_", (self, end, weight))


_reg("lerp.Scalar lerp.Tensor", _lerp)
_reg("lerp_.Scalar lerp_.Tensor", _lerp_)


def _addc(op):
    e = {"i": f"a + p0 * b {op} c", "f": f"a + p0 * b {op} c"} if op == "*" else \
        {"f": f"a + p0 * b {op} c"}

    def f(self, tensor1, tensor2, value=1):
        meta = MP.addcmul if op == "*" else MP.addcdiv
        return functional(e, meta(self, tensor1, tensor2, value), (self, tensor1, tensor2),
                          (value,))

    def f_(self, tensor1, tensor2, value=1):
        meta = MP.addcmul if op == "*" else MP.addcdiv
        return inplace(e, self, meta(self, tensor1, tensor2, value), "addc_",
                       (self, tensor1, tensor2), (value,))
    return f, f_


_f, _f_ = _addc("*")
_reg("addcmul", _f)
_reg("addcmul_", _f_)
_f, _f_ = _addc("/")
_reg("addcdiv", _f)
_reg("addcdiv_", _f_)


# ---- activations -------------------------------------------------------------------------------
def _act(exprs, meta, params=lambda *a: ()):
    """Functional and in-place kernels of an activation with scalar parameters."""
    def f(self, *args):
        return functional(exprs, meta(self, *args), (self,), params(*args))

    def f_(self, *args):
        meta(self, *args)
        return run(exprs, self, (self,), params(*args))
    return f, f_


_GELU = {"none": {"f": "CT(0.5) * a * (CT(1) + erf(a * CT(0.7071067811865476)))"},
         "tanh": {"f": "gelu_t(a)"}}


def _gelu(self, approximate="none"):
    spec = MA.gelu(self, approximate)
    return functional(_GELU[approximate], spec, (self,))


def _gelu_(self, approximate="none"):
    MA.gelu(self, approximate)
    return run(_GELU[approximate], self, (self,))


_reg("gelu", _gelu)
_reg("gelu_", _gelu_)

_ACTS = {
    "relu": ({"i": "CT(0) if a < 0 else a", "f": "CT(0) if a < 0 else a"}, MA.relu, None),
    "silu": ({"f": "a * sigm(a)"}, MA.silu, None),
    "mish": ({"f": "a * tanh(log1p(exp(a)))"}, MA.mish, None),
    "hardsigmoid": ({"f": "minn(maxn(a + CT(3), CT(0)), CT(6)) / CT(6)"}, MA.hardsigmoid, None),
    "hardswish": ({"f": "a * minn(maxn(a + CT(3), CT(0)), CT(6)) / CT(6)"}, MA.hardswish, None),
    "log_sigmoid": ({"f": "minn(a, CT(0)) - log1p(exp(-fabs(a)))"}, MA.log_sigmoid, None),
    "hardtanh": ({"i": "clampn(a, p0, p1)", "f": "clampn(a, p0, p1)"}, MA.hardtanh,
                 lambda lo=-1, hi=1: (lo, hi)),
    "leaky_relu": ({"f": "a if a > CT(0) else a * p0"}, MA.leaky_relu, lambda s=0.01: (s,)),
    "threshold": ({"i": "p1 if a <= p0 else a", "f": "p1 if a <= p0 else a"}, MA.threshold,
                  lambda t, v: (t, v)),
    "softplus": ({"f": "a if a * p0 > p1 else log1p(exp(a * p0)) / p0"}, MA.softplus,
                 lambda beta=1, threshold=20: (beta, threshold)),
    "elu": ({"f": "(expm1(a * p2) * p0 * p1) if a <= CT(0) else a * p1"}, MA.elu,
            lambda alpha=1, scale=1, input_scale=1: (alpha, scale, input_scale)),
    "celu": ({"f": "(expm1(a / p0) * p0) if a <= CT(0) else a"}, MA.celu,
             lambda alpha=1.0: (alpha,)),
    "softshrink": ({"f": "a - p0 if a > p0 else (a + p0 if a < -p0 else CT(0))"}, MA.softshrink,
                   lambda lambd=0.5: (lambd,)),
    "hardshrink": ({"f": "CT(0) if (a >= -p0 and a <= p0) else a"}, MA.hardshrink,
                   lambda lambd=0.5: (lambd,)),
}
for _n, (_e, _m, _p) in _ACTS.items():
    _f, _f_ = _act(_e, _m, _p or (lambda *a: ()))
    _reg(_n, _f)
    if _n not in ("log_sigmoid", "softplus", "softshrink", "hardshrink"):  # no in-place in aten
        _reg(_n + "_", _f_)


def _bwd(exprs, meta, nparams=0):
    def f(grad_output, self, *args):
        spec = meta(grad_output, self, *args)
        return functional(exprs, spec, (grad_output, self), args[:nparams])
    return f


_reg("threshold_backward", _bwd({"i": "CT(0) if b <= p0 else a", "f": "CT(0) if b <= p0 else a"},
                                MA.threshold_backward, 1))
_reg("hardtanh_backward", _bwd({"f": "CT(0) if (b <= p0 or b >= p1) else a"},
                               MA.hardtanh_backward, 2))
_reg("silu_backward", _bwd({"f": "silu_b(a, b)"}, MA.silu_backward))
_reg("mish_backward", _bwd({"f": "mish_b(a, b)"}, MA.mish_backward))
_reg("hardsigmoid_backward", _bwd({"f": "a / CT(6) if (b > CT(-3) and b < CT(3)) else CT(0)"},
                                  MA.hardsigmoid_backward))
_reg("hardswish_backward", _bwd({"f": "CT(0) if b < CT(-3) else (a * (b / CT(3) + CT(0.5)) "
                                      "if b <= CT(3) else a)"}, MA.hardswish_backward))
_reg("softplus_backward", _bwd({"f": "a if b * p0 > p1 else a * exp(b * p0) / "
                                     "(exp(b * p0) + CT(1))"}, MA.softplus_backward, 2))
_reg("softshrink_backward", _bwd({"f": "CT(0) if (b >= -p0 and b <= p0) else a"},
                                 MA.softshrink_backward, 1))
_reg("hardshrink_backward", _bwd({"f": "CT(0) if (b >= -p0 and b <= p0) else a"},
                                 MA.hardshrink_backward, 1))


def _gelu_backward(grad_output, self, approximate="none"):
    spec = MA.gelu_backward(grad_output, self, approximate)
    e = {"f": "gelu_bt(a, b)" if approximate == "tanh" else "gelu_bn(a, b)"}
    return functional(e, spec, (grad_output, self))


def _leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    spec = MA.leaky_relu_backward(grad_output, self, negative_slope, self_is_result)
    return functional({"f": "a if b > CT(0) else a * p0"}, spec, (grad_output, self),
                      (negative_slope,))


def _elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    spec = MA.elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result)
    if is_result:
        e = {"f": "a * p2 * (b + p0 * p1) if b <= CT(0) else a * p1"}
    else:
        e = {"f": "a * p2 * p0 * p1 * exp(b * p2) if b <= CT(0) else a * p1"}
    return functional(e, spec, (grad_output, self_or_result), (alpha, scale, input_scale))


_reg("gelu_backward", _gelu_backward)
_reg("leaky_relu_backward", _leaky_relu_backward)
_reg("elu_backward", _elu_backward)


# ---- more: closeness, in-place predicates, rounding to decimals, glu, prelu, float_power_ -------
def _close_expr(rtol, atol, equal_nan):
    e = "(a == b)"
    if equal_nan:
        e += " or (a != a and b != b)"
    if rtol != 0 or atol != 0:
        diff = "fabs(CT(a) - CT(b))"
        e += f" or ({diff} - {diff} == CT(0) and {diff} <= p0 + fabs(CT(b) * p1))"
    return e


def _isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    spec = MC.isclose(self, other, rtol, atol, equal_nan)
    ct = self._dtype if self._dtype.category == _dt.FLOAT else _dt.defaults.float
    return functional(_close_expr(rtol, atol, equal_nan), spec, (self, other), (atol, rtol),
                      ct=L.opmath(ct), raw=(0, 1))


_reg("isclose", _isclose)  # equal and allclose reduce it: kernels/cuda/reduction.py


def _logical_not_(self):
    store_inplace(self, (self._shape, self._dtype), "logical_not_")
    return run("a == 0", self, (self,), (), _dt.bool_, raw=(0,))


def _bitwise_not_(self):
    MC.bitwise_not(self)
    return run({"b": "not a", "i": "~a"}, self, (self,))


_reg("logical_not_", _logical_not_)
_reg("bitwise_not_", _bitwise_not_)
_reg("erfinv", lambda self: functional({"f": "erfinv(a)"}, MP.unary_float(self), (self,)))
_reg("erfinv_", lambda self: inplace({"f": "erfinv(a)"}, self, MP.unary_float(self), "erfinv_",
                                     (self,)))
_reg("logit_", lambda self, eps=None: inplace(
    {"f": "log(a / (CT(1) - a))"} if eps is None else
    {"f": "log(clampn(a, p0, p1) / (CT(1) - clampn(a, p0, p1)))"}, self, MP.unary_float(self),
    "logit_", (self,), () if eps is None else (eps, 1 - eps)))


def _nan_to_num_(self, nan=None, posinf=None, neginf=None):
    r = _nan_to_num(self, nan, posinf, neginf)
    return run("a", self, (r,))


_reg("nan_to_num_", _nan_to_num_)


def _round_dec_expr(decimals):
    if decimals == 0:
        return {"f": "rint(a)"}, ()
    p = 10.0 ** abs(decimals)
    return ({"f": "rint(a * p0) / p0"} if decimals > 0 else {"f": "rint(a / p0) * p0"}), (p,)


def _round_decimals(self, decimals):
    e, ps = _round_dec_expr(decimals)
    return functional(e, MP.unary(self), (self,), ps)


def _round_decimals_(self, decimals):
    e, ps = _round_dec_expr(decimals)
    return inplace(e, self, MP.unary(self), "round_", (self,), ps)


_reg("round.decimals", _round_decimals)
_reg("round_.decimals", _round_decimals_)


def _float_power_(self, exponent):
    MP.float_power_(self, exponent)
    return run({"f": "pow(a, b)"}, self, (self, exponent), (), _dt.float64)


_reg("float_power_.Tensor float_power_.Scalar", _float_power_)


def _halves(x, d):
    """The two halves of x along dim d, as views."""
    n = x._shape[d] // 2
    shape = x._shape[:d] + (n,) + x._shape[d + 1:]
    st = x._strides
    return (make_view_meta(x, shape, st, x._offset),
            make_view_meta(x, shape, st, x._offset + n * st[d]))


def _glu(self, dim=-1):
    spec = MA.glu(self, dim)
    if not L.is_dev(self):
        raise L.Unsupported()
    a, b = _halves(self, MA.glu_dim(self._shape, dim))
    return functional({"f": "a * sigm(b)"}, spec, (a, b))


def _glu_backward(grad_output, self, dim):
    spec = MA.glu_backward(grad_output, self, dim)
    if not L.is_dev(self) or not L.is_dev(grad_output):
        raise L.Unsupported()
    d = MA.glu_dim(self._shape, dim)
    a, b = _halves(self, d)
    out = _new(spec, grad_output, self)
    o1, o2 = _halves(out, d)
    run({"f": "a * sigm(b)"}, o1, (grad_output, b), (), L.opmath(spec[1]))
    run({"f": "a * b * sigm(c) * (CT(1) - sigm(c))"}, o2, (grad_output, a, b), (),
        L.opmath(spec[1]))
    return out


_reg("glu", _glu)
_reg("glu_backward", _glu_backward)


def _prelu(self, weight):
    spec = MA.prelu(self, weight)
    if not L.is_dev(self) or not L.is_dev(weight):
        raise L.Unsupported()
    nd = len(self._shape)
    if L.numel(weight._shape) == 1:
        w = make_view_meta(weight, self._shape, (0,) * nd, weight._offset)
    else:
        st = [0] * nd
        st[1 if nd > 1 else 0] = weight._strides[0]
        w = make_view_meta(weight, self._shape, tuple(st), weight._offset)
    return functional({"f": "a if a > CT(0) else b * a"}, spec, (self, w))


_reg("prelu", _prelu)
_reg("log_sigmoid_backward", lambda grad_output, self, buffer=None: functional(
    {"f": "a * sigm(-b)"}, MA.log_sigmoid_backward(grad_output, self, buffer),
    (grad_output, self)))


def _clone(self, memory_format=None):
    return functional("a", (self._shape, self._dtype), (self,), ct=self._dtype)


def _zero_(self):
    return run("CT(0)", self, ())


_reg("clone", _clone)
_reg("zero_", _zero_)
_ = math
KERNELS = L.guarded(KERNELS)
