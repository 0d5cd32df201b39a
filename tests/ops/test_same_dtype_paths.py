"""The generated CPU glue's same-dtype paths (`cpu_same_dtype:` in pointwise.yaml): add, sub, mul,
div, rsub and neg call their ufunc directly when both Tensors share a dtype the path serves. They must
give what the kernel gives: torch's values and dtypes, a Tensor with every field `wrap` sets, and
torch's errors for inputs the path declines (bool sub, shapes that do not broadcast)."""
import numpy as np
import pytest
import torch

import ember
from ember.core.tensor_impl import TensorImpl
from ember.kernels.cpu._glue import wrap
from tests.harness import check, make_pair, same_error

BINARY = {"add": lambda L, x, y: L.add(x, y), "sub": lambda L, x, y: x - y, "mul": lambda L, x, y: x * y,
          "div": lambda L, x, y: x / y, "rsub": lambda L, x, y: L.rsub(x, y), "subtract": lambda L, x, y: L.subtract(x, y),
          "multiply": lambda L, x, y: L.multiply(x, y), "true_divide": lambda L, x, y: L.true_divide(x, y)}
DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool", "complex64"]
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((2, 1, 3), (4, 1)), ((0, 3), (3,))]


def fields(t):
    return {s: getattr(t, s) for s in TensorImpl.__slots__ if s not in ("__weakref__", "__dict__", "_np")
            and hasattr(t, s)}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_matches_torch(op, dtype):
    rng = np.random.default_rng(0)
    if dtype == "bool" and op in ("sub", "subtract", "rsub"):
        same_error(lambda L: BINARY[op](L, L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool)))
        return
    for sa, sb in SHAPES:
        ea, ta = make_pair(sa, dtype, rng, low=1, high=5)
        eb, tb = make_pair(sb, dtype, rng, low=1, high=5)
        r = BINARY[op](ember, ea, eb)
        # a Tensor with the fields wrap gives (the path builds it inline)
        assert fields(r) == fields(wrap(r._np.copy()))
        check(r, BINARY[op](torch, ta, tb), atol=1e-2 if dtype in ("float16", "bfloat16") else None)


@pytest.mark.parametrize("layout", ["transposed", "strided", "expanded"])
def test_non_contiguous_inputs(layout):
    rng = np.random.default_rng(1)
    ea, ta = make_pair((3, 4), "float32", rng, layout)
    eb, tb = make_pair((3, 4), "float32", rng)
    for op in ("add", "sub", "mul", "div"):
        check(BINARY[op](ember, ea, eb), BINARY[op](torch, ta, tb))
        check(BINARY[op](ember, eb, ea), BINARY[op](torch, tb, ta))


@pytest.mark.parametrize("dtype", DTYPES)
def test_neg(dtype):
    rng = np.random.default_rng(2)
    if dtype == "bool":
        same_error(lambda L: -L.ones(3, dtype=L.bool))
        return
    for shape in [(3, 4), (), (0,)]:
        e, t = make_pair(shape, dtype, rng, low=-3, high=3)
        check(-e, -t)
        check(ember.negative(e), torch.negative(t))


def test_declined_inputs_take_the_kernel():
    # shapes that do not broadcast: torch's message, not NumPy's
    same_error(lambda L: L.ones(2) + L.ones(3))
    same_error(lambda L: L.ones(2, 3) * L.ones(4))
    same_error(lambda L: L.ones(2) / L.ones(5))
    # alpha other than 1, mixed dtypes, numbers, subclasses, int division: the kernel's results
    a, b = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 5.0])
    ta, tb = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 5.0])
    check(ember.add(a, b, alpha=2), torch.add(ta, tb, alpha=2))
    check(ember.sub(a, b, alpha=0.5), torch.sub(ta, tb, alpha=0.5))
    check(a * b.double(), ta * tb.double())
    check(2 / a, 2 / ta)
    check(a * 3, ta * 3)
    check(ember.tensor([7, 9]) / ember.tensor([2, 4]), torch.tensor([7, 9]) / torch.tensor([2, 4]))
    p, tp = ember.nn.Parameter(b), torch.nn.Parameter(tb)
    check((a * p).detach(), (ta * tp).detach())
    check((p - a).detach(), (tp - ta).detach())


def test_results_are_fresh_and_writable():
    a, b = ember.ones(4), ember.ones(4)
    r = a + b
    assert r._np is not a._np and r._np.flags.writeable and r.is_contiguous()
    r.add_(1)
    assert a.tolist() == [1.0] * 4 and r.tolist() == [3.0] * 4
    assert r._version == 1 and r.grad_fn is None and not r.requires_grad


NUMBERS = [0.5, 3, -7, 0.1, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e39, -1e39, 2 ** 60 + 1,
           16777217, 5e-324, 1 / 3]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_tensor_with_number_matches_torch(dtype):
    # the number is kept as a 0-d array of the tensor's dtype (glue.number_array): each value twice, so
    # the second call reads the kept array, including signed zeros and NaN, which are not kept
    rng = np.random.default_rng(1)
    ea, ta = make_pair((5,), dtype, rng, low=-3, high=3)
    ea[0], ta[0] = 0.0, 0.0
    # complex too: torch adds as self + alpha * other, a complex product even for alpha 1, so a
    # non-finite number gives a NaN imaginary part (inf + nanj); ember's kernel does the same
    ea[1], ta[1] = float("inf"), float("inf")
    for v in NUMBERS * 2:
        for op in ("add", "sub", "mul", "div", "rsub"):
            with np.errstate(all="ignore"):
                check(BINARY[op](ember, ea, v), BINARY[op](torch, ta, v), equal_nan=True)
        with np.errstate(all="ignore"):
            check(v - ea, v - ta, equal_nan=True)
    zero = ember.zeros(2, dtype=getattr(ember, dtype))
    assert (zero * -0.0).real.tolist() == [-0.0, -0.0] and str((zero * 0.0).real.tolist()) == "[0.0, 0.0]"
    assert str((zero * -0.0).real.tolist()) == "[-0.0, -0.0]"


def test_kept_numbers_are_read_only_and_bounded():
    from ember.kernels.cpu import _glue
    a = ember.ones(3)
    for k in range(3000):
        a * (k + 0.5)
    kept = _glue._NUMBER_ARRAYS[ember.float32]
    assert 0 < len(kept) <= 1024 and not next(iter(kept.values())).flags.writeable
    r = a * 0.5
    r.add_(1)  # the result is fresh memory, not the kept number
    assert r.tolist() == [1.5] * 3 and (a * 0.5).tolist() == [0.5] * 3
