"""torch.cuda.amp: the CUDA spellings of ember.amp.autocast and ember.amp.GradScaler."""
from ember.amp.autocast_mode import autocast as _autocast
from ember.amp.grad_scaler import GradScaler as _GradScaler
from ember.core import dtype as _dt

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=_dt.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.cuda.amp.GradScaler: ember.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
