"""ctc_loss: the connectionist temporal classification loss (ATen's LossCTC.cpp).

_ctc_loss computes each sequence's negative log likelihood with the forward (alpha) recursion in
log space over the target with blanks interleaved (length 2L+1); its backward runs the beta
recursion and gives ATen's gradient, which is taken with respect to the logits of a log_softmax
(exp(log_probs) - exp(log_alpha + log_beta + nll - log_probs), zero past each input length), not
the plain derivative in log_probs: torch's formula, so gradients equal torch's. The recursions run
in float64 over the batch at once (NumPy), one time step per loop pass. Reductions ('mean' divides
each loss by its target length, at least 1, then averages; 'sum'; 'none') and zero_infinity are
ember ops on the result, as in ATen's ctc_loss.
"""
import numpy as np

__all__ = ["ctc_loss"]

_NEG_INF = -np.inf
_CHECK = " (while checking arguments for ctc_loss_allocate_outputs)"


def _lengths(v, name, batch):
    import ember
    if isinstance(v, ember.Tensor):
        a = np.asarray(v.detach().cpu().numpy()).reshape(-1).astype(np.int64)
    else:
        a = np.asarray(list(v) if not isinstance(v, int) else [v], dtype=np.int64)
    if a.size != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return a


def _extended(targets, tl, batch, concatenated):
    """The targets with blanks between and around: (N, 2 * max_L + 1) label indices (blank -1 here,
    filled in later) and each row's valid length 2L + 1."""
    max_l = int(tl.max()) if batch else 0
    lab = np.full((batch, max_l), -1, np.int64)
    off = 0
    for b in range(batch):
        n = int(tl[b])
        row = targets[off:off + n] if concatenated else targets[b, :n]
        lab[b, :n] = row
        off += n
    return lab


def _lse(*xs):
    m = np.maximum.reduce(xs)
    m0 = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        return np.log(sum(np.exp(x - m0) for x in xs)) + m0


def _alpha(lp, ext, il, tl, blank):
    """log_alpha (T, N, S') and the negative log likelihoods (N,)."""
    T, N, _ = lp.shape
    S = ext.shape[1]
    rows = np.arange(N)[:, None]
    lpe = lp[:, rows, ext]                                    # (T, N, S'): log prob of each l'_s
    skip = np.zeros((N, S), bool)                             # s may come from s - 2
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    la = np.full((T, N, S), _NEG_INF)
    if T:
        la[0, :, 0] = lpe[0, :, 0]
        if S > 1:
            la[0, :, 1] = np.where(tl > 0, lpe[0, :, 1], _NEG_INF)
    for t in range(1, T):
        p = la[t - 1]
        a1 = np.concatenate([np.full((N, 1), _NEG_INF), p[:, :-1]], 1)
        a2 = np.concatenate([np.full((N, 2), _NEG_INF), p[:, :-2]], 1)
        a2 = np.where(skip, a2, _NEG_INF)
        la[t] = _lse(p, a1, a2) + lpe[t]
    valid = np.arange(S)[None, :] < (2 * tl + 1)[:, None]
    la = np.where(valid[None], la, _NEG_INF)
    last = np.maximum(il - 1, 0)
    end = la[last, np.arange(N)]                              # (N, S')
    e1 = end[np.arange(N), 2 * tl]
    e2 = np.where(tl > 0, end[np.arange(N), np.maximum(2 * tl - 1, 0)], _NEG_INF)
    nll = -_lse(e1, e2)
    nll = np.where(il > 0, nll, np.where(tl > 0, np.inf, -0.0))
    return la, lpe, skip, nll


def _beta(lpe, ext, il, tl, blank):
    T, N, S = lpe.shape
    skip = np.zeros((N, S), bool)                             # s may go on to s + 2
    skip[:, :-2] = (ext[:, :-2] != blank) & (ext[:, :-2] != ext[:, 2:])
    lb = np.full((T, N, S), _NEG_INF)
    rows = np.arange(N)
    for t in range(T - 1, -1, -1):
        starts = il - 1 == t                                  # this sequence's last step
        cur = np.full((N, S), _NEG_INF)
        cur[rows, 2 * tl] = np.where(starts, lpe[t, rows, 2 * tl], _NEG_INF)
        sec = np.maximum(2 * tl - 1, 0)
        cur[rows, sec] = np.where(starts & (tl > 0), lpe[t, rows, sec], cur[rows, sec])
        if t + 1 < T:
            n = lb[t + 1]
            b1 = np.concatenate([n[:, 1:], np.full((N, 1), _NEG_INF)], 1)
            b2 = np.concatenate([n[:, 2:], np.full((N, 2), _NEG_INF)], 1)
            b2 = np.where(skip, b2, _NEG_INF)
            cont = _lse(n, b1, b2) + lpe[t]
            inside = (t < il - 1)[:, None]
            cur = np.where(inside, cont, cur)
        lb[t] = cur
    valid = np.arange(S)[None, :] < (2 * tl + 1)[:, None]
    return np.where(valid[None], lb, _NEG_INF)


