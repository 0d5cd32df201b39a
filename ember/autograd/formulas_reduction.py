"""Backward helpers of the reduction family (FunctionsManual.cpp's reduction, norm, softmax, scan
and selection parts).

Every helper is written with ember operators, so backward graphs are differentiable again. Data-
dependent branches (zeros in prod/cumprod, NaN in max) read the data as PyTorch's CPU path does;
on the meta device they take PyTorch's composite-compliant path instead.
"""
import math

import ember
from ember.autograd.formulas import restore_reduced_dims, sum_backward
from ember.core import dtype as _dt

__all__ = [
    "red_mean_backward", "red_nansum_backward", "red_nanmean_backward", "red_prod_backward",
    "red_prod_dim_backward", "red_evenly_distribute_backward", "red_value_selecting_backward",
    "red_amaxmin_backward", "red_aminmax_backward", "red_var_backward", "red_std_backward",
    "red_var_mean_backward", "red_std_mean_backward", "red_norm_backward",
    "red_logsumexp_backward", "red_softmax_backward", "red_log_softmax_backward",
    "red_cumsum_backward", "red_cumprod_backward", "red_cummaxmin_backward",
    "red_logcumsumexp_backward", "red_msort_backward",
]


def _is_meta(t):
    return t._device.type == "meta"


def _wrap(d, n):
    n = max(n, 1)
    return d + n if d < 0 else d


def _dims_list(dims, ndim):
    """Wrapped, sorted reduced dims; None/empty means every dim."""
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    if len(dims) == 0:
        return list(range(ndim))
    return sorted(_wrap(d, ndim) for d in dims)


def _unsqueeze_multiple(t, dims, ndim):
    """unsqueeze_multiple: reinsert the reduced `dims` (a list, possibly empty) as size-1 dims."""
    if isinstance(dims, int):
        dims = (dims,)
    for d in sorted(_wrap(d, ndim) for d in dims):
        t = t.unsqueeze(d)
    return t


def _safe_size(sizes, dims):
    n = 1
    nd = len(sizes)
    if isinstance(dims, int):
        dims = (dims,)
    for d in dims:
        n *= sizes[_wrap(d, nd)] if nd else 1
    return n


def _to(t, dtype):
    return t if t._dtype is dtype else t.to(dtype)


def _is_complex(t):
    return t._dtype.category == _dt.COMPLEX


def _conj(t):
    return t.conj() if _is_complex(t) else t


# ---- sums and means -----------------------------------------------------------------------------
def red_mean_backward(grad, sizes, dims, numel, keepdim):
    """mean_backward: the gradient spread evenly over the reduced elements."""
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        n = numel
    else:
        n = _safe_size(sizes, dims)
    return sum_backward(grad, sizes, dims, keepdim) / n


def red_nansum_backward(grad, self, dims, keepdim):
    grad = _to(grad, self._dtype)
    return sum_backward(grad, tuple(self._shape), dims, keepdim) * self.isnan().logical_not()


def red_nanmean_backward(grad, self, dims, keepdim):
    """nanmean is nansum(self) / count (PyTorch's composite): the gradient of both steps."""
    count = self.isnan().logical_not().sum(dims, keepdim)
    return red_nansum_backward(grad / count, self, dims, keepdim)


