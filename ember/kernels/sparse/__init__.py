"""The SparseCPU and SparseCsrCPU backends: sparse COO kernels (coo.py) and CSR kernels (csr.py),
registered on their keys when this
package is imported (ember/__init__ imports ember.sparse, which imports it).

KERNELS maps an operator's handle name (ember._generated.ops) to its kernel. The kernels take and
return Tensors. An op without one fails as torch's does: "Could not run 'aten::exp' with arguments
from the 'SparseCPU' backend"."""
from ember.core.keys import DispatchKey as _K
from ember._generated import ops as _ops
from ember.kernels.sparse import coo, csr

KERNELS = {name: getattr(coo, name) for name in (
    "_to_dense", "_coalesce", "is_coalesced", "_nnz", "_indices", "_values", "indices", "values", "sparse_mask",
    "_sparse_addmm", "_sparse_sum_backward", "_sparse_softmax", "_sparse_log_softmax",
    "_sparse_softmax_backward_data", "_sparse_log_softmax_backward_data",
    "mm", "addmm", "matmul", "neg", "t", "transpose_int", "detach", "clone", "_to_copy",
    "add_Tensor", "add__Tensor", "sub_Tensor", "mul_Tensor", "mul__Tensor", "div_Tensor", "sum", "sum_dim_IntList")}
KERNELS["_sparse_sum_dim"] = coo._sparse_sum_dim
KERNELS["_sparse_sum_dim_dtype"] = coo._sparse_sum_dim_dtype
# the SparseCsrCPU key's kernels (csr.py)
CSR_KERNELS = {name: getattr(csr, name) for name in (
    "_to_dense", "crow_indices", "col_indices", "values", "_nnz", "sparse_mask", "to_sparse", "detach", "clone",
    "_to_copy", "neg", "mul_Tensor", "div_Tensor", "sum", "t", "mm", "addmm", "_sparse_addmm", "matmul")}
CSR_KERNELS["to_sparse_sparse_dim"] = csr.to_sparse_sparse_dim


# ops that torch's CPU (strided) kernels refuse in words of their own
_STRIDED_ERRORS = {"is_coalesced": "is_coalesced expected sparse coordinate tensor layout but got Strided",
                   "indices": "indices expected sparse coordinate tensor layout but got Strided",
                   "values": "values expected sparse tensor layout but got Strided",
                   "crow_indices": "crow_indices expected sparse row compressed tensor layout but got Strided",
                   "col_indices": "col_indices expected sparse row compressed tensor layout but got Strided"}


def _strided_error(message):
    def kernel(*args):
        raise RuntimeError(message)
    return kernel


def register():
    for name, fn in KERNELS.items():
        getattr(_ops, name).register(_K.SparseCPU, fn, name=f"sparse.coo.{fn.__name__}")
    for name, fn in CSR_KERNELS.items():
        getattr(_ops, name).register(_K.SparseCsrCPU, fn, name=f"sparse.csr.{fn.__name__}")
    for name, message in _STRIDED_ERRORS.items():
        getattr(_ops, name).register(_K.CPU, _strided_error(message), name=f"sparse.strided_error.{name}")
        if name in ("indices", "is_coalesced"):
            getattr(_ops, name).register(_K.SparseCsrCPU, _strided_error(message.replace("Strided", "SparseCsr")),
                                         name=f"sparse.csr_error.{name}")


register()
