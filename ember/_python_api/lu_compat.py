"""torch.lu (torch/functional.py over torch._lu_with_info): LU factorization through
linalg.lu_factor_ex, with torch's deprecation warning (once), get_infos and out= handling."""
import collections
import warnings

from ember._generated import ops as _ops

__all__ = ["lu"]

_LUWithInfo = collections.namedtuple("_lu_with_info", "LU pivots info", module="ember.return_types")
_warned = []


def _check_list_size(out_len, get_infos, out):
    get_infos_int = 1 if get_infos else 0
    if out_len - get_infos_int != 2:
        raise TypeError(f"expected tuple of {2 + int(get_infos)} elements but got {out_len}")
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"argument 'out' must be tuple of Tensors, not {type(out).__name__}")


def lu(A, pivot=True, get_infos=False, out=None):
    if not _warned:
        _warned.append(True)
        warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
                      "will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\n"
                      "should be replaced with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
                      "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\n"
                      "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)", UserWarning, stacklevel=2)
    # ATen's _lu_with_info ignores check_errors: a singular matrix is no error
    result = _LUWithInfo(*_ops.linalg_lu_factor_ex.call(A, pivot, False))
    if out is not None:
        _check_list_size(len(out), get_infos, out)
        for i in range(len(out)):
            out[i].resize_as_(result[i]).copy_(result[i])
        return out
    if get_infos:
        return result
    return result[0], result[1]
