"""ember.utils.checkpoint against torch.utils.checkpoint: both variants give the gradients of the
plain run, the non-reentrant one keeps torch's graph structure and reaches parameters when no input
requires grad, activations are not kept, and the warnings and errors say what torch says."""
import gc
import warnings
import weakref

import numpy as np
import pytest
import torch

import ember
from tests.harness import check

W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.5
X = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)


def model(lib):
    lin = lib.nn.Linear(4, 3)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(W))
        lin.bias.fill_(0.25)
    return lin


def seg(lib, lin):
    return lambda t, scale=1.0: (lin(t).tanh() * scale).exp().sum(1)


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("input_grad", [True, False])
def test_gradients_match_torch_and_the_plain_run(reentrant, input_grad):
    res = {}
    for lib in (ember, torch):
        lin = model(lib)
        x = lib.tensor(X, requires_grad=input_grad)
        f = seg(lib, lin)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reentrant without an input needing grad warns (below)
            y = lib.utils.checkpoint.checkpoint(f, x, use_reentrant=reentrant)
        assert y.grad_fn is not None or reentrant and not input_grad
        if y.requires_grad:
            y.sum().backward()
        res[lib] = (y.detach(), lin.weight.grad, x.grad, y.grad_fn and y.grad_fn.name())
    e, t = res[ember], res[torch]
    check(e[0], t[0], atol=1e-5, rtol=1e-5)
    for ge, gt in zip(e[1:3], t[1:3]):
        assert (ge is None) == (gt is None)
        if ge is not None:
            check(ge, gt, atol=1e-5, rtol=1e-5)
    if not reentrant:
        assert e[3] == t[3] == "SumBackward1"  # the segment's own graph, as in torch


def test_non_reentrant_equals_plain_run_with_dropout_kwargs_and_retain_graph():
    def run(mode):
        ember.manual_seed(0)
        lin = ember.nn.Linear(4, 3)
        x = ember.tensor(X, requires_grad=True)

        def f(t, scale=1.0):
            return ember.nn.functional.dropout(lin(t).tanh() * scale, 0.5, training=True).exp()
        ember.manual_seed(1)
        y = f(x, scale=2.0) if mode == "plain" else \
            ember.utils.checkpoint.checkpoint(f, x, scale=2.0, use_reentrant=False)
        y.sum().backward(retain_graph=True)
        first = lin.weight.grad.clone()
        y.sum().backward()  # the rerun happens again for a second backward
        return [y.detach().numpy(), first.numpy(), x.grad.numpy(), lin.weight.grad.numpy()]
    for a, b in zip(run("plain"), run("checkpoint")):
        assert np.array_equal(a, b)


def test_activations_are_not_kept():
    seen = {}

    def f(t):
        h = t.exp()
        # h's memory: a graph keeps what it saved (as torch's SavedVariable keeps the TensorImpl, not
        # the Python object; ember's saved output is an alias over the same array)
        seen["h"] = weakref.ref(h._np)
        return h.exp()  # the first ExpBackward0 saves h (its result), the second its own result
    x = ember.tensor([0.1, 0.2], requires_grad=True)
    y = f(x)
    gc.collect()
    assert seen["h"]() is not None  # the plain graph keeps it
    y2 = ember.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert seen["h"]() is None
    y2.sum().backward()
    ref = x.grad.clone()
    x.grad = None
    y.sum().backward()
    t = torch.tensor([0.1, 0.2])
    check(x.grad, t.exp().exp() * t.exp())
    assert np.array_equal(ref.numpy(), x.grad.numpy())


def test_nested_and_sequential():
    for reentrant in (False, True):
        ember.manual_seed(0)
        x = ember.randn(3, requires_grad=True)
        cp = ember.utils.checkpoint.checkpoint

        def inner(t):
            return (t.sin() * t).exp()

        def outer(t):
            return cp(inner, t * 2, use_reentrant=reentrant).cos()
        cp(outer, x, use_reentrant=reentrant).sum().backward()
        g = x.grad.clone()
        x.grad = None
        outer(x).sum().backward()
        assert np.allclose(g.numpy(), x.grad.numpy())
    res = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        seq = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.ReLU(), lib.nn.Linear(4, 4), lib.nn.Tanh())
        with lib.no_grad():
            for i, p in enumerate(seq.parameters()):
                p.copy_(lib.tensor(np.linspace(-0.5, 0.5, p.numel(), dtype=np.float32).reshape(tuple(p.shape)) * (i + 1)))
        x = lib.tensor(X, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint_sequential(seq, 2, x, use_reentrant=False)
        y.sum().backward()
        res[lib] = (y.detach(), x.grad, seq[0].weight.grad)
    for a, b in zip(res[ember], res[torch]):
        check(a, b, atol=1e-6, rtol=1e-5)


def warned(lib, fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(lib)
    return [(i.category, str(i.message)) for i in w]


def test_warnings_and_errors_match_torch():
    def no_flag(L):
        L.utils.checkpoint.checkpoint(lambda t: t * 2, L.ones(2, requires_grad=True))

    def no_input_grad(L):
        L.utils.checkpoint.checkpoint(lambda t: t * 2, L.ones(2), use_reentrant=True)

    def seq_no_flag(L):
        L.utils.checkpoint.checkpoint_sequential([lambda t: t * 2, lambda t: t + 1], 2, L.ones(2, requires_grad=True))
    for fn in (no_flag, no_input_grad, seq_no_flag):
        assert warned(ember, fn) == warned(torch, fn)

    def err(L, **kw):
        with pytest.raises(ValueError) as info:
            L.utils.checkpoint.checkpoint(lambda t, **k: t * 2, L.ones(2, requires_grad=True), **kw)
        return str(info.value)
    for kw in ({"use_reentrant": True, "bogus": 1}, {"use_reentrant": True, "debug": True}):
        assert err(ember, **kw) == err(torch, **kw)


def test_non_reentrant_works_with_autograd_grad():
    for lib in (ember, torch):
        x = lib.tensor([0.5, 1.5], requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda t: (t * t).sin(), x, use_reentrant=False)
        (g,) = lib.autograd.grad(y.sum(), x)
        if lib is ember:
            ge = g
        else:
            check(ge, g)
