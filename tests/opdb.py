"""ember's op database, the counterpart of PyTorch's OpInfo `op_db`: each op described once.

An OpInfo names an op, how to call it in either library (`op(lib, *args, **kwargs)` with `lib` ember
or torch: `import ember as torch` holds), the sample inputs it is tried on (ordinary, 0-d,
zero-size, broadcast, and non-contiguous: transposed, strided slices, expanded), the dtypes it is
tested in, whether it has a gradient (and a gradient's gradient), and the calls that must fail
with torch's error. The suites read it:

- tests/ops/test_opdb.py: values, dtypes and shapes against torch; error inputs;
- tests/autograd/test_opdb_grad.py: gradients against torch, gradcheck and gradgradcheck (float64);
- tests/meta/test_opdb_meta.py: meta tensors give the CPU's shape, dtype and strides;
- tests/devices/test_device_generic.py: the same calls on cpu, meta, cuda (the simulator) and adev.
- tests/devices/test_device_tables.py: the pointwise, comparison, activation and product tables
  on every device in the (2, 3) / (0.5, 2) shapes and ranges of the device tables they replaced.

The tables further down were the op tables of the ops and autograd suites; those suites import
them from here.
"""
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
from harness import (DTYPES, INTS, SHAPES, edtype, layout_of, make_pair, np_data, pair_from,
                     tdtype)

import ember
import ember._generated.functions_nn as enn

INF = float("inf")
NAN = float("nan")


# ---- sample inputs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class T:
    """A tensor argument of a sample: its shape and layout (harness.layout_of), the range of its
    values, and its dtype where it is not the dtype under test (kind "index": int64 in [0, high))."""
    shape: tuple
    layout: str = "contiguous"
    low: Any = None
    high: Any = None
    dtype: Any = None
    kind: str = "data"


def index(shape, high):
    return T(tuple(shape), dtype="int64", high=high, kind="index")


@dataclass(frozen=True)
class Dtype:
    """A dtype argument (sum(dtype=...)): becomes ember's or torch's dtype of that name."""
    name: str


@dataclass
class SampleInput:
    """The arguments of one call: T specs, Dtype markers and Python values; `name` says what the
    sample exercises (ordinary, 0-d, zero-size, broadcast, transposed, strided, expanded)."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = "ordinary"
    make: Callable = None  # (dtype, rng) -> list of (ember, torch) pairs, for inputs T cannot say


@dataclass
class ErrorInput:
    """A call that fails: torch raises `error` with a message matching `match` (a regular
    expression), and ember must raise the same type with the same first line."""
    sample: SampleInput
    error: type
    match: str
    dtype: str = "float32"
    fn: Callable = None  # the call, where it is not the op's own


def _materialize_arg(a, dtype, rng, device):
    if isinstance(a, T):
        dt = a.dtype or dtype
        if a.kind == "index":
            base = rng.integers(0, a.high, a.shape)
            return pair_from(base, "int64", device=device)
        base_shape, strides, offset = layout_of(a.shape, a.layout)
        base = np_data(base_shape, dt, rng, a.low, a.high)
        if strides is None:
            return pair_from(base, dt, device=device)
        return pair_from(base, dt, a.shape, strides, offset, device=device)
    if isinstance(a, Dtype):
        return edtype(a.name), tdtype(a.name)
    return a, a


def materialize(sample, dtype, seed=0, device=None):
    """(ember args, torch args, ember kwargs, torch kwargs) of a sample in `dtype`; ember's inputs
    live on `device` (as the same strided views: the view is taken on the device)."""
    rng = np.random.default_rng(seed)
    if sample.make is not None:
        pairs = sample.make(dtype, rng)
        if device is not None:
            pairs = [(e.to(device), t) for e, t in pairs]
    else:
        pairs = [_materialize_arg(a, dtype, rng, device) for a in sample.args]
    kw = {k: _materialize_arg(v, dtype, rng, device) for k, v in sample.kwargs.items()}
    return ([p[0] for p in pairs], [p[1] for p in pairs], {k: v[0] for k, v in kw.items()},
            {k: v[1] for k, v in kw.items()})


# ---- OpInfo -------------------------------------------------------------------------------------
@dataclass
class OpInfo:
    name: str
    op: Callable = None                 # fn(lib, *args, **kwargs); by default lib.<name>
    variants: tuple = ()                # further call forms fn(lib, *args) (overloads), tried on every sample
    method: bool = False                # args[0].<name>(*rest) exists as well
    family: str = ""
    sample_inputs_func: Callable = None  # (op, dtype) -> [SampleInput]
    dtypes: tuple = tuple(DTYPES)       # value tests; where torch raises, ember raises the same error
    domain: tuple = (None, None)        # input values for the value tests (floating dtypes)
    tols: dict = field(default_factory=dict)  # dtype name -> (atol, rtol) (harness.tol_of)
    ember_warnings: Any = None          # harness.compare's: "error" where NumPy must stay quiet
    supports_autograd: bool = False
    supports_gradgrad: bool = False
    grad_domain: tuple = (-2.0, 2.0)
    grad_dtypes: tuple = ("float64", "float32")
    grad_samples_func: Callable = None  # (op, dtype) -> [SampleInput]; default: the value samples
    gradcheck: bool = True              # gradcheck (and gradgradcheck) in float64
    supports_meta: bool = True
    meta_strides: bool = True           # meta results have the CPU's strides
    device_sample: Any = "transposed"   # the sample (by name) the device suite runs, None: not run
    device_domain: tuple = (-0.9, 0.9)
    error_inputs: tuple = ()

    def __post_init__(self):
        if self.op is None:
            name = self.name
            self.op = lambda L, *a, **k: getattr(L, name)(*a, **k)

    @property
    def ember(self):
        """The ember callable."""
        return lambda *a, **k: self.op(ember, *a, **k)

    @property
    def torch(self):
        """The torch callable (the oracle)."""
        return lambda *a, **k: self.op(torch, *a, **k)

    def calls(self):
        """Every call form the value tests try: the op, its variants, its method."""
        out = [self.op, *self.variants]
        if self.method:
            name = self.name
            out.append(lambda L, x, *a, **k: getattr(x, name)(*a, **k))
        return out

    def sample_inputs(self, dtype):
        return list(self.sample_inputs_func(self, dtype))

    def grad_samples(self, dtype):
        if self.grad_samples_func is not None:
            return list(self.grad_samples_func(self, dtype))
        lo, hi = self.grad_domain
        return [_with_domain(s, lo, hi) for s in self.sample_inputs(dtype)]

    def __repr__(self):
        return f"OpInfo({self.name})"


def _with_domain(sample, lo, hi):
    args = tuple(T(a.shape, a.layout, lo, hi, a.dtype, a.kind) if isinstance(a, T) and a.kind == "data"
                 and a.dtype is None else a for a in sample.args)
    return SampleInput(args, sample.kwargs, sample.name, sample.make)


def _floating(dtype):
    return dtype not in INTS and dtype != "bool"


# ---- sample-input functions ---------------------------------------------------------------------
def _layout_name(shape, layout):
    if layout != "contiguous":
        return layout
    return "0-d" if not shape else "zero-size" if 0 in shape else "ordinary"


def sample_inputs_unary(op, dtype, shapes=((), (0,), (3, 4)), layouts=("contiguous", "transposed",
                                                                         "strided", "expanded")):
    """One input: a 0-d, a zero-size and a 2-d tensor, the 2-d one in every layout."""
    lo, hi = op.domain if _floating(dtype) else (None, None)
    for shape in shapes:
        for layout in layouts:
            if layout != "contiguous" and (len(shape) < 1 or 0 in shape):
                continue
            yield SampleInput((T(shape, layout, lo, hi),), name=_layout_name(shape, layout))


BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((), (3,)), ((2, 3, 4), ()),
                 ((0, 4), (4,)), ((5,), (5,))]


def sample_inputs_binary(op, dtype):
    """Two inputs: same shapes, broadcast (either way, 0-d), zero-size; the first one also
    transposed and expanded; a strided slice against a transposed view."""
    lo, hi = op.domain
    if not _floating(dtype) and op.family == "pointwise":
        lo, hi = _int_domain(op.name, dtype)
    for sa, sb in BINARY_SHAPES:
        for layout in ("contiguous", "transposed", "expanded"):
            if layout != "contiguous" and (len(sa) < 2 or 0 in sa):
                continue
            name = layout if layout != "contiguous" else (
                "0-d" if () in (sa, sb) else "zero-size" if 0 in sa else
                "broadcast" if sa != sb else "ordinary")
            yield SampleInput((T(sa, layout, lo, hi), T(sb, "contiguous", lo, hi)), name=name)
    # a strided slice with a transposed view of a (4, 3) array
    yield SampleInput((), name="strided", make=lambda dt, rng: _strided_and_transposed(dt, rng, lo, hi))


def _strided_and_transposed(dtype, rng, lo, hi):
    ea, ta = make_pair((3, 4), dtype, rng, "strided", lo, hi)
    eb, tb = make_pair((4, 3), dtype, rng, "transposed", lo, hi)
    return [(ea, ta), (eb.t(), tb.t())]


REDUCTION_SHAPES = list(SHAPES) + [(3, 0)]


def sample_inputs_reduction(op, dtype):
    """One input in every shape of harness.SHAPES and (3, 0) and every layout."""
    return sample_inputs_unary(op, dtype, shapes=REDUCTION_SHAPES)


def sample_inputs_activation(op, dtype):
    """The activations' gradient cases: (4, 6) contiguous and transposed, (0, 4), two 0-d values."""
    lo, hi = op.domain
    yield SampleInput((T((4, 6), "contiguous", lo, hi),), name="ordinary")
    yield SampleInput((T((4, 6), "transposed", lo, hi),), name="transposed")
    yield SampleInput((T((0, 4), "contiguous", lo, hi),), name="zero-size")
    if not op.name.startswith("glu"):
        for v in (-1.25, 0.75):
            yield SampleInput((), name="0-d", make=lambda dt, rng, v=v: [
                (ember.tensor(v, dtype=edtype(dt)), torch.tensor(v, dtype=tdtype(dt)))])


