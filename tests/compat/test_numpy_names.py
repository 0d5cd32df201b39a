"""torch's argument parser takes NumPy's names for two parameters: axis= for dim and keepdims= for
keepdim (python_arg_parser.cpp numpy_compatibility_arg_names), in functions and Tensor methods."""
import numpy as np
import pytest
import torch

import ember
from harness import check, same_error

CALLS = [
    lambda lib, t, i: lib.sum(t, axis=0),
    lambda lib, t, i: lib.sum(t, axis=(0, 1), keepdims=True),
    lambda lib, t, i: lib.sum(t, 1, keepdims=True),
    lambda lib, t, i: t.sum(axis=1, keepdims=True),
    lambda lib, t, i: lib.sum(t, axis=0, dtype=lib.float64),
    lambda lib, t, i: lib.mean(t, axis=0, keepdims=True),
    lambda lib, t, i: t.mean(axis=(0, 1)),
    lambda lib, t, i: lib.prod(t, axis=1, keepdims=True),
    lambda lib, t, i: lib.amax(t, axis=1),
    lambda lib, t, i: lib.amin(t, axis=(0, 1), keepdims=True),
    lambda lib, t, i: lib.logsumexp(t, axis=1),
    lambda lib, t, i: lib.std(t, axis=0, keepdims=True),
    lambda lib, t, i: lib.var(t, axis=1),
    lambda lib, t, i: lib.var_mean(t, axis=0)[0],
    lambda lib, t, i: t.max(axis=0)[0],
    lambda lib, t, i: t.max(axis=1, keepdims=True).indices,
    lambda lib, t, i: lib.min(t, axis=1).values,
    lambda lib, t, i: lib.argmax(t, axis=1),
    lambda lib, t, i: t.argmin(axis=0, keepdims=True),
    lambda lib, t, i: lib.median(t, axis=1).values,
    lambda lib, t, i: lib.all(t > 1, axis=0),
    lambda lib, t, i: lib.any(t > 4, axis=1, keepdims=True),
    lambda lib, t, i: lib.count_nonzero(t, axis=0),
    lambda lib, t, i: lib.cumsum(t, axis=0),
    lambda lib, t, i: t.cumprod(axis=1),
    lambda lib, t, i: t.softmax(axis=0),
    lambda lib, t, i: lib.log_softmax(t, axis=1),
    lambda lib, t, i: lib.cat([t, t], axis=1),
    lambda lib, t, i: lib.stack([t, t], axis=1),
    lambda lib, t, i: lib.squeeze(t[:1], axis=0),
    lambda lib, t, i: t[:, :1].squeeze(axis=1),
    lambda lib, t, i: lib.unsqueeze(t, axis=0),
    lambda lib, t, i: t.unsqueeze(axis=2),
    lambda lib, t, i: lib.gather(t, axis=1, index=i),
    lambda lib, t, i: t.gather(axis=1, index=i),
    lambda lib, t, i: lib.select(t, axis=1, index=0),
    lambda lib, t, i: lib.narrow(t, axis=1, start=0, length=2),
    lambda lib, t, i: lib.topk(t, 2, axis=0).values,
    lambda lib, t, i: lib.sort(t, axis=0, descending=True).values,
    lambda lib, t, i: lib.flip(t, (0,)).sum(axis=0),
    lambda lib, t, i: lib.sum(t, axis=0, out=lib.empty(3)),
    lambda lib, t, i: lib.fft.fft(t, axis=0),
]


@pytest.mark.parametrize("k", range(len(CALLS)))
def test_numpy_names(k):
    rng = np.random.default_rng(k)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    idx = np.array([[0], [2]])
    e = CALLS[k](ember, ember.from_numpy(a.copy()), ember.from_numpy(idx))
    t = CALLS[k](torch, torch.from_numpy(a.copy()), torch.from_numpy(idx))
    check(e, t)


def test_size_axis():
    for lib in (torch, ember):
        assert lib.ones(2, 3).size(axis=1) == 3


def test_gradients_through_axis():
    for lib in (torch, ember):
        x = lib.ones(2, 3, requires_grad=True)
        x.sum(axis=1, keepdims=True).mean(axis=0).backward()
        assert x.grad.tolist() == [[0.5] * 3] * 2


@pytest.mark.parametrize("call", [
    lambda lib: lib.sum(lib.ones(2), dimm=0),
    lambda lib: lib.sum(lib.ones(2), axis="a"),
    lambda lib: lib.nn.functional.softmax(lib.ones(2), axis=0),   # a Python function in torch: no alias
    lambda lib: lib.ones(2).transpose(axis0=0, axis1=1),
])
def test_errors(call):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError):
        call(ember)


@pytest.mark.parametrize("call", [
    lambda lib: lib.gather(lib.ones(2, 2), 1, lib.zeros(2, 1, dtype=lib.long), axis=1),
    lambda lib: lib.sum(lib.ones(2, 2), dim=0, axis=1),
    lambda lib: lib.ones(2, 2).sum(0, keepdim=True, keepdims=True),
    lambda lib: lib.cumsum(lib.ones(2), 0, axis=0),
    lambda lib: lib.ones(2).size(0, axis=0),
])
def test_both_spellings_refused_like_torch(call):
    same_error(call)
