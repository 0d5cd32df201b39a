"""Compiled equals eager on the op database: every op_db entry, on each of its samples (ordinary,
0-d, zero-size, broadcast, transposed, strided, expanded) in its first dtype, gives eager's values,
dtype, shape and strides when compiled (the capturing call and a replayed call), with
backend="eager" and "aot_eager"; ops with a gradient give eager's gradients through the compiled
function in float64 (the aot_eager path runs them as one CompiledFunction node)."""
import warnings

import pytest
from opdb import materialize, op_db, op_ids

import ember
import ember._dynamo as dynamo


def _leaves(r):
    if isinstance(r, ember.Tensor):
        return [r]
    if isinstance(r, (list, tuple)):
        out = []
        for e in r:
            out.extend(_leaves(e))
        return out
    return []


def _same(a, b):
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    if not la:
        assert a == b or (a != a and b != b)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert x.stride() == y.stride(), (x.stride(), y.stride())
        if x.numel():
            xx, yy = x.detach(), y.detach()
            assert bool(((xx == yy) | ((xx != xx) & (yy != yy))).all()), (x, y)


def _call(op, kw):
    def fn(*a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return op.op(ember, *a, **kw)
    return fn


@pytest.mark.parametrize("op", op_db, ids=op_ids(op_db))
def test_compiled_equals_eager(op):
    dtype = "float32" if "float32" in op.dtypes else op.dtypes[0]
    for backend in ("eager", "aot_eager"):
        for i, sample in enumerate(op.sample_inputs(dtype)):
            ea, _, ek, _ = materialize(sample, dtype, seed=i)
            fn = _call(op, ek)
            try:
                ref = fn(*ea)
            except Exception as e:
                err = e
                c = ember.compile(fn, backend=backend)
                with pytest.raises(type(err)):
                    c(*materialize(sample, dtype, seed=i)[0])
                continue
            c = ember.compile(fn, backend=backend)
            for _ in range(2):   # the capturing call, then a replay
                args = materialize(sample, dtype, seed=i)[0]
                _same(c(*args), ref)
    dynamo.reset()


GRAD_OPS = [op for op in op_db if op.supports_autograd and "float64" in op.grad_dtypes]


@pytest.mark.parametrize("op", GRAD_OPS, ids=op_ids(GRAD_OPS))
def test_compiled_grads_equal_eager(op):
    samples = op.grad_samples("float64")
    for i, sample in enumerate(samples[:3]):
        ea, _, ek, _ = materialize(sample, "float64", seed=i)
        pos = [k for k, x in enumerate(ea) if isinstance(x, ember.Tensor) and x.dtype.is_floating_point]
        if not pos:
            continue
        fn = _call(op, ek)

        def grads(f):
            args = list(materialize(sample, "float64", seed=i)[0])
            xs = [args[k].detach().clone().requires_grad_() for k in pos]
            for k, x in zip(pos, xs):
                args[k] = x
            out = [o for o in _leaves(f(*args)) if o.dtype.is_floating_point and o.requires_grad]
            if not out:
                return None
            loss = sum((o * (ember.arange(o.numel(), dtype=o.dtype).view(o.shape) % 3 + 1)).sum() for o in out)
            return ember.autograd.grad(loss, xs, allow_unused=True)
        try:
            ref = grads(fn)
        except Exception:
            continue
        if ref is None:
            continue
        c = ember.compile(fn, backend="aot_eager")
        for _ in range(2):
            got = grads(c)
            for g, r in zip(got, ref):
                assert (g is None) == (r is None)
                if g is not None:
                    assert g.shape == r.shape and g.dtype == r.dtype
                    assert ember.allclose(g, r, rtol=1e-10, atol=1e-12, equal_nan=True), (op.name, g, r)
    dynamo.reset()
