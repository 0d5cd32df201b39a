"""Sequence utilities (torch/nn/utils/rnn.py): PackedSequence, pack_padded_sequence,
pad_packed_sequence, pad_sequence, pack_sequence, unpack_sequence, unpad_sequence and
invert_permutation. The recurrent kernels that run on packed data are ember/nn/_functional_rnn.py."""
from collections import namedtuple
from collections.abc import Iterable

import ember
from ember.nn._functional_rnn import _cat, _stack  # torch._VF's: cat / stack that record autograd
from ember.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "pack_sequence", "unpad_sequence", "unpack_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks variable-length tensors (L_i x *) into T x B x * (B x T x * with batch_first),
    padding each to the longest length with `padding_value` on `padding_side`."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = tuple(sequences)
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    max_len = max(s.size(0) for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    n = len(sequences)
    out_dims = (n, max_len) + trailing if batch_first else (max_len, n) + trailing
    first = sequences[0]
    out = ember.full(out_dims, padding_value, dtype=first.dtype, device=first.device)
    for i, seq in enumerate(sequences):
        length = seq.size(0)
        start = max_len - length if padding_side == "left" else 0
        if batch_first:
            out.select(0, i).narrow(0, start, length).copy_(seq)
        else:
            out.narrow(0, start, length).select(1, i).copy_(seq)
    return out


# ---- packed sequences -------------------------------------------------------------------------------
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