def _linalg_samples(specs, layouts=("contiguous",)):
    def func(op, dtype):
        for layout in layouts:
            yield SampleInput((), name="ordinary" if layout == "contiguous" else layout,
                              make=lambda dt, rng, layout=layout: [make(kind, shape, dt, rng, layout)
                                                                   for kind, shape in specs])
    return func


# ==== the tables ===================================================================================
# ---- pointwise (was tests/ops/test_pointwise.py) ------------------------------------------------
POINTWISE_UNARY = [
    "neg", "negative", "abs", "absolute", "sign", "sgn", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "asin", "acos", "atan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh",
    "arccosh", "arctanh", "sigmoid", "logit", "erf", "erfc", "erfinv", "floor", "ceil", "round",
    "trunc", "fix", "frac", "reciprocal", "nan_to_num", "deg2rad", "rad2deg", "angle"]
UNIT_DOMAIN = {"asin", "acos", "arcsin", "arccos", "atanh", "arctanh", "erfinv", "logit"}


def _div_trunc(lib, a, b):
    return lib.div(a, b, rounding_mode="trunc")


def _div_floor(lib, a, b):
    return lib.div(a, b, rounding_mode="floor")


POINTWISE_BINARY = {
    "add": lambda lib, a, b: lib.add(a, b),
    "add_alpha": lambda lib, a, b: lib.add(a, b, alpha=2),
    "sub": lambda lib, a, b: lib.sub(a, b),
    "sub_alpha": lambda lib, a, b: lib.sub(a, b, alpha=3),
    "subtract": lambda lib, a, b: lib.subtract(a, b),
    "rsub": lambda lib, a, b: lib.rsub(a, b),
    "mul": lambda lib, a, b: lib.mul(a, b),
    "multiply": lambda lib, a, b: lib.multiply(a, b),
    "div": lambda lib, a, b: lib.div(a, b),
    "divide": lambda lib, a, b: lib.divide(a, b),
    "true_divide": lambda lib, a, b: lib.true_divide(a, b),
    "div_trunc": _div_trunc,
    "div_floor": _div_floor,
    "floor_divide": lambda lib, a, b: lib.floor_divide(a, b),
    "remainder": lambda lib, a, b: lib.remainder(a, b),
    "fmod": lambda lib, a, b: lib.fmod(a, b),
    "pow": lambda lib, a, b: lib.pow(a, b),
    "float_power": lambda lib, a, b: lib.float_power(a, b),
    "atan2": lambda lib, a, b: lib.atan2(a, b),
    "arctan2": lambda lib, a, b: lib.arctan2(a, b),
    "hypot": lambda lib, a, b: lib.hypot(a, b),
    "copysign": lambda lib, a, b: lib.copysign(a, b),
    "minimum": lambda lib, a, b: lib.minimum(a, b),
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "fmin": lambda lib, a, b: lib.fmin(a, b),
    "fmax": lambda lib, a, b: lib.fmax(a, b),
    "polar": lambda lib, a, b: lib.polar(a, b),
    "complex": lambda lib, a, b: lib.complex(a, b),
    "clamp_min": lambda lib, a, b: lib.clamp_min(a, b),
    "clamp_max": lambda lib, a, b: lib.clamp_max(a, b),
    "lerp": lambda lib, a, b: lib.lerp(a, b, 0.3),
    "lerp_big": lambda lib, a, b: lib.lerp(a, b, 0.7),
    "lerp_tensor": lambda lib, a, b: lib.lerp(a, b, b),
    "addcmul": lambda lib, a, b: lib.addcmul(a, b, b, value=2),
    "addcdiv": lambda lib, a, b: lib.addcdiv(a, b, b, value=0.5),
}
INT_DIV = {"div_trunc", "div_floor", "floor_divide", "remainder", "fmod"}


def _int_domain(name, dtype):
    """Integer inputs away from 0 where the op divides by its second input; pow's small."""
    if name in INT_DIV or name == "addcdiv":
        return (1, 10)
    if name == "pow" and dtype in INTS:
        return (0, 5)
    return (None, None)


# float16 / bfloat16 results may differ from PyTorch's by one unit in the last place (PyTorch's
# vectorized and scalar loops round differently)
POINTWISE_TOL = {"float16": (1e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}

# ---- comparisons (was tests/ops/test_compare.py) ------------------------------------------------
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
               "not_equal"]
ORDERING = {"lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal"}

