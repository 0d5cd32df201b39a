"""Helpers shared by the backward formulas in ember/ops/derivatives*.yaml (FunctionsManual.cpp).

Every helper is written with ember operators, so a backward graph is itself differentiable
(double backward through create_graph=True).
"""
import ember
from ember.autograd.record import TraceableFunction
from ember.core import dtype as _dt


def sum_to(grad, shape):
    """Sum `grad` down to `shape` (undo broadcasting)."""
    shape = tuple(shape)
    gs = grad._shape
    if gs == shape:
        return grad
    lead = len(gs) - len(shape)
    dims = list(range(lead))
    for i, s in enumerate(shape):
        if s == 1 and gs[lead + i] != 1:
            dims.append(lead + i)
    r = grad.sum(dims, keepdim=True) if dims else grad
    if lead:
        r = r.reshape(shape)
    elif r._shape != shape:
        r = r.reshape(shape)
    return r


def maybe_multiply(t, s):
    return t if (isinstance(s, (int, float)) and s == 1) else t * s


def handle_r_to_c(dtype, g):
    """A real input's gradient from a complex computation is the real part."""
    if g is None:
        return None
    if dtype.category != _dt.COMPLEX and g._dtype.category == _dt.COMPLEX:
        return g.real
    return g


def conj(t):
    try:
        d = t._dtype
    except AttributeError:  # a Python number
        return t.conjugate() if isinstance(t, complex) else t
    return t.conj() if d.category == _dt.COMPLEX else t


def restore_reduced_dims(grad, dims, keepdim, ndim):
    """Reinsert the reduced dimensions (size 1) so grad broadcasts against the input."""
    if keepdim or ndim == 0:
        return grad
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        return grad.reshape((1,) * ndim)
    if isinstance(dims, int):
        dims = (dims,)
    r = grad
    for d in sorted(x % ndim for x in dims):
        r = r.unsqueeze(d)
    return r


def sum_backward(grad, sizes, dims, keepdim):
    return restore_reduced_dims(grad, dims, keepdim, len(sizes)).expand(sizes)


def zeros_like(t):
    return ember.zeros(tuple(t._shape), dtype=t._dtype, device=t._device)


class ZerosLikeGrad(TraceableFunction):
    """The base of a node whose one formula is `self: zeros_like(grad)` and that saves nothing (sign,
    floor, fill_, the random ops...): the generated class is its name and empty slots."""
    __slots__ = ()

    def apply(self, grads):
        return (zeros_like(grads[0]),)


def values_backward(grad, self):
    """ValuesBackward0 (FunctionsManual's values_backward): the values' gradient at self's pattern, a
    coalesced COO tensor, or a CSR tensor with self's compressed indices."""
    if self.is_sparse_csr:
        return ember.sparse_csr_tensor(self.crow_indices(), self.col_indices(), grad, self.shape)
    return ember._sparse_coo_tensor_with_dims_and_tensors(self.sparse_dim(), self.dense_dim(), self.shape,
                                                          self._indices(), grad, is_coalesced=True)


def not_implemented(name):
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


# metadata saved instead of whole tensors (a Tensor argument may be a Python number)
def _sizes_of(x):
    return x._shape if hasattr(x, "_shape") else ()


def _strides_of(x):
    try:
        return x._get_strides()
    except AttributeError:  # a Python number standing for a Tensor argument
        return ()


def _dtype_of(x):
    return x._dtype if hasattr(x, "_dtype") else _dt.scalar_dtype(x)


def _device_of(x):
    return x._device if hasattr(x, "_device") else None


def _numel_of(x):
    return x.numel() if hasattr(x, "_shape") else 1


def _dim_of(x):
    return len(x._shape) if hasattr(x, "_shape") else 0
