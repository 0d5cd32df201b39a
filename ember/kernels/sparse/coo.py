"""Sparse COO kernels on the CPU (ATen's native/sparse/SparseTensor.cpp, SparseTensorMath.cpp,
SoftMax.cpp): NumPy over a sparse tensor's indices (int64, sparse_dim x nnz) and values
(nnz x dense sizes).

Kernels take and return ember Tensors (a sparse tensor's fields are `t._sp`, see
ember/core/tensor_impl.py: SparseData). Arithmetic on the values goes through the dense ops'
front door (`_ops.mul_Tensor.call(values, other)`), so dtypes and promotion are the dense ops'.
The values tensors carry no autograd keys: autograd records at the sparse tensor's level.
"""
import numpy as np

from ember.core.errors import wrap_dim
from ember.core.tensor_impl import SPARSE_BIT, SPARSE_CSR_BIT, make_sparse, wrap_cpu
from ember._generated import ops as _ops

_I64 = np.int64


def is_sparse(t):
    return t.__class__ not in (int, float, bool, complex) and t is not None and bool(t._keys & SPARSE_BIT)


def _plain(t):
    """A dense tensor's data as a plain CPU tensor (no autograd keys)."""
    return wrap_cpu(t._np)


def nnz(t):
    return t._sp.indices._shape[1]


def new(indices, values, shape, coalesced=False):
    """A sparse tensor from NumPy arrays or plain tensors."""
    if isinstance(indices, np.ndarray):
        indices = wrap_cpu(np.ascontiguousarray(indices, _I64))
    if isinstance(values, np.ndarray):
        values = wrap_cpu(values)
    return make_sparse(indices, values, shape, coalesced)


def _shape_str(shape):
    return "[" + ", ".join(str(n) for n in shape) + "]"


# ---- construction -------------------------------------------------------------------------------
def sparse_coo_tensor_with_dims_and_tensors(sparse_dim, dense_dim, size, indices, values, dtype=None, layout=None,
                                            device=None, pin_memory=False, is_coalesced=None):
    """_sparse_coo_tensor_with_dims_and_tensors: the tensors as given (no invariant checks)."""
    v = values._np
    if dtype is not None and dtype is not values._dtype:
        v = v.astype(dtype.np)
    idx = indices._np
    if idx.dtype != _I64:
        idx = idx.astype(_I64)
    coalesced = bool(is_coalesced) if is_coalesced is not None else idx.shape[1] <= 1
    return new(np.ascontiguousarray(idx), wrap_cpu(v), tuple(size), coalesced)


def check_invariants(indices, values, size, sparse_dim):
    """torch's _validate_sparse_coo_tensor_args: indices within size."""
    idx = indices._np
    if idx.shape[1] == 0:
        return
    for d in range(sparse_dim):
        row = idx[d]
        lo = int(row.min())
        if lo < 0:
            raise RuntimeError(f"found negative index {lo} for dim {d}")
        hi = int(row.max())
        if hi >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                               f"index {hi}")


# ---- coalesce, to_dense, to_sparse, sparse_mask ----------------------------------------------------
def _linear(idx, sizes):
    """Row-major linear positions of the index columns over the sparse sizes."""
    lin = np.zeros(idx.shape[1], _I64)
    for d, n in enumerate(sizes):
        lin = lin * n + idx[d]
    return lin


