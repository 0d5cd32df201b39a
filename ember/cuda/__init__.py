"""ember.cuda (torch.cuda) when no CUDA backend is registered.

The surface of torch.cuda on a build without CUDA: queries answer "nothing here" (is_available()
is False, device_count() is 0, memory counters are 0, seeding is a no-op) and every call that
needs a device raises AssertionError, as torch's lazy init does, with a message that says what is
missing. Tensor.cuda(), .to("cuda") and factories with device="cuda" raise the same error: the
check is registered as the "cuda" device check of ember._bindings.
"""
import collections
import importlib.util
import os

from ember import _bindings
from ember.core.device import device as _device

__all__ = ["is_available", "device_count", "is_initialized", "init", "current_device",
           "set_device", "device", "device_of", "get_device_name", "get_device_properties",
           "get_device_capability", "synchronize", "Stream", "Event", "current_stream",
           "default_stream", "stream", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "empty_cache", "memory_stats", "memory_summary",
           "mem_get_info", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
           "is_bf16_supported", "get_arch_list"]

_TORCH_MSG = "Torch not compiled with CUDA enabled"


def _unavailable_message():
    why = ("needs numba with a GPU and a driver, or EMBER_CUDA_SIM=1 with numba's simulator")
    if importlib.util.find_spec("numba") is None:
        why += "; numba is not installed"
    elif os.environ.get("EMBER_CUDA_SIM") != "1":
        why += "; EMBER_CUDA_SIM is not set"
    return f"{_TORCH_MSG}: ember has no CUDA backend registered ({why})"


def _lazy_init():
    raise AssertionError(_unavailable_message())


def _check_device(dev):
    """ember._bindings device check: a tensor cannot be made on a CUDA device."""
    _lazy_init()


# a real CUDA backend, registered before this module, keeps its own check
_bindings._device_checks.setdefault("cuda", _check_device)


# ---- queries that need no device ---------------------------------------------------------------
def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def get_arch_list():
    return []


# ---- calls that need a device ------------------------------------------------------------------
def init():
    _lazy_init()


def current_device():
    _lazy_init()


def set_device(device):
    idx = _index(device)
    if idx >= 0:
        _lazy_init()


def get_device_name(device=None):
    _lazy_init()


def get_device_properties(device=None):
    _lazy_init()


def get_device_capability(device=None):
    _lazy_init()


def synchronize(device=None):
    _lazy_init()


def current_stream(device=None):
    _lazy_init()


def default_stream(device=None):
    _lazy_init()


def mem_get_info(device=None):
    _lazy_init()


def reset_peak_memory_stats(device=None):
    _lazy_init()


def reset_max_memory_allocated(device=None):
    _lazy_init()


def memory_summary(device=None, abbreviated=False):
    _lazy_init()


def get_rng_state(device="cuda"):
    _lazy_init()


def set_rng_state(new_state, device="cuda"):
    _lazy_init()


def get_rng_state_all():
    _lazy_init()


def set_rng_state_all(new_states):
    _lazy_init()


def initial_seed():
    _lazy_init()


# ---- seeding: a no-op without devices, as in torch ---------------------------------------------
def manual_seed(seed):
    int(seed)


def manual_seed_all(seed):
    int(seed)


def seed():
    pass


def seed_all():
    pass


# ---- memory counters: nothing allocated ----------------------------------------------------------
def memory_stats(device=None):
    return collections.OrderedDict()


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def empty_cache():
    pass


# ---- device and stream contexts ------------------------------------------------------------------
def _index(dev):
    if dev is None:
        return -1
    if isinstance(dev, str):
        dev = _device(dev)
    if isinstance(dev, _device):
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        return -1 if dev.index is None else dev.index
    return int(dev)


class device:
    """Context manager that selects a CUDA device; device(None) or -1 does nothing."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx != -1:
            _lazy_init()

    def __exit__(self, *args):
        return False


class device_of(device):
    """Context manager selecting the device of a tensor (nothing for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


class Stream:
    def __new__(cls, *args, **kwargs):
        _lazy_init()


class Event:
    def __new__(cls, *args, **kwargs):
        _lazy_init()


class _StreamContext:
    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            _lazy_init()

    def __exit__(self, *args):
        return False


def stream(stream):
    """Context manager selecting a stream; stream(None) does nothing."""
    return _StreamContext(stream)
