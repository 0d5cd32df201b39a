"""ember: PyTorch's execution stack in Python on NumPy. `import ember as torch`."""
import numpy as _np

# PyTorch reports no floating-point exceptions (x / 0 is inf, log(-1) is nan); NumPy's warnings
# for them must not reach users. errstate per call would cost ~1 us on the hot path.
_np.seterr(all="ignore")
from ember.core import dtype as _dtmod
from ember.core.device import device
from ember.core.dtype import (bfloat16, bool_ as bool, complex64, complex128, float16, float32,  # noqa: A004
                              float64, int8, int16, int32, int64, uint8, dtype, promote_types,
                              can_cast, get_default_dtype, set_default_dtype)
from ember.core.keys import DispatchKey
from ember._size import Size
from ember.tensor import Tensor
from ember._generated.functions import *  # noqa: F401,F403
from ember._generated import ops as _gen_ops
from ember.tensor import attach_methods as _attach
from ember import _python_api

_attach()
globals().update(_python_api.exported())
for _n, _f in _python_api.methods().items():
    setattr(Tensor, _n, _f)
from ember import _submodules  # noqa: E402

linalg = _submodules.make("linalg")
special = _submodules.make("special")
fft = _submodules.make("fft")

from ember._creation import as_tensor, asarray, from_dlpack, from_numpy, tensor  # noqa: E402
from ember.core.generator import Generator, default_generator, manual_seed, seed, initial_seed  # noqa: E402,F401
from ember.random import get_rng_state, set_rng_state  # noqa: E402,F401
from ember.dispatch.library import ops  # noqa: E402
from ember.dispatch.trace import dispatch_trace  # noqa: E402
from ember import library  # noqa: E402,F401
from ember import autograd  # noqa: E402
from ember.autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402,F401
from ember.autograd.grad_mode import is_inference_mode_enabled  # noqa: E402,F401
from ember import amp  # noqa: E402
from ember.amp import autocast, is_autocast_enabled, get_autocast_dtype  # noqa: E402,F401

amp.autocast_mode.register_lists()

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128
return_types = type("return_types", (), dict(_gen_ops.RETURN_TYPES))
# named tuples of hand-written composites, listed as torch lists them
return_types.frexp = _python_api.complex_search._frexp_result
return_types.linalg_lstsq = _python_api.linalg_extra._lstsq_result
__version__ = "0.1.0"


class layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


strided = layout("strided")


class memory_format:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
preserve_format = memory_format("preserve_format")


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


def result_type(tensor1, tensor2):
    from ember.core.tensor_impl import TensorImpl

    def part(x):
        if isinstance(x, TensorImpl):
            return (x._dtype, 0 if x._shape else 1)
        return (_dtmod.scalar_dtype(x), 2)
    return _dtmod.result_type_of((part(tensor1), part(tensor2)))
