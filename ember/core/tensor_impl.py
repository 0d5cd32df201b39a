"""TensorImpl: sizes, strides, storage offset, dtype, device, dispatch keys (c10::TensorImpl).

A CPU TensorImpl keeps its NumPy view (`_np`) and derives strides and offset from it lazily;
kernels take and return arrays, so wrapping an output is a few slot stores. Tensors of other
devices carry explicit strides and offset over their Storage.

`Tensor` (ember/tensor.py) subclasses TensorImpl instead of holding one: in Python a separate
wrapper object would cost an allocation and an attribute hop on every op.
"""
import weakref

from ember.core import dtype as _dt
from ember.core.device import CPU, META
from ember.core.keys import AUTOGRAD_MASK, SPARSE_CPU_KEYS, SPARSE_CSR_CPU_KEYS, DispatchKey, backend_keyset
from ember.core.layout import is_contiguous_as
from ember.core.storage import UntypedStorage, root_array

CPU_KEYS = backend_keyset("cpu")
# a view starts without autograd keys: the autograd layer decides whether it requires grad
_NO_GRAD_KEYS = ~AUTOGRAD_MASK
META_KEYS = backend_keyset("meta")
SPARSE_BIT = 1 << DispatchKey.SparseCPU
SPARSE_CSR_BIT = 1 << DispatchKey.SparseCsrCPU


