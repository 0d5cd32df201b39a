"""Gradients of the pointwise family against torch (first and second order), node names, the
special points where PyTorch picks a subgradient (0 ** 0, clamp boundaries, ties of maximum, NaN in
fmax, ...), gradcheck, and the errors PyTorch raises in backward."""
import numpy as np
import pytest
import torch
from autograd_harness import compare_grads
from harness import check, make_pair, pair_from, same_error

from opdb import POINTWISE_GRAD as UNARY
from opdb import POS, SYM

import ember


def _sum_differentiable():
    return ember.ones(2, requires_grad=True).sum().requires_grad


# second-order gradients of broadcast inputs flow through sum (the reduction family)
needs_sum_grad = pytest.mark.skipif(not _sum_differentiable(), reason="sum has no derivative yet")


def scalar_pair(v, dtype):
    return ember.tensor(v, dtype=getattr(ember, dtype)), torch.tensor(v, dtype=getattr(torch, dtype))




def _unary(name):
    fn, lo, hi = UNARY[name]
    return fn, lo, hi


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_grads(name, rng):
    fn, lo, hi = _unary(name)
    for dtype in ("float64", "float32"):
        for shape, layout in [((3, 4), "contiguous"), ((3, 4), "transposed"), ((0, 3), "contiguous")]:
            e, t = make_pair(shape, dtype, rng, layout, low=lo, high=hi)
            compare_grads(fn, [e], [t])
        e, t = scalar_pair(float(rng.uniform(lo, hi)), dtype)
        compare_grads(fn, [e], [t])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_node_names(name):
    fn, lo, hi = _unary(name)
    names = []
    for L in (ember, torch):
        x = L.tensor(np.linspace(lo, hi, 6).reshape(2, 3), dtype=L.float64, requires_grad=True)
        names.append(fn(L, x).grad_fn.name())
    if name == "rdiv_scalar":  # PyTorch computes 2 / x as x.reciprocal() * 2
        assert names == ["DivBackward0", "MulBackward0"]
    elif name in ("rsub_scalar", "rsub_op", "remainder_scalar", "fmod_scalar", "copysign_scalar"):
        # PyTorch binds a Python number to the op's Scalar overload (RsubBackward1, ...); ember
        # declares only the Tensor overload, so the node is the Tensor overload's
        assert names[0][:-1] == names[1][:-1]
    else:
        assert names[0] == names[1]


