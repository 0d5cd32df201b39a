"""Backward helpers of the indexing family (FunctionsManual.cpp's select/slice/index/gather/scatter/
masked/take/put parts).

Every helper is written with ember operators, so the gradients are differentiable again (double
backward): the backward of select/slice writes the gradient into zeros through the same view with
copy_ (first order) or with index_copy (under create_graph, so higher orders need no CopySlices);
the backward of an index op is the matching scatter (index_put_ with accumulate, scatter_add_,
index_add_, put_, masked_scatter_), whose own backward is the gather again.
"""
import ember
from ember._generated import ops as _ops
from ember.core import dtype as _dt
from ember.core import tls as _tls
from ember.core.keys import DispatchKey

__all__ = [
    "idx_select_backward", "idx_slice_backward", "idx_unsqueeze_backward", "idx_index",
    "idx_index_backward", "idx_index_put_self_backward", "idx_gather_backward",
    "idx_index_select_backward", "idx_index_source_backward", "idx_index_fill_value_backward",
    "idx_masked_select_backward", "idx_masked_scatter_backward", "idx_take_backward",
    "idx_take_along_dim_backward", "idx_put_self_backward", "idx_scatter_reduce_backward",
    "idx_index_reduce_backward", "idx_not_implemented",
]

_st = _tls.current


_BATCHED = 1 << DispatchKey.FuncTorchBatched


def _zeros(sizes, like):
    if like._keys & _BATCHED:  # like.new_zeros, as torch's formulas: under vmap, batched zeros to write into
        return like.new_zeros(tuple(sizes))
    return ember.zeros(tuple(sizes), dtype=like._dtype, device=like._device)


def idx_not_implemented(op):
    """The error of PyTorch's NotImplemented node (an op without a derivative formula)."""
    raise RuntimeError(f"derivative for aten::{op} is not implemented")


# ---- views ----------------------------------------------------------------------------------------
def _differentiable(grad):
    """create_graph=True: the backward itself is being recorded."""
    return bool(_st().ag) and grad.requires_grad


def idx_select_backward(grad, sizes, dim, index):
    """select_backward: zeros of the input's shape with grad written where select took it. Under
    create_graph the write is index_copy (its derivative is index_select, so higher orders need
    no CopySlices); otherwise a plain copy_ through the same select."""
    r = _zeros(sizes, grad)
    if _differentiable(grad):
        d = dim + len(sizes) if dim < 0 else dim
        i = index + sizes[d] if index < 0 else index
        return r.index_copy(d, ember.tensor([i], device=grad._device), grad.unsqueeze(d))
    r.select(dim, index).copy_(grad)
    return r


def idx_slice_backward(grad, sizes, dim, start, end, step):
    """slice_backward: zeros of the input's shape with grad written where the slice took it
    (index_copy under create_graph, as in idx_select_backward)."""
    r = _zeros(sizes, grad)
    if _differentiable(grad):
        d = dim + len(sizes) if dim < 0 else dim
        pos = range(*slice(start, end, step).indices(sizes[d]))
        if len(pos) == sizes[d]:
            return grad
        idx = ember.arange(pos.start, pos.stop, pos.step, device=grad._device) if len(pos) else \
            ember.zeros((0,), dtype=ember.int64, device=grad._device)
        return r.index_copy(d, idx, grad)
    _ops.slice_Tensor(r, dim, start, end, step).copy_(grad)
    return r


def idx_unsqueeze_backward(grad, sizes):
    """grad.squeeze(dim): dropping a size-1 dim is always a view (ViewBackward0 when differentiated)."""
    return grad.view(tuple(sizes))


# ---- index / index_put --------------------------------------------------------------------------
def idx_index(t, indices):
    """t[indices] as aten::index.Tensor (Tensor.index is not a method in PyTorch)."""
    return _ops.index_Tensor(t, list(indices))


def idx_index_backward(grad, sizes, indices):
    """index_backward: zeros(self).index_put_(indices, grad, accumulate=True)."""
    return _zeros(sizes, grad).index_put_(list(indices), grad, True)


