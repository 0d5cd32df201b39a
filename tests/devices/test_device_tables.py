"""The op database's pointwise, comparison, activation and matrix-product tables on every device
(tests/devices/conftest.py), in the shapes and value ranges the device suite ran them in before
test_op_db_on_device (tests/devices/test_device_generic.py) took each entry's own device sample:
(2, 3) transposed inputs in (-0.9, 0.9); a (3,) second operand broadcast against (2, 3), in (0.5, 2);
activations on (2, 4) in (-2, 2), first-order gradients; the products' standard-normal float32
operands, first-order gradients."""
import numpy as np
import pytest
import torch

import ember
from device_harness import _ember_inputs, _pair, _same, _torch_inputs
from opdb import ACTIVATIONS, COMPARISONS, LINALG_CASES, POINTWISE_BINARY, POINTWISE_UNARY, PRODUCTS


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("op", POINTWISE_UNARY)
def test_unary_table_on_device(op, device):
    arrays = _pair((2, 3), 3, transposed=True)  # inputs in (-0.9, 0.9): inside every op's domain but acosh's
    (tx,), (ex,) = _torch_inputs(arrays), _ember_inputs(arrays, device)
    _same(getattr(ember, op)(ex), getattr(torch, op)(tx), device, atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("op", list(POINTWISE_BINARY))
def test_binary_table_on_device(op, device):
    arrays = _pair((2, 3), 4) + _pair((3,), 5, 0.5, 2.0)  # broadcast; the divisor stays away from 0
    ta, ea = _torch_inputs(arrays), _ember_inputs(arrays, device)
    fn = POINTWISE_BINARY[op]
    _same(fn(ember, *ea), fn(torch, *ta), device, atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("op", COMPARISONS)
def test_compare_table_on_device(op, device):
    arrays = _pair((2, 3), 6, transposed=True) + _pair((3,), 7)
    ta, ea = _torch_inputs(arrays), _ember_inputs(arrays, device)
    _same(getattr(ember, op)(*ea), getattr(torch, op)(*ta), device)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_grad_table_on_device(name, device):
    """The op database's activation table (functional and in-place forms), first order."""
    fn = ACTIVATIONS[name]
    arrays = _pair((2, 4), 8, -2.0, 2.0)  # even last dim for glu
    tx = [x.requires_grad_() for x in _torch_inputs(arrays)]
    ex = [x.requires_grad_() for x in _ember_inputs(arrays, device)]
    tl, el = (fn(torch, *tx) ** 2).sum(), (fn(ember, *ex) ** 2).sum()
    _same(el, tl, device, atol=1e-5, rtol=1e-4)
    el.backward()
    if device == "meta":
        assert ex[0].grad.device.type == "meta" and tuple(ex[0].grad.shape) == (2, 4)
        return
    tl.backward()
    _same(ex[0].grad, tx[0].grad, device, atol=1e-5, rtol=1e-4)


PRODUCT_CASES = [n for n, (_, specs, _) in LINALG_CASES.items()
                 if n.startswith(PRODUCTS) and all(kind == "gen" for kind, _ in specs)]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", PRODUCT_CASES)
def test_product_grad_table_on_device(name, device):
    """The op database's matrix-product cases (mm/bmm/addmm/einsum...), first order, float32."""
    fn, specs, _ = LINALG_CASES[name]
    rng = np.random.default_rng(9)
    arrays = [("", rng.standard_normal(shape).astype(np.float32)) for _, shape in specs]
    tx = [x.requires_grad_() for x in _torch_inputs(arrays)]
    ex = [x.requires_grad_() for x in _ember_inputs(arrays, device)]
    tl, el = (fn(torch, *tx) ** 2).sum(), (fn(ember, *ex) ** 2).sum()
    _same(el, tl, device, atol=1e-4, rtol=1e-4)
    el.backward()
    if device == "meta":
        assert all(e.grad.device.type == "meta" and e.grad.shape == e.shape for e in ex)
        return
    tl.backward()
    for e, t in zip(ex, tx):
        _same(e.grad, t.grad, device, atol=1e-4, rtol=1e-4)
