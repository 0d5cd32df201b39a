"""igamma / igammac (and special.gammainc / gammaincc) against torch 2.13: OpInfo samples, a grid over
a and x with ATen's edge values, promotion, in-place and out= forms, the gradient in `other` (first and
second order) and the errors."""
import numpy as np
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_opinfo(name):
    for op in opinfos(names={name}):
        for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
            assert run_samples(op, dt)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid(name, dtype):
    a = np.concatenate([np.geomspace(1e-3, 300, 25), [0.0, -1.0, np.inf, np.nan]])
    x = np.concatenate([np.geomspace(1e-4, 400, 25), [0.0, -1.0, np.inf, np.nan]])
    A, X = (g.astype(dtype) for g in np.meshgrid(a, x))
    # torch's large-a asymptotic branch (a > 20, x near a) is accurate to ~3e-10 relative (checked with
    # mpmath: ember's series/continued fraction is within 1e-13 there), hence 1e-8 in float64
    tol = 1e-8 if dtype == "float64" else 2e-6
    check(getattr(ember, name)(ember.from_numpy(A), ember.from_numpy(X)),
          getattr(torch, name)(torch.from_numpy(A), torch.from_numpy(X)), atol=tol, rtol=tol)


def test_forms_and_gradients():
    ta = torch.tensor([0.5, 2.0, 7.5], dtype=torch.float64)
    tx = torch.tensor([[1.0], [3.0]], dtype=torch.float64)
    ea, ex = ember.tensor(ta.numpy()), ember.tensor(tx.numpy())
    check(ember.special.gammainc(ea, ex), torch.special.gammainc(ta, tx))
    check(ember.special.gammaincc(ea, ex), torch.special.gammaincc(ta, tx))
    check(ea.igamma(ex), ta.igamma(tx))
    check(ember.igamma(ember.tensor([1, 2]), 2.5 * ember.ones(2)), torch.igamma(torch.tensor([1, 2]), 2.5 * torch.ones(2)))
    e2, t2 = ea.clone(), ta.clone()
    e2.igammac_(ember.tensor([1.0, 1.0, 1.0], dtype=ember.float64))
    t2.igammac_(torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64))
    check(e2, t2)
    eo, to = ember.empty(2, 3, dtype=ember.float64), torch.empty(2, 3, dtype=torch.float64)
    check(ember.igamma(ea, ex, out=eo), torch.igamma(ta, tx, out=to))
    for name in ("igamma", "igammac"):
        txg = tx.clone().requires_grad_(True)
        exg = ember.tensor(tx.numpy(), requires_grad=True)
        (tg,) = torch.autograd.grad(getattr(torch, name)(ta, txg).sum(), txg, create_graph=True)
        (eg,) = ember.autograd.grad(getattr(ember, name)(ea, exg).sum(), exg, create_graph=True)
        check(eg, tg)
        check(ember.autograd.grad(eg.sum(), exg)[0], torch.autograd.grad(tg.sum(), txg)[0])


def test_errors():
    same_error(lambda lib: lib.igamma(lib.tensor([1, 2]), lib.tensor([1, 2])))
    same_error(lambda lib: lib.igammac(lib.ones(2), lib.ones(3)))
    same_error(lambda lib: lib.igamma(lib.ones(2, requires_grad=True), lib.ones(2)).sum().backward())
    same_error(lambda lib: lib.igammac(lib.ones(2, requires_grad=True), lib.ones(2)).sum().backward())


def test_numbers_are_refused_as_torchs_parser_does():
    same_error(lambda lib: lib.igamma(lib.ones(2), 2.0))
    same_error(lambda lib: lib.igammac(2.0, lib.ones(2)))
    same_error(lambda lib: lib.special.gammainc(lib.ones(2), 2.0))
    same_error(lambda lib: lib.special.gammaincc(2, lib.ones(2)))
