"""ember.random: seeding and RNG state (torch.random)."""
from ember.core.generator import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: F401
                                  manual_seed, seed, set_rng_state)
