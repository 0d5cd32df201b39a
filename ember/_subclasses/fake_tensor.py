"""FakeTensor and FakeTensorMode (torch._subclasses.fake_tensor): tensors with metadata only.

A FakeTensor reports its device (cpu, cuda, ...) and holds a meta tensor of the same shape, dtype,
strides and offset. Under FakeTensorMode every op on fakes runs its Meta kernel (the shape, dtype and
stride functions in ember/kernels/meta) and returns fakes: shape propagation and graph capture at the
cost of metadata. Ops whose output shape or value depends on data raise DynamicOutputShapeException /
DataDependentOutputException, as torch's do.
"""
import ember
from ember.tensor import Tensor
from ember.utils._python_dispatch import TorchDispatchMode

_META = ember.device("meta")
_DATA_DEPENDENT_OUTPUT = {"_local_scalar_dense", "item", "equal", "is_nonzero", "allclose"}
_DYNAMIC_OUTPUT_SHAPE = {"nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
                         "unique_consecutive", "repeat_interleave", "nonzero_static", "bincount"}


class UnsupportedFakeTensorException(RuntimeError):
    pass


class DynamicOutputShapeException(RuntimeError):
    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class DataDependentOutputException(RuntimeError):
    def __init__(self, func):
        super().__init__(str(func))
        self.func = func


class FakeTensor(Tensor):
    __slots__ = ()

    @staticmethod
    def __new__(cls, fake_mode, elem, device):
        t = Tensor._make_wrapper_subclass(cls, elem.shape, elem.stride(), elem.storage_offset(), dtype=elem.dtype,
                                          device=device, requires_grad=elem.requires_grad)
        t.fake_mode = fake_mode
        t._meta = elem.detach() if elem.requires_grad else elem
        return t

    def __init__(self, *args, **kwargs):
        pass

    @property
    def fake_device(self):
        return self._device

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # outside its mode: the op runs under the mode of its fake arguments
        mode = next(a.fake_mode for a in _flat((args, kwargs)) if isinstance(a, FakeTensor))
        with mode:
            return func(*args, **(kwargs or {}))

    def __repr__(self):
        extra = "" if self._device.type == "cpu" else f"device='{self._device}', "
        dt = "" if self._dtype is ember.get_default_dtype() else f", dtype={self._dtype}"
        g = self.grad_fn
        ag = (f", grad_fn=<{type(g).__name__}>" if g is not None
              else ", requires_grad=True" if self.requires_grad else "")
        return f"FakeTensor(..., {extra}size={tuple(self._shape)}{dt}{ag})"

    __str__ = __repr__

    def tolist(self):
        raise DataDependentOutputException(ember.ops.aten._local_scalar_dense.default)


def _flat(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _flat(v)
    else:
        yield x


def _map(x, f):
    if isinstance(x, list):
        return [_map(v, f) for v in x]
    if isinstance(x, tuple):
        r = [_map(v, f) for v in x]
        return type(x)(*r) if hasattr(x, "_fields") else tuple(r)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    return f(x)


class FakeTensorMode(TorchDispatchMode):
    def __init__(self, *, allow_fallback_kernels=True, allow_non_fake_inputs=False, shape_env=None,
                 static_shapes=None, export=False):
        super().__init__()
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.shape_env = shape_env
        self._memo = {}

    def from_tensor(self, t, *, static_shapes=None, source=None, symbolic_context=None, trace=True):
        """A fake with `t`'s metadata (requires_grad included); the same fake for the same tensor."""
        if isinstance(t, FakeTensor):
            return t
        key = id(t)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is t:
            return hit[1]
        m = ember.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
        if t.storage_offset():
            m = m.as_strided(t.shape, t.stride(), t.storage_offset())
        f = FakeTensor(self, m, t.device)
        if t.requires_grad:
            f.requires_grad_()
        self._memo[key] = (t, f)
        return f

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.name)
        if name in _DATA_DEPENDENT_OUTPUT:
            raise DataDependentOutputException(func)
        if name in _DYNAMIC_OUTPUT_SHAPE:
            raise DynamicOutputShapeException(func)
        devices = []

        def to_meta(x):
            if isinstance(x, FakeTensor):
                if x.fake_mode is not self:
                    raise AssertionError("Mixing fake modes NYI")
                devices.append(x._device)
                return x._meta
            if isinstance(x, Tensor):
                if not self.allow_non_fake_inputs and x.device.type != "meta":
                    raise AssertionError(
                        "Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with "
                        f"'allow_non_fake_inputs'. Found in {func}(*{args}, **{kwargs})")
                f = self.from_tensor(x)
                devices.append(f._device)
                return f._meta
            return x
        margs = _map(args, to_meta)
        mkw = _map(kwargs, to_meta)
        if "device" in mkw:
            dev = mkw["device"]
            devices.insert(0, ember.device(dev) if dev is not None else ember.device("cpu"))
            mkw["device"] = _META
        elif not devices and any(a.name == "device" for a in func.schema.arguments):
            devices.append(ember.device("cpu"))
            mkw["device"] = _META
        out = func(*margs, **mkw)
        # the device of the result: the first non-CPU device among the inputs (a 0-d CPU tensor mixes)
        dev = next((d for d in devices if d.type != "cpu"), devices[0] if devices else ember.device("cpu"))
        inputs = {id(x._meta): x for x in _flat((args, kwargs)) if isinstance(x, FakeTensor)}

        def wrap(x):
            if isinstance(x, Tensor) and not isinstance(x, FakeTensor):
                same = inputs.get(id(x))
                if same is not None:  # an in-place op or out= returns its argument
                    same._shape, same._strides = x._shape, x.stride()
                    return same
                return FakeTensor(self, x, dev)
            return x
        return _map(out, wrap)
