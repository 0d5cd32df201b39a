"""Out-of-tree device backends through the PrivateUse1 dispatch key
(torch/utils/backend_registration.py).

A backend registers its kernels under "PrivateUse1" (ember.library.Library), names its device
with rename_privateuse1_backend("foo") so that "foo:0" parses to a PrivateUse1 device, and may
add Tensor.foo() / Tensor.is_foo / Module.foo() with generate_methods_for_privateuse1_backend()
and ember.foo with ember._register_device_module("foo", module).
"""
import sys

from ember.core import device as _devmod
from ember.dispatch.backend_select import DEVICE_KEYS

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]

_DEFAULT = "privateuseone"
_generated = []  # (class, attribute) added by generate_methods_for_privateuse1_backend


def _get_privateuse1_backend_name():
    return _devmod._privateuse1_name[0]


def rename_privateuse1_backend(backend_name: str) -> None:
    """Name the PrivateUse1 backend; allowed once per process (again with the same name)."""
    if not isinstance(backend_name, str):
        raise TypeError(f"rename_privateuse1_backend(): argument 'backend_name' (position 1) must "
                        f"be str, not {type(backend_name).__name__}")
    cur = _devmod._privateuse1_name[0]
    if backend_name == cur:
        return
    if cur != _DEFAULT:
        raise RuntimeError("torch.register_privateuse1_backend() has already been set! "
                           f"Current backend: {cur}")
    if backend_name in _devmod._TYPES:
        raise RuntimeError(f"Cannot register privateuse1 backend with in-tree device name: "
                           f"{backend_name}")
    _forget_devices((_DEFAULT,))  # "privateuseone" now parses to the new name
    _devmod._privateuse1_name[0] = backend_name


def _forget_devices(names):
    """Drop the parser's cached devices of these type names."""

    def named(k):
        s = k[0] if isinstance(k, tuple) else k
        return isinstance(s, str) and s.split(":")[0] in names

    for k in [k for k in _devmod._CACHE if named(k)]:
        del _devmod._CACHE[k]
    for k in [k for k in _devmod._CANON if k[0] in names]:
        del _devmod._CANON[k]
    for k in [k for k in DEVICE_KEYS if k.type in names]:
        del DEVICE_KEYS[k]


def _normalization_device(custom_backend_name, device=None):
    import ember

    def current():
        mod = getattr(ember, custom_backend_name, None)
        f = getattr(mod, "current_device", None)
        return f() if f is not None else 0

    if device is None:
        return current()
    if isinstance(device, str):
        device = ember.device(device)
    if isinstance(device, ember.device):
        if device.type != custom_backend_name:
            raise RuntimeError(f"Invalid device, must be {custom_backend_name} device")
        return current() if device.index is None else device.index
    return device


def _check_register_once(cls, attr):
    if hasattr(cls, attr):
        raise RuntimeError(f"The custom device module of {cls} has already been registered "
                           f"with {attr}")


def _set(cls, attr, value):
    setattr(cls, attr, value)
    _generated.append((cls, attr))


def _generate_tensor_methods(name):
    import ember

    def is_backend(self):
        return self._device.type == name

    is_backend.__name__ = f"is_{name}"
    _check_register_once(ember.Tensor, f"is_{name}")
    _set(ember.Tensor, f"is_{name}", property(is_backend))

    def to_backend(self, device=None, non_blocking=False, **kwargs):
        idx = _normalization_device(name, device)
        return self.to(device=ember.device(name, idx), non_blocking=non_blocking, **kwargs)

    to_backend.__name__ = name
    _check_register_once(ember.Tensor, name)
    _set(ember.Tensor, name, to_backend)


def _generate_module_methods(name):
    import ember
    Module = ember.nn.Module  # the public namespace, read when called (nn sits beside utils)

    if not hasattr(ember.Tensor, name):
        raise RuntimeError(f"Can not automatically generate {name}() method for torch.nn.Module."
                           f"Because torch.Tensor doesn't has the method {name}()."
                           "For this error, you can try setting for_tensor=True.")

    def module_to(self, device=None):
        return self._apply(lambda t: getattr(t, name)(device))

    module_to.__name__ = name
    _check_register_once(Module, name)
    _set(Module, name, module_to)


def _generate_storage_methods(name):
    from ember.core.storage import UntypedStorage

    def is_backend(self):
        return self.device.type == name

    _check_register_once(UntypedStorage, f"is_{name}")
    _set(UntypedStorage, f"is_{name}", property(is_backend))


def generate_methods_for_privateuse1_backend(for_tensor: bool = True, for_module: bool = True,
                                             for_packed_sequence: bool = True,
                                             for_storage: bool = False,
                                             unsupported_dtype=None) -> None:
    """Add Tensor.is_<name>, Tensor.<name>(), Module.<name>() (and UntypedStorage.is_<name> with
    for_storage) for the renamed PrivateUse1 backend. PackedSequence methods are not generated."""
    name = _get_privateuse1_backend_name()
    if for_tensor:
        _generate_tensor_methods(name)
    if for_module:
        _generate_module_methods(name)
    if for_storage:
        _generate_storage_methods(name)


def _register_device_module(device_type, module):
    """ember.<device_type> = module (and importable as ember.<device_type>)."""
    import ember
    device_type = ember.device(device_type).type
    if hasattr(ember, device_type):
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered "
                           f"with '{getattr(ember, device_type)}'")
    setattr(ember, device_type, module)
    sys.modules[f"ember.{device_type}"] = module


def _reset_privateuse1_backend():
    """ember-only, for tests: undo the rename, the generated methods and the device module."""
    import ember
    name = _devmod._privateuse1_name[0]
    while _generated:
        cls, attr = _generated.pop()
        if attr in cls.__dict__:
            delattr(cls, attr)
    if name != _DEFAULT:
        mod = sys.modules.get(f"ember.{name}")
        if mod is not None and getattr(ember, name, None) is mod:
            delattr(ember, name)
            del sys.modules[f"ember.{name}"]
        _forget_devices((name, _DEFAULT))
    _devmod._privateuse1_name[0] = _DEFAULT
