"""Philox4x32-10 and the layout of torch's CUDA random kernels (CUDAGeneratorImpl + curand).

torch's CUDA generator is a (seed, offset) pair. Each random kernel reserves `counter_offset`
from the offset (philox_cuda_state) and launches a grid-stride loop in which thread `idx` runs
curand_init(seed, subsequence=idx, offset) and draws one 128-bit Philox block per loop trip:
the block for counter (offset/4 + trip, idx) under key (seed). A trip of thread idx covers the
elements idx + stride * (unroll * trip + i), i < unroll (stride = threads in the grid); unroll is
4 for float draws (one 32-bit word each) and 2 for double and 64-bit ones (two words each).

The grid depends on the GPU: 256-thread blocks, at most multiProcessorCount *
(maxThreadsPerMultiProcessor / 256) of them. `grid_limits()` reads those from the device (numba);
the simulator and the host use an H100's/H200's (132 SMs, 2048 threads each), the GPU the
reference values were read on.

This module is pure NumPy: kernels/cuda/random.py turns the words into values (curand's
transforms, then ATen's).
"""
import numpy as np

M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = 0x9E3779B9, 0xBB67AE85
_LO = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
BLOCK = 256                 # block_size_bound in ATen's calc_execution_policy
DEFAULT_LIMITS = (132, 2048)  # (multiProcessorCount, maxThreadsPerMultiProcessor): H100 / H200


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counters (c0..c3, uint32 arrays or scalars) under key (k0, k1): four uint32
    arrays (Salmon et al. 2011; curand_Philox4x32_10)."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in (c0, c1, c2, c3))
    for r in range(10):
        ka = np.uint64((k0 + r * W0) & 0xFFFFFFFF)
        kb = np.uint64((k1 + r * W1) & 0xFFFFFFFF)
        p0 = M0 * c0
        p1 = M1 * c2
        c0, c1, c2, c3 = ((p1 >> _S32) ^ c1 ^ ka, p1 & _LO, (p0 >> _S32) ^ c3 ^ kb, p0 & _LO)
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def policy(numel, unroll, limits=DEFAULT_LIMITS):
    """ATen's calc_execution_policy: (counter_offset, stride) for a kernel over numel elements."""
    sms, per_sm = limits
    grid = min(sms * (per_sm // BLOCK), (numel + BLOCK - 1) // BLOCK)
    stride = BLOCK * grid
    return ((numel - 1) // (stride * unroll) + 1) * 4, stride


def calls(seed, offset, numel, unroll, stride):
    """The Philox blocks the grid-stride loop draws: uint32 (trips, stride, 4), row [t, idx] the
    block thread idx draws on loop trip t (zeros for threads with no element left)."""
    trips = (numel - 1) // (stride * unroll) + 1
    idx = np.arange(stride, dtype=np.uint64)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    out = np.zeros((trips, stride, 4), np.uint32)
    for t in range(trips):
        c = offset // 4 + t
        live = min(stride, numel - t * stride * unroll)  # threads with any element this trip
        ws = philox(np.uint64(c & 0xFFFFFFFF), np.uint64(c >> 32), idx[:live] & _LO,
                    idx[:live] >> _S32, k0, k1)
        out[t, :live] = np.stack(ws, axis=-1)
    return out


def lay_out(v, numel):
    """Per-call values (trips, stride, unroll, ...) in element order: lane i of thread idx on trip
    t is element idx + stride * (unroll * t + i)."""
    return v.swapaxes(1, 2).reshape((-1,) + v.shape[3:])[:numel]


def blocks(seed, offset, numel, unroll, stride):
    """Per element, the words its value is made from: uint32 (numel, 4 // unroll)."""
    w = calls(seed, offset, numel, unroll, stride)
    return lay_out(w.reshape(w.shape[0], stride, unroll, 4 // unroll), numel)


class PhiloxEngine:
    """CUDAGeneratorImpl's state: seed and philox_offset_per_thread. get_state is 16 bytes:
    uint64 seed, int64 offset (little endian), as torch.cuda.get_rng_state() returns."""

    __slots__ = ("seed", "offset")

    def __init__(self, seed):
        self.seed = seed
        self.offset = 0

    def manual_seed(self, seed):
        self.seed = seed
        self.offset = 0

    def reserve(self, increment):
        """philox_cuda_state(increment): the (seed, offset) a kernel uses; the offset moves on by
        increment rounded up to a multiple of 4."""
        off = self.offset
        self.offset = off + ((increment + 3) // 4) * 4
        return self.seed, off

    def copy(self):
        e = PhiloxEngine(self.seed)
        e.offset = self.offset
        return e

    def to_bytes(self):
        return int(self.seed).to_bytes(8, "little") + int(self.offset).to_bytes(8, "little",
                                                                                 signed=True)

    def from_bytes(self, b):
        self.seed = int.from_bytes(b[:8], "little")
        self.offset = int.from_bytes(b[8:16], "little", signed=True) if len(b) >= 16 else 0
