"""AutogradMeta: the autograd fields of a tensor, allocated only for tensors that need them."""
from ember.core import dtype as _dt
from ember.core.keys import AUTOGRAD_OF, DEVICE_KEY


class AutogradMeta:
    """Per-tensor autograd fields. Class-level defaults: creating one per result must be cheap."""
    requires_grad = False
    grad = None
    grad_fn = None
    output_nr = 0
    retains_grad = False
    hooks = None
    post_acc_hooks = None
    grad_accumulator = None
    is_view = False
    view_fn = None
    view_version = None  # version of a view's storage when its grad_fn was recorded


def get_meta(t):
    m = t._ameta
    if m is None:
        m = t._ameta = AutogradMeta()
    return m


_BIT_OF_BACKEND = {1 << b: 1 << a for b, a in AUTOGRAD_OF.items()}
_BACKENDS = sum(_BIT_OF_BACKEND)


def autograd_key_bit(t):
    """The Autograd key matching the tensor's backend key (one dict look-up)."""
    bit = _BIT_OF_BACKEND.get(t._keys & _BACKENDS)
    if bit is None:
        return 1 << AUTOGRAD_OF[DEVICE_KEY.get(t._device.type, DEVICE_KEY["privateuseone"])]
    return bit


_WITH_AUTOGRAD = {}  # a result's key set -> that set with its Autograd key, filled on first use


def with_autograd_key(t):
    """t's key set plus its Autograd key (the generated kernels look it up in _WITH_AUTOGRAD first)."""
    ks = t._keys
    bit = _BIT_OF_BACKEND.get(ks & _BACKENDS)
    if bit is None:
        return ks | autograd_key_bit(t)
    _WITH_AUTOGRAD[ks] = ks | bit
    return ks | bit


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
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    get_meta(t).requires_grad = flag
    if flag:
        t._keys |= autograd_key_bit(t)
    else:
        t._keys &= ~autograd_key_bit(t)
