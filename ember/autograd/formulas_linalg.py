"""Backward helpers of the linear-algebra family (FunctionsManual.cpp's linalg parts).

Every helper is written with ember operators (matmul, linalg.solve, ...), so the backward graph
is itself differentiable (double backward). Constant matrices (identities, triangular masks,
block selectors) are built with ember factories on the gradient's device.
"""
import ember
from ember.autograd.formulas import conj, maybe_multiply, sum_to


def _column_major(sizes, s):
    return len(s) == 2 and s[0] == 1 and s[1] == sizes[0] and sizes[1] != 1


def mm_mat1_backward(grad, mat2, mat1_sizes, mat1_strides, alpha=1):
    """d(mat1 @ mat2)/d mat1, in mat1's memory order: a column-major input (a transposed weight)
    gets a column-major gradient, so the leaf's .grad comes out in the parameter's own layout
    and optimisers need no transposing copy (FunctionsManual's mm_mat1_backward)."""
    if _column_major(mat1_sizes, mat1_strides):
        return maybe_multiply(conj(mat2).mm(grad.t()).t(), conj(alpha))
    return maybe_multiply(grad.mm(conj(mat2.t())), conj(alpha))


def mm_mat2_backward(grad, mat1, mat2_sizes, mat2_strides, alpha=1):
    """d(mat1 @ mat2)/d mat2 in mat2's memory order (linear's weight.t() is column-major)."""
    if _column_major(mat2_sizes, mat2_strides):
        return maybe_multiply(grad.t().mm(conj(mat1)).t(), conj(alpha))
    return maybe_multiply(conj(mat1.t()).mm(grad), conj(alpha))

__all__ = [
    "mm_mat1_backward", "mm_mat2_backward",
    "la_mH", "la_matmul_backward", "la_kron_backward", "la_cross_dim", "la_diagonal_copy_backward",
    "la_trace_backward", "la_det_backward", "la_slogdet_backward", "la_inv_backward",
    "la_solve_backward", "la_cholesky_backward", "la_solve_triangular_backward",
    "la_matrix_exp_backward", "la_eigh_backward", "la_eigvalsh_backward", "la_svd_backward",
    "la_svdvals_backward", "la_qr_backward", "la_pinv_backward",
    "la_cholesky_solve_backward", "la_cholesky_inverse_backward", "la_linalg_eig_backward",
    "la_eigvals_backward", "la_lu_backward", "la_lu_factor_backward", "la_lu_solve_LU",
]


def la_mH(t):
    """The conjugate transpose of the last two dims."""
    return conj(t.transpose(-2, -1))


def _eye(n, like, m=None):
    return ember.eye(n, n if m is None else m, dtype=like.dtype.to_real(), device=like.device)


def _tri_mask(n, like, upper, k=0):
    """A constant 0/1 matrix: triu(ones, k) or tril(ones, k), in like's real dtype."""
    ones = ember.ones(n, n, dtype=like.dtype.to_real(), device=like.device)
    return ones.triu(k) if upper else ones.tril(k)


def _mask(m, n, like, upper, k=0):
    """A constant (m, n) 0/1 matrix: triu(ones, k) or tril(ones, k), in like's real dtype."""
    ones = ember.ones(m, n, dtype=like.dtype.to_real(), device=like.device)
    return ones.triu(k) if upper else ones.tril(k)


def _sq(t):
    """Two trailing size-1 dims (a batch of scalars against a batch of matrices)."""
    return t.unsqueeze(-1).unsqueeze(-1)


def _drop_last(t):
    return t.reshape(tuple(t.shape[:-1]))


# ---- products ---------------------------------------------------------------------------------
def la_matmul_backward(grad, a, b, which):
    """matmul's folded / batched case: gradients through matmul of 2-D-or-more views, reduced
    over broadcast batch dims (a 1-D operand was a row (a) or a column (b) vector)."""
    da, db = a.dim(), b.dim()
    a2 = a.unsqueeze(0) if da == 1 else a
    b2 = b.unsqueeze(-1) if db == 1 else b
    g2 = grad
    if da == 1:
        g2 = g2.unsqueeze(-2 if db > 1 else -1)
    if db == 1:
        g2 = g2.unsqueeze(-1)
    if which == 0:
        r = sum_to(ember.matmul(g2, la_mH(b2)), tuple(a2.shape))
        return r.reshape(tuple(a.shape)) if da == 1 else r
    r = sum_to(ember.matmul(la_mH(a2), g2), tuple(b2.shape))
    return r.reshape(tuple(b.shape)) if db == 1 else r


