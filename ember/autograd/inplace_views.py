"""In-place view ops (transpose_, t_, squeeze_, unsqueeze_, as_strided_) and as_strided's Autograd
kernel. They change a tensor's geometry in place, or record their node themselves, so they belong to
the autograd layer (PyTorch writes them by hand in VariableTypeManual.cpp / ADInplaceOrView)."""
from ember._generated import ops as _ops
from ember.autograd import formulas_shape as f
from ember.autograd.graph import edge, set_history
from ember.autograd.views import check_inplace
from ember.core import tls as _tls
from ember.core.errors import wrap_dim
from ember.dispatch.operator import reaches_autograd

_st = _tls.current


# ---- in-place views: new metadata, same storage -------------------------------------------------
def _become(self, r):
    if self._base is None:
        self.untyped_storage()  # keep the storage of the memory it owns
    if self._np is not None:
        self._np = r._np
    else:
        self._strides = r._strides
        self._offset = r._offset
    self._shape = r._shape
    self._bump_version()  # PyTorch's in-place view ops bump the version counter
    return self


def _records(self):
    """Whether an in-place view op on `self` records a node (grad mode on, self requires grad)."""
    m = self._ameta
    return m is not None and m.requires_grad and _st().ag and reaches_autograd(self)


def _inplace_view(self, op, args, node):
    """PyTorch's in-place view ops under autograd: check_inplace, the new geometry (the view op
    `op(self, *args)` called below autograd), then set_history(self, node()): no CopySlices, the
    data does not change, and a view stays a view of its base."""
    check_inplace(self)
    e = edge(self)
    r = op.call_below_autograd(self, *args)
    n = node()
    n._next = (e,)
    _become(self, r)
    set_history(self, n)
    return self


def transpose_(self, dim0, dim1):
    if _records(self):
        return _inplace_view(self, _ops.transpose_int, (dim0, dim1), lambda: f.TransposeBackward1(dim0, dim1))
    return _become(self, _ops.transpose_int.call(self, dim0, dim1))


def _t_dims(self):
    n = len(self._shape)
    if n > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {n}D")
    return 0, n - 1 if n else 0


def t_(self):
    if _records(self):
        check_inplace(self)  # before the dims check, as PyTorch's Autograd kernel does
        return _inplace_view(self, _ops.transpose_int, _t_dims(self), f.TBackward1)
    return _become(self, _ops.transpose_int.call(self, *_t_dims(self)))


def _squeeze(dim):
    """The squeeze overload for `dim`, and its arguments after self."""
    g = _ops
    if dim is None:
        return g.squeeze, ()
    if isinstance(dim, int):
        return g.squeeze_dim, (dim,)
    return g.squeeze_dims, (dim,)


def squeeze_(self, dim=None):
    if _records(self):
        sizes = tuple(self._shape)
        node = (lambda: f.SqueezeBackward3(sizes)) if dim is None else \
            (lambda: f.SqueezeBackward4(sizes, dim)) if isinstance(dim, int) else \
            (lambda: f.SqueezeBackward5(sizes, tuple(dim)))
        return _inplace_view(self, *_squeeze(dim), node)
    op, args = _squeeze(dim)
    return _become(self, op.call(self, *args))


def unsqueeze_(self, dim):
    if _records(self):
        return _inplace_view(self, _ops.unsqueeze, (dim,),
                             lambda: f.UnsqueezeBackward1(wrap_dim(dim, len(self._shape) + 1)))
    return _become(self, _ops.unsqueeze.call(self, dim))


def as_strided_autograd(self, size, stride, storage_offset=None):
    """as_strided's Autograd kernel: f.AsStridedBackward0 keeps the input's geometry (PyTorch's
    TensorGeometry), so writes into the input after the call do not invalidate the node."""
    r = _ops.as_strided.call_below_autograd(self, size, stride, storage_offset)
    if _st().ag:  # grad mode on
        e = edge(self)
        if e is not None:
            n = f.AsStridedBackward0((tuple(self._shape), tuple(self.stride()), self.storage_offset()),
                                   tuple(size), tuple(stride), storage_offset)
            n._next = (e,)
            set_history(r, n)
    return r


def as_strided_(self, size, stride, storage_offset=None):
    if _records(self):
        geom = (tuple(self._shape), tuple(self.stride()), self.storage_offset())
        return _inplace_view(self, _ops.as_strided, (size, stride, storage_offset),
                             lambda: f.AsStridedBackward1(geom, tuple(size), tuple(stride), storage_offset))
    return _become(self, _ops.as_strided.call(self, size, stride, storage_offset))
