"""ember.nn.modules: every layer class.

Each file of this package (except those whose name starts with "_") is imported here in name order
after module.py and container.py, and the names in its `__all__` become attributes of
ember.nn.modules and of ember.nn. A new layer family (conv.py, pooling.py, normalization.py,
loss.py, rnn.py, transformer.py, ...) needs only its file with an `__all__`: nothing here changes.
"""
import importlib as _importlib
import os as _os

from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.modules.container import (Container, ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                                        ParameterList, Sequential)

__all__ = ["Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]


def _load_all():
    here = _os.path.dirname(_os.path.abspath(__file__))
    g = globals()
    first = ("module.py", "container.py")
    files = sorted(f for f in _os.listdir(here)
                   if f.endswith(".py") and not f.startswith("_") and f not in first)
    for fname in first + tuple(files):
        mod = _importlib.import_module(f"{__name__}.{fname[:-3]}")
        for n in getattr(mod, "__all__", ()):
            if n.startswith("register_module_") or n == "RemovableHandle":
                continue  # module.py's hook functions are ember.nn.modules.module.*
            g[n] = getattr(mod, n)
            if n not in __all__:
                __all__.append(n)


_load_all()
