"""ember._inductor: the "inductor" backend (ember.compile's default).

Graphs are lowered to fused kernels (ember/_inductor/compile_fx.py: lowering, fusion, memory
planning, generated numba or NumPy kernels, one readable output-code module per graph). Segments
whose inputs require grad go through AOT autograd (ember/_functorch/aot_autograd.py), whose forward
and backward graphs are compiled the same way. Graphs that cannot be compiled (non-CPU tensors,
Python-level ops, symbolic sizes, grad-mode changes inside the graph) replay through the
dispatcher, as the aot_eager backend does.
"""
from ember._dynamo.backends import _BACKENDS, register_backend


def inductor(gm, example_inputs):
    """The aot_eager path; ember.compile calls compile_fx.compile_nodes directly (_ember_inductor)."""
    return gm.forward


inductor._ember_builtin = True
inductor._ember_aot = True
inductor._ember_inductor = True
if "inductor" not in _BACKENDS:
    register_backend(inductor, name="inductor")