def _coalesce_arrays(idx, vals, sizes):
    """(indices, values) sorted by position with duplicates summed."""
    n = idx.shape[1]
    if n == 0:
        return idx, vals
    lin = _linear(idx, sizes)
    order = np.argsort(lin, kind="stable")
    ls = lin[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(ls[1:], ls[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    v = vals[order]
    if len(starts) != n:
        if v.dtype == np.bool_:
            v = np.logical_or.reduceat(v, starts, axis=0)
        else:
            acc = v.astype(np.float32) if v.dtype.itemsize < 4 and v.dtype.kind == "f" or v.dtype.kind == "V" else v
            v = np.add.reduceat(acc, starts, axis=0).astype(vals.dtype, copy=False)
    return np.ascontiguousarray(idx[:, order[starts]]), v


def _coalesce(self):
    sp = self._sp
    if sp.coalesced:
        return self
    idx, v = _coalesce_arrays(sp.indices._np, sp.values._np, self._shape[:sp.sparse_dim])
    return new(idx, wrap_cpu(v), self._shape, True)


def is_coalesced(self):
    return self._sp.coalesced


def to_dense(self, dtype=None, masked_grad=None):
    if not is_sparse(self):
        return self
    if dtype is not None:
        raise RuntimeError("dtype argument is not supported by sparse_to_dense")
    sp = self._sp
    vals = sp.values._np
    out = np.zeros(self._shape, vals.dtype)
    idx = sp.indices._np
    if idx.shape[1]:
        key = tuple(idx)
        if sp.coalesced:
            out[key] = vals
        else:
            np.add.at(out, key, vals)
    return wrap_cpu(out)


def to_sparse_sparse_dim(self, sparse_dim):
    if is_sparse(self):
        if sparse_dim != self._sp.sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return self
    a = self._np
    nd = a.ndim
    if sparse_dim == 0 and nd > 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    if sparse_dim > nd or sparse_dim < 0:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{nd}] range, but {sparse_dim} is given")
    if sparse_dim == nd:
        idx = np.array(np.nonzero(a), _I64).reshape(nd, -1)
        vals = a[tuple(idx)]
    else:
        mask = a != 0
        if nd > sparse_dim:
            mask = mask.any(axis=tuple(range(sparse_dim, nd)))
        idx = np.array(np.nonzero(mask), _I64).reshape(sparse_dim, -1)
        vals = a[tuple(idx)]
    return new(idx, wrap_cpu(np.ascontiguousarray(vals)), self._shape, True)


def to_sparse(self, layout=None, blocksize=None, dense_dim=None):
    name = getattr(layout, "name", "sparse_coo") if layout is not None else "sparse_coo"
    if name == "sparse_csr":
        from ember.kernels.sparse import csr  # lazy: csr.py imports this module
        return csr.to_sparse_csr(self, dense_dim)
    if name != "sparse_coo":
        raise NotImplementedError(f"ember: to_sparse to layout {layout} is not implemented (sparse_coo and sparse_csr "
                                  f"are)")
    nd = len(self._shape)
    return to_sparse_sparse_dim(self, nd - (dense_dim or 0) if not is_sparse(self) else self._sp.sparse_dim)


def sparse_mask(self, mask):
    """Values of `self` at the coalesced positions of the sparse `mask` (torch's sparse_mask)."""
    if mask._keys & SPARSE_CSR_BIT:
        from ember.kernels.sparse import csr  # lazy: csr.py imports this module
        return csr.sparse_mask(self, mask)
    if not is_sparse(mask):
        raise RuntimeError("sparse_mask expects mask to be sparse, but got mask with layout Strided")
    if tuple(self._shape) != tuple(mask._shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{_shape_str(self._shape)} but mask has size {_shape_str(mask._shape)}")
    idx = mask._sp.indices._np
    src = to_dense(self) if is_sparse(self) else self
    a = src._np
    vals = np.ascontiguousarray(a[tuple(idx)]) if idx.shape[1] else np.zeros((0,) + a.shape[idx.shape[0]:], a.dtype)
    return new(idx.copy(), wrap_cpu(vals), self._shape, mask._sp.coalesced)


# ---- fields -----------------------------------------------------------------------------------
def _nnz(self):
    return nnz(self)


def sparse_dim(self):
    if is_sparse(self):
        return self._sp.sparse_dim
    return 2 if self._keys & SPARSE_CSR_BIT else 0


def dense_dim(self):
    if is_sparse(self):
        return len(self._shape) - self._sp.sparse_dim
    return 0 if self._keys & SPARSE_CSR_BIT else len(self._shape)


def _indices(self):
    return self._sp.indices


def _values(self):
    # a new tensor over the same memory: autograd may record on it, never on the sparse tensor's field
    return _plain(self._sp.values)


def indices(self):
    if not self._sp.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return self._sp.indices


def values(self):
    if not self._sp.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return _plain(self._sp.values)


def values_backward(grad, self):
    """ValuesBackward0: the values' gradient placed at self's (coalesced) indices."""
    return new(self._sp.indices, _plain(grad), self._shape, True)


def sparse_constructor_values_backward(grad, indices):
    """The gradient of the values given to a constructor: grad at each index column."""
    idx = indices._np
    if idx.dtype != _I64:
        idx = idx.astype(_I64)
    g = to_dense(grad) if is_sparse(grad) else grad
    a = g._np
    return wrap_cpu(np.ascontiguousarray(a[tuple(idx)]))


# ---- views and copies ---------------------------------------------------------------------------
def detach(self):
    sp = self._sp
    return make_sparse(sp.indices, sp.values, self._shape, sp.coalesced)


def clone(self, memory_format=None):
    sp = self._sp
    return new(sp.indices._np.copy(), wrap_cpu(sp.values._np.copy()), self._shape, sp.coalesced)


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and getattr(device, "type", str(device).split(":")[0]) != "cpu":
        raise NotImplementedError(f"ember: sparse tensors live on the CPU only (asked for device {device})")
    if layout is not None and getattr(layout, "name", "") == "strided":
        r = to_dense(self)
        return r if dtype is None else _ops._to_copy.call(r, dtype)
    sp = self._sp
    v = sp.values._np
    v = v.astype(dtype.np) if dtype is not None and dtype is not self._dtype else v.copy()
    return new(sp.indices._np.copy(), wrap_cpu(v), self._shape, sp.coalesced)


def transpose_int(self, dim0, dim1):
    nd = len(self._shape)
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    sp = self._sp
    sd = sp.sparse_dim
    if d0 >= sd or d1 >= sd:
        raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got sparse_dim: {sd}, d0: {d0}, "
                           f"d1: {d1}")
    shape = list(self._shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if d0 == d1:
        return make_sparse(sp.indices, sp.values, self._shape, sp.coalesced)
    idx = sp.indices._np.copy()
    idx[[d0, d1]] = idx[[d1, d0]]
    return new(idx, sp.values, shape, False)


def t(self):
    nd = len(self._shape)
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{self._sp.sparse_dim} sparse and {nd - self._sp.sparse_dim} dense dimensions")
    if nd < 2:
        return detach(self)
    return transpose_int(self, 0, 1)


# ---- pointwise --------------------------------------------------------------------------------------
def neg(self):
    sp = self._sp
    return new(sp.indices, _ops.neg.call(sp.values), self._shape, sp.coalesced)


def _scalar(other):
    """A Python number, or a 0-d dense tensor, as the dense ops take it (None: not a scalar)."""
    if isinstance(other, (int, float, bool, complex)):
        return other
    if not is_sparse(other) and len(other._shape) == 0:
        return _plain(other)
    return None


def _check_same_size(op, self, other):
    if tuple(self._shape) != tuple(other._shape):
        raise RuntimeError(f"{op}: expected sizes of 'self' and 'other' to match, but {_shape_str(self._shape)} != "
                           f"{_shape_str(other._shape)}")


def add_Tensor(self, other, alpha=1):
    if not is_sparse(self):
        # dense + sparse: a dense result
        d = to_dense(other)
        if tuple(self._shape) != tuple(d._shape):
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                               f"{_shape_str(self._shape)} while other has size {_shape_str(d._shape)} "
                               f"(FYI: dense-sparse addition does not currently support broadcasting)")
        return _ops.add_Tensor.call(_plain(self), d, alpha)
    if not is_sparse(other):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    _check_same_size("add", self, other)
    sp, so = self._sp, other._sp
    if sp.sparse_dim != so.sparse_dim:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimension, but self has "
                           f"sparse_dim {sp.sparse_dim} while other has sparse_dim {so.sparse_dim}")
    ov = so.values if alpha == 1 else _ops.mul_Tensor.call(so.values, alpha)
    if self is other:
        return new(sp.indices, _ops.add_Tensor.call(sp.values, ov), self._shape, sp.coalesced)
    dt = _ops.add_Tensor.call(wrap_cpu(sp.values._np[:0]), wrap_cpu(ov._np[:0]))._dtype
    tv = sp.values._np.astype(dt.np, copy=False)
    sv = ov._np.astype(dt.np, copy=False)
    if sp.coalesced and so.coalesced:  # sorted and unique: the merge is the sorted union
        idx = np.concatenate([sp.indices._np, so.indices._np], axis=1)
        idx, vals = _coalesce_arrays(idx, np.concatenate([tv, sv], axis=0), self._shape[:sp.sparse_dim])
        return new(idx, wrap_cpu(vals), self._shape, True)
    # ATen's add_out_sparse_contiguous: one merge pass over both index lists as they stand
    ti, si = sp.indices._np.T.tolist(), so.indices._np.T.tolist()
    nt, ns = len(ti), len(si)
    t_i = s_i = 0
    rows, take = [], []  # take: (source, position) of each result entry; source 2 = both
    while t_i < nt or s_i < ns:
        if t_i >= nt:
            cmp = -1
        elif s_i >= ns:
            cmp = 1
        else:
            a_, b_ = ti[t_i], si[s_i]
            cmp = 0 if a_ == b_ else (1 if a_ < b_ else -1)
        if cmp >= 0:
            rows.append(ti[t_i])
            if cmp == 0:
                take.append((2, t_i, s_i))
                s_i += 1
            else:
                take.append((0, t_i, 0))
            t_i += 1
        else:
            rows.append(si[s_i])
            take.append((1, 0, s_i))
            s_i += 1
    vals = np.empty((len(take),) + tv.shape[1:], dt.np)
    for r, (src, a_, b_) in enumerate(take):
        vals[r] = tv[a_] if src == 0 else (sv[b_] if src == 1 else tv[a_] + sv[b_])
    idx = np.array(rows, _I64).T.reshape(sp.sparse_dim, len(rows))
    return new(idx, wrap_cpu(vals), self._shape, False)


def sub_Tensor(self, other, alpha=1):
    if is_sparse(self) and is_sparse(other):
        return add_Tensor(self, other, -alpha)
    if not is_sparse(self):
        return add_Tensor(self, other, -alpha)
    raise RuntimeError("sub(sparse, dense) is not supported. Use sub(dense, sparse) instead.")


def mul_Tensor(self, other):
    if not is_sparse(self):
        self, other = other, self
    s = _scalar(other)
    sp = self._sp
    if s is not None:
        return new(sp.indices, _ops.mul_Tensor.call(sp.values, s), self._shape, sp.coalesced)
    if not is_sparse(other):
        # sparse * dense: each entry times the dense value at its position (self's pattern kept)
        if tuple(self._shape) != tuple(other._shape):
            for i, (x, y) in enumerate(zip(reversed(self._shape), reversed(other._shape))):
                if x != y:
                    a_, b_ = (x, y) if other._shape == () else (y, x)
                    raise RuntimeError(f"The size of tensor a ({a_}) must match the size of tensor b ({b_}) at "
                                       f"non-singleton dimension {len(other._shape) - 1 - i}")
        idx = sp.indices._np
        dv = wrap_cpu(np.ascontiguousarray(other._np[tuple(idx)]))
        return new(sp.indices, _ops.mul_Tensor.call(sp.values, dv), self._shape, sp.coalesced)
    _check_same_size("mul", self, other)
    so = other._sp
    sizes = self._shape[:sp.sparse_dim]
    oc = _coalesce(other)
    if self is other or not sp.coalesced:
        # each of self's entries times other's (coalesced) value at its position, self's pattern kept
        lin_o = _linear(oc._sp.indices._np, sizes)
        lin_s = _linear(sp.indices._np, sizes)
        pos = np.searchsorted(lin_o, lin_s)
        pos_c = np.minimum(pos, max(len(lin_o) - 1, 0))
        hit = (pos < len(lin_o)) & (lin_o[pos_c] == lin_s) if len(lin_o) else np.zeros(len(lin_s), bool)
        keep = np.flatnonzero(hit)
        ov = wrap_cpu(np.ascontiguousarray(oc._sp.values._np[pos_c[keep]]))
        sv = wrap_cpu(np.ascontiguousarray(sp.values._np[keep]))
        return new(np.ascontiguousarray(sp.indices._np[:, keep]), _ops.mul_Tensor.call(sv, ov), self._shape,
                   sp.coalesced)
    del so
    lin_s = _linear(sp.indices._np, sizes)
    lin_o = _linear(oc._sp.indices._np, sizes)
    common, ia, ib = np.intersect1d(lin_s, lin_o, assume_unique=True, return_indices=True)
    sv = wrap_cpu(np.ascontiguousarray(sp.values._np[ia]))
    ov = wrap_cpu(np.ascontiguousarray(oc._sp.values._np[ib]))
    return new(np.ascontiguousarray(sp.indices._np[:, ia]), _ops.mul_Tensor.call(sv, ov), self._shape, True)


def div_Tensor(self, other):
    if not is_sparse(self):
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                           f"{_shape_str(other._shape)} for divisor)")
    s = _scalar(other)
    if s is None:
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                           f"{_shape_str(other._shape)} for divisor)")
    sp = self._sp
    return new(sp.indices, _ops.div_Tensor.call(sp.values, s), self._shape, sp.coalesced)


