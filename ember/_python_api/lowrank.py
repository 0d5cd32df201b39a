"""torch.svd_lowrank and torch.pca_lowrank (torch/_lowrank.py): Halko et al.'s randomized range finder,
written with ember ops. The random matrix comes from ember.randn, which draws torch's numbers, so a seeded
call gives torch's result. Sparse inputs go through ember.sparse.mm."""
import ember
from ember.core import dtype as _dt

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating_dtype(A):
    return A.dtype if A.dtype in (_dt.float16, _dt.float32, _dt.float64) else _dt.float32


def _matmul(A, B):
    if A is None:
        return B
    if A.is_sparse:
        return ember.sparse.mm(A, B)
    return ember.matmul(A, B)


def get_approximate_basis(A, q, niter=2, M=None):
    niter = 2 if niter is None else niter
    dtype = _floating_dtype(A) if not A.is_complex() else A.dtype
    R = ember.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    X = _matmul(A, R)
    if M is not None:
        X = X - _matmul(M, R)
    Q = ember.linalg.qr(X).Q
    for _ in range(niter):
        X = _matmul(A.mH, Q)
        if M is not None:
            X = X - _matmul(M.mH, Q)
        Q = ember.linalg.qr(X).Q
        X = _matmul(A, Q)
        if M is not None:
            X = X - _matmul(M, Q)
        Q = ember.linalg.qr(X).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:
        A = A.mH
        if M is not None:
            M = M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = _matmul(Q.mH, A)
    if M is not None:
        B = B - _matmul(Q.mH, M)
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A, q=None, center=True, niter=2):
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    dtype = _floating_dtype(A)
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    if A.is_sparse:
        if len(A.shape) != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        c = ember.sparse.sum(A, dim=(-2,)) / m
        column_indices = c.indices()[0]
        indices = ember.zeros(2, len(column_indices), dtype=column_indices.dtype, device=column_indices.device)
        indices[0] = column_indices
        C_t = ember.sparse_coo_tensor(indices, c.values(), (n, 1), dtype=dtype, device=A.device)
        ones_m1_t = ember.ones(A.shape[:-2] + (1, m), dtype=dtype, device=A.device)
        M = ember.sparse.mm(C_t, ones_m1_t).mT
        return _svd_lowrank(A, q, niter=niter, M=M)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter=niter, M=None)
