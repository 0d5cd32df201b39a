"""Gradients of the spatial nn ops against torch (first and second order), gradcheck, node names."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from autograd_harness import compare_grads
from harness import make_pair

import ember
import ember.nn.functional as EF


def F(lib):
    return EF if lib is ember else TF


def tol(dtype):
    return {"atol": 1e-4, "rtol": 1e-4} if dtype == "float32" else {}


# ---- convolution ------------------------------------------------------------------------------------
CONV = [
    ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv1d", (3, 7), (4, 3, 2), dict(padding="same")),
    ("conv2d", (2, 3, 6, 5), (4, 3, 3, 2), dict(padding=1)),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)),
    ("conv2d", (3, 5, 5), (3, 1, 3, 3), dict(groups=3, padding=1, stride=2)),
    ("conv3d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=1)),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 2), dict(groups=2, dilation=3, padding=1, stride=2, output_padding=1)),
    ("conv_transpose2d", (2, 4, 4, 3), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                                          dilation=(1, 2), groups=2)),
    ("conv_transpose2d", (2, 3, 3), (2, 2, 2, 2), dict(stride=2)),
    ("conv_transpose3d", (1, 2, 3, 2, 3), (2, 2, 2, 2, 2), dict(stride=(2, 1, 1), output_padding=(1, 0, 0))),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("case", range(len(CONV)))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_conv_grads(case, dtype, rng):
    name, xs, ws, kw = CONV[case]
    ex, tx = make_pair(xs, dtype, rng, "transposed" if case % 2 else "contiguous")
    ew, tw = make_pair(ws, dtype, rng, "strided" if case % 3 == 0 else "contiguous")
    nb = ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]
    eb, tb = make_pair((nb,), dtype, rng)
    compare_grads(lambda lib, x, w, b: getattr(F(lib), name)(x, w, b, **kw), [ex, ew, eb], [tx, tw, tb],
                  second_order=(dtype == "float64" or case < 3), **tol(dtype))


def test_conv_partial_requires_grad(rng):
    ex, tx = make_pair((2, 3, 6, 5), "float64", rng)
    ew, tw = make_pair((4, 3, 3, 2), "float64", rng)
    for which in (0, 1):
        e_in = [ex.detach().requires_grad_(which == 0), ew.detach().requires_grad_(which == 1)]
        t_in = [tx.detach().requires_grad_(which == 0), tw.detach().requires_grad_(which == 1)]
        eo, to = ember.conv2d(*e_in, padding=1), torch.conv2d(*t_in, padding=1)
        g = np.random.default_rng(1).standard_normal(tuple(to.shape))
        eo.backward(ember.tensor(g))
        to.backward(torch.tensor(g))
        ea, ta = e_in[which].grad, t_in[which].grad
        np.testing.assert_allclose(ea.numpy(), ta.numpy(), rtol=1e-10, atol=1e-10)
        assert e_in[1 - which].grad is None


def test_conv_complex_grads(rng):
    ex, tx = make_pair((2, 3, 5, 4), "complex128", rng)
    ew, tw = make_pair((4, 3, 2, 2), "complex128", rng)
    compare_grads(lambda lib, x, w: lib.conv2d(x, w, padding=1), [ex, ew], [tx, tw], second_order=False)


def test_conv_triple_backward(rng):
    """create_graph through ConvolutionBackwardBackward0 (all three of convolution_backward's grads)."""
    outs = []
    for lib in (ember, torch):
        g = np.random.default_rng(3)
        x = lib.tensor(g.standard_normal((1, 2, 4, 4)), requires_grad=True)
        w = lib.tensor(g.standard_normal((3, 2, 2, 2)), requires_grad=True)
        y = lib.conv2d(x, w, padding=1)
        (gx,) = lib.autograd.grad(y.pow(2).sum(), (x,), create_graph=True)
        (gw,) = lib.autograd.grad(gx.pow(2).sum(), (w,), create_graph=True)
        (gx2,) = lib.autograd.grad(gw.sum(), (x,))
        outs.append((gx, gw, gx2))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-9)


