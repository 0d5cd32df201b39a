"""ember.nn.parallel (torch.nn.parallel): DistributedDataParallel over ember.distributed."""
from ember.nn.parallel.distributed import DistributedDataParallel, GradBucket

__all__ = ["DistributedDataParallel", "GradBucket"]
