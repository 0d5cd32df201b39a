"""torch.stft / torch.istft (and the Tensor methods) against torch 2.13: spectra, gradients,
round trips, options, warnings and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from harness import same_error

CASES = [
    ((40,), 8, dict(window="hann")),
    ((2, 40), 8, dict(window="hann", hop_length=3)),
    ((2, 50), 16, dict(window="hann", win_length=10, hop_length=4)),
    ((2, 50), 16, dict(window="hann", center=False)),
    ((50,), 16, dict(window="hann", normalized=True)),
    ((50,), 16, dict(window="hann", onesided=False)),
    ((50,), 16, dict(window="hann", pad_mode="constant")),
    ((50,), 16, dict()),
    ((2, 64), 16, dict(window="hann", dtype="float64")),
    ((3, 400), 64, dict(window="hann", hop_length=16)),
]


@pytest.mark.filterwarnings("ignore:A window was not provided")
@pytest.mark.parametrize("shape,n_fft,kw", CASES)
def test_stft_istft_match_torch(shape, n_fft, kw):
    kw = dict(kw)
    dtype = kw.pop("dtype", "float32")
    x = np.random.default_rng(n_fft + len(shape)).standard_normal(shape).astype(dtype)
    res = {}
    for lib in (ember, torch):
        k = dict(kw)
        if k.get("window") == "hann":
            k["window"] = lib.hann_window(k.get("win_length") or n_fft, dtype=getattr(lib, dtype))
        xx = lib.tensor(x, requires_grad=True)
        s = lib.stft(xx, n_fft, return_complex=True, **k)
        (s.abs() ** 2).sum().backward()
        inv = None
        if k.get("window") is not None and k.get("center", True):
            kk = {a: b for a, b in k.items() if a not in ("pad_mode", "onesided")}
            inv = s.detach().istft(n_fft, length=shape[-1], onesided=k.get("onesided"), **kk).numpy()
        res[lib] = (s.detach().numpy(), xx.grad.numpy(), inv, str(s.dtype).split(".")[-1])
    e, t = res[ember], res[torch]
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert e[3] == t[3]
    np.testing.assert_allclose(e[0], t[0], rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(e[1], t[1], rtol=tol * 100, atol=tol * 100)
    if t[2] is not None:
        np.testing.assert_allclose(e[2], t[2], rtol=tol * 10, atol=tol * 10)
        np.testing.assert_allclose(e[2], x, rtol=tol * 10, atol=tol * 10)   # the round trip


def test_return_complex_false_and_warnings():
    x = np.random.default_rng(0).standard_normal(40).astype(np.float32)
    out = {}
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.stft(lib.tensor(x), 8, return_complex=True)   # the missing-window warning, once per process
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = lib.stft(lib.tensor(x), 8, return_complex=False)
        out[lib] = (r.numpy(), sorted(str(m.message)[:40] for m in w))
    np.testing.assert_allclose(out[ember][0], out[torch][0], atol=1e-5)
    assert out[ember][1] == out[torch][1]


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_errors():
    same_error(lambda lib: lib.stft(lib.randn(2, 40), 8))
    same_error(lambda lib: lib.stft(lib.randn(2, 40), 8, win_length=10, return_complex=True))
    same_error(lambda lib: lib.stft(lib.randn(2, 40), 8, hop_length=0, return_complex=True))
    same_error(lambda lib: lib.stft(lib.randn(5), 8, center=False, return_complex=True))
    same_error(lambda lib: lib.stft(lib.randn(2, 2, 40), 8, return_complex=True))
    same_error(lambda lib: lib.stft(lib.randn(2, 40), 8, window=lib.ones(7), return_complex=True))
    same_error(lambda lib: lib.istft(lib.randn(5, 3, 2), 8))
    same_error(lambda lib: lib.istft(lib.randn(5, 3, dtype=lib.complex64), 8, onesided=False))
