"""ember.autograd (torch.autograd): backward, grad, grad modes, Function, hooks, anomaly, checks."""
from ember.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                                      is_inference_mode_enabled, no_grad, set_grad_enabled)


def _tensors(x):
    from ember.autograd.graph import GradientEdge
    from ember.core.tensor_impl import TensorImpl
    if x is None:
        return ()
    if isinstance(x, TensorImpl) or x.__class__ is GradientEdge:
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, create_graph=False):
    import ember
    out = []
    gos = list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(gos) != len(outputs):
        raise RuntimeError(f"grad_tensors should have the same length as tensors, got {len(gos)} and "
                           f"{len(outputs)}")
    for t, g in zip(outputs, gos):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.is_floating_point() and not t.is_complex():
                raise RuntimeError(f"grad can be computed only for real floating point or complex "
                                   f"outputs, but got {t.dtype}")
            g = ember.ones_like(t) if hasattr(ember, "ones_like") else ember.ones(t.shape, dtype=t.dtype)
        elif isinstance(g, (int, float)):
            g = ember.full(tuple(t.shape), g, dtype=t.dtype)
        else:
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{len(out)}] has a shape of "
                                   f"{g.shape} and output[{len(out)}] has a shape of {t.shape}.")
        out.append(g)
    return out


def _root_edges(outputs):
    from ember.autograd.graph import edge
    edges = []
    for i, t in enumerate(outputs):
        e = edge(t)
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(e)
    return edges


def _backward_fast(t, g, retain_graph):
    """The common t.backward(g) without create_graph or inputs: one tensor, a gradient of its class
    and shape, straight to the engine. Returns False (nothing done) for anything else."""
    if g.__class__ is not t.__class__ or g._shape != t._shape:
        return False
    m = t._ameta
    if m is not None and m.grad_fn is not None and t._base is None:
        e = (m.grad_fn, m.output_nr)
    else:
        from ember.autograd.graph import edge
        e = edge(t)
        if e is None:
            return False  # the general path raises torch's error
    from ember.autograd.engine import run_backward
    run_backward([e], [g], bool(retain_graph), False)
    return True


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    from ember.autograd.engine import run_backward
    from ember.autograd.graph import edge
    if (inputs is None and grad_variables is None and not create_graph and grad_tensors is not None
            and hasattr(tensors, "_ameta") and _backward_fast(tensors, grad_tensors, retain_graph)):
        return
    outputs = _tensors(tensors)
    if grad_variables is not None:
        grad_tensors = grad_variables
    roots = _root_edges(outputs)
    grads = _make_grads(outputs, _tensors(grad_tensors) if grad_tensors is not None else None,
                        create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _tensors(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        caps = [edge(t) for t in inputs]
        for c in caps:
            if c is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
        vals = run_backward(roots, grads, retain_graph, create_graph, accumulate=False, captures=caps)
        for t, g in zip(inputs, vals):
            if g is None:
                continue
            from ember.autograd.meta import get_meta
            m = get_meta(t)
            if m.grad is None:
                m.grad = g if create_graph else g.detach().clone()
            else:
                m.grad = m.grad + g
        return
    run_backward(roots, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    import ember
    from ember.autograd.engine import run_backward
    from ember.autograd.graph import edge
    outs = _tensors(outputs)
    ins = _tensors(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    grads = _make_grads(outs, _tensors(grad_outputs) if grad_outputs is not None else None, create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    caps = []
    for t in ins:
        e = edge(t)
        if e is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        caps.append(e)
    vals = run_backward(_root_edges(outs), grads, retain_graph, create_graph, accumulate=False,
                        captures=caps)
    res = []
    for t, v in zip(ins, vals):
        if v is None:
            if materialize_grads:
                v = ember.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            v = v.detach()
        res.append(v)
    return tuple(res)  # always a tuple, one entry per input, as torch returns


from ember.autograd import graph  # noqa: E402,F401
from ember.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: E402,F401
from ember.autograd.anomaly import (detect_anomaly, is_anomaly_enabled, set_detect_anomaly)  # noqa: E402,F401
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from ember.autograd import functional  # noqa: E402,F401
from ember.autograd.grad_mode import set_multithreading_enabled  # noqa: E402,F401
from ember.autograd.variable import Variable  # noqa: E402,F401
