"""ember.cuda without a CUDA backend: torch.cuda's answers on a CPU-only build.

Run by test_cuda_unavailable.py in a fresh interpreter with EMBER_CUDA_SIM=0 (not collected
by itself: the rest of tests/cuda turns the simulator on)."""
import collections

import pytest

import ember
import torch

MSG = "Torch not compiled with CUDA enabled"

pytestmark = pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA device is present")

NEEDS_DEVICE = [
    ("current_device", lambda c: c.current_device()),
    ("get_device_name", lambda c: c.get_device_name()),
    ("get_device_properties", lambda c: c.get_device_properties(0)),
    ("get_device_capability", lambda c: c.get_device_capability()),
    ("synchronize", lambda c: c.synchronize()),
    ("current_stream", lambda c: c.current_stream()),
    ("default_stream", lambda c: c.default_stream()),
    ("init", lambda c: c.init()),
    ("initial_seed", lambda c: c.initial_seed()),
    ("get_rng_state", lambda c: c.get_rng_state()),
    ("tensor_cuda", lambda c: (ember if c is ember.cuda else torch).ones(2).cuda()),
    ("to_cuda", lambda c: (ember if c is ember.cuda else torch).ones(2).to("cuda")),
    ("to_cuda_dev", lambda c: (ember if c is ember.cuda else torch).ones(2).to(
        (ember if c is ember.cuda else torch).device("cuda:0"))),
    ("zeros_cuda", lambda c: (ember if c is ember.cuda else torch).zeros(2, device="cuda")),
    ("tensor_cuda_factory", lambda c: (ember if c is ember.cuda else torch).tensor(
        [1.0], device="cuda:1")),
]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the oracle has CUDA")
@pytest.mark.parametrize("name,fn", NEEDS_DEVICE, ids=[n for n, _ in NEEDS_DEVICE])
def test_needs_device_raises(name, fn):
    with pytest.raises(AssertionError, match=MSG):
        fn(torch.cuda)
    with pytest.raises(AssertionError) as e:
        fn(ember.cuda)
    msg = str(e.value)
    assert msg.startswith(MSG)
    assert "no CUDA backend" in msg and "numba" in msg and "EMBER_CUDA_SIM=1" in msg


EMBER_ONLY = [  # torch fails these with internal errors (AttributeError, KeyError, RuntimeError)
    lambda c: c.set_device(0),
    lambda c: c.device(0).__enter__(),
    lambda c: c.Stream(),
    lambda c: c.Event(),
    lambda c: c.stream(object()).__enter__(),
    lambda c: c.reset_peak_memory_stats(),
    lambda c: c.memory_summary(),
    lambda c: c.mem_get_info(),
    lambda c: ember.ones(2).cuda(1),  # torch: "Cannot access accelerator device ..."
]


@pytest.mark.parametrize("fn", EMBER_ONLY)
def test_needs_device_raises_ember(fn):
    with pytest.raises(AssertionError, match=MSG):
        fn(ember.cuda)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the oracle has CUDA")
def test_queries():
    for c in (torch.cuda, ember.cuda):
        assert c.is_available() is False
        assert c.device_count() == 0
        assert c.is_initialized() is False
        assert c.is_bf16_supported() is False
        assert c.get_arch_list() == []
        for f in (c.memory_allocated, c.max_memory_allocated, c.memory_reserved,
                  c.max_memory_reserved):
            assert f() == 0
        assert c.memory_stats() == collections.OrderedDict()
        assert c.empty_cache() is None
        assert c.manual_seed(0) is None and c.manual_seed_all(1) is None and c.seed() is None
        with c.stream(None):
            pass
        with c.device(-1):
            pass
        with c.device_of(ember.ones(1) if c is ember.cuda else torch.ones(1)):
            pass


def test_nothing_else_breaks():
    with ember.cuda.device(None):  # torch fails inside its own __exit__ here
        pass
    t = ember.arange(3.0)
    assert not t.is_cuda
    assert t.cpu() is t
    assert t.to("cpu") is t
    assert t.to("meta").device == ember.device("meta")
    assert ember.device("cuda:1").type == "cuda"  # devices still parse
    assert ember.zeros(2, device="cpu").tolist() == [0.0, 0.0]
    # a failed attempt leaves nothing cached: a second one raises the same way
    for _ in range(2):
        with pytest.raises(AssertionError, match=MSG):
            ember.empty(1, device="cuda")
    assert (t + 1).tolist() == [1.0, 2.0, 3.0]


def test_load_cuda_checkpoint_message():
    import io
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf)
    with pytest.raises(RuntimeError, match="is_available"):
        ember.load(io.BytesIO(buf.getvalue()), map_location="cuda")
