"""torch._subclasses: FakeTensor and FakeTensorMode."""
from ember._subclasses.fake_tensor import FakeTensor, FakeTensorMode  # noqa: F401
