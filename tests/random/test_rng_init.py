"""Issue 15: nn.init and every layer's default initialisation give torch's weights after the same
manual_seed (the same draws, in the same order)."""
import pytest
import torch
from rng_harness import assert_same, same_state

import ember


def I(L):  # noqa: E743
    return L.nn.init


def W(L, *s):
    return L.empty(*s)


INIT = {
    "uniform_": lambda L: I(L).uniform_(W(L, 30, 20), -0.3, 0.4),
    "normal_": lambda L: I(L).normal_(W(L, 30, 20), 0.1, 0.02),
    "trunc_normal_": lambda L: I(L).trunc_normal_(W(L, 30, 20), std=0.02),
    "trunc_normal_-narrow": lambda L: I(L).trunc_normal_(W(L, 30, 20), mean=0., std=1., a=2.0, b=3.0),
    "trunc_normal_-small": lambda L: I(L).trunc_normal_(W(L, 5), std=1.0, a=-0.5, b=0.5),
    "xavier_uniform_": lambda L: I(L).xavier_uniform_(W(L, 30, 20)),
    "xavier_normal_": lambda L: I(L).xavier_normal_(W(L, 30, 20), gain=2.0),
    "kaiming_uniform_": lambda L: I(L).kaiming_uniform_(W(L, 16, 3, 3, 3), a=5 ** 0.5),
    "kaiming_normal_": lambda L: I(L).kaiming_normal_(W(L, 16, 3, 3, 3), mode="fan_out",
                                                      nonlinearity="relu"),
    "sparse_": lambda L: I(L).sparse_(W(L, 10, 6), 0.3),
    "generator=": lambda L: I(L).normal_(W(L, 20), generator=L.Generator().manual_seed(3)),
}


@pytest.mark.parametrize("name", sorted(INIT))
def test_init(name):
    torch.manual_seed(7)
    t = INIT[name](torch)
    ember.manual_seed(7)
    e = INIT[name](ember)
    assert_same(e, t, name)
    same_state()


def test_orthogonal_draws_the_same_normals():
    """orthogonal_ draws torch's normals; its QR runs on NumPy's LAPACK (torch: MKL), so the
    factor agrees to float32 rounding, and the stream stays in step."""
    torch.manual_seed(1)
    t = I(torch).orthogonal_(W(torch, 6, 4))
    ember.manual_seed(1)
    e = I(ember).orthogonal_(W(ember, 6, 4))
    assert abs(e.numpy() - t.numpy()).max() < 1e-5
    same_state()


def _params(m):
    return [p.detach() for p in m.parameters()]


LAYERS = {
    "Linear": lambda L: L.nn.Linear(20, 7),
    "Linear-f64": lambda L: L.nn.Linear(20, 7, dtype=L.float64),
    "Conv1d": lambda L: L.nn.Conv1d(3, 8, 5),
    "Conv2d": lambda L: L.nn.Conv2d(3, 8, 3),
    "Conv3d": lambda L: L.nn.Conv3d(2, 4, 2),
    "ConvTranspose2d": lambda L: L.nn.ConvTranspose2d(3, 8, 3),
    "Embedding": lambda L: L.nn.Embedding(50, 16),
    "LSTM": lambda L: L.nn.LSTM(8, 16, 2),
    "GRU": lambda L: L.nn.GRU(8, 16, bidirectional=True),
    "RNN": lambda L: L.nn.RNN(8, 16),
    "MultiheadAttention": lambda L: L.nn.MultiheadAttention(16, 4),
    "Bilinear": lambda L: L.nn.Bilinear(4, 5, 3),
    "TransformerEncoderLayer": lambda L: L.nn.TransformerEncoderLayer(16, 4, 32),
    "norms": lambda L: L.nn.Sequential(L.nn.BatchNorm2d(3), L.nn.LayerNorm(5), L.nn.PReLU()),
    "MLP": lambda L: L.nn.Sequential(L.nn.Linear(64, 32), L.nn.ReLU(), L.nn.Linear(32, 10)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_default_init(name):
    torch.manual_seed(0)
    t = _params(LAYERS[name](torch))
    ember.manual_seed(0)
    e = _params(LAYERS[name](ember))
    assert_same(e, t, name)
    same_state()
