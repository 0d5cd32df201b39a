"""Sparse CSR kernels on the CPU (ATen's native/sparse/SparseCsrTensor.cpp): 2-D tensors as
crow_indices (rows + 1 offsets), col_indices and values, over NumPy. The SparseCsrCPU key's kernels.

Limits: 2-D, no dense dimensions, no batch dimensions; `t()` gives a sparse COO tensor (torch gives
the CSC layout, which ember does not have), enough for the gradient of `csr @ dense`."""
import numpy as np

from ember.core.tensor_impl import SPARSE_CSR_BIT, make_sparse_csr, wrap_cpu
from ember._generated import ops as _ops
from ember.kernels.sparse import coo as _coo

_I64 = np.int64


def is_csr(t):
    return t.__class__ not in (int, float, bool, complex) and t is not None and bool(t._keys & SPARSE_CSR_BIT)


def new(crow, col, values, shape):
    if isinstance(crow, np.ndarray):
        crow = wrap_cpu(np.ascontiguousarray(crow, _I64))
    if isinstance(col, np.ndarray):
        col = wrap_cpu(np.ascontiguousarray(col, _I64))
    if isinstance(values, np.ndarray):
        values = wrap_cpu(values)
    return make_sparse_csr(crow, col, values, shape)


def _rows(t):
    crow = t._sp.crow_indices._np
    return np.repeat(np.arange(len(crow) - 1, dtype=_I64), np.diff(crow))


def _from_rows(rows, cols, vals, shape):
    m = shape[0]
    crow = np.zeros(m + 1, _I64)
    np.cumsum(np.bincount(rows, minlength=m), out=crow[1:])
    return new(crow, np.ascontiguousarray(cols, _I64), wrap_cpu(np.ascontiguousarray(vals)), shape)


# ---- construction and conversion --------------------------------------------------------------------
def sparse_csr_tensor_unsafe(crow_indices, col_indices, values, size, dtype=None, layout=None, device=None,
                             pin_memory=None):
    v = values._np
    if dtype is not None and dtype is not values._dtype:
        v = v.astype(dtype.np)
    return new(crow_indices._np.astype(_I64, copy=False), col_indices._np.astype(_I64, copy=False), wrap_cpu(v),
               tuple(size))


def to_sparse_csr(self, dense_dim=None):
    if is_csr(self):
        return self
    if dense_dim:
        raise NotImplementedError("ember: to_sparse_csr with dense dimensions is not implemented")
    if _coo.is_sparse(self):
        if len(self._shape) != 2 or self._sp.sparse_dim != 2:
            raise NotImplementedError("ember: to_sparse_csr supports 2-D tensors only")
        c = _coo._coalesce(self)
        idx = c._sp.indices._np
        return _from_rows(idx[0], idx[1], c._sp.values._np, self._shape)
    if len(self._shape) != 2:
        raise NotImplementedError("ember: to_sparse_csr supports 2-D tensors only")
    a = self._np
    rows, cols = np.nonzero(a)
    return _from_rows(rows, cols, a[rows, cols], self._shape)


def _to_dense(self, dtype=None, masked_grad=None):
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_csr_to_dense")
    sp = self._sp
    vals = sp.values._np
    out = np.zeros(self._shape, vals.dtype)
    if len(vals):
        np.add.at(out, (_rows(self), sp.col_indices._np), vals)
    return wrap_cpu(out)


def to_coo(self):
    sp = self._sp
    idx = np.stack([_rows(self), sp.col_indices._np]).astype(_I64).reshape(2, -1)
    return _coo.new(idx, wrap_cpu(sp.values._np.copy()), self._shape, True)


def to_sparse(self, layout=None, blocksize=None, dense_dim=None):
    if layout is not None and getattr(layout, "name", "") == "sparse_csr":
        return self
    return to_coo(self)


def to_sparse_sparse_dim(self, sparse_dim):
    if sparse_dim != 2:
        raise RuntimeError(f"sparse dim argument must be 2 for sparse_compressed_to_sparse, got {sparse_dim}")
    return to_coo(self)


