"""ember._inductor: registers the "inductor" backend name (ember.compile's default).

Until issue 11 brings the code generator (fusion, memory planning, generated kernels), "inductor"
runs the aot_eager path: the joint forward+backward graph partitioned by AOT autograd
(ember/_functorch/aot_autograd.py), each graph replayed op by op through the dispatcher.
"""
from ember._dynamo.backends import _BACKENDS, register_backend


def inductor(gm, example_inputs):
    """The aot_eager path (see the module docstring)."""
    return gm.forward


inductor._ember_builtin = True
inductor._ember_aot = True
if "inductor" not in _BACKENDS:
    register_backend(inductor, name="inductor")
