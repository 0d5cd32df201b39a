"""Activations PyTorch implements with other activations (CompositeImplicitAutograd), so their
gradients are those ops' nodes: relu6 -> hardtanh (HardtanhBackward0), selu -> elu (EluBackward0/1)."""
from ember._generated import ops as _ops
from ember.core.keys import K
from ember.dispatch.operator import reaches_autograd

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _inplace_call(outer, inner, self):
    """The call of the in-place op `inner` this composite makes. Without an autograd layer the
    composite runs below its own op's ADInplaceOrView kernel, which bumps the version once already
    (PyTorch has no such kernel for composite ops): the inner op then skips that layer too."""
    if not reaches_autograd(self) and outer.has_kernel_for(K.ADInplaceOrView):
        return inner.call_below_autograd
    return inner.call


def relu6(self):
    return _ops.hardtanh.call(self, 0, 6)


def relu6_(self):
    return _inplace_call(_ops.relu6_, _ops.hardtanh_, self)(self, 0, 6)


def selu(self):
    return _ops.elu.call(self, _SELU_ALPHA, _SELU_SCALE, 1)


def selu_(self):
    return _inplace_call(_ops.selu_, _ops.elu_, self)(self, _SELU_ALPHA, _SELU_SCALE, 1)
