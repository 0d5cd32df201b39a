"""Margin, ranking, embedding and likelihood losses (the ops in ember/ops/native_functions/
nn_norm_loss.yaml, torch.nn.functional's wrappers in ember/nn/_functional_norm_loss.py, and their
modules) against torch: values, dtypes, gradients, reductions, broadcasting, legacy
size_average/reduce arguments, modules and errors."""
import numpy as np
import pytest
import torch

import ember
from tests.harness import check, same_error

# torch warns about the legacy size_average/reduce arguments
pytestmark = pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")

REDUCTIONS = ["none", "mean", "sum"]
DTYPES = ["float32", "float64"]


def run(fn, arrays, grads, dtype, atol=None, rtol=None):
    """fn(lib, *tensors) in ember and torch over the same data (float arrays cast to `dtype`, the
    others kept); compares the results and, after sum().backward(), the .grad of arrays[i], i in grads."""
    results = []
    for lib in (ember, torch):
        ts = []
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            t = lib.tensor(a.astype(dtype) if a.dtype.kind == "f" else a)
            if i in grads:
                t.requires_grad_(True)
            ts.append(t)
        out = fn(lib, *ts)
        if grads:
            out.sum().backward()
        results.append((out, [ts[i].grad for i in grads]))
    (eo, eg), (to, tg) = results
    check(eo, to, atol=atol, rtol=rtol)
    for e, t in zip(eg, tg):
        check(e, t, atol=atol, rtol=rtol)


