"""repr/str of tensors equals PyTorch's (torch/_tensor_str.py), with `ember.` for `torch.`."""
import math

import numpy as np
import pytest
import torch

import ember
from harness import pair_from

inf, nan = math.inf, math.nan


def same_repr(e, t):
    er = repr(e).replace("ember.", "torch.")
    tr = repr(t)
    assert er == tr, f"\nember:\n{er}\ntorch:\n{tr}"
    assert str(e).replace("ember.", "torch.") == str(t)


def pair(data, dtype):
    a = np.asarray(data, dtype=np.float32 if dtype == "bfloat16" else dtype)
    return pair_from(a, dtype)


@pytest.fixture
def restore_opts():
    yield
    ember.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


FLOAT_DATA = [
    [1.0, 2.0], [1.5, 2.25], [0.1, 0.2, 0.3], [-1.5, 2.0], [1e-5, 1.0], [1e10, 1.0], [1e8],
    [123456789.0], [1e9, 2e9], [0.0], [0.0, -0.0], [-0.0, 1.0], [inf, nan, -inf], [1.0, inf],
    [1.5, nan], [1e-4], [1e-4, 1.0], [0.1, 100.0], [0.1, 100.1], [0.001, 1.0], [1.0, 1000.0],
    [1.0, 1001.0], [3.14159265, -2.71828, 100.5], [1e-40, 1.0], [65504.0, -1.0], [1e20, -1e-20],
    [12345.678], [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0], [-123.5, 0.001, 9999.9],
    [[1.0, 2.0], [3.0, 4.5]], [[[1.0], [2.0]], [[3.0], [-4.0]]], 2.5, -0.0, inf, nan, 1e-9, 7.0,
    [[1e-6, 2e-6], [3e-6, 4e6]],
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("i", range(len(FLOAT_DATA)))
def test_float_values(dtype, i):
    data = FLOAT_DATA[i]
    if dtype in ("float16", "bfloat16"):
        data = np.asarray(data, dtype=np.float64).clip(-6e4, 6e4)
    e, t = pair(data, dtype)
    same_repr(e, t)


INT_DATA = [[1, 2, 3], [0], [-300, 5, 12], [100, -1], 7, -3, 0, [[1, 22], [333, -4]],
            [[[0, 1, 2]]], [127, -128]]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("i", range(len(INT_DATA)))
def test_int_values(dtype, i):
    data = np.asarray(INT_DATA[i]).astype(dtype)
    same_repr(*pair(data, dtype))


@pytest.mark.parametrize("data", [[True, False], [True], False, True, [[True], [False]]])
def test_bool(data):
    same_repr(*pair(data, "bool"))


COMPLEX_DATA = [[1 + 2j, 3 - 1j], [0j], [1e-5j, 1.0], [1.5 - 2.25j], 2 + 0j, -0.0 - 0.0j,
                [complex(inf, nan), 1 + 1j], [[1 + 1j, 2.5], [3j, -4 - 1e5j]], [-1 - 1j, 1e9 + 0j]]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("i", range(len(COMPLEX_DATA)))
def test_complex(dtype, i):
    same_repr(*pair(COMPLEX_DATA[i], dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "complex64",
                                   "bfloat16", "float16", "uint8"])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 3), (3, 0)])
def test_empty(dtype, shape):
    same_repr(*pair(np.zeros(shape), dtype))


@pytest.mark.parametrize("shape", [(2000,), (1001,), (1000,), (50, 50), (10, 200), (3, 1000),
                                   (20, 20, 20), (2, 3, 4, 5), (1, 1, 1), (3, 1, 2), (4, 30),
                                   (7, 2, 300), (1100, 1)])
@pytest.mark.parametrize("kind", ["int64", "float32", "float64", "wide", "complex64", "bool"])
def test_shapes_and_summarization(shape, kind, rng):
    n = int(np.prod(shape))
    if kind == "int64":
        a = np.arange(n).reshape(shape) - n // 3
    elif kind == "bool":
        a = (np.arange(n) % 3 == 0).reshape(shape)
    elif kind == "wide":
        a = rng.standard_normal(shape) * 1e5
        kind = "float32"
    elif kind == "complex64":
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        a = rng.standard_normal(shape)
    same_repr(*pair(a, kind))