# ---- reductions (was tests/ops/test_reduction.py): one entry per op, calls that exercise its overloads
REDUCE = {
    "sum": [lambda L, x: x.sum(), lambda L, x: L.sum(x, 0), lambda L, x: x.sum((0, -1), keepdim=True),
            lambda L, x: x.sum(dim=None), lambda L, x: x.sum(-1, dtype=L.float64),
            lambda L, x: L.sum(x, dtype=L.int32), lambda L, x: x.sum(dim=[])],
    "nansum": [lambda L, x: x.nansum(), lambda L, x: L.nansum(x, -1, keepdim=True),
               lambda L, x: x.nansum(dtype=L.float64)],
    "mean": [lambda L, x: x.mean(), lambda L, x: L.mean(x, -1), lambda L, x: x.mean((0,), True),
             lambda L, x: x.mean(dtype=L.float64), lambda L, x: x.mean(0, dtype=L.int32)],
    "nanmean": [lambda L, x: x.nanmean(), lambda L, x: L.nanmean(x, 0, keepdim=True)],
    "prod": [lambda L, x: x.prod(), lambda L, x: L.prod(x, 0), lambda L, x: x.prod(-1, True),
             lambda L, x: x.prod(dtype=L.float64)],
    "max": [lambda L, x: x.max(), lambda L, x: L.max(x, 0), lambda L, x: x.max(-1, keepdim=True),
            lambda L, x: L.max(x, dim=0).values, lambda L, x: L.max(x, x.flip(0) if x.ndim else x)],
    "min": [lambda L, x: x.min(), lambda L, x: L.min(x, 0), lambda L, x: x.min(-1, True),
            lambda L, x: L.min(x, dim=-1).indices, lambda L, x: L.min(x, x.flip(0) if x.ndim else x)],
    "amax": [lambda L, x: x.amax(), lambda L, x: L.amax(x, 0), lambda L, x: x.amax((0, -1), True)],
    "amin": [lambda L, x: x.amin(), lambda L, x: L.amin(x, -1), lambda L, x: x.amin(dim=())],
    "aminmax": [lambda L, x: x.aminmax(), lambda L, x: L.aminmax(x, dim=0),
                lambda L, x: L.aminmax(x, dim=-1, keepdim=True), lambda L, x: L.aminmax(x, keepdim=True)],
    "argmax": [lambda L, x: x.argmax(), lambda L, x: L.argmax(x, 0), lambda L, x: x.argmax(-1, True),
               lambda L, x: x.argmax(keepdim=True)],
    "argmin": [lambda L, x: x.argmin(), lambda L, x: L.argmin(x, -1), lambda L, x: x.argmin(0, True)],
    "var": [lambda L, x: x.var(), lambda L, x: L.var(x, 0), lambda L, x: x.var(-1, keepdim=True),
            lambda L, x: x.var(unbiased=False), lambda L, x: L.var(x, 0, False, True),
            lambda L, x: x.var(dim=-1, correction=0), lambda L, x: L.var(x, correction=2),
            lambda L, x: x.var(False)],
    "std": [lambda L, x: x.std(), lambda L, x: L.std(x, -1), lambda L, x: x.std(0, keepdim=True),
            lambda L, x: x.std(unbiased=False), lambda L, x: L.std(x, (0,), correction=0.5)],
    "var_mean": [lambda L, x: L.var_mean(x), lambda L, x: L.var_mean(x, 0),
                 lambda L, x: L.var_mean(x, -1, keepdim=True, correction=0),
                 lambda L, x: L.var_mean(x, False)],
    "std_mean": [lambda L, x: L.std_mean(x), lambda L, x: L.std_mean(x, -1, True, True),
                 lambda L, x: L.std_mean(x, dim=0, correction=0)],
    "norm": [lambda L, x: x.norm(), lambda L, x: L.norm(x, 1), lambda L, x: x.norm(INF, dim=0),
             lambda L, x: L.norm(x, -INF), lambda L, x: x.norm(0), lambda L, x: x.norm(3, -1, True),
             lambda L, x: L.norm(x, "fro", dim=(0,)), lambda L, x: x.norm(0.5),
             lambda L, x: L.norm(x, dtype=L.float64), lambda L, x: x.norm(p=None),
             lambda L, x: x.norm(-1.0, dim=-1), lambda L, x: L.norm(x, "nuc"),
             lambda L, x: x.norm("fro", dim=(0, -1), keepdim=True), lambda L, x: L.norm(x, "abc"),
             lambda L, x: x.norm(INF, dim=(0, -1))],
    "vector_norm": [lambda L, x: L.linalg.vector_norm(x), lambda L, x: L.linalg.vector_norm(x, 1, 0),
                    lambda L, x: L.linalg.vector_norm(x, INF, -1, True),
                    lambda L, x: L.linalg.vector_norm(x, -INF), lambda L, x: L.linalg.vector_norm(x, 0),
                    lambda L, x: L.linalg.vector_norm(x, 2.5, dim=(0,)),
                    lambda L, x: L.linalg.vector_norm(x, dtype=L.float64),
                    lambda L, x: L.linalg.vector_norm(x, dtype=L.complex128)],
    "aten_norm": [lambda L, x: L.ops.aten.norm.Scalar(x), lambda L, x: L.ops.aten.norm.ScalarOpt_dim(x, 1, [0]),
                  lambda L, x: L.ops.aten.norm.ScalarOpt_dtype(x, 2, dtype=L.float64)],
    "logsumexp": [lambda L, x: x.logsumexp(0), lambda L, x: L.logsumexp(x, (0, -1)),
                  lambda L, x: x.logsumexp(-1, keepdim=True)],
    "softmax": [lambda L, x: x.softmax(0), lambda L, x: L.softmax(x, -1),
                lambda L, x: x.softmax(-1, dtype=L.float64), lambda L, x: L.special.softmax(x, 0)],
    "log_softmax": [lambda L, x: x.log_softmax(0), lambda L, x: L.log_softmax(x, -1),
                    lambda L, x: x.log_softmax(-1, dtype=L.float32),
                    lambda L, x: L.special.log_softmax(x, 0)],
    "_softmax": [lambda L, x: L._softmax(x, 0, False), lambda L, x: L._log_softmax(x, -1, False),
                 lambda L, x: L._softmax(x, -1, True)],
    "cumsum": [lambda L, x: x.cumsum(0), lambda L, x: L.cumsum(x, -1),
               lambda L, x: x.cumsum(0, dtype=L.float64), lambda L, x: x.cumsum(0, dtype=L.int32)],
    "cumprod": [lambda L, x: x.cumprod(0), lambda L, x: L.cumprod(x, -1, dtype=L.float64)],
    "cummax": [lambda L, x: x.cummax(0), lambda L, x: L.cummax(x, -1)],
    "cummin": [lambda L, x: x.cummin(0), lambda L, x: L.cummin(x, -1)],
    "logcumsumexp": [lambda L, x: x.logcumsumexp(0), lambda L, x: L.logcumsumexp(x, -1)],
    "all": [lambda L, x: x.all(), lambda L, x: L.all(x, 0), lambda L, x: x.all(-1, keepdim=True),
            lambda L, x: L.all(x, dim=(0, -1)), lambda L, x: x.all(dim=())],
    "any": [lambda L, x: x.any(), lambda L, x: L.any(x, -1), lambda L, x: x.any(0, True),
            lambda L, x: L.any(x, dim=None), lambda L, x: x.any(dim=[0])],
    "count_nonzero": [lambda L, x: x.count_nonzero(), lambda L, x: L.count_nonzero(x, 0),
                      lambda L, x: L.count_nonzero(x, (0, -1)), lambda L, x: x.count_nonzero(dim=[])],
    "sort": [lambda L, x: x.sort(), lambda L, x: L.sort(x, 0), lambda L, x: x.sort(descending=True),
             lambda L, x: L.sort(x, stable=True, dim=0, descending=True), lambda L, x: L.msort(x)],
    "argsort": [lambda L, x: x.argsort(), lambda L, x: L.argsort(x, 0, True),
                lambda L, x: x.argsort(stable=True, descending=True), lambda L, x: L.argsort(x, stable=True)],
    "mode": [lambda L, x: x.mode(), lambda L, x: L.mode(x, 0), lambda L, x: x.mode(-1, True)],
    "median_full": [lambda L, x: x.median(), lambda L, x: L.nanmedian(x)],
}

# the reductions the meta and device suites ran (was tests/ops/test_reduction.py META)
REDUCTION_META = [lambda L, x: x.sum(), lambda L, x: x.sum(0, keepdim=True, dtype=L.float64), lambda L, x: x.mean(-1),
        lambda L, x: x.prod(0), lambda L, x: x.max(0), lambda L, x: x.max(), lambda L, x: x.amin((0, 1)),
        lambda L, x: x.aminmax(dim=1), lambda L, x: x.argmax(1, True), lambda L, x: x.var(0),
        lambda L, x: L.std_mean(x, 1), lambda L, x: L.linalg.vector_norm(x, 3, 1),
        lambda L, x: x.logsumexp(1), lambda L, x: x.softmax(0), lambda L, x: x.cumsum(1),
        lambda L, x: x.cummin(0), lambda L, x: x.all(1), lambda L, x: x.count_nonzero(),
        lambda L, x: x.topk(2), lambda L, x: x.sort(0), lambda L, x: x.argsort(), lambda L, x: x.kthvalue(2),
        lambda L, x: x.median(1), lambda L, x: x.mode(0), lambda L, x: x.nansum(), lambda L, x: x.msort(),
        lambda L, x: x.logcumsumexp(0), lambda L, x: L.max(x, x), lambda L, x: x.nanmedian(0)]

