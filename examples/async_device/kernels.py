"""The async backend's kernels, registered under the PrivateUse1 dispatch key.

Tensor layout (the same for every non-CPU ember backend): a TensorImpl with explicit sizes,
strides and offset over an UntypedStorage whose `data` is the device's raw memory, here a 1-D
uint8 NumPy array owned by the device's CachingAllocator.

A kernel runs in two halves, as a CUDA operator does:
  host side (the caller's thread): check arguments and compute the output's shape and dtype with
  the operator's Meta kernel, allocate the output from the caching allocator on the current stream,
  and enqueue the device side on that stream; return the output at once;
  device side (the stream's worker thread): compute. Here the computation is the operator's
  NumPy (CPU) kernel applied to views of the device memory; the point of the example is the
  runtime around it, not the arithmetic.
Operators without a kernel here reach the boxed fallback: synchronize, copy the inputs to host,
run the CPU kernel, copy the results back, and warn once per operator.
"""
import warnings

import numpy as np

import ember
from ember.core.keys import DispatchKey as K, backend_keyset
from ember.core.layout import format_strides
from ember.core.storage import UntypedStorage
from ember.core.tensor_impl import TensorImpl, contiguous_strides, make_meta
from ember.dispatch.operator import OPERATORS, keyset_of
from ember.kernels.strided_views import register_strided_views

from . import runtime as rt

CPU_DEVICE = ember.device("cpu")
_CPU_BIT = 1 << K.CPU

# Operators whose device side is their CPU kernel run on the worker (enough to train an MLP with
# SGD/Adam: linear layers, activations, cross entropy forward and backward, the optimiser updates).
LAUNCHED = (
    "add.Tensor", "add_.Tensor", "sub.Tensor", "sub_.Tensor", "mul.Tensor", "mul_.Tensor",
    "div.Tensor", "div_.Tensor", "neg", "exp", "log", "sqrt", "rsqrt", "pow.Tensor_Scalar", "abs",
    "addcmul_", "addcdiv_", "lerp_.Scalar", "maximum", "eq.Tensor", "where.self",
    "ne.Tensor", "gt.Tensor", "lt.Tensor", "ge.Tensor", "le.Tensor",
    "eq.Scalar", "ne.Scalar", "gt.Scalar", "lt.Scalar", "ge.Scalar", "le.Scalar",
    "masked_fill.Scalar", "clamp", "clamp_", "sign", "square", "pow.Tensor_Tensor",
    "mm", "addmm", "bmm", "matmul", "mv", "dot",
    "relu", "relu_", "threshold_backward", "sigmoid", "tanh", "gelu", "gelu_backward",
    "sum", "sum.dim_IntList", "mean", "mean.dim", "argmax", "amax", "max.dim",
    "cat", "stack", "index_select", "embedding", "gather",
    "log_softmax.int", "_log_softmax", "_softmax", "softmax.int",
    "nll_loss_forward", "nll_loss_backward",
    "clone", "fill_.Scalar", "zero_",
    "zeros", "ones", "full", "scalar_tensor", "arange.start_step",
)


def _name():
    return rt._state.name


_KEYS = {}


def _keys(dev):
    ks = _KEYS.get(dev.type)
    if ks is None:
        ks = _KEYS[dev.type] = backend_keyset(dev.type)
    return ks


def _norm(dev):
    return dev if dev.index is not None else ember.device(dev.type, rt.current_device())


def _is_dev(x):
    return isinstance(x, TensorImpl) and x._device.type == rt._state.name


# ---- memory ------------------------------------------------------------------------------------
def new_tensor(shape, dtype, strides, dev):
    """An uninitialised tensor on `dev`, its memory from the allocator on the current stream."""
    dev = _norm(dev)
    shape = tuple(shape)
    strides = contiguous_strides(shape) if strides is None else tuple(strides)
    n = 0
    if all(shape):
        n = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    nbytes = n * dtype.itemsize
    t = make_meta(shape, dtype, strides, device=dev, keys=_keys(dev))
    if nbytes == 0:
        t._storage = UntypedStorage(np.empty(0, np.uint8), 0, dev)
        return t
    alloc = rt.allocator(dev.index)
    block = alloc.malloc(nbytes, rt.current_stream(dev.index))
    st = UntypedStorage(block.buf, nbytes, dev)
    alloc.attach(st, block)
    t._storage = st
    return t