def sparse_mask(self, mask):
    """Values of dense `self` at the CSR `mask`'s positions, as a CSR tensor of mask's pattern."""
    if tuple(self._shape) != tuple(mask._shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{_coo._shape_str(self._shape)} but mask has size {_coo._shape_str(mask._shape)}")
    sp = mask._sp
    src = _to_dense(self) if is_csr(self) else (_coo.to_dense(self) if _coo.is_sparse(self) else self)
    vals = np.ascontiguousarray(src._np[_rows(mask), sp.col_indices._np])
    return new(sp.crow_indices._np.copy(), sp.col_indices._np.copy(), vals, mask._shape)


# ---- fields -----------------------------------------------------------------------------------------
def crow_indices(self):
    return self._sp.crow_indices


def col_indices(self):
    return self._sp.col_indices


def values(self):
    return wrap_cpu(self._sp.values._np)


def _nnz(self):
    return self._sp.col_indices._shape[0]


# ---- copies and pointwise -------------------------------------------------------------------------------
def detach(self):
    sp = self._sp
    return make_sparse_csr(sp.crow_indices, sp.col_indices, sp.values, self._shape)


def clone(self, memory_format=None):
    sp = self._sp
    return new(sp.crow_indices._np.copy(), sp.col_indices._np.copy(), sp.values._np.copy(), self._shape)


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and getattr(device, "type", str(device).split(":")[0]) != "cpu":
        raise NotImplementedError(f"ember: sparse tensors live on the CPU only (asked for device {device})")
    sp = self._sp
    v = sp.values._np
    v = v.astype(dtype.np) if dtype is not None and dtype is not self._dtype else v.copy()
    return new(sp.crow_indices._np.copy(), sp.col_indices._np.copy(), v, self._shape)


def _with_values(self, vals):
    sp = self._sp
    return make_sparse_csr(sp.crow_indices, sp.col_indices, vals, self._shape)


def neg(self):
    return _with_values(self, _ops.neg.call(self._sp.values))


def mul_Tensor(self, other):
    if not is_csr(self):
        self, other = other, self
    s = _coo._scalar(other)
    if s is None:
        raise NotImplementedError("ember: a sparse CSR tensor multiplies by a scalar only")
    return _with_values(self, _ops.mul_Tensor.call(self._sp.values, s))


def div_Tensor(self, other):
    s = _coo._scalar(other) if is_csr(self) else None
    if s is None:
        raise NotImplementedError("ember: a sparse CSR tensor divides by a scalar only")
    return _with_values(self, _ops.div_Tensor.call(self._sp.values, s))


def sum(self, dtype=None):
    return _ops.sum.call(self._sp.values, dtype)


def t(self):
    """The transpose as a sparse COO tensor (ember has no CSC layout)."""
    return _coo.transpose_int(to_coo(self), 0, 1)


# ---- products --------------------------------------------------------------------------------------
def _csr_mm(self, dense):
    if self._dtype is not dense._dtype:
        raise RuntimeError(f"expected scalar type {_coo._cname(self._dtype)} but found {_coo._cname(dense._dtype)}")
    sp = self._sp
    crow = sp.crow_indices._np
    vals = sp.values._np
    b = dense._np
    m, n = self._shape[0], b.shape[1]
    out = np.zeros((m, n), b.dtype)
    if len(vals):
        nz = np.flatnonzero(np.diff(crow))
        out[nz] = _coo.row_sums(vals, sp.col_indices._np, b, crow[nz])
    return wrap_cpu(out)


def _check(mat1, mat2):
    if _coo.is_sparse(mat2) or is_csr(mat2):
        raise NotImplementedError("ember: products of two sparse tensors are not implemented")
    if len(mat2._shape) != 2:
        raise RuntimeError(f"mm: 2D tensor expected, got {len(mat2._shape)}D tensor")
    if mat1._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1._shape[0]}x{mat1._shape[1]} and "
                           f"{mat2._shape[0]}x{mat2._shape[1]})")


def mm(self, mat2):
    if not is_csr(self):
        raise NotImplementedError("ember: mm(dense, sparse CSR) is not implemented; use mm(sparse, dense)")
    _check(self, mat2)
    return _csr_mm(self, _coo._plain(mat2))


def addmm(self, mat1, mat2, beta=1, alpha=1):
    if is_csr(self) or not is_csr(mat1):
        raise NotImplementedError("ember: addmm with a sparse CSR argument supports addmm(dense, csr, dense) only")
    _check(mat1, mat2)
    prod = _csr_mm(mat1, _coo._plain(mat2))
    if alpha != 1:
        prod = _ops.mul_Tensor.call(prod, alpha)
    if beta == 0:
        return prod
    base = _coo._plain(self)
    if beta != 1:
        base = _ops.mul_Tensor.call(base, beta)
    return _ops.add_Tensor.call(base, prod)


def _sparse_addmm(self, mat1, mat2, beta=1, alpha=1):
    return addmm(self, mat1, mat2, beta, alpha)


def matmul(self, other):
    if len(self._shape) == 2 and len(other._shape) == 1:
        return _ops.squeeze_dim.call(mm(self, _ops.unsqueeze.call(_coo._plain(other), 1)), 1)
    return mm(self, other)
