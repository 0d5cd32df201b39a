"""The backend registry (torch._dynamo.backends.registry): a backend is a name or any callable
`(GraphModule, example_inputs) -> callable`."""
from ember._dynamo import exc

_BACKENDS = {}
# names torch lists that ember does not provide
_RESERVED = ()


def register_backend(compiler_fn=None, name=None, tags=()):
    """Decorator (or call) registering `compiler_fn` under `name` (its __name__ by default)."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise RuntimeError(f"duplicate name: {name}")
    compiler_fn._tags = tuple(tags)
    _BACKENDS[name] = compiler_fn
    return compiler_fn


def list_backends(exclude_tags=("debug", "experimental")):
    """Names of the registered backends, sorted, leaving out those tagged with exclude_tags."""
    ex = set(exclude_tags or ())
    _lazy_builtin("inductor")
    return sorted(n for n, fn in _BACKENDS.items() if not ex.intersection(getattr(fn, "_tags", ())))


def lookup_backend(compiler_fn):
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            _lazy_builtin(compiler_fn)
        if compiler_fn not in _BACKENDS:
            raise exc.InvalidBackend(name=compiler_fn)
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise exc.InvalidBackend(name=repr(compiler_fn))
    return compiler_fn


def _lazy_builtin(name):
    if name == "inductor":
        import ember._inductor  # lazy: the inductor package registers itself  # noqa: F401


class _InvalidBackend(exc.TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for available "
                         "backends.")


exc.InvalidBackend = _InvalidBackend


@register_backend(tags=("debug",))
def eager(gm, example_inputs):
    """Run the captured graph through the dispatcher, op by op (torch's "eager" backend)."""
    return gm.forward


@register_backend(tags=("debug",))
def aot_eager(gm, example_inputs):
    """The captured graph split by AOT autograd into a forward and a backward graph (traced with
    the real autograd through the Python key), run op by op as one autograd Function."""
    return gm.forward


@register_backend(tags=("debug",))
def aot_eager_decomp_partition(gm, example_inputs):
    """aot_eager with torch's min-cut rematerialization partitioner (ember/_functorch/partitioners.py)."""
    return gm.forward


aot_eager_decomp_partition._ember_builtin = True
aot_eager_decomp_partition._ember_aot = True
aot_eager_decomp_partition._ember_partitioner = "min_cut"