# ---- gradients of pointwise ops (was tests/autograd/test_pointwise_grad.py) ----------------------
# name -> (fn(lib, x), low, high)
POS = (0.3, 3.0)
SYM = (-2.0, 2.0)
UNIT = (-0.9, 0.9)
POINTWISE_GRAD = {
    "angle": (lambda L, x: x.angle(), *SYM),
    "abs": (lambda L, x: x.abs(), *SYM),
    "absolute": (lambda L, x: L.absolute(x), *SYM),
    "abs_": (lambda L, x: L.abs_(x * 1), *SYM),
    "absolute_": (lambda L, x: (x * 1).absolute_(), *SYM),
    "sign": (lambda L, x: L.sign(x), *SYM),
    "sgn": (lambda L, x: x.sgn(), *SYM),
    "neg": (lambda L, x: L.negative(x), *SYM),
    "negative_": (lambda L, x: L.negative_(x * 1), *SYM),
    "exp": (lambda L, x: L.exp(x), *SYM),
    "exp_": (lambda L, x: (x * 1).exp_(), *SYM),
    "exp2": (lambda L, x: L.exp2(x), *SYM),
    "expm1": (lambda L, x: L.expm1(x), *SYM),
    "log": (lambda L, x: L.log(x), *POS),
    "log_": (lambda L, x: (x * 1).log_(), *POS),
    "log2": (lambda L, x: L.log2(x), *POS),
    "log10": (lambda L, x: L.log10(x), *POS),
    "log1p": (lambda L, x: L.log1p(x), -0.5, 2.0),
    "sqrt": (lambda L, x: L.sqrt(x), *POS),
    "sqrt_": (lambda L, x: L.sqrt_(x * 1), *POS),
    "rsqrt": (lambda L, x: L.rsqrt(x), *POS),
    "square": (lambda L, x: L.square(x), *SYM),
    "square_": (lambda L, x: L.square_(x * 1), *SYM),
    "sin": (lambda L, x: L.sin(x), *SYM),
    "cos": (lambda L, x: L.cos(x), *SYM),
    "tan": (lambda L, x: L.tan(x), -1.2, 1.2),
    "asin": (lambda L, x: L.asin(x), *UNIT),
    "acos": (lambda L, x: L.acos(x), *UNIT),
    "atan": (lambda L, x: L.atan(x), *SYM),
    "arcsin": (lambda L, x: L.arcsin(x), *UNIT),
    "arccos": (lambda L, x: x.arccos(), *UNIT),
    "arctan": (lambda L, x: L.arctan(x), *SYM),
    "arctan_": (lambda L, x: (x * 1).arctan_(), *SYM),
    "sinh": (lambda L, x: L.sinh(x), *SYM),
    "cosh": (lambda L, x: L.cosh(x), *SYM),
    "tanh": (lambda L, x: L.tanh(x), *SYM),
    "tanh_": (lambda L, x: L.tanh_(x * 1), *SYM),
    "asinh": (lambda L, x: L.asinh(x), *SYM),
    "acosh": (lambda L, x: L.acosh(x), 1.2, 3.0),
    "atanh": (lambda L, x: L.atanh(x), *UNIT),
    "arcsinh": (lambda L, x: L.arcsinh(x), *SYM),
    "arccosh": (lambda L, x: L.arccosh(x), 1.2, 3.0),
    "arctanh": (lambda L, x: L.arctanh(x), *UNIT),
    "sigmoid": (lambda L, x: L.sigmoid(x), *SYM),
    "sigmoid_": (lambda L, x: (x * 1).sigmoid_(), *SYM),
    "logit": (lambda L, x: L.logit(x), 0.05, 0.95),
    "logit_eps": (lambda L, x: L.logit(x, 0.2), 0.05, 0.95),
    "logit_": (lambda L, x: L.logit_(x * 1, 0.1), 0.05, 0.95),
    "erf": (lambda L, x: L.erf(x), *SYM),
    "erfc": (lambda L, x: L.erfc(x), *SYM),
    "erfinv": (lambda L, x: L.erfinv(x), *UNIT),
    "erfinv_": (lambda L, x: (x * 1).erfinv_(), *UNIT),
    "reciprocal": (lambda L, x: L.reciprocal(x), *POS),
    "reciprocal_": (lambda L, x: L.reciprocal_(x * 1), *POS),
    "deg2rad": (lambda L, x: L.deg2rad(x), *SYM),
    "rad2deg": (lambda L, x: L.rad2deg(x), *SYM),
    "floor": (lambda L, x: L.floor(x), *SYM),
    "ceil": (lambda L, x: L.ceil(x), *SYM),
    "trunc": (lambda L, x: L.trunc(x), *SYM),
    "fix": (lambda L, x: L.fix(x), *SYM),
    "round": (lambda L, x: L.round(x), *SYM),
    "round_decimals": (lambda L, x: L.round(x, decimals=1), *SYM),
    "round_": (lambda L, x: L.round_(x * 1), *SYM),
    "frac": (lambda L, x: L.frac(x), *SYM),
    "frac_": (lambda L, x: L.frac_(x * 1), *SYM),
    "nan_to_num": (lambda L, x: L.nan_to_num(x), *SYM),
    "pow_2": (lambda L, x: x ** 2, *SYM),
    "pow_3": (lambda L, x: L.pow(x, 3), *SYM),
    "pow_0": (lambda L, x: L.pow(x, 0), *SYM),
    "pow_neg_half": (lambda L, x: x.pow(-1.5), *POS),
    "pow_half": (lambda L, x: x.pow(0.5), *POS),
    "pow_": (lambda L, x: (x * 1).pow_(2.5), *POS),
    "float_power_2": (lambda L, x: L.float_power(x, 2), *SYM),
    "float_power_half": (lambda L, x: x.float_power(0.5), *POS),
    "clamp": (lambda L, x: L.clamp(x, -0.5, 0.5), *SYM),
    "clamp_min_only": (lambda L, x: L.clamp(x, min=-0.5), *SYM),
    "clamp_max_only": (lambda L, x: x.clamp(max=0.5), *SYM),
    "clamp_": (lambda L, x: L.clamp_(x * 1, -0.5, 0.5), *SYM),
    "clip": (lambda L, x: L.clip(x, -1, 1), *SYM),
    "clip_": (lambda L, x: (x * 1).clip_(None, 1), *SYM),
    "clamp_min": (lambda L, x: L.clamp_min(x, 0.2), *SYM),
    "clamp_max": (lambda L, x: x.clamp_max(0.2), *SYM),
    "clamp_min_": (lambda L, x: (x * 1).clamp_min_(0.2), *SYM),
    "div_scalar": (lambda L, x: x / 2, *SYM),
    "rdiv_scalar": (lambda L, x: 2 / x, *POS),
    "div_trunc_scalar": (lambda L, x: L.div(x, 0.7, rounding_mode="trunc"), *SYM),
    "div_floor_": (lambda L, x: (x * 1).div_(0.7, rounding_mode="floor"), *SYM),
    "rsub_scalar": (lambda L, x: L.rsub(x, 2, alpha=3), *SYM),
    "rsub_op": (lambda L, x: 2 - x, *SYM),
    "remainder_scalar": (lambda L, x: x % 0.7, *SYM),
    "fmod_scalar": (lambda L, x: L.fmod(x, 0.7), *SYM),
    "copysign_scalar": (lambda L, x: L.copysign(x, -1.0), *SYM),
    "lerp_scalar_end": (lambda L, x: L.lerp(x, x * x, 0.3), *SYM),
    "subtract_": (lambda L, x: (x * 1).subtract_(x, alpha=0.5), *SYM),
    "multiply_": (lambda L, x: (x * 1).multiply_(x), *SYM),
    "true_divide_": (lambda L, x: (x * 1).true_divide_(x + 3), *POS),
}

# ---- activations (was tests/autograd/test_activation_grad.py) ------------------------------------
tnn = torch._C._nn


def nn(lib):
    return enn if lib is ember else tnn


def _inplace_saved_self_has_history():
    x = ember.ones(2, dtype=ember.float64, requires_grad=True)
    y = enn.silu_(x * 1)
    g, = ember.autograd.grad(y, x, ember.ones(2, dtype=ember.float64), create_graph=True)
    return g.requires_grad


# An in-place op that saves its input saves a clone of it; PyTorch records that clone in the graph
# (CloneBackward0), so double backward reaches the input's history. Until the autograd codegen's
# clone keeps history, second order through these is skipped.
SAVES_SELF_INPLACE = {"relu6_", "hardtanh_", "gelu_", "silu_", "mish_", "hardswish_", "threshold_",
                      "rrelu_", "hardsigmoid_"}
_INPLACE_HISTORY = _inplace_saved_self_has_history()


def second_order(name):
    return name not in SAVES_SELF_INPLACE or _INPLACE_HISTORY


# name -> fn(lib, x); x is a float tensor that requires grad
ACTIVATIONS = {
    "relu": lambda L, x: L.relu(x),
    "relu_": lambda L, x: L.relu_(x.clone()),
    "relu_method_": lambda L, x: x.clone().relu_(),
    "relu6": lambda L, x: nn(L).relu6(x * 2),
    "relu6_": lambda L, x: nn(L).relu6_(x * 2),
    "hardtanh": lambda L, x: nn(L).hardtanh(x, -0.5, 1.5),
    "hardtanh_": lambda L, x: nn(L).hardtanh_(x.clone(), -0.5, 1.5),
    "gelu": lambda L, x: nn(L).gelu(x),
    "gelu_tanh": lambda L, x: nn(L).gelu(x, approximate="tanh"),
    "gelu_": lambda L, x: nn(L).gelu_(x.clone(), approximate="tanh"),
    "silu": lambda L, x: nn(L).silu(x),
    "silu_": lambda L, x: nn(L).silu_(x.clone()),
    "mish": lambda L, x: nn(L).mish(x),
    "mish_": lambda L, x: nn(L).mish_(x.clone()),
    "softplus": lambda L, x: nn(L).softplus(x),
    "softplus_beta": lambda L, x: nn(L).softplus(x, 2, 1.5),
    "elu": lambda L, x: nn(L).elu(x),
    "elu_args": lambda L, x: nn(L).elu(x, 0.5, 2.0, 1.5),
    "elu_neg_alpha": lambda L, x: nn(L).elu(x, -0.7),
    "elu_": lambda L, x: nn(L).elu_(x.clone(), 0.7, 1.5, 0.5),
    "selu": lambda L, x: L.selu(x),
    "selu_": lambda L, x: L.selu_(x.clone()),
    "celu": lambda L, x: L.celu(x, 0.5),
    "celu_": lambda L, x: L.celu_(x.clone(), 2.0),
    "leaky_relu": lambda L, x: nn(L).leaky_relu(x, 0.2),
    "leaky_relu_neg": lambda L, x: nn(L).leaky_relu(x, -0.3),
    "leaky_relu_": lambda L, x: nn(L).leaky_relu_(x.clone(), 0.1),
    "hardswish": lambda L, x: nn(L).hardswish(x * 2),
    "hardswish_": lambda L, x: nn(L).hardswish_(x * 2),
    "softshrink": lambda L, x: nn(L).softshrink(x, 0.3),
    "hardshrink": lambda L, x: L.hardshrink(x, 0.3),
    "hardshrink_method": lambda L, x: x.hardshrink(),
    "log_sigmoid": lambda L, x: nn(L).log_sigmoid(x * 3),
    "threshold": lambda L, x: L.threshold(x, 0.1, 2.0),
    "threshold_": lambda L, x: L.threshold_(x.clone(), -0.2, 5.0),
    "rrelu": lambda L, x: L.rrelu(x, 0.1, 0.3),
    "rrelu_": lambda L, x: L.rrelu_(x.clone(), 0.2, 0.25),
    "glu": lambda L, x: nn(L).glu(x),
    "glu_dim0": lambda L, x: nn(L).glu(x, 0),
}
ACTIVATIONS_FIRST_ORDER = {
    # PyTorch: "derivative for aten::hardsigmoid_backward is not implemented"
    "hardsigmoid": lambda L, x: nn(L).hardsigmoid(x * 3),
    "hardsigmoid_": lambda L, x: nn(L).hardsigmoid_(x * 3),
}

# ---- linear algebra (was tests/autograd/test_linalg_grad.py) -------------------------------------
# ---- inputs ---------------------------------------------------------------------------------------
def _matrix(kind, shape, rng, cplx=False):
    """float64 (complex128) data of `shape` (batch..., n, n for the matrix kinds)."""
    if kind == "gen":
        return rng.uniform(-2, 2, shape)
    n = shape[-1]
    x = rng.uniform(-1, 1, shape)
    if cplx:
        x = x + 1j * rng.uniform(-1, 1, shape)
    xh = np.conj(np.swapaxes(x, -1, -2))
    if kind == "wellcond":  # invertible, not too close to singular
        return x + n * np.eye(n)
    if kind == "spd":
        return x @ xh + n * np.eye(n)
    if kind == "sym":  # symmetric (Hermitian), well separated eigenvalues
        return (x + xh) / 2 + np.diag(np.arange(n) * 2.0)
    if kind in ("triu", "tril"):  # a Cholesky-like factor: real positive diagonal
        t = np.triu(x, 1) if kind == "triu" else np.tril(x, -1)
        return t + np.diag(rng.uniform(1, 2, n)) + n * np.eye(n)
    if kind == "small":  # matrix_exp: moderate norm
        return x * 0.5
    raise ValueError(kind)


