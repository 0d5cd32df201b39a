"""ember.cuda (torch.cuda): devices, streams, events, memory statistics, seeding.

The runtime (devices, streams, memory) is ember/cuda/_runtime.py over numba.cuda, and the
backend's kernels are in ember/kernels/cuda: on a machine with a GPU and a driver,
numba.cuda.is_available() says so; with EMBER_CUDA_SIM=1 numba's CUDA simulator stands in for a
GPU, so the same code paths run anywhere (slowly: it runs each GPU thread in Python). Nothing
here imports numba until CUDA is first touched: `import ember` stays cheap.

Without either, this is torch.cuda on a build without CUDA: queries answer "nothing here"
(is_available() is False, device_count() is 0, memory counters are 0, seeding is a no-op) and
every call that needs a device raises AssertionError, as torch's lazy init does, with a message
that says what is missing. Tensor.cuda(), .to("cuda") and factories with device="cuda" raise the
same error: the check is registered as BackendSelect's "cuda" device check.

Each device has its own default generator, torch's CUDA engine (Philox4x32-10, a seed and an
offset: ember/core/philox.py), so after the same seed CUDA tensors get torch's CUDA values
(kernels/cuda/random.py says which ops and how exactly). ember.manual_seed seeds them all, as
torch.manual_seed does; ember.cuda.manual_seed seeds the current device's only.
"""
import os

from ember.core import generator as _gen
from ember.core.device import device as _device
from ember.cuda import _runtime
from ember.cuda.streams import Event, ExternalStream, Stream, StreamContext
from ember.dispatch.backend_select import device_checks

__all__ = ["is_available", "device_count", "is_initialized", "init", "current_device",
           "set_device", "device", "device_of", "get_device_name", "get_device_properties",
           "get_device_capability", "synchronize", "Stream", "Event", "ExternalStream",
           "current_stream", "default_stream", "set_stream", "stream", "StreamContext",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats",
           "empty_cache", "memory_stats", "memory_summary", "mem_get_info", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state",
           "get_rng_state_all", "set_rng_state_all", "is_bf16_supported", "get_arch_list",
           "OutOfMemoryError", "CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables",
           "is_current_stream_capturing"]

_lazy_init = _runtime.init              # torch.cuda._lazy_init
_device_index = _runtime.device_index   # torch.cuda._utils._get_device_index


def _check_device(dev):
    """ember._bindings device check: CUDA must be usable, and the index must exist."""
    _lazy_init()
    _runtime.normalize(dev)


device_checks["cuda"] = _check_device


# ---- queries -----------------------------------------------------------------------------------
def is_available():
    return _runtime.available()


def device_count():
    return _runtime.device_count()


def is_initialized():
    return _runtime.is_initialized()


def is_bf16_supported(including_emulation=True):
    return False  # bfloat16 tensors live on the device but compute through the host fallback


def get_arch_list():
    if not is_available() or _runtime.is_sim():
        return []
    return [f"sm_{a}{b}" for a, b in {get_device_capability(i) for i in range(device_count())}]


def init():
    _lazy_init()


def current_device():
    _lazy_init()
    return _runtime.current_index()


def set_device(device):
    idx = _index(device)
    if idx >= 0:
        _lazy_init()
        if idx >= device_count():
            raise _runtime._ordinal_error()
        _runtime.set_current_index(idx)


def _checked_index(device):
    _lazy_init()
    idx = _device_index(device)
    if idx < 0 or idx >= device_count():
        raise AssertionError("Invalid device id")
    return idx


class _CudaDeviceProperties:
    def __init__(self, name, major, minor, total_memory, multi_processor_count):
        self.name = name
        self.major = major
        self.minor = minor
        self.total_memory = total_memory
        self.multi_processor_count = multi_processor_count
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


_props = {}


