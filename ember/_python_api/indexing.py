"""torch.nonzero(as_tuple=...) is Python-level in torch too."""
from ember._indexing import nonzero

__all__ = ["nonzero"]
