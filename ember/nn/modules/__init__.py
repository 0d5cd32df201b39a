"""ember.nn.modules: every layer class.

Each layer family is one file of this package, named as torch names it (a class is importable from
ember.nn.modules.<file> wherever torch defines it in torch.nn.modules.<file>, so pickles of whole
modules name the same paths in both), imported here by name (module.py and container.py
first); the names in its `__all__` become attributes of ember.nn.modules and of ember.nn. A new
family (conv.py, pooling.py, normalization.py, loss.py, rnn.py, transformer.py, ...) is its file
with an `__all__` plus one line in `_FAMILIES` below. ember.nn is imported while `import ember`
runs, so module-level code of a layer file must not read attributes of the ember package (look
them up inside functions). A file that fails to import breaks `import ember`, loudly.
"""
from ember.nn.modules import module, container  # the base classes every family uses
from ember.nn.modules import (activation, batchnorm, channelshuffle, conv, distance, dropout, flatten, fold,
                              instancenorm, linear, loss, normalization, padding, pixelshuffle, pooling, rnn,
                              sparse, transformer, upsampling)
from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.modules.container import (Container, ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                                        ParameterList, Sequential)

__all__ = ["Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]

# in this order: a later family's name replaces an earlier one's
_FAMILIES = (module, container, activation, batchnorm, channelshuffle, conv, distance, dropout, flatten,
             fold, instancenorm, linear, loss, normalization, padding, pixelshuffle, pooling, rnn, sparse,
             transformer, upsampling)


def _export(families):
    g = globals()
    for mod in families:
        for n in mod.__all__:
            if n.startswith("register_module_") or n == "RemovableHandle":
                continue  # module.py's hook functions are ember.nn.modules.module.*
            g[n] = getattr(mod, n)
            if n not in __all__:
                __all__.append(n)


_export(_FAMILIES)
