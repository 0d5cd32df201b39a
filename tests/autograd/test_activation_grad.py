"""Gradients of activations, where and masked_fill against torch (first and second order), node
names, gradcheck, and the errors PyTorch raises in their backward."""
import numpy as np
import pytest
import torch
from autograd_harness import compare_grads
from harness import check, make_pair, pair_from, same_error

from opdb import ACTIVATIONS as UNARY
from opdb import ACTIVATIONS_FIRST_ORDER as FIRST_ORDER_ONLY
from opdb import nn, second_order

import ember
import ember._generated.functions_nn as enn


def _sum_differentiable():
    return ember.ones(2, requires_grad=True).sum().requires_grad


# second-order gradients that flow through a reduction (broadcast inputs, prelu's weight,
# masked_fill's value) need sum's derivative (reduction family)
needs_sum_grad = pytest.mark.skipif(not _sum_differentiable(), reason="sum has no derivative yet")


def scalar_pair(v, dtype):
    """0-d inputs (harness.make_pair/pair_from give shape (1,) for ())."""
    return ember.tensor(v, dtype=getattr(ember, dtype)), torch.tensor(v, dtype=getattr(torch, dtype))




@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_grads(name, dtype, rng):
    fn = UNARY[name]
    for shape, layout in [((4, 6), "contiguous"), ((4, 6), "transposed"), ((0, 4), "contiguous")]:
        e, t = make_pair(shape, dtype, rng, layout, low=-3, high=3)
        compare_grads(fn, [e], [t], second_order=second_order(name))
    if not name.startswith("glu"):
        for v in (-1.25, 0.75):
            e, t = scalar_pair(v, dtype)
            compare_grads(fn, [e], [t], second_order=second_order(name))


@pytest.mark.parametrize("name", sorted(UNARY) + sorted(FIRST_ORDER_ONLY))
def test_unary_non_contiguous_and_names(name, rng):
    fn = UNARY.get(name) or FIRST_ORDER_ONLY[name]
    e, t = make_pair((6, 4), "float64", rng, low=-3, high=3)

    def g(L, x):  # a transposed view into the op
        return fn(L, x.transpose(0, 1))
    compare_grads(g, [e], [t], second_order=name in UNARY and second_order(name))
    er = fn(ember, e.detach().clone().requires_grad_())
    tr = fn(torch, t.detach().clone().requires_grad_())
    assert er.grad_fn.name() == tr.grad_fn.name()


@pytest.mark.parametrize("name", sorted(FIRST_ORDER_ONLY))
def test_hardsigmoid_grad_and_double_backward_error(name, rng):
    fn = FIRST_ORDER_ONLY[name]
    for dtype in ("float64", "float32"):
        e, t = make_pair((3, 5), dtype, rng, low=-3, high=3)
        compare_grads(fn, [e], [t], second_order=False)
    if not second_order(name):
        return

    def double(L):
        x = L.tensor([0.5, -1.0], dtype=L.float64, requires_grad=True)
        g, = L.autograd.grad(fn(L, x), x, L.ones(2, dtype=L.float64), create_graph=True)
        L.autograd.grad(g, x, L.ones(2, dtype=L.float64))
    same_error(double)


# points on every kink, where the subgradient PyTorch picks must be matched
KINKS = np.array([-6.0, -3.0, -1.5, -1.0, -0.5, -0.3, -0.2, 0.0, 0.1, 0.3, 0.5, 1.0, 1.5, 2.0,
                  3.0, 6.0, 20.0, 30.0])


@pytest.mark.parametrize("name", sorted(UNARY) + sorted(FIRST_ORDER_ONLY))
def test_grads_at_kinks(name):
    if name.startswith("glu"):
        pytest.skip("smooth")
    fn = UNARY.get(name) or FIRST_ORDER_ONLY[name]
    e, t = pair_from(KINKS.copy(), "float64")
    compare_grads(fn, [e], [t], second_order=name in UNARY and second_order(name))