def la_kron_backward(grad, a, b, which):
    """kron: grad viewed as (a0, b0, a1, b1, ...) and contracted with the other operand."""
    n = max(a.dim(), b.dim())
    sa = (1,) * (n - a.dim()) + tuple(a.shape)
    sb = (1,) * (n - b.dim()) + tuple(b.shape)
    g = grad.reshape(tuple(x for p in zip(sa, sb) for x in p))
    if which == 0:
        other = conj(b).reshape(tuple(x for s in sb for x in (1, s)))
        dims = list(range(1, 2 * n, 2))
        return (g * other).sum(dims).reshape(tuple(a.shape)) if dims else \
            (g * other).reshape(tuple(a.shape))
    other = conj(a).reshape(tuple(x for s in sa for x in (s, 1)))
    dims = list(range(0, 2 * n, 2))
    return (g * other).sum(dims).reshape(tuple(b.shape)) if dims else \
        (g * other).reshape(tuple(b.shape))


def la_cross_dim(dim, sizes):
    """torch.cross's dim=None default: the first dimension of size 3."""
    from ember.kernels.meta.linalg import cross_default_dim
    return cross_default_dim(dim, tuple(sizes))


# ---- diagonals --------------------------------------------------------------------------------
def la_diagonal_copy_backward(grad, sizes, offset):
    """diag of a matrix: the gradient placed on diagonal `offset` of an (n, m) zero matrix,
    written as E1 @ diag(grad) @ E2 with constant 0/1 selectors (differentiable in grad)."""
    import numpy as np
    n, m = sizes
    ln = grad.shape[0]
    dt = grad.dtype.to_real()
    e1 = ember.tensor(np.eye(n, ln, k=-max(-offset, 0)), dtype=dt, device=grad.device)
    e2 = ember.tensor(np.eye(ln, m, k=max(offset, 0)), dtype=dt, device=grad.device)
    return ember.mm((e1 * grad).to(grad.dtype), e2.to(grad.dtype))


def la_trace_backward(grad, sizes):
    n, m = sizes
    return grad * _eye(n, grad, m)


# ---- determinants and inverses ----------------------------------------------------------------
def la_det_backward(grad, A, det):
    """det(A) A^{-H} (the cofactor matrix); through the SVD for singular matrices."""
    if A.numel() == 0:
        return ember.zeros(tuple(A.shape), dtype=A.dtype, device=A.device)
    d = _sq(grad * conj(det))
    inv, info = ember.linalg.inv_ex(A)
    if A.device.type == "meta" or not bool((info != 0).any()):
        return d * la_mH(inv)
    # singular: det(A) A^{-H} = conj(det U det Vh) U diag(prod_{j != i} s_j) Vh
    U, S, Vh = ember.linalg.svd(A)
    n = S.shape[-1]
    eye = _eye(n, S)
    P = (S.unsqueeze(-2) * (1 - eye) + eye).prod(-1)
    phase = conj(ember.linalg.det(U) * ember.linalg.det(Vh))
    return d * _sq(phase) * ember.matmul(U * P.unsqueeze(-2), Vh)


def la_slogdet_backward(g_sign, g_logabsdet, A, sign):
    """(g_logabsdet - i Im(conj(g_sign) sign)) A^{-H}; the sign of a real matrix has no gradient."""
    if A.dtype.is_complex:
        if g_logabsdet is None and g_sign is None:
            return None
        c = g_logabsdet if g_logabsdet is not None else ember.zeros(
            tuple(sign.shape), dtype=A.dtype.to_real(), device=A.device)
        if g_sign is not None:
            c = c - 1j * (conj(g_sign) * sign).imag
        return _sq(c) * la_mH(ember.linalg.inv(A))
    if g_logabsdet is None:
        return None
    return _sq(g_logabsdet) * la_mH(ember.linalg.inv(A))


