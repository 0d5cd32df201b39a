"""torch's older linear-algebra entry points as compositions of torch.linalg's ops, and a few small
op_db ops (positive, unsafe_chunk, unsafe_split, sum_to_size), written with other ember operators.

lu_unpack builds P from the LAPACK pivots with gather/scatter (every backend); lu_solve and
triangular_solve call linalg.lu_solve / linalg.solve_triangular and warn as torch does (once).
"""
import warnings

from ember._generated import ops as _ops
from ember._generated.ops import RETURN_TYPES
from ember.core import dtype as _dt
from ember.core.errors import fmt_shape
from ember.kernels.meta.pointwise import broadcast_shapes

_warned = set()


def _warn_once(key, msg):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(msg, UserWarning, stacklevel=4)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    if LU_data.dim() < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{fmt_shape(LU_data.shape)} instead")
    if unpack_pivots and LU_pivots.dtype != _dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                           "dtype.\nNote: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    dt, dev = LU_data.dtype, LU_data.device
    empty = _ops.empty_memory_format.call([0], dt, None, dev, None, None)
    if unpack_data:
        eye = _ops.eye_m.call(m, k, dt, None, dev, None)
        L = _ops.tril.call(_ops.slice_Tensor.call(LU_data, -1, 0, k, 1), -1) + eye
        U = _ops.triu.call(_ops.slice_Tensor.call(LU_data, -2, 0, k, 1), 0)
    else:
        L = U = empty
    if not unpack_pivots:
        return RETURN_TYPES["lu_unpack"](empty, L, U)
    batch = tuple(LU_data.shape[:-2])
    if tuple(LU_pivots.shape) != batch + (k,):
        raise RuntimeError("torch.lu_unpack: Expected LU_pivots.size(-1) to be "
                           f"{k} and LU_pivots batch shape to be {fmt_shape(batch)}; got "
                           f"{fmt_shape(LU_pivots.shape)}")
    piv = LU_pivots.long() - 1
    if k and (bool((piv < 0).any()) or bool((piv >= m).any())):
        raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
                           "Did you properly pass the result of lu_factor?")
    perm = _ops.arange.call(m, _dt.int64, None, dev, None).expand(batch + (m,)).clone()
    for i in range(k):
        j = _ops.slice_Tensor.call(piv, -1, i, i + 1, 1)
        a = _ops.slice_Tensor.call(perm, -1, i, i + 1, 1).clone()
        b = _ops.gather.call(perm, -1, j, False)
        _ops.slice_Tensor.call(perm, -1, i, i + 1, 1).copy_(b)
        _ops.scatter__src.call(perm, -1, j, a)
    P = _ops.zeros.call(list(batch + (m, m)), dt, None, dev, None)
    ones = _ops.ones.call(list(batch + (1, m)), dt, None, dev, None)
    _ops.scatter__src.call(P, -2, perm.unsqueeze(-2), ones)
    return RETURN_TYPES["lu_unpack"](P, L, U)


def lu_solve(self, LU_data, LU_pivots):
    _warn_once("lu_solve", "torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed "
               "in a future PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\n"
               "X = torch.lu_solve(B, LU, pivots)\nshould be replaced with\n"
               "X = torch.linalg.lu_solve(LU, pivots, B)")
    return _ops.linalg_lu_solve.call(LU_data, LU_pivots, self, True, False)


