"""torch.histogram / torch.histogramdd / Tensor.histogram against torch 2.13: counts, edges,
weights, density, ranges, explicit bin tensors, edge cases and errors."""
import numpy as np
import pytest
import torch

import ember
from harness import same_error


def _pair(fn):
    out = {}
    for lib in (ember, torch):
        out[lib] = fn(lib)
    return out[ember], out[torch]


def _same(e, t, exact=True):
    assert type(e).__name__ == type(t).__name__
    if exact:
        np.testing.assert_array_equal(e.hist.numpy(), t.hist.numpy())
    else:  # density divides by the total, whose summation order can differ in the last bit
        np.testing.assert_allclose(e.hist.numpy(), t.hist.numpy(), rtol=3e-7, atol=0)
    ee = e.bin_edges if isinstance(e.bin_edges, tuple) else (e.bin_edges,)
    te = t.bin_edges if isinstance(t.bin_edges, tuple) else (t.bin_edges,)
    assert len(ee) == len(te)
    for a, b in zip(ee, te):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert str(e.hist.dtype).split(".")[-1] == str(t.hist.dtype).split(".")[-1]


X = np.random.default_rng(0).standard_normal(200).astype(np.float32)
X[5] = 10.0
XN = X.copy()
XN[::17] = np.nan    # NaN is ignored when a range is given (without one, the range is NaN: an error)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(bins=4), dict(bins=7, range=(-1.0, 1.0)), dict(bins=5, density=True),
                                dict(bins=3, weight=True), dict(bins=6, range=(0.0, 2.0), density=True, weight=True),
                                dict(bins="tensor"), dict(bins="tensor", density=True)])
def test_histogram(kw, dtype):
    def f(lib):
        k = dict(kw)
        x = lib.tensor((XN if "range" in k else X).astype(dtype)).reshape(20, 10)
        if k.get("weight"):
            k["weight"] = lib.tensor(np.abs(X).astype(dtype) % 3).reshape(20, 10)
        if k["bins"] == "tensor":
            k["bins"] = lib.tensor([-2.0, -0.5, 0.0, 0.1, 3.0], dtype=getattr(lib, dtype))
        return lib.histogram(x, **k)
    _same(*_pair(f), exact=not kw.get("density"))


def test_edge_cases_and_method():
    _same(*_pair(lambda lib: lib.histogram(lib.tensor([3.0, 3.0]), 3)))             # widened by 0.5
    _same(*_pair(lambda lib: lib.histogram(lib.tensor([]), 3)))                    # [0, 1]
    _same(*_pair(lambda lib: lib.histogram(lib.tensor([1.0, 2.0]), lib.tensor([3.0, 1.0]))))
    _same(*_pair(lambda lib: lib.tensor([1.0, 2, 1, 4, 2.5, 3, 7]).histogram(4)))
    _same(*_pair(lambda lib: lib.histogram(lib.linspace(0, 1, 11), 10)))          # values on the edges


@pytest.mark.parametrize("kw", [dict(bins=[3, 4]), dict(bins=2, range=[0.0, 1.0, -1.0, 1.0], density=True),
                                dict(bins="tensors"), dict(bins=[2, 5], weight=True)])
def test_histogramdd(kw):
    a = np.random.default_rng(1).standard_normal((6, 5, 2)).astype(np.float32)

    def f(lib):
        k = dict(kw)
        if k["bins"] == "tensors":
            k["bins"] = [lib.tensor([-1.0, 0.0, 1.0]), lib.tensor([-3.0, 0.5, 1.0, 3.0])]
        if k.get("weight"):
            k["weight"] = lib.tensor(np.arange(30, dtype=np.float32).reshape(6, 5))
        return lib.histogramdd(lib.tensor(a), **k)
    _same(*_pair(f), exact=not kw.get("density"))


def test_errors():
    x = np.random.default_rng(2).random((5, 2)).astype(np.float32)
    same_error(lambda lib: lib.histogram(lib.tensor([1, 2]), 3))
    same_error(lambda lib: lib.histogram(lib.tensor([1.0, float("nan")]), 3))
    same_error(lambda lib: lib.histogram(lib.tensor(x), 0))
    same_error(lambda lib: lib.histogram(lib.tensor(x), 3, range=(5.0, 1.0)))
    same_error(lambda lib: lib.histogram(lib.tensor(x), 3, range=(0.0, float("inf"))))
    same_error(lambda lib: lib.histogram(lib.tensor(x), 3, weight=lib.ones(3)))
    same_error(lambda lib: lib.histogram(lib.tensor(x).double(), 3, weight=lib.ones(10)))
    same_error(lambda lib: lib.histogram(lib.tensor(x), lib.tensor([[0.0, 1.0]])))
    same_error(lambda lib: lib.histogram(lib.tensor(x), lib.tensor([0.0, 1.0]).double()))
    same_error(lambda lib: lib.histogramdd(lib.rand(5), 3))
    same_error(lambda lib: lib.histogramdd(lib.tensor(x), [2, 3, 4]))
    same_error(lambda lib: lib.histogramdd(lib.tensor(x), 2, range=[0.0, 1.0]))
    same_error(lambda lib: lib.histogramdd(lib.tensor(x), 2, weight=lib.ones(5, 2)))

