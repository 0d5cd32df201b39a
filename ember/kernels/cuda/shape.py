"""cat and stack on the CUDA backend: each input is copied into its slice of the output by the
pointwise template (one launch per input; strided inputs and dtype promotion handled there)."""
from ember.core.tensor_impl import make_view_meta
from ember.kernels.cuda import _launch as L
from ember.kernels.cuda import pointwise as P
from ember.kernels.meta import shape as MS


def _dev(tensors):
    for t in tensors:
        if not L.is_dev(t):
            raise L.Unsupported()  # mixed devices: the fallback gives PyTorch's error
    return tensors[0]._device


def cat(tensors, dim=0):
    tensors = list(tensors)
    shape, d = MS.cat(tensors, dim)
    dev = _dev(tensors)
    out = L.empty(shape, d, dev)
    _, valid, k = MS.cat_shape([t._shape for t in tensors], dim)
    st = out._strides
    off = 0
    for i in valid:
        t = tensors[i]
        P.run("a", make_view_meta(out, t._shape, st, off * st[k] if shape[k] else 0), (t,), ct=d)
        off += t._shape[k]
    return out


def stack(tensors, dim=0):
    tensors = list(tensors)
    shape, d = MS.stack(tensors, dim)
    dev = _dev(tensors)
    k = MS.stack_shape([t._shape for t in tensors], dim)[1]
    out = L.empty(shape, d, dev)
    st = out._strides
    sub = st[:k] + st[k + 1:]
    for i, t in enumerate(tensors):
        P.run("a", make_view_meta(out, t._shape, sub, i * st[k]), (t,), ct=d)
    return out


KERNELS = L.guarded({"cat": cat, "stack": stack})
