"""torch.linalg.ldl_factor, ldl_factor_ex and ldl_solve: Bunch-Kaufman LDL^T on the CPU.

torch calls LAPACK's ?sytrf (?hetrf with hermitian=True) on the lower triangle and ?sytrs/?hetrs
to solve. NumPy exposes neither, so the unblocked algorithm those routines run for small matrices
(?sytf2 / ?hetf2, lower) is written out here column by column, with LAPACK's pivot rule
(alpha = (1 + sqrt(17)) / 8, magnitudes |re| + |im| for complex), interchanges, 1x1 and 2x2 block
updates in LAPACK's order of operations, and LAPACK's compact result: L's multipliers and D's
blocks in the lower triangle (the upper one zeroed, as torch returns it), pivots 1-based, a 2x2
block marked by its negative pivot on both of its rows. info is the first zero pivot (1-based).
Only the lower triangle of A is read. Neither op has a derivative in torch: backward raises.
"""
import collections
import sys

import numpy as np

import ember
from ember.autograd.function import Function

_ALPHA = (1 + 17 ** 0.5) / 8
_ldl_factor_ex = collections.namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
_ldl_factor = collections.namedtuple("linalg_ldl_factor", ["LD", "pivots"])
_FLOATS = ("float32", "float64", "complex64", "complex128")
_TORCH_NAME = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
               "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _mag(z):
    """LAPACK's pivot magnitude: |x| for reals, |re| + |im| (cabs1) for complex."""
    return np.abs(z.real) + np.abs(z.imag) if np.iscomplexobj(z) else np.abs(z)


def _factor(a, herm):
    """?sytf2 / ?hetf2 with UPLO='L' on the 2-D array a (overwritten): returns (ipiv, info)."""
    n = a.shape[0]
    ipiv = np.zeros(n, np.int32)
    info = 0
    cplx = np.iscomplexobj(a)
    herm = herm and cplx
    conj = np.conj if herm else (lambda v: v)
    k = 0
    while k < n:
        kstep = 1
        akk = a[k, k]
        absakk = abs(akk.real) if herm else float(_mag(akk))
        if k < n - 1:
            col = _mag(a[k + 1:, k])
            imax = k + 1 + int(np.argmax(col))
            colmax = float(col[imax - k - 1])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or absakk != absakk:
            if info == 0:
                info = k + 1
            kp = k
            if herm:
                a[k, k] = a[k, k].real
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                row = _mag(a[imax, k:imax])
                rowmax = float(row.max())
                if imax < n - 1:
                    rowmax = max(rowmax, float(_mag(a[imax + 1:, imax]).max()))
                aii = abs(a[imax, imax].real) if herm else float(_mag(a[imax, imax]))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif aii >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp = imax
                    kstep = 2
            kk = k + kstep - 1
            if kp != kk:
                # interchange rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    t = a[kp + 1:, kk].copy()
                    a[kp + 1:, kk] = a[kp + 1:, kp]
                    a[kp + 1:, kp] = t
                t = a[kk + 1:kp, kk].copy()
                a[kk + 1:kp, kk] = conj(a[kp, kk + 1:kp])
                a[kp, kk + 1:kp] = conj(t)
                if herm:
                    a[kp, kk] = np.conj(a[kp, kk])
                    r = a[kk, kk].real
                    a[kk, kk] = a[kp, kp].real
                    a[kp, kp] = r
                else:
                    t = a[kk, kk]
                    a[kk, kk] = a[kp, kp]
                    a[kp, kp] = t
                if kstep == 2:
                    if herm:
                        a[k, k] = a[k, k].real
                    t = a[k + 1, k]
                    a[k + 1, k] = a[kp, k]
                    a[kp, k] = t
            elif herm:
                a[k, k] = a[k, k].real
                if kstep == 2:
                    a[k + 1, k + 1] = a[k + 1, k + 1].real
            if kstep == 1:
                if k < n - 1:
                    x = a[k + 1:, k].copy()
                    d11 = 1 / (a[k, k].real if herm else a[k, k])
                    # ?syr / ?her: A := -d11 x x^T (x^H) + A, then the multipliers x * d11
                    a[k + 1:, k + 1:] += np.multiply.outer(x, conj(x) * -d11)
                    if herm:
                        idx = np.arange(k + 1, n)
                        a[idx, idx] = a[idx, idx].real
                    a[k + 1:, k] = x * d11
            elif k < n - 2:
                if herm:
                    d = abs(a[k + 1, k])
                    d11 = a[k + 1, k + 1].real / d
                    d22 = a[k, k].real / d
                    tt = 1 / (d11 * d22 - 1)
                    d21 = a[k + 1, k] / d
                    d = tt / d
                    wk = d * (d11 * a[k + 2:, k] - d21 * a[k + 2:, k + 1])
                    wkp1 = d * (d22 * a[k + 2:, k + 1] - np.conj(d21) * a[k + 2:, k])
                else:
                    d21 = a[k + 1, k]
                    d11 = a[k + 1, k + 1] / d21
                    d22 = a[k, k] / d21
                    t = 1 / (d11 * d22 - 1)
                    d21 = t / d21
                    wk = d21 * (d11 * a[k + 2:, k] - a[k + 2:, k + 1])
                    wkp1 = d21 * (d22 * a[k + 2:, k + 1] - a[k + 2:, k])
                a[k + 2:, k + 2:] -= np.multiply.outer(a[k + 2:, k], conj(wk))
                a[k + 2:, k + 2:] -= np.multiply.outer(a[k + 2:, k + 1], conj(wkp1))
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
                if herm:
                    idx = np.arange(k + 2, n)
                    a[idx, idx] = a[idx, idx].real
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return ipiv, info