def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    _warn_once("triangular_solve", "torch.triangular_solve is deprecated in favor of "
               "torch.linalg.solve_triangularand will be removed in a future PyTorch release.\n"
               "torch.linalg.solve_triangular has its arguments reversed and does not return a copy of one "
               "of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced with\n"
               "X = torch.linalg.solve_triangular(A, B).")
    for name, t in (("b", self), ("A", A)):
        if t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but "
                               f"it has {t.dim()} dimensions instead")
    if self.dtype != A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {self.dtype._short} "
                           f"and A of type {A.dtype._short} instead.")
    if A.shape[-1] != A.shape[-2] or A.shape[-1] != self.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} "
                           f"by {A.shape[-1]} but each b matrix is {self.shape[-2]} by {self.shape[-1]}")
    batch = list(broadcast_shapes(tuple(self.shape[:-2]), tuple(A.shape[:-2])))
    A_b = A.expand(batch + list(A.shape[-2:]))
    B_b = self.expand(batch + list(self.shape[-2:]))
    A_s = A_b.mT if transpose else A_b
    sol = _ops.linalg_solve_triangular.call(A_s, B_b, upper != bool(transpose), True, unitriangular)
    return RETURN_TYPES["triangular_solve"](sol, A_b.clone())


def positive(self):
    if self.dtype == _dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def unsafe_chunk(self, chunks, dim=0):
    return list(_ops.chunk.call(self, chunks, dim))


def unsafe_split(self, split_size, dim=0):
    return list(_ops.split_Tensor.call(self, split_size, dim))


def sum_to_size(self, size):
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{fmt_shape(size)}}} is not expandable to size {{{fmt_shape(shape)}}}.")
    if shape == size:
        return self
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    r = _ops.sum_dim_IntList.call(self, dims, True, None) if dims else self
    return r.reshape(size) if lead else r


def resize_as_(self, the_template, memory_format=None):
    return _ops.resize_.call(self, list(the_template.shape), memory_format)


def ormqr(self, input2, input3, left=True, transpose=False):
    """op(Q) @ C (left) or C @ op(Q), Q = H_1 ... H_k from geqrf's reflectors, op = conj-transpose if
    `transpose`; the reflectors are applied one by one (every backend, differentiable)."""
    A, tau, C = self, input2, input3
    if A.dim() < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if C.dim() < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    lsc = -2 if left else -1
    if tau.dim() and tau.shape[-1] != min(C.shape[lsc], A.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{lsc}], "
                           "input.shape[-1])")
    if C.shape[lsc] != A.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{lsc}] must be equal to input.shape[-2]")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError("torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if A.dim() != C.dim():
        raise RuntimeError("torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {C.dim()} and input.ndim is equal to {A.dim()}")
    if A.dim() > 2:
        if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
            raise RuntimeError("torch.ormqr: Expected batch dimensions of tau to be equal to input.shape[:-2], "
                               f"but got {fmt_shape(tau.shape[:-1])}")
        if tuple(C.shape[:-2]) != tuple(A.shape[:-2]):
            raise RuntimeError("torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], "
                               f"but got {fmt_shape(C.shape[:-2])}")
    for name, t in (("tau", tau), ("other", C)):
        if t.dtype != A.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has "
                               f"dtype{A.dtype._short} and {name} has dtype {t.dtype._short}")
    if A.dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{A.dtype._short}'")
    m = A.shape[-2]
    k = tau.shape[-1]
    eye = _ops.eye_m.call(m, A.shape[-1], A.dtype, None, A.device, None)
    V = _ops.tril.call(A, -1) + eye
    complex_ = A.dtype in (_dt.complex64, _dt.complex128)
    # left: Q C applies H_k first; Q^H C applies H_1^H first. right: C Q applies H_1 first; C Q^H H_k^H first
    order = range(k) if left == bool(transpose) else range(k - 1, -1, -1)
    out = C
    for i in order:
        v = _ops.slice_Tensor.call(V, -1, i, i + 1, 1)  # m x 1
        t = _ops.slice_Tensor.call(tau, -1, i, i + 1, 1).unsqueeze(-1)
        if transpose and complex_:
            t = t.conj()
        vh = v.conj().transpose(-2, -1) if complex_ else v.transpose(-2, -1)
        if left:
            out = out - (t * v).matmul(vh.matmul(out))
        else:
            out = out - out.matmul(v).matmul(t * vh)
    return out
