"""ember.linalg, ember.special, ember.fft: the generated functions of a python_module plus the
hand-written ones that ember/_python_api places on the same module object."""
import sys
import types

from ember._generated import functions_fft, functions_linalg, functions_special

_GENERATED = {"linalg": functions_linalg, "special": functions_special, "fft": functions_fft}


def make(name):
    full = f"ember.{name}"
    mod = sys.modules.get(full) or types.ModuleType(full)
    gen = _GENERATED[name]
    for n in gen.__all__:
        setattr(mod, n, getattr(gen, n))
    sys.modules[full] = mod
    return mod
