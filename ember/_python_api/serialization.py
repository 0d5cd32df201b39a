"""ember.save and ember.load (torch.save / torch.load): PyTorch's checkpoint formats, see
ember/serialization.py."""
from ember.serialization import load, save

__all__ = ["save", "load"]