# ---- binary / ternary -------------------------------------------------------------------------------
# name -> (fn(lib, *inputs), number of tensor inputs, low, high)
BINARY = {
    "subtract": (lambda L, a, b: L.subtract(a, b, alpha=2), 2, *SYM),
    "rsub": (lambda L, a, b: L.rsub(a, b, alpha=1.5), 2, *SYM),
    "multiply": (lambda L, a, b: L.multiply(a, b), 2, *SYM),
    "div": (lambda L, a, b: a / b, 2, *POS),
    "divide": (lambda L, a, b: L.divide(a, b), 2, *POS),
    "true_divide": (lambda L, a, b: L.true_divide(a, b), 2, *POS),
    "div_none": (lambda L, a, b: L.div(a, b, rounding_mode=None), 2, *POS),
    "div_trunc": (lambda L, a, b: L.div(a, b, rounding_mode="trunc"), 2, *POS),
    "divide_floor": (lambda L, a, b: L.divide(a, b, rounding_mode="floor"), 2, *POS),
    "remainder": (lambda L, a, b: L.remainder(a, b), 2, *POS),
    "fmod": (lambda L, a, b: L.fmod(a, b), 2, *POS),
    "pow": (lambda L, a, b: L.pow(a, b), 2, *POS),
    "pow_op": (lambda L, a, b: a ** b, 2, *POS),
    "float_power": (lambda L, a, b: L.float_power(a, b), 2, *POS),
    "atan2": (lambda L, a, b: L.atan2(a, b), 2, *SYM),
    "arctan2": (lambda L, a, b: L.arctan2(a, b), 2, *SYM),
    "hypot": (lambda L, a, b: L.hypot(a, b), 2, *SYM),
    "copysign": (lambda L, a, b: L.copysign(a, b), 2, *SYM),
    "minimum": (lambda L, a, b: L.minimum(a, b), 2, *SYM),
    "maximum": (lambda L, a, b: L.maximum(a, b), 2, *SYM),
    "fmin": (lambda L, a, b: L.fmin(a, b), 2, *SYM),
    "fmax": (lambda L, a, b: L.fmax(a, b), 2, *SYM),
    "clamp_min_t": (lambda L, a, b: L.clamp_min(a, b), 2, *SYM),
    "clamp_max_t": (lambda L, a, b: a.clamp_max(b), 2, *SYM),
    "clamp_t_min": (lambda L, a, b: L.clamp(a, min=b), 2, *SYM),
    "clamp_t_max": (lambda L, a, b: L.clamp(a, max=b), 2, *SYM),
    "clip_t": (lambda L, a, b: L.clip(a, b, b + 1), 2, *SYM),
    "clamp_t": (lambda L, a, b, c: L.clamp(a, b, c), 3, *SYM),
    "lerp": (lambda L, a, b: L.lerp(a, b, 0.3), 2, *SYM),
    "lerp_t": (lambda L, a, b, c: L.lerp(a, b, c), 3, *SYM),
    "addcmul": (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), 3, *SYM),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c, value=-2), 3, *POS),
    "addcmul_": (lambda L, a, b, c: (a * 1).addcmul_(b, c), 3, *SYM),
    "addcdiv_": (lambda L, a, b, c: (a * 1).addcdiv_(b, c, value=0.5), 3, *POS),
    "div_": (lambda L, a, b: (a * 1).div_(b), 2, *POS),
    "pow_t_": (lambda L, a, b: (a * 1).pow_(b), 2, *POS),
    "atan2_": (lambda L, a, b: (a * 1).atan2_(b), 2, *SYM),
    "hypot_": (lambda L, a, b: (a * 1).hypot_(b), 2, *SYM),
    "lerp_t_": (lambda L, a, b, c: (a * 1).lerp_(b, c), 3, *SYM),
    "clamp_t_": (lambda L, a, b, c: (a * 1).clamp_(b, c), 3, *SYM),
    "copysign_": (lambda L, a, b: (a * 1).copysign_(b), 2, *SYM),
    "remainder_": (lambda L, a, b: (a * 1).remainder_(b), 2, *POS),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_grads(name, rng):
    fn, n, lo, hi = BINARY[name]
    for dtype in ("float64", "float32"):
        for layouts in [("contiguous",) * n, ("transposed", "contiguous", "transposed")[:n]]:
            pairs = [make_pair((3, 4), dtype, rng, lay, low=lo, high=hi) for lay in layouts]
            compare_grads(fn, [p[0] for p in pairs], [p[1] for p in pairs])
        pairs = [scalar_pair(float(rng.uniform(lo, hi)), dtype) for _ in range(n)]
        compare_grads(fn, [p[0] for p in pairs], [p[1] for p in pairs])


