import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
# The CUDA backend's tests (tests/cuda, tests/devices) run on numba's CUDA simulator unless told
# otherwise; it must be chosen before ember first touches numba.cuda, so it is set at collection.
# `EMBER_CUDA_SIM=0 pytest tests` runs the same tests on a real GPU.
os.environ.setdefault("EMBER_CUDA_SIM", "1")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
