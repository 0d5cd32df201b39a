"""examples/per_sample_grads.py and benchmarks/func_vmap.py run end to end (reduced sizes): the
per-sample gradients from vmap(grad) equal the loop's, in ember and (the benchmark) torch.func's."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(args, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def test_per_sample_grads_example():
    pytest.importorskip("sklearn", reason="the digits data set needs scikit-learn (pip install scikit-learn)")
    out = _run([os.path.join(ROOT, "examples", "per_sample_grads.py"), "--n", "12", "--steps", "2",
                "--repeat", "1"])
    assert "per-sample gradients of 6090 parameters for 12 digits" in out
    assert "0.weight   (12, 16, 1, 3, 3)" in out
    assert out.rstrip().endswith("OK")


def test_func_vmap_benchmark_runs():
    out = _run([os.path.join(ROOT, "benchmarks", "func_vmap.py"), "--batch", "8", "--repeat", "1"])
    assert "| ember |" in out and "| torch |" in out
