"""complex32 (ComplexHalf) in the CPU kernels.

NumPy has no complex32; ember stores it as a structured dtype of two float16 fields (see
ember.core.dtype.CHALF_NP), on which NumPy's ufuncs refuse to run. The kernels torch's CPU build
supports for ComplexHalf reach these helpers on paths other dtypes do not take (after an identity
check on the result dtype, or in an `except TypeError` of a fast path): TensorIterator casts every
operand to ComplexHalf (`operand`), computes in complex<float> (opmath) and rounds each component of
the result back to float16 (`narrow`).
"""
import numpy as np

from ember.core import dtype as _dt
from ember.core.chalf import narrow, to_dtype, widen
from ember.kernels.meta.creation import not_implemented

C32 = _dt.CHALF_NP
_nd = np.ndarray
complex32 = _dt.complex32


def is_chalf(x):
    return isinstance(x, _nd) and x.dtype == C32


def any_chalf(*xs):
    for x in xs:
        if isinstance(x, _nd) and x.dtype == C32:
            return True
    return False


def astype(x, npd):
    """x.astype(npd) for an array x, where x or npd may be complex32."""
    if x.dtype == C32:
        return to_dtype(x, npd)
    if npd == C32:
        return narrow(x)
    return x.astype(npd)


def operand(x):
    """An array or number cast to complex32 (as TensorIterator casts it to the common dtype), then
    widened to complex64, where ComplexHalf kernels compute."""
    if isinstance(x, _nd) and x.dtype == C32:
        return widen(x)
    return widen(narrow(x))


def mul(a, b, npd):
    """a * b (arrays or numbers, broadcasting) in result NumPy dtype npd, where a, b or npd is
    complex32: for npd complex32, both cast to ComplexHalf, the product in complex<float>, rounded
    once (torch's mul); else NumPy's product in npd."""
    if npd == C32:
        return narrow(np.multiply(operand(a), operand(b)))
    return np.multiply(astype(a, npd) if isinstance(a, _nd) else a, astype(b, npd) if isinstance(b, _nd) else b)


def addcmul(x, v, y, z):
    """x + v * y * z on complex32 operands (v a 0-d one): torch's CPU kernel for ComplexHalf works in
    c10::complex<Half>, whose every operation computes in complex<float> and rounds, left to right."""
    p = narrow(np.multiply(operand(v), operand(y)))
    p = narrow(np.multiply(widen(p), operand(z)))
    return narrow(np.add(operand(x), widen(p)))


def add_at(a, key, values):
    """np.add.at(a, key, values) for a complex32 array a (values complex32, broadcast to a[key]): each
    addition in complex<float> rounded to ComplexHalf, repeated targets in order, as torch's serial
    `*dst += *src` on c10::complex<Half> (index_put_ with accumulate, index_add_)."""
    pos = np.arange(a.size).reshape(a.shape)[key]  # raises IndexError as a[key] would
    vals = widen(np.broadcast_to(values, pos.shape)).reshape(-1)
    pos = pos.reshape(-1)
    if pos.size == 0:
        return
    order = np.argsort(pos, kind="stable")
    sp = pos[order]
    starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]])
    rank = np.empty(sp.size, np.intp)  # how many earlier additions go to the same element
    rank[order] = np.arange(sp.size) - np.repeat(starts, np.diff(np.r_[starts, sp.size]))
    for r in range(int(rank.max()) + 1):  # one round per repeat: targets distinct within a round
        sel = np.flatnonzero(rank == r)
        t = np.unravel_index(pos[sel], a.shape)
        a[t] = narrow(widen(a[t]) + vals[sel])


def refuse(kernel):
    """torch's error of a CPU kernel that has no ComplexHalf instance."""
    return not_implemented(kernel, complex32)


# ---- torch's refusals, where a kernel stops at NumPy -------------------------------------------
# An op given complex32 whose kernel has no ComplexHalf path reaches a NumPy ufunc or cast, which
# raises a TypeError for the structured dtype. The generated bindings' fallback (ember/_bindings.py),
# where that error already goes, asks numpy_refusal for torch's error instead: the CPU kernel named
# here by the op's base name (in-place and out= forms share it), else the op's own name. Nothing here
# runs unless a kernel has raised. (Overloads whose kernels torch names apart, as lerp's, refuse in
# their kernels: the fallback re-resolves the call, which may pick another overload than ran.)
REFUSED = {
    "trace": "trace", "amax": "max_values_cpu", "amin": "min_values_cpu", "cross": "cross",
    "linalg_cross": "cross", "mv": "addmv_impl_cpu", "addmv": "addmv_impl_cpu", "addr": "addr_cpu",
    "baddbmm": "baddbmm", "addbmm": "addmm_impl_cpu_", "matrix_exp": "bmm", "linalg_matrix_exp": "bmm",
    "logsumexp": "exp_vml_cpu", "logcumsumexp": "logcumsumexp_out_cpu", "silu": "silu_cpu",
    "linalg_vecdot": "sum_cpu",
}

# how NumPy's plain TypeErrors begin (its UFuncTypeError and subclasses aside)
_NUMPY_TEXTS = ("ufunc '", "Cannot cast ", "cannot cast ", "Cannot interpret ", "The DType ")


def _holds_chalf(args):
    for x in args:
        if getattr(x, "_dtype", None) is complex32:
            return True
        if isinstance(x, (list, tuple)) and _holds_chalf(x):
            return True
    return False


def numpy_refusal(op, args, err):
    """torch's NotImplementedError for op (an OperatorHandle) called with args, where its kernel raised
    NumPy's TypeError `err` on a complex32 argument; None for any other error."""
    if not (err.__class__.__module__.startswith("numpy") or str(err).startswith(_NUMPY_TEXTS)):
        return None
    if not _holds_chalf(args):
        return None
    base = str(op.name)
    if base.endswith("_") and not base.endswith("__"):
        base = base[:-1]
    return refuse(REFUSED.get(base, base))


__all__ = ["C32", "is_chalf", "any_chalf", "astype", "operand", "mul", "addcmul", "add_at", "refuse",
           "numpy_refusal", "narrow", "widen", "to_dtype"]