def _broadcast_inputs(name, rng, dtype="float64"):
    fn, n, lo, hi = BINARY[name]
    if name.endswith("_"):  # an in-place op keeps self's shape
        shapes = [(3, 4), (3, 1), (4,)][:n]
    elif name.startswith(("clamp_t", "clip_t")):  # PyTorch's own clamp backward fails otherwise
        shapes = [(2, 3, 4), (3, 1), (4,)][:n]
    else:
        shapes = [(2, 1, 4), (3, 1), (4,)][:n]
    pairs = [make_pair(s, dtype, rng, low=lo, high=hi) for s in shapes]
    return fn, [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_first_order(name, rng):
    fn, e, t = _broadcast_inputs(name, rng, "float32")
    compare_grads(fn, e, t, second_order=False)


@needs_sum_grad
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_second_order(name, rng):
    fn, e, t = _broadcast_inputs(name, rng)
    compare_grads(fn, e, t)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_node_names(name, rng):
    fn, n, lo, hi = BINARY[name]
    names = []
    for L in (ember, torch):
        xs = [L.tensor(np.linspace(lo, hi, 6).reshape(2, 3) + 0.1 * i, dtype=L.float64, requires_grad=True)
              for i in range(n)]
        names.append(fn(L, *xs).grad_fn.name())
    assert names[0] == names[1]


def test_one_input_requires_grad(rng):
    # the other operand does not require grad (or is an integer tensor)
    e, t = make_pair((3, 4), "float64", rng, low=0.5, high=2)
    ei, ti = make_pair((3, 4), "int64", rng, low=1, high=4)
    for fn in [lambda L, a: a / L.tensor(ti.numpy() if L is torch else ei.numpy()),
               lambda L, a: L.pow(a, L.tensor([2, 3, 1, 0])),
               lambda L, a: L.pow(L.tensor([2, 3, 1, 0]), a[0]),
               lambda L, a: L.atan2(L.ones(4, dtype=L.float64), a),
               lambda L, a: L.lerp(L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64), a[0]),
               lambda L, a: L.addcdiv(L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64), a[0]),
               lambda L, a: L.clamp(L.zeros(3, 4, dtype=L.float64), a - 1.5, None),
               lambda L, a: L.maximum(a, L.tensor(1.0, dtype=L.float64))]:
        compare_grads(fn, [e], [t])


# ---- special points -----------------------------------------------------------------------------------
def _pair(v, dtype="float64"):
    return pair_from(np.array(v, dtype=dtype), dtype)


def test_pow_special_points():
    base = [0.0, 0.0, 0.0, -2.0, -2.0, 1.5, 0.0, -1.5, 2.0]
    expo = [0.0, 2.0, -1.0, 2.0, 3.0, 0.0, 0.5, 0.5, -2.0]
    eb, tb = _pair(base)
    ee, te = _pair(expo)
    compare_grads(lambda L, a, b: L.pow(a, b), [eb, ee], [tb, te])
    compare_grads(lambda L, a, b: L.float_power(a, b), [eb, ee], [tb, te])
    for s in (0.0, 2.0, 0.5, 1.0):
        compare_grads(lambda L, a, s=s: a ** s, [eb], [tb])
        compare_grads(lambda L, a, s=s: a.float_power(s), [eb], [tb])
    for s in (0, 0.0, 2, 2.5, -2.0, 1):
        compare_grads(lambda L, b, s=s: L.pow(s, b), [ee], [te])
        compare_grads(lambda L, b, s=s: s ** b, [ee], [te])
        compare_grads(lambda L, b, s=s: L.float_power(s, b), [ee], [te])


def test_pow_float32_with_double_exponent(rng):
    e, t = make_pair((3, 4), "float32", rng, low=0.5, high=2)
    ee, te = make_pair((4,), "float64", rng, low=-2, high=2)
    compare_grads(lambda L, a, b: L.pow(a, b), [e, ee], [t, te], second_order=False)
    compare_grads(lambda L, a, b: L.float_power(a, b), [e, ee], [t, te], second_order=False)
    compare_grads(lambda L, a: L.float_power(a, 3), [e], [t])
    compare_grads(lambda L, a: L.float_power(2, a), [e], [t])


def test_float_power_inplace():
    eb, tb = _pair([0.5, 1.5, 2.0, 0.0])
    ee, te = _pair([2.0, -0.5, 1.0, 3.0])
    compare_grads(lambda L, a: (a * 1).float_power_(2.5), [eb], [tb])
    compare_grads(lambda L, a, b: (a * 1).float_power_(b), [eb, ee], [tb, te])
    for L in (ember, torch):
        x = L.tensor([0.5, 1.5], dtype=L.float64, requires_grad=True)
        assert (x * 1).float_power_(2).grad_fn.name() == "PowBackward0"
        assert (x * 1).float_power_(x * 2).grad_fn.name() == "PowBackward1"


