"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local, decorators too)."""
import functools

from ember.core import tls
from ember.core.keys import AUTOGRAD_MASK, keyset, DispatchKey as K

_state = tls.current
_lift, _restore = tls.lift_backward_exclusion, tls.restore_backward_exclusion
_INFERENCE_EXCLUDED = AUTOGRAD_MASK | keyset(K.ADInplaceOrView)


def is_grad_enabled():
    return _state().grad_enabled


def is_inference_mode_enabled():
    return _state().inference_mode


class _DecoratorContextManager:
    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError("grad mode decorators apply to functions, not classes")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = _state().grad_enabled
        _state().grad_enabled = False

    def __exit__(self, *a):
        _state().grad_enabled = self.prev


class enable_grad(_DecoratorContextManager):
    def __enter__(self):
        self.prev = _state().grad_enabled
        _state().grad_enabled = True
        self.lifted = _lift(_state()) if _state().bw_excluded else 0

    def __exit__(self, *a):
        _state().grad_enabled = self.prev
        if self.lifted:
            _restore(self.lifted, _state())


class set_grad_enabled(_DecoratorContextManager):
    def __init__(self, mode):
        self.mode = bool(mode)
        self.prev = _state().grad_enabled
        _state().grad_enabled = self.mode  # takes effect as a function call too
        self.lifted = _lift(_state()) if self.mode and _state().bw_excluded else 0

    def __enter__(self):
        pass

    def __exit__(self, *a):
        _state().grad_enabled = self.prev
        if self.lifted:
            _restore(self.lifted, _state())

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and also skips the ADInplaceOrView layer: no version counter bumps."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (_state().grad_enabled, _state().inference_mode, _state().excluded)
        if self.mode:
            _state().grad_enabled = False
            _state().inference_mode = True
            _state().excluded = self.prev[2] | _INFERENCE_EXCLUDED

    def __exit__(self, *a):
        _state().grad_enabled, _state().inference_mode, _state().excluded = self.prev

    def clone(self):
        return inference_mode(self.mode)


class set_multithreading_enabled(_DecoratorContextManager):
    """Accepted for torch's API. ember's engine runs backward on the calling thread in every mode,
    so there is nothing to switch."""

    def __init__(self, mode):
        self.mode = bool(mode)

    def __enter__(self):
        pass

    def __exit__(self, *a):
        pass

    def clone(self):
        return set_multithreading_enabled(self.mode)
