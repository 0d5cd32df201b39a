"""torch.typename: the name that error messages give an object's type."""
from ember.core.tensor_impl import TensorImpl

__all__ = ["typename"]


def typename(obj):
    """'torch.FloatTensor' for a tensor (its legacy type name), 'module.Qualname' for other objects."""
    if isinstance(obj, TensorImpl):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"
