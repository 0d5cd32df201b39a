"""torch.get_num_threads / set_num_threads / the inter-op pair: defaults, errors, and numba's pool."""
import subprocess
import sys

import pytest
import torch

import ember


def test_defaults_match_torch():
    code = ("import torch, ember; print(torch.get_num_threads() == ember.get_num_threads(), "
            "torch.get_num_interop_threads() == ember.get_num_interop_threads())")
    for env in ({}, {"OMP_NUM_THREADS": "1"}):
        import os
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, **env}, check=True).stdout.split()
        assert out == ["True", "True"], env


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_errors_match_torch(bad):
    errs = []
    for m in (torch, ember):
        try:
            m.set_num_threads(bad)
            errs.append(None)
        except Exception as e:
            errs.append((type(e), str(e)))
    assert errs[0] == errs[1]


def test_set_and_get():
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
    finally:
        ember.set_num_threads(old)


def test_interop_once_per_process():
    code = ("import {m}\n"
            "for n in (0, 3, 2):\n"
            "    try:\n"
            "        {m}.set_num_interop_threads(n); print('ok')\n"
            "    except RuntimeError as e:\n"
            "        print(e)\n")
    outs = [subprocess.run([sys.executable, "-c", code.format(m=m)], capture_output=True, text=True,
                           check=True).stdout for m in ("torch", "ember")]
    assert outs[0] == outs[1]


def test_numba_pool_follows():
    numba = pytest.importorskip("numba", reason="pip install numba")
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert numba.get_num_threads() == 1
    finally:
        ember.set_num_threads(old)
