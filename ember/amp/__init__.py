"""ember.amp (torch.amp): autocast and GradScaler."""
from ember.amp.autocast_mode import (autocast, get_autocast_dtype, is_autocast_available,  # noqa: F401
                                     is_autocast_enabled)
from ember.amp.grad_scaler import GradScaler  # noqa: F401
