"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks)."""
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: F401
