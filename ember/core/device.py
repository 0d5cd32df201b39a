"""ember.device: a device type and an index (c10::Device)."""
import re

DEBUG = False  # validation of device strings costs a regex; PyTorch validates in C++

_TYPES = ("cpu", "cuda", "meta", "privateuseone")
# PrivateUse1 may be renamed (ember.utils.rename_privateuse1_backend)
_privateuse1_name = ["privateuseone"]
_RX = re.compile(r"^([a-zA-Z_]+)(?::(\d+))?$")


class DeviceType:
    CPU = "cpu"
    CUDA = "cuda"
    Meta = "meta"
    PrivateUse1 = "privateuseone"


class device:
    __slots__ = ("type", "index", "_hash")

    def __new__(cls, type_or_str, index=None):
        if isinstance(type_or_str, device):
            if index is not None:
                raise TypeError("device(): expected a string or device type, got a device and an index")
            return type_or_str
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool) and index is None:
            index, type_or_str = type_or_str, "cuda"
        if not isinstance(type_or_str, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({type(type_or_str).__name__})")
        key = (type_or_str, index)
        d = _CACHE.get(key)
        if d is not None:
            return d
        m = _RX.match(type_or_str)
        if m is None:
            raise RuntimeError(f"Invalid device string: '{type_or_str}'")
        t, idx = m.group(1), m.group(2)
        if t == _privateuse1_name[0]:
            t = "privateuseone" if _privateuse1_name[0] == "privateuseone" else t
        if t not in _TYPES and t != _privateuse1_name[0]:
            raise RuntimeError(
                "Expected one of cpu, cuda, meta, " + _privateuse1_name[0]
                + f" device type at start of device string: {t}")
        if idx is not None:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type_or_str}")
            index = int(idx)
        if index is not None:
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"device(): argument 'index' must be int, not {type(index).__name__}")
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if t == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be -1 or zero, got {index}")
        self = object.__new__(cls)
        self.type = t
        self.index = index
        self._hash = hash((t, index))
        _CACHE[key] = self
        return self

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return self._hash

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        from ember.core import tls
        tls.state.device_stack.append(self)
        return self

    def __exit__(self, *a):
        from ember.core import tls
        tls.state.device_stack.pop()


_CACHE = {}

CPU = device("cpu")
META = device("meta")
