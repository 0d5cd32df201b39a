"""torch.autograd.Variable: the pre-0.4 wrapper, now Tensor itself. Variable(t) gives a tensor over t's
data that is a leaf, and isinstance(x, Variable) holds for every Tensor, as in PyTorch."""
from ember.core.tensor_impl import TensorImpl


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, TensorImpl)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, TensorImpl):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
