"""Backward helpers of the special functions (FunctionsManual.cpp's mvlgamma / i1 / xlogy parts).

Written with ember operators only, so the gradients are themselves differentiable.
"""
import math

import ember

__all__ = ["sp_mvlgamma_backward", "sp_i1_backward", "sp_xlog_self_backward", "SP_SQRT_2PI", "SP_1_SQRT_2PI"]

SP_SQRT_2PI = math.sqrt(2 * math.pi)
SP_1_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def sp_mvlgamma_backward(grad, self, p):
    """sum_j digamma(self - j / 2), j < p: ATen's arange(-p/2 + 1/2, 1/2, 1/2) added to self."""
    args = ember.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=self.dtype) + self.unsqueeze(-1)
    return grad * args.digamma().sum(-1)


def sp_i1_backward(grad, self, result, scaled):
    """i1' = i0 - i1 / x (i1e' = i0e - i1e (sgn(x) + 1 / x)); 1/2 at |x| <= eps, where the quotient fails."""
    eps = ember.finfo(self.dtype).eps
    not_tiny = self.abs() > eps
    safe = ember.where(not_tiny, self, eps)
    if scaled:
        gx = ember.special.i0e(safe) - result * (safe.sgn() + safe.reciprocal())
    else:
        gx = safe.i0() - result * safe.reciprocal()
    return grad * ember.where(not_tiny, gx, 0.5)


def sp_xlog_self_backward(fn, grad, self, other, edge):
    """fn(grad, other) with zeros where self == 0 and other <= edge (log(other) is -inf or nan there)."""
    r = fn(grad, other)
    if isinstance(other, ember.Tensor):
        return r.masked_fill((self == 0) & (other <= edge), 0.0)
    if other > edge:
        return r
    return r.masked_fill(self == 0, 0.0)