def test_clamp_boundaries():
    v = [-2.0, -0.5, -0.25, 0.0, 0.5, 1.0, float("nan")]
    e, t = _pair(v)
    for fn in [lambda L, x: L.clamp(x, -0.5, 0.5), lambda L, x: L.clamp(x, min=0.0),
               lambda L, x: L.clamp(x, max=0.5), lambda L, x: L.clamp_min(x, -0.5),
               lambda L, x: L.clamp_max(x, 0.5), lambda L, x: L.clamp(x, 0.5, -0.5),
               lambda L, x: L.clip(x, -0.25, 1.0)]:
        compare_grads(fn, [e], [t])
    # tensor bounds: ties, min > max, NaN
    lo = [-1.0, -0.5, 0.0, 0.0, 1.0, 2.0, 0.0]
    hi = [1.0, 1.0, -1.0, 0.0, 0.5, 1.0, 1.0]
    el, tl = _pair(lo)
    eh, th = _pair(hi)
    compare_grads(lambda L, x, a, b: L.clamp(x, a, b), [e, el, eh], [t, tl, th])
    compare_grads(lambda L, x, a: L.clamp(x, a), [e, el], [t, tl])
    compare_grads(lambda L, x, b: L.clamp(x, None, b), [e, eh], [t, th])
    compare_grads(lambda L, x, a: L.clamp_min(x, a), [e, el], [t, tl])
    compare_grads(lambda L, x, b: L.clamp_max(x, b), [e, eh], [t, th])


def test_min_max_ties_and_nan():
    a = [1.0, 2.0, 3.0, float("nan"), 0.0, float("nan"), -1.0]
    b = [1.0, 0.0, 4.0, 1.0, float("nan"), float("nan"), -1.0]
    ea, ta = _pair(a)
    eb, tb = _pair(b)
    for op in ("maximum", "minimum", "fmax", "fmin"):
        compare_grads(lambda L, x, y, op=op: getattr(L, op)(x, y), [ea, eb], [ta, tb])
        compare_grads(lambda L, x, op=op: getattr(L, op)(x, x), [ea], [ta])


def test_div_rounding_modes_zero_grad():
    ea, ta = _pair([1.5, -2.5, 3.0, 0.0])
    eb, tb = _pair([0.5, 2.0, -1.5, 1.0])
    for mode in ("trunc", "floor"):
        compare_grads(lambda L, x, y, mode=mode: L.div(x, y, rounding_mode=mode), [ea, eb], [ta, tb])
        compare_grads(lambda L, x, mode=mode: L.div(x, 2, rounding_mode=mode), [ea], [ta])
        compare_grads(lambda L, y, mode=mode: L.div(3, y, rounding_mode=mode), [eb], [tb])


def test_special_values():
    v = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-300]
    e, t = _pair(v)
    fns = [lambda L, x: L.nan_to_num(x), lambda L, x: L.nan_to_num(x, 1.0, 2.0, -2.0),
           lambda L, x: L.abs(x), lambda L, x: L.sgn(x), lambda L, x: L.copysign(x, -1.0),
           lambda L, x: L.sqrt(x), lambda L, x: L.logit(x), lambda L, x: L.logit(x, 0.25),
           lambda L, x: L.copysign(x, x * -1), lambda L, x: L.reciprocal(x), lambda L, x: L.exp(x),
           lambda L, x: L.frac(x), lambda L, x: L.erfinv(x), lambda L, x: L.log(x)]
    for fn in fns:
        compare_grads(fn, [e], [t])
    # copysign: the sign's gradient is zero; where self == 0 the ratio is zero
    es, ts = _pair([-0.0, 0.0, -2.0, 3.0, -0.0, 1.0, 1.0, 2.0])
    compare_grads(lambda L, x, y: L.copysign(x, y), [e, es], [t, ts])


