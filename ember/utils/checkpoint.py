"""ember.utils.checkpoint: recompute a segment's forward in backward instead of saving activations."""
import ember
from ember.autograd.function import Function


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_state = ember.get_rng_state()
        ctx.inputs = [a.detach() if isinstance(a, ember.Tensor) else a for a in args]
        ctx.requires = [isinstance(a, ember.Tensor) and a.requires_grad for a in args]
        with ember.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.preserve:
            saved = ember.get_rng_state()
            ember.set_rng_state(ctx.rng_state)
        inputs = [a.detach().requires_grad_(r) if isinstance(a, ember.Tensor) else a
                  for a, r in zip(ctx.inputs, ctx.requires)]
        with ember.enable_grad():
            out = ctx.run_function(*inputs)
        if ctx.preserve:
            ember.set_rng_state(saved)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, ember.Tensor) and o.requires_grad]
        ember.autograd.backward([p[0] for p in pairs], [p[1] for p in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, ember.Tensor) else None for a in inputs)


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    return CheckpointFunction.apply(function, preserve_rng_state, *args)