def _solve(a, ipiv, b, herm):
    """?sytrs / ?hetrs with UPLO='L': b (n x nrhs, overwritten) := A^-1 b."""
    n = a.shape[0]
    herm = herm and np.iscomplexobj(a)
    conj = np.conj if herm else (lambda v: v)
    k = 0
    while k < n:                       # L D X = B
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            if k < n - 1:
                b[k + 1:] -= np.multiply.outer(a[k + 1:, k], b[k])
            b[k] *= 1 / (a[k, k].real if herm else a[k, k])
            k += 1
        else:
            kp = -ipiv[k] - 1
            if kp != k + 1:
                b[[k + 1, kp]] = b[[kp, k + 1]]
            if k < n - 2:
                b[k + 2:] -= np.multiply.outer(a[k + 2:, k], b[k])
                b[k + 2:] -= np.multiply.outer(a[k + 2:, k + 1], b[k + 1])
            akm1k = a[k + 1, k]
            akm1 = a[k, k] / conj(akm1k)
            ak = a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1 = b[k] / conj(akm1k)
            bk = b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:                      # L^T (L^H) X = B
        if ipiv[k] > 0:
            if k < n - 1:
                b[k] -= conj(a[k + 1:, k]) @ b[k + 1:]
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            if k < n - 1:
                b[k] -= conj(a[k + 1:, k]) @ b[k + 1:]
                b[k - 1] -= conj(a[k + 1:, k - 1]) @ b[k + 1:]
            kp = -ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def _dtype_name(t):
    return str(t.dtype).replace("ember.", "")


def _check_square(A, api):
    if A.dim() < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{api}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _check_info(info, api):
    for v in info.reshape(-1):
        if v < 0:
            raise RuntimeError(f"{api}: Argument {-int(v)} has illegal value. Most certainly there is a bug in "
                               "the implementation calling the backend library.")
        if v > 0:
            # torch's error check has no case for ?sytrf's info and ends in its internal assert
            # (without the batch element its other messages name)
            raise RuntimeError('false INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/aten/src/ATen/native/'
                               'BatchLinearAlgebra.cpp":1642, please report a bug to PyTorch. '
                               f"{api}: Unknown error code: {int(v)}.")


class _NoDerivative(Function):
    """Outputs of an op torch has no derivative for: backward raises torch's error."""

    @staticmethod
    def forward(ctx, name, x, *outs):
        ctx.name = name
        return tuple(o.clone() for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.name} is not implemented")


