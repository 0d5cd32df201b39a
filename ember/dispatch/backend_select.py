"""BackendSelect: the key set of a call with no Tensor argument, from its device= (or the default).

PyTorch gives factory functions a BackendSelect kernel that reads `device=` and redispatches to
that backend. ember computes the backend's key set here, once per device, for the generated
bindings and for the dispatcher's typed front door (OperatorHandle.call)."""
from ember.core.keys import backend_keyset


class _DefaultDevice:
    device = None  # ember.set_default_device


default_device = _DefaultDevice()
DEVICE_KEYS = {}     # device -> key set of its backend (cleared when a backend is renamed)
device_checks = {}   # device type -> callable raising when the device cannot be used
CPU_KEYS = backend_keyset("cpu")


def check_device_available(dev):
    chk = device_checks.get(dev.type)
    if chk is not None:
        chk(dev)
    elif dev.type == "cuda":
        raise RuntimeError("ember was not built with CUDA support: no CUDA backend is registered "
                           "(needs a GPU, numba and a driver, or EMBER_CUDA_SIM=1)")


def dev_keys(dev):
    """Key set of a factory call: from device=, else the default device (BackendSelect's job)."""
    if dev is None:
        dev = default_device.device
        if dev is None:
            return CPU_KEYS
    ks = DEVICE_KEYS.get(dev)
    if ks is None:
        if dev.type == "cuda" or dev.type not in ("cpu", "meta"):
            check_device_available(dev)
        ks = DEVICE_KEYS[dev] = backend_keyset(dev.type)
    return ks