def signs(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


# ---- margin_ranking_loss ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(rng, dtype, reduction):
    x1, x2 = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    y = signs(rng, (4, 5))
    run(lambda L, a, b, t: L.nn.functional.margin_ranking_loss(a, b, t, margin=0.3, reduction=reduction),
        [x1, x2, y], [0, 1, 2], dtype)
    # broadcasting between inputs of the same number of dimensions
    run(lambda L, a, b, t: L.nn.functional.margin_ranking_loss(a, b, t, reduction=reduction),
        [x1, x2[:1], y[:, :1]], [0, 1], dtype)


def test_margin_ranking_loss_legacy_and_errors(rng):
    x1, x2, y = rng.normal(size=(6,)), rng.normal(size=(6,)), signs(rng, (6,))
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        run(lambda L, a, b, t: L.nn.functional.margin_ranking_loss(a, b, t, **kw), [x1, x2, y], [0], "float32")
    same_error(lambda L: L.nn.functional.margin_ranking_loss(L.ones(3, 4), L.ones(3, 4), L.ones(4)),
               match="All input tensors should have same dimension but got sizes: input1: ")
    same_error(lambda L: L.nn.functional.margin_ranking_loss(L.ones(3, 4), L.ones(3, 4), L.ones(3, 5)))
    same_error(lambda L: L.nn.functional.margin_ranking_loss(L.ones(3), L.ones(3), L.ones(3), reduction="bad"))


# ---- soft_margin_loss ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_loss(rng, dtype, reduction):
    x, y = rng.normal(size=(4, 5)) * 3, signs(rng, (4, 5))
    run(lambda L, a, t: L.nn.functional.soft_margin_loss(a, t, reduction=reduction), [x, y], [0], dtype)
    run(lambda L, a, t: L.nn.functional.soft_margin_loss(a, t, reduction=reduction), [x, y[0]], [0], dtype)
    # the result keeps input's dtype whatever target's is
    run(lambda L, a, t: L.nn.functional.soft_margin_loss(a, t.double(), reduction=reduction), [x, y], [0],
        "float32")
    run(lambda L, a, t: L.nn.functional.soft_margin_loss(a, t, size_average=False), [x, y], [0], dtype)


def test_soft_margin_loss_errors():
    same_error(lambda L: L.nn.functional.soft_margin_loss(L.ones(4), L.ones(3, 4)))
    same_error(lambda L: L.nn.functional.soft_margin_loss(L.ones(3, 4), L.ones(5)))
    same_error(lambda L: L.nn.functional.soft_margin_loss(L.ones(3, 4), L.ones(3, 4, requires_grad=True)))
    same_error(lambda L: L.nn.functional.soft_margin_loss(L.ones(3, 4), L.ones(3, 4), reduction="bad"))


# ---- multilabel_soft_margin_loss ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin_loss(rng, dtype, reduction):
    x, y, w = rng.normal(size=(4, 5)) * 2, (rng.random((4, 5)) < 0.5) * 1.0, rng.uniform(0.1, 2, size=5)
    f = lambda L, a, t, *w: L.nn.functional.multilabel_soft_margin_loss(  # noqa: E731
        a, t, *w, reduction=reduction)
    run(f, [x, y], [0, 1], dtype)
    run(f, [x, y, w], [0, 1, 2], dtype)
    run(f, [x, y[0]], [0], dtype)  # broadcast target
    run(f, [x[0], y[0]], [0], dtype)  # one sample
    run(lambda L, a, t: L.nn.functional.multilabel_soft_margin_loss(a, t, reduce=False), [x, y], [0], dtype)


def test_multilabel_soft_margin_loss_errors():
    same_error(lambda L: L.nn.functional.multilabel_soft_margin_loss(L.ones(3, 4), L.ones(3, 4), reduction="x"))
    same_error(lambda L: L.nn.functional.multilabel_soft_margin_loss(L.ones(3, 4), L.ones(3, 3)))
    same_error(lambda L: L.nn.functional.multilabel_soft_margin_loss(L.tensor(1.0), L.tensor(1.0)))


# ---- hinge_embedding_loss -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding_loss(rng, dtype, reduction):
    x = rng.normal(size=(4, 5)) * 2
    y = rng.choice([-1.0, 1.0, 0.0], size=(4, 5))  # target 0 takes both terms, as in PyTorch
    f = lambda L, a, t: L.nn.functional.hinge_embedding_loss(a, t, margin=0.7, reduction=reduction)  # noqa: E731
    run(f, [x, y], [0], dtype)
    run(f, [x[0], y], [0], dtype)  # input broadcast to target's shape
    run(f, [x, y.astype(np.int64)], [0], dtype)
    run(lambda L, a, t: L.nn.functional.hinge_embedding_loss(a, t, reduce=False), [x, y], [0], dtype)


def test_hinge_embedding_loss_errors():
    same_error(lambda L: L.nn.functional.hinge_embedding_loss(L.ones(3, 4), L.ones(5)))
    same_error(lambda L: L.nn.functional.hinge_embedding_loss(L.ones(3, 4), L.ones(3, 4), reduction="bad"))


# ---- cosine_embedding_loss ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(rng, dtype, reduction):
    x1, x2, y = rng.normal(size=(6, 5)), rng.normal(size=(6, 5)), signs(rng, (6,))
    f = lambda L, a, b, t: L.nn.functional.cosine_embedding_loss(a, b, t, margin=0.2, reduction=reduction)  # noqa: E731
    run(f, [x1, x2, y], [0, 1], dtype)
    run(f, [x1, x2[:1], y], [0, 1], dtype)  # broadcast input2
    run(f, [x1, x2, y[:1]], [0, 1], dtype)  # broadcast target
    run(f, [x1[0], x2[0], np.float64(-1.0)], [0, 1], dtype)  # 1-D inputs, 0-d target
    run(f, [x1, x2, y.astype(np.int64)], [0, 1], dtype)
    run(lambda L, a, b, t: L.nn.functional.cosine_embedding_loss(a, b, t, size_average=False),
        [x1, x2, y], [0], dtype)


def test_cosine_embedding_loss_errors():
    F = lambda L: L.nn.functional.cosine_embedding_loss  # noqa: E731
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 1)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.tensor(1.0)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(4), L.ones(3)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(5)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3), reduction="bad"))


# ---- poisson_nll_loss ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input, full", [(True, False), (False, True), (True, True)])
def test_poisson_nll_loss(rng, dtype, reduction, log_input, full):
    x = rng.normal(size=(4, 5)) if log_input else rng.uniform(0.1, 4, size=(4, 5))
    y = rng.integers(1, 6, size=(4, 5)).astype(np.float64)  # 1 (no Stirling term) and above
    f = lambda L, a, t: L.nn.functional.poisson_nll_loss(a, t, log_input=log_input, full=full,  # noqa: E731
                                                          reduction=reduction)
    run(f, [x, y], [0, 1], dtype)
    run(f, [x, y[0]], [0, 1], dtype)  # broadcast target
    y0 = y.copy()
    y0[0] = 0.0
    run(f, [x, y0], [0], dtype)


