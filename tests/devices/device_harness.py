"""Helpers of the device-generic suites: inputs made once in NumPy, given to torch on the CPU (the
oracle) and to ember on the device under test (a transposed input is transposed there: a strided
view on the device); results must come back equal and on that device."""
import numpy as np
import torch

import ember
from harness import check


def _arrays(specs, seed):
    """specs: shapes (float32, standard normal), ("T", shape) for a transposed view of a
    (shape[::-1]) array, ("i", shape, high) for int64 indices in [0, high)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        if isinstance(s, tuple) and s and s[0] == "T":
            out.append(("T", rng.standard_normal(s[1][::-1]).astype(np.float32)))
        elif isinstance(s, tuple) and s and s[0] == "i":
            out.append(("i", rng.integers(0, s[2], s[1])))
        else:
            out.append(("", rng.standard_normal(s).astype(np.float32)))
    return out


def _torch_inputs(arrays):
    return [torch.from_numpy(a.copy()).t() if k == "T" else torch.from_numpy(a.copy()) for k, a in arrays]


def _ember_inputs(arrays, device):
    xs = []
    for k, a in arrays:
        x = ember.from_numpy(a.copy()).to(device)
        xs.append(x.t() if k == "T" else x)  # the transpose happens on the device: a strided view
    return xs


def _to_cpu(r):
    if isinstance(r, (tuple, list)):
        return type(r)(_to_cpu(x) for x in r) if not hasattr(r, "_fields") else [_to_cpu(x) for x in r]
    return r.cpu() if isinstance(r, ember.Tensor) and r.device.type != "meta" else r


def _devices_of(r):
    if isinstance(r, (tuple, list)):
        return {d for x in r for d in _devices_of(x)}
    return {r.device.type} if isinstance(r, ember.Tensor) else set()


def _same(er, tr, device, atol=None, rtol=None):
    assert _devices_of(er) <= {device}, f"result on {_devices_of(er)}, inputs on {device}"
    if hasattr(tr, "_fields"):
        tr = list(tr)
    check(_to_cpu(er), tr, atol=atol, rtol=rtol)


def _pair(shape, seed, low=-0.9, high=0.9, transposed=False):
    a = np.random.default_rng(seed).uniform(low, high, shape[::-1] if transposed else shape)
    a = a.astype(np.float32)
    return [("T" if transposed else "", a)]