def la_inv_backward(grad, inv):
    ih = la_mH(inv)
    return -ember.matmul(ih, ember.matmul(grad, ih))


def la_solve_backward(gX, X, A, B_sizes, left):
    """linalg_solve_backward: gB = A^{-H} gX (left) or gX A^{-H} (right); gA = -gB X^H / -X^H gB."""
    if gX is None:
        return None, None
    sa = tuple(A.shape)
    vector = len(B_sizes) == 1 or (len(sa) - 1 == len(B_sizes) and tuple(B_sizes) == sa[:-1])
    gX_ = gX.unsqueeze(-1) if vector else gX
    X_ = X.unsqueeze(-1) if vector else X
    gB_ = ember.linalg.solve(la_mH(A), gX_, left=left)
    gA = -ember.matmul(gB_, la_mH(X_)) if left else -ember.matmul(la_mH(X_), gB_)
    return gA, (_drop_last(gB_) if vector else gB_)


def la_cholesky_backward(gL, upper, L):
    """Iain Murray (2016), as PyTorch writes it: L^{-H} Phi(L^H gL) L^{-1}, symmetrized."""
    if gL is None:
        return None
    if upper:
        L = la_mH(L)
        gL = la_mH(gL)
    n = L.shape[-1]
    T = ember.matmul(la_mH(L), gL) * _tri_mask(n, L, False)
    phi = 0.5 * (T + la_mH(T * _tri_mask(n, L, False, -1)))
    gA = ember.linalg.solve_triangular(la_mH(L), phi, upper=True, left=True)
    return ember.linalg.solve_triangular(L, gA, upper=False, left=False)


def la_solve_triangular_backward(grad, A, X, upper, left, unitriangular):
    if grad is None:
        return None, None
    gB = ember.linalg.solve_triangular(la_mH(A), grad, upper=not upper, left=left,
                                       unitriangular=unitriangular)
    gA = -ember.matmul(gB, la_mH(X)) if left else -ember.matmul(la_mH(X), gB)
    k = int(unitriangular)
    gA = gA * _tri_mask(A.shape[-1], A, upper, k if upper else -k)
    return gA, gB


def la_matrix_exp_backward(A, grad):
    """The adjoint Frechet derivative: exp([[A^H, G], [0, A^H]]) upper-right block (block
    matrices assembled with constant selectors so the result stays differentiable)."""
    n = A.shape[-1]
    dt = A.dtype
    p0 = ember.cat([ember.eye(n, dtype=dt, device=A.device),
                    ember.zeros(n, n, dtype=dt, device=A.device)], 0)
    p1 = ember.cat([ember.zeros(n, n, dtype=dt, device=A.device),
                    ember.eye(n, dtype=dt, device=A.device)], 0)
    ah = la_mH(A)
    big = (ember.matmul(ember.matmul(p0, ah), p0.mT) + ember.matmul(ember.matmul(p1, ah), p1.mT)
           + ember.matmul(ember.matmul(p0, grad), p1.mT))
    return ember.matmul(ember.matmul(p0.mT, ember.linalg.matrix_exp(big)), p1)


# ---- spectral decompositions ------------------------------------------------------------------
def la_eigh_backward(gL, gV, L, V):
    """linalg_eig_backward for Hermitian matrices."""
    if gV is None:
        if gL is None:
            return None
        return ember.matmul(V * gL.unsqueeze(-2), la_mH(V))
    VhgV = ember.matmul(la_mH(V), gV)
    VhgV = 0.5 * (VhgV - la_mH(VhgV))
    eye = _eye(L.shape[-1], L)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye  # E_ij = L_j - L_i, ones on the diagonal
    ret = VhgV / E
    if gL is not None:
        ret = ret * (1 - eye) + ember.diag_embed(gL)
    return ember.matmul(V, ember.matmul(ret, la_mH(V)))