def idx_index_put_self_backward(grad, indices, accumulate):
    """accumulate ? grad : grad.index_put(indices, zeros_like(values), false)."""
    if accumulate:
        return grad
    return grad.index_put(list(indices), _zeros((), grad), False)


# ---- gather / scatter / index_select ------------------------------------------------------------
def idx_gather_backward(grad, sizes, dim, index):
    """gather_backward (dense): zeros(self).scatter_add_(dim, index, grad)."""
    return _zeros(sizes, grad).scatter_add_(dim, index, grad)


def idx_index_select_backward(grad, sizes, dim, index):
    """index_select_backward: zeros(self).index_add_(dim, index, grad)."""
    return _zeros(sizes, grad).index_add_(dim, index, grad)


def idx_index_source_backward(grad, dim, index, source_sizes, alpha=1):
    """index_add / index_copy source: grad.index_select(dim, index).expand_as(source) (or, for a
    0-d source, grad.index_select(dim, index.squeeze(0))), times alpha."""
    if len(source_sizes) > 0:
        r = grad.index_select(dim, index)
        if tuple(r._shape) != tuple(source_sizes):
            r = r.expand(tuple(source_sizes))
    else:
        r = grad.index_select(dim, index.squeeze(0) if index._shape else index)
    if isinstance(alpha, (int, float)) and alpha == 1:
        return r
    return r * alpha


def idx_index_fill_value_backward(grad, dim, index):
    """index_fill.int_Tensor's value: grad.index_select(dim, _unique(index)).sum()."""
    u = _ops._unique(index, False)[0] if index._shape else index
    return grad.index_select(dim, u).sum()


# ---- masked -------------------------------------------------------------------------------------
def _broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def idx_masked_select_backward(grad, sizes, mask):
    """masked_select_backward: zeros of the broadcast shape, masked_scatter_(mask, grad); the
    engine sums the result down to the input's shape."""
    shape = _broadcast_shape(sizes, mask._shape)
    m = mask if tuple(mask._shape) == shape else mask.expand(shape)
    return _zeros(shape, grad).masked_scatter_(m, grad)


def idx_masked_scatter_backward(grad, mask, sizes):
    """masked_scatter_backward: the masked part of grad in order, zero-padded to source's numel."""
    numel = 1
    for s in sizes:
        numel *= s
    sel = grad.masked_select(mask)
    k = sel._shape[0]
    if numel > k:
        pad = _zeros((numel,), grad)
        prefix = ember.arange(numel, device=grad._device) < k
        sel = pad.masked_scatter_(prefix, sel)
    return sel.view(tuple(sizes))


# ---- take / take_along_dim / put ----------------------------------------------------------------
def idx_take_backward(grad, sizes, index):
    """take_backward: zeros(self).put_(index, grad, accumulate=True)."""
    return _zeros(sizes, grad).put_(index, grad, True)


def idx_take_along_dim_backward(grad, sizes, indices, dim):
    """take_along_dim is gather on the broadcast inputs (dim given) or on the flattened input."""
    if dim is None:
        n = 1
        for s in sizes:
            n *= s
        r = _zeros((n,), grad).scatter_add_(0, indices.reshape(-1), grad.reshape(-1))
        return r.view(tuple(sizes))
    sizes = tuple(sizes)
    nd = len(sizes)
    d = dim + nd if dim < 0 else dim
    out = tuple(grad._shape)
    ishape = list(indices._shape)
    if nd:
        ishape[d] = sizes[d]
    bshape = _broadcast_shape(ishape, sizes)
    idx = indices if tuple(indices._shape) == out else indices.expand(out)
    if nd and bshape[d]:
        idx = idx.remainder(bshape[d])  # the forward wraps the indices along dim (`indices % size`)
    return _zeros(bshape, grad).scatter_add_(d, idx, grad)


def idx_put_self_backward(grad, index, accumulate):
    """accumulate ? grad : grad.put(index, zeros_like(source), false)."""
    if accumulate:
        return grad
    return grad.put(index, _zeros(index._shape, grad), False)


