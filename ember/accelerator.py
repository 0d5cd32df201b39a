"""ember.accelerator (torch.accelerator): the current accelerator, device-agnostic.

ember's one accelerator is CUDA (numba.cuda on a GPU, or its simulator with EMBER_CUDA_SIM=1).
Without either, this is torch.accelerator on a CPU-only build: current_accelerator() is None,
is_available() is False, device_count() is 0, and everything that needs a device raises torch's
RuntimeError("Cannot access accelerator device when none is available.").
"""
import warnings
from collections import OrderedDict

from ember.core.device import device as _device

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index",
           "get_device_capability", "current_stream", "device_count", "device_index", "empty_cache",
           "empty_host_cache", "get_memory_info", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _cuda():
    from ember import cuda  # lazy: ember.cuda imports numba only when first touched
    return cuda


def _acc():
    """The accelerator's device module, or RuntimeError as torch's C++ side raises."""
    if current_accelerator() is None:
        raise RuntimeError(_NONE)
    return _cuda()


def _get_device_index(device, optional=False):
    # torch/accelerator/_utils.py
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _device(device)
    device_index = None
    if isinstance(device, _device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        device_index = device.index
    if device_index is None:
        if not optional:
            raise ValueError(
                f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return current_device_index()
    return device_index


def current_accelerator(check_available=False):
    """The accelerator's device (index None), or None when there is none."""
    if _cuda().is_available():
        return _device("cuda")
    return None


def is_available():
    return current_accelerator() is not None and _cuda().is_available()


def device_count():
    if current_accelerator() is None:
        return 0
    return _cuda().device_count()


def current_device_index():
    return _acc().current_device()


def current_device_idx():
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /):
    idx = _get_device_index(device, optional=False)
    cuda = _acc()
    if idx >= 0:
        cuda.set_device(idx)


def set_device_idx(device, /):
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    return set_device_index(device)


def get_device_capability(device=None, /):
    idx = _get_device_index(device, optional=True)
    _acc()
    from ember.core import dtype as d  # lazy: keeps the module's import list to the device type
    return {"supported_dtypes": {d.float16, d.float32, d.float64, d.bfloat16, d.int8, d.int16,
                                 d.int32, d.int64, d.uint8, d.bool_, d.complex64, d.complex128}
            if idx >= 0 else set()}


def current_stream(device=None, /):
    idx = _get_device_index(device, optional=True)
    return _acc().current_stream(idx)


def set_stream(stream):
    cuda = _acc()
    if stream is None:
        raise TypeError("_accelerator_setStream(): incompatible function arguments. The following "
                        "argument types are supported:\n    1. (arg0: torch.Stream) -> None\n\n"
                        "Invoked with: None")
    cuda.set_device(stream.device_index)
    cuda.set_stream(stream)


def synchronize(device=None, /):
    idx = _get_device_index(device, optional=True)
    _acc().synchronize(idx)


class device_index:
    """Context manager: select a device index for the block, restore the previous one after."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            cuda = _acc()
            self.prev_idx = cuda.current_device()
            cuda.set_device(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx >= 0:
            _cuda().set_device(self.prev_idx)


class Graph:
    """torch.accelerator.Graph: stream capture needs a device."""

    def __init__(self, *args, **kwargs):
        _acc()
        raise NotImplementedError("ember.accelerator.Graph: CUDA graph capture is not implemented")


# ---- memory (torch/accelerator/memory.py) ------------------------------------------------------
def empty_cache():
    cuda = _acc()
    if cuda.is_initialized():
        cuda.empty_cache()


def empty_host_cache():
    _acc()


def memory_stats(device_index=None, /):
    cuda = _acc()
    if not cuda.is_initialized():
        return OrderedDict()
    idx = _get_device_index(device_index, optional=True)
    return OrderedDict(sorted(cuda.memory_stats(idx).items()))


def memory_allocated(device_index=None, /):
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /):
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /):
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index=None, /):
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def reset_accumulated_memory_stats(device_index=None, /):
    cuda = _acc()
    if cuda.is_initialized():
        cuda.reset_accumulated_memory_stats(_get_device_index(device_index, optional=True))


def reset_peak_memory_stats(device_index=None, /):
    cuda = _acc()
    if cuda.is_initialized():
        cuda.reset_peak_memory_stats(_get_device_index(device_index, optional=True))


def get_memory_info(device_index=None, /):
    idx = _get_device_index(device_index, optional=True)
    return _acc().mem_get_info(idx)
