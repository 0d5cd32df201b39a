"""ember.compiler (torch.compiler): the public face of ember.compile's machinery.

Light on purpose: importing it does not import ember._dynamo. The capture code
(ember/_dynamo/capture.py, `capturing`) counts itself in `_compiling` while it records a call, so
is_compiling() is one attribute read: libraries below ember._dynamo (ember.optim) ask it to take a
path that a graph can hold (ops through the dispatcher, no reads of tensor values into Python).

`_lazy_state_init` is how such a library says "I created state of my own (an optimizer's lazily
created moments) while this call was being captured": the call's result is eager's, but the
capture sees the new state as a side effect, so ember.compile captures again on the next call
instead of running the function eagerly for good (torch initializes an optimizer's state while
tracing, then guards on it, to the same end).
"""
__all__ = ["compile", "reset", "allow_in_graph", "disable", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "list_backends", "assume_constant_result", "cudagraph_mark_step_begin"]

# > 0 while ember._dynamo records a call (set and reset by ember/_dynamo/capture.py's `capturing`)
_compiling = 0
# set by a library that created state lazily during the capture; reset when a capture starts
_lazy_state_init = False


def is_compiling():
    """True while ember.compile captures a call (torch.compiler.is_compiling). Replayed graphs run
    no Python, so code that asks is only ever asked while it is being traced."""
    return _compiling > 0


def is_dynamo_compiling():
    """True while ember._dynamo traces (torch.compiler.is_dynamo_compiling): ember has one tracer."""
    return _compiling > 0


def is_exporting():
    """ember has no torch.export: never."""
    return False


def note_lazy_state_init():
    """Called by code that creates persistent state (optimizer moments, step counts) on its first
    run: when a capture is running, that capture is not kept and the next call captures again."""
    global _lazy_state_init
    if _compiling:
        _lazy_state_init = True


def compile(*args, **kwargs):
    """ember.compile (torch.compiler.compile)."""
    import ember  # lazy: the package's compile, bound late
    return ember.compile(*args, **kwargs)


def reset():
    """Forget every compiled entry (torch.compiler.reset)."""
    from ember._dynamo import eval_frame  # lazy: only when used
    eval_frame.reset()


def allow_in_graph(fn):
    """torch.compiler.allow_in_graph: see ember._dynamo.allow_in_graph."""
    from ember import _dynamo  # lazy: only when used
    return _dynamo.allow_in_graph(fn)


def disable(fn=None, recursive=True, *, reason=None):
    """Run `fn` eagerly, never compiled on its own (torch.compiler.disable)."""
    from ember._dynamo import eval_frame  # lazy: only when used
    return eval_frame.disable(fn, recursive, reason=reason)


def list_backends(exclude_tags=("debug", "experimental")):
    """Names of the registered backends (torch.compiler.list_backends)."""
    from ember._dynamo import backends  # lazy: only when used
    return backends.list_backends(exclude_tags)


def assume_constant_result(fn):
    """torch.compiler.assume_constant_result: ember traces at the dispatcher, so a function's
    Python result is already a constant of the graph (and guarded where it comes from state)."""
    fn._dynamo_marked_constant = True
    return fn


def cudagraph_mark_step_begin():
    """torch.compiler.cudagraph_mark_step_begin: ember records no CUDA graphs; a no-op."""
