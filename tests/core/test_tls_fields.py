"""The thread-local fields the hot path reads once per call: `dk` = (included, ~excluded) for the
bindings and `ag` (0 grad off, 1 on, 2 on with saved-tensor hooks or anomaly mode) for the
generated Autograd kernels. Every way to change the underlying state must keep them in step, per
thread."""
import threading

import pytest

import ember
from ember.core import tls
from ember.core.keys import AUTOCAST_MASK, AUTOGRAD_MASK

st = tls.state


def consistent():
    inc, keep = st.dk
    return st.included == inc and st.excluded == ~keep


def test_defaults():
    assert st.dk == (0, ~AUTOCAST_MASK) and st.included == 0 and st.excluded == AUTOCAST_MASK
    assert st.ag == 1 and st.grad_enabled and not st.anomaly and st.saved_hooks == ()


def test_key_masks_follow_every_writer():
    before = st.dk
    st.excluded = st.excluded | 4
    assert consistent() and st.excluded & 4
    st.excluded = st.excluded & ~4
    st.included = 8
    assert consistent() and st.dk[0] == 8
    st.included = 0
    assert st.dk == before
    with tls.ExcludeKeys(AUTOGRAD_MASK):
        assert consistent() and st.excluded & AUTOGRAD_MASK == AUTOGRAD_MASK
        x = ember.ones(2, requires_grad=True) * 2
        assert x.grad_fn is None  # the Autograd layer is skipped
    assert st.dk == before
    with tls.IncludeKeys(AUTOCAST_MASK):
        assert consistent() and st.included & AUTOCAST_MASK and not st.excluded & AUTOCAST_MASK
    assert st.dk == before
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert consistent()
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.bfloat16
    assert st.dk == before
    with ember.inference_mode():
        assert consistent() and st.ag == 0
    assert st.dk == before and st.ag == 1


def test_autograd_mode_follows_grad_hooks_and_anomaly():
    with ember.no_grad():
        assert st.ag == 0
        with ember.enable_grad():
            assert st.ag == 1
        assert st.ag == 0
    ember.set_grad_enabled(False)
    assert st.ag == 0
    ember.set_grad_enabled(True)
    assert st.ag == 1
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert st.ag == 2
        with ember.no_grad():
            assert st.ag == 0
        assert st.ag == 2
    assert st.ag == 1
    with pytest.warns(UserWarning, match="Anomaly Detection"), ember.autograd.detect_anomaly():
        assert st.ag == 2
    ember.autograd.set_detect_anomaly(True)
    assert st.ag == 2
    ember.autograd.set_detect_anomaly(False)
    assert st.ag == 1


def test_backward_restores_both_fields():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    before = st.dk
    seen = []
    b = a * 3
    b.register_hook(lambda g: seen.append((st.ag, st.dk == before)))
    (b * b).sum().backward()
    assert seen == [(0, False)]  # grad mode off, Autograd keys excluded inside backward
    assert st.ag == 1 and st.dk == before
    with ember.no_grad():
        (a * 2).sum()
    c = (a * a).sum()
    c.backward(create_graph=True)
    assert st.ag == 1 and st.dk == before and a.grad.grad_fn is not None


def test_fields_are_per_thread():
    seen = {}

    def worker():
        mine = tls.current()  # before the thread's first access: the default, which finds its state
        seen["dk"], seen["ag"] = mine.dk, mine.ag
        with ember.no_grad():
            seen["inner"] = mine.ag
        seen["same"] = tls.current() is tls.state and tls.current() is not st

    with ember.no_grad(), tls.ExcludeKeys(AUTOGRAD_MASK):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert st.ag == 0
    assert seen == {"dk": (0, ~AUTOCAST_MASK), "ag": 1, "inner": 0, "same": True}


def test_a_thread_that_writes_first_gets_its_own_state():
    seen = []

    def worker():
        ember.set_grad_enabled(False)  # the first touch is a write, through the context's default
        seen.append((ember.is_grad_enabled(), tls.current().ag))
        ember.set_grad_enabled(True)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [(False, 0)] and st.ag == 1 and ember.is_grad_enabled()


def test_every_context_of_a_thread_shares_its_state():
    """A copied context (an asyncio task, a notebook cell) sees and changes its thread's state, as a
    thread-local does in PyTorch."""
    import asyncio
    import contextvars

    async def task():
        ember.set_grad_enabled(False)
        return tls.current() is st

    try:
        assert asyncio.run(task()) is True
        assert not ember.is_grad_enabled()  # the task's change is the thread's
    finally:
        ember.set_grad_enabled(True)
    assert contextvars.Context().run(lambda: tls.current().ag) == 1  # an empty context: same state
    assert contextvars.Context().run(lambda: tls.state) is st
