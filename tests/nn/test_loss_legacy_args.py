"""The legacy size_average/reduce arguments of every loss module and functional loss that takes them,
against torch: the deprecation warning (text and category), the reduction they map to
(torch.nn._reduction.legacy_get_string: None counts as True; both True -> 'mean', reduce alone -> 'sum',
reduce=False -> 'none'; they override reduction=), and the resulting values."""
import itertools
import os
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.harness import check


def _inputs(L, kind):
    g = np.random.default_rng(0)
    x, y = (L.tensor(g.standard_normal((3, 4))) for _ in range(2))
    p = L.tensor(g.uniform(0.1, 0.9, (3, 4)))
    s, cls = L.tensor([1.0, -1.0, 1.0], dtype=L.float64), L.tensor([0, 3, 1])
    x1 = L.tensor(g.standard_normal(3))
    return {
        "pair": (x, y), "signs": (x, y.sign()), "classes": (x, cls), "probs": (p, p.flip(0)),
        "logits": (x, p), "ranking": (x1, x1.flip(0), s), "cosine": (x, y, s), "labels": (x, (y > 0).double()),
        "multilabel": (x, L.tensor([[0, 1, -1, 2], [3, -1, 0, 0], [1, 2, 0, -1]])), "triplet": (x, y, x.flip(0)),
    }[kind]


# functional name, module name, inputs
LOSSES = [
    ("l1_loss", "L1Loss", "pair"), ("mse_loss", "MSELoss", "pair"), ("smooth_l1_loss", "SmoothL1Loss", "pair"),
    ("soft_margin_loss", "SoftMarginLoss", "signs"), ("nll_loss", "NLLLoss", "classes"),
    ("nll_loss", "NLLLoss2d", "classes"), ("cross_entropy", "CrossEntropyLoss", "classes"),
    ("binary_cross_entropy", "BCELoss", "probs"), ("binary_cross_entropy_with_logits", "BCEWithLogitsLoss", "logits"),
    ("kl_div", "KLDivLoss", "logits"), ("margin_ranking_loss", "MarginRankingLoss", "ranking"),
    ("hinge_embedding_loss", "HingeEmbeddingLoss", "signs"), ("cosine_embedding_loss", "CosineEmbeddingLoss", "cosine"),
    ("poisson_nll_loss", "PoissonNLLLoss", "logits"),
    ("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss", "labels"),
    ("multilabel_margin_loss", "MultiLabelMarginLoss", "multilabel"), ("multi_margin_loss", "MultiMarginLoss", "classes"),
    ("triplet_margin_loss", "TripletMarginLoss", "triplet"),
]
# every (size_average, reduce) pair but (None, None), one of them with a reduction= the legacy pair overrides
LEGACY = [dict(size_average=a, reduce=r) for a, r in itertools.product([None, True, False], repeat=2)
          if (a, r) != (None, None)] + [dict(size_average=False, reduction="none"), dict()]


def _recorded(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(str(x.message), x.category) for x in w], [x.filename for x in w]


def _same_warnings(we, wt):
    assert [m for m, _ in we] == [m for m, _ in wt]
    assert [c.__name__ for _, c in we] == [c.__name__ for _, c in wt]
    assert all(issubclass(ce, ct) for (_, ce), (_, ct) in zip(we, wt))


@pytest.mark.parametrize("kw", LEGACY, ids=str)
@pytest.mark.parametrize("fname,mname,kind", LOSSES, ids=[m for _, m, _ in LOSSES])
def test_module(fname, mname, kind, kw):
    res = []
    for L in (ember, torch):
        m, w, files = _recorded(lambda: getattr(L.nn, mname)(**kw))
        v, wf, _ = _recorded(lambda: m(*_inputs(L, kind)))
        res.append((m.reduction, w, v, wf, files))
    (re_, we, ve, wfe, files), (rt, wt, vt, wft, _) = res
    assert re_ == rt
    _same_warnings(we, wt)
    _same_warnings(wfe, wft)
    check(ve, vt)
    if mname == "NLLLoss2d":  # the deprecation points at the caller
        assert files[0] == __file__


@pytest.mark.parametrize("kw", LEGACY, ids=str)
@pytest.mark.parametrize("fname", sorted({f for f, _, _ in LOSSES}))
def test_functional(fname, kw):
    kind = next(k for f, _, k in LOSSES if f == fname)
    (ve, we, fe), (vt, wt, ft) = [_recorded(lambda: getattr(L.nn.functional, fname)(*_inputs(L, kind), **kw))
                                  for L in (ember, torch)]
    _same_warnings(we, wt)
    check(ve, vt)
    # attributed where torch's is: the functional, or _reduction.py where it goes through legacy_get_enum
    assert [os.path.basename(f) == "_reduction.py" for f in fe] == [os.path.basename(f) == "_reduction.py" for f in ft]


def test_legacy_get_string():
    for a, r in itertools.product([None, True, False], repeat=2):
        (se, we, _), (st, wt, _) = [_recorded(lambda: L.nn._reduction.legacy_get_string(a, r)) for L in (ember, torch)]
        assert se == st
        _same_warnings(we, wt)
        assert ember.nn._reduction.legacy_get_enum(a, r, emit_warning=False) == \
            torch.nn._reduction.legacy_get_enum(a, r, emit_warning=False)
