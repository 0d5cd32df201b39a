"""torch.FloatTensor and the other legacy tensor types: construction, isinstance, type()."""
import numpy as np
import pytest
import torch

import ember
from harness import check, same_error

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
         "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


def both(fn):
    return fn(ember), fn(torch)


@pytest.mark.parametrize("name", NAMES)
def test_sizes(name):
    for args in [(), (2, 3), (0,), (4, True), (np.int64(3),)]:
        e, t = both(lambda lib: getattr(lib, name)(*args))
        assert e.dtype.__repr__().split(".")[-1] == repr(t.dtype).split(".")[-1]
        assert tuple(e.shape) == tuple(t.shape)
        assert e.type() == t.type()
    e, t = both(lambda lib: getattr(lib, name)(lib.Size([2, 1])))
    assert tuple(e.shape) == tuple(t.shape) == (2, 1)
    e, t = both(lambda lib: getattr(lib, name)(3, device="cpu"))
    assert tuple(e.shape) == (3,)


@pytest.mark.parametrize("name", NAMES)
def test_data(name):
    for data in [[1, 2], [[1, 0], [3, 4]], (1, 2), [], np.array([1.0, 2.0])]:
        check(*both(lambda lib: getattr(lib, name)(data)))
    check(*both(lambda lib: getattr(lib, name)([1, 2], device=lib.device("cpu"))))


@pytest.mark.parametrize("name", NAMES)
def test_isinstance_and_type(name):
    T = getattr(ember, name)
    for lib in (torch, ember):
        T = getattr(lib, name)
        x = T(2)
        assert isinstance(x, T)
        assert isinstance(x, lib.Tensor)
        assert not isinstance(x, lib.cuda.FloatTensor)
        assert not isinstance(torch.zeros(1) if lib is ember else ember.zeros(1), T)
        assert T.dtype == x.dtype
        assert T.is_cuda is False and T.is_sparse is False
        assert x.type(T).dtype == x.dtype
        assert lib.zeros(2, dtype=lib.float64).type(T).dtype == T.dtype
        assert lib.zeros(2).type(f"torch.{name}").dtype == T.dtype
    assert ember.FloatTensor.layout == ember.strided
    assert isinstance(ember.nn.Parameter(ember.zeros(2)), ember.FloatTensor)
    assert not issubclass(ember.FloatTensor, ember.Tensor) and not issubclass(torch.FloatTensor, torch.Tensor)
    assert ember.FloatTensor.__name__ == "FloatTensor"


def test_from_tensor_aliases():
    for lib in (torch, ember):
        x = lib.ones(3)
        y = lib.FloatTensor(x)
        assert y is not x and y.data_ptr() == x.data_ptr()
        y[0] = 5
        assert x[0].item() == 5
        g = lib.ones(2, requires_grad=True)
        a = lib.FloatTensor(g)
        assert a.requires_grad and type(a.grad_fn).__name__ == "AliasBackward0"
        assert lib.LongTensor(lib.tensor([1, 2])).dtype == lib.int64


@pytest.mark.parametrize("call", [
    lambda lib: lib.FloatTensor(lib.tensor([1, 2])),
    lambda lib: lib.LongTensor(lib.tensor([1.0])),
    lambda lib: lib.BoolTensor(lib.zeros(1, dtype=lib.complex64)),
    lambda lib: lib.HalfTensor(lib.zeros(1, dtype=lib.float64)),
    lambda lib: lib.ByteTensor(lib.zeros(1, dtype=lib.int8)),
    lambda lib: lib.FloatTensor(2.5),
    lambda lib: lib.FloatTensor(None),
    lambda lib: lib.FloatTensor(True),
    lambda lib: lib.FloatTensor(np.float64(2.0)),
    lambda lib: lib.FloatTensor("a"),
    lambda lib: lib.FloatTensor(2, 3.0),
    lambda lib: lib.FloatTensor(-1),
    lambda lib: lib.FloatTensor(2, -3),
    lambda lib: lib.FloatTensor([1], [2]),
    lambda lib: lib.FloatTensor([[1], [2, 3]]),
    lambda lib: lib.FloatTensor(2, device="meta"),
    lambda lib: lib.FloatTensor([1], device="cuda"),
    lambda lib: lib.FloatTensor([1, 2], dtype=lib.float64),
    lambda lib: lib.FloatTensor(2, 3, requires_grad=True),
    lambda lib: lib.FloatTensor(3, foo=1),
    lambda lib: lib.FloatTensor(lib.ones(1), device="cpu"),
])
def test_errors(call):
    same_error(call)


def test_cuda_types():
    names = [n for n in NAMES]
    for n in names:
        T = getattr(ember.cuda, n)
        assert T.is_cuda and str(T.dtype)[6:] == str(getattr(torch.cuda, n).dtype)[6:]
        assert not isinstance(ember.zeros(1, dtype=T.dtype), T)
    try:
        ember.zeros(1, device="cuda")
    except Exception as e:  # CUDA unusable here
        if not ember.cuda.is_available():  # torch's CPU-only build: a TypeError naming the type
            same_error(lambda lib: lib.cuda.FloatTensor([1, 2]))
        else:  # present but failing to start: as the factories fail
            with pytest.raises(type(e)):
                ember.cuda.FloatTensor([1, 2])
        return
    x = ember.cuda.FloatTensor([1, 2])
    assert x.device.type == "cuda" and isinstance(x, ember.cuda.FloatTensor)
    assert x.type() == "torch.cuda.FloatTensor"
    assert not isinstance(x, ember.FloatTensor)
    assert ember.zeros(1).type(ember.cuda.DoubleTensor).device.type == "cuda"
