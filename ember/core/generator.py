"""Generators: ember.Generator, manual_seed, the default CPU generator.

Random streams come from NumPy's PCG64, so values differ from PyTorch's mt19937/Philox for the
same seed; distributions, shapes and dtypes match, and seeding makes runs reproducible.
"""
import numpy as np

from ember.core.device import device as _device

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed


class Generator:
    def __init__(self, device="cpu"):
        self.device = _device(device)
        self._seed = _DEFAULT_SEED
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed &= 0xFFFFFFFFFFFFFFFF
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        import pickle

        from ember.core.tensor_impl import wrap_cpu
        return wrap_cpu(np.frombuffer(pickle.dumps(self._rng.bit_generator.state), dtype=np.uint8).copy())

    def set_state(self, state):
        import pickle
        self._rng.bit_generator.state = pickle.loads(state.numpy().tobytes())
        return self

    def clone_state(self):
        g = Generator(self.device)
        g._seed = self._seed
        g._rng.bit_generator.state = self._rng.bit_generator.state
        return g


default_generator = Generator()


def manual_seed(seed):
    default_generator.manual_seed(seed)
    for hook in _seed_hooks:  # other devices' generators (ember.cuda) follow the same seed
        hook(seed)
    return default_generator


_seed_hooks = []


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def rng(generator):
    """The NumPy generator a kernel draws from."""
    return (generator or default_generator)._rng