def _make_function():
    from ember.autograd.function import Function, once_differentiable

    class CtcLoss(Function):
        """_ctc_loss as an autograd Function; its node is named as torch's, CtcLossBackward0."""

        @staticmethod
        def forward(ctx, log_probs, lp, ext, il, tl, blank, zero_infinity):
            import ember
            la, lpe, _, nll = _alpha(lp, ext, il, tl, blank)
            ctx.state = (lp, ext, il, tl, blank, zero_infinity, la, lpe, nll,
                         log_probs.dtype, log_probs.device)
            return ember.tensor(nll, dtype=ember.float64).to(log_probs.device, log_probs.dtype)

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_out):
            import ember
            lp, ext, il, tl, blank, zero_inf, la, lpe, nll, dtype, device = ctx.state
            T, N, C = lp.shape
            ab = la + _beta(lpe, ext, il, tl, blank)         # (T, N, S')
            lcab = np.full((T, N, C), _NEG_INF)
            rows = np.arange(N)
            for s in range(ext.shape[1]):                    # logsumexp into each label's slot
                idx = ext[:, s]
                lcab[:, rows, idx] = _lse(lcab[:, rows, idx], ab[:, :, s])
            g = grad_out.detach().cpu().to(ember.float64).numpy().reshape(-1)
            with np.errstate(over="ignore", invalid="ignore"):
                res = (np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)) * g[None, :, None]
            res = np.where((np.arange(T)[:, None] < il[None, :])[:, :, None], res, 0.0)
            if zero_inf:
                res = np.where(np.isinf(nll)[None, :, None], 0.0, res)
            grad = ember.tensor(res, dtype=ember.float64).to(device, dtype)
            return (grad,) + (None,) * 6

    CtcLoss._backward_cls.__name__ = CtcLoss._backward_cls.__qualname__ = "CtcLossBackward0"
    return CtcLoss


_FN = []
_FLOATS = ("float32", "float64", "float16", "bfloat16")
_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    """ATen's _ctc_loss: each sequence's negative log likelihood, (N,)."""
    import ember
    dname = str(log_probs.dtype).replace("torch.", "").replace("ember.", "")
    if dname not in _FLOATS:
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{_NAMES.get(dname, dname)}'")
    T, N, C = log_probs.shape
    if blank < 0 or blank >= C:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, "input_lengths", N)
    tl = _lengths(target_lengths, "target_lengths", N)
    tg = np.asarray(targets.detach().cpu().numpy()).astype(np.int64)
    concatenated = targets.dim() == 1
    for v in il:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {v}" + _CHECK)
        if v > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {v}" + _CHECK)
    for v in tl:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {v}" + _CHECK)
    if concatenated:
        if tg.shape[0] < int(tl.sum()):
            raise RuntimeError(f"Expected tensor to have size at least {int(tl.sum())} at dimension 0, "
                               f"but got size {tg.shape[0]} for argument #2 'targets'" + _CHECK)
    else:
        if tg.shape[0] != N:
            raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got size {tg.shape[0]} "
                               "for argument #2 'targets'" + _CHECK)
        need = int(tl.max()) if N else 0
        if tg.shape[1] < need:
            raise RuntimeError(f"Expected tensor to have size at least {need} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets'" + _CHECK)
    lab = _extended(tg, tl, N, concatenated)
    ext = np.full((N, 2 * lab.shape[1] + 1), blank, np.int64)
    ext[:, 1::2] = np.where(lab >= 0, lab, blank)
    lp = log_probs.detach().cpu().to(ember.float64).numpy()
    if not _FN:
        _FN.append(_make_function())
    return _FN[0].apply(log_probs, lp, ext, il, tl, blank, zero_infinity)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """torch.nn.functional.ctc_loss."""
    import ember
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
        input_lengths = _as_batch(input_lengths)
        target_lengths = _as_batch(target_lengths)
    nll = _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
    if zero_infinity:
        nll = ember.where(nll == float("inf"), ember.zeros((), dtype=nll.dtype), nll)
    if reduction == "mean":
        tl = target_lengths if isinstance(target_lengths, ember.Tensor) else \
            ember.tensor(list(target_lengths), dtype=ember.int64)
        tl = tl.reshape(-1).to(nll.device).clamp_min(1).to(nll.dtype)
        return (nll / tl).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll


def aten_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
                  zero_infinity=False):
    """torch.ctc_loss: reduction as ATen's enum (0 none, 1 mean, 2 sum). The schema's default says
    Mean, but torch 2.13's Python binding leaves it unset and returns the per-sequence losses:
    measured, and followed."""
    names = {0: "none", 1: "mean", 2: "sum"}
    if reduction not in names:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, names[reduction],
                    zero_infinity)


def _as_batch(v):
    import ember
    if isinstance(v, ember.Tensor):
        return v.reshape(1)
    return [int(v)] if isinstance(v, int) else list(v)
