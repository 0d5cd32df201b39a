"""Complex add/sub/rsub as torch computes them: self + alpha * other with a complex product even for
alpha 1 (sub and rsub: + (-alpha) * ...), so non-finite parts give NaN where the product makes one
and signed zeros follow the product. Every pair of special values, both complex dtypes, the operator
forms, Python numbers, real operands, alpha, in-place and out=."""
import itertools
import math

import numpy as np
import pytest
import torch

import ember

INF, NAN = math.inf, math.nan
VALUES = [1 + 1j, complex(INF, 0), complex(0, INF), complex(NAN, 0), 2 - 3j, complex(-0.0, -1),
          complex(-0.0, 0.0), complex(0.0, -0.0), complex(-INF, 2)]
X = [a for a, _ in itertools.product(VALUES, VALUES)]
Y = [b for _, b in itertools.product(VALUES, VALUES)]

CASES = {
    "add": lambda L, x, y: L.add(x, y),
    "sub": lambda L, x, y: L.sub(x, y),
    "add alpha 2": lambda L, x, y: L.add(x, y, alpha=2),
    "sub alpha -1.5": lambda L, x, y: L.sub(x, y, alpha=-1.5),
    "rsub": lambda L, x, y: L.rsub(x, y),
    "x + y": lambda L, x, y: x + y,
    "x - y": lambda L, x, y: x - y,
    "x + inf": lambda L, x, y: x + INF,
    "inf - x": lambda L, x, y: INF - x,
    "x - nan": lambda L, x, y: x - NAN,
    "x + 1": lambda L, x, y: x + 1,
    "1 - x": lambda L, x, y: 1 - x,
    "x + -0.0": lambda L, x, y: x + (-0.0),
    "x + complex number": lambda L, x, y: x + complex(INF, 1),
    "x + real tensor": lambda L, x, y: x + y.real,
    "real tensor + x": lambda L, x, y: y.real + x,
    "real tensor - x": lambda L, x, y: y.real - x,
    "add_": lambda L, x, y: x.clone().add_(y),
    "sub_": lambda L, x, y: x.clone().sub_(y),
    "add out=": lambda L, x, y: L.add(x, y, out=L.empty_like(x)),
}


def _same_bits(t, e):
    """Equal values, NaN where torch has NaN, and the same sign of every non-NaN zero."""
    t, e = t.numpy(), e.numpy()

    def sign(v):
        return np.where(np.isnan(v), False, np.signbit(v))
    assert t.dtype == e.dtype
    np.testing.assert_array_equal(e, t)
    for part in ("real", "imag"):
        np.testing.assert_array_equal(sign(getattr(e, part)), sign(getattr(t, part)), err_msg=part)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("case", list(CASES))
def test_complex_add_sub_match_torch(dtype, case):
    t = CASES[case](torch, torch.tensor(X, dtype=getattr(torch, dtype)), torch.tensor(Y, dtype=getattr(torch, dtype)))
    with np.errstate(all="ignore"):
        e = CASES[case](ember, ember.tensor(X, dtype=getattr(ember, dtype)), ember.tensor(Y, dtype=getattr(ember, dtype)))
    _same_bits(t, e)


def test_complex_add_keeps_its_gradient():
    a = ember.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    b = ember.tensor([0.5 - 1j, 2 + 0j], requires_grad=True)
    (a + b).abs().sum().backward()
    ta = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    tb = torch.tensor([0.5 - 1j, 2 + 0j], requires_grad=True)
    (ta + tb).abs().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
