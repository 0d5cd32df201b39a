"""quantile / nanquantile (compositions: sort, gather, lerp) against torch 2.13: OpInfo samples (float32
values, float64 gradients for input and q), every interpolation, NaN handling, shapes and error texts."""
import math

import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_opinfo(name):
    for op in opinfos(names={name}):
        assert run_samples(op, torch.float32, max_samples=100)
        assert run_samples(op, torch.float64, grad=True, max_samples=100)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_interpolation_and_nan(name, interpolation):
    t = torch.tensor([[1.0, 5.0, 2.0, 8.0, 2.5], [3.0, math.nan, 4.0, 0.0, 1.0], [math.nan] * 5])
    e = ember.tensor(t.numpy())
    tq, eq = torch.tensor([0.0, 0.25, 0.5, 0.625, 1.0]), ember.tensor([0.0, 0.25, 0.5, 0.625, 1.0])
    for dim, keepdim in ((None, False), (None, True), (1, False), (0, True), (-1, True)):
        tf, ef = getattr(torch, name), getattr(ember, name)
        check(ef(e, eq, dim, keepdim, interpolation=interpolation), tf(t, tq, dim, keepdim, interpolation=interpolation))
        check(ef(e, 0.375, dim, keepdim, interpolation=interpolation),
              tf(t, 0.375, dim, keepdim, interpolation=interpolation))
    check(getattr(e, name)(0.5), getattr(t, name)(0.5))
    check(getattr(ember, name)(ember.tensor(2.5), 0.3), getattr(torch, name)(torch.tensor(2.5), 0.3))


def test_errors():
    def x(lib):
        return lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    same_error(lambda lib: lib.quantile(x(lib), 1.5))
    same_error(lambda lib: lib.nanquantile(x(lib), -0.1))
    same_error(lambda lib: lib.quantile(x(lib).long(), 0.5))
    same_error(lambda lib: lib.quantile(x(lib), lib.tensor([0.5], dtype=lib.float64)))
    same_error(lambda lib: lib.quantile(x(lib), 0.5, interpolation="foo"))
    same_error(lambda lib: lib.quantile(lib.empty(0), 0.5))
    same_error(lambda lib: lib.quantile(x(lib), lib.ones(2, 2) / 2))
    same_error(lambda lib: lib.quantile(x(lib), lib.tensor([0.5, 2.0])))
    same_error(lambda lib: lib.quantile(x(lib), 0.5, dim=3))
    same_error(lambda lib: lib.nanquantile(lib.empty(0), 0.5))
    same_error(lambda lib: lib.nanquantile(x(lib), lib.tensor([2.0])))
