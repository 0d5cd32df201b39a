"""torch.special's orthogonal polynomials against torch 2.13: the OpInfo samples, a grid over x (edges
+-1, 0, 1, outside [-1, 1], +-inf) and n (negative, 0, 1, the recurrence range, the trigonometric
range), Scalar overloads, integer/bool promotion, out=, dtypes torch refuses, and broadcasting errors.

float32 is compared with tolerances: torch's float32 kernels are vectorised (fused multiply-add,
SLEEF's acos/cos), so the last bits of the recurrences differ. NaN x is left out of the grid: torch's
vectorised CPU kernel returns finite values there."""
import numpy as np
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error

NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]


def _grid(dtype):
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.uniform(-1.5, 1.5, 60), [-1, 1, 0, 0.5, -0.5, 2, -2, np.inf, -np.inf]])
    ns = np.concatenate([np.arange(-3, 16), [2.7, -0.5, 30]])
    x, n = np.meshgrid(xs, ns)
    return x.astype(dtype), n.astype(dtype)


@pytest.mark.parametrize("name", NAMES)
def test_opinfo_samples(name):
    for op in opinfos(names={f"special.{name}"}):
        assert run_samples(op, torch.float32, atol=1e-4, rtol=1e-4)
        assert run_samples(op, torch.float64, atol=1e-9, rtol=1e-9)
        run_samples(op, torch.int64, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid(name, dtype):
    x, n = _grid(dtype)
    t = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n))
    e = getattr(ember.special, name)(ember.from_numpy(x), ember.from_numpy(n))
    tol = 1e-4 if dtype == "float32" else 1e-9
    check(e, t, atol=tol, rtol=tol)


@pytest.mark.parametrize("name", NAMES)
def test_scalars_promotion_out(name):
    te, ee = getattr(torch.special, name), getattr(ember.special, name)
    xt = torch.tensor([-1.0, -0.3, 0.0, 0.25, 1.0, 1.7], dtype=torch.float64)
    xe = ember.tensor(xt.numpy())
    check(ee(xe, 5), te(xt, 5))
    check(ee(0.4, ember.tensor([0, 1, 2, 7, 9])), te(0.4, torch.tensor([0, 1, 2, 7, 9])))
    check(ee(ember.tensor([1, 0, 2]), ember.tensor([3, 2, 1])), te(torch.tensor([1, 0, 2]), torch.tensor([3, 2, 1])))
    check(ee(ember.tensor([True, False]), 3), te(torch.tensor([True, False]), 3))
    check(ee(xe.reshape(2, 3).t(), ember.tensor([2.0, 3.0])), te(xt.reshape(2, 3).t(), torch.tensor([2.0, 3.0])))
    check(ee(ember.ones(0, 3), 4), te(torch.ones(0, 3), 4))
    check(ee(ember.full((2,), 0.5, dtype=ember.bfloat16), ember.full((2,), 3.0)),
          te(torch.full((2,), 0.5, dtype=torch.bfloat16), torch.full((2,), 3.0)))  # promotes to float32
    eo, to = ember.empty(6, dtype=ember.float64), torch.empty(6, dtype=torch.float64)
    ee(xe, ember.tensor(4.0, dtype=ember.float64), out=eo)
    te(xt, torch.tensor(4.0, dtype=torch.float64), out=to)
    check(eo, to)
    x = ember.ones(3, requires_grad=True)
    assert ee(x, 2).requires_grad == te(torch.ones(3, requires_grad=True), 2).requires_grad
    m = ee(ember.ones(2, 3, device="meta"), ember.ones(3, dtype=ember.float64, device="meta"))
    assert m.shape == (2, 3) and m.dtype == ember.float64


@pytest.mark.parametrize("name", NAMES)
def test_errors(name):
    same_error(lambda lib: getattr(lib.special, name)(lib.ones(2, dtype=lib.float16), 2))
    same_error(lambda lib: getattr(lib.special, name)(lib.ones(2, dtype=lib.bfloat16), 2))
    same_error(lambda lib: getattr(lib.special, name)(lib.ones(2, dtype=lib.complex64), 2))
    same_error(lambda lib: getattr(lib.special, name)(lib.ones(2), lib.ones(3)))
