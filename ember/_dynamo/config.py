"""ember._dynamo.config (torch._dynamo.config): the knobs users set on graph capture.

Plain module attributes, read when used. `cache_size_limit` is torch's older name for
`recompile_limit`; both names read and write the same value.
"""
import sys
import types

# how many compiled entries (guard sets) one function may hold; past it: warn and run eagerly
recompile_limit = 8
# torch's limit over all entries of a function, branches included
accumulated_recompile_limit = 256
# a dimension whose size changed is recompiled as symbolic (see eval_frame's docstring)
automatic_dynamic_shapes = True
assume_static_by_default = True
# on a data-dependent Python value, break the graph (True) or raise Unsupported (fullgraph)
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
# let exceptions from the backend compiler reach the user (torch's default: raise)
suppress_errors = False
verbose = False
# AOT autograd partitions the joint graph with torch's min-cut rematerialization (recompute
# cheap ops in the backward where that saves fewer bytes) instead of saving what eager saves;
# per function: ember.compile(fn, options={"partitioner": "min_cut"})
use_min_cut_partitioner = False
# where EMBER_COMPILE_DEBUG writes its directory
debug_dir_root = None
# guards: skip the checks on module parameters' identity (torch's skip_nnmodule_hook_guards-like)
guard_nn_modules = True


class _Config(types.ModuleType):
    def __setattr__(self, name, value):
        if name == "cache_size_limit":
            name = "recompile_limit"
        super().__setattr__(name, value)

    def __getattr__(self, name):
        if name == "cache_size_limit":
            return self.recompile_limit
        raise AttributeError(f"module 'ember._dynamo.config' has no attribute '{name}'")

    def patch(self, **changes):
        """Context manager and decorator setting config values for its scope (torch's config.patch)."""
        import contextlib  # lazy: only patch() needs it

        @contextlib.contextmanager
        def _cm():
            old = {k: getattr(self, k) for k in changes}
            for k, v in changes.items():
                setattr(self, k, v)
            try:
                yield
            finally:
                for k, v in old.items():
                    setattr(self, k, v)
        return _cm()


sys.modules[__name__].__class__ = _Config