def make(kind, shape, dtype, rng, layout="contiguous"):
    if kind == "gen":
        return make_pair(shape, dtype, rng, layout, low=-2, high=2)
    base = _matrix(kind, shape, rng, dtype.startswith("complex")).astype(dtype)
    if layout == "transposed" and len(shape) >= 2:
        # the same matrix, stored transposed (symmetric kinds stay what they are)
        st = np.swapaxes(base, -1, -2).copy()
        e, t = pair_from(st, dtype)
        return e.transpose(-1, -2), t.transpose(-1, -2)
    return pair_from(base, dtype)


def _sq(L, x):  # a sign- (phase-) invariant function of singular / eigen vectors
    return x * x.conj() if x.dtype.is_complex else x * x


# name -> (fn(lib, *inputs), [(kind, shape)], second_order)
LINALG_CASES = {
    # products
    "mm": (lambda L, a, b: L.mm(a, b), [("gen", (3, 4)), ("gen", (4, 2))], True),
    "matmul_2d": (lambda L, a, b: a @ b, [("gen", (3, 4)), ("gen", (4, 2))], True),
    "matmul_dot": (lambda L, a, b: L.matmul(a, b), [("gen", (4,)), ("gen", (4,))], True),
    "matmul_mv": (lambda L, a, b: L.matmul(a, b), [("gen", (3, 4)), ("gen", (4,))], True),
    "matmul_vm": (lambda L, a, b: L.matmul(a, b), [("gen", (4,)), ("gen", (4, 3))], True),
    "matmul_batched": (lambda L, a, b: a @ b, [("gen", (2, 3, 4)), ("gen", (2, 4, 5))], True),
    "matmul_fold": (lambda L, a, b: a @ b, [("gen", (2, 3, 4)), ("gen", (4, 5))], True),
    "matmul_bcast": (lambda L, a, b: a @ b, [("gen", (2, 1, 3, 4)), ("gen", (3, 4, 2))], True),
    "matmul_v_batched": (lambda L, a, b: a @ b, [("gen", (4,)), ("gen", (2, 4, 3))], True),
    "matmul_batched_v": (lambda L, a, b: a @ b, [("gen", (2, 3, 4)), ("gen", (4,))], True),
    "matmul_2d_batched": (lambda L, a, b: a @ b, [("gen", (3, 4)), ("gen", (2, 4, 5))], True),
    "linalg_matmul": (lambda L, a, b: L.linalg.matmul(a, b), [("gen", (3, 4)), ("gen", (4, 2))],
                      True),
    "bmm": (lambda L, a, b: L.bmm(a, b), [("gen", (2, 3, 4)), ("gen", (2, 4, 2))], True),
    "addmm": (lambda L, s, a, b: L.addmm(s, a, b), [("gen", (3, 2)), ("gen", (3, 4)),
                                                     ("gen", (4, 2))], True),
    "addmm_scaled": (lambda L, s, a, b: L.addmm(s, a, b, beta=0.5, alpha=-2),
                     [("gen", (2,)), ("gen", (3, 4)), ("gen", (4, 2))], True),
    "addmm_beta0": (lambda L, s, a, b: L.addmm(s, a, b, beta=0),
                    [("gen", (3, 2)), ("gen", (3, 4)), ("gen", (4, 2))], True),
    "addmm_": (lambda L, s, a, b: (s * 1).addmm_(a, b, beta=2, alpha=0.5),
               [("gen", (3, 2)), ("gen", (3, 4)), ("gen", (4, 2))], True),
    "addmv": (lambda L, s, a, b: L.addmv(s, a, b, beta=1.5, alpha=2),
              [("gen", (3,)), ("gen", (3, 4)), ("gen", (4,))], True),
    "addmv_": (lambda L, s, a, b: (s * 1).addmv_(a, b),
               [("gen", (3,)), ("gen", (3, 4)), ("gen", (4,))], True),
    "addr": (lambda L, s, a, b: L.addr(s, a, b, beta=0.5, alpha=3),
             [("gen", (1, 4)), ("gen", (3,)), ("gen", (4,))], True),
    "addr_": (lambda L, s, a, b: (s * 1).addr_(a, b),
              [("gen", (3, 4)), ("gen", (3,)), ("gen", (4,))], True),
    "baddbmm": (lambda L, s, a, b: L.baddbmm(s, a, b, beta=0.5, alpha=2),
                [("gen", (3, 2)), ("gen", (2, 3, 4)), ("gen", (2, 4, 2))], True),
    "baddbmm_": (lambda L, s, a, b: (s * 1).baddbmm_(a, b),
                 [("gen", (2, 3, 2)), ("gen", (2, 3, 4)), ("gen", (2, 4, 2))], True),
    "addbmm": (lambda L, s, a, b: L.addbmm(s, a, b, beta=0.5, alpha=2),
               [("gen", (3, 2)), ("gen", (2, 3, 4)), ("gen", (2, 4, 2))], True),
    "addbmm_": (lambda L, s, a, b: (s * 1).addbmm_(a, b),
                [("gen", (3, 2)), ("gen", (2, 3, 4)), ("gen", (2, 4, 2))], True),
    "dot": (lambda L, a, b: L.dot(a, b), [("gen", (5,)), ("gen", (5,))], True),
    "vdot": (lambda L, a, b: L.vdot(a, b), [("gen", (5,)), ("gen", (5,))], True),
    "mv": (lambda L, a, b: L.mv(a, b), [("gen", (3, 4)), ("gen", (4,))], True),
    "outer": (lambda L, a, b: L.outer(a, b), [("gen", (3,)), ("gen", (4,))], True),
    "inner": (lambda L, a, b: L.inner(a, b), [("gen", (2, 4)), ("gen", (3, 4))], True),
    "inner_0d": (lambda L, a, b: L.inner(a, b), [("gen", ()), ("gen", (3, 4))], True),
    "einsum_mm": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [("gen", (3, 4)), ("gen", (4, 2))],
                  True),
    "einsum_batched": (lambda L, a, b: L.einsum("bij,bjk->bik", a, b),
                       [("gen", (2, 3, 4)), ("gen", (2, 4, 2))], True),
    "einsum_ellipsis": (lambda L, a, b: L.einsum("...ij,...jk", a, b),
                        [("gen", (2, 3, 4)), ("gen", (4, 2))], True),
    "einsum_diag": (lambda L, a: L.einsum("ii->i", a), [("gen", (3, 3))], True),
    "einsum_trace": (lambda L, a: L.einsum("ii", a), [("gen", (3, 3))], True),
    "einsum_outer": (lambda L, a, b: L.einsum("i,j->ij", a, b), [("gen", (3,)), ("gen", (4,))],
                     True),
    "einsum_three": (lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c),
                     [("gen", (2, 3)), ("gen", (3, 4)), ("gen", (4, 2))], True),
    "einsum_sum": (lambda L, a: L.einsum("ijk->j", a), [("gen", (2, 3, 4))], True),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, dims=([1, 2], [0, 1])),
                  [("gen", (2, 3, 4)), ("gen", (3, 4, 5))], True),
    "tensordot_int": (lambda L, a, b: L.tensordot(a, b, 1), [("gen", (2, 3)), ("gen", (3, 4))],
                      True),
    "kron": (lambda L, a, b: L.kron(a, b), [("gen", (2, 3)), ("gen", (3, 2))], True),
    "kron_ranks": (lambda L, a, b: L.kron(a, b), [("gen", (3,)), ("gen", (2, 2, 2))], True),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), [("gen", (2, 3, 4)), ("gen", (2, 3, 4))],
              True),
    "linalg_cross": (lambda L, a, b: L.linalg.cross(a, b), [("gen", (4, 3)), ("gen", (1, 3))],
                     True),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b), [("gen", (3, 4)), ("gen", (4,))], True),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                  [("gen", (4,)), ("gen", (4, 3)), ("gen", (3, 2))], True),
    "multi_dot4": (lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
                   [("gen", (3, 4)), ("gen", (4, 2)), ("gen", (2, 5)), ("gen", (5, 2))], True),
    "matrix_power3": (lambda L, a: L.matrix_power(a, 3), [("gen", (3, 3))], True),
    "matrix_power5": (lambda L, a: L.linalg.matrix_power(a, 5), [("gen", (2, 3, 3))], True),
    "matrix_power_neg": (lambda L, a: L.linalg.matrix_power(a, -2), [("wellcond", (3, 3))], True),
    "matrix_power0": (lambda L, a: L.linalg.matrix_power(a, 0), [("gen", (3, 3))], True),
    "matrix_power1": (lambda L, a: L.linalg.matrix_power(a, 1), [("gen", (3, 3))], True),
    # diagonals
    "diag_vec": (lambda L, a: L.diag(a, 1), [("gen", (3,))], True),
    "diag_mat": (lambda L, a: L.diag(a), [("gen", (3, 4))], True),
    "diag_mat_offset": (lambda L, a: L.diag(a, -1), [("gen", (4, 3))], True),
    "diag_mat_offset2": (lambda L, a: L.diag(a, 2), [("gen", (3, 5))], True),
    "diag_embed": (lambda L, a: L.diag_embed(a, 1, 0, 2), [("gen", (2, 3))], True),
    "diagflat": (lambda L, a: L.diagflat(a, -1), [("gen", (2, 2))], True),
    "trace": (lambda L, a: L.trace(a), [("gen", (3, 4))], True),
    # norms
    "matrix_norm_fro": (lambda L, a: L.linalg.matrix_norm(a), [("gen", (2, 3, 4))], True),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), [("gen", (3, 4))], True),
    "matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2, keepdim=True), [("gen", (2, 3, 4))],
                      True),
    "matrix_norm_nuc_keepdim": (lambda L, a: L.linalg.matrix_norm(a, "nuc", (0, 2), True),
                                [("gen", (3, 2, 4))], True),
    "matrix_norm_-2": (lambda L, a: L.linalg.matrix_norm(a, -2), [("gen", (3, 4))], True),
    "matrix_norm_1": (lambda L, a: L.linalg.matrix_norm(a, 1, dim=(0, 2)), [("gen", (3, 2, 4))],
                      True),
    "matrix_norm_inf": (lambda L, a: L.linalg.matrix_norm(a, float("inf"), keepdim=True),
                        [("gen", (3, 4))], True),
    "matrix_norm_dtype": (lambda L, a: L.linalg.matrix_norm(a, "nuc", dtype=L.float64),
                          [("gen", (3, 4))], True),
    "matrix_norm_2_dtype": (lambda L, a: L.linalg.matrix_norm(a, -2, dtype=L.float64),
                            [("gen", (3, 4))], True),
    "norm_dtype": (lambda L, a: L.linalg.norm(a, dtype=L.float64), [("gen", (3, 4))], True),
    "norm": (lambda L, a: L.linalg.norm(a), [("gen", (3, 4))], True),
    "norm_vec3": (lambda L, a: L.linalg.norm(a, 3, dim=1), [("gen", (3, 4))], True),
    "norm_mat_nuc": (lambda L, a: L.linalg.norm(a, "nuc"), [("gen", (3, 4))], True),
    "norm_mat_1": (lambda L, a: L.linalg.norm(a, 1), [("gen", (3, 4))], True),
    # determinants, inverses, solves
    "det": (lambda L, a: L.linalg.det(a), [("gen", (2, 3, 3))], True),
    "det_method": (lambda L, a: a.det(), [("gen", (3, 3))], True),
    "slogdet": (lambda L, a: L.linalg.slogdet(a), [("gen", (2, 3, 3))], True),
    "slogdet_logabs": (lambda L, a: L.slogdet(a)[1], [("gen", (3, 3))], True),
    "logdet": (lambda L, a: L.logdet(a), [("spd", (2, 3, 3))], True),
    "inv": (lambda L, a: L.linalg.inv(a), [("wellcond", (2, 3, 3))], True),
    "inverse": (lambda L, a: L.inverse(a), [("wellcond", (3, 3))], True),
    "inv_ex": (lambda L, a: L.linalg.inv_ex(a)[0], [("wellcond", (3, 3))], True),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), [("wellcond", (3, 3)), ("gen", (3, 2))], True),
    "solve_vec": (lambda L, a, b: L.linalg.solve(a, b), [("wellcond", (2, 3, 3)), ("gen", (3,))],
                  True),
    "solve_bvec": (lambda L, a, b: L.linalg.solve(a, b), [("wellcond", (2, 3, 3)),
                                                          ("gen", (2, 3))], True),
    "solve_right": (lambda L, a, b: L.linalg.solve(a, b, left=False),
                    [("wellcond", (3, 3)), ("gen", (2, 2, 3))], True),
    "solve_ex": (lambda L, a, b: L.linalg.solve_ex(a, b)[0], [("wellcond", (3, 3)),
                                                              ("gen", (3, 2))], True),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True),
                         [("triu", (3, 3)), ("gen", (3, 2))], True),
    "solve_triangular_right_unit": (
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        [("tril", (3, 3)), ("gen", (2, 3))], True),
    "pinv": (lambda L, a: L.linalg.pinv(a), [("gen", (3, 4))], True),
    "pinv_tall": (lambda L, a: L.linalg.pinv(a), [("gen", (2, 4, 3))], True),
    "pinverse": (lambda L, a: L.pinverse(a), [("gen", (4, 3))], True),
    "pinv_hermitian": (lambda L, a: L.linalg.pinv(a, hermitian=True), [("sym", (3, 3))], True),
    "cond": (lambda L, a: L.linalg.cond(a), [("wellcond", (2, 3, 3))], True),
    "cond_-2": (lambda L, a: L.linalg.cond(a, -2), [("wellcond", (3, 3))], True),
    "cond_nuc": (lambda L, a: L.linalg.cond(a, "nuc"), [("wellcond", (3, 3))], True),
    "tensorinv": (lambda L, a: L.linalg.tensorinv(a.reshape(2, 3, 6), ind=2),
                  [("wellcond", (6, 6))], True),
    "tensorsolve": (lambda L, a, b: L.linalg.tensorsolve(a.reshape(2, 3, 6), b),
                    [("wellcond", (6, 6)), ("gen", (2, 3))], True),
    "linalg_diagonal": (lambda L, a: L.linalg.diagonal(a, offset=1), [("gen", (2, 3, 4))], True),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a), [("small", (3, 3))], True),
    "matrix_exp_batched": (lambda L, a: L.matrix_exp(a), [("small", (2, 2, 2))], True),
    # decompositions
    "cholesky": (lambda L, a: L.linalg.cholesky(a), [("spd", (2, 3, 3))], True),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(a, upper=True), [("spd", (3, 3))], True),
    "cholesky_ex": (lambda L, a: L.linalg.cholesky_ex(a)[0], [("spd", (3, 3))], True),
    "cholesky_legacy": (lambda L, a: L.cholesky(a), [("spd", (3, 3))], True),
    "cholesky_solve": (lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(a)),
                       [("gen", (3, 2)), ("spd", (3, 3))], True),
    "cholesky_solve_upper": (lambda L, b, u: L.cholesky_solve(b, u, upper=True),
                             [("gen", (3, 2)), ("triu", (3, 3))], True),
    "cholesky_inverse": (lambda L, a: L.cholesky_inverse(a), [("tril", (3, 3))], True),
    "cholesky_inverse_upper": (lambda L, a: L.cholesky_inverse(a, upper=True), [("triu", (3, 3))],
                               True),
    "qr": (lambda L, a: L.linalg.qr(a), [("gen", (4, 3))], True),
    "qr_square": (lambda L, a: L.linalg.qr(a), [("wellcond", (2, 3, 3))], True),
    "qr_wide": (lambda L, a: L.linalg.qr(a), [("gen", (3, 5))], True),
    "qr_complete_wide": (lambda L, a: L.linalg.qr(a, "complete"), [("gen", (2, 4))], True),
    "qr_R_only": (lambda L, a: L.linalg.qr(a)[1], [("gen", (4, 3))], True),
    "qr_legacy": (lambda L, a: L.qr(a), [("gen", (4, 3))], True),
    "svd": (lambda L, a: (lambda r: (_sq(L, r[0]), r[1], _sq(L, r[2])))(
        L.linalg.svd(a, full_matrices=False)), [("gen", (4, 3))], True),
    "svd_wide": (lambda L, a: (lambda r: (_sq(L, r[0]), r[1], _sq(L, r[2])))(
        L.linalg.svd(a, full_matrices=False)), [("gen", (2, 3, 5))], True),
    "svd_full": (lambda L, a: (lambda r: (_sq(L, r[0][:, :3]), r[1]))(L.linalg.svd(a)),
                 [("gen", (3, 3))], True),
    "svd_S": (lambda L, a: L.linalg.svd(a)[1], [("gen", (4, 3))], True),
    "svd_usv": (lambda L, a: (lambda r: r[0] @ L.diag_embed(r[1]) @ r[2])(
        L.linalg.svd(a, full_matrices=False)), [("gen", (3, 4))], True),
    "svd_legacy": (lambda L, a: (lambda r: (_sq(L, r[0]), r[1], _sq(L, r[2])))(L.svd(a)),
                   [("gen", (4, 3))], True),
    "svd_legacy_no_uv": (lambda L, a: L.svd(a, compute_uv=False)[1], [("gen", (4, 3))], True),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), [("gen", (2, 3, 4))], True),
    "eigh": (lambda L, a: (lambda r: (r[0], _sq(L, r[1])))(L.linalg.eigh(a)), [("sym", (2, 3, 3))],
             True),
    "eigh_upper": (lambda L, a: (lambda r: (r[0], _sq(L, r[1])))(L.linalg.eigh(a, "U")),
                   [("sym", (3, 3))], True),
    "eigh_values": (lambda L, a: L.linalg.eigh(a)[0], [("sym", (3, 3))], True),
    "lu": (lambda L, a: L.linalg.lu(a)[1:], [("gen", (2, 3, 3))], True),
    "lu_wide": (lambda L, a: L.linalg.lu(a)[1:], [("gen", (3, 5))], True),
    "lu_tall": (lambda L, a: L.linalg.lu(a)[1:], [("gen", (5, 3))], True),
    "lu_L_only": (lambda L, a: L.linalg.lu(a)[1], [("gen", (3, 4))], True),
    "lu_U_only": (lambda L, a: L.linalg.lu(a)[2], [("gen", (4, 3))], True),
    "lu_factor": (lambda L, a: L.linalg.lu_factor(a)[0], [("gen", (2, 3, 3))], True),
    "lu_factor_wide": (lambda L, a: L.linalg.lu_factor(a)[0], [("gen", (3, 4))], True),
    "lu_factor_ex": (lambda L, a: L.linalg.lu_factor_ex(a)[0], [("gen", (4, 3))], True),
    "lu_solve": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
                 [("wellcond", (3, 3)), ("gen", (3, 2))], True),
    "lu_solve_adjoint": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b, adjoint=True),
                         [("wellcond", (2, 3, 3)), ("gen", (3, 2))], True),
    "lu_solve_right": (lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b, left=False),
                       [("wellcond", (3, 3)), ("gen", (2, 3))], True),
    "lu_solve_right_adjoint": (
        lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b, left=False, adjoint=True),
        [("wellcond", (3, 3)), ("gen", (2, 3))], True),
    "eig": (lambda L, a: (lambda r: (r[0], _sq(L, r[1])))(L.linalg.eig(a)), [("sym", (3, 3))],
            True),
    "eig_general": (lambda L, a: (lambda r: (r[0], _sq(L, r[1])))(L.linalg.eig(a)),
                    [("gen", (2, 3, 3))], True),
    "eigvals": (lambda L, a: L.linalg.eigvals(a), [("gen", (3, 3))], True),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(a), [("sym", (2, 3, 3))], True),
}


