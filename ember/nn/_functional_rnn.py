"""Recurrent kernels written with ember ops (aten/src/ATen/native/RNN.cpp), so autograd covers them:
the cells (rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell) and the full multi-layer,
optionally bidirectional recurrences (rnn_tanh, rnn_relu, lstm, gru) with torch._VF's two
signatures (padded input, or packed data + batch_sizes); and PackedSequence with
pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence, unpad_sequence and
invert_permutation (torch/nn/utils/rnn.py), for ember.nn.utils.rnn to re-export.

As in PyTorch's CPU path, each layer projects the whole sequence through W_ih once
(linear(input, w_ih, b_ih)) and then runs the cell on the time steps; gate orders are torch's
(LSTM: i, f, g, o; GRU: r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))); dropout is
applied to every layer's output but the last one when training.

torch.nn.functional has none of these names, so `__all__` is empty (nothing is added to
ember.nn.functional); the layers of ember/nn/modules/rnn.py import them from here.
"""
from collections import namedtuple

import ember
from ember.autograd import Function

__all__ = []

_linear = None


def _lin(x, w, b):
    global _linear
    if _linear is None:
        from ember.nn.functional import linear
        _linear = linear
    return _linear(x, w, b)


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


# ---- packed sequences (torch/nn/utils/rnn.py; re-exported by ember.nn.utils.rnn) ----------------
class PackedSequence(namedtuple("PackedSequence_",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Holds the data and list of batch_sizes of a packed sequence (build it with
    pack_padded_sequence / pack_sequence)."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes, sorted_indices,
                                                                unsorted_indices))

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          _bind(self.sorted_indices, lambda t: t.pin_memory()),
                          _bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = _bind(self.sorted_indices, lambda t: t.to(data.device))
        unsorted_indices = _bind(self.unsorted_indices, lambda t: t.to(data.device))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        kwargs.setdefault("device", "cuda")
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=ember.double)

    def float(self):
        return self.to(dtype=ember.float)

    def half(self):
        return self.to(dtype=ember.half)

    def long(self):
        return self.to(dtype=ember.long)

    def int(self):
        return self.to(dtype=ember.int)

    def short(self):
        return self.to(dtype=ember.short)

    def char(self):
        return self.to(dtype=ember.int8)

    def byte(self):
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _bind(optional, fn):
    return None if optional is None else fn(optional)


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                "created manually. They should be instantiated by functions like pack_sequence and "
                "pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    if permutation is None:
        return None
    output = ember.empty_like(permutation)
    output.scatter_(0, permutation, ember.arange(0, permutation.numel(), device=permutation.device))
    return output


def _pack_padded(input, lengths, batch_first):
    """torch._VF._pack_padded_sequence: (data, batch_sizes) from a padded (T, B, *) input."""
    if lengths.dim() != 1 or lengths.dtype is not ember.int64 or lengths.device.type != "cpu":
        raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.dim()}D {lengths.device.type} "
                           f"{_scalar_type_name(lengths.dtype)} tensor")
    if batch_first:
        input = input.transpose(0, 1)
    batch_size = input.size(1)
    lens = [int(v) for v in lengths.tolist()]
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lens) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch_size})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    for a, b in zip(lens, lens[1:]):
        if b > a:
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                "to sidestep this requirement if you do not need ONNX exportability.")
    if lens[0] > input.size(0):
        raise RuntimeError(f"Expected the longest sequence length to be at most {input.size(0)}, "
                           f"but got {lens[0]}")
    sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    steps = [input[t].narrow(0, 0, b) for t, b in enumerate(sizes)]
    data = _cat(steps, 0) if len(steps) > 1 else steps[0]
    return data, ember.tensor(sizes, dtype=ember.int64)


def _scalar_type_name(dtype):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "bool": "Bool"}.get(dtype.name, dtype.name)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch of variable-length sequences (T x B x *, B x T x * with batch_first);
    `lengths` are the sequences' lengths (sorted decreasingly unless enforce_sorted=False)."""
    if not isinstance(lengths, ember.Tensor):
        lengths = ember.as_tensor(lengths, dtype=ember.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=ember.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = ember.sort(lengths, descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pad_packed(data, batch_sizes, batch_first, padding_value, total_length):
    """torch._VF._pad_packed_sequence: (padded, lengths)."""
    sizes = [int(b) for b in batch_sizes.tolist()]
    max_batch = sizes[0]
    trailing = tuple(data.shape[1:])
    steps, offset = [], 0
    for b in sizes:
        step = data.narrow(0, offset, b)
        offset += b
        if b < max_batch:
            fill = ember.full((max_batch - b,) + trailing, padding_value, dtype=data.dtype,
                              device=data.device)
            step = _cat([step, fill], 0)
        steps.append(step)
    for _ in range(total_length - len(sizes)):
        steps.append(ember.full((max_batch,) + trailing, padding_value, dtype=data.dtype,
                                device=data.device))
    out = _stack(steps, 0)
    lengths = [sum(1 for b in sizes if b > i) for i in range(max_batch)]
    if batch_first:
        out = out.transpose(0, 1)
    return out, ember.tensor(lengths, dtype=ember.int64)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded T x B x * tensor, lengths)."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded_output, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first,
                                         padding_value, max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return (padded_output.index_select(batch_dim, unsorted_indices),
                lengths[unsorted_indices.cpu()])
    return padded_output, lengths


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of variable-length tensors (L_i x *)."""
    from ember.nn.utils.rnn import pad_sequence
    lengths = ember.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Splits a padded batch back into the list of variable-length tensors."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq.narrow(0, 0, int(n)) for seq, n in zip(padded_sequences.unbind(0), lengths.tolist())]


def unpack_sequence(packed_sequences):
    """Unpacks a PackedSequence into the list of variable-length tensors."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
