"""DispatchKey in priority order and DispatchKeySet as an int bitmask (c10/core/DispatchKey.h).

A key's bit is its priority: the highest set bit of a key set is the first layer a call enters.
"""
import enum


class DispatchKey(enum.IntEnum):
    # backends (lowest priority)
    CPU = 0
    # sparse COO tensors on the CPU (torch's SparseCPU: a backend above CPU, so a call with a sparse
    # and a dense argument runs the sparse kernel). Its autograd key is AutogradCPU, as in torch
    SparseCPU = 1
    # sparse compressed-row (CSR) tensors on the CPU (torch's SparseCsrCPU), likewise above CPU
    SparseCsrCPU = 2
    CUDA = 3
    Meta = 4
    PrivateUse1 = 5
    BackendSelect = 6
    Python = 7            # __torch_dispatch__: user dispatch modes, subclasses and graph capture see every aten op
    # vmap's batching layer. PyTorch puts it above Autograd and gives grad its own wrapper level
    # (functorch's DynamicLayer); ember puts it below Autograd, so grad inside vmap records its
    # graph on the logical (batched) tensors and backward formulas run through the batching rules.
    FuncTorchBatched = 8
    ADInplaceOrView = 9
    AutogradOther = 10
    AutogradCPU = 11
    AutogradCUDA = 12
    AutogradMeta = 13
    AutogradPrivateUse1 = 14
    # forward-mode AD: PyTorch computes tangents inside its Autograd kernels; ember gives dual
    # tensors a key of their own, so tensors without a tangent pay nothing for it
    ForwardAD = 15
    AutocastCPU = 16
    AutocastCUDA = 17
    AutocastPrivateUse1 = 18
    PythonDispatcher = 19  # a dispatcher implemented in Python, for tracing/debugging
    # __torch_function__ (subclasses and TorchFunctionMode): PyTorch handles it in the Python
    # argument parser, before any dispatch; ember makes it the highest key, one bit test when unused
    PythonTorchFunction = 20

    # alias keys: not bits; a registration on an alias fills several runtime keys
    Autograd = 100
    CompositeImplicitAutograd = 101
    CompositeExplicitAutograd = 102
    Autocast = 103


K = DispatchKey
NUM_KEYS = 21
BACKEND_KEYS = (K.CPU, K.SparseCPU, K.SparseCsrCPU, K.CUDA, K.Meta, K.PrivateUse1)
BACKEND_MASK = sum(1 << k for k in BACKEND_KEYS)
AUTOGRAD_KEYS = (K.AutogradOther, K.AutogradCPU, K.AutogradCUDA, K.AutogradMeta, K.AutogradPrivateUse1)
AUTOGRAD_MASK = sum(1 << k for k in AUTOGRAD_KEYS)
AUTOCAST_KEYS = (K.AutocastCPU, K.AutocastCUDA, K.AutocastPrivateUse1)
AUTOCAST_MASK = sum(1 << k for k in AUTOCAST_KEYS)
# backend -> its autograd / autocast key
AUTOGRAD_OF = {K.CPU: K.AutogradCPU, K.SparseCPU: K.AutogradCPU, K.SparseCsrCPU: K.AutogradCPU,
               K.CUDA: K.AutogradCUDA, K.Meta: K.AutogradMeta,
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


# a sparse COO tensor's keys (torch adds AutocastCPU too; ember's sparse tensors skip autocast)
SPARSE_CPU_KEYS = keyset(K.SparseCPU, K.ADInplaceOrView)
SPARSE_CSR_CPU_KEYS = keyset(K.SparseCsrCPU, K.ADInplaceOrView)
