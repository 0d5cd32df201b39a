"""Recurrent kernels written with ember ops (aten/src/ATen/native/RNN.cpp), so autograd covers them:
the cells (rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell) and the full multi-layer,
optionally bidirectional recurrences (rnn_tanh, rnn_relu, lstm, gru) with torch._VF's two
signatures (padded input, or packed data + batch_sizes). PackedSequence and the pack/pad functions
are torch's Python code, in ember/nn/utils/rnn.py as in torch/nn/utils/rnn.py.

As in PyTorch's CPU path, each layer projects the whole sequence through W_ih once
(linear(input, w_ih, b_ih)) and then runs the cell on the time steps; gate orders are torch's
(LSTM: i, f, g, o; GRU: r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))); dropout is
applied to every layer's output but the last one when training.

torch.nn.functional has none of these names, so `__all__` is empty (nothing is added to
ember.nn.functional); the layers of ember/nn/modules/rnn.py import them from here.
"""
import ember
from ember._generated import functions_nn as _nn
from ember.autograd import Function

__all__ = []

_lin = _nn.linear  # F.linear (torch._C._nn.linear)


# ---- stack / cat that record autograd even where their derivatives are not registered yet -------
_cat_has_grad = None


def _check_cat_grad():
    global _cat_has_grad
    a = ember.zeros(1, requires_grad=True)
    with ember.enable_grad():
        _cat_has_grad = (ember.stack([a, a]).grad_fn is not None
                         and ember.cat([a, a]).grad_fn is not None)
    return _cat_has_grad


class _StackFn(Function):
    @staticmethod
    def forward(ctx, dim, *ts):
        ctx.dim = dim
        return ember.stack(ts, dim)

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(grad.unbind(ctx.dim))


class _CatFn(Function):
    @staticmethod
    def forward(ctx, dim, *ts):
        ctx.dim = dim
        ctx.sizes = [t.size(dim) for t in ts]
        return ember.cat(ts, dim)

    @staticmethod
    def backward(ctx, grad):
        return (None,) + tuple(grad.split(ctx.sizes, ctx.dim))


def _stack(ts, dim=0):
    if (_cat_has_grad if _cat_has_grad is not None else _check_cat_grad()):
        return ember.stack(ts, dim)
    return _StackFn.apply(dim, *ts)


def _cat(ts, dim=0):
    if (_cat_has_grad if _cat_has_grad is not None else _check_cat_grad()):
        return ember.cat(ts, dim)
    return _CatFn.apply(dim, *ts)


# ---- cells --------------------------------------------------------------------------------------
def _check_cell_input(input, input_size):
    if input.size(1) != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected "
                           f"{input_size}")


def _check_cell_hidden(input, hx, hidden_size, label):
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} batch "
                           f"size {hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, "
                           f"expected {hidden_size}")


def _rnn_step(gi, h, w_hh, b_hh, act):
    return act(gi + _lin(h, w_hh, b_hh))


def _lstm_step(gi, h, c, w_hh, b_hh, w_hr):
    gates = gi + _lin(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    h = ember.sigmoid(o) * ember.tanh(c)
    if w_hr is not None:
        h = ember.matmul(h, w_hr.t())
    return h, c


def _gru_step(gi, h, w_hh, b_hh):
    gh = _lin(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, 1)
    h_r, h_z, h_n = gh.chunk(3, 1)
    r = ember.sigmoid(i_r + h_r)
    z = ember.sigmoid(i_z + h_z)
    n = ember.tanh(i_n + r * h_n)
    return (h - n) * z + n


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih.size(1))
    _check_cell_hidden(input, hx, w_hh.size(1), 0)
    return _rnn_step(_lin(input, w_ih, b_ih), hx, w_hh, b_hh, ember.tanh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih.size(1))
    _check_cell_hidden(input, hx, w_hh.size(1), 0)
    return _rnn_step(_lin(input, w_ih, b_ih), hx, w_hh, b_hh, ember.relu)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell_input(input, w_ih.size(1))
    _check_cell_hidden(input, hx[0], w_hh.size(1), 0)
    _check_cell_hidden(input, hx[1], w_hh.size(1), 1)
    return _lstm_step(_lin(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh, None)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih.size(1))
    _check_cell_hidden(input, hx, w_hh.size(1), 0)
    return _gru_step(_lin(input, w_ih, b_ih), hx, w_hh, b_hh)


# ---- full recurrences ---------------------------------------------------------------------------
def _layer_params(mode, params, has_biases):
    w_ih, w_hh = params[0], params[1]
    b_ih, b_hh = (params[2], params[3]) if has_biases else (None, None)
    w_hr = params[-1] if mode == "LSTM" and len(params) == (5 if has_biases else 3) else None
    return w_ih, b_ih, _step_fn(mode, w_hh, b_hh, w_hr)


def _step_fn(mode, w_hh, b_hh, w_hr):
    """step(gi, state) -> new state; a state is h, or (h, c) for LSTM."""
    if mode == "LSTM":
        return lambda gi, s: _lstm_step(gi, s[0], s[1], w_hh, b_hh, w_hr)
    if mode == "GRU":
        return lambda gi, h: _gru_step(gi, h, w_hh, b_hh)
    act = ember.tanh if mode == "RNN_TANH" else ember.relu
    return lambda gi, h: _rnn_step(gi, h, w_hh, b_hh, act)


