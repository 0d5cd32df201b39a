"""The random ops under autograd, as torch records them: a sample does not depend on its parameters, so
each gradient is zero, but the result requires grad and carries torch's node (NormalBackward1,
BernoulliBackward0, ...), an in-place fill rebases the tensor's history (nothing flows back through
what it held before), bernoulli.p records torch::autograd::NotImplemented, and forward-mode tangents
of the results are zero."""
import pytest
import torch

import ember


def _cases(L, m, s):
    return {
        "normal.Tensor_float": lambda: L.normal(m, 1.0),
        "normal.float_Tensor": lambda: L.normal(0.0, s),
        "normal.Tensor_Tensor": lambda: L.normal(m, s),
        "normal.broadcast": lambda: L.normal(m, s[:1]),
        "normal_": lambda: m.clone().normal_(),
        "bernoulli": lambda: L.bernoulli(m.sigmoid()),
        "bernoulli.p": lambda: L.bernoulli(m, 0.5),
        "bernoulli_.Tensor": lambda: m.clone().bernoulli_(s * 0.5),
        "bernoulli_.float": lambda: m.clone().bernoulli_(0.3),
        "uniform_": lambda: m.clone().uniform_(),
        "exponential_": lambda: m.clone().exponential_(),
        "random_": lambda: m.clone().random_(),
        "random_.to": lambda: m.clone().random_(5),
        "random_.from": lambda: m.clone().random_(1, 5),
        "cauchy_": lambda: m.clone().cauchy_(),
        "log_normal_": lambda: m.clone().log_normal_(),
        "geometric_": lambda: m.clone().geometric_(0.5),
        "normal_ on a view": lambda: m.clone()[1:].normal_(),
        "zero_": lambda: m.clone().zero_(),
    }


NAMES = list(_cases(ember, None, None))


def _backward(L, name):
    m = L.zeros(3, requires_grad=True)
    s = L.ones(3, requires_grad=True)
    r = _cases(L, m, s)[name]()
    out = [r.grad_fn.name(), r.requires_grad]
    try:
        r.sum().backward()
        out += [None if t.grad is None else t.grad.tolist() for t in (m, s)]
    except RuntimeError as e:
        out.append(str(e))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_backward_records_torch_node_and_zero_gradients(name):
    assert _backward(ember, name) == _backward(torch, name)


def _forward(L, name):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        m = fw.make_dual(L.zeros(3), L.ones(3))
        s = fw.make_dual(L.ones(3), L.ones(3))
        try:
            t = fw.unpack_dual(_cases(L, m, s)[name]()).tangent
        except NotImplementedError as e:
            return str(e).split(" that ")[0]
        return None if t is None else t.tolist()


@pytest.mark.parametrize("name", NAMES)
def test_forward_ad_tangents_are_zero(name):
    assert _forward(ember, name) == _forward(torch, name)


def test_fill_of_a_leaf_that_requires_grad_raises():
    for L in (ember, torch):
        p = L.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            p.normal_()
        with L.no_grad():  # what nn.init does
            p.uniform_()
        assert p.grad_fn is None and p.requires_grad