# ==== op_db ========================================================================================
def _pointwise_unary(name):
    lo, hi = (-1, 1) if name in UNIT_DOMAIN else (None, None)
    grad = POINTWISE_GRAD.get(name)
    return OpInfo(
        name, method=True, family="pointwise", sample_inputs_func=sample_inputs_unary, domain=(lo, hi),
        tols=POINTWISE_TOL, supports_autograd=grad is not None, supports_gradgrad=grad is not None,
        grad_domain=grad[1:] if grad else (-2.0, 2.0),
        # acosh's domain starts at 1; the device suite keeps inputs in (-0.9, 0.9)
        device_domain=(1.1, 2.0) if name in ("acosh", "arccosh") else (-0.9, 0.9),
        error_inputs=_POINTWISE_UNARY_ERRORS.get(name, ()))


_POINTWISE_UNARY_ERRORS = {
    "neg": (ErrorInput(SampleInput((T((2,), dtype="bool"),)), RuntimeError,
                       r"Negation, the `\-` operator, on a bool tensor is not supported"),),
    "deg2rad": (ErrorInput(SampleInput((T((2,), dtype="complex64"),)), RuntimeError,
                           r"deg2rad is not supported for complex tensors"),),
    "exp": (ErrorInput(SampleInput((T((2,)),), {"out": T((2,), dtype="int64")}), RuntimeError,
                       r"result type Float can't be cast to the desired output type Long"),),
}


