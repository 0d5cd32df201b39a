"""torch/_functorch/functional_call.py: functional_call and stack_module_state."""
import ember

__all__ = ["functional_call", "stack_module_state"]


def _owner(module, name):
    *path, leaf = name.split(".")
    m = module
    for p in path:
        m = getattr(m, p)
    return m, leaf


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call `module` with its parameters and buffers replaced by the given tensors (by name)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        values = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in values:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is "
                                     "ambiguous")
                values[k] = v
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    if strict:
        names = {n for n, _ in module.named_parameters(remove_duplicate=False)} | {
            n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(names - set(values))
        unexpected = sorted(set(values) - names)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(parts)))
    if tie_weights:
        # a tensor shared by several names (tied weights) follows the one name it was given under
        ids = {}
        for n, p in list(module.named_parameters(remove_duplicate=False)) + list(
                module.named_buffers(remove_duplicate=False)):
            ids.setdefault(id(p), []).append(n)
        for group in ids.values():
            given = [n for n in group if n in values]
            if given:
                for n in group:
                    if n not in values:
                        values = dict(values)
                        values[n] = values[given[0]]
    saved = []
    try:
        for name, v in values.items():
            m, leaf = _owner(module, name)
            if leaf in m._parameters:
                saved.append((m._parameters, leaf, m._parameters[leaf]))
                m._parameters[leaf] = v
            elif leaf in m._buffers:
                saved.append((m._buffers, leaf, m._buffers[leaf]))
                m._buffers[leaf] = v
            else:
                saved.append((m.__dict__, leaf, m.__dict__.get(leaf, _MISSING)))
                m.__dict__[leaf] = v
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for d, leaf, old in reversed(saved):
            if old is _MISSING:
                d.pop(leaf, None)
            else:
                d[leaf] = old


_MISSING = object()


def stack_module_state(models):
    """(params, buffers): each model's parameters and buffers stacked along a new leading dimension."""
    models = list(models)
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for k in all_params[0]:
        ts = [p[k] for p in all_params]
        st = ember.stack([t.detach() for t in ts])
        if all(t.requires_grad for t in ts):
            st = st.requires_grad_()
        params[k] = st
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: ember.stack([b[k] for b in all_buffers]) for k in all_buffers[0]}
    return params, buffers
