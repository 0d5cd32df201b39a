"""torch/_functorch/apis.py: the public function transforms of this package (`ember.vmap`,
`ember.func.vmap`)."""
from ember._functorch.vmap import vmap

__all__ = ["vmap"]
