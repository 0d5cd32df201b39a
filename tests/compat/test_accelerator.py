"""torch.accelerator: with ember's CUDA off it answers as torch on a CPU-only build; on the
simulated CUDA backend it is CUDA."""
import warnings

import pytest
import torch

import ember
from harness import same_error


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(ember.cuda, "is_available", lambda: False)


def test_all_names():
    assert sorted(ember.accelerator.__all__) == sorted(torch.accelerator.__all__)
    for n in torch.accelerator.__all__:
        assert hasattr(ember.accelerator, n), n


def test_queries_without_accelerator(no_cuda):
    assert ember.accelerator.is_available() is torch.accelerator.is_available() is False
    assert ember.accelerator.current_accelerator() is torch.accelerator.current_accelerator() is None
    assert ember.accelerator.current_accelerator(check_available=True) is None
    assert ember.accelerator.device_count() == torch.accelerator.device_count() == 0


NEEDS_DEVICE = ["current_device_index", "synchronize", "current_stream", "empty_cache",
                "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
                "get_memory_info", "empty_host_cache", "get_device_capability"]


@pytest.mark.parametrize("name", NEEDS_DEVICE)
def test_errors_without_accelerator(no_cuda, name):
    same_error(lambda lib: getattr(lib.accelerator, name)())


@pytest.mark.parametrize("arg", [0, "cpu", "cuda", "cuda:1", 1.5])
@pytest.mark.parametrize("name", ["set_device_index", "synchronize", "current_stream", "memory_stats"])
def test_device_argument_errors(no_cuda, name, arg):
    def f(lib):
        a = lib.device(arg) if arg == "cpu" else arg
        getattr(lib.accelerator, name)(a)
    same_error(f)


def test_set_device_index_none(no_cuda):
    same_error(lambda lib: lib.accelerator.set_device_index(None))


def test_device_index_context(no_cuda):
    for lib in (torch, ember):
        with lib.accelerator.device_index(None):
            pass
    def f(lib):
        with lib.accelerator.device_index(0):
            pass
    same_error(f)


def test_deprecated_names(no_cuda):
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="Use `current_device_index` instead."):
            with pytest.raises(RuntimeError):
                lib.accelerator.current_device_idx()


def test_simulated_cuda_is_the_accelerator():
    if not ember.cuda.is_available():
        pytest.skip("ember's CUDA backend is off (set EMBER_CUDA_SIM=1 or use a GPU)")
    acc = ember.accelerator
    assert acc.is_available()
    assert acc.current_accelerator() == ember.device("cuda")
    assert acc.current_accelerator().index is None
    assert acc.device_count() == ember.cuda.device_count() >= 1
    assert acc.current_device_index() == ember.cuda.current_device()
    acc.set_device_index(0)
    acc.synchronize()
    acc.synchronize("cuda:0")
    assert acc.current_stream() is not None
    x = ember.ones(4, device=acc.current_accelerator())
    assert x.device.type == "cuda"
    assert acc.memory_allocated() >= 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert acc.current_device_idx() == 0
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator cuda."):
        acc.synchronize("cpu")
    with acc.device_index(0):
        assert acc.current_device_index() == 0
