"""ember: PyTorch's execution stack in Python on NumPy. `import ember as torch`."""
import numpy as _np

# PyTorch reports no floating-point exceptions (x / 0 is inf, log(-1) is nan); NumPy's warnings
# for them must not reach users. errstate per call would cost ~1 us on the hot path.
_np.seterr(all="ignore")
from ember.core import dtype as _dtmod
from ember.core.device import device
from ember.core.dtype import (bfloat16, bool_ as bool, complex32, complex64, complex128, float16, float32,  # noqa: A004
                              float64, int8, int16, int32, int64, uint8, dtype, promote_types,
                              can_cast, get_default_dtype, set_default_dtype)
from ember.core.keys import DispatchKey
from ember.core.layout import (channels_last, channels_last_3d, contiguous_format, layout,  # noqa: F401
                               memory_format, preserve_format, sparse_coo, sparse_csr, strided)
from ember._size import Size
from ember.tensor import Tensor
# each dispatch key's kernels, registered once Tensor exists (the CPU glue makes Tensors)
from ember._generated import register_cpu, register_meta, register_composite  # noqa: E402,F401
from ember._generated import register_inplace_or_view, register_autograd  # noqa: E402,F401
from ember._generated.functions import *  # noqa: F401,F403
from ember._generated import ops as _gen_ops
from ember._generated.functions import segment_reduce as _segment_reduce  # noqa: E402,F401  (torch's alias)

# the hand-written functions of the public API (ember/_python_api), over the generated ones; in this
# order, a later module's name replaces an earlier one's
from ember._python_api.autograd import *  # noqa: E402,F401,F403
from ember._python_api.chunk_cat import _chunk_cat  # noqa: E402,F401  (torch._chunk_cat)
from ember._python_api.complex_search import *  # noqa: E402,F401,F403
from ember._python_api.copy_variants import *  # noqa: E402,F401,F403  (torch's *_copy view variants)
from ember._python_api.creation import *  # noqa: E402,F401,F403
from ember._python_api.distance import *  # noqa: E402,F401,F403
from ember._python_api.dtype_info import *  # noqa: E402,F401,F403
from ember._python_api.functional import *  # noqa: E402,F401,F403
from ember._python_api.gradient_api import *  # noqa: E402,F401,F403  (torch.gradient)
from ember._python_api.histogram import *  # noqa: E402,F401,F403  (torch.histogram, histogramdd)
from ember._python_api.indexing import *  # noqa: E402,F401,F403
from ember._python_api.legacy_types import *  # noqa: E402,F401,F403
from ember._python_api.linalg import *  # noqa: E402,F401,F403
from ember._python_api.lowrank import *  # noqa: E402,F401,F403  (torch.svd_lowrank, pca_lowrank)
from ember._python_api.lu_compat import *  # noqa: E402,F401,F403  (torch.lu)
from ember._python_api.printing import *  # noqa: E402,F401,F403
from ember._python_api.reduction import *  # noqa: E402,F401,F403
from ember._python_api.shape import *  # noqa: E402,F401,F403
from ember._python_api.spectral import *  # noqa: E402,F401,F403  (torch.stft, istft)
from ember._python_api import special_compat  # noqa: E402,F401  (special.gammainc, gammaincc)
from ember._python_api.threads import *  # noqa: E402,F401,F403
from ember._python_api.typename import *  # noqa: E402,F401,F403
from ember import _python_api  # noqa: E402
from ember import _submodules  # noqa: E402

linalg = _submodules.make("linalg")
from ember._python_api import ldl as _ldl  # noqa: E402,F401  (linalg.ldl_factor, ldl_factor_ex, ldl_solve)
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
# the CUDA backend: its kernels register themselves when CUDA first initialises (the runtime's on_init)
from ember.kernels import cuda as _cuda_backend  # noqa: E402,F401

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
chalf, cfloat, cdouble = complex32, complex64, complex128
return_types = type("return_types", (), dict(_gen_ops.RETURN_TYPES))
# named tuples of hand-written composites, listed as torch lists them
return_types.frexp = _python_api.complex_search._frexp_result
return_types.histogram = _python_api.histogram._histogram
return_types.histogramdd = _python_api.histogram._histogramdd
return_types.linalg_ldl_factor_ex = _ldl._ldl_factor_ex
return_types.linalg_ldl_factor = _ldl._ldl_factor
__version__ = "0.1.0"

# torch.cuda and the libraries, bound as attributes of the package as torch/__init__.py binds
# torch.cuda, torch.nn, torch.optim and torch.utils.data; torch.save/load and
# torch._register_device_module are theirs, re-exported
from ember import cuda  # noqa: E402
from ember import nn, optim, serialization, utils  # noqa: E402,F401
from ember.nn._functional_ctc import aten_ctc_loss as ctc_loss  # noqa: E402,F401  (torch.ctc_loss)
from ember.utils import data as _utils_data  # noqa: E402,F401  (binds ember.utils.data)
from ember.serialization import load, save  # noqa: E402,F401
from ember.utils.backend_registration import _register_device_module  # noqa: E402,F401
from ember import distributed  # noqa: E402,F401  (torch.distributed, over MPI: ember/distributed)
from ember import accelerator  # noqa: E402,F401
from ember import multiprocessing, onnx  # noqa: E402,F401
from ember import _C  # noqa: E402,F401
from ember import profiler  # noqa: E402,F401  (torch.profiler; binds ember.autograd.profiler too)
from ember import sparse  # noqa: E402  (torch.sparse; registers the SparseCPU kernels)
from ember.sparse import sparse_coo_tensor, sparse_csr_tensor, spmm  # noqa: E402,F401
from ember import signal  # noqa: E402,F401  (torch.signal.windows: ember/signal)
from ember import masked  # noqa: E402,F401  (torch.masked: ember/masked)

# torch.cuda.FloatTensor and the other legacy CUDA types (torch/csrc/tensor/python_tensor.cpp)
for _lt in _python_api.legacy_types.CUDA_TYPES.values():
    setattr(cuda, _lt.__name__, _lt)
del _lt


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


# Graph mode, function transforms and the Python key's user API load on first use: `import ember`
# pays nothing for them (torch imports them eagerly; they would cost ember ~10% of its import).
_LAZY_MODULES = {"fx": "ember.fx", "func": "ember.func", "_dynamo": "ember._dynamo",
                 "_functorch": "ember._functorch", "_subclasses": "ember._subclasses",
                 "overrides": "ember.overrides", "_inductor": "ember._inductor",
                 "compiler": "ember.compiler"}
# public functions that live in those modules: name -> (module, attribute)
_LAZY_ATTRS = {"compile": ("ember._dynamo.eval_frame", "compile"), "vmap": ("ember._functorch.apis", "vmap")}


def __getattr__(name):
    import importlib  # lazy: see _LAZY_MODULES
    mod = _LAZY_MODULES.get(name)
    if mod is not None:
        return importlib.import_module(mod)
    spec = _LAZY_ATTRS.get(name)
    if spec is not None:
        return getattr(importlib.import_module(spec[0]), spec[1])
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def _assert(condition, message):
    """torch._assert: an assert that fx's symbolic tracing can record (it is a function, not a statement)."""
    # `bool` here is ember.bool, the dtype
    assert condition.__bool__() if isinstance(condition, Tensor) else condition, message
