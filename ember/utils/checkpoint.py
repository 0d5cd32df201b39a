"""ember.utils.checkpoint (torch.utils.checkpoint): recompute a segment's forward in backward
instead of keeping its activations.

Two variants, as in PyTorch:
- use_reentrant=True: the segment runs under no_grad inside a custom Function; its backward
  reruns the segment with grad on and calls backward on the rerun (a backward inside a backward).
- use_reentrant=False (recommended): the segment records its graph as usual, but every tensor its
  nodes save goes through saved_tensors_hooks that keep only a placeholder. The first unpack in
  backward reruns the segment once, under hooks that hand each newly saved tensor to its
  placeholder, in save order. Parameters used inside get gradients even when no input needs one.
"""
import contextlib
import warnings

import ember
from ember.autograd.function import Function
from ember.autograd.graph import saved_tensors_hooks


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


_DEFAULT_WARNING = (
    "the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, calling "
    "checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, "
    "but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
    "Refer to docs for more details on the differences between the two variants.")


def _tensor(x):
    return isinstance(x, ember.Tensor)


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.preserve = preserve_rng_state
        if preserve_rng_state:
            ctx.rng_state = ember.get_rng_state()
        ctx.inputs = [a.detach() if _tensor(a) else a for a in args]
        ctx.requires = [_tensor(a) and a.requires_grad for a in args]
        with ember.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.preserve:
            saved = ember.get_rng_state()
            ember.set_rng_state(ctx.rng_state)
        inputs = [a.detach().requires_grad_(r) if _tensor(a) else a for a, r in zip(ctx.inputs, ctx.requires)]
        try:
            with ember.enable_grad():
                out = ctx.run_function(*inputs)
        finally:
            if ctx.preserve:
                ember.set_rng_state(saved)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if _tensor(o) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        ember.autograd.backward([p[0] for p in pairs], [p[1] for p in pairs])
        return (None, None) + tuple(a.grad if _tensor(a) else None for a in inputs)


class _Frame:
    """One non-reentrant checkpointed call: placeholders in save order, filled by one rerun."""

    def __init__(self, run):
        self.run = run
        self.slots = []        # recomputed tensors, by save index (None until the rerun)

    def pack(self, t):
        self.slots.append(None)
        return len(self.slots) - 1

    def unpack(self, i):
        t = self.slots[i]
        if t is None:  # the first unpack of this backward (a retained graph's next backward reruns too)
            self.recompute()
            t = self.slots[i]
        self.slots[i] = None  # a backward unpacks each saved tensor once: free it as soon as it is used
        return t

    def recompute(self):
        count = [0]
        n = len(self.slots)

        def keep(t):
            i = count[0]
            count[0] += 1
            if i >= n:
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                                      "than during the original forward pass.")
            self.slots[i] = t.detach()
            return None

        with saved_tensors_hooks(keep, lambda _: None), ember.enable_grad():
            self.run()
        if count[0] != n:
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the "
                                  "original forward and recomputation.\n"
                                  f"Number of tensors saved during forward: {n}\n"
                                  f"Number of tensors saved during recomputation: {count[0]}.")


def _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs):
    fwd_ctx, recompute_ctx = context_fn()
    rng = ember.get_rng_state() if preserve else None

    def rerun():
        if rng is not None:
            now = ember.get_rng_state()
            ember.set_rng_state(rng)
        try:
            with recompute_ctx:
                function(*args, **kwargs)
        finally:
            if rng is not None:
                ember.set_rng_state(now)

    frame = _Frame(rerun)
    with saved_tensors_hooks(frame.pack, frame.unpack), fwd_ctx:
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """Run function(*args, **kwargs) without keeping its activations; backward recomputes them."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: " + _DEFAULT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if ember.is_grad_enabled() and not any(_tensor(a) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split `functions` (an nn.Sequential or a list) into `segments` chunks and checkpoint each but
    the last."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: " + _DEFAULT_WARNING.replace(
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception.",
            "In version 2.9 we will raise an exception if use_reentrant is not passed."), stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, ember.nn.Sequential):
        functions = list(functions.children())

    def run(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
