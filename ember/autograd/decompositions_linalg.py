"""PyTorch's CompositeImplicitAutograd linear-algebra decompositions, registered on the Autograd key.

PyTorch's matmul, einsum, tensordot, outer, diag, matrix_power, matrix_norm, ... are
CompositeImplicitAutograd: their graphs are made of the ops they call (MmBackward0 for a 2-D
matmul, ViewBackward0 for most einsums, ...). ember keeps one fast NumPy kernel per op for the
plain call and registers these decompositions on the Autograd key only (`Autograd:` in
ops/native_functions/linalg.yaml), so grad_fn names and graphs are PyTorch's. They are autograd
kernels, so they live in the autograd layer; they call ops through the public namespace.
"""
import warnings

import ember
from ember.core import tls as _tls
from ember.dispatch.operator import Kernel as _Kernel
from ember.kernels.meta import linalg as _M
from ember.kernels.meta.linalg import _einsum as _run_einsum, chain_order, numel

_st = _tls.current


def _autograd(fn):
    """The Autograd-key kernel of a decomposition: with grad mode off (inference with parameters
    that require grad) the call goes straight to the backend kernel below."""
    def kernel(below, *args):
        if _st().ag:  # grad mode on
            return fn(*args)
        return below(*args)
    kernel.__name__ = kernel.__qualname__ = fn.__name__
    kernel.decomposition = fn  # forward AD runs it on dual tensors (ember/autograd/forward_ad.py)
    return _Kernel(kernel, redispatch=True, name="decompositions_linalg." + fn.__name__)


def _matmul(self, other):
    """at::matmul: dot / mv / mm for 1-D and 2-D operands (a vector @ matrix is unsqueeze, mm,
    squeeze_); the folded and batched cases are one node (PyTorch's graph ends in _unsafe_view
    there: UnsafeViewBackward0), a matrix @ batch that ATen folds through the transposes ends in
    contiguous() (CloneBackward0)."""
    if self.__class__ is other.__class__:
        da, db = len(self._shape), len(other._shape)
        if da == 2:
            if db == 2:
                return ember.mm(self, other)
            if db == 1:
                return ember.mv(self, other)
            if db >= 3 and self.requires_grad:  # ATen's should_fold: mm on the folded other^T
                so = other._shape
                _M.mm_check((numel(so[:-2]) * so[-1], so[-2]), other._dtype,
                            (self._shape[1], self._shape[0]), self._dtype)
                return ember._la_matmul(other.mT, self.mT).mT.contiguous()
        elif da == 1:
            if db == 1:
                return ember.dot(self, other)
            if db == 2:
                _M.matmul(self, other)
                return ember.mm(self.unsqueeze(0), other).squeeze_(0)
    return ember._la_matmul(self, other)


def _diag(self, diagonal=0):
    """at::diag: diag_embed of a vector, diagonal_copy of a matrix."""
    _M.diag_shape(self._shape, diagonal)
    if len(self._shape) == 1:
        return ember.diag_embed(self, diagonal)
    return ember._la_diagonal_copy(self, diagonal)


def _diagflat(self, offset=0):
    return ember.diag(self.reshape(-1), offset)


def _outer(self, vec2):
    _M.outer_check(self._shape, vec2._shape)
    return self.reshape(self._shape[0], 1) * vec2


def _ger(self, vec2):
    warnings.warn("torch.ger is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.outer instead.", UserWarning, stacklevel=4)
    return _outer(self, vec2)


def _vecdot(x, y, dim=-1):
    _M.vecdot(x, y, dim)
    return (x.conj() * y).sum(dim)


def _logdet(self):
    _M.logdet(self)
    sign, logabsdet = ember.linalg.slogdet(self)
    if self._dtype.is_complex:
        return sign.log() + logabsdet
    return ember.where(sign == -1, float("nan"), logabsdet)


