"""ctc_loss (F.ctc_loss, torch.ctc_loss, nn.CTCLoss) against torch 2.13: losses, gradients (ATen's
formula, taken through log_softmax), reductions, zero_infinity, target layouts, errors."""
import numpy as np
import pytest
import torch

import ember
from harness import same_error

CASES = [
    # T, N, C, input_lengths, target_lengths, reduction, blank, concatenated targets, zero_infinity
    (6, 2, 4, (6, 6), (3, 2), "mean", 0, False, False),
    (6, 2, 4, (6, 5), (3, 2), "none", 0, False, False),
    (6, 2, 4, (6, 5), (3, 2), "sum", 0, True, False),
    (10, 3, 5, (10, 7, 3), (4, 2, 0), "mean", 0, False, False),
    (3, 2, 4, (2, 3), (3, 1), "none", 0, False, False),      # too short: inf
    (3, 2, 4, (2, 3), (3, 1), "mean", 0, False, True),       # ... zeroed
    (8, 2, 5, (8, 8), (3, 3), "mean", 4, False, False),      # another blank
    (7, 3, 6, (7, 0, 5), (2, 0, 3), "none", 0, True, False), # an empty input and target
]


def _targets(rng, N, C, S, blank, tl, repeats):
    t = rng.integers(0, C - 1, (N, S))
    t = np.where(t >= blank, t + 1, t)                       # labels other than blank
    if repeats:
        t[:, 1] = t[:, 0]                                    # a repeated label needs a blank between
    return t


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES)
def test_matches_torch(case, dtype):
    T, N, C, il, tl, red, blank, concat, zi = case
    rng = np.random.default_rng(hash(case) % 2 ** 32)
    x = rng.standard_normal((T, N, C)).astype(dtype)
    tg = _targets(rng, N, C, max(max(tl), 1), blank, tl, repeats=True)
    res = {}
    for lib in (ember, torch):
        xx = lib.tensor(x, requires_grad=True)
        lp = xx.log_softmax(2)
        t = lib.tensor(np.concatenate([tg[b, :tl[b]] for b in range(N)])) if concat else lib.tensor(tg)
        out = lib.nn.functional.ctc_loss(lp, t, il, tl, blank=blank, reduction=red, zero_infinity=zi)
        (out.sum() if red == "none" else out).backward()
        res[lib] = (out.detach().numpy(), xx.grad.numpy(), out.dtype)
    e, t = res[ember], res[torch]
    assert str(e[2]).split(".")[-1] == str(t[2]).split(".")[-1]
    tol = 1e-5 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(e[0], t[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(e[1], t[1], rtol=10 * tol, atol=10 * tol)


def test_forms_node_and_module():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 2, 4)).astype("float32")
    out = {}
    for lib in (ember, torch):
        lp = lib.tensor(x, requires_grad=True).log_softmax(2)
        tg = lib.tensor([[1, 2, 3], [2, 2, 0]])
        il, tl = lib.tensor([6, 5]), lib.tensor([3, 2])
        none = lib.nn.functional.ctc_loss(lp, tg, il, tl, reduction="none")
        out[lib] = [none, lib.ctc_loss(lp, tg, il, tl), lib.ctc_loss(lp, tg, (6, 5), (3, 2), 0, 1),
                    lib.nn.CTCLoss(reduction="sum")(lp, tg, il, tl),
                    lib.nn.functional.ctc_loss(lp[:, 0], tg[0], il[0], tl[0])]   # unbatched
        assert type(none.grad_fn).__name__ == "CtcLossBackward0"
    for a, b in zip(out[ember], out[torch]):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ember.nn.modules.loss.CTCLoss is ember.nn.CTCLoss


def test_errors():
    def call(**kw):
        def f(lib):
            lp = lib.zeros(6, 2, 4).log_softmax(2)
            args = dict(targets=lib.tensor([[1, 2, 3], [2, 2, 0]]), input_lengths=(6, 6),
                        target_lengths=(3, 2))
            args.update({k: (v(lib) if callable(v) else v) for k, v in kw.items()})
            return lib.nn.functional.ctc_loss(lp if "lp" not in kw else args.pop("lp"), **args)
        return f
    same_error(call(input_lengths=(6, 6, 6)))
    same_error(call(target_lengths=(3,)))
    same_error(call(input_lengths=(7, 6)))
    same_error(call(input_lengths=(6, -1)))
    same_error(call(target_lengths=(4, 2)))
    same_error(call(blank=4))
    same_error(call(reduction="avg"))
    same_error(lambda lib: lib.nn.functional.ctc_loss(lib.zeros(6, 2, 4).long(), lib.tensor([[1, 2, 3], [2, 2, 0]]),
                                                      (6, 6), (3, 2)))
