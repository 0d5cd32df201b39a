"""Makes `ember.nn` an attribute of ember (`import ember; ember.nn.Linear`), as torch.nn is of
torch. Nothing is exported into the ember namespace itself."""
import ember.nn  # noqa: F401

__all__ = []
