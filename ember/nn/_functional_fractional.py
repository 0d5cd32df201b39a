"""Fractional max pooling (Graham, 2014): fractional_max_pool2d / 3d as ATen computes them
(FractionalMaxPool2d.cpp, FractionalMaxPool3d.cpp).

Each (batch, plane) has one random sample per spatial dim, u in [0, 1) (drawn with ember.rand,
so after the same seed the windows are torch's; 2d takes sample 0 for the width, 3d for the
time); the window starts along a dim of input size n,
output size m and pool size k are int((i + u) * a) - int(u * a) for i < m - 1 with
a = (n - k) / (m - 1) in the input's dtype, and n - k for the last. Each output is its window's
maximum (the last NaN wins, as ATen's `val > max || isnan(val)`), with the flat index of its
position in the plane. The backward adds each output gradient at its index.
"""
import numpy as np

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

_DIMS = {2: ("height", "width"), 3: ("time", "height", "width")}


def _tuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


def _intervals(u, n, m, k, dt):
    """Window starts (B, C, m) for samples u (B, C) along one dim."""
    seq = np.empty(u.shape + (m,), np.int64)
    if m > 1:
        a = dt(n - k) / dt(m - 1)
        i = np.arange(m - 1, dtype=dt)
        seq[..., :-1] = ((i + u[..., None].astype(dt)) * a).astype(np.int64) - \
            (u[..., None].astype(dt) * a).astype(np.int64)
    if m > 0:
        seq[..., -1] = n - k
    return seq


def _forward(x, pool, out_size, samples):
    """x (B, C, *S) float array; returns (values, flat indices) of shape (B, C, *out_size)."""
    nd = len(pool)
    B, C = x.shape[:2]
    S = x.shape[2:]
    dt = np.float64 if x.dtype == np.float64 else np.float32
    starts = [_intervals(samples[:, :, d], S[d], out_size[d], pool[d], dt) for d in range(nd)]
    # positions of every window element, per dim: (B, C, m_d, k_d)
    pos = [starts[d][..., None] + np.arange(pool[d]) for d in range(nd)]
    flat = x.reshape(B, C, int(np.prod(S)))  # (explicit sizes, not -1: B may be 0)
    strides = [int(np.prod(S[d + 1:])) for d in range(nd)]
    # flat index of each (output position, window offset), window offsets innermost in ATen's order
    idx = np.zeros((B, C) + tuple(out_size) + tuple(pool), np.int64)
    for d in range(nd):
        shape = [B, C] + [1] * nd + [1] * nd
        shape[2 + d] = out_size[d]
        shape[2 + nd + d] = pool[d]
        idx = idx + (pos[d] * strides[d]).reshape(shape)
    idx = idx.reshape(B, C, int(np.prod(out_size)), int(np.prod(pool)))
    vals = np.take_along_axis(flat, idx.reshape(B, C, idx.shape[2] * idx.shape[3]), 2).reshape(idx.shape)
    nan = np.isnan(vals)
    w = vals.shape[-1]
    last_nan = w - 1 - np.argmax(nan[..., ::-1], -1)
    pick = np.where(nan.any(-1), last_nan, np.argmax(vals, -1))
    best = np.take_along_axis(idx, pick[..., None], -1)[..., 0]
    out = np.take_along_axis(vals, pick[..., None], -1)[..., 0]
    shape = (B, C) + tuple(out_size)
    return out.reshape(shape), best.reshape(shape)


def _check(name, x, pool, out_size, samples, nd):
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    for i in range(1, x.dim()):
        if x.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(x.shape)} with dimension {i} being empty.")
    S = x.shape[-nd:]
    for d in range(nd):
        ok = out_size[d] + pool[d] - 1 <= S[d] if nd == 2 else out_size[d] + pool[d] - 1 < S[d]
        if not ok:
            where = name if nd == 2 else name + "_out"
            raise RuntimeError(f"{where}(): pool {_DIMS[nd][d]} {pool[d]} too large relative to input "
                               f"{_DIMS[nd][d]} {S[d]}")
    n_batch = 1 if x.dim() == nd + 1 else x.shape[0]
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.shape[0] < n_batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")


_FN = {}


def _function(nd):
    fn = _FN.get(nd)
    if fn is not None:
        return fn
    from ember.autograd.function import Function, once_differentiable

    class FractionalMaxPool(Function):
        @staticmethod
        def forward(ctx, x, pool, out_size, samples):
            import ember
            a = x.detach().cpu().numpy()
            batched = a.ndim == nd + 2
            a4 = a if batched else a[None]
            s = samples.detach().cpu().numpy()[:a4.shape[0]]
            if nd == 2:  # ATen's 2d kernel takes sample 0 for the width, 1 for the height
                s = s[:, :, ::-1]
            vals, idx = _forward(a4, pool, out_size, s)
            if not batched:
                vals, idx = vals[0], idx[0]
            ctx.state = (idx, tuple(x.shape), x.dtype, x.device)
            out = ember.tensor(vals).to(x.device)
            ind = ember.tensor(idx).to(x.device)
            ctx.mark_non_differentiable(ind)
            return out, ind

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_out, grad_ind):
            import ember
            idx, shape, dtype, device = ctx.state
            g = grad_out.detach().cpu().numpy()
            lead = shape[:-nd]
            plane = int(np.prod(shape[-nd:]))
            gi = np.zeros((int(np.prod(lead)), plane), g.dtype)
            rows = np.arange(gi.shape[0])[:, None]
            per = idx.size // gi.shape[0] if gi.shape[0] else 0  # (not -1: the batch may be empty)
            np.add.at(gi, (rows, idx.reshape(gi.shape[0], per)), g.reshape(gi.shape[0], per))
            return ember.tensor(gi.reshape(shape)).to(device, dtype), None, None, None

    name = f"FractionalMaxPool{nd}DBackward0"
    FractionalMaxPool._backward_cls.__name__ = FractionalMaxPool._backward_cls.__qualname__ = name
    _FN[nd] = FractionalMaxPool
    return FractionalMaxPool


def _with_indices(nd, input, kernel_size, output_size, output_ratio, _random_samples):
    import ember
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > nd:  # (torch's 2d check; a float has no len() there)
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = _tuple(output_ratio, nd)
        output_size = [int(input.size(-nd + d) * ratio[d]) for d in range(nd)]
    if _random_samples is None:
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = ember.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype,
                                     device=input.device)
    pool = _tuple(kernel_size, nd)
    out_size = _tuple(output_size, nd)
    if len(pool) != nd:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of Ints")
    if len(out_size) != nd:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of Ints")
    _check(name, input, pool, out_size, _random_samples, nd)
    return _function(nd).apply(input, pool, out_size, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _with_indices(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _with_indices(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    r = _with_indices(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return r if return_indices else r[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    r = _with_indices(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return r if return_indices else r[0]
