"""torch.nextafter: values (bit-exact), dtypes, broadcasting, layouts, meta, out=, in place,
gradients and errors against torch."""
import numpy as np
import pytest
import torch

import ember
from harness import binary_inputs, check, same_error

FLOATS = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.parametrize("da", FLOATS)
@pytest.mark.parametrize("db", ["float32", "float16", "float64"])
def test_values(rng, da, db):
    for (ea, eb), (ta, tb) in binary_inputs(da, db, rng):
        check(ember.nextafter(ea, eb), torch.nextafter(ta, tb), atol=0, rtol=0)
        check(ea.nextafter(eb), ta.nextafter(tb), atol=0, rtol=0)
        em, tm = ember.nextafter(ea.to("meta"), eb.to("meta")), torch.nextafter(ta.to("meta"), tb.to("meta"))
        assert tuple(em.shape) == tuple(tm.shape) and str(em.dtype)[6:] == str(tm.dtype)[6:]


def test_special_values():
    vals = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38]
    a = np.array([[x] * len(vals) for x in vals], np.float32)
    b = a.T.copy()
    for dt in ("float32", "float64"):
        check(ember.nextafter(ember.from_numpy(a).to(getattr(ember, dt)), ember.from_numpy(b).to(getattr(ember, dt))),
              torch.nextafter(torch.from_numpy(a).to(getattr(torch, dt)), torch.from_numpy(b).to(getattr(torch, dt))),
              atol=0, rtol=0)


def test_out_and_inplace():
    for lib in (torch, ember):
        o = lib.empty(3)
        r = lib.nextafter(lib.ones(3), lib.zeros(3), out=o)
        assert r is o and o.tolist() == torch.nextafter(torch.ones(3), torch.zeros(3)).tolist()
        o64 = lib.empty(3, dtype=lib.float64)
        lib.nextafter(lib.ones(3), lib.zeros(3), out=o64)
        a = lib.ones(3)
        assert a.nextafter_(lib.full((3,), 2.0)) is a and a._version == 1
    e, t = ember.ones(2), torch.ones(2)
    e.nextafter_(ember.zeros(2))
    t.nextafter_(torch.zeros(2))
    check(e, t, atol=0, rtol=0)


def test_gradients():
    r = {}
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([0.0, 2.0, 5.0], dtype=lib.float64, requires_grad=True)
        z = lib.nextafter(x, y)
        assert type(z.grad_fn).__name__ == "NextafterBackward0"
        (z * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
        r[lib.__name__] = (x.grad.tolist(), y.grad.tolist())
    assert r["ember"] == r["torch"]


@pytest.mark.parametrize("call", [
    lambda lib: lib.nextafter(lib.ones(2, dtype=lib.int64), lib.zeros(2, dtype=lib.int64)),
    lambda lib: lib.nextafter(lib.ones(2, dtype=lib.bool), lib.zeros(2, dtype=lib.bool)),
    lambda lib: lib.nextafter(lib.ones(2, dtype=lib.complex64), lib.zeros(2, dtype=lib.complex64)),
    lambda lib: lib.nextafter(lib.ones(2), lib.ones(3)),
    lambda lib: lib.nextafter(lib.ones(2), 0.0),
    lambda lib: lib.nextafter(1.0, lib.ones(3)),
    lambda lib: lib.nextafter(lib.ones(2), lib.zeros(2), out=lib.empty(2, dtype=lib.int64)),
    lambda lib: lib.ones(2, dtype=lib.int32).nextafter_(lib.zeros(2)),
])
def test_errors(call):
    same_error(call)
