import os

import pytest

import ember
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


def _make_train_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.fixture
def train_step():
    """step = train_step(model, opt): zero_grad, cross_entropy forward, backward, opt.step()."""
    return _make_train_step
