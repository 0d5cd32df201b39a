"""A whole training step compiled with backend="inductor" runs as straight-line NumPy.

The step's own loss.backward() consumes the forward's autograd graph, so the compiled step runs
the forward without recording it (capture.Recorder.note_backward / settle_consumed); the
gradients' first copies, zero_grad's `.grad = None` and the loss's CPU kernels run as steps
(ember/_inductor/steps.py) and the SGD update as a kernel, not dispatcher calls. What a caller can still see must
be eager's: the returned loss requires grad and a second backward through it raises eager's
error; where the graph saves nothing (so eager could run it again), or a tensor made after the
backward reads the forward, the forward keeps recording. The optimizer's state guard is written
out per field (guards.GuardBuilder.state_expr) and must accept and reject what the snapshot
comparison did.
"""
import re

import pytest

import ember
import ember._dynamo as dynamo
from ember._dynamo import capture
from ember._dynamo.guards import GuardBuilder

nn = ember.nn
F = nn.functional
SECOND = "Trying to backward through the graph a second time"


@pytest.fixture(autouse=True)
def _reset():
    dynamo.reset()
    yield
    dynamo.reset()


def _setup(sizes=(6, 8, 3), batch=5, momentum=0.0):
    g = ember.Generator().manual_seed(0)
    x, y = ember.randn(batch, sizes[0], generator=g), ember.randint(0, sizes[-1], (batch,), generator=g)
    models = []
    for _ in range(2):
        ember.manual_seed(0)
        m = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]))
        models.append((m, ember.optim.SGD(m.parameters(), lr=0.1, momentum=momentum)))
    return x, y, models


def _step(model, opt, after=None):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss if after is None else after(loss)
    return step


def _fn(compiled):
    (e,) = compiled.entries
    return e.root.fn


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_step_is_straight_line_and_equals_eager(mode):
    x, y, ((m0, o0), (m1, o1)) = _setup()
    eager, comp = _step(m0, o0), ember.compile(_step(m1, o1), backend="inductor", mode=mode)
    for i in range(6):
        a, b = eager(x, y), comp(x, y)
        assert a.item() == b.item(), i
        for p, q in zip(m0.parameters(), m1.parameters()):
            assert ember.equal(p, q) and ember.equal(p.grad, q.grad) and p.grad.stride() == q.grad.stride()
    assert comp.eager_reason is None
    # the steady-state entry (gradients present) is tried first
    fn = comp.entries[0].root.fn
    assert fn.externs == 0, fn.source
    src = fn.source
    for name in ("_acc_grad_clone", "_set_grad_none", "add_.Tensor", "nll_loss_forward_cpu", "nll_loss_backward_cpu",
                 "_freed_history"):
        assert name in src, name
    assert not re.search(r"\baddmm_default\b", src)


def test_returned_loss_keeps_eager_autograd_view():
    x, y, ((m0, o0), (m1, o1)) = _setup()
    eager, comp = _step(m0, o0), ember.compile(_step(m1, o1), backend="inductor")
    for _ in range(3):
        a, b = eager(x, y), comp(x, y)
    assert a.requires_grad and b.requires_grad and not b.is_leaf
    assert b.grad_fn.name() == "CompiledFunctionBackward"
    for t in (a, b):
        with pytest.raises(RuntimeError, match=SECOND):
            t.backward()


def test_tensor_made_after_backward_keeps_recording():
    # `loss * 2` after loss.backward() reads the forward's graph: the forward keeps recording, so
    # the result's grad_fn is eager's and backward through it fails where eager's does
    x, y, ((m0, o0), (m1, o1)) = _setup()

    def twice(t):
        return t * 2
    eager, comp = _step(m0, o0, twice), ember.compile(_step(m1, o1, twice), backend="inductor")
    for _ in range(3):
        a, b = eager(x, y), comp(x, y)
    assert a.item() == b.item()
    assert b.grad_fn.name() == a.grad_fn.name() == "MulBackward0"
    for t in (a, b):
        with pytest.raises(RuntimeError, match=SECOND):
            t.backward()


def test_graph_without_saved_tensors_can_run_again():
    # eager can run a graph that saved nothing a second time: the compiled step keeps it recorded
    ws = [ember.ones(3, requires_grad=True) for _ in range(2)]

    def make(w):
        def step():
            loss = (w + 1).sum()
            loss.backward()
            return loss
        return step
    eager, comp = make(ws[0]), ember.compile(make(ws[1]), backend="inductor")
    for _ in range(3):
        a, b = eager(), comp()
    a.backward()
    b.backward()
    assert ember.equal(ws[0].grad, ws[1].grad) and ws[0].grad[0].item() == 4.0
    assert b.grad_fn.name() == "SumBackward0"


def test_momentum_state_stays_in_step():
    x, y, ((m0, o0), (m1, o1)) = _setup(momentum=0.9)
    eager, comp = _step(m0, o0), ember.compile(_step(m1, o1), backend="inductor", mode="reduce-overhead")
    for i in range(8):
        assert eager(x, y).item() == pytest.approx(comp(x, y).item(), rel=1e-6), i
    for p, q in zip(m0.parameters(), m1.parameters()):
        assert ember.allclose(o0.state[p]["momentum_buffer"], o1.state[q]["momentum_buffer"], atol=1e-6)


class _Obj:
    pass


