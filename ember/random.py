"""ember.random: seeding and RNG state (torch.random)."""
import contextlib

from ember.core.generator import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: F401
                                  manual_seed, seed, set_rng_state)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Restore the CPU RNG state (the only one ember keeps here) when the block exits."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
