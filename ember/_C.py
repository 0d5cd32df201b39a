"""ember._C: the names of torch._C that Python programs reach for directly.

torch._C is PyTorch's compiled extension; ember has none, and keeps here only what user code names
through it: `torch._C._LinAlgError` (the class behind torch.linalg.LinAlgError)."""
from ember.kernels.cpu.linalg import LinAlgError as _LinAlgError

__all__ = ["_LinAlgError"]


# __torch_function__ / __torch_dispatch__ switches (torch._C's names)
from ember.dispatch.python_key import DisableTorchFunctionSubclass  # noqa: E402
from ember.tensor import _disabled_torch_dispatch_impl, _disabled_torch_function_impl  # noqa: E402,F401


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """Modes off too: in ember both live on the one PythonTorchFunction key."""


def _is_torch_function_enabled():
    from ember.dispatch.python_key import torch_function_enabled  # lazy: keep _C's import list short
    return torch_function_enabled()


__all__ += ["DisableTorchFunctionSubclass", "DisableTorchFunction", "_disabled_torch_function_impl",
            "_disabled_torch_dispatch_impl", "_is_torch_function_enabled"]


def _set_grad_enabled(mode):
    """torch._C._set_grad_enabled: grad mode on or off for this thread (what set_grad_enabled calls)."""
    from ember.autograd.grad_mode import set_grad_enabled  # lazy: keep _C's import list short
    set_grad_enabled(mode)


__all__ += ["_set_grad_enabled"]
