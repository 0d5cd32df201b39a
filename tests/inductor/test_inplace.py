"""In-place pointwise ops compiled into kernels (lowering.lower_inplace).

`x.mul_(2)` on a graph input, or on a value the graph made, becomes a kernel of its out-of-place
twin whose output is x's own memory. Everything eager's order implies must hold: a value computed
from x before the write keeps the old value (CSE must not merge it with one computed after), a
view of x read after the write sees the new value, the caller's tensor is the one written and its
version counter moves once per op. Run with numba's kernels and with the NumPy generator (the
numba-absent path).
"""
import pytest

import ember
import ember._dynamo as dynamo
from ember._inductor import runtime


@pytest.fixture(autouse=True, params=["numba", "numpy"])
def backend(request, monkeypatch):
    if request.param == "numba" and not runtime.have_numba():
        pytest.skip("numba is not installed")
    if request.param == "numpy":
        monkeypatch.setattr(runtime, "have_numba", lambda: False)
    dynamo.reset()
    yield request.param
    dynamo.reset()


def _check(fn, *make, calls=3):
    """fn compiled with backend="inductor" against eager, on fresh inputs per call: results,
    the inputs' values afterwards and their versions."""
    c = ember.compile(fn, backend="inductor")
    for _ in range(calls):
        a = [m() for m in make]
        b = [t.clone() for t in a]
        ra, rb = fn(*a), c(*b)
        ra = ra if isinstance(ra, tuple) else (ra,)
        rb = rb if isinstance(rb, tuple) else (rb,)
        for x, y in zip(ra, rb):
            assert ember.equal(x, y), (x, y)
        for x, y in zip(a, b):
            assert ember.equal(x, y)
            assert x._version == y._version
    assert c.eager_reason is None
    return c


def _src(c):
    return c.entries[0].root.fn.source


def _vec():
    return ember.arange(6, dtype=ember.float32) * 0.5 - 1


def test_write_to_input_is_a_kernel():
    def f(x, y):
        x.mul_(2).add_(y, alpha=0.5)
        return x + 1
    c = _check(f, _vec, _vec)
    fn = c.entries[0].root.fn
    assert fn.externs == 0, fn.source
    assert "mul_.Tensor" in fn.source and "_bump_version()" in fn.source


def test_value_before_write_keeps_old_value():
    def f(x):
        a = x * 2
        x.add_(1)
        b = x * 2           # same expression as a, new value: not merged
        return a, b, a + x
    _check(f, _vec)


def test_view_read_after_write_sees_new_value():
    def f(x):
        v = x[:3]
        x.mul_(3)
        return v + 0, x.sum()
    _check(f, _vec)


def test_write_to_graph_value_and_optimizer_ops():
    def f(p, g, m, s):
        m.lerp_(g, 0.1)
        s.mul_(0.999).addcmul_(g, g, value=0.001)
        d = s.sqrt()
        d.div_(0.5).add_(1e-8)
        p.addcdiv_(m, d, value=-0.01)
        return p
    c = _check(f, _vec, lambda: _vec().flip(0), lambda: _vec() * 0.1, lambda: _vec().abs())
    assert c.entries[0].root.fn.externs == 0, _src(c)


def test_adam_step_equals_eager_bit_for_bit(train_step):
    g = ember.Generator().manual_seed(0)
    x, y = ember.randn(8, 5, generator=g), ember.randint(0, 3, (8,), generator=g)
    runs = []
    for compiled in (False, True):
        ember.manual_seed(0)
        m = ember.nn.Sequential(ember.nn.Linear(5, 7), ember.nn.Tanh(), ember.nn.Linear(7, 3))
        opt = ember.optim.AdamW(m.parameters(), lr=1e-2)

        step = train_step(m, opt)
        fn = ember.compile(step, backend="inductor") if compiled else step
        losses = [fn(x, y).item() for _ in range(6)]
        runs.append((losses, m, opt))
        if compiled:
            assert fn.entries[0].root.fn.externs == 0, fn.entries[0].root.fn.source
    (l0, m0, o0), (l1, m1, o1) = runs
    assert l0 == l1
    for p, q in zip(m0.parameters(), m1.parameters()):
        assert ember.equal(p, q)
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert ember.equal(o0.state[p][k], o1.state[q][k]), k


def test_view_read_after_write_through_a_closed_kernel():
    # the view's reader ends in a reduction (its kernel is emitted early): it still runs after the write
    def f(x):
        v = x[:3]
        x.mul_(3)
        w = (v + 1).sum()
        return w, x * 2
    _check(f, _vec)


def test_same_shape_view_read_after_write():
    def f(x):
        v = x.view(2, 3).view(6)
        x.add_(1)
        return v * 2 + x
    _check(f, _vec)


def test_write_through_an_extern_view_bumps_the_base():
    def f(x):
        y = x.view(2, 3)         # returned: the dispatcher's view, sharing x's version counter
        y.mul_(2)
        return y, x + 1
    _check(f, _vec)