def _run_direction(mode, x, hx, params, has_biases, reverse):
    """One layer in one direction over x (L, N, H_in) from state hx. Returns the outputs
    (L, N, H_out) and the final state."""
    w_ih, b_ih, step = _layer_params(mode, params, has_biases)
    lstm = mode == "LSTM"
    steps = _lin(x, w_ih, b_ih).unbind(0)
    if reverse:
        steps = steps[::-1]
    outs = []
    state = hx
    for gi in steps:
        state = step(gi, state)
        outs.append(state[0] if lstm else state)
    if reverse:
        outs.reverse()
    return _stack(outs, 0), state


def _state_narrow(state, start, length, lstm):
    if lstm:
        return (state[0].narrow(0, start, length), state[1].narrow(0, start, length))
    return state.narrow(0, start, length)


def _state_cat(states, lstm):
    if len(states) == 1:
        return states[0]
    if lstm:
        return (_cat([s[0] for s in states], 0), _cat([s[1] for s in states], 0))
    return _cat(states, 0)


def _run_direction_packed(mode, data, batch_sizes, hx, params, has_biases, reverse):
    """One layer in one direction over packed data (sum(batch_sizes), H_in) (RNN.cpp's
    PackedLayer / ReversedPackedLayer): the batch shrinks as sequences end; each sequence's final
    state is its state after its last step."""
    w_ih, b_ih, step = _layer_params(mode, params, has_biases)
    lstm = mode == "LSTM"
    gi_all = _lin(data, w_ih, b_ih)
    outs = []
    if not reverse:
        offset, last, state, done = 0, batch_sizes[0], hx, []
        for b in batch_sizes:
            gi = gi_all.narrow(0, offset, b)
            offset += b
            if last > b:
                done.append(_state_narrow(state, b, last - b, lstm))
                state = _state_narrow(state, 0, b, lstm)
            last = b
            state = step(gi, state)
            outs.append(state[0] if lstm else state)
        done.append(state)
        done.reverse()
        final = _state_cat(done, lstm)
    else:
        offset, last = gi_all.size(0), batch_sizes[-1]
        state = _state_narrow(hx, 0, last, lstm)
        for b in reversed(batch_sizes):
            if b > last:
                state = _state_cat([state, _state_narrow(hx, last, b - last, lstm)], lstm)
            last = b
            gi = gi_all.narrow(0, offset - b, b)
            offset -= b
            state = step(gi, state)
            outs.append(state[0] if lstm else state)
        outs.reverse()
        final = state
    return (_cat(outs, 0) if len(outs) > 1 else outs[0]), final


def _rnn_impl(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
              bidirectional, batch_first):
    lstm = mode == "LSTM"
    if batch_sizes is None:
        if input.size(1 if batch_first else 0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if batch_first:
            input = input.transpose(0, 1)
    else:
        batch_sizes = [int(b) for b in batch_sizes.tolist()]
    num_dirs = 2 if bidirectional else 1
    params = list(params)
    per = len(params) // (num_layers * num_dirs)
    if lstm:
        hs, cs = hx[0].unbind(0), hx[1].unbind(0)
    else:
        hs = hx.unbind(0)
    final_h, final_c = [], []
    layer_input = input
    for layer in range(num_layers):
        outs = []
        for d in range(num_dirs):
            idx = layer * num_dirs + d
            p = params[idx * per:(idx + 1) * per]
            state = (hs[idx], cs[idx]) if lstm else hs[idx]
            if batch_sizes is None:
                out, state = _run_direction(mode, layer_input, state, p, has_biases, d == 1)
            else:
                out, state = _run_direction_packed(mode, layer_input, batch_sizes, state, p,
                                                   has_biases, d == 1)
            outs.append(out)
            if lstm:
                final_h.append(state[0])
                final_c.append(state[1])
            else:
                final_h.append(state)
        layer_output = outs[0] if num_dirs == 1 else _cat(outs, -1)
        if dropout != 0 and train and layer < num_layers - 1:
            layer_output = ember.dropout(layer_output, dropout, True)
        layer_input = layer_output
    output = layer_input.transpose(0, 1) if batch_first and batch_sizes is None else layer_input
    h_n = _stack(final_h, 0)
    if lstm:
        return output, h_n, _stack(final_c, 0)
    return output, h_n


def _dispatch(mode, args):
    # torch._VF's two overloads: (input, hx, params, has_biases, num_layers, dropout, train,
    # bidirectional, batch_first) and (data, batch_sizes, hx, params, has_biases, num_layers,
    # dropout, train, bidirectional)
    if len(args) == 9 and isinstance(args[3], (list, tuple)):
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidi = args
        return _rnn_impl(mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout,
                         train, bidi, False)
    input, hx, params, has_biases, num_layers, dropout, train, bidi, batch_first = args
    return _rnn_impl(mode, input, None, hx, params, has_biases, num_layers, dropout, train, bidi,
                     batch_first)


def rnn_tanh(*args):
    return _dispatch("RNN_TANH", args)


def rnn_relu(*args):
    return _dispatch("RNN_RELU", args)


def lstm(*args):
    return _dispatch("LSTM", args)


def gru(*args):
    return _dispatch("GRU", args)
