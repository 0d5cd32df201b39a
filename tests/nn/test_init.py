"""nn.init against torch.nn.init: gains and fans exactly, deterministic initializers exactly,
random ones statistically (bounds, mean, std), generator= reproducibility, no autograd history."""
import math

import numpy as np
import pytest
import torch

import ember
from harness import check, same_error

init = ember.nn.init


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("conv_transpose3d",), ("sigmoid",),
                                  ("tanh",), ("relu",), ("leaky_relu",), ("leaky_relu", 0.2),
                                  ("leaky_relu", 3), ("selu",)])
def test_calculate_gain(args):
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("case", [
    lambda L: L.nn.init.calculate_gain("foo"),
    lambda L: L.nn.init.calculate_gain("leaky_relu", True),
    lambda L: L.nn.init.calculate_gain("leaky_relu", "x"),
    lambda L: L.nn.init._calculate_fan_in_and_fan_out(L.ones(3)),
    lambda L: L.nn.init.kaiming_uniform_(L.ones(3, 3), mode="fan_avg"),
    lambda L: L.nn.init.eye_(L.ones(3)),
    lambda L: L.nn.init.dirac_(L.ones(3, 3)),
    lambda L: L.nn.init.dirac_(L.ones(3, 3, 3), groups=2),
    lambda L: L.nn.init.orthogonal_(L.ones(3)),
    lambda L: L.nn.init.sparse_(L.ones(3), 0.1),
])
def test_errors(case):
    same_error(case)


@pytest.mark.parametrize("shape", [(3, 5), (4, 2, 3), (6, 3, 2, 2), (2, 2, 1, 3, 4)])
def test_fans(shape):
    assert (init._calculate_fan_in_and_fan_out(ember.empty(shape))
            == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape)))


def test_deterministic_initializers():
    for fn, args in [("constant_", (0.3,)), ("ones_", ()), ("zeros_", ())]:
        e = getattr(init, fn)(ember.empty(3, 4), *args)
        t = getattr(torch.nn.init, fn)(torch.empty(3, 4), *args)
        check(e, t)
    for shape in [(3, 5), (5, 3), (4, 4)]:
        check(init.eye_(ember.empty(shape)), torch.nn.init.eye_(torch.empty(shape)))
    for shape, groups in [((4, 3, 3), 1), ((6, 2, 3, 3), 2), ((4, 4, 3, 3, 3), 1),
                          ((2, 5, 2), 1)]:
        check(init.dirac_(ember.empty(shape), groups), torch.nn.init.dirac_(torch.empty(shape), groups))


def test_no_grad_and_identity():
    p = ember.nn.Parameter(ember.empty(8, 4))
    for fn, args in [("uniform_", ()), ("normal_", ()), ("constant_", (2.0,)), ("ones_", ()),
                     ("zeros_", ()), ("eye_", ()), ("xavier_uniform_", ()), ("xavier_normal_", ()),
                     ("kaiming_uniform_", ()), ("kaiming_normal_", ()), ("trunc_normal_", ()),
                     ("orthogonal_", ()), ("sparse_", (0.5,))]:
        r = getattr(init, fn)(p, *args)
        assert r is p, fn
        assert p.grad_fn is None and p.is_leaf and p.requires_grad, fn
    d = ember.nn.Parameter(ember.empty(4, 4, 3))
    assert init.dirac_(d) is d and d.grad_fn is None


def _stats(t):
    a = t.detach().double().numpy().ravel()
    return a.min(), a.max(), a.mean(), a.std()


def test_uniform_normal_statistics():
    ember.manual_seed(0)
    lo, hi, mean, std = _stats(init.uniform_(ember.empty(200, 200), -2.0, 3.0))
    assert -2.0 <= lo and hi <= 3.0 and abs(mean - 0.5) < 0.03 and abs(std - 5 / math.sqrt(12)) < 0.02
    lo, hi, mean, std = _stats(init.normal_(ember.empty(200, 200), 1.0, 0.5))
    assert abs(mean - 1.0) < 0.01 and abs(std - 0.5) < 0.01


@pytest.mark.parametrize("shape", [(300, 400), (64, 32, 3, 3)])
def test_xavier_kaiming_statistics(shape):
    ember.manual_seed(1)
    fan_in, fan_out = init._calculate_fan_in_and_fan_out(ember.empty(shape))
    gain = 1.7
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    lo, hi, mean, std = _stats(init.xavier_uniform_(ember.empty(shape), gain=gain))
    assert -a <= lo and hi <= a and lo < -0.95 * a and hi > 0.95 * a
    assert abs(std - a / math.sqrt(3)) < 0.02 * a
    _, _, mean, std = _stats(init.xavier_normal_(ember.empty(shape), gain=gain))
    assert abs(std - gain * math.sqrt(2.0 / (fan_in + fan_out))) < 0.02 * a and abs(mean) < 0.02 * a
    for mode, fan in (("fan_in", fan_in), ("fan_out", fan_out)):
        for nl, param in (("relu", 0), ("leaky_relu", 0.1), ("tanh", 0)):
            g = torch.nn.init.calculate_gain(nl, param)
            bound = math.sqrt(3.0) * g / math.sqrt(fan)
            lo, hi, mean, std = _stats(init.kaiming_uniform_(ember.empty(shape), a=param, mode=mode,
                                                             nonlinearity=nl))
            assert -bound <= lo and hi <= bound and hi > 0.95 * bound
            assert abs(std - bound / math.sqrt(3)) < 0.02 * bound
            _, _, mean, std = _stats(init.kaiming_normal_(ember.empty(shape), a=param, mode=mode,
                                                          nonlinearity=nl))
            assert abs(std - g / math.sqrt(fan)) < 0.03 * g / math.sqrt(fan)