def la_eigvalsh_backward(grad, A, UPLO):
    _, V = ember.linalg.eigh(A, UPLO)
    return ember.matmul(V * grad.unsqueeze(-2), la_mH(V))


def la_linalg_eig_backward(gL, gV, L, V, A_dtype):
    """linalg_eig_backward for general (diagonalizable) matrices; real inputs get the real part."""
    if gL is None and gV is None:
        return None
    Vh = la_mH(V)
    if gV is None:
        r = ember.linalg.solve(Vh, gL.unsqueeze(-1) * Vh)
    else:
        VhgV = ember.matmul(Vh, gV)
        diag = ember.diagonal(VhgV, 0, -2, -1)
        VhgV = VhgV - ember.matmul(Vh, V * diag.real.unsqueeze(-2))
        Lc = conj(L)
        eye = _eye(L.shape[-1], L)
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye
        ret = VhgV / E
        if gL is not None:
            ret = ret * (1 - eye) + ember.diag_embed(gL)
        r = ember.linalg.solve(Vh, ember.matmul(ret, Vh))
    return r if A_dtype.is_complex else r.real


def la_eigvals_backward(grad, A):
    L, V = ember.linalg.eig(A)
    return la_linalg_eig_backward(grad, None, L, V, A.dtype)


def la_svd_backward(gU, gS, gVh, U, S, Vh, full_matrices=False):
    """svd_backward (PyTorch's FunctionsManual), distinct singular values assumed."""
    if gU is None and gS is None and gVh is None:
        return None
    k = S.shape[-1]
    if full_matrices:
        if gU is not None:
            gU = gU[..., :k]
        if gVh is not None:
            gVh = gVh[..., :k, :]
        U = U[..., :k]
        Vh = Vh[..., :k, :]
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        if m >= n:
            return ember.matmul(U, gS.unsqueeze(-1) * Vh)
        return ember.matmul(U * gS.unsqueeze(-2), Vh)
    UhgU = VhgV = None
    if gU is not None:
        UhgU = ember.matmul(la_mH(U), gU)
        UhgU = UhgU - la_mH(UhgU)
    if gVh is not None:
        VhgV = ember.matmul(Vh, la_mH(gVh))
        VhgV = VhgV - la_mH(VhgV)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye(k, S)
    if UhgU is not None and VhgV is not None:
        ret = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is None:
        ret = S.unsqueeze(-1) * VhgV / E
    else:
        ret = UhgU * S.unsqueeze(-2) / E
    if gS is not None:
        ret = ret + ember.diag_embed(gS)
    if U.dtype.is_complex and UhgU is not None:
        ret = ret + ember.diag_embed(ember.diagonal(UhgU, 0, -2, -1) / (2 * S))
    if m > n and gU is not None:
        gA = ember.matmul(U, ret)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - ember.matmul(U, ember.matmul(la_mH(U), gUSinv))
        return ember.matmul(gA, Vh)
    if m < n and gVh is not None:
        gA = ember.matmul(ret, Vh)
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - ember.matmul(ember.matmul(SinvgVh, la_mH(Vh)), Vh)
        return ember.matmul(U, gA)
    if m >= n:
        return ember.matmul(U, ember.matmul(ret, Vh))
    return ember.matmul(ember.matmul(U, ret), Vh)


def la_svdvals_backward(grad, A):
    U, _, Vh = ember.linalg.svd(A, full_matrices=False)
    m, n = U.shape[-2], Vh.shape[-1]
    if m >= n:
        return ember.matmul(U, grad.unsqueeze(-1) * Vh)
    return ember.matmul(U * grad.unsqueeze(-2), Vh)


