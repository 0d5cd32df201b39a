"""ember.func (torch.func): composable function transforms.

vmap is ember._functorch's batching layer; grad, grad_and_value, vjp, jacrev and hessian's inner
transform use reverse-mode autograd, jvp, jacfwd and linearize forward-mode AD (ember.autograd.forward_ad).
"""
from ember._functorch.apis import vmap
from ember.func.eager_transforms import (grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize,
                                         vjp)
from ember.func.functional_call import functional_call, stack_module_state

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functional_call",
           "stack_module_state", "linearize", "functionalize"]


def functionalize(func, *, remove="mutations"):
    """torch.func.functionalize. ember runs eagerly, where a function and its functionalized form compute
    the same values (mutations of the inputs included), so this returns a wrapper calling `func`."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators "
                           "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper
