"""Helpers of the forward-mode formulas (PyTorch's FunctionsManual.cpp `*_jvp` functions), written
with ember ops, and the table entry type the generated table (ember/_generated/forward_ad.py) builds."""
import ember

__all__ = ["fw_gather_keepdim", "fw_evenly_read", "fw_logsumexp", "fw_softmax", "fw_log_softmax",
           "fw_div_mode", "fw_loss_reduction", "fw_convolution", "fw_logcumsumexp", "fw_cholesky",
           "fw_cholesky_solve", "fw_cholesky_inverse", "fw_eigh", "fw_clamp", "fw_sum", "fw_amaxamin",
           "fw_layer_norm", "fw_var", "fw_std", "fw_mean", "fw_solve"]

LINEAR = "auto_linear"        # the op applied to the tangents
LINEARIZED = "linearized"     # the transpose of the backward formula


class Formula:
    """One op's forward derivative: `pos` the positions of its differentiable inputs, `fn` the formula
    (or LINEAR / LINEARIZED), `lst` the position of a differentiable Tensor[] input, `outs` which
    outputs have a tangent (None: every Tensor output)."""
    __slots__ = ("pos", "fn", "lst", "outs")

    def __init__(self, pos, fn, lst, outs):
        self.pos, self.fn, self.lst, self.outs = pos, fn, lst, outs


def formula(pos, fn, lst=None, outs=None):
    return Formula(pos, fn, lst, outs)


def fw_gather_keepdim(t, dim, indices, keepdim):
    """gather_with_keepdimed_indices: the tangent of a value-selecting reduction."""
    if t.dim() == 0:
        return t.clone()
    if keepdim or indices.dim() == t.dim():
        return t.gather(dim, indices)
    return t.gather(dim, indices.unsqueeze(dim)).squeeze(dim)


def fw_evenly_read(t, x, result):
    """evenly_read_jvp: max()/min()/median() spread their tangent over the tied elements."""
    mask = x == result
    return (t * mask).sum() / mask.sum()


def fw_logsumexp(x, t, dim, keepdim):
    """logsumexp_jvp."""
    if x.numel() > 0:
        e = (x - ember.amax(x, dim, True)).exp()
    else:
        e = x.exp()
    return (e * t).sum(dim, keepdim) / e.sum(dim, keepdim)


def _dim_of(dim, x):
    return dim if x.dim() > 0 else 0


def fw_softmax(x, t, dim, dtype, result):
    if dtype is not None:
        x, t = x.to(dtype), t.to(dtype)
    if x.dim() == 0:
        return t * 0
    return result * (t - fw_logsumexp(x, t, (dim,), True))


def fw_log_softmax(x, t, dim, dtype):
    if dtype is not None:
        x, t = x.to(dtype), t.to(dtype)
    if x.dim() == 0:
        return t * 0
    return t - fw_logsumexp(x, t, (dim,), True)


def fw_div_mode(x, y, xt, yt, rounding_mode, result):
    if rounding_mode is not None:
        return ember.zeros_like(result)
    return xt / y - yt * (x / y) / y


def fw_loss_reduction(t, reduction):
    """apply_loss_reduction: 0 none, 1 mean, 2 sum."""
    if reduction == 1:
        return t.mean()
    if reduction == 2:
        return t.sum()
    return t


def fw_convolution(x, xt, w, wt, bt, stride, padding, dilation, transposed, output_padding, groups):
    """convolution_jvp: linear in each of input, weight and bias."""
    conv = ember._generated.ops.convolution.call
    out = conv(xt, w, None, stride, padding, dilation, transposed, output_padding, groups)
    out = out + conv(x, wt, None, stride, padding, dilation, transposed, output_padding, groups)
    if bt is not None:
        out = out + bt.reshape((1, -1) + (1,) * (out.dim() - 2))
    return out


def fw_logcumsumexp(x, t, dim):
    """logcumsumexp_jvp."""
    e = (x - ember.amax(x, dim, True)).exp() if x.numel() > 0 else x.exp()
    return (e * t).cumsum(dim) / e.cumsum(dim)


def fw_cholesky(dA, L, upper):
    """cholesky_jvp: dL = L phi(L^-1 dA L^-H), phi taking the lower triangle with half the diagonal."""
    L_ = L.mH if upper else L
    dL = ember.linalg.solve_triangular(L_, dA, upper=False, left=True)
    dL = ember.linalg.solve_triangular(L_.mH, dL, upper=True, left=False)
    dL = dL.tril() - ember.diag_embed(dL.diagonal(0, -2, -1) * 0.5)
    dL = L_.matmul(dL)
    return dL.mH if upper else dL


