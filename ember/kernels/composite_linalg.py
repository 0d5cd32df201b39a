"""Linear-algebra operators written with other ember operators (CompositeImplicitAutograd), as
ATen writes them: they run on every backend (CPU, Meta, ...)."""
import ember
from ember.kernels.meta.linalg import fmt_num, numel


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
