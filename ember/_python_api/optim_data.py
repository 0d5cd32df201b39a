"""Makes `ember.optim` and `ember.utils.data` attributes of `ember` (importing them binds them)."""
import ember.optim  # noqa: F401
import ember.utils.data  # noqa: F401

__all__ = []