def fw_cholesky_solve(X, U, dU, dB, upper):
    """cholesky_solve_jvp."""
    dK = dU.mH.matmul(U) if upper else dU.matmul(U.mH)
    dA = dK + dK.mH
    return ember.cholesky_solve(dB - dA.matmul(X), U, upper)


def fw_cholesky_inverse(F, dF, X, upper):
    """cholesky_inverse_jvp, as PyTorch computes it (-X dC X C, symmetrised)."""
    CF = F if upper else F.mH
    dCF = dF.mH if upper else dF
    part = -X.matmul(dCF).matmul(X).matmul(CF)
    return part + part.mH


def fw_eigh(dA, L, V):
    """linalg_eig_jvp for a Hermitian input: (dL, dV)."""
    dP = V.mH.matmul(dA).matmul(V)
    dL = dP.diagonal(0, -2, -1)
    if dA.is_complex():
        dL = dL.real
    gap = L.unsqueeze(-2) - L.unsqueeze(-1)
    gap = gap + ember.diag_embed(ember.ones_like(L))
    dV = dP / gap
    dV = dV - ember.diag_embed(dV.diagonal(0, -2, -1))
    return dL, V.matmul(dV)


def fw_clamp(x, xt, lo, lot, hi, hit):
    """clamp_jvp: the tangent of whichever of self, min, max the result took."""
    if lo is not None and hi is not None:
        return ember.where(lo > hi, hit, ember.where(x < lo, lot, ember.where(x > hi, hit, xt)))
    if lo is not None:
        return ember.where(x > lo, xt, lot)
    if hi is not None:
        return ember.where(x < hi, xt, hit)
    return xt


def fw_sum(t, dim, keepdim, dtype):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dim = tuple(range(t.dim()))
    return t.sum(dim, keepdim, dtype=dtype)


def fw_amaxamin(x, xt, result, dim, keepdim):
    """amaxamin_jvp: the tangent spread evenly over the elements equal to the result."""
    dims = tuple(range(x.dim())) if not dim else tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    r = result
    if not keepdim and x.dim() > 0:
        for d in sorted(dd % x.dim() for dd in dims):
            r = r.unsqueeze(d)
    mask = x == r
    return ember.where(mask, xt, 0.0).sum(dims, keepdim) / mask.sum(dims, keepdim)


def fw_layer_norm(x, xt, w, wt, bt, mean, rstd, normalized_shape):
    """layer_norm_jvp."""
    n = len(normalized_shape)
    lead = x.dim() - n
    dims = tuple(range(lead, x.dim()))
    view = tuple(x.shape[:lead]) + (1,) * n
    affine = (1,) * lead + tuple(x.shape[lead:])
    mean_p, rstd_p = mean.reshape(view), rstd.reshape(view)
    centred_t = xt - xt.mean(dims, True)
    centred_p = x - mean_p
    rstd_t = -rstd_p.pow(3) * (centred_t * centred_p).mean(dims, True)
    out = centred_t * rstd_p + centred_p * rstd_t
    if w is not None:
        out = out * w.reshape(affine)
    if wt is not None:
        out = out + wt.reshape(affine) * centred_p * rstd_p
    if bt is not None:
        out = out + bt.reshape(affine)
    return out


def _dims(dim, x):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(x.dim()))
    return tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)


def fw_var(x, xt, dim, correction, keepdim):
    """var_backward(self_t, ...).sum(dim, keepdim): 2 / (N - correction) * sum(t * (x - mean))."""
    dims = _dims(dim, x)
    n = 1
    for d in dims:
        n *= x.shape[d] if x.dim() else 1
    denom = n - (1 if correction is None else correction)
    factor = 2.0 / denom if denom != 0 else float("inf")
    centred = x - x.mean(dims, True) if x.dim() else x - x
    return (xt * centred).sum(dims if x.dim() else (), keepdim) * factor


def fw_std(var_t, std):
    """std's tangent from var's: var_t / (2 std), 0 where std is 0."""
    return (var_t / (2.0 * std)).masked_fill(std == 0, 0)


def fw_mean(t, dim, keepdim):
    return t.mean(_dims(dim, t) if t.dim() else (), keepdim)


def fw_solve(A, At, Bt, X, left):
    """linalg_solve_jvp: dX = A^-1 (dB - dA X) (left), (dB - X dA) A^-1 (right)."""
    vector = left and (X.dim() == 1 or (X.dim() == A.dim() - 1 and tuple(X.shape) == tuple(A.shape[:-1])))
    if vector:
        rhs = Bt - ember.matmul(At, X.unsqueeze(-1)).squeeze(-1)
    elif left:
        rhs = Bt - ember.matmul(At, X)
    else:
        rhs = Bt - ember.matmul(X, At)
    return ember.linalg.solve(A, rhs, left=left)
