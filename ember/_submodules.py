"""ember.linalg, ember.special, ...: generated functions of a python_module plus hand-written ones."""
import importlib
import sys
import types


def make(name):
    full = f"ember.{name}"
    mod = sys.modules.get(full) or types.ModuleType(full)
    try:
        gen = importlib.import_module(f"ember._generated.functions_{name.replace('.', '_')}")
        for n in gen.__all__:
            setattr(mod, n, getattr(gen, n))
    except ImportError:
        pass
    sys.modules[full] = mod
    return mod