# ---- pooling ------------------------------------------------------------------------------------------
POOL = [
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    ("max_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool2d", (3, 6, 6), dict(kernel_size=2, stride=1)),                      # overlapping
    ("max_pool3d", (1, 2, 4, 5, 4), dict(kernel_size=2, stride=(1, 2, 1), padding=1)),
    ("avg_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (3, 6, 5), dict(kernel_size=2, stride=1, divisor_override=3)),
    ("avg_pool3d", (1, 2, 4, 5, 4), dict(kernel_size=2, stride=(1, 2, 1), padding=1)),
    ("adaptive_avg_pool1d", (2, 3, 9), dict(output_size=4)),
    ("adaptive_avg_pool2d", (2, 3, 7, 6), dict(output_size=(3, 4))),
    ("adaptive_avg_pool2d", (3, 7, 6), dict(output_size=1)),
    ("adaptive_max_pool1d", (2, 3, 9), dict(output_size=4)),
    ("adaptive_max_pool2d", (2, 3, 7, 6), dict(output_size=(3, 4))),
    ("lp_pool2d", (2, 3, 6, 6), dict(norm_type=2, kernel_size=2)),
]


@pytest.mark.parametrize("case", range(len(POOL)))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pool_grads(case, dtype, rng):
    name, shape, kw = POOL[case]
    ex, tx = make_pair(shape, dtype, rng, "strided" if case % 2 else "contiguous")
    compare_grads(lambda lib, x: getattr(F(lib), name)(x, **kw), [ex], [tx], **tol(dtype))


# ---- embedding ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 1}, {"padding_idx": -2, "scale_grad_by_freq": True},
                                {"max_norm": 1.0}])
def test_embedding_grads(kw, rng):
    ew, tw = make_pair((7, 3), "float64", rng)
    idx = np.array([[1, 2, 1, 5], [6, 1, 0, 5]])
    compare_grads(lambda lib, w, i: F(lib).embedding(i, w, **kw), [ew, ember.tensor(idx)],
                  [tw, torch.tensor(idx)])


@pytest.mark.parametrize("kw", [dict(mode="sum"), dict(mode="mean", padding_idx=2),
                                dict(mode="max", include_last_offset=True), dict(mode="sum", psw=True),
                                dict(mode="mean", scale_grad_by_freq=True)])
def test_embedding_bag_grads(kw, rng):
    kw = dict(kw)
    ew, tw = make_pair((7, 3), "float64", rng)
    idx = np.array([1, 2, 1, 5, 6, 2, 0, 5, 2])
    off = np.array([0, 3, 3, 6])
    e_in, t_in = [ew, ember.tensor(idx), ember.tensor(off)], [tw, torch.tensor(idx), torch.tensor(off)]
    if kw.pop("psw", False):
        ep, tp = make_pair((9,), "float64", rng)
        e_in.append(ep)
        t_in.append(tp)
    compare_grads(lambda lib, w, i, o, *p: F(lib).embedding_bag(
        i, w, o, per_sample_weights=p[0] if p else None, **kw), e_in, t_in, second_order=False)


