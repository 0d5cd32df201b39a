"""Generators: ember.Generator, manual_seed, the default CPU generator (c10::GeneratorImpl).

The CPU engine is PyTorch's: mt19937 (ATen's MT19937RNGEngine.h) seeded with init_genrand on the
low 32 bits of the uint64 seed, plus the cached Box-Muller samples CPUGeneratorImpl keeps (one
float, one double). The 32-bit words come in bulk from NumPy's MT19937 bit generator, whose state
({'key': 624 words, 'pos': i}) is the same machine; the Python side keeps torch's bookkeeping.

`get_state()` is torch's CPUGeneratorImplState, byte for byte (5056 bytes, little endian):

    offset  field (CPUGeneratorImplStateLegacy, then the new fields)
    0       uint64 the_initial_seed
    8       int32  left          (mt19937: draws left before the next twist, 1..624)
    12      int32  seeded        (1)
    16      uint64 next          (index of the next state word, 0..624)
    24      uint64 state[624]    (the 32-bit state words, widened)
    5016    double normal_x      (0, unused)
    5024    double normal_y      (the cached double normal sample)
    5032    double normal_rho    (0, unused)
    5040    int32  normal_is_valid
    5044    4 bytes padding
    5048    float  next_float_normal_sample
    5052    bool   is_next_float_normal_sample_valid, 3 bytes padding

so a state saved by `torch.get_rng_state()` restores here and the reverse. NumPy's `pos` is
torch's `next`, and `left == 625 - pos`; right after seeding torch reports next=0, left=1 (an
untwisted state), which NumPy spells pos=624 (`fresh` below remembers which).

Big draws (at least _MT_MIN words) with numba installed run a jitted copy of NumPy's mt19937 on
the bit generator's own state (Engine.mt_state: a view of its C struct), which the random
kernels also use for their fused fills; EMBER_RNG_NUMBA=0 keeps NumPy's random_raw throughout.

CUDA: a generator on a CUDA device holds torch's CUDA engine instead, Philox4x32-10 keyed by
(seed, offset) (core/philox.py: PhiloxEngine); its state is 16 bytes, seed then offset, as
torch.cuda.get_rng_state() returns, and kernels/cuda/random.py draws from it as ATen's CUDA
kernels do.
"""
import ctypes
import os
import struct

import numpy as np

from ember.core.device import device as _device
from ember.core.philox import PhiloxEngine

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_MASK64 = (1 << 64) - 1
_STATE_SIZE = 5056
_N = 624
_HEAD = struct.Struct("<QiiQ")      # the_initial_seed, left, seeded, next
_TAIL = struct.Struct("<dddi4xf?3x")  # normal_x, normal_y, normal_rho, normal_is_valid, float sample


def _check_seed(seed):
    """int(seed) as PyTorch unpacks it: any value in [-2**63, 2**64) (negatives wrap to uint64)."""
    seed = int(seed)
    if seed < -(1 << 63) or seed > _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64


_MT_MIN = 1 << 15  # words: above this, with numba installed, the jitted mt19937 below
_MT = None


def _nb_mt19937(key, pos, out):
    """NumPy's mt19937_next32 (mt19937.c: twist when pos == 624, then temper key[pos++]) for
    len(out) words, twisting key (uint32[624]) in place; returns the new pos."""
    n = out.shape[0]
    i = 0
    while i < n:
        if pos == 624:
            for k in range(227):
                y = (key[k] & 0x80000000) | (key[k + 1] & 0x7FFFFFFF)
                key[k] = key[k + 397] ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
            for k in range(227, 623):
                y = (key[k] & 0x80000000) | (key[k + 1] & 0x7FFFFFFF)
                key[k] = key[k - 227] ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
            y = (key[623] & 0x80000000) | (key[0] & 0x7FFFFFFF)
            key[623] = key[396] ^ (y >> 1) ^ ((y & 1) * 0x9908B0DF)
            pos = 0
        m = min(624 - pos, n - i)
        for k in range(m):
            y = key[pos + k]
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            y ^= y >> 18
            out[i + k] = y
        pos += m
        i += m
    return pos


def _mt_kernel():
    """The jitted mt19937, or False (no numba, or EMBER_RNG_NUMBA=0)."""
    global _MT
    if _MT is None:
        _MT = False
        if os.environ.get("EMBER_RNG_NUMBA", "1") != "0":
            try:
                import numba  # lazy: optional accelerator for large draws
            except ImportError:
                return _MT
            _MT = numba.njit(cache=True, nogil=True)(_nb_mt19937)
    return _MT