def _binary(name, fn):
    # PyTorch rounds alpha * other to the half type in its scalar loop (not in its vector loop)
    grad = POINTWISE_GRAD.get(name)
    return OpInfo(
        name, op=fn, family="pointwise", sample_inputs_func=sample_inputs_binary, tols=POINTWISE_TOL,
        supports_autograd=name in _BINARY_GRAD, supports_gradgrad=name in _BINARY_GRAD,
        grad_domain=grad[1:] if grad else (0.5, 2.0), device_sample="broadcast", device_domain=(0.5, 2.0),
        error_inputs=_BINARY_ERRORS.get(name, ()))


# binary ops whose gradients the grad suite compares on these samples (both inputs float)
_BINARY_GRAD = {"add", "add_alpha", "sub", "sub_alpha", "subtract", "rsub", "mul", "multiply", "div",
                "divide", "true_divide", "atan2", "arctan2", "hypot", "minimum", "maximum", "fmin",
                "fmax", "lerp", "lerp_big", "lerp_tensor", "addcmul", "addcdiv", "pow"}

_BINARY_ERRORS = {
    "add": (ErrorInput(SampleInput((T((2, 3)), T((4,)))), RuntimeError,
                       r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton "
                       r"dimension 1"),),
    "sub": (ErrorInput(SampleInput((T((2,), dtype="bool"), T((2,), dtype="bool"))), RuntimeError,
                       r"Subtraction, the `\-` operator, with two bool tensors is not supported"),),
    "div_trunc": (ErrorInput(SampleInput((T((2,), dtype="complex64"), T((2,), dtype="complex64"))),
                             RuntimeError, r"div_trunc_cpu\" not implemented for 'ComplexFloat'|"
                             r"not implemented for 'ComplexFloat'"),),
    "minimum": (ErrorInput(SampleInput((T((2,), dtype="complex64"), T((2,), dtype="complex64"))),
                           RuntimeError, r"minimum not implemented for complex tensors\."),),
    "lerp": (ErrorInput(SampleInput((T((2,)), T((2,), dtype="float64"))), RuntimeError,
                        r"expected dtype float for `end` but got dtype double"),),
}


def _comparison(name):
    return OpInfo(name, method=True, family="comparison", sample_inputs_func=sample_inputs_binary,
                  device_sample="broadcast", device_domain=(-0.9, 0.9),
                  error_inputs=(ErrorInput(SampleInput((T((2, 3)), T((4,)))), RuntimeError,
                                           r"The size of tensor a \(3\) must match the size of tensor b "
                                           r"\(4\) at non-singleton dimension 1"),))


# reductions without a derivative (integer or boolean results, selections by value)
_REDUCE_NO_GRAD = {"argmax", "argmin", "all", "any", "count_nonzero", "argsort", "aminmax", "mode",
                   "median_full", "cummax", "cummin", "sort", "max", "min", "aten_norm", "norm",
                   "vector_norm", "_softmax"}


def _reduction(name, fns):
    return OpInfo(
        name, op=fns[0], variants=tuple(fns[1:]), family="reduction",
        sample_inputs_func=sample_inputs_reduction, ember_warnings="error",
        # PyTorch multiplies float16 in float16 in its vectorized order; ember rounds the exact product
        tols={"float16": (1e-3, 1e-2)} if name == "prod" else {},
        supports_autograd=name not in _REDUCE_NO_GRAD, supports_gradgrad=name not in _REDUCE_NO_GRAD,
        grad_samples_func=_reduction_grad_samples, device_domain=(-2.0, 2.0),
        error_inputs=_REDUCTION_ERRORS.get(name, ()))


def _reduction_grad_samples(op, dtype):
    lo, hi = -2.0, 2.0
    # distinct values: the gradient of a selection (max, median, sort) picks among ties in an
    # unspecified way; shapes with a dim to reduce over
    for shape, layout in (((3, 4), "contiguous"), ((3, 4), "transposed"), ((2, 3, 4), "strided")):
        yield SampleInput((T(shape, layout, lo, hi),), name=_layout_name(shape, layout))


_REDUCTION_ERRORS = {
    "sum": (ErrorInput(SampleInput((T((3, 4)),)), IndexError,
                       r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
                       fn=lambda L, x: L.sum(x, 2)),),
    "mean": (ErrorInput(SampleInput((T((3, 4), dtype="int64"),)), RuntimeError,
                        r"mean\(\): could not infer output dtype\. Input dtype must be either a floating "
                        r"point or complex dtype\. Got: Long", dtype="int64"),),
    "amax": (ErrorInput(SampleInput((T((0,)),)), RuntimeError,
                        r"amax\(\): Expected reduction dim to be specified for input\.numel\(\) == 0\."),),
    "softmax": (ErrorInput(SampleInput((T((3, 4)),)), IndexError,
                           r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 3\)",
                           fn=lambda L, x: L.softmax(x, 3)),),
}


def _activation(name, fn, gradgrad=True):
    return OpInfo(
        name, op=fn, family="activation", sample_inputs_func=sample_inputs_activation,
        dtypes=("float32", "float64"), domain=(-3.0, 3.0), supports_autograd=True,
        supports_gradgrad=gradgrad, grad_domain=(-3.0, 3.0),
        # the device suite's even last dim is for glu
        device_sample="ordinary", device_domain=(-2.0, 2.0))


FLOAT32_LINALG = ["mm", "matmul_2d", "matmul_dot", "matmul_mv", "matmul_batched", "matmul_bcast", "bmm",
                  "addmm", "addmv", "addr", "baddbmm", "addbmm", "dot", "mv", "outer", "einsum_three",
                  "tensordot", "kron", "cross", "trace", "diag_mat", "det", "inv", "solve", "cholesky",
                  "matrix_norm_fro", "matrix_norm_dtype", "matrix_norm_2_dtype", "norm_dtype"]
PRODUCTS = ("mm", "matmul", "linalg_matmul", "bmm", "addmm", "addmv", "addr", "baddbmm", "addbmm", "dot",
            "vdot", "mv", "outer", "inner", "einsum")


