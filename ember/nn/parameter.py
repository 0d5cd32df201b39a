"""nn.Parameter and nn.Buffer (torch/nn/parameter.py).

A Parameter is a Tensor subclass made with `Tensor._make_subclass`: it aliases the storage of the
data it wraps, requires grad by default, prints as "Parameter containing:\\ntensor(...)", deep-copies
and pickles as one (torch's `_rebuild_parameter`). Module.__setattr__ registers Parameters as
parameters and Buffers as buffers.
"""
from collections import OrderedDict

from ember.tensor import Tensor

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]

_GRAD_DTYPE_ERR = "Only Tensors of floating point and complex dtype can require gradients"


def _empty0(device=None, dtype=None):
    import ember
    return ember.empty(0, device=device, dtype=dtype)


class _ParameterMeta(type):
    # isinstance(t, Parameter) is also True for a tensor marked `_is_param` (a Parameter made from a
    # Tensor subclass keeps that subclass), as in PyTorch
    def __instancecheck__(self, instance):
        if self is Parameter:
            if isinstance(instance, Tensor) and getattr(instance, "_is_param", False):
                return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A Tensor that is a module parameter: assigning it as a Module attribute registers it."""
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _empty0()
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if requires_grad and data._dtype.category < _float_category():
            raise RuntimeError(_GRAD_DTYPE_ERR)
        if type(data) is Tensor or type(data) is Parameter:
            return Tensor._make_subclass(cls, data, requires_grad)
        # a Tensor subclass keeps its type; it is marked as a parameter instead
        t = data.detach().requires_grad_(requires_grad)
        if type(t) is not type(data):
            raise RuntimeError(
                f"Creating a Parameter from an instance of type {type(data).__name__} requires that "
                f"detach() returns an instance of the same type, but return type {type(t).__name__} "
                "was found instead. To use the type as a Parameter, please correct the detach() "
                "semantics defined by its __torch_dispatch__() implementation.")
        t._is_param = True
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        import ember
        result = type(self)(self.data.clone(memory_format=ember.preserve_format), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        state = _get_obj_state(self)
        hooks = OrderedDict()
        if not state:
            return (_rebuild_parameter, (self.data, self.requires_grad, hooks))
        return (_rebuild_parameter_with_state, (self.data, self.requires_grad, hooks, state))


def _float_category():
    from ember.core import dtype as _dt
    return _dt.FLOAT


def _get_obj_state(obj):
    d = obj._dict_or_none()
    return dict(d) if d else None


def _rebuild_parameter(data, requires_grad, backward_hooks):
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = Parameter(data, requires_grad)
    for k, v in (state or {}).items():
        setattr(p, k, v)
    return p


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (lazy modules); `materialize` gives it
    one."""

    def materialize(self, shape, device=None, dtype=None):
        import ember
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        self.data = ember.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def share_memory_(self):
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
            "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Tensor._make_subclass(cls, _empty0(device, dtype), requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


class _BufferMeta(type):
    def __instancecheck__(self, instance):
        if self is Buffer:
            if isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
                return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A Tensor marked as a module buffer: `module.x = Buffer(t, persistent=False)` registers it.

    Like PyTorch's, constructing one returns a plain Tensor (a detached alias of `data`) carrying
    the `persistent` flag; isinstance(t, Buffer) is True for it."""
    __slots__ = ()

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _empty0()
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        ret = Tensor._make_subclass(cls, _empty0(device, dtype), requires_grad)
        ret.persistent = persistent
        ret._is_buffer = True
        return ret
