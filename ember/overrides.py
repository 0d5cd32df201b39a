"""torch.overrides: __torch_function__ for Tensor subclasses, objects that are not Tensors (fx's Proxy),
and TorchFunctionMode.

A mode's __torch_function__(func, types, args, kwargs) sees the public function (`ember.add`) of every
op called while it is active (the PythonTorchFunction key, ember/dispatch/python_key.py); it is popped
while it runs.
"""
from ember.core import tls
from ember.core.tensor_impl import TensorImpl
from ember.dispatch import python_key as _pk


class TorchFunctionMode:
    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _pk.push_function_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        mode = _pk.pop_function_mode()
        if mode is not self:
            raise AssertionError("torch function modes exited out of order")

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


def _get_current_function_mode():
    modes = tls.current().function_modes
    return modes[-1] if modes else None


def _get_current_function_mode_stack():
    return list(tls.current().function_modes)


def _relevant(args):
    """Arguments (in lists and tuples too) whose type overrides __torch_function__, one per type."""
    seen, out = set(), []
    stack = list(args)
    while stack:
        a = stack.pop(0)
        if isinstance(a, (list, tuple)):
            stack[:0] = list(a)
            continue
        t = type(a)
        if t in seen:
            continue
        if isinstance(a, TensorImpl):
            if getattr(t, "_py_keys", 0) & _pk.TORCH_FUNCTION:
                seen.add(t)
                out.append(a)
        elif hasattr(t, "__torch_function__") and not isinstance(a, type):
            seen.add(t)
            out.append(a)
    return out


def has_torch_function(relevant_args):
    return bool(_relevant(relevant_args)) or bool(tls.current().function_modes)


def has_torch_function_unary(a):
    return has_torch_function((a,))


def has_torch_function_variadic(*args):
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the __torch_function__ of the innermost mode, then of each overriding argument type
    (subclasses first), until one does not return NotImplemented."""
    overloaded = _relevant(relevant_args)
    types = tuple(type(a) for a in overloaded)
    if tls.current().function_modes:
        mode = _pk.pop_function_mode()
        try:
            r = mode.__torch_function__(public_api, types, args, kwargs)
        finally:
            _pk.push_function_mode(mode)
        if r is not NotImplemented:
            return r
    for a in sorted(overloaded, key=lambda a: -len(type(a).__mro__)):
        tf = type(a).__torch_function__
        r = tf(public_api, types, args, kwargs)
        if r is not NotImplemented:
            return r
    name = getattr(public_api, "__name__", repr(public_api))
    raise TypeError(f"no implementation found for '{getattr(public_api, '__module__', 'ember')}.{name}' on types "
                    f"that implement __torch_function__: {[type(a) for a in overloaded]}")


def is_tensor_like(inp):
    return isinstance(inp, TensorImpl) or hasattr(type(inp), "__torch_function__")


def get_default_nowrap_functions():
    return set()


def enable_reentrant_dispatch():
    import contextlib
    return contextlib.nullcontext()
