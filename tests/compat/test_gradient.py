"""torch.gradient against torch 2.13: OpInfo samples (float32, int64 values, float64/complex128 gradients),
uniform and coordinate spacing, both edge orders, dims, and the error texts."""
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error


def test_opinfo():
    (op,) = opinfos(names={"gradient"})
    assert run_samples(op, torch.float32, atol=1e-5, rtol=1e-5)
    assert run_samples(op, torch.int64)
    assert run_samples(op, torch.float64, grad=True)
    assert run_samples(op, torch.complex128, grad=True)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_spacings(edge_order):
    t = torch.randn(4, 5, 3, dtype=torch.float64)
    e = ember.tensor(t.numpy())
    cases = [{}, {"spacing": 2.5}, {"spacing": [0.5, 2.0, 3.0]}, {"dim": 1}, {"dim": (2, 0), "spacing": [1.5, 2]},
             {"dim": -1, "spacing": (torch.tensor([0.0, 0.5, 2.0], dtype=torch.float64),)},
             {"spacing": [torch.tensor([0.0, 1, 3, 7], dtype=torch.float64), torch.tensor([0.0, 1, 2, 4, 5],
                                                                                        dtype=torch.float64),
                          torch.tensor([1.0, 1.5, 3.5], dtype=torch.float64)]}]
    for kw in cases:
        ekw = {k: ([ember.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for v in val]
                   if isinstance(val, (list, tuple)) else val) for k, val in kw.items()}
        if "dim" in kw and not isinstance(kw.get("spacing"), (list, tuple)):
            ekw["dim"] = kw["dim"]
        for a, b in zip(ember.gradient(e, edge_order=edge_order, **ekw), torch.gradient(t, edge_order=edge_order, **kw)):
            check(a, b)
    assert ember.gradient(ember.tensor(1.0)) == ()


def test_errors():
    x = [[1.0, 2.0, 4.0, 8.0], [10.0, 20.0, 40.0, 100.0]]
    same_error(lambda lib: lib.gradient(lib.tensor(x), edge_order=3))
    same_error(lambda lib: lib.gradient(lib.ones(2), edge_order=2))
    same_error(lambda lib: lib.gradient(lib.tensor(x), spacing=[1.0, 2.0, 3.0]))
    same_error(lambda lib: lib.gradient(lib.tensor(x), dim=(0, 0)))
