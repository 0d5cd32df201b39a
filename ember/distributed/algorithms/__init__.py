"""ember.distributed.algorithms (torch.distributed.algorithms): DDP communication hooks."""
from ember.distributed.algorithms import ddp_comm_hooks  # noqa: F401
