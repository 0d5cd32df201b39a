"""grid_sampler_2d/3d, _native_batch_norm_legit and empty_permuted (thin compositions) against torch 2.13:
OpInfo samples (float32 values, float64 gradients), strides of empty_permuted, running-stat updates and
error texts."""
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error


@pytest.mark.parametrize("name", ["grid_sampler_2d", "grid_sampler_3d", "_native_batch_norm_legit"])
def test_opinfo(name):
    for op in opinfos(names={name}):
        assert run_samples(op, torch.float32, atol=1e-4, rtol=1e-4)
        assert run_samples(op, torch.float64, grad=op.supports_autograd, max_samples=8)


def test_native_batch_norm_legit_running_stats():
    t = torch.randn(4, 3, 5, dtype=torch.float64)
    e = ember.tensor(t.numpy())
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    erm, erv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    for a, b in zip(ember._native_batch_norm_legit(e, None, None, erm, erv, True, 0.1, 1e-5),
                    torch._native_batch_norm_legit(t, None, None, trm, trv, True, 0.1, 1e-5)):
        check(a, b)
    check(erm, trm)
    check(erv, trv)
    for a, b in zip(ember._native_batch_norm_legit(e, None, None, True, 0.1, 1e-5),
                    torch._native_batch_norm_legit(t, None, None, True, 0.1, 1e-5)):
        check(a, b)


def test_empty_permuted():
    # zero-size cases are left out: ember's permute of a zero-size tensor reports strides 0 (an ember view
    # metadata deviation outside this file's ops)
    for size, perm in (((2, 3, 4), (2, 0, 1)), ((2, 3), (1, 0)), ((), ())):
        e = ember.empty_permuted(size, perm, dtype=ember.float64)
        t = torch.empty_permuted(size, perm, dtype=torch.float64)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride() and e.dtype == ember.float64
    assert ember.empty_permuted((2, 3), (1, 0), requires_grad=True).requires_grad
    same_error(lambda lib: lib.empty_permuted((2, 3), (0,)))
    same_error(lambda lib: lib.empty_permuted((2, 3), (0, 0)))
    same_error(lambda lib: lib.empty_permuted((2, 3), (0, 5)))