# ---- reductions -------------------------------------------------------------------------------------
def sum(self, dtype=None):
    return _ops.sum.call(self._sp.values, dtype)


def _sum_dims(self, dim, dtype=None):
    """Sum over `dim`: sparse dims leave the indices (the rest coalesced); a dense result when every
    sparse dim is summed."""
    nd = len(self._shape)
    dims = sorted({wrap_dim(d, nd) for d in dim})
    self = _coalesce(self)  # ATen's _sparse_sum coalesces its input first
    sp = self._sp
    sd = sp.sparse_dim
    sdims = [d for d in dims if d < sd]
    ddims = [d - sd + 1 for d in dims if d >= sd]
    vals = sp.values
    if dtype is not None:
        vals = _ops._to_copy.call(vals, dtype)
    if ddims:
        vals = _ops.sum_dim_IntList.call(vals, ddims, False, None)
    keep = [d for d in range(sd) if d not in sdims]
    shape = [n for i, n in enumerate(self._shape) if i not in dims]
    if not keep:
        return _ops.sum_dim_IntList.call(vals, [0], False, None)
    idx = sp.indices._np[keep]
    if not sdims:
        return new(idx, vals, shape, sp.coalesced)
    idx, v = _coalesce_arrays(idx, vals._np, tuple(self._shape[d] for d in keep))
    return new(idx, wrap_cpu(v), shape, True)