def test_logit_outside_unit_interval():
    e, t = _pair([-0.5, 0.0, 0.1, 0.5, 0.9, 1.0, 1.5])
    for eps in (None, 0.1, 0.0, 0.6):
        compare_grads(lambda L, x, eps=eps: L.logit(x, eps), [e], [t])


def test_reversed_scalar_operators():
    e, t = _pair([0.5, 1.5, -2.0, 3.0])
    for fn in [lambda L, x: 2 - x, lambda L, x: 2 / x, lambda L, x: 2 ** x, lambda L, x: 0 ** x,
               lambda L, x: (-2) ** x, lambda L, x: 1.5 - 2 * x]:
        compare_grads(fn, [e], [t])


# ---- complex ------------------------------------------------------------------------------------------
CPLX_UNARY = {
    "abs": lambda L, x: x.abs(), "sgn": lambda L, x: x.sgn(), "exp": lambda L, x: x.exp(),
    "log": lambda L, x: x.log(), "sqrt": lambda L, x: x.sqrt(), "sin": lambda L, x: x.sin(),
    "cos": lambda L, x: x.cos(), "tan": lambda L, x: x.tan(), "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(), "reciprocal": lambda L, x: x.reciprocal(),
    "rsqrt": lambda L, x: x.rsqrt(), "asin": lambda L, x: x.asin(), "acos": lambda L, x: x.acos(),
    "atan": lambda L, x: x.atan(), "asinh": lambda L, x: x.asinh(), "acosh": lambda L, x: x.acosh(),
    "atanh": lambda L, x: x.atanh(), "sinh": lambda L, x: x.sinh(), "cosh": lambda L, x: x.cosh(),
    "log2": lambda L, x: x.log2(), "log10": lambda L, x: x.log10(), "log1p": lambda L, x: x.log1p(),
    "expm1": lambda L, x: x.expm1(), "exp2": lambda L, x: x.exp2(), "square": lambda L, x: x.square(),
    "pow_scalar": lambda L, x: x ** 2.5, "pow_complex_scalar": lambda L, x: x ** (1 + 1j),
    "pow_self": lambda L, x: x ** x, "scalar_pow": lambda L, x: 2 ** x,
    "float_power": lambda L, x: x.float_power(2), "neg": lambda L, x: L.negative(x),
    "div_scalar": lambda L, x: x / (1 - 2j), "rsub": lambda L, x: L.rsub(x, 1, alpha=2j),
    "lerp_complex_weight": lambda L, x: L.lerp(x, x.square(), 0.5 + 0.5j),
}


# Double backward of a complex formula needs a differentiable conj (no conj operator in ember yet)
CPLX_SECOND = hasattr(ember.Tensor, "conj")


@pytest.mark.parametrize("name", sorted(CPLX_UNARY))
def test_complex_unary(name, rng):
    e, t = make_pair((2, 3), "complex128", rng, low=-1.5, high=1.5)
    compare_grads(CPLX_UNARY[name], [e], [t], second_order=CPLX_SECOND)


def test_complex_binary(rng):
    pairs = [make_pair((2, 3), "complex128", rng, low=0.2, high=1.5) for _ in range(3)]
    e, t = [p[0] for p in pairs], [p[1] for p in pairs]
    for fn in [lambda L, a, b: a / b, lambda L, a, b: L.pow(a, b), lambda L, a, b: L.multiply(a, b),
               lambda L, a, b: L.rsub(a, b), lambda L, a, b: L.subtract(a, b),
               lambda L, a, b: L.lerp(a, b, 0.25), lambda L, a, b: L.float_power(a, b)]:
        compare_grads(fn, e[:2], t[:2], second_order=CPLX_SECOND)
    for fn in [lambda L, a, b, c: L.addcmul(a, b, c, value=2), lambda L, a, b, c: L.addcdiv(a, b, c),
               lambda L, a, b, c: L.lerp(a, b, c)]:
        compare_grads(fn, e, t, second_order=CPLX_SECOND)


