"""Recurrent layers (RNN, LSTM, GRU and their cells) against torch: weights copied through NumPy,
outputs, final states and the gradients of the input, the initial state and every parameter."""
import copy
import math
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember
from harness import check, same_error


def _copy_params(e_mod, t_mod):
    en = [n for n, _ in e_mod.named_parameters()]
    tn = [n for n, _ in t_mod.named_parameters()]
    assert en == tn
    with ember.no_grad():
        for ep, tp in zip(e_mod.parameters(), t_mod.parameters()):
            ep.copy_(ember.from_numpy(tp.detach().numpy().copy()))


def _same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _flat(o):
    if isinstance(o, (tuple, list)):
        return [x for y in o for x in _flat(y)]
    return [o]


def _pair(shape, dtype, rng, grad=True):
    a = rng.standard_normal(shape).astype(dtype)
    e = ember.from_numpy(a.copy()).requires_grad_(grad)
    t = torch.from_numpy(a.copy()).requires_grad_(grad)
    return e, t


def _tols(dtype):
    return (1e-12, 1e-10) if dtype == "float64" else (2e-5, 1e-4)


def _make(name, dtype, *args, **kw):
    t = getattr(torch.nn, name)(*args, **kw).to(getattr(torch, dtype))
    e = getattr(ember.nn, name)(*args, **kw).to(getattr(ember, dtype))
    _copy_params(e, t)
    return e, t


def _run(e_mod, t_mod, e_args, t_args, dtype):
    """Forward both, compare every output; backward a random weighting of all outputs, compare the
    gradients of the inputs (tensors that require grad) and of every parameter."""
    atol, rtol = _tols(dtype)
    eo, to = e_mod(*e_args), t_mod(*t_args)
    check(eo, to, atol=atol, rtol=rtol)
    rng = np.random.default_rng(7)
    e_loss, t_loss = 0, 0
    for a, b in zip(_flat(eo), _flat(to)):
        w = rng.standard_normal(tuple(b.shape))
        e_loss = e_loss + (a * ember.tensor(w, dtype=a.dtype)).sum()
        t_loss = t_loss + (b * torch.tensor(w, dtype=b.dtype)).sum()
    e_loss.backward()
    t_loss.backward()
    for a, b in zip(_flat(e_args), _flat(t_args)):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            check(a.grad, b.grad, atol=atol, rtol=rtol)
    for (n, ep), (_, tp) in zip(e_mod.named_parameters(), t_mod.named_parameters()):
        assert ep.grad is not None, n
        check(ep.grad, tp.grad, atol=atol, rtol=rtol)
    return eo, to


# ---- full layers --------------------------------------------------------------------------------
LAYERS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {}),
          ("LSTM", {"proj_size": 2})]
CONFIGS = [
    # num_layers, bidirectional, batch_first, bias, unbatched, with_hx
    (1, False, False, True, False, False),
    (2, False, False, True, False, True),
    (1, True, False, True, False, True),
    (2, True, True, True, False, False),
    (2, True, False, False, False, True),
    (1, False, True, True, True, True),
    (2, True, False, True, True, False),
]


def _ids(v):
    return "-".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else None


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "L{}_bi{}_bf{}_b{}_unb{}_hx{}".format(*c))
@pytest.mark.parametrize("name,kw", LAYERS, ids=lambda v: _ids(v) if isinstance(v, dict) else v)
def test_layer_matches_torch(name, kw, config, dtype):
    num_layers, bidi, batch_first, bias, unbatched, with_hx = config
    rng = np.random.default_rng(0)
    H_in, H, L, N = 4, 3, 5, 2
    e, t = _make(name, dtype, H_in, H, num_layers=num_layers, bidirectional=bidi,
                 batch_first=batch_first, bias=bias, **kw)
    shape = (L, H_in) if unbatched else ((N, L, H_in) if batch_first else (L, N, H_in))
    ex, tx = _pair(shape, dtype, rng)
    e_args, t_args = [ex], [tx]
    if with_hx:
        D = 2 if bidi else 1
        h_out = kw.get("proj_size", 0) or H
        hshape = (num_layers * D, h_out) if unbatched else (num_layers * D, N, h_out)
        eh, th = _pair(hshape, dtype, rng)
        if name == "LSTM":
            cshape = hshape[:-1] + (H,)
            ec, tc = _pair(cshape, dtype, rng)
            e_args.append((eh, ec))
            t_args.append((th, tc))
        else:
            e_args.append(eh)
            t_args.append(th)
    _run(e, t, e_args, t_args, dtype)


