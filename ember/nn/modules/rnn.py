"""Recurrent layers (torch/nn/modules/rnn.py): RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell,
LSTMCell, GRUCell, with torch's constructor arguments, parameter names and shapes
(weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, weight_hr_l{k}), default
initialization (every parameter uniform in +-1/sqrt(hidden_size)), input checks and error messages.
The recurrences themselves are in ember/nn/_functional_rnn.py, written with ember ops so that
autograd differentiates them. Padded (L, N, H_in) / (N, L, H_in) / unbatched (L, H_in) input;
or PackedSequence input (ember/nn/utils/rnn.py, as in torch)."""
import math
import numbers
import warnings

import ember
from ember.nn import _functional_rnn as _VF
from ember.nn import init
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


def _is_packed(x):
    return isinstance(x, PackedSequence)


def _packed(data, batch_sizes, sorted_indices, unsorted_indices):
    return PackedSequence(data, batch_sizes, sorted_indices, unsorted_indices)


class RNNBase(Module):
    """Base class of RNN, LSTM and GRU."""
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]
    __jit_unused_properties__ = ["all_weights"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1

        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")

        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        elif mode in ("RNN_TANH", "RNN_RELU"):
            gate_size = hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)

        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                w_ih = Parameter(ember.empty((gate_size, layer_input_size), **factory_kwargs))
                w_hh = Parameter(ember.empty((gate_size, real_hidden_size), **factory_kwargs))
                b_ih = Parameter(ember.empty(gate_size, **factory_kwargs))
                b_hh = Parameter(ember.empty(gate_size, **factory_kwargs))
                if self.proj_size == 0:
                    layer_params = (w_ih, w_hh, b_ih, b_hh) if bias else (w_ih, w_hh)
                else:
                    w_hr = Parameter(ember.empty((proj_size, hidden_size), **factory_kwargs))
                    layer_params = (w_ih, w_hh, b_ih, b_hh, w_hr) if bias else (w_ih, w_hh, w_hr)
                suffix = "_reverse" if direction == 1 else ""
                param_names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    param_names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if self.proj_size > 0:
                    param_names += ["weight_hr_l{}{}"]
                param_names = [x.format(layer, suffix) for x in param_names]
                for name, param in zip(param_names, layer_params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(param_names)
                self._all_weights.append(param_names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]

    def flatten_parameters(self):
        """A no-op here (PyTorch packs the weights into one cuDNN buffer on CUDA)."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def check_input(self, input, batch_sizes):
        w_dtype = self._flat_weights[0].dtype
        if input.dtype != w_dtype and not _autocast_enabled():
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w_dtype}). "
                f"Convert input: input.to({w_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, hidden)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def _weights_have_changed(self):
        return False

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        expected_hidden_size = self.get_expected_hidden_size(input, batch_sizes)
        self.check_hidden_size(hidden, expected_hidden_size)

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _update_flat_weights(self):
        pass

    def __getstate__(self):
        # torch's RNNBase keeps _flat_weights in its __dict__ (ember computes it): a pickle carries
        # the list so torch.load builds a working torch module
        state = self.__dict__.copy()
        state["_flat_weights"] = self._flat_weights
        return state

    def __setstate__(self, state):
        state = dict(state)
        state.pop("_flat_weights", None)  # a property here
        state.pop("_flat_weight_refs", None)
        if "proj_size" not in state:  # pickles from before PyTorch 1.8
            state["proj_size"] = 0
        super().__setstate__(state)

    @property
    def all_weights(self):
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    def _zeros(self, input, n, batch, hidden):
        return ember.zeros(n, batch, hidden, dtype=input.dtype, device=input.device)

    # shared by RNN and GRU (LSTM has its own forward)
    def _forward_single(self, input, hx, name, fn):
        num_directions = 2 if self.bidirectional else 1
        if _is_packed(input):
            orig_input = input
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros(input, self.num_layers * num_directions, int(batch_sizes[0]),
                                 self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
            output, hidden = fn(input, batch_sizes, hx, self._flat_weights, self.bias,
                                self.num_layers, self.dropout, self.training, self.bidirectional)
            return (_packed(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, orig_input.unsorted_indices))
        if input.dim() not in (2, 3):
            tensor = " tensor" if name == "RNN" else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tensor} "
                             "instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
            if hx is not None:
                if hx.dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx should also be 2-D but got "
                                       f"{hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        elif hx is not None and hx.dim() != 3:
            raise RuntimeError("For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.dim()}-D tensor")
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            hx = self._zeros(input, self.num_layers * num_directions, max_batch_size,
                             self.hidden_size)
        self.check_forward_args(input, hx, None)
        output, hidden = fn(input, hx, self._flat_weights, self.bias, self.num_layers,
                            self.dropout, self.training, self.bidirectional, self.batch_first)
        if not is_batched:
            output = output.select(batch_dim, 0)
            hidden = hidden.select(1, 0)
        return output, hidden


def _autocast_enabled():
    """torch._C._is_any_autocast_enabled()."""
    from ember.amp.autocast_mode import is_autocast_enabled
    return is_autocast_enabled("cpu") or is_autocast_enabled("cuda")


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        fn = _VF.rnn_tanh if self.mode == "RNN_TANH" else _VF.rnn_relu
        return self._forward_single(input, hx, "RNN", fn)


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o; c_t = f * c_{t-1} + i * g; h_t = o * tanh(c_t)
    (projected by W_hr when proj_size > 0)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def forward(self, input, hx=None):
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if _is_packed(input):
            orig_input = input
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                n, b = self.num_layers * num_directions, int(batch_sizes[0])
                hx = (self._zeros(input, n, b, real_hidden_size),
                      self._zeros(input, n, b, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            output, h_n, c_n = _VF.lstm(input, batch_sizes, hx, self._flat_weights, self.bias,
                                        self.num_layers, self.dropout, self.training,
                                        self.bidirectional)
            return (_packed(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden((h_n, c_n), orig_input.unsorted_indices))
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        max_batch_size = input.size(0) if self.batch_first else input.size(1)
        if hx is None:
            n = self.num_layers * num_directions
            hx = (self._zeros(input, n, max_batch_size, real_hidden_size),
                  self._zeros(input, n, max_batch_size, self.hidden_size))
        else:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but "
                                       f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx, None)
        output, h_n, c_n = _VF.lstm(input, hx, self._flat_weights, self.bias, self.num_layers,
                                    self.dropout, self.training, self.bidirectional,
                                    self.batch_first)
        if not is_batched:
            output = output.select(batch_dim, 0)
            h_n, c_n = h_n.select(1, 0), c_n.select(1, 0)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit: gates r, z, n; n = tanh(W_in x + b_in + r * (W_hn h + b_hn));
    h_t = (1 - z) * n + z * h_{t-1}."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_single(input, hx, "GRU", _VF.gru)


class RNNCellBase(Module):
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size),
                                               **factory_kwargs))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size),
                                               **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                             device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        return input, hx, is_batched


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""
    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, is_batched = self._prepare("RNNCell", input, hx)
        if self.nonlinearity == "tanh":
            fn = _VF.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            fn = _VF.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ret = fn(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.select(0, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = ember.zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                                device=input.device)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        ret = _VF.lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            ret = (ret[0].select(0, 0), ret[1].select(0, 0))
        return ret


class GRUCell(RNNCellBase):
    """One GRU step: returns h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, is_batched = self._prepare("GRUCell", input, hx)
        ret = _VF.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.select(0, 0)
