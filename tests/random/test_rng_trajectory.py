"""Issue 15: a program seeded once (data, initial weights, dropout masks, shuffle order all drawn
from the stream) gives torch's losses, with no weights copied between the libraries."""
import numpy as np
import pytest
import torch
from rng_harness import INTEL, MKL_BERNOULLI

import ember


def _train(L, steps=50, workers=0):
    L.manual_seed(0)
    x = L.randn(256, 20)
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    model = L.nn.Sequential(L.nn.Linear(20, 64), L.nn.ReLU(), L.nn.Dropout(0.2),
                            L.nn.Linear(64, 32), L.nn.Tanh(), L.nn.Dropout(0.1), L.nn.Linear(32, 3))
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = L.utils.data.DataLoader(L.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True,
                                     num_workers=workers, persistent_workers=workers > 0)
    losses = []
    while len(losses) < steps:
        for xb, yb in loader:
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    return np.array(losses)


def test_mlp_with_dropout_trajectory():
    if INTEL:
        pytest.skip(MKL_BERNOULLI)
    t = _train(torch)
    e = _train(ember)
    assert np.abs(e - t).max() <= 1e-5, np.abs(e - t).max()


def test_mlp_trajectory_with_two_workers():
    """The same with DataLoader(num_workers=2): the shuffle order and the base seed come from the
    main process's stream, so the losses still follow torch's."""
    if INTEL:
        pytest.skip(MKL_BERNOULLI)
    t = _train(torch, 20, workers=2)
    e = _train(ember, 20, workers=2)
    assert np.abs(e - t).max() <= 1e-5, np.abs(e - t).max()


def _train_lstm(L, steps=30):
    L.manual_seed(1)
    x = L.randn(64, 12, 6)
    y = L.randint(0, 4, (64,))
    lstm = L.nn.LSTM(6, 16, num_layers=2, dropout=0.2, batch_first=True)
    head = L.nn.Sequential(L.nn.Dropout(0.3), L.nn.Linear(16, 4))
    opt = L.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=1e-2)
    losses = []
    for _ in range(steps):
        idx = L.randperm(64)[:16]
        out, _ = lstm(x[idx])
        loss = L.nn.functional.cross_entropy(head(out[:, -1]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_lstm_with_dropout_trajectory():
    if INTEL:
        pytest.skip(MKL_BERNOULLI)
    t = _train_lstm(torch)
    e = _train_lstm(ember)
    assert np.abs(e - t).max() <= 1e-5, np.abs(e - t).max()
