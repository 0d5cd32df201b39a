"""Activations PyTorch implements with other activations (CompositeImplicitAutograd), so their
gradients are those ops' nodes: relu6 -> hardtanh (HardtanhBackward0), selu -> elu (EluBackward0/1)."""
from ember._generated import ops as _ops
from ember.core import tls as _tls
from ember.core.keys import AUTOGRAD_MASK, K

_st = _tls.state
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_IOV = 1 << K.ADInplaceOrView


def _ks(self):
    return (self._keys | (_d := _st.dk)[0]) & _d[1]


def _inplace_ks(op, self):
    """Keys for the in-place op this composite calls. Without an autograd layer the composite runs
    below its own op's ADInplaceOrView kernel, which bumps the version once already (PyTorch has no
    such kernel for composite ops): the inner op then skips that layer."""
    ks = _ks(self)
    if not ks & AUTOGRAD_MASK and op.has_kernel_for(K.ADInplaceOrView):
        ks &= ~_IOV
    return ks


def relu6(self):
    return _ops.hardtanh.table[_ks(self)](self, 0, 6)


def relu6_(self):
    return _ops.hardtanh_.table[_inplace_ks(_ops.relu6_, self)](self, 0, 6)


def selu(self):
    return _ops.elu.table[_ks(self)](self, _SELU_ALPHA, _SELU_SCALE, 1)


def selu_(self):
    return _ops.elu_.table[_inplace_ks(_ops.selu_, self)](self, _SELU_ALPHA, _SELU_SCALE, 1)
