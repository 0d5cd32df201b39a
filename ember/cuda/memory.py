"""torch.cuda's memory API over one ember.core.allocator.CachingAllocator per device.

As in torch, asking for statistics does not initialise CUDA: before the first CUDA tensor the
counters read 0 and memory_stats() is empty.
"""
import collections

from ember.core.allocator import OutOfMemoryError  # noqa: F401 - torch.cuda.OutOfMemoryError
from ember.cuda import _runtime
from ember.cuda._runtime import device_index as _device_index, init as _lazy_init

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated",
           "reset_accumulated_memory_stats", "empty_cache", "memory_stats", "memory_summary",
           "OutOfMemoryError"]


def _alloc(device, init=False):
    """The allocator of a device, or None when CUDA (or that device) was never touched."""
    if init:
        _lazy_init()
    if not _runtime.is_initialized():
        return None
    idx = _device_index(device)
    st = _runtime._states.get(idx)
    if st is None:
        if init:
            st = _runtime.state(idx)
        else:
            return None
    return st.allocator


def memory_allocated(device=None):
    a = _alloc(device)
    return 0 if a is None else a.memory_allocated()


def max_memory_allocated(device=None):
    a = _alloc(device)
    return 0 if a is None else a.max_memory_allocated()


def memory_reserved(device=None):
    a = _alloc(device)
    return 0 if a is None else a.memory_reserved()


def max_memory_reserved(device=None):
    a = _alloc(device)
    return 0 if a is None else a.max_memory_reserved()


def memory_stats(device=None):
    a = _alloc(device)
    return collections.OrderedDict() if a is None else a.memory_stats()


def reset_peak_memory_stats(device=None):
    _alloc(device, init=True).reset_peak_memory_stats()


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    _alloc(device, init=True).reset_accumulated_memory_stats()


def memory_summary(device=None, abbreviated=False):
    a = _alloc(device, init=True)
    return a.memory_summary(device=_device_index(device), abbreviated=abbreviated)


def empty_cache():
    """Give every cached (unused) block back to the device."""
    if not _runtime.is_initialized():
        return
    for st in list(_runtime._states.values()):
        st.allocator.empty_cache()
