"""The jitted (numba) random kernels give torch's numbers bit for bit, at the sizes where they run:
fills of 4096 elements and more, and every fill from 16 elements once numba is loaded. The other
tests use small sizes, which take the NumPy path in a fresh process; these take the jitted one."""
import pytest
import torch

import ember
from ember.kernels.cpu import random as _random

from rng_harness import assert_same

pytest.importorskip("numba", reason="the jitted random kernels need numba (pip install numba)")


@pytest.fixture
def jitted(monkeypatch):
    if not _random._numba():
        pytest.skip("EMBER_RNG_NUMBA=0 turns the jitted kernels off")
    monkeypatch.setattr(_random, "_NUMBA_MIN", 16)


@pytest.mark.parametrize("n", [16, 17, 64, 1000, 4111, 70001])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_randn_jitted(jitted, n, dtype):
    for seed in (0, 7):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        e = ember.randn(n, dtype=getattr(ember, dtype))
        t = torch.randn(n, dtype=getattr(torch, dtype))
        assert_same(e, t, f"randn({n}, {dtype}) seed {seed}")
        assert_same(ember.rand(3), torch.rand(3), "the stream after it")


@pytest.mark.parametrize("n", [300, 5000])
def test_randperm_and_normal_jitted(jitted, n):
    ember.manual_seed(3)
    torch.manual_seed(3)
    assert_same(ember.randperm(n), torch.randperm(n), f"randperm({n})")
    assert_same(ember.empty(n).normal_(0.5, 2.0), torch.empty(n).normal_(0.5, 2.0), "normal_")


def test_big_draws_by_default():
    """At the default bound (no monkeypatch): a 2**20 fill, uniform and dropout draws."""
    ember.manual_seed(11)
    torch.manual_seed(11)
    assert_same(ember.randn(1 << 20), torch.randn(1 << 20), "randn(2**20)")
    assert_same(ember.rand(1 << 16), torch.rand(1 << 16), "rand(2**16)")
    assert_same(ember.randint(0, 1000, (1 << 16,)), torch.randint(0, 1000, (1 << 16,)), "randint")
