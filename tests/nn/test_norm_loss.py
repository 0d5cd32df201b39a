"""Losses, normalization layers, distances and attention against torch (forward values, dtypes,
module state, errors)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from harness import check, make_pair, same_error

EF, TF = ember.nn.functional, torch.nn.functional


def _both(v):
    return ember.tensor(v), torch.tensor(v)


# ---- losses -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(rng, dtype, reduction):
    e, t = make_pair((6, 5), dtype, rng, "strided")
    et, tt = _both([0, 4, 2, -100, 1, 3])
    check(EF.cross_entropy(e, et, reduction=reduction), TF.cross_entropy(t, tt, reduction=reduction))
    ew, tw = make_pair((5,), dtype, rng, low=0.1, high=2)
    check(EF.cross_entropy(e, et, weight=ew, reduction=reduction, label_smoothing=0.3),
          TF.cross_entropy(t, tt, weight=tw, reduction=reduction, label_smoothing=0.3))
    et2, tt2 = _both([0, 4, 2, 2, 1, 3])
    check(EF.cross_entropy(e, et2, ignore_index=2, reduction=reduction, label_smoothing=0.1),
          TF.cross_entropy(t, tt2, ignore_index=2, reduction=reduction, label_smoothing=0.1))
    ep, tp = make_pair((6, 5), dtype, rng, low=0, high=1)
    check(EF.cross_entropy(e, ep, weight=ew, reduction=reduction, label_smoothing=0.2),
          TF.cross_entropy(t, tp, weight=tw, reduction=reduction, label_smoothing=0.2))
    # 1-D input, N-D input
    e1, t1 = make_pair((5,), dtype, rng)
    check(EF.cross_entropy(e1, ember.tensor(3), reduction=reduction),
          TF.cross_entropy(t1, torch.tensor(3), reduction=reduction))
    e4, t4 = make_pair((2, 3, 4, 2), dtype, rng)
    tv = rng.integers(0, 3, size=(2, 4, 2))
    check(EF.cross_entropy(e4, ember.tensor(tv), reduction=reduction, label_smoothing=0.1),
          TF.cross_entropy(t4, torch.tensor(tv), reduction=reduction, label_smoothing=0.1))


def test_cross_entropy_edge_cases(rng):
    e, t = make_pair((3, 4), "float32", rng)
    et, tt = _both([-100, -100, -100])
    check(EF.cross_entropy(e, et), TF.cross_entropy(t, tt))  # nan
    check(EF.cross_entropy(e, et, reduction="sum"), TF.cross_entropy(t, tt, reduction="sum"))
    z, tz = make_pair((0, 4), "float32", rng)
    check(EF.cross_entropy(z, ember.zeros(0, dtype=ember.long)),
          TF.cross_entropy(tz, torch.zeros(0, dtype=torch.long)))
    check(EF.cross_entropy(z, ember.zeros(0, dtype=ember.long), reduction="none"),
          TF.cross_entropy(tz, torch.zeros(0, dtype=torch.long), reduction="none"))
    # legacy arguments
    et, tt = _both([0, 1, 3])
    check(EF.cross_entropy(e, et, size_average=False), TF.cross_entropy(t, tt, size_average=False))
    check(EF.nll_loss(e, et, reduce=False), TF.nll_loss(t, tt, reduce=False))
    # uint8 targets
    check(EF.nll_loss(e, et.to(ember.uint8)), TF.nll_loss(t, tt.to(torch.uint8)))


def test_nll_loss_meta(rng):
    e = ember.empty(3, 4, device="meta")
    r = EF.nll_loss(e, ember.empty(3, dtype=ember.long, device="meta"), reduction="none")
    assert r.shape == (3,) and r.device.type == "meta" and r.dtype == ember.float32
    r = EF.cross_entropy(e, ember.empty(3, dtype=ember.long, device="meta"))
    assert r.shape == () and r.device.type == "meta"


def test_loss_errors(rng):
    def inp(lib):
        return lib.tensor(np.arange(15.0).reshape(3, 5), dtype=lib.float32)
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib), lib.tensor([1, 2, 7])))
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib), lib.tensor([1, 2, 3], dtype=lib.int32)))
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib), lib.tensor([1, 2])))
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib), lib.tensor([1, 2, 3]), weight=lib.ones(4)))
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib), lib.tensor([[1, 2, 3]])))
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib).int(), lib.tensor([1, 2, 3])))
    same_error(lambda lib: lib.nn.functional.nll_loss(lib.tensor(3.), lib.tensor(1)))
    same_error(lambda lib: lib.nn.functional.nll_loss(inp(lib), lib.tensor([1, 2, 3]), reduction="foo"))
    same_error(lambda lib: lib.nn.functional.cross_entropy(inp(lib), inp(lib).long()))
    x4 = np.zeros((2, 3, 4, 5), dtype=np.float32)
    same_error(lambda lib: lib.nn.functional.nll_loss(lib.tensor(x4), lib.zeros(2, 4, 4).long()))
    same_error(lambda lib: lib.nn.functional.nll_loss(lib.tensor(x4), lib.zeros(2, 4).long()))
    same_error(lambda lib: lib.nn.functional.nll_loss(lib.tensor(x4), lib.zeros(2, 4, 5).long(),
                                                      weight=lib.ones(2)))
    same_error(lambda lib: lib.nn.functional.nll_loss(lib.tensor(x4[..., 0]), lib.zeros(2, 5).long()))
    same_error(lambda lib: lib.nn.functional.nll_loss(lib.tensor(x4), lib.full((2, 4, 5), 7)))
    same_error(lambda lib: lib.nn.functional.cross_entropy(inp(lib), lib.ones(3, 4)))
    same_error(lambda lib: lib.nn.functional.cross_entropy(inp(lib), lib.tensor([1, 2, 3]),
                                                           label_smoothing=1.5))
    same_error(lambda lib: lib.nn.functional.binary_cross_entropy(lib.ones(3) * 0.5, lib.ones(2)),
               match="Using a target size (")
    same_error(lambda lib: lib.nn.functional.binary_cross_entropy(lib.ones(3) * 2, lib.ones(3)))
    same_error(lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(lib.ones(3), lib.ones(2)),
               match="must be the same as input size")
    same_error(lambda lib: lib.nn.functional.smooth_l1_loss(lib.ones(3), lib.ones(3), beta=-1.0))
    same_error(lambda lib: lib.nn.functional.huber_loss(lib.ones(3), lib.ones(3), delta=0.0))
    same_error(lambda lib: lib.nn.functional.mse_loss(lib.ones(3, 5), lib.ones(3, 4)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pointwise_losses(rng, dtype, reduction):
    e, t = make_pair((4, 5), dtype, rng, "transposed")
    eg, tg = make_pair((4, 5), dtype, rng, low=0.01, high=0.99)
    for name, kw in [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.3}),
                     ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {"delta": 0.4}),
                     ("binary_cross_entropy_with_logits", {}), ("kl_div", {}),
                     ("kl_div", {"log_target": True})]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check(getattr(EF, name)(e, eg, reduction=reduction, **kw),
                  getattr(TF, name)(t, tg, reduction=reduction, **kw))
    ep, tp = make_pair((4, 5), dtype, rng, low=0.01, high=0.99)
    ew, tw = make_pair((5,), dtype, rng, low=0.1, high=2)
    check(EF.binary_cross_entropy(ep, eg, weight=ew, reduction=reduction),
          TF.binary_cross_entropy(tp, tg, weight=tw, reduction=reduction))
    check(EF.binary_cross_entropy_with_logits(e, eg, weight=ew, pos_weight=ew, reduction=reduction),
          TF.binary_cross_entropy_with_logits(t, tg, weight=tw, pos_weight=tw, reduction=reduction))
    check(EF.kl_div(e, eg, reduction="batchmean"), TF.kl_div(t, tg, reduction="batchmean"))
    ew2, tw2 = make_pair((4, 5), dtype, rng, low=0.1, high=2)
    check(EF.mse_loss(e, eg, reduction=reduction, weight=ew2),
          TF.mse_loss(t, tg, reduction=reduction, weight=tw2))
    # broadcasting with the size warning
    with pytest.warns(UserWarning, match="Using a target size"):
        r = EF.mse_loss(e, eg[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(r, TF.mse_loss(t, tg[0]))


def test_loss_dtypes():
    a = np.array([0.2, 0.5, 0.9])
    for n in ["mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss"]:
        for d1, d2 in [("float32", "float64"), ("bfloat16", "bfloat16"), ("float32", "int64"),
                       ("float16", "float16")]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check(getattr(EF, n)(ember.tensor(a).to(getattr(ember, d1)),
                                     ember.tensor(a * 2).to(getattr(ember, d2))),
                      getattr(TF, n)(torch.tensor(a).to(getattr(torch, d1)),
                                     torch.tensor(a * 2).to(getattr(torch, d2))))
        if n != "l1_loss":
            same_error(lambda lib: getattr(lib.nn.functional, n)(lib.ones(3).long(),
                                                                 lib.ones(3).long()))
        r = getattr(EF, n)(ember.empty(3, 4, device="meta"), ember.empty(3, 4, device="meta"),
                           reduction="none")
        assert r.shape == (3, 4) and r.device.type == "meta"
    same_error(lambda lib: lib.nn.functional.binary_cross_entropy(lib.ones(3) * 0.5,
                                                                  lib.ones(3).double()))
    same_error(lambda lib: lib.nn.functional.binary_cross_entropy(lib.ones(3).long(),
                                                                  lib.ones(3).long()))
    same_error(lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(lib.ones(3).long(),
                                                                              lib.ones(3).long()))
    check(EF.binary_cross_entropy_with_logits(ember.tensor(a).float(), ember.tensor(a)),
          TF.binary_cross_entropy_with_logits(torch.tensor(a).float(), torch.tensor(a)))
    z = ember.zeros(0)
    check(EF.mse_loss(z, z), TF.mse_loss(torch.zeros(0), torch.zeros(0)))
    check(EF.binary_cross_entropy(z, z), TF.binary_cross_entropy(torch.zeros(0), torch.zeros(0)))


def test_bce_edges():
    x, tx = _both([0.0, 1.0, 0.5])
    y, ty = _both([1.0, 0.0, 0.5])
    check(EF.binary_cross_entropy(x, y, reduction="none"), TF.binary_cross_entropy(tx, ty, reduction="none"))


def test_distances(rng):
    a, ta = make_pair((3, 5), "float64", rng)
    b, tb = make_pair((3, 5), "float64", rng, "expanded")
    check(EF.cosine_similarity(a, b), TF.cosine_similarity(ta, tb))
    check(EF.cosine_similarity(a, b, dim=0), TF.cosine_similarity(ta, tb, dim=0))
    check(EF.cosine_similarity(a, b[0:1]), TF.cosine_similarity(ta, tb[0:1]))
    for p in (1.0, 2.0, 3.0):
        check(EF.pairwise_distance(a, b, p=p), TF.pairwise_distance(ta, tb, p=p))
    check(EF.pairwise_distance(a, b, keepdim=True), TF.pairwise_distance(ta, tb, keepdim=True))
    check(ember.nn.PairwiseDistance()(a, b), torch.nn.PairwiseDistance()(ta, tb))
    check(ember.nn.CosineSimilarity(dim=1)(a, b), torch.nn.CosineSimilarity(dim=1)(ta, tb))


def test_loss_modules(rng):
    e, t = make_pair((4, 3), "float32", rng)
    et, tt = _both([0, 2, 1, 1])
    w = np.array([0.3, 1.0, 2.0], dtype=np.float32)
    em = ember.nn.CrossEntropyLoss(weight=ember.tensor(w), label_smoothing=0.1)
    tm = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), label_smoothing=0.1)
    check(em(e, et), tm(t, tt))
    assert list(em.state_dict()) == list(tm.state_dict()) == ["weight"]
    check(ember.nn.NLLLoss(reduction="sum")(e, et), torch.nn.NLLLoss(reduction="sum")(t, tt))
    eg, tg = make_pair((4, 3), "float32", rng, low=0.05, high=0.95)
    for name, kw in [("MSELoss", {}), ("L1Loss", {"reduction": "none"}), ("SmoothL1Loss", {"beta": 0.5}),
                     ("HuberLoss", {"delta": 2.0}), ("BCEWithLogitsLoss", {}),
                     ("KLDivLoss", {"reduction": "batchmean"})]:
        check(getattr(ember.nn, name)(**kw)(e, eg), getattr(torch.nn, name)(**kw)(t, tg))
    check(ember.nn.BCELoss()(eg, eg), torch.nn.BCELoss()(tg, tg))
    em = ember.nn.BCEWithLogitsLoss(pos_weight=ember.ones(3))
    assert list(em.state_dict()) == ["pos_weight"]


# ---- normalization ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_layer_norm(rng, dtype):
    e, t = make_pair((2, 3, 4), dtype, rng, "transposed")
    ew, tw = make_pair((3, 4), dtype, rng)
    eb, tb = make_pair((3, 4), dtype, rng)
    check(EF.layer_norm(e, (3, 4), ew, eb), TF.layer_norm(t, (3, 4), tw, tb))
    check(EF.layer_norm(e, [4], eps=1e-2), TF.layer_norm(t, [4], eps=1e-2))
    check(ember.native_layer_norm(e, [4], None, None, 1e-5),
          torch.native_layer_norm(t, [4], None, None, 1e-5))
    z, tz = make_pair((0, 4), dtype, rng)
    check(EF.layer_norm(z, [4]), TF.layer_norm(tz, [4]))


def test_layer_norm_errors_meta():
    same_error(lambda lib: lib.nn.functional.layer_norm(lib.ones(3, 5), [4]))
    same_error(lambda lib: lib.nn.functional.layer_norm(lib.ones(3, 5), [4, 5]))
    same_error(lambda lib: lib.nn.functional.layer_norm(lib.ones(3, 5), [5], lib.ones(4)))
    same_error(lambda lib: lib.nn.functional.layer_norm(lib.ones(3, 5).long(), [5]))
    r = ember.native_layer_norm(ember.empty(2, 3, device="meta"), [3], None, None, 1e-5)
    assert [tuple(x.shape) for x in r] == [(2, 3), (2, 1), (2, 1)]


def test_layer_norm_module(rng):
    tm = torch.nn.LayerNorm((3, 4))
    em = ember.nn.LayerNorm((3, 4))
    assert list(em.state_dict()) == list(tm.state_dict())
    check(em.weight, tm.weight.detach())
    check(em.bias, tm.bias.detach())
    assert ember.nn.LayerNorm(4, bias=False).bias is None
    assert ember.nn.LayerNorm(4, elementwise_affine=False).weight is None
    assert repr(em) == repr(tm)
    e, t = make_pair((2, 3, 4), "float32", rng)
    check(em(e), tm(t))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_group_rms_norm(rng, dtype):
    e, t = make_pair((2, 6, 3, 2), dtype, rng, "transposed")
    ew, tw = make_pair((6,), dtype, rng)
    eb, tb = make_pair((6,), dtype, rng)
    check(EF.group_norm(e, 3, ew, eb), TF.group_norm(t, 3, tw, tb))
    check(EF.group_norm(e, 6), TF.group_norm(t, 6))
    er, tr = make_pair((3, 2), dtype, rng)
    check(EF.rms_norm(e, (3, 2), er), TF.rms_norm(t, (3, 2), tr))
    check(EF.rms_norm(e, (2,), eps=1e-3), TF.rms_norm(t, (2,), eps=1e-3))
    if dtype != "float32":
        return
    em, tm = ember.nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6)
    assert list(em.state_dict()) == list(tm.state_dict()) and repr(em) == repr(tm)
    check(em(e), tm(t))
    em, tm = ember.nn.RMSNorm([3, 2]), torch.nn.RMSNorm([3, 2])
    assert list(em.state_dict()) == list(tm.state_dict()) and repr(em) == repr(tm)
    check(em(e), tm(t))
    same_error(lambda lib: lib.nn.functional.group_norm(lib.ones(2, 6, 3), 4))
    same_error(lambda lib: lib.nn.functional.group_norm(lib.ones(2, 6, 3), 3, lib.ones(5)))
    same_error(lambda lib: lib.nn.functional.group_norm(lib.ones(2, 6, 3).long(), 3))
    same_error(lambda lib: lib.nn.functional.group_norm(lib.ones(3), 3))
    r = ember.native_group_norm(ember.empty(2, 6, 3, device="meta"), None, None, 2, 6, 3, 3, 1e-5)
    assert [tuple(x.shape) for x in r] == [(2, 6, 3), (2, 3), (2, 3)]
    same_error(lambda lib: lib.nn.GroupNorm(4, 6), exc=ValueError)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("shape,cls", [((4, 3), "BatchNorm1d"), ((4, 3, 5), "BatchNorm1d"),
                                       ((2, 3, 4, 2), "BatchNorm2d")])
def test_batch_norm_module(rng, shape, cls, momentum):
    em = getattr(ember.nn, cls)(3, momentum=momentum)
    tm = getattr(torch.nn, cls)(3, momentum=momentum)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert repr(em) == repr(tm)
    for step in range(3):
        e, t = make_pair(shape, "float32", rng, "transposed" if step == 1 else "contiguous")
        check(em(e), tm(t))
    for k, v in tm.state_dict().items():
        check(em.state_dict()[k], v)
    em.eval()
    tm.eval()
    e, t = make_pair(shape, "float32", rng)
    check(em(e), tm(t))
    # no running stats: batch statistics in eval too
    em = getattr(ember.nn, cls)(3, affine=False, track_running_stats=False).eval()
    tm = getattr(torch.nn, cls)(3, affine=False, track_running_stats=False).eval()
    assert list(em.state_dict()) == list(tm.state_dict()) == []
    check(em(e), tm(t))


def test_batch_norm_functional_errors(rng):
    e, t = make_pair((5, 3), "float64", rng)
    rm, trm = ember.zeros(3, dtype=ember.float64), torch.zeros(3, dtype=torch.float64)
    rv, trv = ember.ones(3, dtype=ember.float64), torch.ones(3, dtype=torch.float64)
    check(EF.batch_norm(e, rm, rv, training=True, momentum=0.3),
          TF.batch_norm(t, trm, trv, training=True, momentum=0.3))
    check(rm, trm)
    check(rv, trv)
    check(EF.batch_norm(e, rm, rv), TF.batch_norm(t, trm, trv))
    same_error(lambda lib: lib.nn.functional.batch_norm(lib.ones(1, 3), lib.zeros(3), lib.ones(3),
                                                        training=True),
               match="Expected more than 1 value per channel when training")
    same_error(lambda lib: lib.nn.BatchNorm2d(3)(lib.ones(2, 3)))
    same_error(lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(4), lib.ones(4),
                                                        training=True))
    same_error(lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3), lib.zeros(3), lib.ones(3),
                                                        lib.ones(4), training=True))
    same_error(lambda lib: lib.nn.functional.batch_norm(lib.ones(4, 3).long(), None, None,
                                                        training=True))
    same_error(lambda lib: lib.native_batch_norm(lib.zeros(0, 3), None, None, None, None, True,
                                                 0.1, 1e-5))
    rm, trm = ember.zeros(3), torch.zeros(3)
    check(EF.batch_norm(ember.zeros(0, 3), rm, ember.ones(3), training=True),
          TF.batch_norm(torch.zeros(0, 3), trm, torch.ones(3), training=True))
    check(rm, trm)
    r = ember.native_batch_norm(ember.empty(4, 3, 2, device="meta"), None, None, None, None,
                                True, 0.1, 1e-5)
    assert [tuple(x.shape) for x in r] == [(4, 3, 2), (3,), (3,)]
    same_error(lambda lib: lib.nn.BatchNorm1d(3)(lib.ones(2, 3, 4, 5)))


def test_batch_norm_load_state_dict():
    tm = torch.nn.BatchNorm1d(3)
    tm(torch.randn(4, 3))
    em = ember.nn.BatchNorm1d(3)
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert int(em.num_batches_tracked) == 1
    check(em.running_mean, tm.running_mean)


# ---- attention ----------------------------------------------------------------------------------
def _copy(em, tm):
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _param_grads(em, tm):
    for (n, ep), (_, tp) in zip(em.named_parameters(), tm.named_parameters()):
        if tp.grad is None:
            assert ep.grad is None or float(ep.grad.abs().sum()) == 0, n
        else:
            check(ep.grad, tp.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sdpa(rng, dtype):
    q, tq = make_pair((2, 3, 4, 8), dtype, rng)
    k, tk = make_pair((2, 3, 6, 8), dtype, rng, "transposed")
    v, tv = make_pair((2, 3, 6, 8), dtype, rng)
    check(EF.scaled_dot_product_attention(q, k, v), TF.scaled_dot_product_attention(tq, tk, tv))
    mb = rng.random((4, 6)) > 0.3
    mb[:, 0] = True
    check(EF.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(mb)),
          TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(mb)))
    mf = rng.standard_normal((2, 1, 4, 6)).astype(dtype)
    check(EF.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(mf), scale=0.2),
          TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(mf), scale=0.2))
    check(EF.scaled_dot_product_attention(q, k, v, is_causal=True),
          TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True))
    k1, v1 = k[:, :1], v[:, :1]
    check(EF.scaled_dot_product_attention(q, k1, v1, enable_gqa=True),
          TF.scaled_dot_product_attention(tq, tk[:, :1], tv[:, :1], enable_gqa=True))
    mb[1] = False  # a fully masked row gives zeros (PyTorch's safe softmax)
    check(EF.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(mb)),
          TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(mb)))
    same_error(lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.ones(2, 3, 4), lib.ones(2, 5, 4), lib.ones(2, 5, 4).double()))
    same_error(lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.ones(2, 3, 4), lib.ones(2, 5, 4), lib.ones(2, 5, 4), attn_mask=lib.ones(3, 5),
        is_causal=True))
    # dropout keeps shape, p=1 gives zeros
    r = EF.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert float(r.abs().sum()) == 0


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_multihead_attention(rng, batch_first, need_weights, average):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    em = ember.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    assert list(em.state_dict()) == list(tm.state_dict())
    _copy(em, tm)
    shp = (2, 5, 8) if batch_first else (5, 2, 8)
    kshp = (2, 4, 8) if batch_first else (4, 2, 8)
    x, tx = make_pair(shp, "float32", rng)
    m, tmem = make_pair(kshp, "float32", rng)
    kpm = np.zeros((2, 4), dtype=bool)
    kpm[1, 3] = True
    am = rng.standard_normal((5, 4)).astype(np.float32)
    eo = em(x, m, m, key_padding_mask=ember.tensor(kpm), attn_mask=ember.tensor(am),
            need_weights=need_weights, average_attn_weights=average)
    to = tm(tx, tmem, tmem, key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am),
            need_weights=need_weights, average_attn_weights=average)
    check(eo[0], to[0], atol=1e-5, rtol=1e-4)
    if need_weights:
        check(eo[1], to[1], atol=1e-5, rtol=1e-4)
    else:
        assert eo[1] is None and to[1] is None
    eo[0].sum().backward()
    to[0].sum().backward()
    _param_grads(em, tm)
    # self-attention, causal bool mask, unbatched
    cm = np.triu(np.ones((5, 5), dtype=bool), 1)
    xs, txs = (x[0], tx[0]) if batch_first else (x[:, 0], tx[:, 0])
    check(em(xs, xs, xs, attn_mask=ember.tensor(cm))[0],
          tm(txs, txs, txs, attn_mask=torch.tensor(cm))[0], atol=1e-5, rtol=1e-4)


def test_multihead_attention_kdim_bias_kv(rng):
    torch.manual_seed(1)
    tm = torch.nn.MultiheadAttention(8, 4, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True)
    em = ember.nn.MultiheadAttention(8, 4, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True)
    assert list(em.state_dict()) == list(tm.state_dict())
    _copy(em, tm)
    q, tq = make_pair((3, 2, 8), "float64", rng)
    k, tk = make_pair((4, 2, 6), "float64", rng)
    v, tv = make_pair((4, 2, 5), "float64", rng)
    check(em.double()(q, k, v)[0], tm.double()(tq, tk, tv)[0])
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        ember.nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("norm_first,activation,batch_first", [
    (False, "relu", False), (True, "gelu", True)])
def test_transformer_layers(rng, norm_first, activation, batch_first):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.0, activation=activation, norm_first=norm_first,
              batch_first=batch_first)
    tl = torch.nn.TransformerEncoderLayer(8, 2, **kw)
    el = ember.nn.TransformerEncoderLayer(8, 2, **kw)
    assert list(el.state_dict()) == list(tl.state_dict())
    _copy(el, tl)
    x, tx = make_pair((2, 5, 8) if batch_first else (5, 2, 8), "float32", rng)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[0, 4] = True
    eo = el(x, src_key_padding_mask=ember.tensor(kpm))
    to = tl(tx, src_key_padding_mask=torch.tensor(kpm))
    check(eo, to, atol=1e-5, rtol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    _param_grads(el, tl)
    td = torch.nn.TransformerDecoderLayer(8, 2, **kw)
    ed = ember.nn.TransformerDecoderLayer(8, 2, **kw)
    assert list(ed.state_dict()) == list(td.state_dict())
    _copy(ed, td)
    y, ty = make_pair((2, 3, 8) if batch_first else (3, 2, 8), "float32", rng)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(3)
    emask = ember.nn.Transformer.generate_square_subsequent_mask(3)
    check(emask, mask)
    check(ed(y, x, tgt_mask=emask), td(ty, tx, tgt_mask=mask), atol=1e-5, rtol=1e-4)


def test_transformer(rng):
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
              dim_feedforward=16, dropout=0.0)
    tm = torch.nn.Transformer(**kw)
    em = ember.nn.Transformer(**kw)
    assert list(em.state_dict()) == list(tm.state_dict())
    _copy(em, tm)
    src, tsrc = make_pair((5, 2, 8), "float32", rng)
    tgt, ttgt = make_pair((4, 2, 8), "float32", rng)
    eo = em(src, tgt, tgt_mask=em.generate_square_subsequent_mask(4))
    to = tm(tsrc, ttgt, tgt_mask=tm.generate_square_subsequent_mask(4))
    check(eo, to, atol=1e-5, rtol=1e-4)
    eo.sum().backward()
    to.sum().backward()
    _param_grads(em, tm)
    same_error(lambda lib: lib.nn.Transformer(**kw)(lib.ones(5, 2, 8), lib.ones(4, 3, 8)))
    same_error(lambda lib: lib.nn.TransformerEncoderLayer(8, 2, activation="tanh"))


def test_transformer_encoder_eval_padding(rng):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    el = ember.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8)).eval()
    em = ember.nn.TransformerEncoder(el, 2, norm=ember.nn.LayerNorm(8)).eval()
    _copy(em, tm)
    x, tx = make_pair((2, 5, 8), "float32", rng)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[0, 3:] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            to = tm(tx, src_key_padding_mask=torch.tensor(kpm))
    with ember.no_grad():
        eo = em(x, src_key_padding_mask=ember.tensor(kpm))
    check(eo, to, atol=1e-5, rtol=1e-4)
    with pytest.warns(UserWarning, match="self.use_nested_tensor is False because encoder_layer"):
        ember.nn.TransformerEncoder(ember.nn.TransformerEncoderLayer(8, 2, 16), 1)
