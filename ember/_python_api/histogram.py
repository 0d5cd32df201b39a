"""torch.histogram and torch.histogramdd (ATen's HistogramKernel.cpp), on the host.

Bin edges: given as tensors, or linspace(min, max, bins + 1) in the input's dtype over `range` or
the data's range (an empty range widened by 0.5 each way, an empty input [0, 1]). An element
goes to the last edge at or below it (upper_bound - 1, as ATen's binary search and its
interpolation-plus-local-search agree on), the rightmost bin including its right edge; elements
outside [first edge, last edge] and NaN are ignored. Counts (or weights) accumulate in the
input's dtype; density divides by the total and by each bin's widths.
"""
import collections
import math

import numpy as np

import ember

__all__ = ["histogram", "histogramdd"]

_histogram = collections.namedtuple("histogram", ["hist", "bin_edges"])
_histogram.__module__ = "ember.return_types"
_histogramdd = collections.namedtuple("histogramdd", ["hist", "bin_edges"])
_histogramdd.__module__ = "ember.return_types"
_CPP = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}
_SHORT = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
          "float16": "Half", "bfloat16": "BFloat16"}


def _g(v):
    return f"{v:g}"


def _dname(t):
    return str(t.dtype).split(".")[-1]


def _core(x, d, bins, rng, weight, density):
    """x: (M, D) tensor; bins: D ints or D 1-D tensors. Returns (hist tensor, [edge tensors])."""
    name = _dname(x)
    if name not in ("float32", "float64"):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_SHORT.get(name, name)}'")
    edges = []
    if isinstance(bins[0], ember.Tensor):
        for i, b in enumerate(bins):
            if b.dim() != 1:
                raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                                   f"{b.dim()} dimensions in the bins tensor for dimension {i}")
            if b.numel() <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b.numel() - 1} for "
                                   f"dimension {i}")
            if b.dtype != x.dtype:
                raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same "
                                   f"dtype, but got input with dtype {_CPP[name]} and bins for dimension "
                                   f"{i} with dtype {_CPP.get(_dname(b), _dname(b))}")
            edges.append(b.detach().cpu())
    else:
        for i, n in enumerate(bins):
            if n <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n} for dimension {i}")
        a = x.detach().cpu().numpy()
        if rng is not None:
            rng = [float(v) for v in rng]
            if len(rng) != 2 * d:
                raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should have "
                                   f"{2 * d} elements, but got {len(rng)}")
            lo, hi = rng[0::2], rng[1::2]
        elif a.shape[0] > 0:
            lo = [float(a[:, i].min()) for i in range(d)]
            hi = [float(a[:, i].max()) for i in range(d)]
        else:
            lo, hi = [0.0] * d, [1.0] * d
        for i in range(d):
            if not (math.isfinite(lo[i]) and math.isfinite(hi[i])):
                raise RuntimeError(f"torch.histogramdd: dimension {i}'s range [{_g(lo[i])}, {_g(hi[i])}] "
                                   "is not finite")
            if not lo[i] <= hi[i]:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_g(lo[i])} "
                                   f"max {_g(hi[i])} for dimension {i}")
            if lo[i] == hi[i]:
                lo[i], hi[i] = lo[i] - 0.5, hi[i] + 0.5
            edges.append(ember.linspace(lo[i], hi[i], bins[i] + 1, dtype=x.dtype))
    a = x.detach().cpu().numpy()
    e = [t.numpy() for t in edges]
    keep = np.ones(a.shape[0], bool)
    pos = []
    for i in range(d):
        col = a[:, i]
        with np.errstate(invalid="ignore"):
            keep &= (col >= e[i][0]) & (col <= e[i][-1])
        p = np.searchsorted(e[i], col, side="right") - 1
        p = np.where(p == len(e[i]) - 1, p - 1, p)        # the rightmost bin takes its right edge
        pos.append(p)
    shape = tuple(max(len(t) - 1, 0) for t in e)
    w = np.ones(a.shape[0], a.dtype) if weight is None else \
        weight.detach().cpu().numpy().reshape(-1).astype(a.dtype)
    hist = np.zeros(shape, a.dtype)
    if keep.any() and all(shape):
        idx = tuple(p[keep] for p in pos)
        np.add.at(hist, idx, w[keep])
    h = ember.tensor(hist)
    if density:
        h = h / h.sum()  # (the sum's order is ember's: the last bit can differ from torch's)
        for i in range(d):
            view = [1] * d
            view[i] = shape[i]
            h = h / edges[i].diff().reshape(view)
    return h.to(x.device), [t.to(x.device) for t in edges]


def _check_weight(x, weight, lead):
    if weight is None:
        return
    if tuple(weight.shape) != tuple(lead):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape "
                           "as the input tensor excluding its innermost dimension, but got input with "
                           f"shape {list(x.shape)} and weight with shape {list(weight.shape)}")
    if weight.dtype != x.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                           f"should have the same dtype, but got input({_CPP.get(_dname(x), _dname(x))}), "
                           f"and weight({_CPP.get(_dname(weight), _dname(weight))})")


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):
    """torch.histogram: the histogram of input's elements (flattened) and the bin edges."""
    x = input.reshape(-1, 1)
    if weight is not None:  # ATen flattens both: input to (numel, 1), weight to (numel,)
        weight = weight.reshape(-1)
        _check_weight(x, weight, (x.shape[0],))
    b = [bins] if isinstance(bins, ember.Tensor) else [int(bins)]
    hist, edges = _core(x, 1, b, range, weight, density)
    if out is not None:
        out[0].resize_(hist.shape).copy_(hist)
        out[1].resize_(edges[0].shape).copy_(edges[0])
        return _histogram(out[0], out[1])
    return _histogram(hist, edges[0])


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """torch.histogramdd: input (..., D), the histogram over its last dimension's D coordinates."""
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    d = input.shape[-1]
    if isinstance(bins, int):
        bins = [bins] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of "
                           "the input.")
    _check_weight(input, weight, input.shape[:-1])
    hist, edges = _core(input.reshape(-1, d), d, bins, range, weight, density)
    return _histogramdd(hist, tuple(edges))
