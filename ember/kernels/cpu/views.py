"""View kernels: NumPy views of the input array (no copy), with PyTorch's strides.

NumPy's own view operations are used where they give PyTorch's strides (they are the fast
path); otherwise the geometry from ember/kernels/meta/views.py is applied with as_strided.
Expanded views (a stride 0 over a dimension of size > 1) are read-only NumPy arrays: that is
how in-place kernels detect internal overlap and raise PyTorch's error.
"""
import numpy as np

from ember.core.dtype import CHALF_NP, NP2DT
from ember.core.errors import wrap_dim
from ember.core.tensor_impl import contiguous_strides, empty_geometry, set_empty_geometry
from ember.kernels.meta import views as _m

_as_strided = np.lib.stride_tricks.as_strided
_slice = slice
_S = slice(None)
_E = Ellipsis
_ndarray = np.ndarray
_nd = np.ndarray


def _root(a):
    """The array owning a's memory (also through as_strided's DummyArray wrappers)."""
    while True:
        b = a.base
        if b is None:
            return a
        if b.__class__ is not _ndarray and not isinstance(b, _ndarray):
            b = getattr(b, "base", None)
            if not isinstance(b, _ndarray):
                return a
        a = b


def _estrides(a):
    isz = a.itemsize
    return tuple(s // isz for s in a.strides)


def _overlapping(shape, strides):
    for n, s in zip(shape, strides):
        if s == 0 and n > 1:
            return True
    return False


def _ptr(a):
    return a.__array_interface__["data"][0]


def _view_at(a, dtype, shape, bstrides, boff=0):
    """An ndarray of `dtype` over a's memory, starting `boff` bytes after a's first element.

    Built with np.ndarray(buffer=...) over `a` (when dense) or over the array owning the memory,
    so the result's .base chain leads to that owner (the storage); as_strided's DummyArray would
    hide it."""
    try:
        r = _nd(shape, dtype, a, boff, bstrides)
    except (ValueError, TypeError, BufferError):
        root = _root(a)
        try:
            r = _nd(shape, dtype, root, _ptr(a) - _ptr(root) + boff, bstrides)
        except (ValueError, TypeError, BufferError):  # memory not owned by a dense array
            u8 = _as_strided(a, (1,), (a.itemsize,)).view(np.uint8)
            isz = np.dtype(dtype).itemsize
            r = _as_strided(u8[boff:] if boff >= 0 else u8, tuple(shape) + (isz,),
                            tuple(bstrides) + (1,)).view(dtype)[..., 0]
        if not a.flags.writeable and r.flags.writeable:
            r.flags.writeable = False
    return r


def _make(a, shape, bstrides, boff=0, expanded=False):
    """A view of `a` starting `boff` bytes after a's first element, with byte strides. An
    `expanded` result is read-only when it overlaps itself; a view of a read-only (expanded) input
    is writable again when it no longer does."""
    try:
        r = _nd(shape, a.dtype, a, boff, bstrides)  # fast: `a` exports its (dense) buffer
    except (ValueError, TypeError, BufferError):
        r = _view_at(a, a.dtype, shape, bstrides, boff)
    if expanded:
        for n, s in zip(shape, bstrides):
            if s == 0 and n > 1:
                r.flags.writeable = False
                return r
    if not a.flags.writeable:
        return _recover_writeable(r, a)
    return r


def _c_exact(a):
    """a has exactly C-contiguous strides (NumPy's flag ignores the strides of size-1 dims)."""
    acc = a.itemsize
    shape, st = a.shape, a.strides
    for i in range(len(shape) - 1, -1, -1):
        if st[i] != acc:
            return False
        acc *= shape[i]
    return True


def _recover_writeable(r, a):
    """r, a view of a read-only (expanded) `a`: writable again when it no longer overlaps."""
    if not a.flags.writeable and not _overlapping(r.shape, r.strides):
        try:
            if _root(a).flags.writeable:
                r.flags.writeable = True
        except ValueError:
            pass
    return r


# ---- zero-size views --------------------------------------------------------------------------
# NumPy gives an empty array zero strides and no place in the storage, where torch's view formulas
# keep strides and storage offset (zeros(3, 0).t() has strides (1, 1)). Each view below takes this
# path when its result is empty: torch's geometry of the input (_geometry), the view formula of
# ember/kernels/meta/views.py on it, and an array recording the result's (_empty_view). The check is
# one test of the result's (or input's) size, where the kernel had none already.
def _geometry(a):
    """torch's (strides, storage offset) of array a, in elements."""
    if a.size:
        return _estrides(a), _offset(a)
    g = empty_geometry(a)
    if g is not None:
        return g
    for s in a.strides:
        if s:  # strides given to it (an empty array NumPy derived from a recorded one): its data
            root = _root(a)  # pointer gives the offset when it lies inside the storage
            off = _ptr(a) - _ptr(root)
            return _estrides(a), (off // a.itemsize if 0 <= off <= root.nbytes else 0)
    return contiguous_strides(a.shape), 0  # NumPy's own empty array: torch's would be contiguous


def _empty_view(a, shape, strides, offset, dtype=None):
    """A zero-size array over a's storage recording torch's geometry (strides, offset in elements of
    `dtype`, a's by default). It carries the strides as well; its data pointer sits at the offset
    when that lies inside the storage (an empty view may start past its end)."""
    npd = a.dtype if dtype is None else np.dtype(dtype)
    isz = npd.itemsize
    shape, strides = tuple(shape), tuple(strides)
    bst = tuple([s * isz for s in strides])
    root = _root(a)
    try:
        r = _nd(shape, npd, root, offset * isz, bst)
    except (ValueError, TypeError, BufferError):  # past the end, or memory not owned by a dense array
        r = _as_strided(a if npd == a.dtype else np.empty(0, npd), shape, bst)
    return set_empty_geometry(r, strides, offset)


def _empty_same(a):
    """An empty a's alias (detach, alias, a no-op expand or squeeze) keeping its geometry."""
    st, off = _geometry(a)
    return _empty_view(a, a.shape, st, off)


# ---- the views ----------------------------------------------------------------------------------
def transpose(a, dim0, dim1):
    n = a.ndim
    d0 = dim0 if 0 <= dim0 < n else wrap_dim(dim0, n)  # the common case without wrap_dim's frame
    d1 = dim1 if 0 <= dim1 < n else wrap_dim(dim1, n)
    if not a.size:
        st, off = _geometry(a)
        shape, st = list(a.shape), list(st)
        if n >= 2:
            shape[d0], shape[d1] = shape[d1], shape[d0]
            st[d0], st[d1] = st[d1], st[d0]
        return _empty_view(a, shape, st, off)
    if n < 2:
        return a[...]
    return a.swapaxes(d0, d1)


def detach(a):
    if not a.size:
        return _empty_same(a)
    return a[...]


alias = detach


def view(a, size):
    shape = _m.infer_size(size, a.size)
    if a.flags.c_contiguous and a.size and (1 not in a.shape or _c_exact(a)):
        return a.reshape(shape)  # computeStride gives the contiguous strides NumPy gives
    if not a.size:
        st, off = _geometry(a)
        return _empty_view(a, shape, _m.view_strides(a.shape, st, shape), off)
    strides = _m.view_strides(a.shape, a.strides, shape, a.itemsize)
    if strides is None:
        raise RuntimeError(_m.VIEW_ERROR)
    return _make(a, shape, strides)


def unsafe_view(a, size):
    """_unsafe_view: view's geometry, but the result is a new tensor for autograd (not a view)."""
    return view(a, size)


def as_strided(a, size, stride, storage_offset=None):
    root = _root(a)
    isz = a.itemsize
    if a.size:
        cur = (_ptr(a) - _ptr(root)) // isz
    else:  # torch's offset of an empty view, which its array's data pointer may not show
        cur = _geometry(a)[1]
    if storage_offset is None:
        storage_offset = cur
    _m.check_in_bounds(size, stride, storage_offset, isz, root.nbytes)
    size, stride = tuple(size), tuple(stride)
    if 0 in size:
        return _empty_view(a, size, stride, storage_offset)
    bst = tuple(s * isz for s in stride)
    try:  # writable when the memory is (an expanded input's as_strided may not overlap)
        r = _nd(size, a.dtype, root, storage_offset * isz, bst)
    except (ValueError, TypeError, BufferError):
        r = _view_at(a, a.dtype, size, bst, (storage_offset - cur) * isz)
    if _overlapping(size, stride) and r.flags.writeable:
        r.flags.writeable = False
    return r


def select(a, dim, index):
    n = a.ndim
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = dim if 0 <= dim < n else wrap_dim(dim, n)  # the common case without wrap_dim's frame
    size = a.shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{_m.fmt_shape(a.shape)} at dimension {dim}")
    if d == 0:
        r = a[index, ...]
    else:
        r = a[(_S,) * d + (index, _E)]
    if r.size == 0:  # NumPy normalizes the strides of empty arrays
        st, off = _geometry(a)
        return _empty_view(a, *_m.select_geom(a.shape, st, off, d, index))
    if not a.flags.writeable:
        return _recover_writeable(r, a)
    return r


def slice(a, dim=0, start=None, end=None, step=1):  # noqa: A001
    n = a.ndim
    if n == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = dim if 0 <= dim < n else wrap_dim(dim, n)  # the common case without wrap_dim's frame
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    if d == 0:
        r = a[start:end:step]
    else:
        r = a[(_S,) * d + (_slice(start, end, step),)]
    if r.size == 0:  # NumPy normalizes the strides of empty arrays
        st, off = _geometry(a)
        return _empty_view(a, *_m.slice_geom(a.shape, st, off, d, start, end, step))
    if not a.flags.writeable:
        return _recover_writeable(r, a)
    return r


def unsqueeze(a, dim):
    shape = a.shape
    n = len(shape)
    d = dim if 0 <= dim <= n else wrap_dim(dim, n + 1)
    nshape = shape[:d] + (1,) + shape[d:]
    if a.flags.c_contiguous and a.size and 1 not in shape:
        return a.reshape(nshape)  # C strides are PyTorch's here
    if not a.size:
        st, off = _geometry(a)
        nshape, st = _m.unsqueeze_geom(shape, st, d)
        return _empty_view(a, nshape, st, off)
    bst = a.strides
    want = bst[:d] + ((a.itemsize if d == n else shape[d] * bst[d]),) + bst[d:]
    r = a.reshape(nshape)
    if r.strides == want:
        return r
    return _make(a, nshape, want)


def squeeze(a, dim=None):
    if not a.size:
        st, off = _geometry(a)
        shape, st = _m.squeeze_geom(a.shape, st, dim)
        return _empty_view(a, shape, st, off)
    if dim is None:
        return a.squeeze()
    axes = _m.squeeze_axes(a.shape, dim)
    return a.squeeze(axes) if axes else a[...]


# expand's error names the tensor type: one prepared callable per dtype (no closure per call)
_TYPE_STR = {npd: (lambda short=dt._short: _m.type_str(short, "cpu")) for npd, dt in NP2DT.items()}


def expand(a, size, implicit=False):
    shape = a.shape
    if size == shape:
        r = a[...]
    else:
        nshape, nst = _m.expand_geom(shape, a.strides, size, _TYPE_STR[a.dtype])
        r = _make(a, nshape, nst, 0, True)
    if r.size:
        return r
    st, off = _geometry(a)  # an empty result: torch's strides (and writable, as nothing overlaps)
    nshape, nst = _m.expand_geom(shape, st, size, None)
    return _empty_view(a, nshape, nst, off)


def _empty_permute(a, dims):
    p = _m.permute_dims(a.ndim, dims)
    st, off = _geometry(a)
    return _empty_view(a, [a.shape[i] for i in p], [st[i] for i in p], off)


def permute(a, dims):
    if not a.size:  # (its own function: a comprehension here would make `a` a cell variable)
        return _empty_permute(a, dims)
    if len(dims) == a.ndim:
        try:  # NumPy wraps negative dims as PyTorch does and rejects repeated ones
            return a.transpose(dims)
        except (ValueError, TypeError):
            pass
    return a.transpose(_m.permute_dims(a.ndim, dims))


def diagonal(a, offset=0, dim1=0, dim2=1):
    n = a.ndim
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    r = a.diagonal(offset, d1, d2)  # PyTorch's geometry, but read-only and odd when empty
    if r.size == 0:
        st, off = _geometry(a)
        return _empty_view(a, *_m.diagonal_geom(a.shape, st, off, offset, d1, d2))
    if a.flags.writeable:
        r.flags.writeable = True
        return r
    return _recover_writeable(r, a)


def unfold(a, dimension, size, step):
    shape, strides = _m.unfold_geom(a.shape, a.strides, dimension, size, step, a.itemsize)
    if 0 in shape:
        st, off = _geometry(a)
        shape, strides = _m.unfold_geom(a.shape, st, dimension, size, step)
        return _empty_view(a, shape, strides, off)
    return _make(a, shape, strides)


def _offset(a):
    """a's storage offset in elements (an empty a's from _geometry)."""
    if a.size == 0:
        return _geometry(a)[1]
    root = _root(a)
    return (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // a.itemsize


def _reinterpret(a, npdt, shape, strides):
    """An array of NumPy dtype npdt starting at a's first byte, with element strides (npdt units)."""
    isz = npdt.itemsize
    if a.size == 0:
        return _as_strided(np.empty(1, npdt)[:0], tuple(shape), tuple(s * isz for s in strides))
    return _view_at(a, npdt, tuple(shape), tuple(s * isz for s in strides), 0)


def view_dtype(a, dtype):
    """a viewed as `dtype` (an ember dtype); the caller gives the tensor its new dtype."""
    old = NP2DT[a.dtype]
    if not a.size:
        st, off = _geometry(a)
        return _empty_view(a, *_m.view_dtype_geom(a.shape, st, off, old, dtype), dtype.np)
    if old.itemsize == dtype.itemsize:
        return a.view(dtype.np)
    off = _offset(a)
    shape, strides, noff = _m.view_dtype_geom(a.shape, _estrides(a), off, old, dtype)
    return _reinterpret(a, dtype.np, shape, strides)


_REAL_OF = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64),
            CHALF_NP: np.dtype(np.float16)}
_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128),
               np.dtype(np.float16): CHALF_NP}


def view_as_real(a):
    rd = _REAL_OF.get(a.dtype)
    if rd is None:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if not a.size:
        st, off = _geometry(a)
        return _empty_view(a, *_m.view_as_real_geom(a.shape, st, off), rd)
    off = _offset(a)
    shape, strides, noff = _m.view_as_real_geom(a.shape, _estrides(a), off)
    return _reinterpret(a, rd, shape, strides)


def view_as_complex(a):
    st, off = _geometry(a)  # torch's strides, also of an empty a
    shape, strides, noff = _m.view_as_complex_check(a.shape, st, off, NP2DT[a.dtype])
    if not a.size:
        return _empty_view(a, shape, strides, noff, _COMPLEX_OF[a.dtype])
    return _reinterpret(a, _COMPLEX_OF[a.dtype], shape, strides)


def complex_part(a, i):
    """The real (i=0) or imaginary (i=1) part of the complex array a, as a view."""
    if not a.size:
        st, off = _geometry(a)
        return _empty_view(a, a.shape, [2 * s for s in st], 2 * off + i, _REAL_OF[a.dtype])
    if a.dtype.kind == "c":
        return a.real if i == 0 else a.imag
    return a["real" if i == 0 else "imag"]  # complex32: a structured array of two float16 fields