def la_qr_backward(gQ, gR, Q, R, mode):
    """linalg_qr_backward: gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^{-H} for m >= n; a
    wide A = [X | Y] = Q [U | V] reduces to the square case for X, and Q gV for Y."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if gQ is None and gR is None:
        return None
    if m >= n:
        return _qr_backward_tall(gQ, gR, Q, R)
    # wide: R = [U | V] with U (m, m); A = [Q U | Q V]
    sel_u = _eye(m, R, n).to(R.dtype)              # (m, n): [I | 0]
    sel_v = _eye(n, R)[m:].to(R.dtype)             # (n - m, n): [0 | I]
    U = ember.matmul(R, sel_u.mT)
    gU = gV = None
    if gR is not None:
        gU = ember.matmul(gR, sel_u.mT)
        gV = ember.matmul(gR, sel_v.mT)
    gQ2 = gQ
    if gV is not None:
        Y = ember.matmul(Q, ember.matmul(R, sel_v.mT))
        yv = ember.matmul(Y, la_mH(gV))
        gQ2 = yv if gQ2 is None else gQ2 + yv
    gX = _qr_backward_tall(gQ2, gU, Q, U)
    gA = ember.matmul(gX, sel_u)
    if gV is not None:
        gA = gA + ember.matmul(ember.matmul(Q, gV), sel_v)
    return gA


def _qr_backward_tall(gQ, gR, Q, R):
    if gQ is not None:
        M = -ember.matmul(la_mH(Q), gQ)
        if gR is not None:
            M = M + ember.matmul(gR, la_mH(R))
    else:
        M = ember.matmul(gR, la_mH(R))
    n = R.shape[-1]
    T = M * _tri_mask(n, M, True)
    sym = T + la_mH(T)
    eye = _eye(n, M)
    if sym.dtype.is_complex:
        d = ember.diagonal(sym, 0, -2, -1)
        sym = sym - 0.5 * ember.diag_embed(d.real)
    else:
        sym = sym - 0.5 * sym * eye
    gA = ember.matmul(Q, sym)
    if gQ is not None:
        gA = gA + gQ
    return ember.linalg.solve_triangular(la_mH(R), gA, upper=False, left=False)


def la_pinv_backward(grad, pinvA, A):
    m, n = A.shape[-2], A.shape[-1]
    pinvAh = la_mH(pinvA)
    gradh = la_mH(grad)
    mm = ember.matmul
    if m <= n:
        K = mm(gradh, pinvA)
        KpinvAh = mm(K, pinvAh)
        return (-la_mH(mm(pinvA, K)) + KpinvAh - mm(mm(A, pinvA), KpinvAh)
                + mm(mm(pinvAh, pinvA), gradh - mm(K, A)))
    K = mm(pinvA, gradh)
    pinvAhK = mm(pinvAh, K)
    return (-la_mH(mm(K, pinvA)) + mm(mm(gradh - mm(A, K), pinvA), pinvAh) + pinvAhK
            - mm(mm(pinvAhK, pinvA), A))


def la_cholesky_solve_backward(grad, B, L, X, upper):
    """cholesky_solve(B, L): gB = cholesky_solve(grad, L); gL from the symmetric common term."""
    if grad is None:
        return None, None
    gB = ember.cholesky_solve(grad, L, upper)
    common = ember.matmul(gB, la_mH(X))
    common = common + la_mH(common)
    gL = -ember.matmul(L, common) if upper else -ember.matmul(common, L)
    return gB, gL


def la_cholesky_inverse_backward(grad, L, upper, inverse):
    common = grad + la_mH(grad)
    common = ember.matmul(inverse, ember.matmul(common, inverse))
    return -ember.matmul(L, common) if upper else -ember.matmul(common, L)


# ---- LU -------------------------------------------------------------------------------------------
def la_lu_backward(gL, gU, P, L, U, pivot):
    """linalg_lu_backward: A = P L U (square, wide and tall cases)."""
    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    st = ember.linalg.solve_triangular
    if m == n:
        gA = None
        if gL is not None:
            gA = ember.matmul(la_mH(L), gL) * _mask(m, m, L, False, -1)
        if gU is not None:
            t = ember.matmul(gU, la_mH(U)) * _mask(m, m, U, True)
            gA = t if gA is None else gA + t
        gA = st(la_mH(U), gA, upper=False, left=False)
        gA = st(la_mH(L), gA, upper=True, left=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2]
        U1 = U[..., :, :k]
        gA = None
        if gL is not None:
            gA = ember.matmul(la_mH(L), gL)
        if gU is not None:
            t = ember.matmul(gU * _mask(k, n, gU, True), la_mH(U))
            gA = -t if gA is None else gA - t
        gA = st(la_mH(U1), gA * _mask(k, k, gA, False, -1), upper=False, left=False)
        if gU is not None:
            gA = ember.cat([gA + gU[..., :, :k] * _mask(k, k, gU, True), gU[..., :, k:]], -1)
        gA = st(la_mH(L), gA, upper=True, left=True, unitriangular=True)
        if gU is None:
            gA = ember.cat([gA, ember.zeros(tuple(gA.shape[:-1]) + (n - k,), dtype=gA.dtype,
                                            device=gA.device)], -1)
    else:  # tall: L = [L1; L2]
        L1 = L[..., :k, :]
        gA = None
        if gU is not None:
            gA = ember.matmul(gU, la_mH(U))
        if gL is not None:
            t = ember.matmul(la_mH(L), gL * _mask(m, k, gL, False, -1))
            gA = -t if gA is None else gA - t
        gA = st(la_mH(L1), gA * _mask(k, k, gA, True), upper=True, left=True, unitriangular=True)
        if gL is not None:
            gA = ember.cat([gA + gL[..., :k, :] * _mask(k, k, gL, False, -1), gL[..., k:, :]], -2)
        gA = st(la_mH(U), gA, upper=False, left=False)
        if gL is None:
            gA = ember.cat([gA, ember.zeros(tuple(gA.shape[:-2]) + (m - k, n), dtype=gA.dtype,
                                            device=gA.device)], -2)
    return ember.matmul(P, gA) if pivot else gA


def la_lu_factor_backward(grad, A, pivot):
    """lu_factor_ex_backward: the packed LU's gradient split into L's and U's."""
    P, L, U = ember.linalg.lu(A, pivot=pivot)
    k = min(A.shape[-2], A.shape[-1])
    return la_lu_backward(grad[..., :, :k], grad[..., :k, :], P, L, U, pivot)


