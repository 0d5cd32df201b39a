"""torch.signal: window functions (ember/signal/windows), compositions of ember ops."""
from ember.signal import windows  # noqa: F401

__all__ = ["windows"]
