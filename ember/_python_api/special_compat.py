"""torch.special.gammainc / gammaincc: torch's names for igamma / igammac (the same operator, so the same
IgammaBackward0 node), placed on the ember.special module object as ember/_python_api/linalg.py places
its members on ember.linalg (ember/_submodules.py reuses a module already in sys.modules)."""
import sys
import types

from ember._generated import functions as _f
from ember.core.tensor_impl import TensorImpl as _Tensor

__all__ = []

_special = sys.modules.get("ember.special")
if _special is None:
    _special = sys.modules["ember.special"] = types.ModuleType("ember.special")


def _need(x, op, name, pos):
    if not isinstance(x, _Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def gammainc(input, other, *, out=None):
    _need(input, "special_gammainc", "input", 1)
    _need(other, "special_gammainc", "other", 2)
    return _f.igamma(input, other, out=out)


def gammaincc(input, other, *, out=None):
    _need(input, "special_gammaincc", "input", 1)
    _need(other, "special_gammaincc", "other", 2)
    return _f.igammac(input, other, out=out)


_special.gammainc = gammainc
_special.gammaincc = gammaincc
