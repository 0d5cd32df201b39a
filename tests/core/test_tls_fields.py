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
        seen["dk"], seen["ag"] = st.dk, st.ag
        with ember.no_grad():
            seen["inner"] = st.ag

    with ember.no_grad(), tls.ExcludeKeys(AUTOGRAD_MASK):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert st.ag == 0
    assert seen == {"dk": (0, ~AUTOCAST_MASK), "ag": 1, "inner": 0}
