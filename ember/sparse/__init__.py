"""torch.sparse: sparse COO tensors' Python API (torch/sparse/__init__.py) and the
`sparse_coo_tensor` constructor (torch/csrc/utils/tensor_new.cpp).

The layout itself (the SparseCPU key, the tensor's fields, the kernels) lives in
ember/core/tensor_impl.py and ember/kernels/sparse; this module only calls ops."""
import ember
from ember._generated import ops as _ops
from ember.kernels import sparse as _backend  # noqa: F401  (registers the SparseCPU kernels)
from ember.kernels.sparse import coo as _coo

__all__ = ["addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "spmm", "sum",
           "sparse_coo_tensor", "sparse_csr_tensor"]

_default_check = [False]


class check_sparse_tensor_invariants:
    """torch.sparse.check_sparse_tensor_invariants: a context manager (and the global switch)
    that makes sparse constructors validate their indices."""

    def __init__(self, enable=True):
        self.state = enable
        self.saved = None

    @staticmethod
    def is_enabled():
        return _default_check[0]

    @staticmethod
    def enable():
        _default_check[0] = True

    @staticmethod
    def disable():
        _default_check[0] = False

    def __enter__(self):
        self.saved = _default_check[0]
        _default_check[0] = self.state

    def __exit__(self, *exc):
        _default_check[0] = self.saved


