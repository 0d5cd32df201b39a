"""A graph with a symbolic size, compiled with backend="inductor".

Each new size is first checked by a capturing run (eval_frame's automatic dynamic shapes); the
inductor then compiles the graph at that size from that run's trace (compile_fx.BySize), so later
calls at it run fused kernels, not the symbolic replay through the dispatcher. The static graph
compiled at the first size keeps serving it. Sizes past BySize.limit are replayed.
"""
import pytest

import ember
import ember._dynamo as dynamo
from ember._inductor import compile_fx


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    yield
    dynamo.reset()


def f(x, w):
    return ember.tanh(x * 2 + 1).sum(1) * w


def test_checked_sizes_run_compiled_graphs():
    c = ember.compile(f, backend="inductor")
    w = ember.tensor(0.5)
    sizes = (10, 11, 12, 11, 10, 13)
    for n in sizes:
        x = ember.randn(n, 4)
        assert ember.allclose(c(x, w), f(x, w), atol=1e-6)
    (e,) = c.entries
    fn = e.root.fn
    assert isinstance(fn, compile_fx.BySize)
    assert sorted(fn.fns) == [10, 11, 12, 13]
    assert all(g.kernels >= 1 for g in fn.fns.values())
    calls = []
    for n in sizes:   # served by the compiled graph of its size, never the symbolic replay
        fn.generic, orig = (lambda *a: calls.append(a)), fn.generic
        x = ember.randn(n, 4)
        assert ember.allclose(c(x, w), f(x, w), atol=1e-6)
        fn.generic = orig
    assert calls == [] and c.n_compiles == 2


def test_sizes_past_the_limit_replay(monkeypatch):
    monkeypatch.setattr(compile_fx.BySize, "limit", 2)
    c = ember.compile(f, backend="inductor")
    w = ember.tensor(2.0)
    for n in (5, 6, 7, 8, 7):
        x = ember.randn(n, 3)
        assert ember.allclose(c(x, w), f(x, w), atol=1e-6)
    assert sorted(c.entries[0].root.fn.fns) == [5, 6]
