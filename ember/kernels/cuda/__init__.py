"""The CUDA backend's registrations (done once, when the backend first initialises).

`register()` runs when CUDA first initialises (the runtime's on_init hook, set at the end) and
puts under the CUDA key: the factories and copies that need device memory
(empty.memory_format, empty_strided, zeros/ones/full, copy_, fill_, _local_scalar_dense), every
view operator (their Meta kernels are valid for any strided backend), the numba kernels of the
modules in this package (each exposes `KERNELS = {"add.Tensor": fn, ...}`), and a boxed fallback
for every other operator: the CUDA arguments are copied to the host, the CPU kernel runs, and the
results are copied back to the device (written-to arguments are updated in place). The fallback
warns once per operator, so a program knows which of its ops are not yet native.

Random ops draw from the device's Philox generator as torch's CUDA kernels do (random.py). The
ones random.py does not cover take the fallback: the CPU kernel draws from a CPU generator seeded
from the CUDA generator's (seed, offset), which then moves on, so a seeded program repeats itself.
"""
import importlib
import pkgutil
import threading
import warnings

import numpy as np

from ember.core.device import CPU, device as _device
from ember.core.dtype import bool_, complex64, get_default_dtype, int64
from ember.core.generator import Generator
from ember.core.layout import format_strides, like_strides
from ember.core.tensor_impl import TensorImpl, contiguous_strides
from ember.cuda import _runtime
from ember.dispatch.library import Library
from ember.dispatch.operator import OPERATORS
from ember.kernels.cpu._glue import wrap
from ember.kernels.cuda import _glue
from ember.kernels.strided_views import register_strided_views

__all__ = ["register", "registered_kernels", "fallback_ops_seen"]

_lib = [None]
_native = {}            # aten overload name -> module that supplied the kernel
_warned = set()         # op names the fallback has warned about
_warn_lock = threading.Lock()


# ---- factories and copies ----------------------------------------------------------------------
def _dtype(dtype):
    if dtype is None:
        return get_default_dtype()
    return dtype


def _dev(device):
    return _glue.normalize(device)


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    size = tuple(size)
    _check_size(size)
    return _glue.empty(size, _dtype(dtype), _dev(device), format_strides(size, memory_format))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    size = tuple(size)
    _check_size(size)
    return _glue.empty(size, _dtype(dtype), _dev(device), tuple(stride))


