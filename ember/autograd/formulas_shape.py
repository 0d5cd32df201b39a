"""Backward helpers of the shape family (FunctionsManual.cpp's permute/expand/squeeze/as_strided/
diagonal/unfold/split/unbind/cat/stack/repeat/roll/view_as_real parts), and the nodes that
ember/kernels/composite_shape.py records itself: AsStridedBackward0 (it keeps the input's geometry,
not the input) and those of the in-place view ops (TransposeBackward1, TBackward1,
SqueezeBackward3/4/5, UnsqueezeBackward1, AsStridedBackward1; set_history, no CopySlices).

Every helper is written with ember operators, so the gradients are differentiable again (double
backward): a view's backward writes the gradient into zeros through the same view and copy_
(CopySlices when create_graph=True), and the backward of a copy op is the matching reduction.
"""
import ember
from ember.autograd.graph import Node
from ember.core import dtype as _dt
from ember.core.errors import wrap_dim
from ember.core.keys import DispatchKey

__all__ = [
    "shp_permute_backward", "shp_unsqueeze_to", "shp_diagonal_backward",
    "shp_unfold_backward", "shp_split_backward", "shp_split_with_sizes_backward",
    "shp_unbind_backward", "shp_cat_backward", "shp_stack_backward", "shp_repeat_backward",
    "shp_roll_backward", "shp_view_as_real_backward", "shp_view_as_complex_backward",
]


_BATCHED = 1 << DispatchKey.FuncTorchBatched


def _zeros(sizes, like):
    if like._keys & _BATCHED:  # like.new_zeros, as torch's formulas: under vmap, batched zeros to write into
        return like.new_zeros(tuple(sizes))
    return ember.zeros(tuple(sizes), dtype=like._dtype, device=like._device)


def _real(g, dtype):
    """A real input's gradient from a complex result is the real part (R -> C)."""
    if dtype.category != _dt.COMPLEX and g._dtype.category == _dt.COMPLEX:
        return g.real
    return g


# ---- views ----------------------------------------------------------------------------------------
def shp_permute_backward(grad, dims):
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[wrap_dim(d, n)] = i
    return grad.permute(inv)


def shp_unsqueeze_to(grad, sizes, dims=None):
    """unsqueeze_to: put back the size-1 dims squeeze removed (all of them, or those in dims)."""
    n = len(sizes)
    if dims is None:
        ds = range(n)
    else:
        if isinstance(dims, int):
            dims = (dims,)
        ds = sorted({wrap_dim(d, n) for d in dims}) if n else ()
    for d in ds:
        if sizes[d] == 1:
            grad = grad.unsqueeze(d)
    return grad


def _maybe_overlapping(sizes, strides):
    order = sorted(range(len(sizes)), key=lambda i: strides[i])
    top = 0
    for i in order:
        if strides[i] <= top:
            return True
        top += strides[i] * (sizes[i] - 1)
    return False


def _min_storage_size(sizes, strides, offset):
    n = offset + 1
    for s, st in zip(sizes, strides):
        if s == 0:
            return offset
        n += (s - 1) * st
    return n


