"""While the engine runs without create_graph, it excludes the Autograd keys so backward formulas
skip the autograd layer (grad mode is off there anyway). Everything that turns grad mode back on
inside backward must lift that exclusion for its scope, and every exit must restore it."""
import pytest

import ember
from ember.core import tls


def test_enable_grad_inside_a_hook_records():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = {}

    def hook(g):
        with ember.enable_grad():
            seen["enable_grad"] = (a * 3).grad_fn is not None
        seen["off"] = (a * 3).requires_grad
        with ember.set_grad_enabled(True):
            seen["set_grad_enabled"] = (a * 2).requires_grad
        seen["after"] = (a * 2).requires_grad
        return g

    before = tls.state.excluded
    b = a * 2
    b.register_hook(hook)
    b.sum().backward()
    assert seen == {"enable_grad": True, "off": False, "set_grad_enabled": True, "after": False}
    assert tls.state.excluded == before


def test_create_graph_inside_a_hook_and_double_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = {}

    def hook(g):
        w = ember.tensor([3.0, 4.0], requires_grad=True)
        with ember.enable_grad():
            q = (w * w).sum()
        gw, = ember.autograd.grad(q, w, create_graph=True)
        seen["gw"] = (gw.requires_grad, gw.tolist())
        return g

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert seen["gw"] == (True, [6.0, 8.0])
    z = ember.tensor([1.0, 2.0], requires_grad=True)
    g, = ember.autograd.grad((z ** 3).sum(), z, create_graph=True)
    g.sum().backward()
    assert z.grad.tolist() == [6.0, 12.0]


def test_checkpoint_recomputes_inside_backward():
    from ember.utils.checkpoint import checkpoint
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    checkpoint(lambda t: (t * t).sin(), x, use_reentrant=True).sum().backward()
    expected = [(2 * v * __import__("math").cos(v * v)) for v in (1.0, 2.0)]
    assert x.grad.tolist() == pytest.approx(expected)


def test_exclusion_restored_after_an_error_in_a_hook():
    before = tls.state.excluded, tls.state.grad_enabled
    a = ember.tensor([1.0], requires_grad=True)
    b = a * 2

    def hook(g):
        raise ValueError("boom")

    b.register_hook(hook)
    with pytest.raises(ValueError, match="boom"):
        b.sum().backward()
    assert (tls.state.excluded, tls.state.grad_enabled) == before
    assert (a * 2).requires_grad
