"""In-place operations under autograd: the leaf checks, history rebasing, and CopySlices.

When an in-place op writes into a view, the gradient of the view's base changes too: the base's
history is rewritten to CopySlices(base's old history, the in-place op's node), and the view's
history becomes a strided slice of the base's (PyTorch's rebase_history in VariableTypeUtils.h).
"""
from ember.autograd.graph import Node, edge, set_history
from ember.core import tls
from ember.core.keys import DispatchKey
from ember.core.tensor_impl import TensorImpl, contiguous_strides

_state = tls.current
_BATCHED = 1 << DispatchKey.FuncTorchBatched


def _requires_grad_leaf(t):
    m = t._ameta
    return m is not None and m.grad_fn is None and m.requires_grad


def check_inplace(t):
    if _requires_grad_leaf(t):
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    b = t._base
    if b is not None and _requires_grad_leaf(b):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def clone_nograd(t):
    """The original value of an in-place op's input, saved for its backward. Cloned with grad
    mode as it is, so the copy stays in the graph and double backward reaches the old history."""
    return t.clone()


def _geometry(t):
    return (tuple(t._shape), tuple(t.stride()), t.storage_offset())


class CopySlices(Node):
    __slots__ = ("base_geom", "view_geom", "fn")

    def __init__(self, base, view, fn):
        Node.__init__(self)
        self.base_geom = _geometry(base)
        self.view_geom = _geometry(view)
        self.fn = fn
        self._next = (edge(base),) + tuple(fn._next[1:])

    def name(self):
        return "torch::autograd::CopySlices"

    def apply(self, grads):
        import ember
        g = grads[0]
        shape, strides, off = self.base_geom
        vshape, vstrides, voff = self.view_geom
        if g._keys & _BATCHED:  # a batched gradient (vmap): a batch of such buffers
            result = g.new_empty_strided(shape, strides)
        else:
            result = ember.empty_strided(shape, strides, dtype=g._dtype, device=g._device)
        result.copy_(g)
        gslice = result.as_strided(vshape, vstrides, voff - off)
        res = self.fn.apply([gslice.clone()])
        if res[0] is not None:
            gslice.copy_(res[0])
        else:
            gslice.zero_()
        return [result] + list(res[1:])

    def release_variables(self):
        self._released = True
        self.fn.release_variables()


class AsStridedBackward0(Node):
    """The history of a view after its base was rewritten: scatter into the base's geometry."""
    __slots__ = ("base_geom", "view_geom")

    def apply(self, grads):
        import ember
        g = grads[0]
        shape, strides, off = self.base_geom
        vshape, vstrides, voff = self.view_geom
        if g._keys & _BATCHED:  # a batched gradient (vmap): a batch of such buffers
            result = g.new_empty_strided(shape, strides).zero_()
        elif strides == _contig(shape):
            result = ember.zeros(shape, dtype=g._dtype, device=g._device)
        else:
            result = ember.empty_strided(shape, strides, dtype=g._dtype, device=g._device).zero_()
        result.as_strided(vshape, vstrides, voff - off).copy_(g)
        return [result]


def _contig(shape):
    return contiguous_strides(shape)


def rebase_history(t, node):
    base = t._base
    if base is None:
        set_history(t, node)
        return
    cs = CopySlices(base, t, node)
    set_history(base, cs)
    vn = AsStridedBackward0()
    vn.base_geom, vn.view_geom = cs.base_geom, cs.view_geom
    vn._next = (edge(base),)
    set_history(t, vn)


def out_kernel(name):
    def run(below, *args):
        if _state().ag:  # grad mode on
            for a in args:
                if isinstance(a, TensorImpl) and a._ameta is not None and (
                        a._ameta.requires_grad or a._ameta.grad_fn is not None):
                    raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                                       "automatic differentiation, but one of the arguments requires grad.")
        return below(*args)
    return run


def detach_iov(below, self):
    """detach() shares memory and the version counter but is not a view for autograd."""
    r = below(self)
    r._vc = self._version_counter()
    if r._np is None and r._base is not None:
        r._storage = r._base.untyped_storage()  # non-CPU memory is reached through the base
    r._base = None
    return r
