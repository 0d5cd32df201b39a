"""Saved outputs (tanh, sigmoid, exp... keep their result for backward), against torch. Without
saved-tensor hooks a node keeps output 0 as a bare alias of the result, or (alias, version) after an
in-place op; hooks, anomaly mode and other outputs keep a SavedVariable. Each form must behave as
torch's SavedVariable: version errors that name the node, double backward, retain_graph, hooks, the
`_saved_result` accessor and forward-over-reverse."""
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.harness import check

FNS = {"tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(), "exp": lambda x: x.exp()}
LIBS = (ember, torch)


def data(n=16, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def error_text(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("name", sorted(FNS))
def test_modified_output_version_error(name):
    texts = []
    for lib in LIBS:
        x = lib.tensor(data(), requires_grad=True)
        y = FNS[name](x * 1)
        y.add_(1)
        texts.append(error_text(lambda: y.sum().backward()))
    assert texts[0] == texts[1]
    assert "which is output 0 of" in texts[0] and "is at version 1; expected version 0" in texts[0]


def test_modified_output_through_accessor():
    texts = []
    for lib in LIBS:
        y = lib.tensor(data(), requires_grad=True).tanh()
        node = y.grad_fn
        y.mul_(2)
        texts.append(error_text(lambda: node._saved_result))
    assert texts[0] == texts[1]


def test_inplace_result_saved_at_its_version():
    """exp_ saves self after the in-place write (version 1): backward is right, and a further write
    raises torch's error (at version 2, expected 1)."""
    grads, texts = [], []
    for lib in LIBS:
        x = lib.tensor(data(), requires_grad=True)
        z = x * 2
        z.exp_()
        assert z._version == 1
        (z * z).sum().backward()
        grads.append(x.grad)
        z2 = x * 2
        z2.exp_()
        z2.add_(1)
        texts.append(error_text(lambda: z2.sum().backward()))
    check(grads[0], grads[1])
    assert texts[0] == texts[1] and "output 0 of Exp, is at version 2; expected version 1" in texts[0]


def test_inplace_on_view_version_error_names_the_node():
    texts = []
    for lib in LIBS:
        x = lib.tensor(data(16).reshape(4, 4), requires_grad=True)
        z = x * 1
        v = z[0]
        v.tanh_()
        v.add_(1)
        texts.append(error_text(lambda: z.sum().backward()))
    assert texts[0] == texts[1] and "output 0 of Tanh," in texts[0]


@pytest.mark.parametrize("name", sorted(FNS))
def test_double_backward(name):
    res = []
    for lib in LIBS:
        x = lib.tensor(data(8, 1).astype(np.float64), requires_grad=True)
        y = FNS[name](x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x, create_graph=True)
        (ggg,) = lib.autograd.grad(gg.sum(), x)
        res.append((g.detach(), gg.detach(), ggg))
    check(list(res[0]), list(res[1]))


def test_double_backward_inplace_result():
    res = []
    for lib in LIBS:
        x = lib.tensor(data(8, 2).astype(np.float64), requires_grad=True)
        z = (x * 0.5).clone()
        z.tanh_()  # saved at version 1
        (g,) = lib.autograd.grad(z.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        res.append((g.detach(), gg))
    check(list(res[0]), list(res[1]))


@pytest.mark.parametrize("name", sorted(FNS))
def test_retain_graph_twice(name):
    res, texts = [], []
    for lib in LIBS:
        x = lib.tensor(data(), requires_grad=True)
        y = FNS[name](x * 2).sum()
        y.backward(retain_graph=True)
        y.backward()
        res.append(x.grad)
        texts.append(error_text(lambda: y.backward()))
    check(res[0], res[1])
    assert texts[0] == texts[1]


def test_saved_result_accessor():
    for lib in LIBS:
        for name in sorted(FNS):
            y = FNS[name](lib.tensor(data(), requires_grad=True))
            r = y.grad_fn._saved_result
            assert r is not y and lib.equal(r, y)
            assert r.data_ptr() == y.data_ptr()
    # freed by backward, as torch's
    texts = []
    for lib in LIBS:
        y = lib.tensor(data(), requires_grad=True).tanh()
        node = y.grad_fn
        y.sum().backward()
        texts.append(error_text(lambda: node._saved_result))
    assert texts[0] == texts[1]


def _accessor_fields(lib, form):
    """What `_saved_result` (and max's `_saved_indices`) show of their autograd fields, per form."""
    x = lib.tensor(data(), requires_grad=True)
    if form == "hooks":
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
            y = x.exp()
    elif form == "inplace":  # saved as (alias, version): the in-place op's own result
        y = (x * 1).exp_()
    else:
        y = FNS[form](x)
    out = []
    for grad_mode in (True, False):
        with lib.set_grad_enabled(grad_mode):
            r = y.grad_fn._saved_result
        out.append((r is y, r.requires_grad, r.grad_fn is y.grad_fn, r.is_leaf, r._version,
                    r.grad_fn.name() if r.grad_fn is not None else None))
    idx = x.max(0).values.grad_fn._saved_indices
    out.append((idx.requires_grad, idx.grad_fn))
    # the reconnected alias carries y's history: a backward through it reaches x
    y.grad_fn._saved_result.sum().backward()
    out.append(np.asarray(x.grad.tolist()))
    return out


@pytest.mark.parametrize("form", sorted(FNS) + ["hooks", "inplace"])
def test_saved_result_accessor_is_reconnected(form):
    """torch's accessor returns a new tensor with requires_grad and the node as grad_fn, in any grad
    mode (SavedVariable::unpack(grad_fn)); a non-differentiable output (max's indices) stays plain."""
    a, b = (_accessor_fields(lib, form) for lib in LIBS)
    assert a[:-1] == b[:-1]
    np.testing.assert_allclose(a[-1], b[-1], rtol=1e-6)


def test_saved_tensor_hooks_on_outputs():
    """Hooks see the output (pack at record time) and their unpack result feeds the formula."""
    res = []
    for lib in LIBS:
        packed = []

        def pack(t):
            packed.append(t)
            return t.detach() * 2  # a different value: its use in the formula is visible

        def unpack(p):
            return p

        x = lib.tensor(data(), requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = x.tanh()
        assert len(packed) == 1 and lib.equal(packed[0], y)
        y.sum().backward()
        res.append(x.grad)
    check(res[0], res[1])


@pytest.mark.parametrize("name", sorted(FNS))
def test_anomaly_mode(name):
    res, texts = [], []
    for lib in LIBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # anomaly mode's warnings (its forward traceback)
            with lib.autograd.detect_anomaly():
                x = lib.tensor(data(), requires_grad=True)
                FNS[name](x * 2).sum().backward()
                res.append(x.grad)
                y = FNS[name](x * 2)
                y.add_(1)
                texts.append(error_text(lambda: y.sum().backward()))
    check(res[0], res[1])
    assert texts[0] == texts[1]


@pytest.mark.parametrize("create_graph", [False, True])
def test_forward_over_reverse(create_graph):
    """The tangent of a dual's tanh reaches its saved output, so the backward formula's tangent (a
    Hessian-vector product) is right with and without create_graph."""
    res = []
    for lib in LIBS:
        fw = lib.autograd.forward_ad
        p = lib.tensor(data(6, 3).astype(np.float64), requires_grad=True)
        t = lib.tensor(data(6, 4).astype(np.float64))
        with fw.dual_level():
            x = fw.make_dual(p, t)
            y = x.tanh()
            (g,) = lib.autograd.grad(y.sum(), x, create_graph=create_graph)
            res.append(fw.unpack_dual(g).tangent)
    check(res[0], res[1])


def test_hessian_forward_over_reverse():
    x = data(5, 5).astype(np.float64)
    e = ember.autograd.functional.hessian(lambda a: a.tanh().sigmoid().sum(), ember.tensor(x), vectorize=True,
                                          outer_jacobian_strategy="forward-mode")
    t = torch.autograd.functional.hessian(lambda a: a.tanh().sigmoid().sum(), torch.tensor(x), vectorize=True,
                                          outer_jacobian_strategy="forward-mode")
    check(e, t)


def test_forms_kept():
    """Which form each case keeps (the tests above check each one against torch)."""
    from ember.autograd.graph import SavedVariable
    x = ember.tensor(data(), requires_grad=True)
    y = x.tanh()
    assert y.grad_fn.result_.__class__ is ember.Tensor and y.grad_fn.result_ is not y
    z = x * 2
    z.exp_()
    s = z.grad_fn.result_
    assert s.__class__ is tuple and s[1] == 1
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert x.tanh().grad_fn.result_.__class__ is SavedVariable
    values, indices = ember.tensor(data().reshape(4, 4), requires_grad=True).max(1)
    assert values.grad_fn.indices_.__class__ is SavedVariable  # output 1
