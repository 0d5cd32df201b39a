"""ember.device: a device type and an index (c10::Device).

Parsed devices are cached per (string, index) argument pair, so `device("cuda:1")` costs one
dict look-up after the first call; validation (PyTorch's messages) runs only on a cache miss.
"""
import re

DEBUG = False

# every device type PyTorch's parser accepts (c10/core/DeviceType.cpp), in its error-message order;
# only cpu, meta, cuda and privateuseone have backends here, the others can be named but not used
_ALL_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
              "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia")
_TYPES = frozenset(_ALL_TYPES)
# PrivateUse1 may be renamed (ember.utils.rename_privateuse1_backend)
_privateuse1_name = ["privateuseone"]
# "type" or "type:index" with a non-negative index written without leading zeros
_RX = re.compile(r"([a-zA-Z_]+)(?::(0|[1-9][0-9]*))?")
_NOT_GIVEN = object()


class DeviceType:
    CPU = "cpu"
    CUDA = "cuda"
    Meta = "meta"
    PrivateUse1 = "privateuseone"


def _bad_args(got):
    return TypeError(f"device() received an invalid combination of arguments - got ({got}), but "
                     "expected one of:\n * (ember.device device)\n * (str type, int index = -1)\n")


class device:
    __slots__ = ("type", "index", "_hash")

    def __new__(cls, type=_NOT_GIVEN, index=_NOT_GIVEN):
        try:
            d = _CACHE.get(type if index is _NOT_GIVEN else (type, index, index.__class__))
        except TypeError:  # an unhashable argument: the parser reports it
            d = None
        if d is not None:
            return d
        return _parse(cls, type, index)

    def __eq__(self, other):
        if other.__class__ is not device and not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return self._hash

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type,) if self.index is None else (self.type, self.index))

    def __enter__(self):
        from ember.core import tls
        tls.current().device_stack.append(self)
        return self

    def __exit__(self, *a):
        from ember.core import tls
        tls.current().device_stack.pop()


def _parse(cls, type, index):
    if isinstance(type, device):
        if index is not _NOT_GIVEN:
            raise TypeError("device(): argument 'type' (position 1) must be str, not ember.device")
        return type
    if type is _NOT_GIVEN:
        raise _bad_args("")
    if isinstance(type, int) and not isinstance(type, bool) and index is _NOT_GIVEN:
        # device(0): an index of the accelerator
        if type < 0:
            raise RuntimeError("Device index must not be negative")
        return device("cuda", type)
    if not isinstance(type, str):
        got = type.__class__.__name__
        if index is not _NOT_GIVEN:
            got += ", " + index.__class__.__name__
        raise _bad_args(got)
    if index is not _NOT_GIVEN and index is not None:
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                            f"{index.__class__.__name__}")
        if index < 0:
            raise RuntimeError("Device index must not be negative")
    if not type:
        raise RuntimeError("Device string must not be empty")
    m = _RX.fullmatch(type)
    if m is None:
        raise RuntimeError(f"Invalid device string: '{type}'")
    t, idx = m.group(1), m.group(2)
    if t not in _TYPES and t != _privateuse1_name[0] and t != "privateuseone":
        raise RuntimeError("Expected one of " + ", ".join(_ALL_TYPES) + ", privateuseone"
                           + f" device type at start of device string: {t}")
    if t == "privateuseone":  # parses to the PrivateUse1 type under its current name
        t = _privateuse1_name[0]
    if idx is not None:
        if index is not _NOT_GIVEN:
            raise RuntimeError("type (string) must not include an index because index was passed "
                               f"explicitly: {type}")
        ix = int(idx)
    else:
        ix = None if index is _NOT_GIVEN else index
    key = (t, ix)
    self = _CANON.get(key)
    if self is None:
        self = object.__new__(cls)
        self.type = t
        self.index = ix
        self._hash = hash(key)
        _CANON[key] = self
    if len(_CACHE) < 4096:  # only strings are cached, so True/1/1.0 never share an entry
        _CACHE[type if index is _NOT_GIVEN else (type, index, index.__class__)] = self
    return self


_CACHE = {}  # type string, or (type string, index, index class) -> device
_CANON = {}  # (type, index) -> the one device object

CPU = device("cpu")
META = device("meta")