def test_special_values_first_order():
    v = np.array([-np.inf, -50.0, 50.0, np.inf, np.nan, 0.0])
    for name in ["relu", "hardtanh", "gelu", "gelu_tanh", "silu", "mish", "softplus", "elu",
                 "celu", "leaky_relu", "hardswish", "softshrink", "hardshrink", "log_sigmoid",
                 "threshold", "rrelu"]:
        e, t = pair_from(v.copy(), "float64")
        compare_grads(UNARY[name], [e], [t], second_order=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_grads(dtype, rng):
    tol = {"atol": 1e-3, "rtol": 1e-2} if dtype == "float16" else {"atol": 1e-2, "rtol": 2e-2}
    for name in ["relu", "hardtanh", "gelu", "gelu_tanh", "silu", "mish", "softplus", "elu",
                 "leaky_relu", "hardswish", "softshrink", "log_sigmoid", "threshold", "glu"]:
        e, t = make_pair((4, 6), dtype, rng, low=-3, high=3)
        e.requires_grad_()
        t.requires_grad_()
        eo, to = UNARY[name](ember, e), UNARY[name](torch, t)
        go = np.random.default_rng(1).standard_normal(tuple(to.shape))
        eg, = ember.autograd.grad(eo, e, ember.tensor(go, dtype=eo.dtype))
        tg, = torch.autograd.grad(to, t, torch.tensor(go, dtype=to.dtype))
        check(eg, tg, **tol)


# ---- prelu ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_prelu_grads(dtype, rng):
    cases = [((2, 3, 4), (3,)), ((2, 3), (3,)), ((5,), (1,)), ((2, 3, 4, 2), (1,)), ((2, 3), ())]
    for xs, ws in cases:
        ex, tx = make_pair(xs, dtype, rng, "transposed", low=-3, high=3)
        ew, tw = make_pair(ws, dtype, rng, low=-1, high=1) if ws else scalar_pair(0.3, dtype)
        compare_grads(lambda L, x, w: L.prelu(x, w), [ex, ew], [tx, tw], second_order=False)
    ex, tx = scalar_pair(-2.0, dtype)
    ew, tw = scalar_pair(0.3, dtype)
    compare_grads(lambda L, x, w: L.prelu(x, w), [ex, ew], [tx, tw], second_order=False)


@needs_sum_grad
def test_prelu_double_backward(rng):
    ex, tx = make_pair((2, 3, 4), "float64", rng, low=-3, high=3)
    ew, tw = make_pair((3,), "float64", rng, low=-1, high=1)
    compare_grads(lambda L, x, w: L.prelu(x, w), [ex, ew], [tx, tw])
    compare_grads(lambda L, x, w: x.prelu(w), [ex[0], ew[:1]], [tx[0], tw[:1]])


def test_prelu_input_only_second_order(rng):
    # only the input requires grad: no reduction in the first-order graph
    ex, tx = make_pair((2, 3, 4), "float64", rng, low=-3, high=3)
    w = rng.uniform(-1, 1, 3)
    compare_grads(lambda L, x: L.prelu(x, L.tensor(w)), [ex], [tx])


# ---- rrelu in training mode: the noise is random, so check against the saved draw ---------------
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_grad(inplace):
    x = ember.tensor([-2.0, -1.0, -0.5, 0.5, 1.0, 3.0], dtype=ember.float64, requires_grad=True)
    y = ember.rrelu_(x.clone(), 0.1, 0.3, True) if inplace else ember.rrelu(x, 0.1, 0.3, True)
    assert y.grad_fn.name() == ("RreluWithNoiseBackward1" if inplace else "RreluWithNoiseBackward0")
    g, = ember.autograd.grad(y, x, ember.ones(6, dtype=ember.float64))
    xv, yv, gv = x.detach().numpy(), y.detach().numpy(), g.numpy()
    np.testing.assert_allclose(gv[xv > 0], 1.0)
    np.testing.assert_allclose(gv[xv < 0], yv[xv < 0] / xv[xv < 0])
    assert ((gv[xv < 0] >= 0.1) & (gv[xv < 0] <= 0.3)).all()


# ---- where / masked_fill --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_where_grads(dtype, rng):
    c = rng.random((3, 4)) > 0.5
    ea, ta = make_pair((3, 4), dtype, rng)
    eb, tb = make_pair((3, 4), dtype, rng, "transposed")

    def cond(L):
        return L.tensor(c)
    compare_grads(lambda L, a, b: L.where(cond(L), a, b), [ea, eb], [ta, tb])
    compare_grads(lambda L, a, b: a.where(cond(L), b), [ea, eb], [ta, tb])
    compare_grads(lambda L, a: L.where(cond(L), a, 0.5), [ea], [ta])
    compare_grads(lambda L, a: L.where(cond(L), -2, a), [ea], [ta])
    compare_grads(lambda L, a: a.where(cond(L), 1.5), [ea], [ta])
    compare_grads(lambda L, a: L.where(cond(L), a, a * 3), [ea], [ta])


@needs_sum_grad
def test_where_broadcast_grads(rng):
    c = rng.random((3, 1)) > 0.5
    ea, ta = make_pair((4,), "float64", rng)
    eb, tb = make_pair((3, 4), "float64", rng)
    compare_grads(lambda L, a, b: L.where(L.tensor(c), a, b), [ea, eb], [ta, tb])
    compare_grads(lambda L, a, b: L.where(L.tensor(c), a, b), [ea, eb[:, :1]], [ta, tb[:, :1]])


def test_where_broadcast_first_order(rng):
    c = rng.random((3, 1)) > 0.5
    ea, ta = make_pair((4,), "float64", rng)
    eb, tb = make_pair((3, 4), "float32", rng)
    compare_grads(lambda L, a, b: L.where(L.tensor(c), a, b), [ea, eb], [ta, tb], second_order=False)


def test_where_complex_grads(rng):
    c = rng.random((3, 4)) > 0.5
    ea, ta = make_pair((3, 4), "complex128", rng)
    eb, tb = make_pair((3, 4), "complex128", rng)
    compare_grads(lambda L, a, b: L.where(L.tensor(c), a, b), [ea, eb], [ta, tb])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_masked_fill_grads(dtype, rng):
    m = rng.random((3, 4)) > 0.5
    ex, tx = make_pair((3, 4), dtype, rng, "transposed")
    compare_grads(lambda L, x: x.masked_fill(L.tensor(m), 0.5), [ex], [tx])
    compare_grads(lambda L, x: L.masked_fill(x, L.tensor(m), -1), [ex], [tx])
    compare_grads(lambda L, x: x.clone().masked_fill_(L.tensor(m), 2.0), [ex], [tx])
    # a tensor value that does not require grad
    compare_grads(lambda L, x: x.masked_fill(L.tensor(m), L.tensor(3.0)), [ex], [tx])
    ev, tv = scalar_pair(-0.5, dtype)
    # the value's gradient (a sum) first order
    compare_grads(lambda L, x, v: x.masked_fill(L.tensor(m), v), [ex, ev], [tx, tv], second_order=False)
    compare_grads(lambda L, x, v: x.clone().masked_fill_(L.tensor(m), v), [ex, ev], [tx, tv],
                  second_order=False)


@needs_sum_grad
def test_masked_fill_value_double_backward(rng):
    m = rng.random((3, 4)) > 0.5
    ex, tx = make_pair((3, 4), "float64", rng)
    ev, tv = scalar_pair(-0.5, "float64")
    compare_grads(lambda L, x, v: x.masked_fill(L.tensor(m), v * x[0, 0]), [ex, ev], [tx, tv])
    compare_grads(lambda L, x, v: x.masked_fill(L.tensor(m), v), [ex, ev], [tx, tv])
    # mask broadcast over self
    mb = rng.random((2, 3, 4)) > 0.5
    compare_grads(lambda L, x, v: x.masked_fill(L.tensor(mb), v), [ex, ev], [tx, tv])


def test_masked_fill_broadcast_mask_first_order(rng):
    mb = rng.random((2, 3, 4)) > 0.5
    ex, tx = make_pair((3, 4), "float64", rng)
    compare_grads(lambda L, x: x.masked_fill(L.tensor(mb), 0.0), [ex], [tx], second_order=False)


def test_masked_fill_complex(rng):
    m = rng.random((3, 4)) > 0.5
    ex, tx = make_pair((3, 4), "complex128", rng)
    compare_grads(lambda L, x: x.masked_fill(L.tensor(m), 1j), [ex], [tx])


# ---- node names -----------------------------------------------------------------------------------
NAMED = {
    "where_self": lambda L, x: L.where(x > 0, x, x * 2),
    "where_scalar_other": lambda L, x: L.where(x > 0, x, 0.0),
    "where_scalar_self": lambda L, x: L.where(x > 0, 1, x),
    "masked_fill": lambda L, x: x.masked_fill(x > 0, 1.0),
    "masked_fill_tensor": lambda L, x: x.masked_fill(x > 0, L.tensor(1.0, dtype=L.float64,
                                                                     requires_grad=True)),
    "masked_fill_": lambda L, x: x.clone().masked_fill_(x > 0, 1.0),
    "masked_fill_tensor_": lambda L, x: x.clone().masked_fill_(x > 0, L.tensor(1.0, dtype=L.float64,
                                                                              requires_grad=True)),
    "prelu": lambda L, x: L.prelu(x, L.tensor([0.25], dtype=L.float64, requires_grad=True)),
    **UNARY, **FIRST_ORDER_ONLY,
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_node_names(name):
    fn = NAMED[name]
    names = []
    for L in (ember, torch):
        x = L.tensor([[-1.0, 0.5, 2.0, -0.25], [0.3, -3.0, 1.0, 4.0]], dtype=L.float64,
                     requires_grad=True)
        y = fn(L, x)
        names.append(y.grad_fn.name())
    assert names[0] == names[1]


def test_double_backward_node_names():
    for name in ["relu", "gelu", "hardtanh", "leaky_relu", "softplus", "elu", "hardswish",
                 "log_sigmoid", "softshrink", "hardshrink", "threshold"]:
        names = []
        for L in (ember, torch):
            x = L.tensor([[-1.0, 0.5, 2.0, -0.25]], dtype=L.float64, requires_grad=True)
            y = UNARY[name](L, x)
            g, = L.autograd.grad(y, x, L.ones_like(y), create_graph=True)
            names.append(g.grad_fn.name())
        assert names[0] == names[1], name


def test_saved_tensors():
    x = ember.tensor([-1.0, 2.0], requires_grad=True)
    y = ember.relu(x)
    assert y.grad_fn._saved_result is not None
    y = enn.elu(x, 0.5)
    assert y.grad_fn._saved_alpha == 0.5
    assert float(y.grad_fn._saved_self.sum()) == 1.0
    y = enn.gelu(x, approximate="tanh")
    assert y.grad_fn._saved_approximate == "tanh"


# ---- gradcheck ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "mish", "softplus_beta", "elu_args",
                                  "celu", "log_sigmoid", "glu", "selu"])