def _as_strided_backward(grad, geom, sizes, strides, storage_offset):
    """as_strided_backward: scatter grad into a zero "storage" along the output geometry
    (index_add_ where it overlaps itself), divide by how often the input geometry reads each
    element, and read the result back with the input geometry."""
    isizes, istrides, ioff = geom
    off = ioff if storage_offset is None else storage_offset
    osz, ost = [], []
    for i in range(grad.dim() - 1, -1, -1):
        s, st = sizes[i], strides[i]
        if s == 0:
            return _zeros(isizes, grad)
        if s == 1:
            grad = grad.squeeze(i)
        elif st == 0:
            grad = grad.sum(i)
        else:
            osz.insert(0, s)
            ost.insert(0, st)
    isz, ist = [], []
    for s, st in zip(isizes, istrides):
        if s == 0:
            return _zeros(isizes, grad)
        if s != 1:
            isz.append(s)
            ist.append(st)
    out_overlap = _maybe_overlapping(osz, ost)
    inp_overlap = _maybe_overlapping(isz, ist)
    shared = min(ioff, off)
    ieff, oeff = ioff - shared, off - shared
    base = max(_min_storage_size(isz, ist, ieff), _min_storage_size(osz, ost, oeff))
    storage = _zeros((base,), grad)
    full = ember.arange(base, device=grad._device) if (out_overlap or inp_overlap) else None
    if out_overlap:
        idx = full.as_strided(osz, ost, oeff).reshape(-1)
        storage.index_add_(0, idx, grad.reshape(-1))
    else:
        storage.as_strided(osz, ost, oeff).copy_(grad)
    if inp_overlap:
        count = _zeros((base,), grad)
        idx = full.as_strided(isz, ist, ieff).reshape(-1)
        count.index_add_(0, idx, ember.ones(1, dtype=grad._dtype, device=grad._device).expand(idx._shape))
        storage = storage / count  # nan outside what the input reads; never read below
    return storage.as_strided(tuple(isizes), tuple(istrides), ieff)


def shp_diagonal_backward(grad, sizes, offset, dim1, dim2):
    r = _zeros(sizes, grad)
    r.diagonal(offset, dim1, dim2).copy_(grad)
    return r


def shp_unfold_backward(grad, sizes, dim, size, step):
    """unfold_backward: every window's gradient added back to the positions it read
    (index_add_ along dim, whose own backward is index_select, i.e. the unfold again)."""
    n = len(sizes)
    if n == 0:
        return grad.reshape(())
    d = wrap_dim(dim, n)
    nw = grad._shape[d]
    if nw == 0 or size == 0:
        return _zeros(sizes, grad)
    starts = ember.arange(nw, device=grad._device) * step
    idx = (starts.unsqueeze(1) + ember.arange(size, device=grad._device)).reshape(-1)
    g = grad.movedim(-1, d + 1).flatten(d, d + 1)  # windows then their elements, along d
    return _zeros(sizes, grad).index_add_(d, idx, g)


def _fill_undefined(grads, lengths, dim, sizes, like):
    out = []
    for g, n in zip(grads, lengths):
        if g is None:
            s = list(sizes)
            s[dim] = n
            g = _zeros(s, like)
        out.append(g)
    return out


def _first_defined(grads):
    return next(g for g in grads if g is not None)


def shp_split_with_sizes_backward(grads, split_sizes, dim, sizes):
    dim = wrap_dim(dim, len(sizes))
    gs = _fill_undefined(grads, split_sizes, dim, sizes, _first_defined(grads))
    return ember.cat(gs, dim)


def shp_split_backward(grads, split_size, dim, sizes):
    dim = wrap_dim(dim, len(sizes))
    size = sizes[dim]
    n = len(grads)
    lengths = [split_size] * n
    if n:
        lengths[-1] = split_size - (split_size * n - size)
    return shp_split_with_sizes_backward(grads, lengths, dim, sizes)


def shp_unbind_backward(grads, dim):
    like = _first_defined(grads)
    gs = [g if g is not None else _zeros((), like).expand(like._shape) for g in grads]
    return ember.stack(gs, dim)


# ---- copies ---------------------------------------------------------------------------------------
def shp_cat_backward(grad, sizes, dtypes, dim):
    """cat_tensors_backward: narrow the gradient back into the inputs (legacy 1-d empty inputs,
    which cat skips, get an empty gradient)."""
    nd = grad.dim()
    dim = wrap_dim(dim, nd) if nd else 0
    out = []
    start = 0
    for s, dt in zip(sizes, dtypes):
        g = _real(grad, dt)
        if len(s) == 1 and s[0] == 0:
            out.append(_zeros((0,), g))
            continue
        n = s[dim]
        out.append(g.narrow(dim, start, n))
        start += n
    return out


