"""Run an OpInfo's sample inputs through torch and ember and compare (values, dtypes, gradients).

Used by the op_db breadth tests (test_signal_windows, test_masked, test_copy_variants,
test_special_polynomials). Needs `expecttest` for torch.testing._internal; the callers skip without it.
"""
import numpy as np
import pytest
import torch

import ember
from tests.harness import check


def opinfos(prefix=None, names=None):
    mod = pytest.importorskip("torch.testing._internal.common_methods_invocations",
                              reason="op_db needs expecttest: pip install expecttest")
    return [op for op in mod.op_db
            if (prefix is not None and op.name.startswith(prefix)) or (names is not None and op.name in names)]


def resolve(name):
    """ember's function for an OpInfo name (a dotted path under ember, else a Tensor method)."""
    obj = ember
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return getattr(ember.Tensor, name)
    return obj


def to_ember(x, requires_grad=False):
    if isinstance(x, torch.Tensor):
        e = ember.from_numpy(np.array(x.detach().numpy(), copy=True)) if x.dtype != torch.bfloat16 else \
            ember.tensor(x.detach().float().numpy()).to(ember.bfloat16)
        if requires_grad and x.requires_grad:
            e.requires_grad_(True)
        return e
    if isinstance(x, (list, tuple)):
        return type(x)(to_ember(y, requires_grad) for y in x)
    if isinstance(x, torch.dtype):
        return getattr(ember, str(x).split(".")[1])
    if isinstance(x, torch.device):
        return ember.device(str(x))
    if isinstance(x, torch.layout):
        return getattr(ember, str(x).split(".")[1])
    return x


def _tensors(x):
    if isinstance(x, torch.Tensor) or isinstance(x, ember.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in _tensors(y)]
    return []


def run_samples(op, dtype, grad=False, max_samples=40, atol=None, rtol=None, ref=None):
    """Compare every sample (or the first `max_samples`) with torch's op (or `ref`, a torch function
    standing in for it); returns how many ran."""
    ref = ref or op.op
    n = 0
    for s in op.sample_inputs("cpu", dtype, requires_grad=grad):
        if n >= max_samples:
            break
        n += 1
        ein = to_ember(s.input, grad)
        eargs = to_ember(s.args, grad)
        ekw = {k: to_ember(v, grad) for k, v in s.kwargs.items()}
        try:
            t = ref(s.input, *s.args, **s.kwargs)
        except Exception as te:  # noqa: BLE001 - the sample is an error case in torch: ember must agree
            with pytest.raises(type(te)):
                resolve(op.name)(ein, *eargs, **ekw)
            continue
        e = resolve(op.name)(ein, *eargs, **ekw)
        check(e, t, atol=atol, rtol=rtol)
        if grad:
            touts = [o for o in _tensors(t) if o.requires_grad]
            eouts = [o for o in _tensors(e) if o.requires_grad]
            assert len(touts) == len(eouts)
            if not touts:
                continue
            tins = [x for x in _tensors((s.input, s.args, list(s.kwargs.values()))) if x.requires_grad]
            eins = [x for x in _tensors((ein, eargs, list(ekw.values()))) if x.requires_grad]
            gs = [torch.randn_like(o) for o in touts]
            tg = torch.autograd.grad(touts, tins, gs, allow_unused=True)
            eg = ember.autograd.grad(eouts, eins, [to_ember(g) for g in gs], allow_unused=True)
            for a, b in zip(eg, tg):
                if b is None:
                    assert a is None or not a.abs().sum().item()
                else:
                    check(a, b, atol=atol, rtol=rtol)
    return n
