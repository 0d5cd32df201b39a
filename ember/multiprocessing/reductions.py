"""How tensors cross process boundaries (torch/multiprocessing/reductions.py): registered with
multiprocessing's ForkingPickler, a CPU tensor in shared memory (share_memory_(), ember/core/shared.py)
is sent as its segment's name and its geometry; the receiver rebuilds a tensor over the same memory,
of the same class (Parameter stays Parameter) and with the same requires_grad. Other tensors travel
by value."""
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ember.core import shared
from ember.core.tensor_impl import wrap_cpu

__all__ = ["init_reductions", "rebuild_shared_tensor", "reduce_tensor"]


def rebuild_shared_tensor(cls, name, nbytes, offset, dtype, shape, strides, requires_grad):
    t = wrap_cpu(shared.view(name, nbytes, offset, dtype, shape, strides))
    if cls is not type(t):
        from ember.tensor import Tensor  # lazy: the receiving side needs the classes only here
        if issubclass(cls, Tensor) and cls is not Tensor:
            t = Tensor._make_subclass(cls, t, requires_grad)
            return t
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t):
    if t._device.type != "cpu":
        raise RuntimeError(f"ember.multiprocessing: sharing {t._device.type} tensors between "
                           "processes is not supported; move them to the CPU first")
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If you "
                           "just want to transfer the data, call detach() on the tensor before "
                           "serializing (e.g., putting it on the queue).")
    if not shared.is_shared(t):
        # by value, as pickle does: torch moves every tensor it sends into shared memory, and frees
        # the segments by reference counting across processes; ember shares only what the program
        # shared (share_memory_(), Module.share_memory()), so a DataLoader's batches leave no
        # segments behind
        return t.__reduce_ex__(2)
    name, nbytes, offset = shared.segment_of(t)
    a = t._np
    return rebuild_shared_tensor, (type(t), name, nbytes, offset, np.dtype(a.dtype).str, a.shape,
                                   a.strides, t.requires_grad)


def init_reductions():
    from ember.tensor import Tensor  # lazy: the classes exist once ember is imported
    from ember.nn.parameter import Parameter  # lazy: as above
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
