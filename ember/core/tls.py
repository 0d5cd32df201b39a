"""Thread-local dispatch state: included and excluded key sets (c10/core/impl/LocalDispatchKeySet)."""
import threading

from ember.core.keys import AUTOCAST_MASK


class _State(threading.local):
    # Autocast keys sit on every tensor but are excluded until an autocast region lifts them,
    # as in PyTorch: the key-set OR stays one operation and no tensor is touched on entry.
    included = 0
    excluded = AUTOCAST_MASK
    grad_enabled = True
    inference_mode = False
    anomaly = False
    anomaly_check_nan = True
    saved_hooks = ()       # stack of (pack, unpack) from saved_tensors_hooks
    # Autograd keys the backward engine added to `excluded` while it runs with grad mode off: the
    # formulas' ops then skip the Autograd layer. Whatever turns grad mode on inside backward
    # (enable_grad, set_grad_enabled, a create_graph backward) lifts them for its scope.
    bw_excluded = 0

    def __init__(self):
        self.device_stack = []


state = _State()


class ExcludeKeys:
    """with ExcludeKeys(mask): keys in mask are skipped by every dispatch in this thread."""
    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask

    def __enter__(self):
        self.prev = state.excluded
        state.excluded = self.prev | self.mask

    def __exit__(self, *a):
        state.excluded = self.prev


def lift_backward_exclusion(st=state):
    """Grad mode is turning on: give the Autograd keys back to dispatch. Returns the lifted mask
    (0 when none), for restore_backward_exclusion."""
    m = st.bw_excluded
    if m:
        st.bw_excluded = 0
        st.excluded &= ~m
    return m


def restore_backward_exclusion(m, st=state):
    if m:
        st.excluded |= m
        st.bw_excluded = m


class IncludeKeys:
    __slots__ = ("mask", "prev_inc", "prev_exc")

    def __init__(self, mask):
        self.mask = mask

    def __enter__(self):
        self.prev_inc, self.prev_exc = state.included, state.excluded
        state.included = self.prev_inc | self.mask
        state.excluded = self.prev_exc & ~self.mask

    def __exit__(self, *a):
        state.included, state.excluded = self.prev_inc, self.prev_exc
