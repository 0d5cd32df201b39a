"""Sequence utilities (torch/nn/utils/rnn.py): pad_sequence here; PackedSequence and the
pack/unpack functions are defined with the recurrent kernels (ember/nn/_functional_rnn.py) and
re-exported from here when that file is present."""
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


_PACKED_NAMES = ("PackedSequence", "invert_permutation", "pack_padded_sequence",
                 "pad_packed_sequence", "pack_sequence", "unpad_sequence", "unpack_sequence")


def _reexport_packed():
    try:
        from ember.nn import _functional_rnn as _r
    except Exception:  # the recurrent family is absent or broken: pad_sequence still works
        return
    for n in _PACKED_NAMES:
        obj = getattr(_r, n, None)
        if obj is not None:
            globals()[n] = obj
            __all__.append(n)


_reexport_packed()
