"""fractional_max_pool2d / 3d (functional and modules) against torch 2.13: after the same seed the
random windows, values, indices and gradients are torch's exactly; errors use torch's texts."""
import numpy as np
import pytest
import torch

import ember
from harness import same_error

CASES = [
    (2, (2, 3, 7, 9), 2, (3, 4), None, False, "float32"),
    (2, (2, 3, 7, 9), (2, 3), (5, 6), None, False, "float32"),
    (2, (3, 10, 11), 3, None, (0.5, 0.5), False, "float32"),      # unbatched, by ratio
    (2, (2, 3, 7, 9), 2, (3, 4), None, True, "float32"),          # NaNs: the last one wins
    (2, (2, 3, 17, 19), 2, (9, 10), None, False, "float64"),
    (2, (1, 2, 8, 8), 2, (1, 1), None, False, "float32"),
    (3, (2, 2, 6, 7, 8), 2, (3, 4, 5), None, False, "float32"),
    (3, (2, 6, 7, 8), (2, 3, 2), (2, 3, 4), None, False, "float32"),
    (3, (1, 2, 9, 9, 9), 3, None, 0.5, False, "float32"),
    (3, (1, 2, 9, 9, 9), 2, (4, 5, 6), None, True, "float64"),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_torch_bit_for_bit(case):
    nd, shape, k, out, ratio, nan, dtype = case
    x = np.random.default_rng(len(shape) * 7 + k if isinstance(k, int) else 5).standard_normal(shape).astype(dtype)
    if nan:
        x.reshape(-1)[::7] = np.nan
    res = {}
    for lib in (ember, torch):
        xx = lib.tensor(x, requires_grad=True)
        lib.manual_seed(3)
        f = lib.nn.functional.fractional_max_pool2d if nd == 2 else lib.nn.functional.fractional_max_pool3d
        y, i = f(xx, k, output_size=out, output_ratio=ratio, return_indices=True)
        (y * lib.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
        res[lib] = (y.detach().numpy(), i.numpy(), xx.grad.numpy(), type(y.grad_fn).__name__, i.dtype)
    e, t = res[ember], res[torch]
    np.testing.assert_array_equal(e[0], t[0])
    np.testing.assert_array_equal(e[1], t[1])
    np.testing.assert_array_equal(e[2], t[2])
    assert e[3] == t[3] and str(e[4]).split(".")[-1] == str(t[4]).split(".")[-1]


def test_modules_and_explicit_samples():
    x = np.random.default_rng(1).standard_normal((2, 3, 10, 10)).astype("float32")
    s = np.random.default_rng(2).random((2, 3, 2)).astype("float32")
    outs = {}
    for lib in (ember, torch):
        m = lib.nn.FractionalMaxPool2d(3, output_ratio=0.5, _random_samples=lib.tensor(s))
        m3 = lib.nn.FractionalMaxPool3d(2, output_size=(2, 2, 3), return_indices=True)
        lib.manual_seed(0)
        outs[lib] = (m(lib.tensor(x)).numpy(), m3(lib.tensor(x.reshape(2, 3, 5, 4, 5)))[1].numpy(),
                     sorted(dict(m.named_buffers())))
    for a, b in zip(outs[ember], outs[torch]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert ember.nn.modules.pooling.FractionalMaxPool3d is ember.nn.FractionalMaxPool3d


def test_errors():
    F2 = lambda lib, *a, **k: lib.nn.functional.fractional_max_pool2d(*a, **k)  # noqa: E731
    same_error(lambda lib: F2(lib, lib.randn(2, 3, 7, 9), 2))
    same_error(lambda lib: F2(lib, lib.randn(2, 3, 7, 9), 3, output_size=(6, 8)))
    same_error(lambda lib: F2(lib, lib.randn(2, 3, 7, 9), 2, output_ratio=(1.5, 0.5)))
    same_error(lambda lib: F2(lib, lib.randn(2, 3, 7, 9), 2, output_size=(3, 4),
                              _random_samples=lib.rand(2, 3, 3)))
    same_error(lambda lib: F2(lib, lib.randn(2, 3, 7, 9).long(), 2, output_size=(3, 4)))
    same_error(lambda lib: F2(lib, lib.randn(2, 3, 7, 9), 2, output_ratio=0.5))   # torch: a float has no len()
    same_error(lambda lib: lib.nn.functional.fractional_max_pool3d(lib.randn(1, 1, 4, 4, 4), 2))
    same_error(lambda lib: lib.nn.functional.fractional_max_pool3d(lib.randn(1, 1, 4, 4, 4), 2, output_size=3))
    same_error(lambda lib: lib.nn.FractionalMaxPool2d(2))
    same_error(lambda lib: lib.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5))
    same_error(lambda lib: lib.nn.FractionalMaxPool2d(2, output_ratio=1.5))
