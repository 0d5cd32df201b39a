"""torch.signal.windows.* (ember/signal) against torch 2.13: values for sym/periodic windows of every
length class, the OpInfo samples, dtypes, requires_grad, keyword arguments and error texts."""
import pytest
import torch

import ember
from tests.compat._opdb_samples import opinfos, run_samples
from tests.harness import check, same_error

NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
         "hamming", "hann", "kaiser", "nuttall"]
EXTRA = {"general_cosine": {"a": [0.46, 0.23, 0.31]}}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values(name, dtype):
    kw = EXTRA.get(name, {})
    for M in (0, 1, 2, 5, 8, 51):
        for sym in (True, False):
            t = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype), **kw)
            e = getattr(ember.signal.windows, name)(M, sym=sym, dtype=getattr(ember, dtype), **kw)
            check(e, t)


@pytest.mark.parametrize("name", NAMES)
def test_opinfo_samples(name):
    for op in opinfos(names={f"signal.windows.{name}"}):
        assert run_samples(op, torch.float32, atol=1e-5, rtol=1e-5)
        assert run_samples(op, torch.float64)


def test_keywords_and_default_dtype():
    check(ember.signal.windows.exponential(7, center=2.0, tau=0.5, sym=False),
          torch.signal.windows.exponential(7, center=2.0, tau=0.5, sym=False))
    check(ember.signal.windows.gaussian(9, std=2.5), torch.signal.windows.gaussian(9, std=2.5))
    check(ember.signal.windows.kaiser(9, beta=4.0, sym=False), torch.signal.windows.kaiser(9, beta=4.0, sym=False))
    check(ember.signal.windows.general_hamming(6, alpha=0.6), torch.signal.windows.general_hamming(6, alpha=0.6))
    e = ember.signal.windows.hann(5, requires_grad=True)
    t = torch.signal.windows.hann(5, requires_grad=True)
    assert e.requires_grad == t.requires_grad
    old = ember.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        check(ember.signal.windows.blackman(6), torch.signal.windows.blackman(6))
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", NAMES)
def test_errors(name):
    kw = EXTRA.get(name, {})
    same_error(lambda lib: getattr(lib.signal.windows, name)(-1, **kw))
    same_error(lambda lib: getattr(lib.signal.windows, name)(4, dtype=lib.int32, **kw))
    same_error(lambda lib: getattr(lib.signal.windows, name)(4, dtype=lib.float16, **kw))
    same_error(lambda lib: getattr(lib.signal.windows, name)(4, layout=lib.sparse_coo, **kw))


def test_argument_errors():
    same_error(lambda lib: lib.signal.windows.exponential(4, tau=0))
    same_error(lambda lib: lib.signal.windows.exponential(4, center=1.0))
    same_error(lambda lib: lib.signal.windows.gaussian(4, std=-1.0))
    same_error(lambda lib: lib.signal.windows.kaiser(4, beta=-1.0))
    same_error(lambda lib: lib.signal.windows.general_cosine(4, a=[]))
    same_error(lambda lib: lib.signal.windows.general_cosine(4, a=3))
    same_error(lambda lib: lib.signal.windows.hann(4, 5))
