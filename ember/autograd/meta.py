"""AutogradMeta: the autograd fields of a tensor, allocated only for tensors that need them."""
from ember.core import dtype as _dt
from ember.core.keys import AUTOGRAD_OF, DEVICE_KEY


class AutogradMeta:
    __slots__ = ("requires_grad", "grad", "grad_fn", "output_nr", "retains_grad", "hooks",
                 "post_acc_hooks", "grad_accumulator", "is_view", "view_fn", "__weakref__")

    def __init__(self):
        self.requires_grad = False
        self.grad = None
        self.grad_fn = None
        self.output_nr = 0
        self.retains_grad = False
        self.hooks = None
        self.post_acc_hooks = None
        self.grad_accumulator = None
        self.is_view = False
        self.view_fn = None


def get_meta(t):
    m = t._ameta
    if m is None:
        m = t._ameta = AutogradMeta()
    return m


def autograd_key_bit(t):
    return 1 << AUTOGRAD_OF[DEVICE_KEY.get(t._device.type, DEVICE_KEY["privateuseone"])]


def set_requires_grad(t, flag):
    flag = bool(flag)
    m = t._ameta
    if m is not None and m.grad_fn is not None:
        if not flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        return
    if flag and t._dtype.category not in (_dt.FLOAT, _dt.COMPLEX):
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
    get_meta(t).requires_grad = flag
    if flag:
        t._keys |= autograd_key_bit(t)
    else:
        t._keys &= ~autograd_key_bit(t)
