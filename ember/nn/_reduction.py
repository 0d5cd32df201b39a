"""torch.nn._reduction: the reduction enum of the loss operators (aten/src/ATen/core/Reduction.h)
and the legacy size_average/reduce arguments, with torch's deprecation warnings."""
import warnings

__all__ = ["get_enum", "legacy_get_string", "legacy_get_enum"]


def get_enum(reduction):
    if reduction == "none":
        ret = 0
    elif reduction == "mean":
        ret = 1
    elif reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=2)
        ret = 1
    elif reduction == "sum":
        ret = 2
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ret


def legacy_get_string(size_average, reduce, emit_warning=True):
    """The reduction named by the legacy arguments (None counts as True), with torch's warning."""
    warning = "size_average and reduce args will be deprecated, please use reduction='{}' instead."
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(warning.format(ret), stacklevel=2)
    return ret


def legacy_get_enum(size_average, reduce, emit_warning=True):
    return get_enum(legacy_get_string(size_average, reduce, emit_warning))
