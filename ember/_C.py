"""ember._C: the names of torch._C that Python programs reach for directly.

torch._C is PyTorch's compiled extension; ember has none, and keeps here only what user code names
through it: `torch._C._LinAlgError` (the class behind torch.linalg.LinAlgError)."""
from ember.kernels.cpu.linalg import LinAlgError as _LinAlgError

__all__ = ["_LinAlgError"]
