"""DispatchKey in priority order and DispatchKeySet as an int bitmask (c10/core/DispatchKey.h).

A key's bit is its priority: the highest set bit of a key set is the first layer a call enters.
"""
import enum


class DispatchKey(enum.IntEnum):
    # backends (lowest priority)
    CPU = 0
    CUDA = 1
    Meta = 2
    PrivateUse1 = 3
    BackendSelect = 4
    Python = 5            # user dispatch modes and graph capture see every aten op here
    ADInplaceOrView = 6
    AutogradOther = 7
    AutogradCPU = 8
    AutogradCUDA = 9
    AutogradMeta = 10
    AutogradPrivateUse1 = 11
    AutocastCPU = 12
    AutocastCUDA = 13
    AutocastPrivateUse1 = 14
    PythonDispatcher = 15  # highest: a dispatcher implemented in Python, for tracing/debugging

    # alias keys: not bits; a registration on an alias fills several runtime keys
    Autograd = 100
    CompositeImplicitAutograd = 101
    CompositeExplicitAutograd = 102
    Autocast = 103


K = DispatchKey
NUM_KEYS = 16
BACKEND_KEYS = (K.CPU, K.CUDA, K.Meta, K.PrivateUse1)
BACKEND_MASK = sum(1 << k for k in BACKEND_KEYS)
AUTOGRAD_KEYS = (K.AutogradOther, K.AutogradCPU, K.AutogradCUDA, K.AutogradMeta, K.AutogradPrivateUse1)
AUTOGRAD_MASK = sum(1 << k for k in AUTOGRAD_KEYS)
AUTOCAST_KEYS = (K.AutocastCPU, K.AutocastCUDA, K.AutocastPrivateUse1)
AUTOCAST_MASK = sum(1 << k for k in AUTOCAST_KEYS)
# backend -> its autograd / autocast key
AUTOGRAD_OF = {K.CPU: K.AutogradCPU, K.CUDA: K.AutogradCUDA, K.Meta: K.AutogradMeta,
               K.PrivateUse1: K.AutogradPrivateUse1}
AUTOCAST_OF = {K.CPU: K.AutocastCPU, K.CUDA: K.AutocastCUDA, K.PrivateUse1: K.AutocastPrivateUse1}
DEVICE_KEY = {"cpu": K.CPU, "cuda": K.CUDA, "meta": K.Meta, "privateuseone": K.PrivateUse1}


def keyset(*keys):
    m = 0
    for k in keys:
        m |= 1 << k
    return m


def keys_in(ks):
    """Runtime keys of a key set, highest priority first."""
    return [K(i) for i in range(NUM_KEYS - 1, -1, -1) if ks >> i & 1]


def format_keyset(ks):
    return "DispatchKeySet(" + ", ".join(k.name for k in keys_in(ks)) + ")"


def backend_keyset(dev_type):
    """Keys a plain (non-grad) tensor on this device carries."""
    b = DEVICE_KEY.get(dev_type, K.PrivateUse1)
    ks = keyset(b, K.ADInplaceOrView)
    if b in AUTOCAST_OF:
        ks |= 1 << AUTOCAST_OF[b]
    return ks
