"""torch.cdist (torch/functional.py) and torch.pdist: p-norm distances between rows, composed of
ember ops, with the gradients of ATen's _cdist_backward / _pdist_backward (zero where a distance
is zero; for p=inf every tied coordinate gets the full gradient)."""
import math

import numpy as np

import ember
from ember.kernels.meta.pointwise import broadcast_shapes

__all__ = ["cdist", "pdist"]

_COMPUTE_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                  "donot_use_mm_for_euclid_dist": 2}


def _row_norm(diff, p, op):
    """p-norm of `diff` over its last dim, as ATen's `op` ("cdist"/"pdist") kernel computes it."""
    if diff.shape[-1] == 0:
        return diff.abs().sum(-1)  # zeros, still in the graph
    if diff.dtype in (ember.float16, ember.bfloat16):
        raise NotImplementedError(f'"{op}" not implemented for \'{diff.dtype._short}\'')
    if p == 0:
        # the number of nonzero coordinates (ATen's min(ceil(|diff|), 1): NaN stays NaN); ceil's
        # zero gradient keeps it in the graph
        return diff.abs().ceil().clamp(max=1).sum(-1)
    if math.isinf(p):
        # value amax(|diff|); gradient sign(diff) on every coordinate equal to it (vector_norm would
        # share it among ties): add a zero-valued term whose gradient is 1 on the ties
        a = diff.abs()
        a_det = a.detach()
        dist = a_det.amax(-1, keepdim=True)
        tie = (a_det == dist) & a_det.isfinite()
        return dist.squeeze(-1) + ember.where(tie, a - a_det, 0).sum(-1)
    # linalg.vector_norm's backward equals ATen's distance backward for finite p (0 at zero distance)
    return ember.linalg.vector_norm(diff, p, -1)


def _euclidean_dist(x1, x2):
    """ATen's _euclidean_dist: sqrt(|x1|^2 + |x2|^2 - 2 x1 x2^T) through one matmul; its gradient
    is zero where the clamped distance is zero."""
    x1_norm = x1.pow(2).sum(-1, keepdim=True)
    x2_norm = x2.pow(2).sum(-1, keepdim=True)
    x1_ = ember.cat([x1.mul(-2), x1_norm, ember.ones_like(x1_norm)], -1)
    x2_ = ember.cat([x2, ember.ones_like(x2_norm), x2_norm], -1)
    sq = x1_.matmul(x2_.mT)
    pos = sq > 0
    # sqrt only where positive, so that no inf derivative reaches the masked entries
    return ember.where(pos, ember.where(pos, sq, 1).sqrt(), 0)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Batched p-norm distance between each row of x1 (*, P, M) and each row of x2 (*, R, M)."""
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _COMPUTE_MODES[compute_mode]
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {x.dtype._short}")
    if not p >= 0:  # NaN too
        raise RuntimeError("cdist only supports non-negative p values")
    r1, r2, c = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    batch = broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    x1 = x1.expand(*batch, r1, c)
    x2 = x2.expand(*batch, r2, c)
    use_mm = p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25)))
    if use_mm and x1.numel() and x2.numel():
        return _euclidean_dist(x1, x2)
    if x1.dtype != x2.dtype:
        if x1.numel() and x2.numel():
            raise RuntimeError(f"expected scalar type {x1.dtype._short} but found {x2.dtype._short}")
        x2 = x2.to(x1.dtype)  # an empty result has x1's dtype
    return _row_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, "cdist")


def pdist(input, p=2):
    """p-norm distances between the rows of a 2-D input, in the order of the upper triangle."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    i = ember.tensor(i, dtype=ember.long, device=input.device)
    j = ember.tensor(j, dtype=ember.long, device=input.device)
    return _row_norm(input.index_select(0, i) - input.index_select(0, j), p, "pdist")