class TensorImpl:
    __slots__ = ("_np", "_shape", "_dtype", "_device", "_keys", "_base", "_vc", "_ameta",
                 "_strides", "_offset", "_storage", "_sp", "__weakref__", "__dict__")

    # ---- metadata --------------------------------------------------------------------------
    def stride(self, dim=None):
        s = self._get_strides()
        if dim is None:
            return s
        from ember.core.errors import wrap_dim
        return s[wrap_dim(dim, len(s))]

    def _get_strides(self):
        a = self._np
        if a is not None:
            isz = a.itemsize
            if a.size == 0:  # NumPy gives empty arrays strides of its own: see empty_geometry
                g = empty_geometry(a)
                if g is not None:
                    return g[0]
                if self._base is None:
                    return contiguous_strides(a.shape)
            st = a.strides
            if len(st) == 2:  # the common case without a generator (autograd saves mm's strides)
                return (st[0] // isz, st[1] // isz)
            return tuple([s // isz for s in st])
        if self._keys & SPARSE_CSR_BIT:
            raise RuntimeError("Sparse CSR tensors do not have strides")
        return self._strides

    def storage_offset(self):
        a = self._np
        if a is not None:
            if a.size == 0:
                g = empty_geometry(a)
                if g is not None:
                    return g[1]
            st = self.untyped_storage()
            if st.data is None:
                return 0
            off = a.__array_interface__["data"][0] - st.data_ptr()
            if a.size == 0 and not 0 <= off <= st.nbytes():
                return 0  # an empty array NumPy allocated apart from the storage
            return off // a.itemsize
        return self._offset

    def untyped_storage(self):
        b = self._base
        if b is not None:
            return b.untyped_storage()
        try:
            return self._storage
        except AttributeError:
            pass
        if self._np is not None:
            st = UntypedStorage.from_array(self._np, self._device)
        elif self._keys & SPARSE_BIT:
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        elif self._keys & SPARSE_CSR_BIT:
            raise NotImplementedError("Cannot access storage of SparseCsrTensorImpl")
        else:
            raise RuntimeError("tensor has no storage")
        self._storage = st
        return st

    def data_ptr(self):
        a = self._np
        if a is not None:
            return a.__array_interface__["data"][0] if a.size else 0
        if self._device is META:
            return 0
        if self._keys & (SPARSE_BIT | SPARSE_CSR_BIT):
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        return self.untyped_storage().data_ptr() + self._offset * self._dtype.itemsize

    @property
    def _version(self):
        vc = self._vc
        return 0 if vc is None else vc[0]

    def _version_counter(self):
        """The version counter list shared with every view of this storage (created on demand)."""
        vc = self._vc
        if vc is None:
            b = self._base
            vc = self._vc = b._version_counter() if b is not None else [0]
        return vc

    def _bump_version(self):
        vc = self._vc
        if vc is None:
            vc = self._version_counter()
        vc[0] += 1

    def is_contiguous(self, memory_format=None):
        shape = self._shape
        if memory_format is not None and getattr(memory_format, "name", "")[:13] == "channels_last":
            return is_contiguous_as(shape, self._get_strides(), memory_format)  # no empty shortcut
        for n in shape:
            if n == 0:
                return True
        strides = self._get_strides()
        expected = 1
        for i in range(len(shape) - 1, -1, -1):
            n = shape[i]
            if n != 1 and strides[i] != expected:
                return False
            expected *= n
        return True


# ---- the geometry of zero-size CPU tensors -------------------------------------------------------
# A CPU tensor derives its strides and storage offset from its NumPy array, but NumPy gives an array
# with no elements strides of its own (all zeros when it allocates one) and may place it anywhere,
# where torch keeps what the view formula gave: zeros(3, 0).t() has strides (1, 1), zeros(0, 3)[:, 1]
# storage offset 1 (past the end of its 0-byte storage). So the CPU kernels that make a zero-size
# array with torch's geometry (views, empty_strided, clone) record it here, keyed by the array: the
# record travels with the array wherever `_np` is copied (aliases, in-place view ops, set_), and
# stride() / storage_offset() read it only when the array is empty, off the hot path.
_EMPTY_GEOMETRY = {}  # id(array) -> (weak reference to the array, strides, storage offset), in elements


def set_empty_geometry(arr, strides, offset):
    """Record torch's strides and storage offset (elements) of the zero-size array arr; returns arr."""
    key = id(arr)

    def forget(ref, key=key):
        e = _EMPTY_GEOMETRY.get(key)
        if e is not None and e[0] is ref:
            del _EMPTY_GEOMETRY[key]
    _EMPTY_GEOMETRY[key] = (weakref.ref(arr, forget), tuple(strides), offset)
    return arr


def empty_geometry(arr):
    """(strides, storage offset) recorded for the zero-size array arr, or None."""
    e = _EMPTY_GEOMETRY.get(id(arr))
    if e is not None and e[0]() is arr:
        return e[1], e[2]
    return None


def contiguous_strides(shape):
    s = []
    acc = 1
    for n in reversed(shape):
        s.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(s))


_new = object.__new__
_NP2DT = _dt.NP2DT
tensor_class = [TensorImpl]  # tensor.py puts Tensor here so lower layers can make Tensors


def wrap_cpu(arr):
    """A CPU tensor around a NumPy array (no copy)."""
    t = _new(tensor_class[0])
    t._np = arr
    t._shape = arr.shape
    t._dtype = _NP2DT[arr.dtype]
    t._device = CPU
    t._keys = CPU_KEYS
    t._base = None
    t._vc = None
    t._ameta = None
    return t


def make_view_cpu(base, arr):
    """A CPU tensor that is a view of `base` (shares its storage and version counter)."""
    t = _new(tensor_class[0])
    t._np = arr
    t._shape = arr.shape
    t._dtype = base._dtype
    t._device = base._device
    t._keys = base._keys & _NO_GRAD_KEYS
    b = base._base
    t._base = base if b is None else b
    vc = base._vc
    t._vc = vc if vc is not None else base._version_counter()
    t._ameta = None
    return t


def make_meta(shape, dtype, strides=None, device=META, keys=META_KEYS):
    """A tensor with metadata only, or a strided tensor over fresh storage on a non-CPU device."""
    t = _new(tensor_class[0])
    t._np = None
    t._shape = tuple(shape)
    t._dtype = dtype
    t._device = device
    t._keys = keys
    t._base = None
    t._vc = None
    t._ameta = None
    t._strides = contiguous_strides(shape) if strides is None else tuple(strides)
    t._offset = 0
    n = 1
    for d in t._shape:
        n *= d
    t._storage = UntypedStorage(None, n * dtype.itemsize, device)
    return t


def make_view_meta(base, shape, strides, offset):
    t = _new(tensor_class[0])
    t._np = None
    t._shape = tuple(shape)
    t._dtype = base._dtype
    t._device = base._device
    t._keys = base._keys & _NO_GRAD_KEYS
    b = base._base
    t._base = base if b is None else b
    t._vc = base._version_counter()
    t._ameta = None
    t._strides = tuple(strides)
    t._offset = offset
    return t

class SparseData:
    """A sparse COO tensor's fields (torch's SparseTensorImpl): indices (int64, sparse_dim x nnz) and
    values (nnz x dense sizes), plain CPU tensors without autograd keys, and the coalesced flag."""
    __slots__ = ("indices", "values", "sparse_dim", "coalesced")

    def __init__(self, indices, values, sparse_dim, coalesced):
        self.indices = indices
        self.values = values
        self.sparse_dim = sparse_dim
        self.coalesced = coalesced


def make_sparse(indices, values, shape, coalesced=False):
    """A sparse COO tensor (layout sparse_coo, key SparseCPU) of `shape` over plain CPU tensors
    `indices` and `values`. Its strides read as zeros and its storage offset as 0, as torch's do."""
    t = _new(tensor_class[0])
    t._np = None
    t._shape = tuple(shape)
    t._dtype = values._dtype
    t._device = values._device
    t._keys = SPARSE_CPU_KEYS
    t._base = None
    t._vc = None
    t._ameta = None
    t._strides = (0,) * len(t._shape)
    t._offset = 0
    t._sp = SparseData(indices, values, indices._shape[0], bool(coalesced))
    return t


class CsrData:
    """A sparse CSR tensor's fields (torch's SparseCsrTensorImpl): crow_indices (rows + 1), col_indices
    and values (nnz), plain CPU tensors without autograd keys."""
    __slots__ = ("crow_indices", "col_indices", "values")

    def __init__(self, crow_indices, col_indices, values):
        self.crow_indices = crow_indices
        self.col_indices = col_indices
        self.values = values


def make_sparse_csr(crow_indices, col_indices, values, shape):
    """A 2-D sparse CSR tensor (layout sparse_csr, key SparseCsrCPU) over plain CPU tensors."""
    t = _new(tensor_class[0])
    t._np = None
    t._shape = tuple(shape)
    t._dtype = values._dtype
    t._device = values._device
    t._keys = SPARSE_CSR_CPU_KEYS
    t._base = None
    t._vc = None
    t._ameta = None
    t._offset = 0
    t._sp = CsrData(crow_indices, col_indices, values)
    return t


def sparse_shallow_copy(t):
    """A new sparse tensor over t's indices and values whose coalesced flag is recomputed (torch's
    _sparse_coo_tensor_unsafe(t._indices(), t._values(), t.sizes()): true below two entries)."""
    sp = t._sp
    return make_sparse(sp.indices, sp.values, t._shape, sp.indices._shape[1] < 2)


__all__ = ["TensorImpl", "wrap_cpu", "make_sparse", "make_sparse_csr", "sparse_shallow_copy", "SparseData",
           "CsrData", "make_view_cpu", "make_meta", "make_view_meta", "contiguous_strides", "root_array", "CPU_KEYS",
           "set_empty_geometry", "empty_geometry",
           "META_KEYS"]