def test_gradcheck(name, rng):
    x = ember.tensor(rng.uniform(-2, 2, (2, 4)), dtype=ember.float64, requires_grad=True)
    fn = UNARY[name]
    assert ember.autograd.gradcheck(lambda t: fn(ember, t), (x,))
    assert ember.autograd.gradgradcheck(lambda t: fn(ember, t), (x,))


# ---- errors PyTorch raises in backward --------------------------------------------------------------
def _backward_of(fn):
    def run(L):
        x = L.tensor([-1.0, 0.5, 2.0], dtype=L.float64, requires_grad=True)
        y = fn(L, x)
        L.autograd.grad(y, x, L.ones(3, dtype=L.float64))
    return run


def test_inplace_negative_slope_errors():
    same_error(_backward_of(lambda L, x: nn(L).elu_(x.clone(), -1.0)))
    same_error(_backward_of(lambda L, x: L.celu_(x.clone(), -1.0)))
    same_error(_backward_of(lambda L, x: nn(L).leaky_relu_(x.clone(), -0.1)))
    same_error(_backward_of(lambda L, x: L.rrelu_(x.clone(), -0.5, -0.1)))


def test_inplace_on_leaf_and_out_errors():
    def leaf(L):
        x = L.tensor([1.0, -1.0], requires_grad=True)
        nn(L).gelu_(x)
    same_error(leaf)

    def out(L):
        x = L.tensor([1.0, -1.0], requires_grad=True)
        nn(L).gelu(x, out=L.empty(2))
    same_error(out)