def host_view(t):
    """The NumPy view of a device tensor's memory (the device side's 'pointer')."""
    buf = t.untyped_storage().data
    isz = t._dtype.itemsize
    if buf.size == 0:
        return np.empty(t._shape, t._dtype.np)
    typed = buf[: buf.size - buf.size % isz].view(t._dtype.np)
    return np.lib.stride_tricks.as_strided(typed[t._offset:], t._shape,
                                           tuple(s * isz for s in t._strides))


def _device_of(args):
    for a in args:
        if isinstance(a, TensorImpl):
            if a._device.type == rt._state.name:
                return a._device
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, TensorImpl) and x._device.type == rt._state.name:
                    return x._device
        elif isinstance(a, ember.device) and a.type == rt._state.name:
            return _norm(a)
    return ember.device(rt._state.name, rt.current_device())


def _host_arg(a):
    """What the device side computes with: device tensors become CPU tensors over the device
    memory (no copy); CPU tensors (0-d ones may join a device op) are snapshotted now, as a
    host-to-device copy of a pageable buffer would be; devices become the CPU."""
    if isinstance(a, TensorImpl):
        if a._device.type == rt._state.name:
            return ember.from_numpy(host_view(a))
        return ember.from_numpy(np.array(a._np))
    if isinstance(a, (list, tuple)) and a and any(isinstance(x, TensorImpl) for x in a):
        return type(a)(_host_arg(x) for x in a)
    if isinstance(a, ember.device) and a.type == rt._state.name:
        return CPU_DEVICE
    return a


# ---- launched kernels -------------------------------------------------------------------------
def launched(op):
    """A PrivateUse1 kernel for `op`: Meta on the host, the CPU kernel on the stream's worker."""
    cpu_fn = op.kernels[K.CPU].fn
    meta_fn = op.kernels[K.Meta].fn

    def kernel(*args):
        dev = _device_of(args)
        m = meta_fn(*args)  # argument checks and output geometry, raised here, synchronously
        single = not isinstance(m, (tuple, list))
        ms = (m,) if single else m
        results, new = [], []
        for i, x in enumerate(ms):
            if isinstance(x, TensorImpl) and x._device.type == "meta":
                out = new_tensor(x._shape, x._dtype, x._strides, dev)
                new.append((i, host_view(out)))
                results.append(out)
            else:
                results.append(x)  # in-place / out=: the device tensor itself
        host_args = tuple(_host_arg(a) for a in args)

        def run():
            r = cpu_fn(*host_args)
            if new:
                rs = (r,) if single else r
                for i, v in new:
                    np.copyto(v, rs[i].numpy(), casting="unsafe")

        rt.current_stream(dev.index).launch(run)
        if single:
            return results[0]
        return type(m)(*results) if hasattr(m, "_fields") else type(m)(results)

    kernel.__name__ = kernel.__qualname__ = f"{rt._state.name}.{op.name}"
    return kernel


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    dt = dtype or ember.get_default_dtype()
    return new_tensor(tuple(size), dt, format_strides(size, memory_format), device or _device_of(()))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    dt = dtype or ember.get_default_dtype()
    return new_tensor(tuple(size), dt, tuple(stride), device or _device_of(()))


def _pinned(t):
    if t.is_pinned():
        return True
    root = t._np
    while isinstance(root.base, np.ndarray):
        root = root.base
    ref = rt._PINNED.get(id(root))
    return ref is not None and ref() is root


_COPY_META = OPERATORS["aten::copy_"].kernels[K.Meta].fn


