"""Issue 15's trajectories for a small CNN and a tiny GPT: each library seeds once and draws its
own data, initial weights and dropout masks; no weights are copied. The losses must equal torch's
for 50 steps within the float noise of the kernels (1e-5)."""
import numpy as np
import pytest
import torch
from rng_harness import INTEL, MKL_BERNOULLI

import ember

pytestmark = pytest.mark.skipif(INTEL, reason=MKL_BERNOULLI)


def _cnn_losses(L, steps=50):
    L.manual_seed(3)
    x = L.randn(128, 1, 8, 8)
    y = L.randint(0, 10, (128,))
    nn = L.nn
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Dropout(0.25),
                          nn.Linear(16 * 4 * 4, 10))
    opt = L.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        idx = L.randperm(128)[:32]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def _gpt_losses(L, steps=50, vocab=17, block=12, width=32):
    L.manual_seed(5)
    nn = L.nn
    data = L.randint(0, vocab, (400,))
    emb, pos = nn.Embedding(vocab, width), nn.Embedding(block, width)
    layer = nn.TransformerEncoderLayer(width, 4, 64, dropout=0.1, batch_first=True, norm_first=True)
    body = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    head = nn.Linear(width, vocab)
    params = [*emb.parameters(), *pos.parameters(), *body.parameters(), *head.parameters()]
    opt = L.optim.AdamW(params, lr=3e-3)
    mask = nn.Transformer.generate_square_subsequent_mask(block)
    losses = []
    for _ in range(steps):
        starts = L.randint(0, 400 - block - 1, (8,))
        xb = L.stack([data[s:s + block] for s in starts.tolist()])
        yb = L.stack([data[s + 1:s + block + 1] for s in starts.tolist()])
        h = emb(xb) + pos(L.arange(block))
        logits = head(body(h, mask=mask, is_causal=True))
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_cnn_trajectory():
    t, e = _cnn_losses(torch), _cnn_losses(ember)
    assert np.abs(e - t).max() <= 1e-5, np.abs(e - t).max()


def test_gpt_trajectory():
    t, e = _gpt_losses(torch), _gpt_losses(ember)
    assert np.abs(e - t).max() <= 1e-5, np.abs(e - t).max()