def test_poisson_nll_loss_legacy_and_errors(rng):
    x, y = rng.normal(size=(4, 5)), rng.integers(0, 6, size=(4, 5)).astype(np.float64)
    run(lambda L, a, t: L.nn.functional.poisson_nll_loss(a, t, size_average=False, eps=1e-4), [x, y], [0],
        "float64")
    run(lambda L, a, t: L.nn.functional.poisson_nll_loss(a, t, reduce=False), [x, y], [0], "float64")
    same_error(lambda L: L.nn.functional.poisson_nll_loss(L.ones(3, 4), L.ones(3, 4), reduction="bad"))
    same_error(lambda L: L.nn.functional.poisson_nll_loss(L.ones(3, 4), L.ones(5)))


# ---- gaussian_nll_loss --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gaussian_nll_loss(rng, dtype, reduction):
    x, y = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    v = rng.uniform(0.1, 2, size=(4, 5))
    v[0, 0] = 0.0  # clamped to eps; the gradient still reaches var
    f = lambda L, a, t, s: L.nn.functional.gaussian_nll_loss(a, t, s, reduction=reduction)  # noqa: E731
    run(f, [x, y, v], [0, 1, 2], dtype)
    run(f, [x, y, v[:, 0]], [0, 1, 2], dtype)  # one variance per sample (var one dimension short)
    run(f, [x, y, v[:, :1]], [0, 1, 2], dtype)
    run(f, [x, y, v[:1]], [0, 2], dtype)
    run(f, [x, y[0], v], [0, 1], dtype)  # broadcast target
    run(lambda L, a, t: L.nn.functional.gaussian_nll_loss(a, t, 0.5, full=True, eps=1e-3, reduction=reduction),
        [x, y], [0, 1], dtype)


def test_gaussian_nll_loss_errors():
    F = lambda L: L.nn.functional.gaussian_nll_loss  # noqa: E731
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), -L.ones(3, 4)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), -1.0))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(4)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(1, 1)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), 1.0, reduction="bad"))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 3), L.ones(3, 4)))


# ---- triplet losses -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p, swap", [(2, False), (1, True), (3.0, False)])
def test_triplet_margin_loss(rng, dtype, reduction, p, swap):
    a, pos, neg = (rng.normal(size=(6, 5)) for _ in range(3))
    f = lambda L, x, y, z: L.nn.functional.triplet_margin_loss(x, y, z, margin=1.5, p=p, swap=swap,  # noqa: E731
                                                               reduction=reduction)
    run(f, [a, pos, neg], [0, 1, 2], dtype)
    run(f, [a, pos, neg[:1]], [0, 1, 2], dtype)  # broadcast negative
    run(f, [a[0], pos[0], neg[0]], [0, 1, 2], dtype)


def test_triplet_margin_loss_legacy_and_errors(rng):
    a, pos, neg = (rng.normal(size=(6, 5)) for _ in range(3))
    run(lambda L, x, y, z: L.nn.functional.triplet_margin_loss(x, y, z, size_average=False), [a, pos, neg], [0],
        "float64")
    F = lambda L: L.nn.functional.triplet_margin_loss  # noqa: E731
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 4), margin=0))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 4), margin=-1.0))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(4)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 3)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 4), reduction="bad"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_margin_with_distance_loss(rng, dtype, reduction):
    a, pos, neg = (rng.normal(size=(6, 5)) for _ in range(3))
    f = lambda L, x, y, z: L.nn.functional.triplet_margin_with_distance_loss(x, y, z, reduction=reduction)  # noqa: E731
    run(f, [a, pos, neg], [0, 1, 2], dtype)
    run(f, [a, pos[:1], neg], [0, 1, 2], dtype)

    def cos_dist(L):
        return lambda x, y: 1.0 - L.nn.functional.cosine_similarity(x, y)

    run(lambda L, x, y, z: L.nn.functional.triplet_margin_with_distance_loss(
        x, y, z, distance_function=cos_dist(L), margin=0.5, swap=True, reduction=reduction),
        [a, pos, neg], [0, 1, 2], dtype)


