"""torch/functional.py's varargs front ends of list operators: cartesian_prod(*tensors) and
block_diag(*tensors) call aten::cartesian_prod / aten::block_diag (ember/kernels/composite_math.py)
with the tensors as one list."""
import ember
from ember._generated import ops as _ops

__all__ = ["cartesian_prod", "block_diag"]


def cartesian_prod(*tensors):
    """Cartesian product of 1-D tensors, one row per combination (itertools.product order)."""
    if not tensors:
        # no Tensor to take a key set from: ATen's kernel fails in meshgrid
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    return _ops.cartesian_prod.call(list(tensors))


def block_diag(*tensors):
    """Block-diagonal matrix of the given (0-D, 1-D as a row, or 2-D) tensors."""
    if not tensors:
        return ember.empty(1, 0)  # no Tensor to take a key set from; ATen's kernel gives this
    return _ops.block_diag.call(list(tensors))
