"""The *_copy view variants and the *_scatter ops, written with other ember operators (every backend).

`X_copy(...)` is the view `X(...)` followed by a contiguous clone (as torch's generated
CompositeExplicitAutogradNonFunctional kernels do); `X_scatter(self, src, ...)` clones `self`,
takes the view X of the clone and copies `src` into it. Autograd flows through the composition.
"""
from ember._generated import ops as _ops
from ember.core.errors import fmt_shape
from ember.core.layout import contiguous_format


def _c(t):
    return _ops.clone.call(t, contiguous_format)


def alias_copy(self):
    return _c(_ops.alias.call(self))


def as_strided_copy(self, size, stride, storage_offset=None):
    return _c(_ops.as_strided.call(self, size, stride, storage_offset))


def diagonal_copy(self, offset=0, dim1=0, dim2=1):
    return _c(_ops.diagonal.call(self, offset, dim1, dim2))


def expand_copy(self, size, implicit=False):
    return _c(_ops.expand.call(self, size, implicit))


def permute_copy(self, dims):
    return _c(_ops.permute.call(self, dims))


def select_copy(self, dim, index):
    return _c(_ops.select_int.call(self, dim, index))


def slice_copy(self, dim=0, start=None, end=None, step=1):
    return _c(_ops.slice_Tensor.call(self, dim, start, end, step))


def split_copy(self, split_size, dim=0):
    return [_c(t) for t in _ops.split_Tensor.call(self, split_size, dim)]


def split_with_sizes_copy(self, split_sizes, dim=0):
    return [_c(t) for t in _ops.split_with_sizes.call(self, split_sizes, dim)]


def squeeze_copy(self):
    return _c(_ops.squeeze.call(self))


def squeeze_copy_dim(self, dim):
    return _c(_ops.squeeze_dim.call(self, dim))


def squeeze_copy_dims(self, dim):
    return _c(_ops.squeeze_dims.call(self, dim))


def t_copy(self):
    return _c(_ops.t.call(self))


def transpose_copy(self, dim0, dim1):
    return _c(_ops.transpose_int.call(self, dim0, dim1))


def unbind_copy(self, dim=0):
    return [_c(t) for t in _ops.unbind_int.call(self, dim)]


def unfold_copy(self, dimension, size, step):
    return _c(_ops.unfold.call(self, dimension, size, step))


def unsqueeze_copy(self, dim):
    return _c(_ops.unsqueeze.call(self, dim))


def view_copy(self, size):
    return _c(_ops.view.call(self, size))


def view_copy_dtype(self, dtype):
    return _c(_ops.view_dtype.call(self, dtype))


def narrow_copy(self, dim, start, length):
    return _c(_ops.narrow.call(self, dim, start, length))


def _scatter(self, src, view_fn):
    out = _ops.clone.call(self, None)
    view = view_fn(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{fmt_shape(src.shape)}, slice size = {fmt_shape(view.shape)}")
    _ops.copy_.call(view, src, False)
    return out


def select_scatter(self, src, dim, index):
    return _scatter(self, src, lambda o: _ops.select_int.call(o, dim, index))


def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    return _scatter(self, src, lambda o: _ops.slice_Tensor.call(o, dim, start, end, step))


def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    return _scatter(self, src, lambda o: _ops.diagonal.call(o, offset, dim1, dim2))


def as_strided_scatter(self, src, size, stride, storage_offset=None):
    return _scatter(self, src, lambda o: _ops.as_strided.call(o, size, stride, storage_offset))