def test_triplet_margin_with_distance_loss_errors():
    F = lambda L: L.nn.functional.triplet_margin_with_distance_loss  # noqa: E731
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 4), reduction="bad"))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(3, 4), margin=0.0))
    same_error(lambda L: F(L)(L.ones(3, 4), L.ones(3, 4), L.ones(4)))


# ---- multi_margin_loss --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(rng, dtype, reduction, p):
    x, y, w = rng.normal(size=(6, 5)), rng.integers(0, 5, size=6), rng.uniform(0.1, 2, size=5)
    f = lambda L, a, t, w=None: L.nn.functional.multi_margin_loss(a, t, p=p, margin=0.8, weight=w,  # noqa: E731
                                                                  reduction=reduction)
    run(f, [x, y], [0], dtype)
    run(f, [x, y, w], [0], dtype)
    run(lambda L, a, t: f(L, a, t), [x[0], y[0]], [0], dtype)  # 1-D input, 0-d target
    run(lambda L, a, t: f(L, a, t), [x[0], y[:1]], [0], dtype)  # 1-D input, 1-element target
    run(lambda L, a, t: f(L, a, t), [x[:1], y[0]], [0], dtype)  # one-row input, 0-d target
    run(lambda L, a, t: f(L, a, t), [x[0, 0], np.int64(0)], [0], dtype)  # 0-d input
    run(lambda L, a, t: L.nn.functional.multi_margin_loss(a, t, reduce=False), [x, y], [0], dtype)


def test_multi_margin_loss_errors():
    F = lambda L: L.nn.functional.multi_margin_loss  # noqa: E731
    t = lambda L: L.tensor([0, 3, 1])  # noqa: E731
    same_error(lambda L: F(L)(L.ones(3, 4), t(L), p=3))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L), weight=L.ones(1, 4)))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L), weight=L.ones(3)))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L), weight=L.ones(4, requires_grad=True)))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L), weight=L.ones(4, dtype=L.float64)))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L)[:2]))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L).view(3, 1)))
    same_error(lambda L: F(L)(L.ones(4), t(L)[:2]))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor([0, 4, 1])))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor([0, -1, 1])))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L).int()))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L).float()))
    same_error(lambda L: F(L)(L.ones(3, 2, 2), t(L)))
    same_error(lambda L: F(L)(L.ones(3, 0), t(L)))
    same_error(lambda L: F(L)(L.ones(3, 4, dtype=L.float16), t(L)))
    same_error(lambda L: F(L)(L.ones(3, 4), t(L), reduction="bad"))


# ---- multilabel_margin_loss ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(rng, dtype, reduction):
    x = rng.normal(size=(5, 4)) * 0.5
    # labels end at the first -1; later entries are ignored; a repeated label counts twice
    y = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0], [2, 2, -1, -1], [1, -1, 3, 3]])
    f = lambda L, a, t: L.nn.functional.multilabel_margin_loss(a, t, reduction=reduction)  # noqa: E731
    run(f, [x, y], [0], dtype)
    run(f, [x[0], y[0]], [0], dtype)  # 1-D input
    run(f, [x[0, 0], np.array([0])], [0], dtype)  # 0-d input
    run(lambda L, a, t: L.nn.functional.multilabel_margin_loss(a, t, size_average=False), [x, y], [0], dtype)


def test_multilabel_margin_loss_errors():
    F = lambda L: L.nn.functional.multilabel_margin_loss  # noqa: E731
    y = [[3, 0, -1, 1], [0, 1, 2, 3], [-1, 0, 0, 0]]
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor(y)[:2]))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor(y)[0]))
    same_error(lambda L: F(L)(L.ones(3), L.zeros(4, dtype=L.long)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor([[0, -1, -5, 9]] * 3)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor([[4, 0, -1, 1]] * 3)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor(y).int()))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor(y).float()))
    same_error(lambda L: F(L)(L.ones(3, 2, 2), L.tensor(y)))
    same_error(lambda L: F(L)(L.ones(3, 4, dtype=L.float16), L.tensor(y)))
    same_error(lambda L: F(L)(L.ones(3, 4), L.tensor(y), reduction="bad"))