def test_output_structure_and_shapes():
    rng = np.random.default_rng(1)
    e, t = _make("LSTM", "float32", 3, 5, num_layers=2, bidirectional=True, proj_size=2,
                 batch_first=True)
    ex, tx = _pair((4, 6, 3), "float32", rng)
    eo, (eh, ec) = e(ex)
    to, (th, tc) = t(tx)
    assert tuple(eo.shape) == tuple(to.shape) == (4, 6, 4)
    assert tuple(eh.shape) == tuple(th.shape) == (4, 4, 2)
    assert tuple(ec.shape) == tuple(tc.shape) == (4, 4, 5)
    # the final hidden state of the last layer's forward direction is the last output step
    _same(eh[-2], eo[:, -1, :2])
    # ... and the backward direction's is the first output step
    _same(eh[-1], eo[:, 0, 2:])


def test_zero_batch():
    e, t = _make("GRU", "float64", 3, 4, num_layers=2)
    rng = np.random.default_rng(2)
    ex, tx = _pair((5, 0, 3), "float64", rng, grad=False)
    check(e(ex), t(tx))


def test_no_grad_and_eval():
    e, t = _make("LSTM", "float64", 3, 4, num_layers=2, dropout=0.5)
    e.eval()
    t.eval()
    rng = np.random.default_rng(3)
    ex, tx = _pair((4, 2, 3), "float64", rng, grad=False)
    with ember.no_grad():
        eo = e(ex)
    with torch.no_grad():
        to = t(tx)
    check(eo, to)
    assert eo[0].grad_fn is None and not eo[0].requires_grad


# ---- dropout between layers ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_one_matches_torch(name):
    # p=1 zeroes every layer output but the last: deterministic, so comparable with torch
    e, t = _make(name, "float64", 3, 4, num_layers=3, dropout=1.0, bidirectional=True)
    rng = np.random.default_rng(4)
    ex, tx = _pair((5, 2, 3), "float64", rng)
    _run(e, t, [ex], [tx], "float64")


def test_dropout_training_only():
    e, _ = _make("GRU", "float64", 3, 8, num_layers=2, dropout=0.5)
    x = ember.randn(6, 4, 3, dtype=ember.float64)
    e.eval()
    ref = e(x)[0]
    _same(e(x)[0], ref)
    e.train()
    ember.manual_seed(0)
    out = e(x)[0]
    assert not np.allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    assert all(p.grad is not None for p in e.parameters())
    # no dropout after the last layer: a single layer is not affected
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        one = ember.nn.RNN(3, 4, dropout=0.5).double()
    with ember.no_grad():
        a = one(x)[0]
        one.eval()
        b = one(x)[0]
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---- cells --------------------------------------------------------------------------------------
CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {}), ("GRUCell", {"bias": False}), ("LSTMCell", {"bias": False})]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
@pytest.mark.parametrize("name,kw", CELLS, ids=lambda v: _ids(v) if isinstance(v, dict) else v)
def test_cell_matches_torch(name, kw, with_hx, batched, dtype):
    rng = np.random.default_rng(5)
    e, t = _make(name, dtype, 4, 3, **kw)
    ex, tx = _pair((2, 4) if batched else (4,), dtype, rng)
    e_args, t_args = [ex], [tx]
    if with_hx:
        hs = (2, 3) if batched else (3,)
        eh, th = _pair(hs, dtype, rng)
        if name == "LSTMCell":
            ec, tc = _pair(hs, dtype, rng)
            e_args.append((eh, ec))
            t_args.append((th, tc))
        else:
            e_args.append(eh)
            t_args.append(th)
    _run(e, t, e_args, t_args, dtype)