def test_real_complex_mix(rng):
    er, tr = make_pair((2, 3), "float64", rng, low=0.2, high=1.5)
    ec, tc = make_pair((2, 3), "complex128", rng, low=0.2, high=1.5)
    for fn in [lambda L, a, b: a / b, lambda L, a, b: b / a, lambda L, a, b: L.pow(a, b),
               lambda L, a, b: L.pow(b, a), lambda L, a, b: L.float_power(a, b),
               lambda L, a, b: L.rsub(a, b), lambda L, a, b: L.addcmul(a, a, b),
               lambda L, a, b: L.addcdiv(b, a, a), lambda L, a, b: L.subtract(a, b)]:
        compare_grads(fn, [er, ec], [tr, tc], second_order=CPLX_SECOND)


# ---- node names of aliases, in-place ops, double backward ---------------------------------------------
def test_inplace_second_order(rng):
    e, t = make_pair((3, 4), "float64", rng, low=0.3, high=2)
    # (an op that saves its result must not be followed by another in-place op: PyTorch then
    # raises the version-counter error, as ember does)
    for fn in [lambda L, x: (x * 1).sin_().exp_(), lambda L, x: (x * 1).pow_(2).reciprocal_(),
               lambda L, x: (x * 1).sin_().tanh_(), lambda L, x: (x * 1).div_(x * 2).mul_(x),
               lambda L, x: (x * 1).clamp_(0.5, 1.5).log_(), lambda L, x: (x * 1).atan2_(x * 2),
               lambda L, x: (x * 1).logit_(0.1).sigmoid_()]:
        compare_grads(fn, [e], [t])


def test_saved_values():
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    y = x.pow(2.5)
    assert y.grad_fn._saved_exponent == 2.5
    assert y.grad_fn._saved_self is not None
    y = ember.logit(x, 0.1)
    assert y.grad_fn._saved_eps == 0.1
    y = ember.clamp(x, 0.2, None)
    assert y.grad_fn._saved_min == 0.2 and y.grad_fn._saved_max is None
    y = x.exp()
    assert float((y.grad_fn._saved_result - y).abs().sum()) == 0.0