def _matrix_power(self, n):
    """at::linalg_matrix_power: repeated matmul (binary decomposition of n)."""
    _M.matrix_power(self, n)
    if n == 0:
        eye = ember.eye(self._shape[-1], dtype=self._dtype, device=self.device)
        return self.clone(memory_format=ember.contiguous_format).copy_(eye)
    a = self
    if n < 0:
        a = ember.linalg.inv(self)
        n = -n
    if n == 1:
        return a.clone(memory_format=ember.contiguous_format)
    if n == 2:
        return ember.matmul(a, a)
    if n == 3:
        return ember.matmul(ember.matmul(a, a), a)
    z = result = None
    while n > 0:
        bit = n % 2
        n //= 2
        z = a if z is None else ember.matmul(z, z)
        if bit == 1:
            result = z if result is None else ember.matmul(result, z)
    return result


class _EmberOps:
    """einsum's tensor operations (ember/kernels/meta/linalg.py `_einsum`) as ember operators."""

    @staticmethod
    def shape(x):
        return tuple(x._shape)

    @staticmethod
    def dtype(x):
        return x._dtype

    @staticmethod
    def diagonal(x, d1, d2):
        return ember.diagonal(x, 0, d1, d2).movedim(-1, d1)

    @staticmethod
    def unsqueeze(x, d):
        return x.unsqueeze(d)

    @staticmethod
    def permute(x, perm):
        return x.permute(list(perm))

    @staticmethod
    def reshape(x, shape):
        return x.reshape(tuple(shape))

    @staticmethod
    def sum(x, dims, keepdim=True):
        return x.sum(list(dims), keepdim=keepdim)

    @staticmethod
    def mul(a, b):
        return a * b

    @staticmethod
    def bmm(a, b):
        return ember.bmm(a, b)


def _einsum(equation, tensors, path=None):
    """at::einsum, the same algorithm as the kernel, on ember operators."""
    run = _run_einsum
    _M.einsum(equation, tensors, path)  # PyTorch's argument errors first
    r = run(equation, list(tensors), path, _EmberOps)
    if r is None:  # a single operand, only rearranged: its permuted (diagonal) view

        class _Keep(_EmberOps):
            last = None

            @staticmethod
            def permute(x, perm):
                _Keep.last = x.permute(list(perm))
                return _Keep.last
        run(equation, list(tensors), path, _Keep)
        r = _Keep.last
    return r


def _tensordot(self, other, dims_self, dims_other):
    """at::tensordot: permute, reshape, mm, reshape."""
    out, wa, wb = _M.tensordot_check(self._shape, self._dtype, other._shape, other._dtype,
                                     dims_self, dims_other)
    t1, t2 = self, other
    csize = 1
    for i, j in zip(wa, wb):
        s1, s2 = self._shape[i], other._shape[j]
        if s2 == 1:
            t1 = t1.sum(i, True, dtype=t1._dtype)
        elif s1 == 1:
            t2 = t2.sum(j, True, dtype=t2._dtype)
        else:
            csize *= s1
    fa = [i for i in range(len(self._shape)) if i not in wa]
    fb = [i for i in range(len(other._shape)) if i not in wb]
    size1 = numel([t1._shape[i] for i in fa])
    size2 = numel([t2._shape[i] for i in fb])
    m1 = t1.permute(fa + list(wa)).reshape(size1, csize)
    m2 = t2.permute(list(wb) + fb).reshape(csize, size2)
    return ember.mm(m1, m2).reshape(out)


def _inner(self, other):
    r = _M.inner_check(self._shape, self._dtype, other._shape, other._dtype)
    if r is None:
        return self * other
    return _tensordot(self, other, [-1], [-1])


def _multi_dot(tensors):
    """at::linalg_multi_dot: mm in the cheapest order, then a view to the output shape."""
    out, _, _ = _M.multi_dot_check([t._shape for t in tensors], [t._dtype for t in tensors])
    return _chain_autograd(list(tensors), out)


def _chain_matmul(matrices):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=4)
    out = _M.chain_matmul_check([t._shape for t in matrices], [t._dtype for t in matrices])
    if len(matrices) == 1:
        return matrices[0].clone()
    return _chain_autograd(list(matrices), out)


