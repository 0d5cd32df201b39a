"""ember.cuda without a CUDA backend (torch.cuda's answers on a CPU-only build).

The checks live in unavailable_checks.py and run in a fresh interpreter without the simulator:
the rest of tests/cuda turns it on for the whole worker (see conftest.py)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_unavailable_in_subprocess():
    env = dict(os.environ)
    env["EMBER_CUDA_SIM"] = "0"   # conftest.py keeps an explicit value
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        os.path.join(HERE, "unavailable_checks.py")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    if " passed" not in r.stdout:  # every check skipped itself: this machine has a real GPU
        assert " skipped" in r.stdout and " failed" not in r.stdout, r.stdout[-4000:]
        pytest.skip("a real GPU is present: nothing to check without CUDA")
