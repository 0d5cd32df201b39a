"""Python-level linear-algebra API (torch/functional.py): einsum's variadic and sublist forms,
tensordot's `dims` forms, and torch.linalg.LinAlgError."""
import sys
import types

from ember._generated import functions as _F
from ember.core.tensor_impl import TensorImpl as _TI
from ember.kernels.cpu.linalg import LinAlgError

__all__ = ["einsum", "tensordot", "chain_matmul"]


# ember.linalg is built from the generated bindings after this module loads (ember/_submodules.py
# reuses a module already in sys.modules), so hand-written members are placed on it here.
_linalg = sys.modules.get("ember.linalg")
if _linalg is None:
    _linalg = sys.modules["ember.linalg"] = types.ModuleType("ember.linalg")
_linalg.LinAlgError = LinAlgError


def _parse_subscript(n):
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def einsum(*args):
    """einsum(equation, *operands), einsum(equation, [operands]) or the sublist form
    einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], _TI):
        equation = ",".join("".join(_parse_subscript(s) for s in sub) for sub in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + "".join(_parse_subscript(s) for s in args[-1])
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation = args[0]
        operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _F.einsum(equation, list(operands))


def tensordot(a, b, dims=2, out=None):
    """Contraction of a and b over `dims` (an int, a pair of dim lists, or a Tensor)."""
    if not isinstance(dims, (tuple, list, _TI, int)) or isinstance(dims, bool):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    dims_a, dims_b = [], []
    if isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    elif isinstance(dims, _TI):
        if dims.numel() > 1:
            if dims.shape[0] != 2:
                raise AssertionError(
                    f"dims tensor must have size 2 in first dimension, got {dims.shape[0]}")
            dims_a = dims[0].tolist()
            dims_b = dims[1].tolist()
        else:
            d = int(dims.item())
            if d < 0:
                raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
            dims_a, dims_b = list(range(-d, 0)), list(range(d))
    else:
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    if out is None:
        return _F.tensordot(a, b, dims_a, dims_b)
    return _F.tensordot(a, b, dims_a, dims_b, out=out)


def chain_matmul(*matrices, out=None):
    """Matrix product of the 2-D tensors given (deprecated in PyTorch for linalg.multi_dot)."""
    if out is None:
        return _F.chain_matmul(list(matrices))
    return _F.chain_matmul(list(matrices), out=out)


def _pinv(input, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """torch.linalg.pinv: pseudo-inverse; the positional `rcond` is a relative tolerance."""
    from ember._generated import functions_linalg as _FL
    if rcond is not None:
        atol, rtol = 0.0, rcond
    return _FL._pinv(input, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def _matrix_rank(input, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """torch.linalg.matrix_rank; the positional `tol` is an absolute tolerance."""
    from ember._generated import functions_linalg as _FL
    if tol is not None:
        atol, rtol = tol, 0.0
    if isinstance(atol, _TI) or isinstance(rtol, _TI):
        return _matrix_rank_tensor_tol(input, atol, rtol, hermitian, out)
    return _FL._matrix_rank(input, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def _matrix_rank_tensor_tol(input, atol, rtol, hermitian, out):
    """linalg_matrix_rank.atol_rtol_tensor (ATen's matrix_rank_impl): tolerances given as tensors
    broadcast against the batch; tol = max(atol, rtol * largest singular value)."""
    import ember
    from ember._generated import functions_linalg as _FL
    _FL._matrix_rank(input[..., :0, :0] if input.dim() >= 2 else input)  # ATen's argument checks
    f64 = ember.float64
    for name, t in (("atol", atol), ("rtol", rtol)):
        if isinstance(t, _TI) and t.is_complex():
            raise RuntimeError(f"torch.linalg.matrix_rank: {name} tensor of complex type is not supported.")
    a = atol if isinstance(atol, _TI) else ember.tensor(0.0 if atol is None else float(atol), dtype=f64)
    if rtol is None:
        real = input.real.dtype if input.is_complex() else input.dtype
        default = ember.finfo(real).eps * max(input.shape[-1], input.shape[-2])
        r = ember.where(a > 0, 0.0, default).to(f64) if atol is not None else ember.tensor(default, dtype=f64)
    else:
        r = rtol if isinstance(rtol, _TI) else ember.tensor(float(rtol), dtype=f64)
    if hermitian:
        S = ember.linalg.eigvalsh(input).abs()
    else:
        S = ember.linalg.svdvals(input)
    if S.shape[-1]:
        max_s = S.amax(-1, keepdim=True)
    else:
        max_s = ember.zeros(tuple(S.shape[:-1]) + (1,), dtype=S.dtype)
    tol = ember.maximum(a.unsqueeze(-1), r.unsqueeze(-1) * max_s)
    result = (S > tol).sum(-1)
    if out is not None:
        out.resize_(result.shape).copy_(result)
        return out
    return result


_pinv.__name__ = _pinv.__qualname__ = "pinv"
_matrix_rank.__name__ = _matrix_rank.__qualname__ = "matrix_rank"
_linalg.pinv = _pinv
_linalg.matrix_rank = _matrix_rank