def _chain_autograd(mats, out):
    if len(mats[0]._shape) == 1:
        mats[0] = mats[0].unsqueeze(0)
    if len(mats[-1]._shape) == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    split = chain_order([tuple(m._shape) for m in mats])

    def run(i, j):
        if i == j:
            return mats[i]
        k = split(i, j)
        return ember.mm(run(i, k), run(k + 1, j))
    return run(0, len(mats) - 1).view(out)


def _back_perm(d0, d1, nd):
    """create_dim_backshift_permutation: move dims d0, d1 to the end."""
    return [i for i in range(nd) if i not in (d0, d1)] + [d0, d1]


def _max_min(x, ord, dim, keepdim):
    return x.amax(dim, keepdim) if ord > 0 else x.amin(dim, keepdim)


def _matrix_norm(self, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    """at::linalg_matrix_norm: vector norms, svdvals, amax/amin."""
    _, _, (d0, d1) = _M.matrix_norm_check(self._shape, self._dtype, ord, dim, keepdim, dtype)
    nd = len(self._shape)
    if isinstance(ord, str):
        if ord == "fro":
            return ember.linalg.vector_norm(self, 2, (d0, d1), keepdim, dtype=dtype)
        a = self if dtype is None else self.to(dtype)
        perm = _back_perm(d0, d1, nd)
        r = ember.linalg.svdvals(a.permute(perm)).sum(-1, keepdim)
        if keepdim:
            r = r.unsqueeze(-1).permute(_inverse_perm(perm))
        return r
    o = float(ord.real if isinstance(ord, complex) else ord)
    if abs(o) == 2.0:
        a = self if dtype is None else self.to(dtype)
        perm = _back_perm(d0, d1, nd)
        r = _max_min(ember.linalg.svdvals(a.permute(perm)), o, -1, keepdim)
        if keepdim:
            r = r.unsqueeze(-1).permute(_inverse_perm(perm))
        return r
    if abs(o) == float("inf"):
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    return _max_min(ember.linalg.vector_norm(self, 1.0, (d0,), keepdim, dtype=dtype), o, d1,
                    keepdim)


def _inverse_perm(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _norm(self, ord=None, dim=None, keepdim=False, dtype=None):
    """at::linalg_norm: matrix_norm for a matrix order, else vector_norm."""
    plan = _M.linalg_norm_plan(self._shape, ord, dim, isinstance(ord, str))
    if plan[0] == "matrix":
        return _matrix_norm(self, plan[1], plan[2], keepdim, dtype)
    return ember.linalg.vector_norm(self, plan[1], plan[2], keepdim, dtype=dtype)


def _svd(self, some=True, compute_uv=True):
    """at::svd: linalg_svd, with V = Vh^H (a TransposeBackward0 node, as in PyTorch)."""
    _M.svd_legacy(self, some, compute_uv)
    if compute_uv:
        U, S, Vh = ember.linalg.svd(self, full_matrices=not some)
        return ember.return_types.svd(U, S, Vh.mH)
    m, n = self._shape[-2], self._shape[-1]
    b = tuple(self._shape[:-2])
    S = ember.linalg.svdvals(self)
    U = ember.zeros(b + (m, m), dtype=self._dtype, device=self.device)
    V = ember.zeros(b + (n, n), dtype=self._dtype, device=self.device).mT
    return ember.return_types.svd(U, S, V)


# the Autograd-key kernels named in ops/native_functions/linalg.yaml
matmul_autograd = _autograd(_matmul)
diag_autograd = _autograd(_diag)
diagflat_autograd = _autograd(_diagflat)
outer_autograd = _autograd(_outer)
ger_autograd = _autograd(_ger)
vecdot_autograd = _autograd(_vecdot)
logdet_autograd = _autograd(_logdet)
matrix_power_autograd = _autograd(_matrix_power)
einsum_autograd = _autograd(_einsum)
tensordot_autograd = _autograd(_tensordot)
inner_autograd = _autograd(_inner)
multi_dot_autograd = _autograd(_multi_dot)
chain_matmul_autograd = _autograd(_chain_matmul)
matrix_norm_autograd = _autograd(_matrix_norm)
norm_autograd = _autograd(_norm)
svd_autograd = _autograd(_svd)