def _factor_ex(A, hermitian, api):
    if not isinstance(A, ember.Tensor):
        raise TypeError(f"linalg_ldl_factor_ex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    _check_square(A, api)
    name = _dtype_name(A)
    if name not in _FLOATS:
        if name in ("float16", "bfloat16"):
            raise NotImplementedError(f"\"ldl_factor_kernel_cpu\" not implemented for '{_TORCH_NAME[name]}'")
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{_TORCH_NAME.get(name, name)}")
    a = np.array(A.detach().cpu().numpy(), copy=True)
    batch = a.shape[:-2]
    n = a.shape[-1]
    nb = int(np.prod(batch, dtype=np.int64))
    a3 = a.reshape((nb, n, n))
    piv = np.zeros((a3.shape[0], n), np.int32)
    info = np.zeros(a3.shape[0], np.int32)
    for i in range(a3.shape[0]):
        piv[i], info[i] = _factor(a3[i], hermitian)
        a3[i] = np.tril(a3[i])
    LD = ember.tensor(a3.reshape(a.shape), dtype=A.dtype, device=A.device)
    pivots = ember.tensor(piv.reshape(batch + (n,)), dtype=ember.int32, device=A.device)
    infos = ember.tensor(info.reshape(batch), dtype=ember.int32, device=A.device)
    if A.requires_grad and ember.is_grad_enabled():
        LD, = _NoDerivative.apply("linalg_ldl_factor_ex", A, LD)
    return LD, pivots, infos


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """torch.linalg.ldl_factor_ex: (LD, pivots, info) of the Bunch-Kaufman factorization."""
    api = "torch.linalg.ldl_factor_ex"
    LD, pivots, info = _factor_ex(A, hermitian, api)
    if check_errors:
        _check_info(info.numpy(), api)
    res = _ldl_factor_ex(LD, pivots, info)
    return _write_out(res, out)


def ldl_factor(A, *, hermitian=False, out=None):
    """torch.linalg.ldl_factor: (LD, pivots); a zero pivot raises (as torch's error check does)."""
    LD, pivots, info = _factor_ex(A, hermitian, "torch.linalg.ldl_factor_ex")
    _check_info(info.numpy(), "torch.linalg.ldl_factor")
    return _write_out(_ldl_factor(LD, pivots), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """torch.linalg.ldl_solve: X with A X = B, from ldl_factor's (LD, pivots)."""
    api = "torch.linalg.ldl_solve"
    if LD.dim() < 2:
        raise RuntimeError(f"{api}: The input tensor LD must have at least 2 dimensions.")
    if B.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if LD.shape[-1] != LD.shape[-2]:
        raise RuntimeError(f"{api}: A must be batches of square matrices, but they are {LD.shape[-2]} by "
                           f"{LD.shape[-1]} matrices")
    if tuple(LD.shape[:-1]) != tuple(pivots.shape):
        raise RuntimeError(f"{api}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots "
                           f"with shape {list(pivots.shape)} instead")
    if pivots.dtype.is_floating_point or pivots.is_complex() or pivots.dtype == ember.bool:
        raise RuntimeError(f"{api}: Expected pivots to be integers. Got {_torch_type(_dtype_name(pivots))}")
    if B.dtype != LD.dtype:
        nb, na = _dtype_name(B), _dtype_name(LD)
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_torch_type(nb)} and A of type {_torch_type(na)} instead.")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {api}: each A matrix is {n} by {n} but each b "
                           f"matrix is {B.shape[-2]} by {B.shape[-1]}")
    batch = tuple(np.broadcast_shapes(tuple(LD.shape[:-2]), tuple(B.shape[:-2])))
    nb = int(np.prod(batch, dtype=np.int64))
    a = np.broadcast_to(LD.detach().numpy(), batch + (n, n)).reshape((nb, n, n))
    p = np.broadcast_to(pivots.numpy(), batch + (n,)).reshape((nb, n))
    b = np.array(np.broadcast_to(B.detach().numpy(), batch + tuple(B.shape[-2:])), copy=True)
    b3 = b.reshape((nb,) + tuple(B.shape[-2:]))
    for i in range(b3.shape[0]):
        _solve(a[i], p[i], b3[i], hermitian)
    X = ember.tensor(b3.reshape(b.shape), dtype=B.dtype, device=B.device)
    if (LD.requires_grad or B.requires_grad) and ember.is_grad_enabled():
        X, = _NoDerivative.apply("linalg_ldl_solve", LD if LD.requires_grad else B, X)
    return _write_out(X, out)


def _torch_type(name):
    return {"float32": "Float", "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
            "bool": "Bool"}.get(name, _TORCH_NAME.get(name, name))


_C_TYPE = {"float32": "float", "float64": "double", "complex64": "c10::complex<float>",
           "complex128": "c10::complex<double>", "int32": "int", "int64": "long int"}


def _write_out(res, out):
    if out is None:
        return res
    pairs = list(zip(out, res)) if isinstance(res, tuple) else [(out, res)]
    for o, r in pairs:
        if o.dtype != r.dtype:
            want, got = _dtype_name(r), _dtype_name(o)
            raise RuntimeError(f"Expected out tensor to have dtype {_C_TYPE.get(want, want)}, but got "
                               f"{_C_TYPE.get(got, got)} instead")
    for o, r in pairs:
        o.resize_(r.shape).copy_(r)
    return type(res)(*out) if isinstance(res, tuple) else out


_linalg = sys.modules["ember.linalg"]
_linalg.ldl_factor_ex = ldl_factor_ex
_linalg.ldl_factor = ldl_factor
_linalg.ldl_solve = ldl_solve
