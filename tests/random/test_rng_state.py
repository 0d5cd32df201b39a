"""Issue 15: generator state is torch's CPUGeneratorImplState byte for byte (5056 bytes), so a state
saved by one library restores in the other and the stream continues identically."""
import pickle

import numpy as np
import pytest
import torch
from harness import same_error
from rng_harness import assert_same, same_state

import ember


def _draws(L):
    return [L.randn(3), L.rand(17), L.randn(40), L.randint(0, 10 ** 6, (9,)),
            L.randn(5, dtype=L.float64), L.randperm(12)]


def _warm(L):
    """Leave the generator mid-stream with a cached double normal sample."""
    L.rand(7)
    L.randn(3, dtype=L.float64)


@pytest.mark.parametrize("seed", [0, 3, 2 ** 40 + 11])
def test_torch_state_restores_in_ember(seed):
    torch.manual_seed(seed)
    _warm(torch)
    st = torch.get_rng_state()
    assert st.numel() == 5056
    ember.set_rng_state(ember.from_numpy(st.numpy().copy()))
    assert np.array_equal(ember.get_rng_state().numpy(), st.numpy())
    assert_same(_draws(ember), _draws(torch))
    same_state()


@pytest.mark.parametrize("seed", [0, 5, 2 ** 63])
def test_ember_state_restores_in_torch(seed):
    ember.manual_seed(seed)
    _warm(ember)
    st = ember.get_rng_state()
    assert st.dtype is ember.uint8 and tuple(st.shape) == (5056,)
    torch.set_rng_state(torch.from_numpy(st.numpy().copy()))
    assert_same(_draws(ember), _draws(torch))
    same_state()


def test_state_after_seed_and_at_twist_boundary():
    for n in [0, 623, 624, 625, 1248]:
        torch.manual_seed(1)
        ember.manual_seed(1)
        if n:
            torch.randint(0, 10, (n,))
            ember.randint(0, 10, (n,))
        same_state()
        st = ember.get_rng_state()
        torch.set_rng_state(torch.from_numpy(st.numpy().copy()))
        ember.set_rng_state(st)
        assert_same(ember.rand(5), torch.rand(5))


def test_generator_objects_state_round_trip():
    g, h = ember.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    assert g.manual_seed(9) is g
    ember.randn(3, generator=g, dtype=ember.float64)
    torch.randn(3, generator=h, dtype=torch.float64)
    assert_same(g.get_state(), h.get_state())
    h2 = torch.Generator()
    h2.set_state(torch.from_numpy(g.get_state().numpy().copy()))
    g2 = ember.Generator()
    g2.set_state(ember.from_numpy(h.get_state().numpy().copy()))
    assert_same(ember.randn(30, generator=g2), torch.randn(30, generator=h2))
    assert g2.initial_seed() == h2.initial_seed() == 9


def test_float_sample_flag_round_trips():
    """The cached float normal sample (byte 5048..5052) survives a round trip."""
    torch.manual_seed(0)
    st = torch.get_rng_state().numpy().copy()
    st[5048:5052] = np.frombuffer(np.float32(0.25).tobytes(), np.uint8)
    st[5052] = 1
    ember.set_rng_state(ember.from_numpy(st.copy()))
    assert np.array_equal(ember.get_rng_state().numpy(), st)


def test_set_state_errors():
    same_error(lambda L: L.set_rng_state(L.zeros(48, dtype=L.uint8)))
    same_error(lambda L: L.set_rng_state(L.zeros(5056, dtype=L.float32)))
    bad = torch.get_rng_state().numpy().copy()
    bad[8:12] = 0  # left == 0: not a valid mt19937 state
    same_error(lambda L: L.set_rng_state(L.from_numpy(bad.copy())))


def test_fork_rng_and_default_generator():
    ember.manual_seed(4)
    torch.manual_seed(4)
    with ember.random.fork_rng():
        ember.randn(100)
    with torch.random.fork_rng():
        torch.randn(100)
    assert_same(ember.randn(5), torch.randn(5))
    assert ember.default_generator.initial_seed() == torch.default_generator.initial_seed() == 4
    assert ember.random.initial_seed() == 4
    assert_same(ember.random.get_rng_state(), torch.random.get_rng_state())


def test_clone_and_pickle_keep_the_stream():
    g = ember.Generator().manual_seed(11)
    ember.rand(5, generator=g)
    c = g.clone_state()
    p = pickle.loads(pickle.dumps(g))
    a = ember.randn(20, generator=g)
    assert ember.equal(ember.randn(20, generator=c), a)
    assert ember.equal(ember.randn(20, generator=p), a)


def test_seed_returns_a_53_bit_seed_and_reseeds():
    s = ember.seed()
    assert 0 <= s < 2 ** 53 and ember.initial_seed() == s
    torch.manual_seed(s)
    assert_same(ember.rand(4), torch.rand(4))
