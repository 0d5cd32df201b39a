"""Hand-written parts of the public API that are not one schema each (torch/functional.py and
the Python-only helpers of torch/_tensor.py): each module lists its functions in `__all__`
(exported as ember.<name>) and may give Tensor methods in `METHODS` (attached over generated ones)."""
import importlib
import pkgutil

MODULES = [importlib.import_module(f"{__name__}.{m.name}")
           for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)]


def exported():
    out = {}
    for m in MODULES:
        for n in getattr(m, "__all__", ()):
            out[n] = getattr(m, n)
    return out


def methods():
    out = {}
    for m in MODULES:
        out.update(getattr(m, "METHODS", {}))
    return out
