"""torch's CUDA random streams (core/philox.py, kernels/cuda/random.py) on the simulator.

The reference values are facts read from torch 2.11 on an NVIDIA H200 (132 SMs, 2048 threads per
SM), after torch.cuda.manual_seed(seed); ember's simulator uses the same grid limits. Philox's
known-answer vectors are Random123's (Salmon et al., SC'11). On a machine with a real GPU and
torch built with CUDA, test_against_torch_on_this_gpu compares with torch directly."""
import numpy as np
import pytest

import ember
from ember.core import philox

C = "cuda"


def _np(t):
    return t.cpu().numpy()


def test_philox_known_answers():
    assert [int(x) for x in philox.philox(0, 0, 0, 0, 0, 0)] == \
        [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    f = 0xFFFFFFFF
    assert [int(x) for x in philox.philox(f, f, f, f, f, f)] == \
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert [int(x) for x in philox.philox(0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344,
                                          0xA4093822, 0x299F31D0)] == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_policy_is_atens():
    # 256-thread blocks, at most 132 * 8 of them on an H200; the offset counts 4 per loop trip
    assert philox.policy(1, 4) == (4, 256)
    assert philox.policy(1000, 4) == (4, 1024)
    assert philox.policy(270336 * 4, 4) == (4, 270336)
    assert philox.policy(270336 * 4 + 1, 4) == (8, 270336)
    assert philox.policy(270336 * 2 + 1, 2) == (8, 270336)


RAND0 = [0.39904648065567017, 0.5166791677474976, 0.024930385872721672, 0.940079391002655,
         0.945854127407074, 0.7967312335968018, 0.4150141179561615, 0.8202569484710693]


def test_rand_float32_is_torchs():
    ember.cuda.manual_seed(0)
    np.testing.assert_array_equal(_np(ember.rand(8, device=C)), np.array(RAND0, np.float32))


def test_rand_float64_and_big_sizes():
    ember.cuda.manual_seed(123)
    np.testing.assert_array_equal(_np(ember.rand(4, device=C, dtype=ember.float64)),
                                  [0.4023321459789276, 0.3958088713632885, 0.711563603250652,
                                   0.448783838478849])


def test_rand_two_trips_of_the_full_grid():
    ember.cuda.manual_seed(0)
    a = _np(ember.rand(2000003, device=C))
    np.testing.assert_array_equal(a[[0, 613000, 1839000, 1999606]],
                                  np.array([0.39904648065567017, 0.09754393249750137,
                                            0.17544640600681305, 0.6852635145187378], np.float32))
    assert ember.cuda.get_rng_state()[8].item() == 8  # two loop trips: offset 8


def test_integers_and_bernoulli_are_torchs():
    ember.cuda.manual_seed(1)
    assert ember.randint(0, 10, (16,), device=C).tolist() == \
        [2, 0, 9, 7, 6, 6, 1, 1, 3, 9, 8, 4, 9, 9, 8, 6]
    ember.cuda.manual_seed(0)
    assert ember.empty(4, device=C, dtype=ember.int64).random_(-2 ** 63, None).tolist() == \
        [7361108121267848589, -8915695827162403158, 459884446619952985, -1105340430681598280]
    ember.cuda.manual_seed(0)
    assert ember.randint(-5, 2 ** 40, (4,), device=C).tolist() == \
        [918576365056, 970360100156, 514161016358, 807666010497]
    ember.cuda.manual_seed(0)
    assert ember.empty(16, device=C).bernoulli_(0.3).tolist() == \
        [0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 1]
    ember.cuda.manual_seed(0)
    assert ember.empty(5, device=C).geometric_(0.3).tolist() == [3, 2, 11, 1, 1]


def test_uniform_half_is_torchs():
    ember.cuda.manual_seed(0)
    assert ember.empty(5, device=C, dtype=ember.float16).uniform_(-2, 3).tolist() == \
        [-0.00476837158203125, 0.58349609375, -1.875, 2.701171875, 2.728515625]


def test_normal_within_the_stated_bound():
    # the GPU's __logf / __sincosf are replayed with accurate functions: within 3e-6 (float32)
    ember.cuda.manual_seed(0)
    np.testing.assert_allclose(_np(ember.randn(4, device=C)),
                               [-0.9246624112129211, -0.42534422874450684, -2.643845796585083,
                                0.14518386125564575], rtol=0, atol=3e-6)
    ember.cuda.manual_seed(0)
    np.testing.assert_allclose(_np(ember.randn(4, device=C, dtype=ember.float64)),
                               [-0.3103957360003765, -0.03432813230409514, 0.17559472731904127,
                                -2.2803814347037816], rtol=4e-15, atol=0)


def test_non_contiguous_outputs_fill_in_memory_order():
    ember.cuda.manual_seed(5)
    ref = _np(ember.rand(2112, device=C))
    ember.cuda.manual_seed(5)
    a = ember.empty(33, 64, device=C).t()
    a.uniform_()
    np.testing.assert_array_equal(_np(a.t()).reshape(-1), ref)


def test_state_bytes_offsets_and_round_trip():
    ember.cuda.manual_seed(7)
    st = ember.cuda.get_rng_state()
    assert st.dtype == ember.uint8 and st.tolist() == [7] + [0] * 15
    ember.rand(10, device=C)                      # one trip: offset 4
    ember.randn(3, device=C, dtype=ember.float64)
    assert ember.cuda.get_rng_state()[8].item() == 8
    saved = ember.cuda.get_rng_state()
    a = _np(ember.rand(100, device=C))
    ember.cuda.set_rng_state(saved)
    np.testing.assert_array_equal(_np(ember.rand(100, device=C)), a)
    assert ember.cuda.initial_seed() == 7
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        ember.cuda.set_rng_state(ember.zeros(5, dtype=ember.uint8))
    bad = saved.clone()
    bad[8] = 6
    with pytest.raises(RuntimeError, match="offset must be a multiple of 4"):
        ember.cuda.set_rng_state(bad)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        ember.cuda.set_rng_state(ember.zeros(16))


def test_generators_and_seeding():
    g = ember.Generator(device=C)
    assert g.initial_seed() == 67280421310721 and g.get_state().numel() == 16
    g.manual_seed(0)
    np.testing.assert_array_equal(_np(ember.rand(8, device=C, generator=g)),
                                  np.array(RAND0, np.float32))
    assert g.get_offset() == 4
    ember.manual_seed(0)                          # torch.manual_seed seeds every device too
    np.testing.assert_array_equal(_np(ember.rand(8, device=C)), np.array(RAND0, np.float32))
    assert ember.cuda.default_generators[0].initial_seed() == 0
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        ember.rand(3, device=C, generator=ember.Generator())
    # ops the backend runs on the host draw from a generator seeded by the device's state
    ember.cuda.manual_seed(3)
    p1 = ember.randperm(40000, device=C)
    ember.cuda.manual_seed(3)
    p2 = ember.randperm(40000, device=C)
    assert p1.device.type == "cuda" and ember.equal(p1, p2)


def test_small_randperm_uses_the_cpu_generator():
    # torch's CUDA randperm runs randperm_cpu on the default CPU generator below 30000
    ember.manual_seed(11)
    a = ember.randperm(50)
    ember.manual_seed(11)
    assert ember.randperm(50, device=C).tolist() == a.tolist()


def test_against_torch_on_this_gpu():
    torch = pytest.importorskip("torch")
    from ember.cuda import _runtime
    if _runtime.is_sim() or not torch.cuda.is_available():
        pytest.skip("needs a real GPU for both ember and torch")
    for seed in (0, 1):
        for n in (5, 1025, 1081345):
            torch.cuda.manual_seed(seed)
            ember.cuda.manual_seed(seed)
            t = torch.rand(n, device="cuda").cpu().numpy()
            np.testing.assert_array_equal(_np(ember.rand(n, device=C)), t)
            assert ember.cuda.get_rng_state().tolist() == torch.cuda.get_rng_state().tolist()


def test_transformed_distributions_within_the_stated_bounds():
    # torch's float32 kernels use the GPU's fast __logf / __tanf (the simulator: accurate ones)
    cases = [("exponential_", (1.5,), 0, ember.float32, [0.6124515533447266, 0.4402220845222473,
                                                          2.4611117839813232, 0.04119393974542618]),
             ("cauchy_", (0.5, 1.2), 0, ember.float32, [0.10611830651760101, 0.5629364252090454,
                                                         -14.790194511413574, 6.799166679382324]),
             ("log_normal_", (0.5, 1.2), 0, ember.float32, [0.5435710549354553, 0.9896408915519714,
                                                             0.06907135993242264, 1.9625028371810913]),
             ("exponential_", (1.5,), 1, ember.float64, [0.07418948986507984, 0.8985566349792539,
                                                          0.3979486415780378, 0.09830992076123092])]
    for name, args, seed, dtype, ref in cases:
        ember.cuda.manual_seed(seed)
        t = getattr(ember.empty(4, device=C, dtype=dtype), name)(*args)
        np.testing.assert_allclose(_np(t), ref, rtol=2e-6 if dtype == ember.float32 else 1e-15, atol=0)
