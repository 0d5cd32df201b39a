"""ember.utils (torch.utils): data, checkpoint, hooks, backend registration."""
import importlib

_SUBMODULES = ("checkpoint", "data", "hooks", "backend_registration")


def __getattr__(name):
    # `import ember` then ember.utils.checkpoint works as in torch, without importing every helper
    if name in _SUBMODULES:
        return importlib.import_module(f"ember.utils.{name}")
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