def _sparse_sum_dim(self, dim):
    return _sum_dims(self, dim)


def _sparse_sum_dim_dtype(self, dim, dtype):
    return _sum_dims(self, dim, dtype)


def sum_dim_IntList(self, dim, keepdim=False, dtype=None):
    if dim is None or len(dim) == 0:
        return sum(self, dtype)
    r = _sum_dims(self, dim, dtype)
    if not keepdim:
        return r
    nd = len(self._shape)
    dims = {wrap_dim(d, nd) for d in dim}
    shape = tuple(1 if i in dims else n for i, n in enumerate(self._shape))
    if not is_sparse(r):
        return _ops.view.call(r, shape)
    sd = self._sp.sparse_dim
    rows = iter(r._sp.indices._np)
    n = nnz(r)
    idx = np.array([np.zeros(n, _I64) if d in dims else next(rows) for d in range(sd)], _I64).reshape(sd, n)
    v = r._sp.values._np
    for d in sorted(dims):
        if d >= sd:
            v = np.expand_dims(v, d - sd + 1)
    return new(idx, wrap_cpu(v), shape, False)


def _sparse_sum_backward(grad, self, dim):
    """The gradient of _sparse_sum(self, dim): grad broadcast back onto self's pattern."""
    nd = len(self._shape)
    dims = sorted({wrap_dim(d, nd) for d in dim})
    self = _coalesce(self)
    sp = self._sp
    sd = sp.sparse_dim
    keep = [d for d in range(sd) if d not in dims]
    ddims = [d - sd + 1 for d in dims if d >= sd]
    dense_shape = tuple(sp.values._shape[1:])
    g = grad
    n = nnz(self)
    if keep:
        gd = to_dense(g) if is_sparse(g) else g
        a = gd._np
        sel = a[tuple(sp.indices._np[keep])]  # nnz x remaining dense sizes
    else:
        a = (to_dense(g) if is_sparse(g) else g)._np
        sel = np.broadcast_to(a, (n,) + a.shape)
    for d in ddims:
        sel = np.expand_dims(sel, d)
    vals = np.ascontiguousarray(np.broadcast_to(sel, (n,) + dense_shape))
    return new(sp.indices, wrap_cpu(vals.astype(self._dtype.np, copy=False)), self._shape, sp.coalesced)


