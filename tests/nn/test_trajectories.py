"""Acceptance: whole training runs agree with PyTorch.

An MLP, a CNN with BatchNorm and Dropout (Dropout in eval), an LSTM and a small GPT are built
in torch and in ember from the same code, given the same weights (copied through NumPy) and the
same data; after 20 optimizer steps (SGD with momentum or AdamW, each with an LR scheduler and
gradient clipping) the losses, the final weights and buffers agree within 1e-4 relative. Models
run in float64 so that the comparison measures the implementation, not rounding.
"""
import importlib.util
import math
import os

import numpy as np
import pytest
import torch

import ember

STEPS = 20
RTOL = 1e-4
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _missing(*names):
    """Which of the dotted names (relative to the ember module) are not there yet."""
    out = []
    for name in names:
        obj = ember
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                out.append(name)
                break
    return out


def needs(*names):
    missing = _missing(*names)
    return pytest.mark.xfail(bool(missing), strict=False,
                             reason=f"not in ember yet: {', '.join(missing)}")


def to_lib(lib, a):
    return lib.tensor(np.ascontiguousarray(a))


def copy_state(tmodel, emodel):
    """Give the ember model the torch model's parameters and buffers, through NumPy."""
    sd = {k: ember.tensor(v.detach().numpy().copy()) for k, v in tmodel.state_dict().items()}
    emodel.load_state_dict(sd)


def train(lib, model, batches, loss_fn, make_opt, make_sched, clip, steps=STEPS):
    opt = make_opt(lib, model)
    sched = make_sched(lib, opt)
    losses, norms = [], []
    for i in range(steps):
        x, y = batches[i % len(batches)]
        loss = loss_fn(lib, model(to_lib(lib, x)), to_lib(lib, y))
        opt.zero_grad()
        loss.backward()
        norms.append(float(lib.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        opt.step()
        sched.step()
        losses.append(loss.item())
    return losses, norms


def compare_runs(build, batches, loss_fn, make_opt, make_sched, clip, prepare=None):
    torch.manual_seed(0)
    tmodel = build(torch).double()
    emodel = build(ember).double()
    copy_state(tmodel, emodel)
    for model in (tmodel, emodel):
        model.train()
        if prepare is not None:
            prepare(model)
    t_losses, t_norms = train(torch, tmodel, batches, loss_fn, make_opt, make_sched, clip)
    e_losses, e_norms = train(ember, emodel, batches, loss_fn, make_opt, make_sched, clip)
    assert all(math.isfinite(v) for v in t_losses)
    np.testing.assert_allclose(e_losses, t_losses, rtol=RTOL, atol=0, err_msg="losses")
    np.testing.assert_allclose(e_norms, t_norms, rtol=RTOL, atol=0, err_msg="gradient norms")
    k = len(batches)
    assert sum(t_losses[-k:]) < sum(t_losses[:k]), "the reference run should make progress"
    t_sd, e_sd = tmodel.state_dict(), emodel.state_dict()
    assert list(e_sd) == list(t_sd)
    for k in t_sd:
        np.testing.assert_allclose(e_sd[k].numpy(), t_sd[k].detach().numpy(), rtol=RTOL,
                                   atol=1e-7, err_msg=f"state_dict[{k!r}]")
    return tmodel, emodel


def ce(lib, out, y):
    return lib.nn.functional.cross_entropy(out, y)


def mse(lib, out, y):
    return lib.nn.functional.mse_loss(out, y)


# ---------------------------------------------------------------------------------------------
# MLP: SGD with Nesterov momentum and weight decay, StepLR, clipping

@needs("nn.Linear", "nn.Tanh", "nn.ReLU", "nn.functional.cross_entropy", "optim.SGD",
       "optim.lr_scheduler.StepLR", "nn.utils.clip_grad_norm_")
def test_mlp_sgd_momentum():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 16), nn.ReLU(),
                             nn.Linear(16, 5))

    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((16, 20)), rng.integers(0, 5, 16)) for _ in range(4)]
    compare_runs(
        build, batches, ce,
        lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                     weight_decay=1e-4),
        lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=5, gamma=0.5),
        clip=1.0)