# ---- gradcheck ----------------------------------------------------------------------------------------
GRADCHECK = {
    "pow": (lambda a, b: ember.pow(a, b), 2, 0.5, 2.0),
    "atan2": (lambda a, b: ember.atan2(a, b), 2, 0.5, 2.0),
    "hypot": (lambda a, b: ember.hypot(a, b), 2, -2.0, 2.0),
    "div": (lambda a, b: a / b, 2, 0.5, 2.0),
    "lerp": (lambda a, b, c: ember.lerp(a, b, c), 3, -2.0, 2.0),
    "addcdiv": (lambda a, b, c: ember.addcdiv(a, b, c, value=0.5), 3, 0.5, 2.0),
    "addcmul": (lambda a, b, c: ember.addcmul(a, b, c, value=-1.5), 3, -2.0, 2.0),
    "logit": (lambda a: ember.logit(a), 1, 0.1, 0.9),
    "erfinv": (lambda a: ember.erfinv(a), 1, -0.8, 0.8),
    "acosh": (lambda a: ember.acosh(a), 1, 1.5, 3.0),
    "rsqrt": (lambda a: a.rsqrt(), 1, 0.5, 2.0),
    "tan": (lambda a: a.tan(), 1, -1.0, 1.0),
    "sigmoid": (lambda a: a.sigmoid(), 1, -2.0, 2.0),
    "float_power": (lambda a, b: ember.float_power(a, b), 2, 0.5, 2.0),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradcheck(name, rng):
    fn, n, lo, hi = GRADCHECK[name]
    xs = tuple(ember.tensor(rng.uniform(lo, hi, (2, 3)), dtype=ember.float64, requires_grad=True)
               for _ in range(n))
    assert ember.autograd.gradcheck(fn, xs)
    assert ember.autograd.gradgradcheck(fn, xs)


# ---- errors PyTorch raises in backward ----------------------------------------------------------------
def _backward_of(fn):
    def run(L):
        x = L.tensor([0.5, 1.5, 2.0], dtype=L.float64, requires_grad=True)
        y = fn(L, x)
        L.autograd.grad(y, x, L.ones(3, dtype=L.float64))
    return run


@pytest.mark.parametrize("fn", [
    lambda L, x: L.floor_divide(x, 0.7), lambda L, x: x // x, lambda L, x: 2 // x,
    lambda L, x: (x * 1).floor_divide_(0.7), lambda L, x: 2 % x,
    lambda L, x: L.asinh_(x * 1), lambda L, x: (x * 1).acosh_(), lambda L, x: L.atanh_(x * 0.25),
    lambda L, x: (x * 1).arcsinh_(), lambda L, x: (x * 1).arccosh_(), lambda L, x: L.arctanh_(x * 0.25),
])
def test_backward_not_implemented(fn):
    same_error(_backward_of(fn))


def test_not_implemented_node_requires_grad():
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    assert ember.floor_divide(x, 2).requires_grad
    assert (x * 1).asinh_().grad_fn.name() == "AsinhBackward1"


def test_inplace_on_leaf_error():
    def run(L):
        x = L.tensor([0.5, 1.5], requires_grad=True)
        x.exp_()
    same_error(run)


def test_saved_input_modified_error():
    def run(L):
        x = L.tensor([0.5, 1.5], requires_grad=True)
        h = x * 1
        y = L.pow(h, 3)
        h.add_(1)
        L.autograd.grad(y, x, L.ones(2))
    same_error(run)


# ---- meta tensors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["exp", "log", "abs", "pow_2", "clamp", "sigmoid", "logit", "floor",
                                  "float_power_2", "sgn"])
def test_meta_grads(name):
    fn, _, _ = _unary(name)
    res = []
    for L in (ember, torch):
        x = L.empty((4, 6), device="meta", dtype=L.float32, requires_grad=True)
        y = fn(L, x)
        g, = L.autograd.grad(y, x, L.empty(tuple(y.shape), device="meta", dtype=y.dtype))
        res.append((tuple(g.shape), str(g.dtype).split(".")[-1], g.device.type, y.grad_fn.name()))
    assert res[0] == res[1]


def test_half_precision_grads(rng):
    for dtype, tol in (("float16", {"atol": 1e-3, "rtol": 1e-2}), ("bfloat16", {"atol": 1e-2, "rtol": 2e-2})):
        for name in ["exp", "log", "sqrt", "sigmoid", "tanh", "pow_2", "clamp", "abs", "reciprocal"]:
            fn, lo, hi = _unary(name)
            e, t = make_pair((3, 4), dtype, rng, low=lo, high=hi)
            e.requires_grad_()
            t.requires_grad_()
            eo, to = fn(ember, e), fn(torch, t)
            go = np.random.default_rng(1).standard_normal(tuple(to.shape))
            eg, = ember.autograd.grad(eo, e, ember.tensor(go, dtype=eo.dtype))
            tg, = torch.autograd.grad(to, t, torch.tensor(go, dtype=to.dtype))
            check(eg, tg, **tol)


@pytest.mark.skipif(CPLX_SECOND, reason="ember has a conj operator")
def test_complex_double_backward_needs_conj():
    x = ember.tensor([0.5 + 1j], requires_grad=True)
    g, = ember.autograd.grad(x.exp(), x, ember.ones(1, dtype=ember.complex64))  # first order works
    with pytest.raises(NotImplementedError, match="conj"):
        ember.autograd.grad(x.exp(), x, ember.ones(1, dtype=ember.complex64), create_graph=True)