def test_non_contiguous(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    e, t = pair(a, "float32")
    same_repr(e.transpose(0, 1), t.transpose(0, 1))
    same_repr(e.as_strided((2, 2), (1, 10), 1), t.as_strided((2, 2), (1, 10), 1))


def test_meta():
    for dt in ("float32", "float64", "int64", "bool", "float16", "complex64"):
        e = ember.empty(2, 3, device="meta", dtype=getattr(ember, dt if dt != "bool" else "bool"))
        t = torch.empty(2, 3, device="meta", dtype=getattr(torch, dt))
        same_repr(e, t)
    same_repr(ember.empty(0, device="meta"), torch.empty(0, device="meta"))
    same_repr(ember.empty((), device="meta"), torch.empty((), device="meta"))


def test_requires_grad_suffix():
    same_repr(ember.tensor([1.0, 2.0], requires_grad=True),
              torch.tensor([1.0, 2.0], requires_grad=True))
    same_repr(ember.tensor(1.5, requires_grad=True), torch.tensor(1.5, requires_grad=True))
    # the suffix wraps onto a new line when the last line is too long
    data = [[1.123456, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5]] * 2
    same_repr(ember.tensor(data, dtype=ember.float64, requires_grad=True),
              torch.tensor(data, dtype=torch.float64, requires_grad=True))
    same_repr(ember.empty(2, 3, device="meta", dtype=ember.float64, requires_grad=True),
              torch.empty(2, 3, device="meta", dtype=torch.float64, requires_grad=True))


def test_grad_fn_suffix_from_name():
    """The suffix prints the class name of t.grad_fn (AddBackward0)."""
    from ember.autograd.meta import get_meta

    class AddBackward0:
        pass

    e = ember.tensor([1.0, 2.0])
    get_meta(e).grad_fn = AddBackward0()
    get_meta(e).requires_grad = True
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    t = x + 1
    same_repr(e, t)


def test_grad_fn_suffix_autograd():
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = torch.tensor([0.5, 1.0], requires_grad=True)
    same_repr(x + 1, y + 1)
    same_repr(x * 2, y * 2)


@pytest.mark.parametrize("opts", [
    dict(precision=2), dict(precision=8), dict(threshold=5), dict(edgeitems=1, threshold=5),
    dict(linewidth=40), dict(profile="short"), dict(profile="full"), dict(sci_mode=True),
    dict(sci_mode=False), dict(edgeitems=0, threshold=5), dict(profile="short", precision=6),
])
def test_set_printoptions(opts, restore_opts, rng):
    ember.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    for a in (rng.standard_normal(10), rng.standard_normal((5, 7)) * 1e-3, np.arange(20.0),
              np.arange(2000), rng.standard_normal((30, 40)), np.array(1.2345678901),
              rng.standard_normal(3) * 1e9):
        dt = "int64" if a.dtype.kind == "i" else "float32"
        same_repr(*pair(a, dt))


def test_get_printoptions(restore_opts):
    assert ember.get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3,
                                        "linewidth": 80, "sci_mode": None}
    with ember.printoptions(precision=1):
        assert repr(ember.tensor([1.25])) == "tensor([1.2])"
    assert repr(ember.tensor([1.25])) == "tensor([1.2500])"


def test_default_dtype_changes_suffix():
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        same_repr(*pair([1.5, 2.0], "float64"))
        same_repr(*pair([1.5, 2.0], "float32"))
        same_repr(*pair([1 + 1j], "complex128"))
        same_repr(*pair([1 + 1j], "complex64"))
        same_repr(*pair(np.zeros((0, 2)), "float64"))
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_format_and_subclass():
    e = ember.tensor(2.5)
    assert f"{e:.2f}" == f"{torch.tensor(2.5):.2f}" == "2.50"
    assert f"{ember.tensor([1.0])}" == "tensor([1.])"

    class MyTensor(ember.Tensor):
        __slots__ = ()

    m = ember.tensor([1.0, 2.0])
    m.__class__ = MyTensor
    assert repr(m) == "MyTensor([1., 2.])"


def test_exact_strings():
    assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ember.tensor([1.0, 2.0], dtype=ember.float64)) == \
        "tensor([1., 2.], dtype=ember.float64)"
    assert repr(ember.empty(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ember.empty(2, device="meta")) == "tensor(..., device='meta', size=(2,))"