def _raw(e, n):
    """n 32-bit words of Engine e (uint64 array): NumPy's random_raw, or for many words the same
    words from the jitted mt19937 working on the bit generator's own state."""
    if n >= _MT_MIN and _mt_kernel():
        out = np.empty(n, np.uint64)
        with e.bg.lock:  # random_raw's lock: the kernel runs without the GIL
            key, pos = e.mt_state()
            e.set_mt_state(key, _MT(key, pos, out))
        return out
    return e.bg.random_raw(n)


class Engine:
    """at::mt19937 plus CPUGeneratorImpl's cached normal samples: the state a CPU generator holds.

    Draws: `random(n)` n 32-bit words (uint64 array), `random64(n)` n 64-bit words made of two
    consecutive words (hi, lo) as CPUGeneratorImpl::random64, `one()` / `one64()` single words.
    """

    __slots__ = ("bg", "seed", "fresh", "next_float", "next_double", "_mtv")

    def __init__(self, seed=_DEFAULT_SEED):
        self.bg = np.random.MT19937()
        self._mtv = None
        self.manual_seed(seed)

    def manual_seed(self, seed):
        self.bg._legacy_seeding(seed & 0xFFFFFFFF)  # init_genrand: mt[0] = seed, mt[j] = 1812433253 * ...
        self.seed = seed
        self.fresh = True
        self.next_float = None
        self.next_double = None

    # ---- draws --------------------------------------------------------------------------------
    def random(self, n):
        if n:
            self.fresh = False
        return _raw(self, n)

    def random64(self, n):
        if n:
            self.fresh = False
        w = _raw(self, 2 * n)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    def one(self):
        self.fresh = False
        return self.bg.random_raw()

    def one64(self):
        self.fresh = False
        r = self.bg.random_raw(2)
        return (int(r[0]) << 32) | int(r[1])

    def mt_state(self):
        """(key, pos) for a jitted kernel that draws from the mt19937: key is a uint32 view of the
        bit generator's own state words (NumPy's mt19937_state: uint32 key[624], int pos), which
        the kernel twists in place; set_mt_state(key, pos) then stores the position. Hold
        self.bg.lock around both (NumPy's own draws take it)."""
        c = self._mtv
        if c is None or c[0] is not self.bg:
            v = np.ctypeslib.as_array((ctypes.c_uint32 * (_N + 1)).from_address(self.bg.ctypes.state_address))
            c = self._mtv = (self.bg, v)
        return c[1][:_N], int(c[1][_N])

    def set_mt_state(self, key, pos):
        self._mtv[1][_N] = pos
        self.fresh = False

    # ---- state --------------------------------------------------------------------------------
    def copy(self):
        e = Engine.__new__(Engine)
        e.bg = np.random.MT19937()
        e._mtv = None
        e.bg.state = self.bg.state
        e.seed, e.fresh = self.seed, self.fresh
        e.next_float, e.next_double = self.next_float, self.next_double
        return e

    def to_bytes(self):
        st = self.bg.state["state"]
        pos = int(st["pos"])
        nxt, left = (0, 1) if (self.fresh and pos == _N) else (pos, _N + 1 - pos)
        nd, nf = self.next_double, self.next_float
        return b"".join((
            _HEAD.pack(self.seed, left, 1, nxt),
            np.asarray(st["key"], dtype="<u4").astype("<u8").tobytes(),
            _TAIL.pack(0.0, 0.0 if nd is None else nd, 0.0, nd is not None,
                       0.0 if nf is None else nf, nf is not None)))

    def from_bytes(self, b):
        seed, left, seeded, nxt = _HEAD.unpack_from(b, 0)
        if not (seeded and 0 < left <= _N and 0 <= nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(b, dtype="<u8", count=_N, offset=24).astype(np.uint32)
        _x, ny, _rho, nvalid, nf, fvalid = _TAIL.unpack_from(b, 24 + 8 * _N)
        # torch reads word `next` after `left - 1` more draws twist; NumPy twists at pos == 624
        pos = _N + 1 - left
        self.bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self.seed = seed
        self.fresh = left == 1 and nxt == 0
        self.next_double = float(ny) if nvalid else None
        self.next_float = float(np.float32(nf)) if fvalid else None


class Generator:
    """A random number generator (torch.Generator); the random ops take it as `generator=`."""

    __slots__ = ("device", "_rng", "__weakref__")

    def __init__(self, device="cpu"):
        dev = device if isinstance(device, _device) else _device(device)
        if dev.type == "meta":
            raise RuntimeError("META device type not an accelerator.")
        self.device = dev
        self._rng = PhiloxEngine(_DEFAULT_SEED) if dev.type == "cuda" else Engine(_DEFAULT_SEED)

    @property
    def _seed(self):
        return self._rng.seed

    def manual_seed(self, seed):
        self._rng.manual_seed(_check_seed(seed))
        return self

    def seed(self):
        """Seed from a non-deterministic source; returns the new seed."""
        s = int.from_bytes(os.urandom(8), "little") & 0x1FFFFFFFFFFFFF  # 53 bits, as c10's
        self._rng.manual_seed(s)
        return s

    def initial_seed(self):
        return self._rng.seed

    def get_state(self):
        from ember.core.tensor_impl import wrap_cpu  # lazy: tensor_impl imports this module's users
        return wrap_cpu(np.frombuffer(self._rng.to_bytes(), dtype=np.uint8).copy())

    def set_state(self, new_state):
        from ember.core.tensor_impl import TensorImpl  # lazy: as in get_state
        if not isinstance(new_state, TensorImpl):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        n = new_state.numel()
        if self._rng.__class__ is PhiloxEngine:  # CUDAGeneratorImpl::set_state
            if n not in (8, 16):
                raise RuntimeError("RNG state is wrong size")
            b = np.ascontiguousarray(new_state.detach().cpu()._np).reshape(-1).tobytes()
            if int.from_bytes(b[8:16], "little", signed=True) % 4:
                raise RuntimeError("offset must be a multiple of 4")
            self._rng.from_bytes(b)
            return self
        if n != _STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the "
                               f"input RNG state size to be {n}")
        self._rng.from_bytes(np.ascontiguousarray(new_state.detach().cpu()._np).reshape(-1).tobytes())
        return self

    def get_offset(self):
        """The Philox offset of a CUDA generator (torch.Generator.get_offset)."""
        if self._rng.__class__ is not PhiloxEngine:
            raise RuntimeError("get_offset() is not supported by this generator")
        return self._rng.offset

    def set_offset(self, offset):
        if self._rng.__class__ is not PhiloxEngine:
            raise RuntimeError("set_offset() is not supported by this generator")
        if int(offset) % 4:
            raise RuntimeError("offset must be a multiple of 4")
        self._rng.offset = int(offset)
        return self

    def clone_state(self):
        g = Generator(self.device)
        g._rng = self._rng.copy()
        return g

    def __reduce__(self):
        return (_rebuild, (str(self.device), self._rng.to_bytes()))

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"


