"""quantile and nanquantile (ATen's Sorting.cpp quantile_impl), written with other ember operators.
Both report errors as "quantile()", as ATen does."""
from ember._generated import ops as _ops
from ember.core import dtype as _dt
from ember.core.errors import wrap_dim

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _checks(name, self, q, interpolation):
    if self.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if self.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if self.dtype != q.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if self.device != q.device:
        raise RuntimeError(f"{name}() q tensor must be on the same device as the input tensor")
    if interpolation not in _MODES:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")


def _impl(name, self, q, dim, keepdim, interpolation, ignore_nan):
    _checks(name, self, q, interpolation)
    if q.device.type == "cpu" and q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    n_dim = self.dim()
    if dim is None:
        srt = _ops.sort.call(self.reshape(-1), -1, False)[0]
        srt = srt.reshape(([1] * n_dim if keepdim else []) + [self.numel()])
    else:
        d = wrap_dim(dim, max(n_dim, 1))
        if self.dim() and self.shape[d] == 0:
            raise RuntimeError(f"{name}() input tensor must be non-empty")
        srt = _ops.sort.call(self.unsqueeze(-1).transpose(d, -1), -1, False)[0]
        if not keepdim and n_dim:
            srt = srt.squeeze(d)
    q1 = q.reshape(-1)
    if ignore_nan:
        ranks = q1 * (srt.isnan().logical_not().sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        last = srt.shape[-1] - 1
        nan_any = srt.isnan().any(-1, keepdim=True)
        ranks = (q1 * last).expand(tuple(nan_any.shape[:-1]) + (q1.shape[0],)).masked_fill(nan_any, last)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    ranks_below = ranks.detach().long()  # detach: ember's .long() keeps requires_grad (torch: not)
    values = srt.gather(-1, ranks_below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks.new_full((), 0.5).expand(ranks.shape) if interpolation == "midpoint" else ranks - ranks_below
        values_above = srt.gather(-1, ranks.detach().ceil().long())
        values = values.lerp(values_above, weights)
    if q.dim() == 0:
        return values.squeeze(-1)
    return values.unsqueeze(0).transpose(0, -1).squeeze(-1)


def _scalar_q(name, self, q):
    if not 0 <= q <= 1:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    return _ops.scalar_tensor.call(q, self.dtype, None, self.device, None)


def quantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _impl("quantile", self, q, dim, keepdim, interpolation, False)


def quantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _impl("quantile", self, _scalar_q("quantile", self, q), dim, keepdim, interpolation, False)


def nanquantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _impl("quantile", self, q, dim, keepdim, interpolation, True)


def nanquantile_scalar(self, q, dim=None, keepdim=False, interpolation="linear"):
    return _impl("quantile", self, _scalar_q("quantile", self, q), dim, keepdim, interpolation, True)