# ---------------------------------------------------------------------------------------------
# CNN with BatchNorm (training statistics, running buffers) and Dropout kept in eval mode:
# AdamW, CosineAnnealingLR, clipping; then the whole model in eval mode

@needs("nn.Conv2d", "nn.BatchNorm2d", "nn.MaxPool2d", "nn.Dropout", "nn.Flatten",
       "nn.functional.cross_entropy", "optim.AdamW", "optim.lr_scheduler.CosineAnnealingLR")
def test_cnn_batchnorm_dropout_adamw():
    def build(lib):
        nn = lib.nn
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Dropout(0.25), nn.Flatten(), nn.Linear(8 * 2 * 2, 3))

    def dropout_eval(model):
        for m in model.modules():
            if type(m).__name__ == "Dropout":
                m.eval()

    rng = np.random.default_rng(1)
    batches = [(rng.standard_normal((8, 1, 8, 8)), rng.integers(0, 3, 8)) for _ in range(3)]
    tmodel, emodel = compare_runs(
        build, batches, ce,
        lambda lib, m: lib.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.05),
        lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=STEPS),
        clip=0.5, prepare=dropout_eval)
    x = rng.standard_normal((5, 1, 8, 8))
    tmodel.eval()
    emodel.eval()
    with torch.no_grad(), ember.no_grad():
        t_out = tmodel(torch.tensor(x)).numpy()
        e_out = emodel(ember.tensor(x)).numpy()
    np.testing.assert_allclose(e_out, t_out, rtol=RTOL, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# LSTM (2 layers, batch_first) regression: SGD with momentum, ExponentialLR, clipping

@needs("nn.LSTM", "nn.functional.mse_loss", "optim.SGD", "optim.lr_scheduler.ExponentialLR")
def test_lstm_sgd_momentum():
    def build(lib):
        nn = lib.nn

        class Seq(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(5, 8, num_layers=2, batch_first=True)
                self.head = nn.Linear(8, 1)

            def forward(self, x):
                out, (h, c) = self.lstm(x)
                return self.head(out[:, -1]) + h[-1].sum(dim=1, keepdim=True) * 0.1

        return Seq()

    rng = np.random.default_rng(2)
    batches = []
    for _ in range(4):
        x = rng.standard_normal((6, 7, 5))
        batches.append((x, x.sum(axis=(1, 2))[:, None] * 0.1))
    compare_runs(
        build, batches, mse,
        lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.2, momentum=0.9),
        lambda lib, o: lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.95),
        clip=1.0)


# ---------------------------------------------------------------------------------------------
# A small GPT (examples/char_gpt.py): AdamW with weight-decay groups, warmup + cosine LambdaLR,
# clipping

def _char_gpt():
    spec = importlib.util.spec_from_file_location(
        "char_gpt_example", os.path.join(ROOT, "examples", "char_gpt.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs("nn.Embedding", "nn.LayerNorm", "nn.GELU", "nn.functional.scaled_dot_product_attention",
       "nn.functional.cross_entropy", "optim.AdamW", "optim.lr_scheduler.LambdaLR")
def test_small_gpt_adamw():
    mod = _char_gpt()
    vocab, block = 11, 8

    def build(lib):
        return mod.build_gpt(lib)(vocab, block, n_layer=2, n_embd=16, n_head=2, dropout=0.0)

    def gpt_loss(lib, logits, y):
        return lib.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))

    rng = np.random.default_rng(3)
    batches = []
    for _ in range(3):
        seq = rng.integers(0, vocab, (4, block + 1))
        batches.append((seq[:, :-1], seq[:, 1:]))

    def make_build(lib):
        gpt = build(lib)
        forward = gpt.forward
        # the example's forward returns (logits, loss); keep only the logits here
        gpt.forward = lambda idx: forward(idx)[0]
        return gpt

    compare_runs(
        make_build, batches, gpt_loss,
        lambda lib, m: lib.optim.AdamW(m.param_groups(0.1), lr=3e-3, betas=(0.9, 0.95)),
        lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, mod.cosine_with_warmup(4, STEPS)),
        clip=1.0)
