"""Printing tensors like PyTorch (torch/_tensor_str.py). Placeholder until the full formatter lands."""


def tensor_repr(t):
    if t._device.type == "meta":
        return f"tensor(..., device='meta', size={tuple(t._shape)}, dtype={t._dtype})"
    return f"tensor({t.cpu()._np.tolist()}, dtype={t._dtype})"
