"""ember.utils (torch.utils): data, checkpoint, hooks, backend registration."""
import importlib

from ember.utils import backend_registration  # noqa: F401
from ember.utils.backend_registration import (generate_methods_for_privateuse1_backend,  # noqa: F401
                                              rename_privateuse1_backend)

_SUBMODULES = ("checkpoint", "data", "hooks")


def __getattr__(name):
    # `import ember` then ember.utils.checkpoint works as in torch, without importing every helper
    if name in _SUBMODULES:
        return importlib.import_module(f"ember.utils.{name}")
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