def test_cell_unrolled_equals_layer():
    # LSTMCell stepped over a sequence == LSTM with the same weights
    torch_lstm = torch.nn.LSTM(3, 4).double()
    lstm = ember.nn.LSTM(3, 4).double()
    _copy_params(lstm, torch_lstm)
    cell = ember.nn.LSTMCell(3, 4).double()
    with ember.no_grad():
        for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, n).copy_(getattr(lstm, n + "_l0"))
    x = ember.randn(5, 2, 3, dtype=ember.float64)
    out, (h, c) = lstm(x)
    hc = None
    steps = []
    for xt in x.unbind(0):
        hc = cell(xt, hc)
        steps.append(hc[0])
    np.testing.assert_allclose(ember.stack(steps).detach().numpy(), out.detach().numpy(), atol=1e-14)
    np.testing.assert_allclose(hc[1].detach().numpy(), c[0].detach().numpy(), atol=1e-14)


def test_gradcheck_gru_cell():
    cell = ember.nn.GRUCell(2, 3).double()
    x = ember.randn(2, 2, dtype=ember.float64, requires_grad=True)
    h = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: cell(a, b), (x, h))


def test_gradgradcheck_lstm():
    lstm = ember.nn.LSTM(2, 2, bidirectional=True).double()
    x = ember.randn(3, 1, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a: lstm(a)[0], (x,))


