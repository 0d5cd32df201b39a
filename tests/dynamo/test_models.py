"""Compiled models train like eager: the digits CNN and a tiny GPT, 20 steps, same losses (1e-5)."""
import os
import sys

import pytest

import ember
import ember._dynamo as dynamo

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from char_gpt import build_gpt  # noqa: E402

BACKENDS = ["eager", "aot_eager", "inductor", "counting"]


def _backend(name, counter):
    if name != "counting":
        return name

    def be(gm, example_inputs):
        counter.append(gm)
        return gm.forward
    return be


def _cnn():
    nn = ember.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 2 * 2, 10))


def _train(model, step_model, data, steps=20, opt_cls=ember.optim.Adam, **kw):
    opt = opt_cls(model.parameters(), lr=1e-2, **kw)
    losses = []
    for i in range(steps):
        x, y = data[i % len(data)]
        out = step_model(x)
        if isinstance(out, tuple):
            loss = out[1] if y is None else ember.nn.functional.cross_entropy(out[0], y)
        else:
            loss = ember.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("backend", BACKENDS)
def test_digits_cnn_trains_like_eager(backend):
    dynamo.reset()
    g = ember.Generator().manual_seed(0)
    data = [(ember.randn(8, 1, 8, 8, generator=g), ember.randint(0, 10, (8,), generator=g)) for _ in range(4)]
    ember.manual_seed(0)
    ref_model = _cnn()
    ember.manual_seed(0)
    model = _cnn()
    ref = _train(ref_model, ref_model, data)
    counter = []
    compiled = ember.compile(model, backend=_backend(backend, counter))
    got = _train(model, compiled, data)
    assert max(abs(a - b) for a, b in zip(ref, got)) <= 1e-5, (ref, got)
    for p, q in zip(ref_model.parameters(), model.parameters()):
        assert (p - q).abs().max().item() <= 1e-5
    assert compiled._compiled.n_compiles == 1
    if backend == "counting":
        assert len(counter) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_tiny_gpt_trains_like_eager(backend):
    dynamo.reset()
    GPT = build_gpt(ember)
    g = ember.Generator().manual_seed(1)
    data = []
    for _ in range(4):
        idx = ember.randint(0, 11, (2, 8), generator=g)
        data.append((idx, ember.randint(0, 11, (2, 8), generator=g)))
    ember.manual_seed(0)
    ref_model = GPT(11, 8, n_layer=1, n_embd=16, n_head=2, dropout=0.1)
    ember.manual_seed(0)
    model = GPT(11, 8, n_layer=1, n_embd=16, n_head=2, dropout=0.1)
    counter = []
    compiled = ember.compile(model, backend=_backend(backend, counter))

    def run(m, fwd):
        ember.manual_seed(3)
        opt = ember.optim.AdamW(m.parameters(), lr=1e-2)
        losses = []
        for i in range(20):
            idx, tgt = data[i % len(data)]
            _, loss = fwd(idx, tgt)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses
    ref = run(ref_model, ref_model)
    got = run(model, compiled)
    assert max(abs(a - b) for a, b in zip(ref, got)) <= 1e-5, (ref, got)
    assert compiled._compiled.n_compiles == 1
    if backend in ("aot_eager", "inductor"):
        _, loss = compiled(*data[0])
        assert loss.grad_fn.name() == "CompiledFunctionBackward"
