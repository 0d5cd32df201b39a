"""Device modules: ember.cuda (torch.cuda), ember.utils.rename_privateuse1_backend and
generate_methods_for_privateuse1_backend, and ember._register_device_module."""
import ember.cuda as cuda
import ember.utils as _utils
from ember.utils import backend_registration as _br
from ember.utils.backend_registration import _register_device_module

# torch exposes these as torch.utils.<name>
_utils.rename_privateuse1_backend = _br.rename_privateuse1_backend
_utils.generate_methods_for_privateuse1_backend = _br.generate_methods_for_privateuse1_backend
_utils.backend_registration = _br

__all__ = ["cuda", "_register_device_module"]