def _linalg(name, fn, specs, second):
    product = name.startswith(PRODUCTS) and all(kind == "gen" for kind, _ in specs)
    return OpInfo(
        "linalg." + name, op=fn, family="linalg", sample_inputs_func=_linalg_samples(specs),
        dtypes=("float64", "float32") if name in FLOAT32_LINALG else ("float64",),
        tols={"float32": (1e-4, 1e-4)}, ember_warnings="ignore", supports_autograd=True,
        grad_dtypes=("float64", "float32") if name in FLOAT32_LINALG else ("float64",),
        supports_gradgrad=second, grad_samples_func=_linalg_samples(specs),
        # decompositions of random matrices are checked by value; gradcheck takes the products
        gradcheck=product, supports_meta=product, device_sample="ordinary" if product else None)


# ---- nn: losses, normalization, channel shuffle, 3-d adaptive pooling, max unpooling --------------
# (ember/ops/native_functions/nn_norm_loss.yaml, nn_spatial.yaml; torch.nn.functional's wrappers). Targets,
# labels and indices are fixed arrays made in the call (in the input's dtype), so that only the inputs get
# gradients; each entry's variants run its other reductions.
_NN_SIGNS = np.array([[1.0, -1.0, -1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], [1.0, 1.0, -1.0, -1.0]])
_NN_LABELS = np.array([[1, 2, -1, 0], [3, -1, 0, 0], [0, 1, 2, 3]])


def _nn_const(L, x, a):
    """A fixed target in x's dtype (labels: int64) on x's device."""
    return L.tensor(a, dtype=x.dtype if a.dtype.kind == "f" else None, device=x.device)


def _nn_samples(*specs, transposed=True):
    """Samples: the shapes `specs` contiguous ("ordinary") and, for 2-d first inputs, the first one
    transposed."""
    def func(op, dtype):
        lo, hi = op.domain
        yield SampleInput(tuple(T(s, "contiguous", lo, hi) for s in specs), name="ordinary")
        if transposed and len(specs[0]) == 2:
            yield SampleInput((T(specs[0], "transposed", lo, hi),) + tuple(T(s, "contiguous", lo, hi)
                                                                          for s in specs[1:]), name="transposed")
    return func


def _nn_loss(name, fn, specs, gradgrad=True, domain=(-2.0, 2.0), reductions=("mean", "none", "sum"),
             meta=True):
    """An nn.functional loss: fn(F, L, *inputs, reduction=...)."""
    calls = [lambda L, *xs, r=r: fn(L.nn.functional, L, *xs, reduction=r) for r in reductions]
    return OpInfo(
        "nn.functional." + name, op=calls[0], variants=tuple(calls[1:]), family="nn",
        sample_inputs_func=_nn_samples(*specs), dtypes=("float32", "float64"), domain=domain,
        supports_autograd=True, supports_gradgrad=gradgrad, grad_domain=domain, supports_meta=meta,
        device_sample="ordinary" if meta else None, device_domain=domain)


def _nn_fn(name, fn, specs, gradgrad=True, domain=(-2.0, 2.0), transposed=True, variants=()):
    return OpInfo(
        "nn.functional." + name, op=lambda L, *xs: fn(L.nn.functional, L, *xs), variants=variants, family="nn",
        sample_inputs_func=_nn_samples(*specs, transposed=transposed), dtypes=("float32", "float64"),
        domain=domain, supports_autograd=True, supports_gradgrad=gradgrad, grad_domain=domain,
        device_sample="ordinary", device_domain=domain)


def _nn_unpool(nd):
    def fn(F, L, x):
        pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
        unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[nd - 1]
        y, i = pool(x, 2, return_indices=True)
        return unpool(y, i, 2)
    return fn


NN_OPS = [
    _nn_loss("margin_ranking_loss", lambda F, L, a, b, reduction: F.margin_ranking_loss(
        a, b, _nn_const(L, a, _NN_SIGNS), margin=0.3, reduction=reduction), [(3, 4), (3, 4)]),
    _nn_loss("hinge_embedding_loss", lambda F, L, a, reduction: F.hinge_embedding_loss(
        a, _nn_const(L, a, _NN_SIGNS), margin=0.5, reduction=reduction), [(3, 4)]),
    _nn_loss("cosine_embedding_loss", lambda F, L, a, b, reduction: F.cosine_embedding_loss(
        a, b, _nn_const(L, a, _NN_SIGNS[:, 0]), margin=0.1, reduction=reduction), [(3, 4), (3, 4)]),
    _nn_loss("poisson_nll_loss", lambda F, L, a, b, reduction: F.poisson_nll_loss(
        a, b, full=True, reduction=reduction), [(3, 4), (3, 4)], domain=(0.5, 2.0)),
    _nn_loss("poisson_nll_loss_no_log", lambda F, L, a, b, reduction: F.poisson_nll_loss(
        a, b, log_input=False, reduction=reduction), [(3, 4), (3, 4)], domain=(0.5, 2.0)),
    _nn_loss("triplet_margin_loss", lambda F, L, a, p, n, reduction: F.triplet_margin_loss(
        a, p, n, swap=True, reduction=reduction), [(3, 4), (3, 4), (3, 4)]),
    _nn_loss("soft_margin_loss", lambda F, L, a, reduction: F.soft_margin_loss(
        a, _nn_const(L, a, _NN_SIGNS), reduction=reduction), [(3, 4)]),
    # PyTorch has no formula for multi_margin_loss_backward / multilabel_margin_loss_backward
    _nn_loss("multi_margin_loss", lambda F, L, a, reduction: F.multi_margin_loss(
        a, _nn_const(L, a, np.array([1, 0, 3])), p=2, margin=0.7, weight=_nn_const(L, a, np.array([1.0, 2.0, 0.5, 1.5])),
        reduction=reduction), [(3, 4)], gradgrad=False),
    _nn_loss("multilabel_margin_loss", lambda F, L, a, reduction: F.multilabel_margin_loss(
        a, _nn_const(L, a, _NN_LABELS), reduction=reduction), [(3, 4)], gradgrad=False),
    _nn_loss("multilabel_soft_margin_loss", lambda F, L, a, reduction: F.multilabel_soft_margin_loss(
        a, _nn_const(L, a, (_NN_SIGNS + 1) / 2), reduction=reduction), [(3, 4)]),
    _nn_loss("gaussian_nll_loss", lambda F, L, a, b, v, reduction: F.gaussian_nll_loss(
        a, b, v, full=True, reduction=reduction), [(3, 4), (3, 4), (3, 4)], domain=(0.5, 2.0),
        meta=False),  # it reads var's values (`if torch.any(var < 0)`): torch raises on meta too
    _nn_loss("triplet_margin_with_distance_loss", lambda F, L, a, p, n, reduction:
             F.triplet_margin_with_distance_loss(a, p, n, swap=True, reduction=reduction),
             [(3, 4), (3, 4), (3, 4)]),
    _nn_fn("instance_norm", lambda F, L, x, w, b: F.instance_norm(x, weight=w, bias=b),
           [(2, 4, 6), (4,), (4,)], transposed=False),
    _nn_fn("local_response_norm", lambda F, L, x: F.local_response_norm(x, 3), [(2, 4, 6)], transposed=False),
    _nn_fn("channel_shuffle", lambda F, L, x: F.channel_shuffle(x, 2), [(2, 4, 6)], transposed=False),
    _nn_fn("adaptive_avg_pool3d", lambda F, L, x: F.adaptive_avg_pool3d(x, (2, 3, 4)), [(2, 3, 5, 4, 6)],
           transposed=False),
    _nn_fn("adaptive_max_pool3d", lambda F, L, x: F.adaptive_max_pool3d(x, (2, 3, 4)), [(2, 3, 5, 4, 6)],
           transposed=False, variants=(lambda L, x: L.nn.functional.adaptive_max_pool3d(x, (2, 3, 4), True),)),
    _nn_fn("max_unpool1d", _nn_unpool(1), [(2, 3, 8)], transposed=False),
    _nn_fn("max_unpool2d", _nn_unpool(2), [(2, 3, 4, 6)], transposed=False),
    _nn_fn("max_unpool3d", _nn_unpool(3), [(1, 2, 4, 4, 6)], transposed=False),
    _nn_fn("lp_pool3d", lambda F, L, x: F.lp_pool3d(x, 2, 2), [(1, 2, 4, 4, 6)], domain=(0.5, 2.0),
           transposed=False),
]


def _build():
    db = [_pointwise_unary(n) for n in POINTWISE_UNARY]
    db += [_binary(n, f) for n, f in POINTWISE_BINARY.items()]
    db += [_comparison(n) for n in COMPARISONS]
    db += [_reduction(n, fns) for n, fns in REDUCE.items()]
    db += [_activation(n, f, second_order(n)) for n, f in ACTIVATIONS.items()]
    db += [_activation(n, f, False) for n, f in ACTIVATIONS_FIRST_ORDER.items()]
    db += [_linalg(n, *case) for n, case in LINALG_CASES.items()]
    db += NN_OPS
    names = [op.name for op in db]
    assert len(names) == len(set(names)), "op_db names must be unique"
    return db


op_db = _build()
OPS = {op.name: op for op in op_db}


def ops(*families, where=None):
    """op_db entries of the given families (all where none), filtered by `where(op)`."""
    return [op for op in op_db if (not families or op.family in families) and (where is None or where(op))]


def op_ids(entries):
    return [op.name for op in entries]


__all__ = ["OpInfo", "SampleInput", "ErrorInput", "T", "Dtype", "index", "materialize", "op_db", "OPS",
           "ops", "op_ids"]
