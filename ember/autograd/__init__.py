"""ember.autograd (torch.autograd): backward, grad, grad modes, Function, hooks, anomaly, checks."""
from ember.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                                      is_inference_mode_enabled, no_grad, set_grad_enabled)


def _tensors(x):
    if x is None:
        return ()
    if isinstance(x, _TensorImpl) or x.__class__ is _GradientEdge:
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
    edges = []
    for i, t in enumerate(outputs):
        e = _edge(t)
        if e is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(e)
    return edges


def _input_edges(inputs):
    edges = []
    for t in inputs:
        e = _edge(t)
        if e is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edges.append(e)
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    if grad_variables is not None:
        grad_tensors = grad_variables
    g = grad_tensors
    if (g.__class__ is tensors.__class__ and hasattr(tensors, "_ameta") and g._shape == tensors._shape
            and (e := _edge(tensors)) is not None):
        # the common loss.backward(g): one tensor, a gradient of its class and shape
        roots, grads = (e,), (g,)
    else:
        outputs = _tensors(tensors)
        roots = _root_edges(outputs)
        grads = _make_grads(outputs, _tensors(grad_tensors) if grad_tensors is not None else None,
                            create_graph)
    g = None
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        _execute(roots, grads, retain_graph, create_graph)
        return
    inputs = _tensors(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    vals = _execute(roots, grads, retain_graph, create_graph, accumulate_grad=False,
                    outputs=_input_edges(inputs))
    for t, g in zip(inputs, vals):
        if g is None:
            continue
        m = _get_meta(t)
        if m.grad is None:
            m.grad = g if create_graph else g.detach().clone()
        else:
            m.grad = m.grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    import ember
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
    caps = _input_edges(ins)
    vals = _execute(_root_edges(outs), grads, retain_graph, create_graph, accumulate_grad=False,
                    outputs=caps)
    res = []
    for t, v in zip(ins, vals):
        if v is None:
            if materialize_grads:
                v = ember.zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            tangent = getattr(v, "_fw_grad", None)
            v = v.detach()
            if tangent is not None:  # as in torch, a gradient keeps its forward-mode tangent
                forward_ad._set_tangent(v, tangent)
        res.append(v)
    return tuple(res)  # always a tuple, one entry per input, as torch returns


from ember.autograd import graph  # noqa: E402,F401
from ember.autograd.engine import execute as _execute  # noqa: E402
from ember.autograd.graph import GradientEdge as _GradientEdge, edge as _edge  # noqa: E402
from ember.autograd.meta import get_meta as _get_meta  # noqa: E402
from ember.core.tensor_impl import TensorImpl as _TensorImpl  # noqa: E402
from ember.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: E402,F401
from ember.autograd.anomaly import (detect_anomaly, is_anomaly_enabled, set_detect_anomaly)  # noqa: E402,F401
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from ember.autograd import functional  # noqa: E402,F401
from ember.autograd import forward_ad  # noqa: E402,F401  (registers the ForwardAD layer)
from ember.autograd.grad_mode import set_multithreading_enabled  # noqa: E402,F401
from ember.autograd.variable import Variable  # noqa: E402,F401