def shp_stack_backward(grad, dim, dtypes):
    dim = wrap_dim(dim, grad.dim())
    return [_real(grad.select(dim, i), dt) for i, dt in enumerate(dtypes)]


def shp_repeat_backward(grad, repeats, sizes):
    repeats = tuple(repeats)
    if 0 in repeats:
        return _zeros(sizes, grad)
    nd = len(sizes)
    for _ in range(grad.dim() - nd):
        grad = grad.sum(0)
    lead = len(repeats) - nd
    gsize, sdims = [], []
    for d in range(nd):
        r = repeats[d + lead]
        if r != 1:
            gsize.append(r)
            sdims.append(len(gsize) - 1)
        gsize.append(sizes[d])
    if sdims:
        grad = grad.reshape(gsize).sum(sdims)
    return grad


def shp_roll_backward(grad, shifts, dims):
    if isinstance(shifts, int):
        shifts = (shifts,)
    if isinstance(dims, int):
        dims = (dims,)
    return grad.roll([-s for s in reversed(shifts)], list(reversed(tuple(dims))))


def shp_view_as_real_backward(grad):
    return ember.view_as_complex(grad.contiguous())


def shp_view_as_complex_backward(grad):
    return ember.view_as_real(grad.contiguous().resolve_conj())


# ---- nodes recorded by composite_shape: as_strided and the in-place view ops -------------------------
class _ShapeNode(Node):
    __slots__ = ()
    _tensors_saved = ()

    def apply(self, grads):
        if self._next[0] is None or grads[0] is None:
            return [None]
        return [self.backward(grads[0])]


class TransposeBackward1(_ShapeNode):
    __slots__ = ("dim0", "dim1")

    def __init__(self, dim0, dim1):
        Node.__init__(self)
        self.dim0, self.dim1 = dim0, dim1

    def backward(self, grad):
        return grad.transpose(self.dim0, self.dim1)

    @property
    def _saved_dim0(self):
        return self.dim0

    @property
    def _saved_dim1(self):
        return self.dim1


class TBackward1(_ShapeNode):
    __slots__ = ()

    def backward(self, grad):
        return grad.t()


class _SqueezeInplace(_ShapeNode):
    __slots__ = ("self_sizes", "dim")

    def __init__(self, sizes, dim=None):
        Node.__init__(self)
        self.self_sizes, self.dim = sizes, dim

    def backward(self, grad):
        return shp_unsqueeze_to(grad, self.self_sizes, self.dim)

    @property
    def _saved_self_sym_sizes(self):
        return self.self_sizes


class SqueezeBackward3(_SqueezeInplace):
    __slots__ = ()


class SqueezeBackward4(_SqueezeInplace):
    __slots__ = ()

    @property
    def _saved_dim(self):
        return self.dim


class SqueezeBackward5(_SqueezeInplace):
    __slots__ = ()

    @property
    def _saved_dim(self):
        return self.dim


class UnsqueezeBackward1(_ShapeNode):
    __slots__ = ("dim",)

    def __init__(self, dim):
        Node.__init__(self)
        self.dim = dim

    def backward(self, grad):
        return grad.squeeze(self.dim)

    @property
    def _saved_dim(self):
        return self.dim


class AsStridedBackward0(_ShapeNode):
    """as_strided's node: the input's geometry (sizes, strides, storage offset), not the input."""
    __slots__ = ("geom", "size", "stride", "storage_offset")

    def __init__(self, geom, size, stride, storage_offset):
        Node.__init__(self)
        self.geom, self.size, self.stride, self.storage_offset = geom, size, stride, storage_offset

    def backward(self, grad):
        return _as_strided_backward(grad, self.geom, self.size, self.stride, self.storage_offset)

    @property
    def _saved_size(self):
        return self.size

    @property
    def _saved_stride(self):
        return self.stride

    @property
    def _saved_storage_offset(self):
        return self.storage_offset


class AsStridedBackward1(AsStridedBackward0):
    __slots__ = ()
