"""ember.set_printoptions and friends (torch.set_printoptions; torch/_tensor_str.py)."""
from ember._tensor_str import get_printoptions, printoptions, set_printoptions

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]