# ---- products --------------------------------------------------------------------------------------
def _check_mm(name, mat1, mat2):
    if len(mat1._shape) != 2:
        raise RuntimeError(f"{name}: 2D tensor expected, got {len(mat1._shape)}D tensor")
    if len(mat2._shape) != 2:
        raise RuntimeError(f"{name}: 2D tensor expected, got {len(mat2._shape)}D tensor")
    if mat1._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1._shape[1]}, got {mat2._shape[0]}")


def _spmm(mat1, dense):
    """sparse (2 sparse dims) @ dense 2-D, summing each row's entries in index order."""
    if mat1._dtype is not dense._dtype:
        raise RuntimeError(f"expected scalar type {_cname(mat1._dtype)} but found {_cname(dense._dtype)}")
    c = _coalesce(mat1)
    idx = c._sp.indices._np
    vals = c._sp.values._np
    b = dense._np
    m, n = mat1._shape[0], b.shape[1]
    out = np.zeros((m, n), b.dtype)
    if idx.shape[1]:
        rows, cols = idx[0], idx[1]
        first = np.empty(len(rows), bool)
        first[0] = True
        np.not_equal(rows[1:], rows[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        out[rows[starts]] = row_sums(vals, cols, b, starts)
    return wrap_cpu(out)


def row_sums(vals, cols, b, starts):
    """For each segment of entries starting at `starts`: sum of vals[k] * b[cols[k]], in entry order.
    Computed on b's transpose, so each segment's sum runs along contiguous memory (NumPy's reduceat
    over axis 0 of many short segments is ~3x slower)."""
    g = np.take(np.ascontiguousarray(b.T), cols, axis=1)
    g *= vals
    return np.add.reduceat(g, starts, axis=1).T


def _cname(d):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(d.name, d.name)


def _dense_operand(name, t):
    if is_sparse(t):
        raise NotImplementedError(f"ember: {name} of two sparse tensors is not implemented")
    return t


def _dense_sparse_mm(self, mat2):
    """dense @ sparse = (sparse^T @ dense^T)^T: a column-major result, as torch's."""
    if len(self._shape) == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if len(self._shape) != 2 or len(mat2._shape) != 2 or mat2._sp.sparse_dim != 2:
        raise NotImplementedError("ember: mm(dense, sparse) supports 2-D operands with 2 sparse dims only")
    if self._shape[1] != mat2._shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat2._shape[0]}, got {self._shape[1]}")
    r = _spmm(transpose_int(mat2, 0, 1), wrap_cpu(np.ascontiguousarray(self._np.T)))
    return wrap_cpu(r._np.T)


def mm(self, mat2):
    if not is_sparse(self):
        return _dense_sparse_mm(self, mat2)
    _dense_operand("mm", mat2)
    _check_mm("mm", self, mat2)
    if self._sp.sparse_dim != 2:
        raise RuntimeError(f"mm: expected first two dims to be sparse (indices has size {self._sp.sparse_dim} "
                           f"at first dim)")
    return _spmm(self, _plain(mat2))


def addmm(self, mat1, mat2, beta=1, alpha=1):
    if is_sparse(self) or not is_sparse(mat1):
        raise NotImplementedError("ember: addmm with a sparse argument supports addmm(dense, sparse, dense) only")
    _dense_operand("addmm", mat2)
    _check_mm("addmm", mat1, mat2)
    if mat2._shape[0] != mat1._shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1._shape[1]}, got {mat2._shape[0]}")
    prod = _spmm(mat1, _plain(mat2))
    if alpha != 1:
        prod = _ops.mul_Tensor.call(prod, alpha)
    if beta == 0:  # self is not read (nan and inf in it do not propagate)
        return prod
    base = _plain(self)
    if beta != 1:
        base = _ops.mul_Tensor.call(base, beta)
    return _ops.add_Tensor.call(base, prod)