# ---- padding, interpolation, fold/unfold, pixel shuffle --------------------------------------------------
PADS = [((2, 3, 6), (2, 3)), ((3, 5), (1, -2)), ((2, 3, 5, 6), (1, 2, 3, 0)), ((3, 4, 5), (-1, 2, 2, -1)),
        ((1, 2, 3, 4, 5), (1, 1, 2, 0, 0, 2))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", range(len(PADS)))
def test_pad_grads(mode, case, rng):
    shape, p = PADS[case]
    ex, tx = make_pair(shape, "float64", rng, "transposed")
    compare_grads(lambda lib, x: F(lib).pad(x, p, mode=mode), [ex], [tx])
    names = [F(lib).pad(x.detach().requires_grad_(), p, mode=mode).grad_fn.name() for lib, x in
             ((ember, ex), (torch, tx))]
    assert names[0] == names[1]


INTERP = [
    ((2, 3, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 7), dict(size=4, mode="nearest-exact")),
    ((2, 3, 5), dict(scale_factor=1.7, mode="linear")),
    ((2, 3, 5), dict(size=3, mode="linear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="nearest-exact")),
    ((1, 2, 6, 5), dict(scale_factor=(1.7, 0.45), mode="bilinear")),
    ((1, 2, 3, 4), dict(size=(5, 7), mode="bilinear", align_corners=True)),
    ((1, 2, 6, 5), dict(size=(4, 3), mode="area")),
]


@pytest.mark.parametrize("case", range(len(INTERP)))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_interpolate_grads(case, dtype, rng):
    shape, kw = INTERP[case]
    ex, tx = make_pair(shape, dtype, rng, "transposed" if case % 2 else "contiguous")
    compare_grads(lambda lib, x: F(lib).interpolate(x, **kw), [ex], [tx], **tol(dtype))


def test_fold_unfold_grads(rng):
    ex, tx = make_pair((2, 3, 6, 5), "float64", rng)
    kw = dict(kernel_size=(3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
    compare_grads(lambda lib, x: F(lib).unfold(x, **kw), [ex], [tx])
    ec, tc = make_pair(tuple(TF.unfold(tx, **kw).shape), "float64", rng)
    compare_grads(lambda lib, c: F(lib).fold(c, (6, 5), **kw), [ec], [tc])


def test_pixel_shuffle_grads(rng):
    ex, tx = make_pair((2, 8, 3, 4), "float64", rng, "transposed")
    compare_grads(lambda lib, x: F(lib).pixel_shuffle(x, 2), [ex], [tx])
    compare_grads(lambda lib, x: F(lib).pixel_unshuffle(x.reshape(2, 2, 6, 8), 2), [ex], [tx])


# ---- node names (first and second order) ----------------------------------------------------------
NAMED = [
    # (input shape, fn)
    ((2, 4, 4, 4), lambda lib, x: F(lib).conv2d(x, x[:3, :, :2, :2] * 1, padding=1)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).conv_transpose2d(x, x[:, :, :2, :2].transpose(0, 1) * 1)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).max_pool2d(x, 2)),
    ((2, 4, 4), lambda lib, x: F(lib).max_pool1d(x, 2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).max_pool3d(x, 2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).avg_pool2d(x, 2)),
    ((2, 4, 4), lambda lib, x: F(lib).avg_pool1d(x, 2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).avg_pool3d(x, 2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).adaptive_avg_pool2d(x, 3)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).adaptive_avg_pool2d(x, 1)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).adaptive_max_pool2d(x, 3)),
    ((2, 4, 4), lambda lib, x: F(lib).adaptive_max_pool1d(x, 3)),
    ((5, 4), lambda lib, x: F(lib).embedding(lib.tensor([1, 2]), x)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).pad(x, (1, 1, 2, 0), mode="reflect")),
    ((2, 4, 4), lambda lib, x: F(lib).pad(x, (1, 1), mode="reflect")),
    ((1, 2, 4, 4, 4), lambda lib, x: F(lib).pad(x, (1, 1, 2, 0, 1, 1), mode="reflect")),
    ((2, 4, 4, 4), lambda lib, x: F(lib).pad(x, (1, 1, 2, 0), mode="replicate")),
    ((2, 4, 4), lambda lib, x: F(lib).pad(x, (1, 1), mode="replicate")),
    ((1, 2, 4, 4, 4), lambda lib, x: F(lib).pad(x, (1, 1, 2, 0, 1, 1), mode="replicate")),
    ((2, 4, 4, 4), lambda lib, x: F(lib).interpolate(x, scale_factor=2)),
    ((2, 4, 4), lambda lib, x: F(lib).interpolate(x, scale_factor=2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="nearest-exact")),
    ((2, 4, 4), lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="nearest-exact")),
    ((2, 4, 4, 4), lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="bilinear")),
    ((2, 4, 4), lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode="linear")),
    ((2, 4, 4, 4), lambda lib, x: F(lib).unfold(x, 2)),
    ((2, 8, 4), lambda lib, x: F(lib).fold(x, 3, 2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).pixel_shuffle(x, 2)),
    ((2, 4, 4, 4), lambda lib, x: F(lib).pixel_unshuffle(x, 2)),
]


@pytest.mark.parametrize("case", range(len(NAMED)))
def test_node_names(case, rng):
    shape, fn = NAMED[case]
    ex, tx = make_pair(shape, "float64", rng)
    names = []
    for lib, x in ((ember, ex), (torch, tx)):
        x = x.detach().requires_grad_()
        y = fn(lib, x)
        (g,) = lib.autograd.grad(y, (x,), lib.ones_like(y), create_graph=True)
        gf = g.grad_fn
        names.append((y.grad_fn.name(), None if gf is None else gf.name()))
    if len(shape) == 3 and "fold" not in names[1][0] and "Upsample" not in names[1][0] \
            and "Pad" not in names[1][0]:
        # the 1-d poolings' double-backward node is UnsqueezeBackward0's formula's (shape family)
        names = [n[:1] for n in names]
    assert names[0] == names[1]


def test_gradcheck(rng):
    g = np.random.default_rng(5)
    x = ember.tensor(g.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = ember.tensor(g.standard_normal((3, 2, 2, 3)), requires_grad=True)
    b = ember.tensor(g.standard_normal(3), requires_grad=True)
    fns = [lambda x, w, b: EF.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
           lambda x, w, b: EF.conv_transpose2d(x, w.transpose(0, 1), b, stride=2, output_padding=1),
           lambda x, w, b: EF.max_pool2d(x, 2, 1) * b.sum(),
           lambda x, w, b: EF.interpolate(x, size=(7, 3), mode="bilinear") + b.sum(),
           lambda x, w, b: EF.pad(x, (1, 2, 2, 1), mode="reflect") * w.sum()]
    for f in fns:
        assert ember.autograd.gradcheck(f, (x, w, b))
        assert ember.autograd.gradgradcheck(f, (x, w, b))
