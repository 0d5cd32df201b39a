"""ember.nn (torch.nn): Parameter and Buffer, Module and the layers (ember/nn/modules/),
functional, init and utils.

Layer families are added as files: a module file in ember/nn/modules/ (imported automatically,
its `__all__` exported here) and functional code in ember/nn/_functional_<family>.py (its `__all__`
exported by ember.nn.functional); see those packages' docstrings.
"""
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from ember.nn import functional  # noqa: F401
from ember.nn import init  # noqa: F401
from ember.nn import modules  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn import parameter  # noqa: F401
from ember.nn import utils  # noqa: F401
from ember.nn import parallel  # noqa: F401  (DistributedDataParallel)

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional",
           "init", "modules", "parameter", "utils"] + list(modules.__all__)
