"""An asynchronous device for ember, built the way an out-of-tree PyTorch backend is: through the
PrivateUse1 dispatch key. Memory is host memory the device owns (through ember's caching
allocator); kernels run on one worker thread per stream, so a launch returns before the work
ends, as on a GPU. See README.md in this folder.

    from examples import async_device
    async_device.install()            # ember.adev, Tensor.adev(), "adev:0" devices
    x = ember.randn(64, 32).adev()
    y = (x @ x.T).relu().sum()        # returns at once; the work runs on adev:0's default stream
    print(y.item())                   # .item() waits for it
    async_device.uninstall()          # everything undone (tests use this)
"""
import contextlib
import sys
import types

import ember
from ember.utils import backend_registration as _br

from . import kernels, runtime

__all__ = ["install", "uninstall", "installed", "enabled", "DeviceModule", "NAME"]

# `async` is what the issue suggests, but it is a Python keyword: `ember.async` and `t.async()`
# would be SyntaxErrors, so the device is called "adev".
NAME = "adev"
_lib = [None]


class DeviceModule(types.ModuleType):
    """ember.adev: the runtime API of the device, shaped like torch.cuda."""

    Stream = runtime.Stream
    Event = runtime.Event
    AsyncKernelError = runtime.AsyncKernelError
    device = runtime.device
    stream = staticmethod(runtime.stream)
    current_stream = staticmethod(runtime.current_stream)
    default_stream = staticmethod(runtime.default_stream)
    set_stream = staticmethod(runtime.set_stream)
    synchronize = staticmethod(runtime.synchronize)
    current_device = staticmethod(runtime.current_device)
    set_device = staticmethod(runtime.set_device)
    memory_allocated = staticmethod(runtime.memory_allocated)
    max_memory_allocated = staticmethod(runtime.max_memory_allocated)
    memory_reserved = staticmethod(runtime.memory_reserved)
    max_memory_reserved = staticmethod(runtime.max_memory_reserved)
    reset_peak_memory_stats = staticmethod(runtime.reset_peak_memory_stats)
    reset_accumulated_memory_stats = staticmethod(runtime.reset_accumulated_memory_stats)
    memory_stats = staticmethod(runtime.memory_stats)
    memory_summary = staticmethod(runtime.memory_summary)
    empty_cache = staticmethod(runtime.empty_cache)
    _sleep = staticmethod(runtime._sleep)

    def __init__(self):
        super().__init__(f"ember.{NAME}")

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def is_initialized():
        return True

    @staticmethod
    def device_count():
        return runtime.DEVICE_COUNT

    @staticmethod
    def get_device_name(device=None):
        return f"ember async example device {runtime._index(device)}"

    @staticmethod
    def pin_memory(t):
        """A copy of CPU tensor `t` in page-locked host memory (here: memory the runtime knows,
        so non_blocking copies may use it in place)."""
        return pin_memory(t)

    @staticmethod
    def record_stream(t, stream):
        """Tensor.record_stream: `t` is used by work on `stream`; its memory is not reused by
        its own stream until that work is done."""
        a = runtime.allocator(t._device.index)
        b = a.block_of(t.untyped_storage())
        if b is not None:
            a.record_stream(b, stream)


def pin_memory(t):
    import weakref

    import numpy as np
    if t._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{t.device}' memory: only dense CPU tensors can be pinned")
    arr = np.array(t._np, copy=True)
    runtime._PINNED[id(arr)] = weakref.ref(arr)
    return ember.from_numpy(arr)


def installed():
    return _lib[0] is not None


def install():
    """Register the backend: kernels under PrivateUse1, the name "adev", Tensor/Module methods,
    the ember.adev module. Idempotent."""
    if _lib[0] is not None:
        return sys.modules[f"ember.{NAME}"]
    ember.utils.rename_privateuse1_backend(NAME)
    runtime._state.name = NAME
    _lib[0] = kernels.register()
    ember.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                                         for_storage=True)
    mod = DeviceModule()
    ember._register_device_module(NAME, mod)
    return mod


def uninstall():
    """Undo install(): wait for and stop the workers, drop the kernels, the name and the methods."""
    if _lib[0] is None:
        return
    try:
        runtime._shutdown()
    finally:
        _lib[0]._destroy()
        _lib[0] = None
        kernels._warned.clear()
        kernels._KEYS.clear()
        _br._reset_privateuse1_backend()


@contextlib.contextmanager
def enabled():
    """`with async_device.enabled() as adev:` the backend for the block (a test fixture's body);
    left installed if it already was."""
    was = installed()
    mod = install()
    try:
        yield mod
    finally:
        if not was:
            uninstall()
