"""Tensor methods of the autograd surface: hooks, retain_grad, detach_."""
from ember.autograd.graph import _Handle, grad_accumulator
from ember.autograd.meta import autograd_key_bit, get_meta


def register_hook(self, hook):
    m = self._ameta
    if m is None or not (m.requires_grad or m.grad_fn is not None):
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if m.grad_fn is not None:
        return m.grad_fn._register_tensor_pre_hook(m.output_nr, hook)
    return grad_accumulator(self)._register_tensor_pre_hook(0, hook)


def retain_grad(self):
    m = self._ameta
    if m is None or not (m.requires_grad or m.grad_fn is not None):
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if m.grad_fn is None or m.retains_grad:
        return
    m.retains_grad = True
    import weakref
    ref = weakref.ref(self)

    def keep(g):
        t = ref()
        if t is None or g is None:
            return
        tm = t._ameta
        if tm.grad is None:
            tm.grad = g.detach().clone() if not _grad_on() else g.clone()
        else:
            tm.grad = tm.grad + g
    m.grad_fn._register_tensor_pre_hook(m.output_nr, keep, retain=True)


def _grad_on():
    from ember.core import tls
    return tls.current().grad_enabled


def register_post_accumulate_grad_hook(self, hook):
    m = self._ameta
    if m is None or m.grad_fn is not None or not m.requires_grad:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if m.post_acc_hooks is None:
        m.post_acc_hooks = []
    m.post_acc_hooks.append(hook)
    return _Handle(m.post_acc_hooks, hook)


def detach_(self):
    if self._base is not None and self._ameta is not None and self._ameta.grad_fn is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is "
                           "set as True, gradients are views of DDP buckets, and hence detach_() cannot "
                           "be called on these gradients. To fix this error, please refer to the "
                           "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
    m = self._ameta
    if m is not None:
        m.grad_fn = None
        m.requires_grad = False
        m.output_nr = 0
    self._keys &= ~autograd_key_bit(self)
    return self


def _is_leaf_grad_fn(self):
    return get_meta(self).grad_fn


__all__ = []
