"""Generators: ember.Generator, manual_seed, the default CPU generator (c10::GeneratorImpl).

Random streams come from NumPy's PCG64, so values differ from PyTorch's mt19937/Philox for the
same seed; distributions, shapes and dtypes match, and seeding makes runs reproducible.
A generator's state is a uint8 tensor of _STATE_SIZE bytes: PCG64's 128-bit state and
increment, its buffered 32-bit half word, and the seed it was created from.
"""
import os

import numpy as np

from ember.core.device import device as _device

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_MASK64 = (1 << 64) - 1
_STATE_SIZE = 48


def _check_seed(seed):
    """int(seed) as PyTorch unpacks it: any value in [-2**63, 2**64) (negatives wrap to uint64)."""
    seed = int(seed)
    if seed < -(1 << 63) or seed > _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64


class Generator:
    """A random number generator (torch.Generator); the random ops take it as `generator=`."""

    __slots__ = ("device", "_seed", "_rng", "__weakref__")

    def __init__(self, device="cpu"):
        dev = device if isinstance(device, _device) else _device(device)
        if dev.type == "meta":
            raise RuntimeError("META device type not an accelerator.")
        self.device = dev
        self._seed = _DEFAULT_SEED
        self._rng = np.random.Generator(np.random.PCG64(_DEFAULT_SEED))

    def manual_seed(self, seed):
        seed = _check_seed(seed)
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        """Seed from a non-deterministic source; returns the new seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from ember.core.tensor_impl import wrap_cpu
        st = self._rng.bit_generator.state
        inner = st["state"]
        b = (inner["state"].to_bytes(16, "little") + inner["inc"].to_bytes(16, "little")
             + int(st["has_uint32"]).to_bytes(4, "little") + int(st["uinteger"]).to_bytes(4, "little")
             + self._seed.to_bytes(8, "little"))
        return wrap_cpu(np.frombuffer(b, dtype=np.uint8).copy())

    def set_state(self, new_state):
        from ember.core.tensor_impl import TensorImpl
        if not isinstance(new_state, TensorImpl):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        n = new_state.numel()
        if n != _STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_SIZE} but found the "
                               f"input RNG state size to be {n}")
        b = np.ascontiguousarray(new_state.detach().cpu()._np).reshape(-1).tobytes()
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(b[0:16], "little"), "inc": int.from_bytes(b[16:32], "little")},
            "has_uint32": int.from_bytes(b[32:36], "little"),
            "uinteger": int.from_bytes(b[36:40], "little"),
        }
        self._seed = int.from_bytes(b[40:48], "little")
        return self

    def clone_state(self):
        g = Generator(self.device)
        g._seed = self._seed
        g._rng.bit_generator.state = self._rng.bit_generator.state
        return g

    def __reduce__(self):
        return (_rebuild, (str(self.device), self._seed, self._rng.bit_generator.state))

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"


def _rebuild(device, seed, state):
    g = Generator(device)
    g._seed = seed
    g._rng.bit_generator.state = state
    return g


default_generator = Generator()
_seed_hooks = []  # other devices' generators (ember.cuda) follow manual_seed through these


def manual_seed(seed):
    """Seed the default generator (and every device's, through _seed_hooks); returns it."""
    seed = _check_seed(seed)
    default_generator.manual_seed(seed)
    for hook in _seed_hooks:
        hook(seed)
    return default_generator


def seed():
    s = default_generator.seed()
    for hook in _seed_hooks:
        hook(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def rng(generator):
    """The NumPy generator a CPU kernel draws from."""
    if generator is None:
        return default_generator._rng
    if generator.__class__ is not Generator:
        if not hasattr(generator, "_rng"):
            raise TypeError(f"expected a Generator, got {type(generator).__name__}")
    if generator.device.type != "cpu":
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator._rng