# ---- products -----------------------------------------------------------------------------------
def _prod_safe_zeros_backward(grad, inp, dim):
    if inp.numel() == 0:
        return grad.expand(tuple(inp._shape))
    n = inp._shape[dim]
    ones_size = list(inp._shape)
    ones_size[dim] = 1
    ones = ember.ones(tuple(ones_size), dtype=grad._dtype, device=grad._device)
    exclusive_normal = ember.cat([ones, inp.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    narrow_reverse = inp.narrow(dim, 1, n - 1).flip(dim)
    exclusive_reverse = ember.cat([ones, narrow_reverse], dim).cumprod(dim).flip(dim)
    return grad * _conj(exclusive_normal * exclusive_reverse)


def red_prod_backward(grad, self, result):
    inp = _to(self, grad._dtype)
    if inp.dim() == 0:
        return grad
    if not _is_meta(inp):
        nz = int((inp == 0).sum())
        if nz == 0:
            return grad * _conj(result / inp)
        if nz > 1 and not ember.is_grad_enabled():
            return ember.zeros(tuple(inp._shape), dtype=inp._dtype, device=inp._device)
    return _prod_safe_zeros_backward(grad, inp.reshape(-1), 0).reshape(tuple(inp._shape))


def red_prod_dim_backward(grad, self, result, dim, keepdim):
    inp = _to(self, grad._dtype)
    if inp.dim() == 0:
        return grad
    dim = _wrap(dim, inp.dim())
    if not keepdim:
        grad = grad.unsqueeze(dim)
        result = result.unsqueeze(dim)
    if not _is_meta(inp) and not bool((inp == 0).any()):
        return grad * _conj(result / inp)
    return _prod_safe_zeros_backward(grad, inp, dim)


# ---- selections: max/min/median/sort/topk/kthvalue/mode ----------------------------------------
def red_evenly_distribute_backward(grad, self, value):
    """The gradient of a full max/min/median, split evenly among the elements equal to it."""
    if _is_meta(self):
        mask = (self == value).logical_or(self.isnan().logical_and(value.isnan()))
        return mask * (grad / mask.sum())
    mask = self.isnan() if bool(value.isnan()) else self == value
    z = ember.zeros(tuple(self._shape), dtype=self._dtype, device=self._device)
    return z.masked_fill(mask, grad / mask.sum())


def red_value_selecting_backward(grad, dim, indices, sizes, keepdim):
    """value_selecting_reduction_backward: scatter the values' gradient to their indices."""
    grad_in = ember.zeros(tuple(sizes), dtype=grad._dtype, device=grad._device)
    if keepdim or len(sizes) == 0:
        return grad_in.scatter(dim, indices, grad)
    return grad_in.scatter(dim, indices.unsqueeze(dim), grad.unsqueeze(dim))


def red_msort_backward(grad, self):
    """msort is sort(self, 0)'s values (PyTorch's composite): the same sort gives the indices."""
    if self.dim() == 0:
        return grad
    indices = ember.sort(self.detach(), 0)[1]
    return red_value_selecting_backward(grad, 0, indices, tuple(self._shape), True)


def _scale_grad_by_count(grad, mask, dims):
    return (grad / mask.sum(dims, True)) * mask


def red_amaxmin_backward(grad, self, result, dim, keepdim):
    """amax/amin: the gradient split evenly among the elements equal to the extremum."""
    nd = self.dim()
    g = restore_reduced_dims(grad, dim, keepdim, nd)
    r = restore_reduced_dims(result, dim, keepdim, nd)
    return _scale_grad_by_count(g, r == self, dim)


def red_aminmax_backward(grad_min, grad_max, self, mn, mx, dim, keepdim):
    dims = () if dim is None else (dim,)
    out = None
    for g, v in ((grad_min, mn), (grad_max, mx)):
        if g is not None:
            t = red_amaxmin_backward(g, self, v, dims, keepdim)
            out = t if out is None else out + t
    return out


# ---- variance and standard deviation ------------------------------------------------------------
def _correction(correction):
    return 1.0 if correction is None else float(correction)


def red_var_backward(grad, self, dim, correction, keepdim):
    c = _correction(correction)
    nd = self.dim()
    if nd == 0 or dim is None:
        dof = self.numel() - c
        if dof <= 0:
            # 2 / 0 is infinite: NaN where self equals its mean (inf * 0), infinite elsewhere
            return grad * ember.where(self == self.mean(), math.nan, math.inf)
        return (2.0 / dof) * grad * (self - self.mean())
    if not keepdim and nd > 1:
        grad = _unsqueeze_multiple(grad, dim, nd)
    den = _safe_size(tuple(self._shape), dim) - c
    f = 2.0 / den if den != 0 else math.inf
    return f * grad * (self - self.mean(dim, True))


def red_std_backward(result, grad, self, dim, correction, keepdim):
    grad_var = (grad / (result * 2)).masked_fill(result == 0, 0)
    return red_var_backward(grad_var, self, dim, correction, keepdim)


def red_var_mean_backward(gvar, gmean, self, dim, correction, keepdim):
    out = None
    if gvar is not None:
        out = red_var_backward(gvar, self, dim, correction, keepdim)
    if gmean is not None:
        aux = red_mean_backward(gmean, tuple(self._shape), () if dim is None else dim,
                                self.numel(), keepdim)
        out = aux if out is None else out + aux
    return out


def red_std_mean_backward(gstd, gmean, self, std, dim, correction, keepdim):
    out = None
    if gstd is not None:
        out = red_std_backward(std, gstd, self, dim, correction, keepdim)
    if gmean is not None:
        aux = red_mean_backward(gmean, tuple(self._shape), () if dim is None else dim,
                                self.numel(), keepdim)
        out = aux if out is None else out + aux
    return out


# ---- norms --------------------------------------------------------------------------------------
def red_norm_backward(grad, self, p, norm, dim=(), keepdim=False, to_grad_dtype=False):
    """norm_backward (and linalg_vector_norm_backward); subgradient 0 where the norm is 0."""
    if to_grad_dtype:
        self = _to(self, grad._dtype)
    if dim is None:
        dim = ()
    nd = self.dim()
    p = 2.0 if p is None else float(p)
    if not keepdim and nd != 0:
        grad = _unsqueeze_multiple(grad, dim, nd)
        norm = _unsqueeze_multiple(norm, dim, nd)
    if p == 0.0:
        return None
    if p == 1.0:
        return self.sgn() * grad
    if p == 2.0:
        return grad * (self / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):
        self_abs = self.abs()
        mask = self_abs.eq(norm).logical_or(self_abs.isnan())
        return self.sgn() * ((grad / mask.sum(dim, True)) * mask)
    if p < 1.0:
        self_scaled = self.sgn() * self.abs().pow(p - 1).masked_fill(self == 0, 0)
        return self_scaled * grad * norm.pow(1 - p)
    if p < 2.0:
        self_scaled = self.sgn() * self.abs().pow(p - 1)
    else:
        self_scaled = self * self.abs().pow(p - 2)
    scale_v = (grad / norm.pow(p - 1)).masked_fill(norm == 0, 0)
    return self_scaled * scale_v


def red_logsumexp_backward(grad, self, result, dim, keepdim):
    nd = self.dim()
    if not keepdim and nd != 0:
        grad = _unsqueeze_multiple(grad, dim, nd)
        result = _unsqueeze_multiple(result, dim, nd)
    return grad * _conj((self - result).exp())


# ---- softmax ------------------------------------------------------------------------------------
def red_softmax_backward(grad, output, dim):
    """_softmax_backward_data: output * (grad - sum(grad * output))."""
    return output * (grad - (grad * output).sum(dim, True))


def red_log_softmax_backward(grad, output, dim):
    """_log_softmax_backward_data: grad - exp(output) * sum(grad)."""
    return grad - output.exp() * grad.sum(dim, True)


# ---- scans --------------------------------------------------------------------------------------
def _reversed_cumsum(w, dim):
    return w.flip(dim).cumsum(dim).flip(dim)


def red_cumsum_backward(grad, dim, self_dtype):
    grad = _to(grad, self_dtype)
    if grad.numel() <= 1 or grad._shape[_wrap(dim, grad.dim())] == 1:
        return grad
    return _reversed_cumsum(grad, dim)


def red_cumprod_backward(grad, self, dim, result):
    grad = _to(grad, self._dtype)
    if self.numel() <= 1:
        return grad
    dim = _wrap(dim, self.dim())
    n = self._shape[dim]
    if n == 1:
        return grad
    inp = _conj(self)
    out = _conj(result)
    if not _is_meta(self) and not bool((self == 0).any()):
        return _reversed_cumsum(out * grad, dim).div(inp)
    # zeros in the input: the O(n^2) double-differentiable form of PyTorch's cumprod_backward
    ones_size = list(self._shape)
    ones_size[dim] = 1
    ones = ember.ones(tuple(ones_size), dtype=grad._dtype, device=grad._device)
    slices = []
    for k in range(n):
        if k == 0:
            omitted = ember.cat([ones, inp.narrow(dim, 1, n - 1).cumprod(dim)], dim)
        elif k == n - 1:
            omitted = inp.narrow(dim, 0, k).prod(dim, True)
        else:
            until_k = inp.narrow(dim, 0, k).prod(dim, True)
            from_k1 = inp.narrow(dim, k + 1, n - k - 1).cumprod(dim)
            omitted = ember.cat([until_k, until_k.expand(tuple(from_k1._shape)) * from_k1], dim)
        slices.append((grad.narrow(dim, k, n - k) * omitted).sum(dim, True))
    return ember.cat(slices, dim)


def red_cummaxmin_backward(grad, self, indices, dim):
    if self.numel() == 0:
        return ember.zeros(tuple(self._shape), dtype=grad._dtype, device=grad._device)
    z = ember.zeros(tuple(self._shape), dtype=grad._dtype, device=grad._device)
    return z.scatter_add(dim, indices, grad)


def red_logcumsumexp_backward(grad, self, result, dim):
    if grad.dim() == 0 or grad.numel() == 0:
        return grad

    def rev_lcse(x):
        return x.flip(dim).logcumsumexp(dim).flip(dim)

    if not _is_complex(grad):
        grad_min = ember.tensor(ember.finfo(grad._dtype).min, dtype=grad._dtype, device=grad._device)
        log_abs_grad = grad.abs().log()
        log_grad_positive = ember.where(grad > 0, log_abs_grad, grad_min)
        log_grad_negative = ember.where(grad < 0, log_abs_grad, grad_min)
        output_pos = (rev_lcse(log_grad_positive - result) + self).exp()
        output_neg = (rev_lcse(log_grad_negative - result) + self).exp()
        return output_pos - output_neg
    log_grad = grad.conj().log()
    return (rev_lcse(log_grad - result.conj()) + self.conj()).exp().conj()