def test_kaiming_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(ember.empty(3, 0))


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 1.5),
                                          (0.0, 1.0, 1.0, 3.0), (3.0, 0.1, 2.9, 3.05)])
def test_trunc_normal(mean, std, a, b):
    ember.manual_seed(2)
    x = init.trunc_normal_(ember.empty(300, 300), mean, std, a, b)
    lo, hi, m, s = _stats(x)
    assert a <= lo and hi <= b
    # moments of the truncated normal distribution
    alpha, beta = (a - mean) / std, (b - mean) / std
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    Z = cdf(beta) - cdf(alpha)
    em = mean + std * (phi(alpha) - phi(beta)) / Z
    ev = std ** 2 * (1 + (alpha * phi(alpha) - beta * phi(beta)) / Z
                     - ((phi(alpha) - phi(beta)) / Z) ** 2)
    assert abs(m - em) < 0.01 * std + 1e-3 and abs(s - math.sqrt(ev)) < 0.01 * std + 1e-3


def test_trunc_normal_warns_far_mean():
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(ember.empty(10), mean=10.0, std=1.0, a=-1.0, b=1.0)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 2, 3), (7, 7)])
def test_orthogonal(shape):
    ember.manual_seed(3)
    gain = 1.5
    w = init.orthogonal_(ember.empty(shape), gain=gain)
    m = w.reshape(shape[0], -1).double().numpy()
    rows, cols = m.shape
    prod = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(prod, gain ** 2 * np.eye(min(rows, cols)), atol=1e-5)


def test_sparse():
    ember.manual_seed(4)
    w = init.sparse_(ember.empty(10, 6), sparsity=0.3, std=0.5)
    zeros_per_col = (w == 0).sum(0).tolist()
    assert zeros_per_col == [3] * 6


@pytest.mark.parametrize("fn,args", [("uniform_", (-1.0, 1.0)), ("normal_", (0.0, 2.0)),
                                     ("xavier_uniform_", ()), ("xavier_normal_", ()),
                                     ("kaiming_uniform_", ()), ("kaiming_normal_", ()),
                                     ("trunc_normal_", ()), ("orthogonal_", ())])
def test_generator_reproducible(fn, args):
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    a = getattr(init, fn)(ember.empty(5, 4), *args, generator=g1)
    ember.manual_seed(123)  # the global generator is not used
    ember.rand(10)
    b = getattr(init, fn)(ember.empty(5, 4), *args, generator=g2)
    assert a.tolist() == b.tolist()
    c = getattr(init, fn)(ember.empty(5, 4), *args, generator=g1)
    assert a.tolist() != c.tolist()


def test_deprecated_aliases():
    with pytest.warns(FutureWarning, match="`nn.init.uniform` is now deprecated in favor of "
                                           "`nn.init.uniform_`"):
        init.uniform(ember.empty(2))
    assert init.xavier_normal.__name__ == "xavier_normal"


# ---- the default initialization of the layers ---------------------------------------------------
@pytest.mark.parametrize("fan_in,out", [(100, 300), (7, 2000), (1000, 50)])
def test_linear_default_init(fan_in, out):
    ember.manual_seed(5)
    m = ember.nn.Linear(fan_in, out)
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) gives +-1/sqrt(fan_in)
    lo, hi, mean, std = _stats(m.weight)
    assert -bound <= lo and hi <= bound and hi > 0.97 * bound and lo < -0.97 * bound
    assert abs(std - bound / math.sqrt(3)) < 0.03 * bound and abs(mean) < 0.03 * bound
    lo, hi, _, _ = _stats(m.bias)
    assert -bound <= lo and hi <= bound
    # torch gives the same distribution
    t = torch.nn.Linear(fan_in, out)
    tlo, thi, _, tstd = _stats(t.weight)
    assert abs(tstd - std) < 0.03 * bound


def test_bilinear_prelu_default_init():
    ember.manual_seed(6)
    m = ember.nn.Bilinear(40, 30, 200)
    bound = 1 / math.sqrt(40)
    lo, hi, _, std = _stats(m.weight)
    assert -bound <= lo and hi <= bound and abs(std - bound / math.sqrt(3)) < 0.02 * bound
    lo, hi, _, _ = _stats(m.bias)
    assert -bound <= lo and hi <= bound
    p = ember.nn.PReLU(3, init=0.1)
    assert np.allclose(p.weight.detach().numpy(), 0.1)
    with pytest.warns(UserWarning, match="zero-element"):
        m = ember.nn.Linear(0, 3)  # as torch: the weight init is a no-op, the bias is zeros
    assert m.bias.tolist() == [0.0, 0.0, 0.0]