def copy_(dst, src, non_blocking=False):
    """Every direction: device<-device on the current stream; device<-host from a snapshot of
    pageable memory (or the pinned buffer itself with non_blocking); host<-device waits for the
    copy unless non_blocking into pinned memory."""
    _COPY_META(dst, src, non_blocking)
    name = rt._state.name
    if isinstance(src, TensorImpl) and src._device.type == name:
        sv = host_view(src)
        if dst._device.type == name:
            if dst._device != src._device:  # across devices: the source's work first
                rt.current_stream(src._device.index).synchronize()
            dv = host_view(dst)
            rt.current_stream(dst._device.index).launch(lambda: np.copyto(dv, sv, casting="unsafe"))
            return dst
        dv = dst._np  # device -> host
        s = rt.current_stream(src._device.index)
        s.launch(lambda: np.copyto(dv, sv, casting="unsafe"))
        if not (non_blocking and _pinned(dst)):
            s.synchronize()
        return dst
    # host -> device
    if isinstance(src, TensorImpl):
        h = src._np
        if not (non_blocking and _pinned(src)):
            h = np.array(h)  # pageable memory is staged now; the host may overwrite it next
    else:
        h = src
    dv = host_view(dst)
    rt.current_stream(dst._device.index).launch(lambda: np.copyto(dv, h, casting="unsafe"))
    return dst


def local_scalar_dense(self):
    """.item(): the one value, so the host waits for the stream."""
    rt.current_stream(self._device.index).synchronize()
    return OPERATORS["aten::_local_scalar_dense"].kernels[K.CPU].fn(ember.from_numpy(host_view(self)))


# ---- the boxed fallback -----------------------------------------------------------------------
_warned = set()


def fallback(op, below, args):
    """Run an operator that has no kernel here on the CPU: synchronize, copy the device inputs
    to host, call the CPU kernel, copy the results (and mutated inputs) back."""
    q = op.qualname
    name = rt._state.name
    if q not in _warned:
        _warned.add(q)
        warnings.warn(f"The operator '{q}' is not currently supported on the {name} backend and "
                      "will fall back to run on the CPU. This may have performance implications.",
                      UserWarning, stacklevel=3)
    dev = _device_of(args)
    rt.synchronize(dev.index)  # everything enqueued so far is done: device memory is settled
    mutated = []               # (cpu copy, device tensor)

    def to_host(a, arg):
        if isinstance(a, TensorImpl) and a._device.type == name:
            c = ember.from_numpy(np.array(host_view(a)))
            if arg is not None and arg.is_write:
                mutated.append((c, a))
            return c
        if isinstance(a, (list, tuple)) and any(isinstance(x, TensorImpl) for x in a):
            return type(a)(to_host(x, arg) for x in a)
        if isinstance(a, ember.device) and a.type == name:
            return CPU_DEVICE
        return a

    schema_args = op.schema.arguments
    cpu_args = tuple(to_host(a, schema_args[i] if i < len(schema_args) else None)
                     for i, a in enumerate(args))
    r = op.redispatch(keyset_of(cpu_args) | _CPU_BIT, *cpu_args)
    for c, d in mutated:
        if c._shape != d._shape:
            raise RuntimeError(f"{name} fallback: '{q}' resized an output; not supported")
        np.copyto(host_view(d), c.numpy(), casting="unsafe")

    def back(x):
        if isinstance(x, TensorImpl):
            for c, d in mutated:
                if x is c:
                    return d
            out = new_tensor(x._shape, x._dtype, None, dev)
            np.copyto(host_view(out), x.numpy(), casting="unsafe")  # the streams are idle
            return out
        if isinstance(x, (list, tuple)):
            ys = [back(y) for y in x]
            return type(x)(*ys) if hasattr(x, "_fields") else type(x)(ys)
        return x

    return back(r)


# ---- registration -----------------------------------------------------------------------------
def register():
    """Register every kernel and the fallback under PrivateUse1; returns the Library (its
    _destroy() undoes all of it)."""
    lib = ember.library.Library("aten", "IMPL")
    key = "PrivateUse1"
    lib.impl("empty.memory_format", empty_memory_format, key)
    lib.impl("empty_strided", empty_strided, key)
    lib.impl("copy_", copy_, key)
    lib.impl("_local_scalar_dense", local_scalar_dense, key)
    for name in LAUNCHED:
        lib.impl(name, launched(OPERATORS["aten::" + name]), key)
    register_strided_views(lib, key)
    lib.fallback(fallback, key)
    return lib
