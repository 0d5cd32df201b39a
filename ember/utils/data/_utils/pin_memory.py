"""torch.utils.data._utils.pin_memory: batches copied into page-locked host memory, so that
`.to("cuda", non_blocking=True)` can copy them asynchronously."""
import collections.abc

import ember


def pin_memory(data, device=None):
    if isinstance(data, ember.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: pin_memory(v) for k, v in data.items()})
        except TypeError:
            return {k: pin_memory(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(pin_memory(x) for x in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(x) for x in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([pin_memory(x) for x in data])
        except TypeError:
            return [pin_memory(x) for x in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