def _rebuild(device, state):
    g = Generator(device)
    g._rng.from_bytes(state)
    return g


default_generator = Generator()
_device_generators = {}  # device -> that device's default generator (made on first use)
_seed_hooks = []  # other devices' generators follow manual_seed through these
_last_seed = [None]  # the last manual_seed: a device generator made later starts from it, as
#                      torch queues manual_seed_all until CUDA initialises


def device_default_generator(dev):
    """The default generator of accelerator device `dev` (torch.cuda.default_generators[i])."""
    g = _device_generators.get(dev)
    if g is None:
        g = _device_generators.setdefault(dev, Generator(dev))
        if _last_seed[0] is not None:
            g.manual_seed(_last_seed[0])
    return g


def _seed_devices(seed):
    _last_seed[0] = seed
    for g in _device_generators.values():
        g.manual_seed(seed)
    for hook in _seed_hooks:
        hook(seed)


def manual_seed(seed):
    """Seed the default generator and every device's (torch.manual_seed); returns it."""
    seed = _check_seed(seed)
    default_generator.manual_seed(seed)
    _seed_devices(seed)
    return default_generator


def seed():
    s = default_generator.seed()
    _seed_devices(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def rng(generator):
    """The Engine a CPU kernel draws from."""
    if generator is None:
        return default_generator._rng
    if generator.__class__ is not Generator:
        if not hasattr(generator, "_rng"):
            raise TypeError(f"expected a Generator, got {type(generator).__name__}")
    if generator.device.type != "cpu":
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._rng