def _as_tensor(x, dtype=None):
    if isinstance(x, ember.Tensor):
        return x
    return ember.tensor(x, dtype=dtype)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: a sparse COO tensor from indices (sparse_dim x nnz) and values
    (nnz x dense sizes). Without `size`, each sparse size is the largest index + 1."""
    indices = _as_tensor(indices, ember.int64)
    values = _as_tensor(values, dtype)
    if indices.is_sparse or values.is_sparse:
        raise RuntimeError("sparse_coo_tensor: expected dense indices and values")
    if len(indices._shape) != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {_coo._shape_str(indices._shape)}")
    if indices._dtype is not ember.int64:
        if indices.is_floating_point() or indices.is_complex():
            indices = indices.to(ember.int64)
        else:
            indices = indices.to(ember.int64)
    sparse_dim = indices._shape[0]
    if len(values._shape) == 0:
        raise RuntimeError("values must have at least one dimension (nnz), but got a 0-d tensor")
    nnz = indices._shape[1]
    if values._shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {values._shape[0]}")
    dense_sizes = tuple(values._shape[1:])
    if size is None:
        if nnz:
            mx = indices.detach()._np.max(axis=1)
            sizes = tuple(int(m) + 1 for m in mx)
        else:
            sizes = (0,) * sparse_dim
        size = sizes + dense_sizes
    else:
        size = tuple(int(n) for n in size)
        if len(size) != sparse_dim + len(dense_sizes):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_sizes)}")
        if size[sparse_dim:] != dense_sizes:
            raise RuntimeError(f"values has incorrect size, expected {_coo._shape_str((nnz,) + size[sparse_dim:])}, "
                               f"got {_coo._shape_str(values._shape)}")
    check = _default_check[0] if check_invariants is None else check_invariants
    if check:
        _coo.check_invariants(indices.detach(), values, size, sparse_dim)
    if device is not None and ember.device(device).type != "cpu":
        raise NotImplementedError(f"ember: sparse tensors live on the CPU only (asked for device {device})")
    r = _ops._sparse_coo_tensor_with_dims_and_tensors.call(sparse_dim, len(dense_sizes), size, indices, values, dtype,
                                                           None, None, False, is_coalesced)
    if requires_grad:
        r.requires_grad_()
    return r


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None, pin_memory=None,
                      requires_grad=False, check_invariants=None):
    """torch.sparse_csr_tensor: a 2-D compressed-row tensor. Without `size`, the rows are
    len(crow_indices) - 1 and the columns the largest column index + 1."""
    crow = _as_tensor(crow_indices, ember.int64)
    col = _as_tensor(col_indices, ember.int64)
    values = _as_tensor(values, dtype)
    if len(crow._shape) != 1 or len(col._shape) != 1:
        raise NotImplementedError("ember: sparse_csr_tensor supports 2-D tensors (1-D crow and col indices) only")
    if len(values._shape) != 1:
        raise NotImplementedError("ember: sparse_csr_tensor supports values without dense dimensions only")
    if col._shape[0] != values._shape[0]:
        raise RuntimeError(f"col_indices and values must have the same number of elements, but got "
                           f"{col._shape[0]} and {values._shape[0]}")
    if size is None:
        ncol = int(col.detach()._np.max()) + 1 if col._shape[0] else 0
        size = (crow._shape[0] - 1, ncol)
    size = tuple(int(n) for n in size)
    if len(size) != 2:
        raise NotImplementedError("ember: sparse_csr_tensor supports 2-D tensors only")
    check = _default_check[0] if check_invariants is None else check_invariants
    if check:
        c = crow.detach()._np
        if c.shape[0] != size[0] + 1:
            raise RuntimeError(f"crow_indices.size(-1) must be equal to size[-2] + 1 (that is {size[0] + 1}), but "
                               f"got: {c.shape[0]}")
        if c.shape[0] and (c[0] != 0 or (c[1:] < c[:-1]).any() or c[-1] != col._shape[0]):
            raise RuntimeError("`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied.")
    if device is not None and ember.device(device).type != "cpu":
        raise NotImplementedError(f"ember: sparse tensors live on the CPU only (asked for device {device})")
    r = _ops._sparse_csr_tensor_unsafe.call(crow.to(ember.int64), col.to(ember.int64), values, size, dtype, None,
                                            None, None)
    if requires_grad:
        r.requires_grad_()
    return r


def mm(mat1, mat2, reduce=None):
    """torch.sparse.mm: sparse @ dense (SparseAddmmBackward0: the sparse operand's gradient is
    sparse, masked to its pattern and coalesced)."""
    if reduce is not None:
        return _mm_reduce(mat1, mat2, reduce)
    if (mat1.is_sparse or mat1.is_sparse_csr) and (mat2.is_sparse or mat2.is_sparse_csr):
        raise NotImplementedError("ember: sparse @ sparse is not implemented")
    if not (mat1.is_sparse or mat1.is_sparse_csr):
        return ember.mm(mat1, mat2)
    _coo._check_mm("mm", mat1, mat2)
    zeros = ember.zeros(mat1._shape[0], mat2._shape[1], dtype=mat2.dtype)
    return _ops._sparse_addmm.call(zeros, mat1, mat2, 0, 1)


def _mm_reduce(mat1, mat2, reduce):
    """torch.sparse.mm(csr, dense, reduce): row i reduces values[j] * mat2[col[j]] over the row's stored
    entries j ('sum', 'mean', 'amax', 'amin'); a row with none gives zeros. The gradient reaches mat2."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not mat1.is_sparse_csr:
        raise NotImplementedError("Could not run 'aten::_sparse_mm_reduce_impl' with arguments from the "
                                  f"'{'SparseCPU' if mat1.is_sparse else 'CPU'}' backend.")
    if reduce == "prod":
        raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
    _coo._check_mm("mm", mat1, mat2)
    crow, col, values = mat1.crow_indices(), mat1.col_indices(), mat1.values()
    n, k = mat1._shape[0], mat2._shape[1]
    counts = crow[1:] - crow[:-1]
    rows = ember.repeat_interleave(ember.arange(n), counts)
    terms = values.unsqueeze(-1) * mat2.index_select(0, col)
    out = ember.zeros(n, k, dtype=terms.dtype)
    if reduce in ("sum", "mean"):
        out = out.index_add(0, rows, terms)
        if reduce == "mean":
            out = out / counts.clamp(min=1).unsqueeze(-1).to(out.dtype)
        return out
    return out.scatter_reduce(0, rows.unsqueeze(-1).expand(terms.shape), terms, reduce, include_self=False)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2) with a sparse mat1."""
    return _ops._sparse_addmm.call(mat, mat1, mat2, beta, alpha)


def spmm(mat1, mat2):
    """torch.spmm: mm (MmBackward0)."""
    return ember.mm(mat1, mat2)


def sum(input, dim=None, dtype=None):
    """torch.sparse.sum: over every dim a dense 0-d tensor (SumBackward0 of the coalesced values, as
    torch records it); over some dims a sparse tensor (SparseSumBackward0), dense once every sparse
    dim is summed."""
    if dim is None:
        v = input.coalesce().values()
        return v.sum() if dtype is None else v.sum(dtype=dtype)
    dims = [dim] if isinstance(dim, int) else list(dim)
    if dtype is None:
        return _ops._sparse_sum_dim.call(input, dims)
    return _ops._sparse_sum_dim_dtype.call(input, dims, dtype)


def softmax(input, dim, *, dtype=None):
    """torch.sparse.softmax: over the specified entries of each slice (unspecified ones are -inf)."""
    if dtype is not None:
        input = input.to(dtype)
    return _ops._sparse_softmax.call(input, dim, False)


def log_softmax(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _ops._sparse_log_softmax.call(input, dim, False)
