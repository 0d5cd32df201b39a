"""Thread-local dispatch state: included and excluded key sets (c10/core/impl/LocalDispatchKeySet).

Each thread has one _State; `current()` returns this thread's. The hot path calls it once per op, so
it is a context variable's get (~40 ns) rather than a threading.local attribute read (~150 ns per
read: two per recorded op, 3.5% of a small training step). The context variable only caches the
thread's state: the first access in a thread (or in a context made before the thread had one)
finds it in a threading.local and puts it in the context, so every context of a thread shares its
thread's state, as PyTorch's thread-local state does. One difference: a context copied in one
thread and run in another (asyncio.to_thread) carries the first thread's state with it."""
import contextvars
import threading

from ember.core.keys import AUTOCAST_MASK


class _State:
    """One thread's dispatch state. Every field is set on the instance in __init__ (CPython 3.11
    reads an instance attribute faster than a class one through the instance)."""

    def __init__(self):
        # The dispatch masks in one field, dk = (included, ~excluded): a call's key set is
        # (tensor keys | dk[0]) & dk[1], one read of this thread's state per call. `included` and
        # `excluded` are properties over it. Autocast keys sit on every tensor but are excluded
        # until an autocast region lifts them, as in PyTorch: the key-set OR stays one operation
        # and no tensor is touched on entry.
        self.dk = (0, ~AUTOCAST_MASK)
        # What the generated Autograd kernels need, in one field (one read per recorded op):
        #   0: grad mode off; 1: on; 2: on, with saved-tensor hooks or anomaly mode (the slow paths)
        # grad_enabled, saved_hooks and anomaly are properties that keep it in step.
        self.ag = 1
        self._grad = True
        self._hooks = ()  # stack of (pack, unpack) from saved_tensors_hooks
        self._anomaly = False
        self.inference_mode = False
        self.anomaly_check_nan = True
        # Autograd keys the backward engine added to `excluded` while it runs with grad mode off:
        # the formulas' ops then skip the Autograd layer. Whatever turns grad mode on inside
        # backward (enable_grad, set_grad_enabled, a create_graph backward) lifts them for its scope.
        self.bw_excluded = 0
        # the user's __torch_dispatch__ and __torch_function__ modes, innermost last
        # (ember/dispatch/python_key.py)
        self.dispatch_modes = ()
        self.function_modes = ()
        self.device_stack = []
        self.autocast = None  # ember.amp's per-thread autocast settings, made on first use

    @property
    def included(self):
        return self.dk[0]

    @included.setter
    def included(self, mask):
        self.dk = (mask, self.dk[1])

    @property
    def excluded(self):
        return ~self.dk[1]

    @excluded.setter
    def excluded(self, mask):
        self.dk = (self.dk[0], ~mask)

    def _set_ag(self):
        self.ag = (2 if self._hooks or self._anomaly else 1) if self._grad else 0

    @property
    def grad_enabled(self):
        return self._grad

    @grad_enabled.setter
    def grad_enabled(self, on):
        self._grad = on
        self.ag = (2 if self._hooks or self._anomaly else 1) if on else 0  # _set_ag(), inlined

    @property
    def saved_hooks(self):
        return self._hooks

    @saved_hooks.setter
    def saved_hooks(self, hooks):
        self._hooks = hooks
        self._set_ag()

    @property
    def anomaly(self):
        return self._anomaly

    @anomaly.setter
    def anomaly(self, on):
        self._anomaly = on
        self._set_ag()


class _Unset:
    """The context variable's value where this thread's state is not in the context yet: any
    attribute read or write finds (or makes) the thread's state, puts it in the context and goes
    there."""
    __slots__ = ()

    def __getattr__(self, name):
        return getattr(_this_thread(), name)

    def __setattr__(self, name, value):
        setattr(_this_thread(), name, value)


_threads = threading.local()
# _Unset holds nothing (every access goes to the thread's state), so one shared default is safe
_var = contextvars.ContextVar("ember_dispatch_state", default=_Unset())  # noqa: B039
current = _var.get  # current().dk: this thread's state, one C call


def _this_thread():
    try:
        s = _threads.state
    except AttributeError:
        s = _threads.state = _State()
    _var.set(s)
    return s


def __getattr__(name):
    if name == "state":  # tls.state: this thread's state, as the name read before current() existed
        return _this_thread()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_this_thread()  # the importing thread's state, in the importing context


class ExcludeKeys:
    """with ExcludeKeys(mask): keys in mask are skipped by every dispatch in this thread."""
    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask

    def __enter__(self):
        st = current()
        self.prev = d = st.dk
        st.dk = (d[0], d[1] & ~self.mask)

    def __exit__(self, *a):
        current().dk = self.prev


def lift_backward_exclusion(st=None):
    """Grad mode is turning on: give the Autograd keys back to dispatch. Returns the lifted mask
    (0 when none), for restore_backward_exclusion."""
    st = st or current()
    m = st.bw_excluded
    if m:
        st.bw_excluded = 0
        st.excluded &= ~m
    return m


def restore_backward_exclusion(m, st=None):
    if m:
        st = st or current()
        st.excluded |= m
        st.bw_excluded = m


class IncludeKeys:
    __slots__ = ("mask", "prev")

    def __init__(self, mask):
        self.mask = mask

    def __enter__(self):
        st = current()
        self.prev = d = st.dk
        st.dk = (d[0] | self.mask, d[1] | self.mask)

    def __exit__(self, *a):
        current().dk = self.prev