# ---- scatter_reduce / index_reduce --------------------------------------------------------------
class _DelayedError:
    """autograd::DelayedError: passes its input through; backward raises `msg`."""
    _cls = None

    @classmethod
    def apply(cls, msg, t):
        if cls._cls is None:
            from ember.autograd.function import Function

            class DelayedError(Function):
                @staticmethod
                def forward(ctx, x, m):
                    ctx.msg = m
                    return x.clone()

                @staticmethod
                def backward(ctx, g):
                    raise RuntimeError(ctx.msg)

            cls._cls = DelayedError
        return cls._cls.apply(t, msg)


def _reduce_backward(grad, self, dim, index, src, reduce, include_self, result, kind):
    """scatter_reduce_backward / index_reduce_backward: `kind` picks gather+scatter_add or
    index_select+index_add for the two directions of the index map."""
    if kind == "scatter":
        def pick(t):
            return t.gather(dim, index)

        def add(t, s):
            return t.scatter_add(dim, index, s)
        name, arg = "scatter_reduce", "src"
    else:
        def pick(t):
            return t.index_select(dim, index)

        def add(t, s):
            return t.index_add(dim, index, s)
        name, arg = "index_reduce", "source"
    sdt = self._dtype
    if sdt.category == _dt.COMPLEX:  # PyTorch raises this in the forward
        raise RuntimeError(f"{name} does not support automatic differentiation for outputs with "
                           "complex dtype.")
    if reduce == "sum":
        grad_self = grad
        grad_src = pick(grad)
    elif reduce == "prod":
        masked_self = self.masked_fill(self == 0, 1)
        if kind == "scatter":
            masked_self_result = masked_self.scatter_reduce(dim, index, src, reduce,
                                                            include_self=include_self)
        else:
            masked_self_result = masked_self.index_reduce(dim, index, src, reduce,
                                                          include_self=include_self)
        grad_self = grad * masked_self_result / masked_self
        src_zero = src == 0
        src_num_zeros = pick(add(ember.zeros_like(self), src_zero.to(sdt)))
        src_single_zero = src_zero & (src_num_zeros == 1)
        masked_src = src.masked_fill(src_single_zero, 1)
        if kind == "scatter":
            masked_src_result = self.scatter_reduce(dim, index, masked_src, reduce,
                                                    include_self=include_self)
        else:
            masked_src_result = self.index_reduce(dim, index, masked_src, reduce,
                                                  include_self=include_self)
        grad_src1 = ember.where(src_single_zero, pick(grad * masked_src_result),
                                pick(grad * result) / src.masked_fill(src_zero, 1))
        if _st().grad_enabled and self._device.type != "meta" and bool((src_num_zeros > 1).any()):
            grad_src = _DelayedError.apply(
                f"{name}(): Double backward is unsupported for {arg} when >1 zeros in {arg} are "
                "scattered to the same position in self", grad_src1)
        else:
            grad_src = grad_src1
    elif reduce == "mean":
        n = ember.ones_like(grad) if include_self else ember.zeros_like(grad)
        n = add(n, ember.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        grad_self = grad / n
        grad_src = pick(grad) / pick(n)
    elif reduce in ("amax", "amin"):
        value = pick(result)
        self_is_result = (self == result).to(sdt)
        src_is_result = (src == value).to(sdt)
        n_to_distribute = add(self_is_result, src_is_result)
        grad_distributed = grad / n_to_distribute
        grad_self = self_is_result * grad_distributed
        grad_src = src_is_result * pick(grad_distributed)
    else:
        raise RuntimeError(f"Expected 'reduce' argument to be one of 'sum', 'prod', 'mean', 'amax', "
                           f"'amin' but got {reduce}.")
    if not include_self:
        grad_self = grad_self.scatter(dim, index, 0) if kind == "scatter" else \
            grad_self.index_fill(dim, index, 0)
    return grad_self, grad_src


def idx_scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result):
    return _reduce_backward(grad, self, dim, index, src, reduce, include_self, result, "scatter")


def idx_index_reduce_backward(grad, self, dim, index, source, reduce, include_self, result):
    return _reduce_backward(grad, self, dim, index, source, reduce, include_self, result, "index")
