"""torch.utils._python_dispatch: TorchDispatchMode and the mode stack.

A mode's __torch_dispatch__(func, types, args, kwargs) sees every aten op called while it is active
(the Python key, ember/dispatch/python_key.py): below Autograd, so a training step shows its backward
ops too. While it runs, the mode is popped: its own calls to `func` reach the next mode or the kernels.
"""
import contextlib

from ember.core import tls
from ember.dispatch import python_key as _pk


class TorchDispatchMode:
    def __init__(self, _dispatch_key=None):
        self._dispatch_key = _dispatch_key

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _pk.push_dispatch_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        mode = _pk.pop_dispatch_mode()
        if mode is not self:
            raise AssertionError("dispatch modes exited out of order")

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False


def _get_current_dispatch_mode():
    modes = tls.current().dispatch_modes
    return modes[-1] if modes else None


def _get_current_dispatch_mode_stack():
    return list(tls.current().dispatch_modes)


def _len_torch_dispatch_stack():
    return len(tls.current().dispatch_modes)


def _push_mode(mode):
    _pk.push_dispatch_mode(mode)


def _pop_mode(k=None):
    return _pk.pop_dispatch_mode()


@contextlib.contextmanager
def _pop_mode_temporarily(k=None):
    mode = _pk.pop_dispatch_mode()
    try:
        yield mode
    finally:
        _pk.push_dispatch_mode(mode)


@contextlib.contextmanager
def _disable_current_modes():
    popped = []
    while tls.current().dispatch_modes:
        popped.append(_pk.pop_dispatch_mode())
    try:
        yield list(reversed(popped))
    finally:
        for m in reversed(popped):
            _pk.push_dispatch_mode(m)


def is_in_torch_dispatch_mode(include_infra_modes=True):
    return bool(tls.current().dispatch_modes)


def is_traceable_wrapper_subclass(t):
    """A subclass made with _make_wrapper_subclass that says how to flatten itself."""
    from ember.core.tensor_impl import TensorImpl
    return isinstance(t, TensorImpl) and type(t)._py_keys & _pk.PYTHON != 0 and hasattr(t, "__tensor_flatten__")