def _sparse_addmm(self, mat1, mat2, beta=1, alpha=1):
    return addmm(self, mat1, mat2, beta, alpha)


def matmul(self, other):
    if not is_sparse(self):
        if len(self._shape) == 1:
            return _ops.squeeze_dim.call(mm(_ops.unsqueeze.call(_plain(self), 0), other), 0)
        return mm(self, other)
    if len(self._shape) == 2 and len(other._shape) == 1:
        return _ops.squeeze_dim.call(mm(self, _ops.unsqueeze.call(_plain(other), 1)), 1)
    return mm(self, other)


# ---- softmax ---------------------------------------------------------------------------------------
def _softmax_impl(self, dim, half_to_float, log):
    """Softmax over `dim` among the specified entries of each slice (torch's sparse softmax:
    unspecified entries count as -inf)."""
    if half_to_float:
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")
    nd = len(self._shape)
    d = wrap_dim(dim, nd)
    c = _coalesce(self)
    sp = c._sp
    sd = sp.sparse_dim
    vals = sp.values._np
    if d >= sd:  # a dense dim: the ordinary softmax of the values along it
        f = _ops._log_softmax if log else _ops._softmax
        return new(sp.indices, f.call(sp.values, d - sd + 1, False), self._shape, True)
    idx = sp.indices._np
    n = idx.shape[1]
    if n == 0:
        return new(idx, sp.values, self._shape, True)
    others = [k for k in range(sd) if k != d]
    group = _linear(idx[others], tuple(self._shape[k] for k in others)) if others else np.zeros(n, _I64)
    order = np.argsort(group, kind="stable")
    gs = group[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(gs[1:], gs[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    seg = np.cumsum(first) - 1
    v = vals[order]
    work = v.astype(np.float32) if v.dtype.itemsize < 4 else v
    mx = np.maximum.reduceat(work, starts, axis=0)
    e = np.exp(work - mx[seg])
    s = np.add.reduceat(e, starts, axis=0)
    if log:
        r = work - mx[seg] - np.log(s)[seg]
    else:
        r = e / s[seg]
    out = np.empty_like(work)
    out[order] = r
    return new(idx, wrap_cpu(out.astype(vals.dtype, copy=False)), self._shape, True)


def _sparse_softmax(self, dim, half_to_float):
    return _softmax_impl(self, dim, half_to_float, False)


def _sparse_log_softmax(self, dim, half_to_float):
    return _softmax_impl(self, dim, half_to_float, True)


def _softmax_backward_impl(grad_output, output, dim, log):
    """d softmax: out * (g - sum(g * out)) per slice; d log_softmax: g - exp(out) * sum(g)."""
    nd = len(output._shape)
    d = wrap_dim(dim, nd)
    sp = output._sp
    sd = sp.sparse_dim
    idx = sp.indices._np
    n = idx.shape[1]
    g = sparse_mask(grad_output, output)._sp.values._np if is_sparse(grad_output) else \
        grad_output._np[tuple(idx)]
    o = sp.values._np
    if n == 0:
        return new(idx, wrap_cpu(o.copy()), output._shape, True)
    if d >= sd:
        ax = d - sd + 1
        if log:
            r = g - np.exp(o) * g.sum(axis=ax, keepdims=True)
        else:
            r = o * (g - (g * o).sum(axis=ax, keepdims=True))
        return new(idx, wrap_cpu(r.astype(o.dtype, copy=False)), output._shape, True)
    others = [k for k in range(sd) if k != d]
    group = _linear(idx[others], tuple(output._shape[k] for k in others)) if others else np.zeros(n, _I64)
    order = np.argsort(group, kind="stable")
    gs = group[order]
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(gs[1:], gs[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    seg = np.cumsum(first) - 1
    go, oo = g[order], o[order]
    if log:
        r = go - np.exp(oo) * np.add.reduceat(go, starts, axis=0)[seg]
    else:
        r = oo * (go - np.add.reduceat(go * oo, starts, axis=0)[seg])
    out = np.empty_like(r)
    out[order] = r
    return new(idx, wrap_cpu(out.astype(o.dtype, copy=False)), output._shape, True)


def _sparse_softmax_backward_data(grad_output, output, dim, self):
    return _softmax_backward_impl(grad_output, output, dim, False)


def _sparse_log_softmax_backward_data(grad_output, output, dim, self):
    return _softmax_backward_impl(grad_output, output, dim, True)


_to_dense = to_dense


def add__Tensor(self, other, alpha=1):
    """self += alpha * other in place (AccumulateGrad's second sparse gradient)."""
    if not is_sparse(self):
        return _ops.add__Tensor.call(self, to_dense(other), alpha)
    r = add_Tensor(self, other, alpha)
    if r._dtype is not self._dtype:
        raise RuntimeError(f"result type {_cname(r._dtype)} can't be cast to the desired output type "
                           f"{_cname(self._dtype)}")
    self._sp = r._sp
    return self


def embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """ATen's embedding_sparse_backward: the weight's gradient as an uncoalesced sparse tensor, one
    entry per looked-up index (padding_idx's dropped)."""
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    idx = indices._np.reshape(-1).astype(_I64)
    g = grad._np
    nf = g.shape[-1]
    vals = g.reshape(-1, nf)
    if padding_idx != -1:
        keep = idx != padding_idx
        idx, vals = idx[keep], vals[keep]
    if vals.shape[0] == 0:
        return new(np.zeros((1, 0), _I64), wrap_cpu(np.zeros((0, nf), g.dtype)), (num_weights, nf), False)
    return new(idx.reshape(1, -1), wrap_cpu(np.ascontiguousarray(vals)), (num_weights, nf), len(idx) < 2)


def mul__Tensor(self, other):
    """self *= other in place (SGD's momentum buffer of a sparse gradient)."""
    if not is_sparse(self):
        raise RuntimeError("mul_(dense, sparse) is not supported by ember")
    r = mul_Tensor(self, other)
    if r._dtype is not self._dtype:
        raise RuntimeError(f"result type {_cname(r._dtype)} can't be cast to the desired output type "
                           f"{_cname(self._dtype)}")
    self._sp = r._sp
    return self
