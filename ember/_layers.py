"""ember's layers, lowest first: the one place that says which module may import which.

A module may import modules of its own layer and of the layers listed before it; importing a
later layer is an upward import. tests/test_layers.py reads every module's imports with `ast`
(module level and inside functions) and fails on upward imports and on import cycles in
hand-written code. An import inside a function is exempt only when its line, or the line above,
carries a `# lazy: <why>` comment.

Each layer names modules by prefix: "ember.kernels.cpu" covers that package and everything in it,
a trailing "*" matches any name with that start ("ember.kernels.composite*" covers
composite_linalg.py and the others). When several layers name a module, the longest name wins.

`import ember` (the bare package, nothing read from it at import time) binds the public op
namespace late: its functions are looked up when called, like the at:: functions that PyTorch's
composite kernels call. It is listed as OP_NAMESPACE: code below that layer must not use it, and
it makes no import cycle. `from ember import name` reads the package at import time: that is an
import of the public API layer, the top one.

This is a data module: it imports nothing, so anything (tests, docs tools) can read it.
"""

OP_NAMESPACE = "ember (late-bound op namespace)"

# (layer name, module prefixes). Each layer's comment says what PyTorch calls it.
LAYERS = (
    # c10: devices, dtypes, dispatch keys, storage, TensorImpl
    ("core", ("ember.core",)),
    # the ATen dispatcher: schemas, operator tables, call/redispatch, BackendSelect, Library,
    # the observer hook used by tracing
    ("dispatch", ("ember.dispatch",)),
    # Operators.h (generated): the typed op handles, the dispatcher's front door, and the
    # return-type namedtuples of their schemas. Every kernel may call ops through them, as ATen's
    # native kernels call at:: functions.
    ("op handles", ("ember._generated.ops",)),
    # c10/cuda and torch.cuda: numba loading, device state, streams, events, the caching
    # allocator per device, pinned memory. It sits above dispatch to register its device check
    # with BackendSelect, and below the kernels, which allocate and launch through it.
    ("cuda runtime", ("ember.cuda",)),
    # structured kernels' meta functions: shapes, dtypes, strides (and the kernels package itself,
    # whose __init__ imports nothing)
    ("meta kernels", ("ember.kernels", "ember.kernels.meta")),
    # aten/src/ATen/native/{cpu,cuda}: backend kernels over NumPy / numba arrays
    ("backend kernels", ("ember.kernels.cpu", "ember.kernels.cuda", "ember.kernels.sparse",
                         "ember.kernels.strided_views")),
    # the public functions, reached late through `import ember` (as composites call at:: ops)
    ("op namespace", (OP_NAMESPACE,)),
    # CompositeImplicitAutograd kernels: ops written with other ops
    ("composite kernels", ("ember.kernels.composite*",)),
    # torch/csrc/autograd: Node, edges, engine, grad modes, Function, formulas, Autograd kernels
    ("autograd", ("ember.autograd",)),
    # torch.amp (and torch.cuda.amp, its CUDA spelling)
    ("amp", ("ember.amp", "ember.cuda.amp")),
    # generated bindings, VariableType, methods, and their runtime support
    ("generated", ("ember._generated", "ember._bindings", "ember._creation", "ember._conversion",
                   "ember._size")),
    # the hand-written torch.* functions (torch/functional.py) and the Python-only parts of Tensor's
    # methods (indexing, printing, the bindings that take more than one schema). They need the op
    # handles, the generated bindings and the op namespace, never the Tensor class itself (new
    # tensors come from tensor_class[0]), so they sit below it: torch/_tensor.py imports
    # torch/_tensor_str.py and torch.functional in the same direction, and ember.Tensor can name
    # them as class attributes when its class body runs.
    ("python api", ("ember._python_api", "ember._submodules", "ember._indexing",
                    "ember._tensor_str", "ember.random", "ember.library")),
    # torch/_tensor.py
    ("tensor", ("ember.tensor",)),
    # the libraries users write models with: they import the layers below, and reach the public
    # namespace only late, through `import ember`
    ("libraries", ("ember.nn", "ember.optim", "ember.utils", "ember.serialization", "ember.accelerator",
                   "ember.multiprocessing", "ember.onnx", "ember._C", "ember.distributed", "ember.profiler",
                   "ember.sparse", "ember.signal", "ember.masked",
                   # the Python key's user API, function transforms and graph mode
                   "ember.overrides", "ember._subclasses", "ember._functorch", "ember.func", "ember.fx",
                   "ember._dynamo", "ember._inductor", "ember.compiler",
                   # pictures of the stack (make_dot, the widgets)
                   "ember.viz",
                   "ember.report")),  # the one-file HTML report (profile + pictures)
    # `import torch`: the package itself. It is the top, as torch/__init__.py is: it gathers every
    # layer into one namespace, the libraries included (torch/__init__.py imports torch.nn,
    # torch.optim and torch.utils.data to bind them), so below it `from ember import name` is an
    # upward import.
    ("public api", ("ember",)),
    # torchgen: run at build time, never imported by ember
    ("codegen", ("ember.codegen",)),
)

# generated code: its modules are nodes of the import graph, but only hand-written code is checked
GENERATED = ("ember._generated",)


def _matches(pattern, module):
    if pattern.endswith("*"):
        return module.startswith(pattern[:-1])
    return module == pattern or module.startswith(pattern + ".")


def layer_of(module):
    """(rank, layer name) of a module (a dotted name), or None when no layer names it."""
    best = None
    for rank, (name, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if _matches(p, module) and (best is None or len(p) > best[0]):
                best = (len(p), rank, name)
    return None if best is None else best[1:]


def is_generated(module):
    return any(_matches(p, module) for p in GENERATED)