# ---- parameters, state_dict, init, repr ---------------------------------------------------------
MODULES = [("RNN", (4, 3), {}), ("RNN", (4, 3), {"num_layers": 2, "nonlinearity": "relu"}),
           ("LSTM", (4, 3), {"num_layers": 2, "bidirectional": True}),
           ("LSTM", (4, 3), {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
           ("LSTM", (4, 3), {"proj_size": 1, "bias": False}),
           ("GRU", (4, 3), {"num_layers": 3, "bias": False, "batch_first": True,
                            "dropout": 0.25}),
           ("RNNCell", (4, 3), {"nonlinearity": "relu", "bias": False}), ("LSTMCell", (4, 3), {}),
           ("GRUCell", (4, 3), {})]


@pytest.mark.parametrize("name,args,kw", MODULES)
def test_parameters_state_dict_repr(name, args, kw):
    ember.manual_seed(0)
    e = getattr(ember.nn, name)(*args, **kw)
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, **kw)
    ep, tp = dict(e.named_parameters()), dict(t.named_parameters())
    assert list(ep) == list(tp)
    for n in tp:
        assert tuple(ep[n].shape) == tuple(tp[n].shape), n
        assert ep[n].dtype is ember.float32
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
    # PyTorch's default init: every parameter uniform in +-1/sqrt(hidden_size)
    bound = 1 / math.sqrt(args[1])
    for n, p in ep.items():
        a = p.detach().numpy()
        assert np.all(np.abs(a) <= bound), n
        assert np.array_equal(a, tp[n].detach().numpy()), n  # the same stream: torch's weights
    # torch's state_dict loads into ember's module and gives the same outputs
    e.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    for n in tp:
        check(ep[n], tp[n].detach())
    if hasattr(t, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in e.all_weights] == \
               [[tuple(w.shape) for w in ws] for ws in t.all_weights]
        assert e._flat_weights_names == t._flat_weights_names


def test_constructor_positional_and_attributes():
    e = ember.nn.RNN(4, 3, 2, "relu", False, True, 0.0, True)
    t = torch.nn.RNN(4, 3, 2, "relu", False, True, 0.0, True)
    for a in ("mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
              "bidirectional", "proj_size", "nonlinearity"):
        assert getattr(e, a) == getattr(t, a), a
    assert repr(e) == repr(t)
    e = ember.nn.LSTM(4, 3, 1, True, False, 0, False, 2)
    assert e.proj_size == 2 and e.weight_hr_l0.shape == (2, 3)
    assert ember.nn.RNNCell(4, 3, True, "relu").nonlinearity == "relu"


def test_dtype_device_kwargs_and_conversion():
    e = ember.nn.GRU(3, 4, dtype=ember.float64)
    assert all(p.dtype is ember.float64 for p in e.parameters())
    e = ember.nn.LSTM(3, 4, num_layers=2).double()
    assert all(w.dtype is ember.float64 for w in e._flat_weights)
    out, _ = e(ember.randn(2, 1, 3, dtype=ember.float64))
    assert out.dtype is ember.float64
    cell = ember.nn.GRUCell(3, 4, device="cpu", dtype=ember.float64)
    assert cell.weight_ih.dtype is ember.float64
    # weights replaced after construction are used
    e = ember.nn.RNN(2, 2, bias=False)
    with ember.no_grad():
        e.weight_hh_l0 = ember.nn.Parameter(ember.zeros(2, 2))
        e.weight_ih_l0 = ember.nn.Parameter(ember.eye(2))
    x = ember.tensor([[[0.5, -0.25]]])
    check(e(x)[0], torch.tanh(torch.tensor([[[0.5, -0.25]]])))


def test_deepcopy_and_pickle():
    e = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = ember.randn(3, 2, 3)
    ref = e(x)[0].detach().numpy()
    for m in (copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        np.testing.assert_array_equal(m(x)[0].detach().numpy(), ref)


# ---- pad_sequence -------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_then_lstm(batch_first):
    rng = np.random.default_rng(6)
    seqs = [rng.standard_normal((n, 3)) for n in (4, 2, 5)]
    ep = ember.nn.utils.rnn.pad_sequence([ember.from_numpy(s.copy()) for s in seqs],
                                         batch_first=batch_first)
    tp = torch.nn.utils.rnn.pad_sequence([torch.from_numpy(s.copy()) for s in seqs],
                                         batch_first=batch_first)
    check(ep, tp)
    e, t = _make("LSTM", "float64", 3, 2, batch_first=batch_first, bidirectional=True)
    _run(e, t, [ep.requires_grad_()], [tp.requires_grad_()], "float64")


# ---- errors -------------------------------------------------------------------------------------
def _mk(lib, name, *a, **k):
    return getattr(lib.nn, name)(*a, **k)


@pytest.mark.parametrize("name", ["RNN", "GRU", "LSTM"])
def test_layer_input_errors(name):
    L = name == "LSTM"

    def call(shape, hshape=None, cshape=None, dtype="float32", **kw):
        def fn(lib):
            torch.manual_seed(0)
            m = _mk(lib, name, 4, 3, num_layers=2, **kw)
            x = lib.zeros(*shape, dtype=getattr(lib, dtype))
            if hshape is None:
                return m(x)
            h = lib.zeros(*hshape)
            return m(x, (h, lib.zeros(*(cshape or hshape))) if L else h)
        return fn

    same_error(call((5, 2, 6)))
    same_error(call((5, 2, 4, 1)))
    same_error(call((4,)))
    same_error(call((5, 2, 4), (2, 3, 3)))
    same_error(call((5, 2, 4), (2, 2, 5)))
    same_error(call((2, 5, 4), (2, 5, 3), batch_first=True))
    same_error(call((5, 2, 4), (2, 3)))
    same_error(call((5, 4), (2, 1, 3)))
    same_error(call((0, 2, 4)))
    same_error(call((2, 0, 4), batch_first=True))
    same_error(call((5, 2, 4), dtype="float64"), match="RNN input dtype (ember.float64) does not "
               "match weight dtype (ember.float32)")
    if L:
        same_error(call((5, 2, 4), (2, 2, 3), (2, 2, 4)))
        same_error(call((5, 2, 4), (2, 2, 3), (2, 3)))
        same_error(call((5, 2, 4), (4, 2, 3), bidirectional=True, proj_size=2))
        same_error(call((5, 4), (2, 3), (2, 1, 3)))


@pytest.mark.parametrize("name", ["RNNCell", "GRUCell", "LSTMCell"])
def test_cell_input_errors(name):
    L = name == "LSTMCell"

    def call(shape, hshape=None, cshape=None):
        def fn(lib):
            m = _mk(lib, name, 4, 3)
            x = lib.zeros(*shape)
            if hshape is None:
                return m(x)
            h = lib.zeros(*hshape)
            return m(x, (h, lib.zeros(*(cshape or hshape))) if L else h)
        return fn

    same_error(call((2, 5)))
    same_error(call((2, 3, 4)))
    same_error(call((2, 4), (3, 3)))
    same_error(call((2, 4), (2, 5)))
    same_error(call((4,), (2, 3)))
    same_error(call((2, 4), (2, 2, 3)))
    if L:
        same_error(call((2, 4), (2, 3), (2, 5)))
        same_error(call((2, 4), (2, 3), (3, 3)))


def test_constructor_errors():
    same_error(lambda lib: lib.nn.RNN(4, 3, nonlinearity="foo"))
    same_error(lambda lib: lib.nn.GRU(4, 3, proj_size=2))
    same_error(lambda lib: lib.nn.RNN(4, 3, proj_size=2))
    same_error(lambda lib: lib.nn.LSTM(4, 3, proj_size=3))
    same_error(lambda lib: lib.nn.LSTM(4, 3, proj_size=-1))
    same_error(lambda lib: lib.nn.LSTM(4, 3, dropout=2))
    same_error(lambda lib: lib.nn.LSTM(4, 3, dropout=True))
    same_error(lambda lib: lib.nn.LSTM(4, 0))
    same_error(lambda lib: lib.nn.LSTM(0, 3))
    same_error(lambda lib: lib.nn.LSTM(4, 3, num_layers=0))
    same_error(lambda lib: lib.nn.LSTM(4.0, 3))
    same_error(lambda lib: lib.nn.LSTM(4, 3.0))
    same_error(lambda lib: lib.nn.LSTM(4, 3, bias=1))
    same_error(lambda lib: lib.nn.LSTM(4, 3, batch_first=None))
    same_error(lambda lib: lib.nn.RNNCell(4, 3, nonlinearity="foo")(lib.zeros(4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.nn.LSTM(4, 3, num_layers=2, dropout=0.5)


# ---- packed sequences ---------------------------------------------------------------------------
def _eru(name):
    """ember.nn.utils.rnn.<name> where it is re-exported, else the definition it re-exports."""
    from ember.nn import _functional_rnn
    return getattr(ember.nn.utils.rnn, name, None) or getattr(_functional_rnn, name)


def _tru(name):
    return getattr(torch.nn.utils.rnn, name)


def _check_packed(ep, tp, **kw):
    assert type(ep).__name__ == "PackedSequence" and isinstance(ep, tuple)
    assert ep._fields == tp._fields
    check(ep.data, tp.data, **kw)
    check(ep.batch_sizes, tp.batch_sizes)
    for a, b in ((ep.sorted_indices, tp.sorted_indices), (ep.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if b is not None:
            check(a, b)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_pad_roundtrip(batch_first, enforce_sorted):
    rng = np.random.default_rng(8)
    lens = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    shape = (4, 5, 2) if batch_first else (5, 4, 2)
    ex, tx = _pair(shape, "float64", rng)
    ep = _eru("pack_padded_sequence")(ex, lens, batch_first=batch_first,
                                      enforce_sorted=enforce_sorted)
    tp = _tru("pack_padded_sequence")(tx, lens, batch_first=batch_first,
                                      enforce_sorted=enforce_sorted)
    _check_packed(ep, tp)
    for kw in ({}, {"padding_value": -1.5, "total_length": 7}):
        eo = _eru("pad_packed_sequence")(ep, batch_first=batch_first, **kw)
        to = _tru("pad_packed_sequence")(tp, batch_first=batch_first, **kw)
        check(eo, to)
    # gradients flow through pack and pad
    w = rng.standard_normal(tuple(to[0].shape))
    (eo[0] * ember.from_numpy(w)).sum().backward()
    (to[0] * torch.from_numpy(w)).sum().backward()
    check(ex.grad, tx.grad)
    # lengths as a tensor
    lt = torch.tensor(lens)
    _check_packed(_eru("pack_padded_sequence")(ex, ember.tensor(lens), batch_first=batch_first,
                                               enforce_sorted=enforce_sorted),
                  _tru("pack_padded_sequence")(tx, lt, batch_first=batch_first,
                                               enforce_sorted=enforce_sorted))


def test_pack_sequence_unpack_sequence():
    rng = np.random.default_rng(9)
    seqs = [rng.standard_normal((n, 2)) for n in (2, 4, 3)]
    es = [ember.from_numpy(s.copy()) for s in seqs]
    ts = [torch.from_numpy(s.copy()) for s in seqs]
    ep = _eru("pack_sequence")(es, enforce_sorted=False)
    tp = _tru("pack_sequence")(ts, enforce_sorted=False)
    _check_packed(ep, tp)
    check(_eru("unpack_sequence")(ep), _tru("unpack_sequence")(tp))
    padded, lengths = _tru("pad_packed_sequence")(tp)
    check(_eru("unpad_sequence")(ember.from_numpy(padded.numpy().copy()),
                                 ember.from_numpy(lengths.numpy().copy())),
          _tru("unpad_sequence")(padded, lengths))
    check(_eru("invert_permutation")(ember.tensor([2, 0, 3, 1])),
          _tru("invert_permutation")(torch.tensor([2, 0, 3, 1])))
    assert _eru("invert_permutation")(None) is None
    # PackedSequence conversions
    d = ep.double()
    assert type(d) is type(ep) and d.data.dtype is ember.float64 and d is ep
    f = ep.float()
    assert f.data.dtype is ember.float32 and f.batch_sizes is ep.batch_sizes
    assert not f.is_cuda


def test_pack_errors():
    x = np.arange(12.0).reshape(4, 3, 1)

    def pack(lengths, **kw):
        return lambda lib: (_eru if lib is ember else _tru)("pack_padded_sequence")(
            lib.from_numpy(x.copy()), lengths, **kw)

    same_error(pack([4, 2, 3]))
    same_error(pack([4, 3, 0]))
    same_error(pack([4, 3]))
    same_error(lambda lib: (_eru if lib is ember else _tru)("pack_padded_sequence")(
        lib.from_numpy(x.copy()), lib.tensor([[4, 3, 1]])))
    same_error(lambda lib: (_eru if lib is ember else _tru)("pack_padded_sequence")(
        lib.ones(0, 3), []))
    same_error(lambda lib: (_eru if lib is ember else _tru)("pack_sequence")(
        [lib.ones(2), lib.ones(3)]))

    def pad(lib):
        rnn = _eru if lib is ember else _tru
        return rnn("pad_packed_sequence")(rnn("pack_padded_sequence")(
            lib.from_numpy(x.copy()), [4, 3, 1]), total_length=2)
    same_error(pad)


PACKED = [("RNN", {"num_layers": 2}), ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
          ("GRU", {"bidirectional": True, "num_layers": 2}),
          ("LSTM", {"bidirectional": True, "num_layers": 2}),
          ("LSTM", {"proj_size": 2, "bidirectional": True, "bias": False})]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("enforce_sorted,with_hx", [(True, False), (False, True)])
@pytest.mark.parametrize("name,kw", PACKED, ids=lambda v: _ids(v) if isinstance(v, dict) else v)
def test_layer_packed_matches_torch(name, kw, enforce_sorted, with_hx, dtype):
    rng = np.random.default_rng(10)
    lens = [5, 4, 2, 2] if enforce_sorted else [2, 5, 2, 4]
    e, t = _make(name, dtype, 3, 4, **kw)
    ex, tx = _pair((5, 4, 3), dtype, rng)
    ep = _eru("pack_padded_sequence")(ex, lens, enforce_sorted=enforce_sorted)
    tp = _tru("pack_padded_sequence")(tx, lens, enforce_sorted=enforce_sorted)
    e_args, t_args = [ep], [tp]
    if with_hx:
        D = 2 if kw.get("bidirectional") else 1
        nl = kw.get("num_layers", 1)
        eh, th = _pair((nl * D, 4, kw.get("proj_size", 0) or 4), dtype, rng)
        if name == "LSTM":
            ec, tc = _pair((nl * D, 4, 4), dtype, rng)
            e_args.append((eh, ec))
            t_args.append((th, tc))
        else:
            e_args.append(eh)
            t_args.append(th)
    atol, rtol = _tols(dtype)
    eo, to = e(*e_args), t(*t_args)
    _check_packed(eo[0], to[0], atol=atol, rtol=rtol)
    check(eo[1], to[1], atol=atol, rtol=rtol)
    w = rng.standard_normal(tuple(to[0].data.shape))
    e_loss = (eo[0].data * ember.tensor(w, dtype=eo[0].data.dtype)).sum()
    t_loss = (to[0].data * torch.tensor(w, dtype=to[0].data.dtype)).sum()
    for a, b in zip(_flat(eo[1]), _flat(to[1])):
        e_loss = e_loss + (a * a).sum()
        t_loss = t_loss + (b * b).sum()
    e_loss.backward()
    t_loss.backward()
    check(ex.grad, tx.grad, atol=atol, rtol=rtol)
    for a, b in zip(_flat(e_args[1:]), _flat(t_args[1:])):
        check(a.grad, b.grad, atol=atol, rtol=rtol)
    for ep_, tp_ in zip(e.parameters(), t.parameters()):
        check(ep_.grad, tp_.grad, atol=atol, rtol=rtol)


def test_packed_input_errors():
    def fn(lib):
        rnn = _eru if lib is ember else _tru
        p = rnn("pack_padded_sequence")(lib.zeros(3, 2, 4), [3, 1])
        return lib.nn.GRU(4, 3)(p, lib.zeros(1, 3, 3))
    same_error(fn)

    def fn2(lib):
        rnn = _eru if lib is ember else _tru
        p = rnn("pack_padded_sequence")(lib.zeros(3, 2, 5), [3, 1])
        return lib.nn.RNN(4, 3)(p)
    same_error(fn2)


def test_half_precision_forward():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    for dt in ("bfloat16", "float16"):
        for name in ("RNN", "LSTM", "GRU"):
            t = getattr(torch.nn, name)(3, 4).to(getattr(torch, dt))
            e = getattr(ember.nn, name)(3, 4).to(getattr(ember, dt))
            with ember.no_grad():
                for ep, tp in zip(e.parameters(), t.parameters()):
                    ep.copy_(ember.from_numpy(tp.detach().float().numpy()).to(ep.dtype))
            eo = e(ember.from_numpy(x.copy()).to(getattr(ember, dt)))
            to = t(torch.from_numpy(x.copy()).to(getattr(torch, dt)))
            check(eo, to, atol=1e-2, rtol=1e-2)
