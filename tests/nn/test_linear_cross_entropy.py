"""F.linear_cross_entropy (torch 2.13) against torch: values and gradients on the reference path
(linear, then cross_entropy), K-dimensional weights, probabilities as targets, and the errors."""
import numpy as np
import pytest
import torch

import ember
from harness import same_error

CASES = [
    dict(inp=(4, 6), w=(5, 6), tgt="idx"),
    dict(inp=(4, 6), w=(5, 6), tgt="idx", bias=True, reduction="sum", label_smoothing=0.1),
    dict(inp=(6,), w=(5, 6), tgt="idx"),
    dict(inp=(4, 6), w=(5, 6), tgt="prob", reduction="none"),
    dict(inp=(4, 6), w=(5, 3, 6), tgt="idx", bias=True),        # K-dimensional: (N, C, 3)
    dict(inp=(4, 6), w=(5, 6), tgt="idx", ignore_index=2, weight=True),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_torch(case):
    rng = np.random.default_rng(len(str(case)))
    x = rng.standard_normal(case["inp"]).astype(np.float32)
    w = rng.standard_normal(case["w"]).astype(np.float32)
    C, out = case["w"][0], case["w"][1:-1]
    batch = case["inp"][:-1]
    if case["tgt"] == "idx":
        t = rng.integers(0, C, batch + out)
    else:
        t = rng.random(batch + (C,) + out).astype(np.float32)
    b = rng.standard_normal((C,) + out).astype(np.float32) if case.get("bias") else None
    cw = rng.random(C).astype(np.float32) if case.get("weight") else None
    res = {}
    for lib in (ember, torch):
        xx, ww = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        kw = {k: case[k] for k in ("reduction", "label_smoothing", "ignore_index") if k in case}
        loss = lib.nn.functional.linear_cross_entropy(
            xx, ww, lib.tensor(t), linear_bias=None if b is None else lib.tensor(b),
            weight=None if cw is None else lib.tensor(cw), **kw)
        loss.sum().backward()
        res[lib] = (loss.detach().numpy(), xx.grad.numpy(), ww.grad.numpy())
    for e, tt in zip(res[ember], res[torch]):
        np.testing.assert_allclose(e, tt, rtol=1e-5, atol=1e-6)


def test_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    same_error(lambda lib: F(lib).linear_cross_entropy(lib.randn(2, 3, 4), lib.randn(5, 4), lib.tensor([0])))
    same_error(lambda lib: F(lib).linear_cross_entropy(lib.randn(2, 4), lib.randn(4), lib.tensor([0, 1])))
    same_error(lambda lib: F(lib).linear_cross_entropy(lib.randn(2, 4), lib.randn(5, 3), lib.tensor([0, 1])))
    same_error(lambda lib: F(lib).linear_cross_entropy(lib.randn(2, 4), lib.randn(5, 4), lib.tensor([0, 1]),
                                                       linear_bias=lib.randn(4)))
    same_error(lambda lib: F(lib).linear_cross_entropy(lib.randn(4), lib.randn(5, 3, 4), lib.tensor([0])))
    same_error(lambda lib: F(lib).linear_cross_entropy(lib.randn(2, 4), lib.randn(5, 4), lib.rand(2, 5),
                                                       ignore_index=1))