def test_saved_input_modified_error():
    def run(L):
        x = L.tensor([1.0, -1.0], requires_grad=True)
        h = x * 1
        y = nn(L).silu(h)
        h.mul_(2)
        L.autograd.grad(y, x, L.ones(2))
    same_error(run)


def test_silu_complex_not_differentiable():
    x = ember.tensor([0.5 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="silu does not support automatic differentiation"):
        y = enn.silu(x)
        ember.autograd.grad(y, x, ember.ones(1, dtype=ember.complex64))


def test_condition_and_mask_not_differentiable(rng):
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    c = ember.tensor([1.0, 0.0], requires_grad=True)
    y = ember.where(c > 0, x, 0.0)
    assert len(y.grad_fn.next_functions) == 2


# ---- meta tensors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "elu_", "leaky_relu_", "glu", "hardswish",
                                  "log_sigmoid", "threshold_", "softplus", "hardtanh"])
def test_meta_grads(name):
    fn = UNARY[name]
    res = []
    for L in (ember, torch):
        x = L.empty((4, 6), device="meta", dtype=L.float32, requires_grad=True)
        y = fn(L, x)
        g, = L.autograd.grad(y, x, L.empty(tuple(y.shape), device="meta", dtype=L.float32))
        res.append((tuple(g.shape), str(g.dtype).split(".")[-1], g.device.type, y.grad_fn.name()))
    assert res[0] == res[1]


