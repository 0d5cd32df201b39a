"""torch.masked.* (ember/masked) against torch 2.13: the OpInfo samples (float32 values, int64,
float64 gradients), mask broadcasting, identities and errors."""
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error

NAMES = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp",
         "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]


def _op(name):
    ops = opinfos(names={f"masked.{name}"})
    assert ops, name
    return ops


@pytest.mark.parametrize("name", NAMES)
def test_samples_float32(name):
    for op in _op(name):
        assert run_samples(op, torch.float32, max_samples=30, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_samples_int64(name):
    for op in _op(name):
        if torch.int64 in op.supported_dtypes("cpu"):
            run_samples(op, torch.int64, max_samples=15)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_float64(name):
    for op in _op(name):
        if op.supports_autograd:
            run_samples(op, torch.float64, grad=True, max_samples=12)


def test_namespace():
    for n in NAMES:
        assert callable(getattr(ember.masked, n))


def test_broadcast_mask_and_fully_masked():
    x = torch.randn(3, 4)
    m = torch.tensor([True, False, True, False])
    ex, em = ember.tensor(x.numpy()), ember.tensor(m.numpy())
    check(ember.masked.sum(ex, 1, mask=em), torch.masked.sum(x, 1, mask=m))
    check(ember.masked.amax(ex, 0, keepdim=True, mask=em), torch.masked.amax(x, 0, keepdim=True, mask=m))
    check(ember.masked.mean(ex, 1, mask=em), torch.masked.mean(x, 1, mask=m))
    check(ember.masked.softmax(ex, 1, mask=em), torch.masked.softmax(x, 1, mask=m))
    z = torch.zeros(3, 4, dtype=torch.bool)
    check(ember.masked.mean(ex, 1, mask=ember.tensor(z.numpy())), torch.masked.mean(x, 1, mask=z))
    check(ember.masked.amin(ex, 1, mask=ember.tensor(z.numpy())), torch.masked.amin(x, 1, mask=z))


def test_errors():
    def mk(lib):
        return lib.ones(2, 3)
    same_error(lambda lib: lib.masked.mean(mk(lib).long()))
    same_error(lambda lib: lib.masked.sum(mk(lib), (0, 0)))
    same_error(lambda lib: lib.masked.sum(mk(lib), 5))
    same_error(lambda lib: lib.masked.sum(mk(lib), mask=lib.ones(1, 2, 3, dtype=lib.bool)))
    same_error(lambda lib: lib.masked.median(lib.ones(2, 3, dtype=lib.int64), 1,
                                             mask=lib.zeros(2, 3, dtype=lib.bool)))