def get_device_properties(device=None):
    idx = _checked_index(device)
    p = _props.get(idx)
    if p is None:
        c = _runtime.cuda()
        if _runtime.is_sim():
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            p = _CudaDeviceProperties("ember CUDA simulator (numba)", 0, 0, total, 1)
        else:
            with c.gpus[idx]:
                d = c.get_current_device()
                major, minor = d.compute_capability
                name = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
                total = c.current_context().get_memory_info()[1]
                p = _CudaDeviceProperties(name, major, minor, int(total),
                                          int(d.MULTIPROCESSOR_COUNT))
        _props[idx] = p
    return p


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def synchronize(device=None):
    """Wait for all kernels on all streams of the device to finish."""
    _lazy_init()
    _runtime.synchronize(_device_index(device))


def mem_get_info(device=None):
    """(free, total) bytes of device memory."""
    idx = _checked_index(device)
    if _runtime.is_sim():
        total = get_device_properties(idx).total_memory
        return total - memory_reserved(idx), total
    c = _runtime.cuda()
    with c.gpus[idx]:
        free, total = c.current_context().get_memory_info()
    return int(free), int(total)


# ---- streams -------------------------------------------------------------------------------------
def current_stream(device=None):
    _lazy_init()
    return _runtime.current_stream(_device_index(device))


def default_stream(device=None):
    _lazy_init()
    return _runtime.state(_device_index(device)).default_stream


def set_stream(stream):
    if stream is None:
        return
    _lazy_init()
    _runtime.set_current_stream(stream)


_StreamContext = StreamContext


def stream(stream):
    """Context manager selecting a stream; stream(None) does nothing."""
    return StreamContext(stream)


# ---- devices as contexts ---------------------------------------------------------------------------
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
            if self.idx >= device_count():
                raise _runtime._ordinal_error()
            self.prev_idx = _runtime.current_index()
            _runtime.set_current_index(self.idx)

    def __exit__(self, *args):
        if self.prev_idx != -1:
            _runtime.set_current_index(self.prev_idx)
            self.prev_idx = -1
        return False


class device_of(device):
    """Context manager selecting the device of a tensor (nothing for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


# ---- memory ------------------------------------------------------------------------------------
from ember.cuda.memory import (OutOfMemoryError, empty_cache, max_memory_allocated,  # noqa: E402
                               max_memory_reserved, memory_allocated, memory_reserved, memory_stats,
                               memory_summary, reset_accumulated_memory_stats,
                               reset_max_memory_allocated, reset_peak_memory_stats)


# ---- CUDA graphs ---------------------------------------------------------------------------------
from ember.cuda.graphs import (CUDAGraph, graph, graph_pool_handle,  # noqa: E402
                               is_current_stream_capturing, make_graphed_callables)


# ---- seeding: each device's default generator (Philox; see the module doc) ----------------------
def _generator(device=None):
    _lazy_init()
    if device is None:
        idx = current_device()
    elif isinstance(device, int):
        idx = device
    else:
        d = _device(device) if isinstance(device, str) else device
        idx = d.index if d.index is not None else current_device()
    return _gen.device_default_generator(_device("cuda", idx))


def manual_seed(seed):
    seed = int(seed)
    if not is_available():
        return
    _generator().manual_seed(seed)


def manual_seed_all(seed):
    seed = int(seed)
    if not is_available():
        return
    for i in range(device_count()):
        _generator(i).manual_seed(seed)


def seed():
    if is_available():
        _generator().seed()


def seed_all():
    if is_available():
        s = _generator().seed()
        for i in range(device_count()):
            _generator(i).manual_seed(s)


def initial_seed():
    return _generator().initial_seed()


def get_rng_state(device="cuda"):
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    _generator(device).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())] if is_available() else _lazy_init()


def set_rng_state_all(new_states):
    _lazy_init()
    for s in new_states:
        set_rng_state(s)


def __getattr__(name):
    # torch.cuda.amp, imported on first use (it pulls in ember.amp's scaler)
    if name == "default_generators":
        return tuple(_generator(i) for i in range(device_count())) if is_available() else ()
    if name == "amp":
        import importlib
        return importlib.import_module("ember.cuda.amp")
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")
