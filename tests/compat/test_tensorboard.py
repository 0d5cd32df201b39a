"""ember.utils.tensorboard.SummaryWriter against torch's: the same calls write event files with the
same summaries (tags, steps, values, histograms, images, text, hparams)."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember

tb = pytest.importorskip("tensorboard", reason="install the `tensorboard` extra (pip install tensorboard)")
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402


def _events(logdir):
    out = []
    for f in sorted(glob.glob(os.path.join(logdir, "**", "events.out.tfevents.*"), recursive=True)):
        rel = os.path.relpath(os.path.dirname(f), logdir)
        if rel.split(os.sep)[0].replace(".", "").isdigit():
            rel = "<run>" + rel[len(rel.split(os.sep)[0]):]  # add_hparams names its run by time
        for e in EventFileLoader(f).Load():
            e.ClearField("wall_time")
            out.append((rel, e.SerializeToString(deterministic=True)))
    return sorted(out)


def _write(lib, logdir):
    from importlib import import_module
    SummaryWriter = import_module(f"{lib.__name__}.utils.tensorboard").SummaryWriter
    rng = np.random.default_rng(0)
    vals = rng.standard_normal(1000).astype(np.float32)
    img = rng.random((3, 8, 10)).astype(np.float32)
    imgs = (rng.random((5, 1, 6, 6)) * 255).astype(np.uint8)
    with SummaryWriter(logdir, purge_step=0) as w:
        for step in range(3):
            w.add_scalar("loss", lib.tensor(1.0 / (step + 1)), step)
            w.add_scalar("acc", 0.5 + step / 10, global_step=step, new_style=True)
            w.add_scalars("run", {"a": step, "b": lib.tensor(2.0 * step)}, step, walltime=1.0)
        w.add_histogram("weights", lib.from_numpy(vals), 0)
        w.add_histogram("w_auto", lib.from_numpy(vals), 1, bins="auto", max_bins=10)
        w.add_histogram_raw("raw", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 2, 1], 0)
        w.add_image("img", lib.from_numpy(img), 0)
        w.add_image("img_hwc", lib.from_numpy(img.transpose(1, 2, 0).copy()), 1, dataformats="HWC")
        w.add_images("grid", lib.from_numpy(imgs), 0)
        w.add_text("note", "hello *tensorboard*", 0)
        w.add_tensor("tensor", lib.arange(6, dtype=lib.float32).reshape(2, 3), 0)
        w.add_hparams({"lr": 0.1, "opt": "sgd", "flag": True}, {"hp/loss": 0.25}, run_name="hp")
        assert w.get_logdir() == logdir


def test_same_events_as_torch(tmp_path):
    _write(torch, str(tmp_path / "torch"))
    _write(ember, str(tmp_path / "ember"))
    t, e = _events(str(tmp_path / "torch")), _events(str(tmp_path / "ember"))
    assert len(e) == len(t) > 20
    assert [r for r, _ in e] == [r for r, _ in t]
    assert e == t


def test_default_logdir_and_errors(tmp_path, monkeypatch):
    from ember.utils.tensorboard import SummaryWriter
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_x")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_x")
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        w.add_scalar("bad", ember.ones(2))
    with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
        w.add_hparams([1], {})
    with pytest.raises(NotImplementedError, match="graph capture"):
        w.add_graph(ember.nn.Linear(1, 1), ember.ones(1, 1))
    w.close()
    w.close()
    assert glob.glob(os.path.join("runs", "*", "events.out.tfevents.*"))


def test_import_error_without_tensorboard():
    """Without the package, importing the module says what torch's says."""
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "for lib in ('torch', 'ember'):\n"
            "    try:\n"
            "        __import__(lib + '.utils.tensorboard')\n"
            "    except ImportError as e:\n"
            "        print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1], out.stdout + out.stderr