def test_empty_batches():
    run(lambda L, a, t: L.nn.functional.multi_margin_loss(a, t, reduction="none"),
        [np.zeros((0, 4)), np.zeros(0, dtype=np.int64)], [0], "float32")
    run(lambda L, a, t: L.nn.functional.multilabel_margin_loss(a, t, reduction="none"),
        [np.zeros((0, 4)), np.zeros((0, 4), dtype=np.int64)], [0], "float32")
    run(lambda L, a, b, t: L.nn.functional.cosine_embedding_loss(a, b, t, reduction="sum"),
        [np.zeros((0, 4)), np.zeros((0, 4)), np.zeros(0)], [0, 1], "float64")


# ---- modules ------------------------------------------------------------------------------------
MODULES = [
    ("MarginRankingLoss", {"margin": 0.2}, "rank"),
    ("SoftMarginLoss", {}, "pair"),
    ("MultiLabelSoftMarginLoss", {"weight": "w"}, "pair01"),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "pair"),
    ("CosineEmbeddingLoss", {"margin": 0.1}, "cos"),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, "poisson"),
    ("GaussianNLLLoss", {"full": True}, "gauss"),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1.0, "swap": True}, "triplet"),
    ("TripletMarginWithDistanceLoss", {"swap": True}, "triplet"),
    ("MultiMarginLoss", {"p": 2, "weight": "w"}, "class"),
    ("MultiLabelMarginLoss", {}, "labels"),
]


def _module_inputs(kind, rng):
    x, z = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    return {
        "rank": [x, z, signs(rng, (4, 5))], "pair": [x, signs(rng, (4, 5))],
        "pair01": [x, (rng.random((4, 5)) < 0.5) * 1.0], "cos": [x, z, signs(rng, (4,))],
        "poisson": [np.abs(x) + 0.1, rng.integers(0, 5, size=(4, 5)) * 1.0],
        "gauss": [x, z, rng.uniform(0.5, 2, size=(4, 1))], "triplet": [x, z, rng.normal(size=(4, 5))],
        "class": [x, rng.integers(0, 5, size=4)], "labels": [x, np.array([[1, 4, -1, 0, 0]] * 4)],
    }[kind]


@pytest.mark.parametrize("name, kwargs, kind", MODULES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_modules(rng, name, kwargs, kind, reduction):
    w = rng.uniform(0.5, 1.5, size=5)

    def fn(L, *args):
        kw = {k: (L.tensor(w) if v == "w" else v) for k, v in kwargs.items()}
        mod = getattr(L.nn, name)(reduction=reduction, **kw)
        assert mod.reduction == reduction
        return mod(*args)

    arrays = _module_inputs(kind, rng)
    run(fn, arrays, [0], "float64")


def test_modules_legacy_and_state():
    for lib in (ember, torch):
        assert lib.nn.SoftMarginLoss(size_average=False).reduction == "sum"
        assert lib.nn.MultiMarginLoss(reduce=False).reduction == "none"
        m = lib.nn.MultiLabelSoftMarginLoss(weight=lib.ones(3))
        assert "weight" in dict(m.named_buffers())
        m = lib.nn.TripletMarginWithDistanceLoss()
        assert isinstance(m.distance_function, lib.nn.PairwiseDistance)
        assert lib.nn.PoissonNLLLoss(eps=1e-3).eps == 1e-3
    same_error(lambda L: L.nn.TripletMarginLoss(margin=0.0))
    same_error(lambda L: L.nn.TripletMarginWithDistanceLoss(margin=-1.0))
    same_error(lambda L: L.nn.MultiMarginLoss(p=3))
    same_error(lambda L: L.nn.MultiMarginLoss(weight=L.ones(2, 2)))
    same_error(lambda L: L.nn.GaussianNLLLoss()(L.ones(3), L.ones(3), -L.ones(3)))
