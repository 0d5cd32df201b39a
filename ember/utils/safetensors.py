"""The safetensors format for ember tensors, as `safetensors.torch` offers it for torch's:
save / save_file / load / load_file, through the `safetensors` package's NumPy API.

The package is an optional extra (`pip install safetensors`); without it every function raises an
ImportError saying so. Like safetensors.torch, saving refuses tensors that share memory and
non-contiguous tensors (the format stores each tensor's bytes once, densely).
"""
import os

import numpy as np

__all__ = ["save", "save_file", "load", "load_file"]

# safetensors dtype codes -> NumPy dtypes ember has (BF16 needs ml_dtypes)
_CODES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
          "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
          "BOOL": "bool", "C64": "complex64"}


def _require():
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as e:
        raise ImportError("ember.utils.safetensors needs the optional `safetensors` package: "
                          "pip install safetensors") from e
    return safetensors


def _ember():
    import ember
    return ember


def _np_of(t):
    """The tensor's elements as a C-contiguous NumPy array on the host."""
    e = _ember()
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    a = t.numpy()
    if t.dtype is e.bfloat16 and a.dtype != t.dtype.np:
        a = a.view(t.dtype.np)
    return a if a.flags.c_contiguous else a.copy(order="C")  # (0-d stays 0-d)


def _check(tensors):
    e = _ember()
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    invalid = {k for k, v in tensors.items() if not isinstance(v, e.Tensor)}
    if invalid:
        raise ValueError(f"Key `{sorted(invalid)[0]}` is invalid, expected torch.Tensor but "
                         f"received {type(tensors[sorted(invalid)[0]])}")
    # tensors sharing memory (overlapping bytes of one storage) would be saved twice
    by_storage = {}
    for k, v in tensors.items():
        if v.device.type == "meta" or v.numel() == 0:
            continue
        st = v.untyped_storage()
        ptr = st.data_ptr()
        if ptr == 0 or st.nbytes() == 0:
            continue
        start = v.data_ptr()
        span = v.element_size() * (1 + sum((n - 1) * s for n, s in zip(v.shape, v.stride())))
        by_storage.setdefault((str(v.device), ptr), []).append((start, start + span, k))
    failing = []
    for spans in by_storage.values():
        if len(spans) < 2:
            continue
        spans.sort()
        group = {spans[0][2]}
        end = spans[0][1]
        for s, e_, k in spans[1:]:
            if s < end:
                group.add(k)
                end = max(end, e_)
            else:
                if len(group) > 1:
                    failing.append(sorted(group))
                group, end = {k}, e_
        if len(group) > 1:
            failing.append(sorted(group))
    if failing:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential "
            f"differences when loading them again: {failing}.\nA potential way to correctly save "
            "your model is to use `save_model`.\nMore information at "
            "https://huggingface.co/docs/safetensors/torch_shared_tensors")
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It "
                "either means you are trying to save tensors which are reference of each other in "
                "which case it's recommended to save only the full tensors, and reslice at load "
                "time, or simply call `.contiguous()` on your tensor to pack it before saving.")


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding `tensors` (a dict of name -> Tensor)."""
    _require()
    import safetensors.numpy as stnp
    _check(tensors)
    return stnp.save({k: _np_of(v) for k, v in tensors.items()}, metadata=metadata)


def save_file(tensors, filename, metadata=None):
    """Write `tensors` (a dict of name -> Tensor) to the safetensors file `filename`."""
    _require()
    import safetensors.numpy as stnp
    _check(tensors)
    stnp.save_file({k: _np_of(v) for k, v in tensors.items()}, os.fspath(filename),
                   metadata=metadata)


def _to_tensor(arr, device):
    e = _ember()
    t = e.from_numpy(np.array(arr, copy=True))  # writable, owning its memory
    return t if device in (None, "cpu") else t.to(device)


def load(data):
    """The tensors of the safetensors file contents `data` (bytes), on the CPU."""
    st = _require()
    e = _ember()
    out = {}
    for name, info in st.deserialize(data):
        code = info["dtype"]
        dname = _CODES.get(code)
        if dname is None:
            raise TypeError(f"ember has no dtype for the safetensors dtype {code} of `{name}`")
        npdt = getattr(e, dname).np
        arr = np.frombuffer(bytes(info["data"]), dtype=npdt).reshape(info["shape"])
        out[name] = _to_tensor(arr, "cpu")
    return out


def load_file(filename, device="cpu"):
    """The tensors of the safetensors file `filename`, on `device`."""
    _require()
    from safetensors import safe_open
    dev = str(device)
    out = {}
    with safe_open(os.fspath(filename), framework="np") as f:
        for k in f.keys():
            out[k] = _to_tensor(f.get_tensor(k), dev)
    return out
