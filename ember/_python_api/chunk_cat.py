"""torch._chunk_cat (the op FSDP2 packs gradients with), composed of ember ops: each tensor is
split along `dim` into num_chunks chunks of ceil(size / num_chunks) (zero-padded), each chunk
flattened with the dims after `dim`, and the tensors concatenated chunk by chunk: the result is
(sizes before dim..., num_chunks, sum of the flattened chunk sizes)."""
import math

import ember
from ember.core.errors import wrap_dim

__all__ = ["_chunk_cat"]


def _chunk_cat(tensors, dim, num_chunks, *, out=None):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    d = wrap_dim(dim, tensors[0].dim())
    for t in tensors:
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("_chunk_cat expects all input tensors with the same dtype")
        if t.numel() == 0:
            raise RuntimeError("_chunk_cat expects non-empty tensor")
        if d >= t.dim():
            raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
        if tuple(t.shape[:d]) != tuple(tensors[0].shape[:d]):
            raise RuntimeError("_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors")
    pieces = []
    for t in tensors:
        size = t.shape[d]
        cs = -(-size // num_chunks)
        pad = cs * num_chunks - size
        if pad:
            t = ember.cat([t, t.new_zeros(tuple(t.shape[:d]) + (pad,) + tuple(t.shape[d + 1:]))], d)
        pieces.append(t.reshape(tuple(t.shape[:d]) + (num_chunks, cs * math.prod(t.shape[d + 1:]))))
    r = ember.cat(pieces, d + 1)
    if out is not None:
        return out.resize_(r.shape).copy_(r)
    return r