def test_backward_kernels_via_ops_namespace(rng):
    e, t = make_pair((3, 4), "float64", rng, low=-3, high=3)
    eg, tg = make_pair((3, 4), "float64", rng)
    for name, args in [("threshold_backward", (0.5,)), ("hardtanh_backward", (-1, 1)),
                       ("silu_backward", ()), ("mish_backward", ()), ("hardsigmoid_backward", ()),
                       ("hardswish_backward", ()), ("softplus_backward", (2, 3)),
                       ("softshrink_backward", (0.5,)), ("hardshrink_backward", (0.5,))]:
        check(getattr(ember.ops.aten, name)(eg, e, *args), getattr(torch.ops.aten, name)(tg, t, *args))
    check(ember.ops.aten.gelu_backward(eg, e, approximate="tanh"),
          torch.ops.aten.gelu_backward(tg, t, approximate="tanh"))
    check(ember.ops.aten.elu_backward(eg, 1.0, 1.0, 1.0, False, e),
          torch.ops.aten.elu_backward(tg, 1.0, 1.0, 1.0, False, t))
    check(ember.ops.aten.leaky_relu_backward(eg, e, 0.1, False),
          torch.ops.aten.leaky_relu_backward(tg, t, 0.1, False))
    eb, tb = ember.ops.aten.glu_backward, torch.ops.aten.glu_backward
    check(eb(eg[:, :2], e, 1), tb(tg[:, :2], t, 1))
    _, buf = torch.ops.aten.log_sigmoid_forward(t)
    check(ember.ops.aten.log_sigmoid_backward(eg, e, e), torch.ops.aten.log_sigmoid_backward(tg, t, buf))
