import os

import pytest

import ember._dynamo as dynamo
from ember._inductor import config


@pytest.fixture(params=["numba", "numpy"])
def kernel_backend(request):
    """Runs a test with the numba code generator and again with the NumPy one."""
    if request.param == "numba":
        pytest.importorskip("numba", reason="the numba kernel backend needs numba (pip install ember[test])")
        if os.environ.get("EMBER_INDUCTOR_BACKEND", "").lower() == "numpy":
            pytest.skip("EMBER_INDUCTOR_BACKEND=numpy selects the NumPy generator (the numpy cases run)")
    old = config.kernel_backend
    config.kernel_backend = request.param
    dynamo.reset()
    yield request.param
    config.kernel_backend = old
    dynamo.reset()
