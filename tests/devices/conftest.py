"""The `device` fixture of the device-generic suites: cpu; meta (shapes and dtypes only); cuda
(numba's CUDA simulator in CI, a real GPU where one is present: tests/conftest.py sets
EMBER_CUDA_SIM); adev, the asynchronous PrivateUse1 backend of examples/async_device."""
import os
import sys

import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from examples import async_device  # noqa: E402

DEVICES = ["cpu", "meta", "cuda", "adev"]


@pytest.fixture(params=DEVICES)
def device(request):
    d = request.param
    if d == "cuda" and not ember.cuda.is_available():
        pytest.skip("no CUDA backend here (numba with a GPU, or EMBER_CUDA_SIM=1)")
    if d == "adev":
        async_device.install()
        try:
            yield d
        finally:
            async_device.uninstall()
        return
    yield d