def _lu_unpack(LU, pivots, with_p):
    """(P, L, U) of a square packed LU (P constant, from the pivots)."""
    import numpy as np
    n = LU.shape[-1]
    L = LU * _mask(n, n, LU, False, -1) + _eye(n, LU)
    U = LU * _mask(n, n, LU, True)
    P = None
    if with_p:
        if LU.device.type == "meta":
            P = ember.eye(n, dtype=LU.dtype, device=LU.device)
        else:
            from ember.kernels.cpu.linalg import _perm_from_pivots
            perm = _perm_from_pivots(pivots.detach().cpu().numpy(), n)
            p = np.zeros(tuple(LU.shape[:-2]) + (n, n))
            np.put_along_axis(p, perm[..., None, :], 1, axis=-2)
            P = ember.tensor(p, dtype=LU.dtype, device=LU.device)
    return P, L, U


def la_lu_solve_LU(gX, LU, pivots, X, left, adjoint):
    """linalg_lu_solve_LU: the packed factor's gradient of X = lu_solve(LU, pivots, B)."""
    st = ember.linalg.solve_triangular
    n = LU.shape[-1]
    P, L, U = _lu_unpack(LU, pivots, left == adjoint)
    if left != adjoint:
        gR = st(la_mH(U), -ember.matmul(gX if left else la_mH(gX), la_mH(X) if left else X),
                upper=False)
        gL = st(la_mH(L), ember.matmul(gR, la_mH(U)), upper=True, left=True, unitriangular=True)
        return gL * _mask(n, n, gL, False, -1) + gR * _mask(n, n, gR, True)
    gR = -ember.matmul(ember.matmul(ember.matmul(P.mT, X if left else la_mH(X)),
                                    la_mH(gX) if left else gX), P)
    gR = st(la_mH(L), gR, upper=True, left=False, unitriangular=True)
    gU = st(la_mH(U), ember.matmul(la_mH(L), gR), upper=False, left=False)
    return gR * _mask(n, n, gR, False, -1) + gU * _mask(n, n, gU, True)
