"""F.affine_grid and F.grid_sample against torch: values and gradients (input, grid, theta), warnings, errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from tests.harness import check, same_error

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
TOL = {"float32": dict(atol=1e-5, rtol=1e-5), "float64": dict(atol=1e-10, rtol=1e-10)}


def _grid_points(rng, shape, dtype):
    """Points inside, exactly on (+-1, 0) and outside the [-1, 1] borders, and far outside."""
    g = rng.uniform(-1.6, 1.6, shape)
    special = [-1.0, 1.0, 0.0, 1.0, -1.0, -1.0, 1.0, 1.0, -7.3, 9.1]
    flat = g.reshape(-1)
    flat[:len(special)] = special[:flat.size]
    return g.astype(dtype)


def _pair(a, requires_grad=True):
    return ember.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _compare_sample(in_shape, grid_shape, dtype, rng, **kw):
    a = rng.standard_normal(in_shape).astype(dtype)
    ei, ti = _pair(a)
    eg, tg = _pair(_grid_points(rng, grid_shape, dtype))
    eo = ember.nn.functional.grid_sample(ei, eg, **kw)
    to = torch.nn.functional.grid_sample(ti, tg, **kw)
    check(eo, to.detach(), **TOL[dtype])
    w = rng.standard_normal(tuple(to.shape)).astype(dtype)
    (eo * ember.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    check(ei.grad, ti.grad, **TOL[dtype])
    check(eg.grad, tg.grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_2d(mode, padding_mode, align_corners, dtype, rng):
    _compare_sample((2, 3, 4, 5), (2, 3, 6, 2), dtype, rng, mode=mode, padding_mode=padding_mode,
                    align_corners=align_corners)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, padding_mode, align_corners, dtype, rng):
    _compare_sample((2, 2, 3, 4, 5), (2, 2, 3, 4, 3), dtype, rng, mode=mode, padding_mode=padding_mode,
                    align_corners=align_corners)


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_unit_spatial_dims(mode, padding_mode, align_corners, rng):
    # a one-pixel axis: reflect_coordinates' empty span (align_corners=True) and far-away points
    _compare_sample((1, 2, 1, 3), (1, 5, 3, 2), "float64", rng, mode=mode, padding_mode=padding_mode,
                    align_corners=align_corners)


@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_half_pixel_ties(mode, rng):
    # points landing on x.5 pixel positions: nearest rounds half to even (nearbyint)
    a = rng.standard_normal((1, 2, 4, 4))
    steps = np.arange(-1.5, 1.51, 0.25)
    g = np.stack(np.meshgrid(steps, steps), -1)[None]
    for padding_mode in PADDINGS:
        for align_corners in (True, False):
            ei, ti = _pair(a)
            eg, tg = _pair(g)
            kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
            eo = ember.nn.functional.grid_sample(ei, eg, **kw)
            to = torch.nn.functional.grid_sample(ti, tg, **kw)
            check(eo, to.detach())
            eo.sum().backward()
            to.sum().backward()
            check(ei.grad, ti.grad)
            check(eg.grad, tg.grad)


def test_grid_sample_non_contiguous_and_empty(rng):
    a = rng.standard_normal((2, 5, 4, 3))
    g = _grid_points(rng, (2, 2, 3, 2), "float64")
    e = ember.nn.functional.grid_sample(ember.tensor(a).transpose(2, 3), ember.tensor(g).transpose(1, 2),
                                        align_corners=False)
    t = torch.nn.functional.grid_sample(torch.tensor(a).transpose(2, 3), torch.tensor(g).transpose(1, 2),
                                        align_corners=False)
    check(e, t)
    for in_shape, grid_shape in [((0, 2, 3, 3), (0, 2, 2, 2)), ((1, 0, 3, 3), (1, 2, 2, 2)),
                                 ((1, 2, 3, 3), (1, 0, 2, 2)), ((1, 2, 3, 3, 3), (1, 2, 0, 2, 3))]:
        e = ember.nn.functional.grid_sample(ember.zeros(in_shape), ember.zeros(grid_shape), align_corners=True)
        t = torch.nn.functional.grid_sample(torch.zeros(in_shape), torch.zeros(grid_shape), align_corners=True)
        check(e, t)


def test_grid_sample_grad_of_grid_only(rng):
    # nearest depends on grid only through indices, yet grid gets (zero) gradients as in torch
    a = rng.standard_normal((1, 1, 3, 3))
    eg, tg = _pair(_grid_points(rng, (1, 2, 2, 2), "float64"))
    eo = ember.nn.functional.grid_sample(ember.tensor(a), eg, mode="nearest", align_corners=False)
    to = torch.nn.functional.grid_sample(torch.tensor(a), tg, mode="nearest", align_corners=False)
    assert eo.requires_grad and to.requires_grad
    eo.sum().backward()
    to.sum().backward()
    check(eg.grad, tg.grad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 2, 3, 1, 4), (2, 1, 2, 3, 4)])
def test_affine_grid(size, align_corners, dtype, rng):
    k = len(size) - 2
    et, tt = _pair(rng.standard_normal((size[0], k, k + 1)).astype(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unit-size warning is tested below
        e = ember.nn.functional.affine_grid(et, size, align_corners=align_corners)
        t = torch.nn.functional.affine_grid(tt, size, align_corners=align_corners)
    check(e, t.detach(), **TOL[dtype])
    w = rng.standard_normal(tuple(t.shape)).astype(dtype)
    (e * ember.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    check(et.grad, tt.grad, **TOL[dtype])


def test_affine_grid_then_grid_sample(rng):
    et, tt = _pair(rng.standard_normal((2, 2, 3)) * 0.7)
    ei, ti = _pair(rng.standard_normal((2, 3, 5, 4)))
    for lib, theta, inp in ((ember, et, ei), (torch, tt, ti)):
        grid = lib.nn.functional.affine_grid(theta, [2, 3, 6, 7], align_corners=False)
        lib.nn.functional.grid_sample(inp, grid, mode="bicubic", padding_mode="reflection",
                                      align_corners=False).pow(2).sum().backward()
    check(et.grad, tt.grad)
    check(ei.grad, ti.grad)


def _warning_texts(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


def test_warnings():
    cases = [
        lambda L: L.nn.functional.grid_sample(L.zeros(1, 1, 2, 2), L.zeros(1, 1, 1, 2)),
        lambda L: L.nn.functional.affine_grid(L.zeros(1, 2, 3), (1, 1, 2, 2)),
        lambda L: L.nn.functional.affine_grid(L.zeros(1, 2, 3), (1, 1, 1, 3), align_corners=True),
        lambda L: L.nn.functional.affine_grid(L.zeros(1, 3, 4), (1, 1, 2, 1, 3), align_corners=True),
    ]
    for fn in cases:
        texts = _warning_texts(lambda: fn(ember))
        assert texts and texts == _warning_texts(lambda: fn(torch))


@pytest.mark.parametrize("fn", [
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.rand(3, 2, 2, 2), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.rand(2, 2, 2, 3), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3, 3), L.rand(2, 2, 2, 2, 2), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.rand(2, 2, 2, 2, 2), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3), L.rand(2, 2, 1), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3, 3), L.rand(2, 2, 2, 3), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 0, 3), L.rand(2, 2, 2, 2), align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3, 3), L.rand(2, 2, 2, 2, 3), mode="bicubic",
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3, 3), L.rand(3, 2, 2, 2, 3), mode="bicubic",
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.rand(2, 2, 2, 2), mode="linear",
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.rand(2, 2, 2, 2), padding_mode="edge",
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.rand(2, 2, 2, 2, dtype=L.float64),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.rand(2, 1, 3, 3), L.zeros(2, 2, 2, 2, dtype=L.int64),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.zeros(2, 1, 3, 3, dtype=L.int64), L.rand(2, 2, 2, 2),
                                          align_corners=False),
    lambda L: L.nn.functional.grid_sample(L.zeros(2, 1, 3, 3, 3, dtype=L.int64), L.rand(2, 2, 2, 2, 3),
                                          align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.rand(2, 2, 3), (2, 1, 3), align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.rand(2, 2, 3), (2, 1, 3, 3, 3, 3), align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.rand(2, 2, 3), (2, 1, 0, 3), align_corners=False),
    lambda L: L.nn.functional.affine_grid(L.rand(2, 2, 3), (2, -1, 3, 3), align_corners=True),
    lambda L: L.nn.functional.affine_grid(L.rand(2, 2, 3), (3, 1, 4, 3), align_corners=False),
])
def test_errors(fn):
    same_error(fn)


@pytest.mark.parametrize("theta_shape, size, k", [((2, 2, 4), (2, 1, 3, 3), 2), ((2, 2, 3), (2, 1, 3, 3, 3), 3),
                                                  ((2, 3), (2, 1, 3, 3), 2)])
def test_theta_shape_errors(theta_shape, size, k):
    # the message shows theta.shape, whose repr names the library (torch.Size / ember.Size)
    same_error(lambda L: L.nn.functional.affine_grid(L.rand(*theta_shape), size, align_corners=False),
               match=f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. Got ")


def test_theta_dtype_error():
    # the message shows theta.dtype (torch.int64 / ember.int64)
    same_error(lambda L: L.nn.functional.affine_grid(L.zeros(2, 2, 3, dtype=L.int64), (2, 1, 3, 3), align_corners=False),
               match="Expected theta to have floating point type, but got ")
