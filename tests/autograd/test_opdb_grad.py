"""The op database's gradient tests: every op_db entry that has a gradient gives torch's gradients
(and, where it has one, torch's gradient of the gradient) on its samples, in each of its gradient
dtypes; and in float64 it passes gradcheck (and gradgradcheck) against finite differences."""
import warnings

import pytest
import torch
from autograd_harness import compare_grads
from opdb import materialize, op_db, op_ids

import ember

GRAD_OPS = [op for op in op_db if op.supports_autograd]
GRADCHECK_OPS = [op for op in GRAD_OPS if op.gradcheck]


def _quiet(fn, kwargs_e, kwargs_t):
    def run(L, *xs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(L, *xs, **(kwargs_e if L is ember else kwargs_t))
    return run


@pytest.mark.parametrize("op", GRAD_OPS, ids=op_ids(GRAD_OPS))
def test_grads(op):
    for dtype in op.grad_dtypes:
        atol, rtol = op.tols.get(dtype, (None, None))
        for i, sample in enumerate(op.grad_samples(dtype)):
            ea, ta, ek, tk = materialize(sample, dtype, seed=i)
            compare_grads(_quiet(op.op, ek, tk), ea, ta, second_order=op.supports_gradgrad, atol=atol,
                          rtol=rtol)


def _gradcheck_sample(op):
    samples = op.grad_samples("float64")
    return next((s for s in samples if s.name == "ordinary"), samples[0])


@pytest.mark.parametrize("op", GRADCHECK_OPS, ids=op_ids(GRADCHECK_OPS))
def test_gradcheck(op):
    ea, _, ek, _ = materialize(_gradcheck_sample(op), "float64")
    pos = [i for i, x in enumerate(ea) if isinstance(x, ember.Tensor) and x.dtype.is_floating_point]
    inputs = tuple(ea[i].detach().clone().requires_grad_() for i in pos)

    def fn(*xs):
        args = list(ea)
        for i, x in zip(pos, xs):
            args[i] = x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return op.op(ember, *args, **ek)
    assert ember.autograd.gradcheck(fn, inputs)
    if op.supports_gradgrad:
        assert ember.autograd.gradgradcheck(fn, inputs)


def test_grad_ops_are_float_ops():
    assert all(set(op.grad_dtypes) <= {"float32", "float64", "complex64", "complex128"} for op in GRAD_OPS)
    assert torch.float64 is not None