def _check_size(size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")


def _full_of(size, value, dtype, device):
    if dtype is None:
        if isinstance(value, bool):
            dtype = bool_
        elif isinstance(value, int):
            dtype = int64
        elif isinstance(value, complex):
            dtype = complex64
        else:
            dtype = get_default_dtype()
    t = empty_memory_format(size, dtype, None, device)
    return _glue.fill_(t, value)


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _glue.fill_(empty_memory_format(size, dtype, layout, device), 0)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    return _glue.fill_(empty_memory_format(size, dtype, layout, device), 1)


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    if hasattr(fill_value, "item"):
        fill_value = fill_value.item()
    return _full_of(size, fill_value, dtype, device)


def copy_(self, src, non_blocking=False):
    if self._device.type != "cuda" and src._device.type != "cuda":
        raise RuntimeError(f"copy_: no CUDA tensor in a copy from {src._device} to {self._device}")
    return _glue.copy_(self, src, non_blocking)


def fill_scalar(self, value):
    return _glue.fill_(self, value)


def fill_tensor(self, value):
    if value.dim() != 0:
        raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    return _glue.fill_(self, value.item())


def local_scalar_dense(self):
    if self.numel() != 1:
        raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
    return wrap(_glue.to_host(self)).item()


def clone(self, memory_format=None):
    strides = like_strides(self._shape, self.stride(), memory_format)
    r = _glue.empty(self._shape, self._dtype, self._device, strides)
    _glue._device_copy(r, self)
    return r


def resize_(self, size, memory_format=None):
    """Tensor.resize_ on CUDA: keeps the elements that fit; grows into new device memory."""
    size = tuple(size)
    _check_size(size)
    strides = contiguous_strides(size)
    need = (_glue._span(size, strides) + self._offset) * self._dtype.itemsize
    if need > self.untyped_storage().nbytes():
        old = self.untyped_storage()
        keep = old.nbytes()
        t = _glue.empty((need // self._dtype.itemsize,), self._dtype, self._device)
        if keep:
            _runtime.device_copy(_glue.flat(t).view(np.uint8)[:keep], old.data[:keep],
                                 _glue.stream_of(self._device))
        self._storage = t._storage
        self._base = None
    self._shape = size
    self._strides = strides
    return self


# ---- the boxed fallback: a host round trip through the CPU kernels -----------------------------
# random factories and samplers run on the host by design (see the module doc): no warning
_QUIET = ("aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::normal",
          "aten::uniform_", "aten::normal_", "aten::random_", "aten::bernoulli", "aten::multinomial",
          "aten::exponential_", "aten::cauchy_", "aten::log_normal_", "aten::geometric_",
          "aten::poisson", "aten::rrelu")


def _warn_once(op):
    name = op.qualname
    if name in _warned:
        return
    if name.split(".")[0] in _QUIET or name.startswith(("aten::rand", "aten::bernoulli")):
        _warned.add(name)
        return
    with _warn_lock:
        if name in _warned:
            return
        _warned.add(name)
    warnings.warn(f"ember: the CUDA backend has no kernel for {name}; it runs on the CPU with "
                  "host<->device copies (slow). This warning is shown once per operator.",
                  UserWarning, stacklevel=4)


def fallback_ops_seen():
    """Operators that went through the CPU fallback so far (their qualified names)."""
    return sorted(_warned)


def _host_generator(g):
    """A CPU generator for a random op the fallback runs: seeded from CUDA generator g's state,
    whose offset then moves on (as one kernel launch would move it)."""
    seed, off = g._rng.reserve(4)
    return Generator("cpu").manual_seed((seed * 0x9E3779B97F4A7C15 + off) & (2 ** 64 - 1))


def _cuda_fallback(op, below, args):
    schema = op.schema
    dev = None
    moved = {}  # id(cpu copy) -> original CUDA tensor

    def to_cpu(v):
        nonlocal dev
        if isinstance(v, TensorImpl):
            if v._device.type == "cuda":
                if dev is None:
                    dev = v._device
                c = wrap(_glue.to_host(v))
                moved[id(c)] = (v, c)
                return c
            return v
        if isinstance(v, (list, tuple)) and any(isinstance(x, TensorImpl) for x in v):
            return type(v)(to_cpu(x) for x in v)
        return v

    new = []
    explicit = None  # a device= argument decides where new results go
    gen_at = None    # where the Generator argument is: it gets a host generator below
    for i, (a, v) in enumerate(zip(schema.arguments, args)):
        if a.base == "Generator":
            gen_at = i
            if v is not None and v.device.type != "cuda":
                raise RuntimeError(f"Expected a 'cuda' device type for generator but found "
                                   f"'{v.device.type}'")
        elif a.base == "Device" and v is not None:
            d = v if not isinstance(v, str) else _device(v)
            explicit = d
            if getattr(d, "type", None) == "cuda":
                v = CPU
        new.append(to_cpu(v))
    new.extend(args[len(new):])
    if explicit is not None:
        dev = _glue.normalize(explicit) if explicit.type == "cuda" else None
    new_dev = dev
    # torch's randperm on CUDA runs randperm_cpu for n < 30000, default generator: the CPU's
    small_perm = op.qualname.startswith("aten::randperm") and args[0] < 30000
    if gen_at is not None and (args[gen_at] is not None or dev is not None and not small_perm):
        from ember.core.generator import device_default_generator
        g = args[gen_at] or device_default_generator(_device("cuda", dev.index or 0))
        new[gen_at] = _host_generator(g)
    if _runtime.CAPTURES:
        _runtime.not_capturing(_glue.stream_of(dev if dev is not None else _runtime.current_index()),
                               f"{op.qualname} has no CUDA kernel for these arguments and runs on "
                               "the CPU through host copies, which a CUDA graph cannot capture")
    _warn_once(op)
    # every tensor is on the host now and a CUDA device= is the CPU: dispatch again from the top,
    # which reaches the CPU kernels (a factory with no device= goes to the default, the CPU)
    r = op.call(*new)
    if not moved and new_dev is None:
        return r
    # written-to arguments: the CPU kernel changed the host copy; put it back on the device
    written = {}
    for a, v, c in zip(schema.arguments, args, new):
        if a.is_write and isinstance(c, TensorImpl) and id(c) in moved:
            orig, _ = moved[id(c)]
            _glue.copy_(orig, c, False)
            written[id(c)] = orig
        elif a.is_write and isinstance(c, (list, tuple)):
            for o, cc in zip(v, c):
                if isinstance(cc, TensorImpl) and id(cc) in moved:
                    _glue.copy_(o, cc, False)
                    written[id(cc)] = o

    def back(x):
        if isinstance(x, TensorImpl):
            w = written.get(id(x))
            if w is not None:
                return w
            m = moved.get(id(x))
            if m is not None and m[1] is x:  # the op returned its input itself
                return m[0]
            if x._device.type == "cpu" and new_dev is not None:
                return _glue.from_host(x._np, new_dev, x._dtype)
            return x
        if isinstance(x, tuple) and hasattr(x, "_fields"):  # torch.return_types.*
            return type(x)(*[back(y) for y in x])
        if isinstance(x, (list, tuple)):
            return type(x)(back(y) for y in x)
        return x
    return back(r)


# ---- registration ------------------------------------------------------------------------------
_BASIC = {
    "empty.memory_format": empty_memory_format,
    "empty_strided": empty_strided,
    "zeros": zeros,
    "ones": ones,
    "full": full,
    "copy_": copy_,
    "fill_.Scalar": fill_scalar,
    "fill_.Tensor": fill_tensor,
    "_local_scalar_dense": local_scalar_dense,
    "resize_": resize_,
    "clone": clone,
}


def _kernel_modules():
    """This package's kernel modules (all but _glue), whatever exists right now."""
    names = []
    for m in pkgutil.iter_modules(__path__):
        if not m.name.startswith("_"):
            names.append(m.name)
    return sorted(names)


def registered_kernels():
    """aten overload name -> the kernel module that serves it natively on CUDA."""
    return dict(_native)


def register():
    """Register the CUDA backend under the CUDA key (idempotent)."""
    if _lib[0] is not None:
        return _lib[0]
    lib = Library("aten", "IMPL")
    for name, fn in _BASIC.items():
        if _has_op(OPERATORS, name):
            lib.impl(name, fn, "CUDA")
    register_strided_views(lib, "CUDA")
    for mod in _kernel_modules():
        try:
            m = importlib.import_module(f"ember.kernels.cuda.{mod}")
        except ImportError as e:
            warnings.warn(f"ember: CUDA kernel module {mod} failed to import ({e}); its ops take "
                          "the CPU fallback", UserWarning)
            continue
        for name, fn in getattr(m, "KERNELS", {}).items():
            if _has_op(OPERATORS, name) and name not in _BASIC:
                lib.impl(name, fn, "CUDA")
                _native[name] = mod
    lib.fallback(_cuda_fallback, "CUDA")
    _lib[0] = lib
    return lib


def _has_op(ops, name):
    q = name if "::" in name else f"aten::{name}"
    return q in ops


_runtime.on_init(register)
