"""ember.nn.modules: every layer class.

Each file of this package (except those whose name starts with "_") is imported here in name order
after module.py and container.py, and the names in its `__all__` become attributes of
ember.nn.modules and of ember.nn. A new layer family (conv.py, pooling.py, normalization.py,
loss.py, rnn.py, transformer.py, ...) needs only its file with an `__all__`: nothing here changes.
ember.nn is imported while `import ember` runs, so module-level code of a layer file must not read
attributes of the ember package (look them up inside functions); a file that fails to import is
skipped with a RuntimeWarning rather than breaking `import ember`.
"""
import importlib as _importlib
import os as _os
import warnings as _warnings

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
        try:
            mod = _importlib.import_module(f"{__name__}.{fname[:-3]}")
        except Exception as e:  # a broken family must not break `import ember`
            if fname in first:
                raise
            _warnings.warn(f"ember.nn.modules: {fname} failed to import ({type(e).__name__}: "
                           f"{e}); its layers are missing", RuntimeWarning, stacklevel=2)
            continue
        for n in getattr(mod, "__all__", ()):
            if n.startswith("register_module_") or n == "RemovableHandle":
                continue  # module.py's hook functions are ember.nn.modules.module.*
            g[n] = getattr(mod, n)
            if n not in __all__:
                __all__.append(n)


_load_all()