def _state_check(obj):
    b = GuardBuilder()
    b.add(b.state_expr("L[0]", obj, capture.snapshot(obj)), lambda L: "changed", "OBJECT_STATE")
    return b.build()[0]


def test_state_guard_written_out_matches_snapshot():
    t1, t2 = ember.zeros(2), ember.ones(2)
    o = _Obj()
    o.groups = [{"params": [t1, t2], "lr": 0.1, "nesterov": False, "name": "g"}]
    o.state = {t1: {"step": ember.zeros(()), "buf": t2}}
    o.inner = _Obj()
    o.inner.k = (1, 2.5, None)
    o.tags = {"a", "b"}
    o.fn = len
    check = _state_check(o)
    assert check([o])
    assert "_same(" not in check.source     # written out, not the snapshot comparison

    def changed(mutate, undo):
        mutate()
        try:
            return not check([o])
        finally:
            undo()
    cases = [
        (lambda: o.groups[0].__setitem__("lr", 0.2), lambda: o.groups[0].__setitem__("lr", 0.1)),
        (lambda: o.groups[0].__setitem__("lr", 1), lambda: o.groups[0].__setitem__("lr", 0.1)),
        (lambda: o.groups[0]["params"].append(t1), lambda: o.groups[0]["params"].pop()),
        (lambda: o.groups[0]["params"].__setitem__(1, t1), lambda: o.groups[0]["params"].__setitem__(1, t2)),
        (lambda: o.state[t1].__setitem__("buf", t1), lambda: o.state[t1].__setitem__("buf", t2)),
        (lambda: o.state.__setitem__(t2, {}), lambda: o.state.pop(t2)),
        (lambda: setattr(o.inner, "k", (1, 2.5, 0)), lambda: setattr(o.inner, "k", (1, 2.5, None))),
        (lambda: setattr(o, "extra", 1), lambda: delattr(o, "extra")),
        (lambda: o.tags.add("c"), lambda: o.tags.discard("c")),
        (lambda: setattr(o, "fn", max), lambda: setattr(o, "fn", len)),
    ]
    for k, (mutate, undo) in enumerate(cases):
        assert capture.same_snapshot(capture.snapshot(o), capture.snapshot(o))
        assert changed(mutate, undo), k
        assert check([o]), k


def test_state_guard_of_a_module_holder_falls_back():
    o = _Obj()
    o.model = nn.Linear(2, 2)
    check = _state_check(o)
    assert check([o]) and "_same(" in check.source
    o.model.training = False
    assert not check([o])


def _pair(make):
    """Two copies of the same model/optimizer (eager, compiled) from make()."""
    out = []
    for _ in range(2):
        ember.manual_seed(0)
        out.append(make())
    return out


def _eager_vs_compiled(make, pair0, pair1, x, calls=4):
    """make(model, opt) -> step(x), run eagerly on pair0 and compiled on pair1: after each call the
    losses and parameters agree; yields the two losses of each call."""
    eager, comp = make(*pair0), ember.compile(make(*pair1), backend="inductor")
    for i in range(calls):
        a, b = eager(x), comp(x)
        assert a.item() == pytest.approx(b.item(), rel=1e-6), i
        for p, q in zip(pair0[0].parameters(), pair1[0].parameters()):
            assert ember.allclose(p, q, atol=1e-6), i
        yield a, b


def _lin():
    m = nn.Linear(4, 3)
    return m, ember.optim.SGD(m.parameters(), lr=0.1)


@pytest.mark.parametrize("variant", ["retain_graph", "create_graph", "autograd_grad", "hook", "two_backwards"])
def test_backward_variants_equal_eager(variant):
    g = ember.Generator().manual_seed(1)
    x = ember.randn(5, 4, generator=g)
    (m0, o0), (m1, o1) = _pair(_lin)

    def make(m, opt):
        def step(x):
            opt.zero_grad()
            y = m(x)
            loss = (y * y).mean()
            if variant == "retain_graph":
                loss.backward(retain_graph=True)
            elif variant == "create_graph":
                (gw,) = ember.autograd.grad(loss, m.weight, create_graph=True)
                (gw * gw).sum().backward()
            elif variant == "autograd_grad":
                gw, gb = ember.autograd.grad(loss, (m.weight, m.bias))
                m.weight.grad, m.bias.grad = gw, gb
            elif variant == "hook":
                y.register_hook(lambda gr: gr * 2)
                loss.backward()
            else:
                loss.backward(retain_graph=True)
                (y.sum() * 0.5).backward()
            opt.step()
            return loss
        return step
    for a, b in _eager_vs_compiled(make, (m0, o0), (m1, o1), x):
        assert a.requires_grad == b.requires_grad
        if variant == "retain_graph":
            a.backward()
            b.backward()       # the graph was retained: a second backward works in both
            for p, q in zip(m0.parameters(), m1.parameters()):
                assert ember.allclose(p.grad, q.grad, atol=1e-6)


def test_step_with_graph_break_keeps_recording():
    g = ember.Generator().manual_seed(2)
    x = ember.randn(5, 4, generator=g)
    (m0, o0), (m1, o1) = _pair(_lin)

    def make(m, opt):
        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            if loss.item() > 0:        # a break after the backward
                opt.step()
            return loss
        return step
    for _ in _eager_vs_compiled(make, (m0, o0), (m1, o1), x):
        pass
