"""gradcheck on complex inputs and outputs gives torch's verdicts: the Jacobians compared are real ones
(a complex element is its real and imaginary part), and torch's convention for a complex gradient
(dL/dRe(x) + i dL/dIm(x)) makes the analytical rows. A wrong backward is still caught."""
import numpy as np
import pytest
import torch

import ember

CASES = {
    "view_as_complex": (lambda L, t: L.view_as_complex(t), "r2"),
    "view_as_real": (lambda L, t: L.view_as_real(t * 2), "c"),
    "abs": (lambda L, t: t.abs(), "c"),
    "square": (lambda L, t: t * t, "c"),
    "conj_sin": (lambda L, t: t.conj() * t.sin(), "c"),
    "exp_real_part": (lambda L, t: t.exp().real, "c"),
    "angle": (lambda L, t: t.angle(), "c"),
    "complex": (lambda L, t: L.complex(t, t * 3), "r"),
    "polar_negative_abs": (lambda L, t: L.polar(t, t * 2), "r"),  # ATen's convention: both refuse
    "real_sin": (lambda L, t: t.sin(), "r"),
}


def _input(lib, kind):
    rng = np.random.default_rng(0)
    if kind == "c":
        a = rng.standard_normal(3) + 1j * rng.standard_normal(3)
        return lib.tensor(a, dtype=lib.complex128, requires_grad=True)
    shape = (3, 2) if kind == "r2" else (3,)
    return lib.tensor(rng.standard_normal(shape), dtype=lib.float64, requires_grad=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck_verdict_matches_torch(case):
    fn, kind = CASES[case]
    verdicts = []
    for lib in (ember, torch):
        x = _input(lib, kind)
        verdicts.append(lib.autograd.gradcheck(lambda t, lib=lib: fn(lib, t), (x,), raise_exception=False))
    assert verdicts[0] == verdicts[1]


class _WrongScale(ember.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


class _MissingConj(ember.autograd.Function):
    """d(t*t)/dt written without the conjugate torch's convention needs: wrong for complex t."""
    @staticmethod
    def forward(ctx, t):
        ctx.save_for_backward(t)
        return t * t

    @staticmethod
    def backward(ctx, g):
        t, = ctx.saved_tensors
        return g * 2 * t


class _RightConj(_MissingConj):
    @staticmethod
    def backward(ctx, g):
        t, = ctx.saved_tensors
        return g * 2 * t.conj()


@pytest.mark.parametrize("fn, ok", [(_WrongScale.apply, False), (_MissingConj.apply, False),
                                    (_RightConj.apply, True)])
def test_gradcheck_catches_wrong_complex_backward(fn, ok):
    x = _input(ember, "c")
    assert ember.autograd.gradcheck(fn, (x,), raise_exception=False) is ok
    if not ok:
        with pytest.raises(RuntimeError, match="Jacobian mismatch"):  # GradcheckError, as torch's
            ember.autograd.gradcheck(fn, (x,))
