"""View operators for any strided backend whose memory is not a NumPy array ember owns (CUDA,
PrivateUse1 backends such as examples/async_device).

A view changes only sizes, strides and storage offset. The Meta kernels of view operators
(ember/kernels/meta/views.py through meta/_glue.view -> make_view_meta) build the view from its
base's device, keys and storage without touching data, so the very same functions are correct
kernels for every strided backend: PyTorch likewise shares one set of view kernels
(aten/src/ATen/native/TensorShape.cpp) between its CPU and CUDA builds.
"""
from ember.core.keys import AUTOGRAD_MASK, DispatchKey
from ember.core.tensor_impl import make_meta
from ember.kernels.meta import views as _meta_views

__all__ = ["register_strided_views", "view_operator_names"]


def _unsafe_view(self, size):
    """aten::_unsafe_view: reshape's copy path. Its result shares the (fresh, contiguous) input's
    storage but is not tracked as a view; the Meta kernel makes a storage-less meta tensor, so
    strided backends get this one."""
    shape, dtype, strides = _meta_views.unsafe_view(self, size)
    t = make_meta(shape, dtype, strides, device=self._device, keys=self._keys & ~AUTOGRAD_MASK)
    t._storage = self.untyped_storage()
    t._offset = self.storage_offset()
    return t


def view_operator_names():
    """Qualified names of the operators whose Meta kernel is a valid kernel for every strided
    backend: every view operator (schema returns Tensor(a)) with a Meta kernel."""
    from ember.dispatch.operator import FALLTHROUGH, OPERATORS
    out = []
    for q, op in OPERATORS.items():
        k = op.kernels.get(DispatchKey.Meta)
        if k is None or k is FALLTHROUGH:
            continue
        if k.redispatch or k.boxed or not op.schema.is_view:
            continue
        out.append(q)
    return out


def register_strided_views(lib, key):
    """Register every view operator's Meta kernel (and _unsafe_view) under `key` through `lib`,
    an ember.library.Library("aten", "IMPL"); lib._destroy() removes them again."""
    from ember.dispatch.operator import OPERATORS
    for q in view_operator_names():
        lib.impl(q, OPERATORS[q].kernels[DispatchKey.Meta].fn, key)
    lib.impl("aten::_unsafe_view", _unsafe_view, key)
    return lib
