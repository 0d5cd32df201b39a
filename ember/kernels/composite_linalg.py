"""Linear-algebra operators written with other ember operators (CompositeImplicitAutograd), as
ATen writes them: they run on every backend (CPU, Meta, ...)."""
import ember
from ember._generated.ops import RETURN_TYPES
from ember.kernels.meta.linalg import fmt_num, numel
from ember.kernels.meta.pointwise import broadcast_shapes


def diagonal(A, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: Tensor.diagonal with matrix-friendly defaults (a view)."""
    return ember.diagonal(A, offset, dim1, dim2)


def tensorinv(self, ind=2):
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(self.shape)
    end, start = shape[:ind], shape[ind:]
    p_end, p_start = numel(end), numel(start)
    if p_start != p_end:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {p_start} != {p_end}")
    return ember.linalg.inv(self.reshape(p_end, p_start)).reshape(start + end)


def tensorsolve(self, other, dims=None):
    nd = self.dim()
    a = self
    if dims is not None:
        dims = [d % nd if nd else d for d in dims]
        rest = [d for d in range(nd) if d not in dims]
        a = a.permute(rest + list(dims))
    shape = tuple(a.shape)
    result_shape = shape[other.dim():]
    rp, op = numel(result_shape), numel(other.shape)
    if rp != op:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {rp} != {op}")
    return ember.linalg.solve(a.reshape(rp, rp), other.reshape(-1)).reshape(result_shape)


_COND_ORDS = (1.0, -1.0, float("inf"), -float("inf"))


def _check_ord(p):
    if isinstance(p, str):
        ok = p in ("fro", "nuc")
    else:
        ok = abs(float(p)) in (1.0, 2.0, float("inf"))
    if not ok:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p if isinstance(p, str) else fmt_num(p)}")


def cond(self, p=None):
    """torch.linalg.cond: the condition number of A for the norm p (ATen's linalg_cond)."""
    from ember.kernels.meta.linalg import square_check
    if isinstance(p, str):
        square_check(tuple(self.shape), f"linalg.cond(ord={p})")
        _check_ord(p)
        if self.numel() == 0:
            return ember.zeros(tuple(self.shape[:-2]), dtype=self.dtype.to_real(),
                               device=self.device)
        if p == "nuc":
            sv = ember.linalg.svdvals(self)
            return sv.sum(-1) * sv.reciprocal().sum(-1)
        return _cond_inv(self, p)
    if self.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    p = 2 if p is None else p
    _check_ord(p)
    if self.numel() == 0:
        return ember.zeros(tuple(self.shape[:-2]), dtype=self.dtype.to_real(), device=self.device)
    if abs(float(p)) == 2.0:
        sv = ember.linalg.svdvals(self)  # descending
        s_max, s_min = sv.narrow(-1, 0, 1), sv.narrow(-1, -1, 1)
        r = s_min / s_max if float(p) < 0 else s_max / s_min
        return r.squeeze(-1)
    # std::to_string of the order: a double prints as %f
    shown = ("%f" % p) if isinstance(p, float) else str(p)
    square_check(tuple(self.shape), f"linalg.cond(ord={shown})")
    return _cond_inv(self, p)


def _cond_inv(self, p):
    inv, info = ember.linalg.inv_ex(self)
    inv = inv.masked_fill((info > 0).unsqueeze(-1).unsqueeze(-1), float("inf"))
    r = ember.linalg.matrix_norm(self, p) * ember.linalg.matrix_norm(inv, p)
    # 0 * inf: infinite, for NumPy compatibility
    return r.nan_to_num(float("inf"), float("inf"), -float("inf"))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _real_dtype(dtype):
    return {ember.complex64: ember.float32, ember.complex128: ember.float64}.get(dtype, dtype)


def lstsq(A, B, rcond=None, driver=None):
    """torch.linalg.lstsq: least-squares solution of A X = B with LAPACK's driver semantics (CPU).

    Every driver's solution is the (rank-truncated) minimum-norm one, pinv(A) @ B, which is also what
    PyTorch differentiates; `rank` and `singular_values` come from A's singular values."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.dim() < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype._short} and other's dtype {B.dtype._short}")
    dim_diff = A.dim() - B.dim()
    if not 0 <= dim_diff <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() "
                           "and (input.dim() - other.dim()) <= 1")
    vector_case = B.dim() == 1 or (dim_diff == 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    B2 = B.unsqueeze(-1) if vector_case else B
    m, n = A.shape[-2], A.shape[-1]
    if B2.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    # PyTorch takes other's batch dims as other.unsqueeze(-1)'s whenever other has one dim less
    batch = broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-1] if dim_diff else B.shape[:-2]))
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dtype not in (ember.float32, ember.float64, ember.complex64, ember.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")

    real = _real_dtype(A.dtype)
    eps = ember.finfo(real).eps
    if rcond is None:
        rcond = eps * max(m, n)
    elif rcond < 0:
        # gelsd/gelss read a negative rcond as machine precision; gelsy keeps every nonzero pivot
        rcond = eps if driver in ("gelsd", "gelss") else 0.0
    if driver == "gels":
        rcond = 0.0  # gels assumes A has full rank
    A2 = A.expand(*batch, m, n)
    B2 = B2.expand(*batch, m, B2.shape[-1])
    solution = ember.linalg.pinv(A2, atol=0.0, rtol=rcond).matmul(B2)

    empty = ember.empty(0, dtype=real, device=A.device)
    with ember.no_grad():
        if driver == "gels":
            rank = ember.empty(0, dtype=ember.int64, device=A.device)
            full_rank = True
        else:
            svals = ember.linalg.svdvals(A.detach())
            smax = svals.amax(-1, keepdim=True) if min(m, n) > 0 else svals
            rank = (svals > smax * rcond).sum(-1)
            full_rank = bool((rank == n).all())
        singular_values = svals if driver in ("gelsd", "gelss") else empty.clone()
    # residuals are differentiable in PyTorch (linalg_lstsq's output_differentiability [True, True, False,
    # False]): the squared residual norms, or an empty tensor that requires grad with the solution
    if m > n and driver != "gelsy" and full_rank:
        residuals = (A2.matmul(solution) - B2).abs().square().sum(-2)
    elif solution.requires_grad:
        residuals = ember.real(solution.reshape(-1)[:0]).clone() if solution.is_complex() else \
            solution.reshape(-1)[:0].clone()
    else:
        residuals = empty
    if vector_case:
        solution = solution.squeeze(-1)
    return RETURN_TYPES["linalg_lstsq"](solution, residuals, rank, singular_values)


def vander(x, N=None):
    """torch.linalg.vander: Vandermonde matrix with increasing powers x**0, ..., x**(N-1)."""
    if not (x.dtype.is_complex or x.dtype in (ember.float32, ember.float64)
            or (not x.dtype.is_floating_point and x.dtype != ember.bool)):
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, "
                           f"but got {x.dtype._short}")
    x_ = x.unsqueeze(-1) if x.dim() == 0 else x
    n = x_.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = ember.cumprod(x_.unsqueeze(-1).expand(*x_.shape, n - 1), -1)
    ones = ember.ones(*x_.shape, 1, dtype=powers.dtype, device=x.device)
    return ember.cat([ones, powers], -1)


def householder_product(A, tau):
    """torch.linalg.householder_product (and torch.orgqr, its alias): the first n columns of H_1 ... H_k with
    H_i = I - tau_i v_i v_i^H, v_i being column i of A below the diagonal with an implicit 1 on it."""
    name = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() == 0 or n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if A.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.dim()} and input.ndim is equal to {A.dim()}")
    if A.dim() > 2 and tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], "
                           f"but got [{', '.join(str(s) for s in tau.shape[:-1])}]")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype._short} does not match input dtype {A.dtype._short}")
    if A.dtype not in (ember.float32, ember.float64, ember.complex64, ember.complex128):
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{A.dtype._short}'")

    k = tau.shape[-1]
    eye = ember.eye(m, n, dtype=A.dtype, device=A.device)
    V = ember.tril(A, -1) + eye  # reflector vectors, unit diagonal
    # apply the reflectors right to left to the first n columns of the identity: only m x n work
    Q = eye.expand(*A.shape[:-2], m, n)
    if k == 0 and (A.requires_grad or tau.requires_grad):
        # the empty product of reflectors: still a function of A and tau (PyTorch's result requires grad,
        # with zero gradients), written as the vanishing sum of k = 0 reflector terms
        Q = Q - V[..., :, :0].matmul(tau[..., :0].unsqueeze(-1).expand(*tau.shape[:-1], 0, n))
    for i in range(k - 1, -1, -1):
        v = V[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        Q = Q - (t * v).matmul(v.conj().transpose(-2, -1).matmul(Q))
    return Q
