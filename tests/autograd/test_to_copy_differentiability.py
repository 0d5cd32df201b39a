"""_to_copy to an integer or bool dtype gives a result without a gradient, as torch's does
(derivatives.yaml's conditional output_differentiability); float and complex targets keep it."""
import pytest
import torch

import ember

TARGETS = ["long", "int", "bool", "short", "uint8", "double", "half", "float", "complex64", "bfloat16"]


@pytest.mark.parametrize("name", TARGETS)
def test_requires_grad_follows_the_target_dtype(name):
    got = []
    for m in (torch, ember):
        x = m.randn(3, requires_grad=True)
        y = x.to(getattr(m, name))
        got.append((y.requires_grad, y.grad_fn is None))
    assert got[0] == got[1]


def test_subtracting_the_integer_part_keeps_the_gradient():
    grads = []
    for m in (torch, ember):
        w = m.tensor([1.5, -2.25, 3.0], requires_grad=True)
        (w - w.long()).pow(2).sum().backward()
        grads.append(w.grad.tolist())
    assert grads[0] == grads[1]
