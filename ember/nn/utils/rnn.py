"""Sequence utilities (torch/nn/utils/rnn.py): pad_sequence. PackedSequence and the pack/unpack
functions belong with the recurrent layers."""
from collections.abc import Iterable

import ember
from ember.tensor import Tensor

__all__ = ["pad_sequence"]


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
    dtype, device = sequences[0].dtype, sequences[0].device
    padded = []
    for s in sequences:
        if s.dtype is not dtype or s.device != device:
            s = s.to(device, dtype)
        n = s.size(0)
        extra = max_len - n
        if extra:
            fill = ember.full((extra,) + trailing, padding_value, dtype=dtype, device=device)
            s = ember.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return ember.stack(padded, 0 if batch_first else 1)
