"""ember.library (torch.library): define operators and register kernels from Python."""
from ember.dispatch.library import Library, fallthrough_kernel  # noqa: F401
