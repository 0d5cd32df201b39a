"""ember.Tensor (torch/_tensor.py). The operator methods are generated into _TensorBase
(ember/_generated/tensor_base.py); what is written here is the Python-only surface: metadata,
conversion, protocols, and the methods whose binding takes more than one schema."""
import numbers
import sys
import warnings

import numpy as np

from ember.core import chalf as _chalf, dtype as _dt, shared as _shared
from ember.core.device import CPU, device as _device
from ember.core.keys import AUTOGRAD_OF, DispatchKey
from ember.core.layout import sparse_coo, sparse_csr, strided
from ember.core.tensor_impl import SPARSE_BIT, SPARSE_CSR_BIT, TensorImpl, make_view_cpu, make_view_meta, tensor_class
from ember._size import Size
from ember._generated import functions as _F
from ember._generated.tensor_base import _TensorBase, bind_tensor_class
from ember import _conversion as _conv
from ember import _indexing, _tensor_str
from ember import autograd as _autograd  # Tensor.backward
from ember.dispatch import python_key as _pk
# the hand-written methods: named in the class body below, so imported before it. They make new
# tensors through tensor_class[0], which is set once the class exists.
from ember._python_api import (autograd as _api_autograd, complex_search as _api_complex,
                               histogram as _api_histogram, spectral as _api_spectral,
                               creation as _api_creation, reduction as _api_reduction, shape as _api_shape)

_tnew = tuple.__new__

_WARNED = set()


def _disabled_torch_function_impl(cls, func, types, args=(), kwargs=None):
    """torch._C._disabled_torch_function_impl: a subclass that sets __torch_function__ to it opts out."""
    return func(*args, **(kwargs or {}))


def _disabled_torch_dispatch_impl(cls, func, types, args=(), kwargs=None):
    return NotImplemented


def _convert_subclass(ret, cls):
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        return type(ret)(_convert_subclass(r, cls) for r in ret) if type(ret) in (tuple, list) else \
            type(ret)(*(_convert_subclass(r, cls) for r in ret))
    return ret


def _warn_once(msg):
    """TORCH_WARN_ONCE: a UserWarning the first time only."""
    if msg not in _WARNED:
        _WARNED.add(msg)
        warnings.warn(msg, UserWarning, stacklevel=3)


_T_DEPRECATED = ("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                 "deprecated and it will throw an error in a future release. Consider `x.mT` to "
                 "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` "
                 "to reverse the dimensions of a tensor.")
_SCALAR_ERR = "only one element tensors can be converted to Python scalars"


class Tensor(_TensorBase):
    __slots__ = ()
    __hash__ = object.__hash__
    __array_priority__ = 1000  # numpy defers `ndarray op Tensor` to us

    def __new__(cls, *args, device=None):
        """The legacy constructor: Tensor() (empty), Tensor(2, 3) / Tensor(size) (uninitialized),
        Tensor(data) (a copy in the default dtype)."""
        import ember
        if device is not None and _device(device).type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{_device(device).type} was passed")
        dt = _dt.defaults.float
        if not args:
            t = ember.empty(0, dtype=dt)
        elif len(args) == 1 and isinstance(args[0], TensorImpl):
            t = args[0]
            if type(t) is cls:
                return t
            t = t.detach()
        elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            t = ember.empty(tuple(int(a) for a in args), dtype=dt)
        elif len(args) == 1 and isinstance(args[0], Size):
            t = ember.empty(tuple(args[0]), dtype=dt)
        elif len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
            t = ember.tensor(args[0], dtype=dt)
        else:
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        if type(t) is not cls:
            t.__class__ = cls
            t._keys |= cls._py_keys
        return t

    def __init__(self, *args, **kwargs):
        pass

    # ---- subclasses: __torch_dispatch__ and __torch_function__ (ember/dispatch/python_key.py) -----
    # A subclass that overrides either carries the Python / PythonTorchFunction key on its instances:
    # _py_keys is computed once per class, and every place that gives a tensor a subclass adds it.
    _py_keys = 0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        td = getattr(cls.__torch_dispatch__, "__func__", cls.__torch_dispatch__)
        tf = getattr(cls.__torch_function__, "__func__", cls.__torch_function__)
        cls._py_keys = ((_pk.PYTHON if td is not _disabled_torch_dispatch_impl else 0)
                        | (_pk.TORCH_FUNCTION if tf is not _TF_DEFAULT and tf is not _disabled_torch_function_impl
                           else 0))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """The default: run `func` with subclasses' __torch_function__ off, and give tensor results
        this class (torch's Tensor.__torch_function__)."""
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with _pk.DisableTorchFunctionSubclass():
            return _convert_subclass(func(*args, **kwargs), cls)

    __torch_dispatch__ = classmethod(_disabled_torch_dispatch_impl)

    @staticmethod
    def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None, dtype=None,
                               layout=strided, device=None, pin_memory=False, requires_grad=False,
                               dispatch_sizes_strides_policy=None, dispatch_device=False, dispatch_layout=False,
                               _extra_dispatch_keys=None, storage_size=None):
        """A tensor of class `cls` with metadata and no data: its __torch_dispatch__ computes every op
        (torch.Tensor._make_wrapper_subclass)."""
        from ember.core.keys import backend_keyset
        from ember.core.tensor_impl import make_meta
        dev = CPU if device is None else _device(device)
        dt = _dt.defaults.float if dtype is None else dtype
        t = make_meta(tuple(int(n) for n in size), dt, None if strides is None else tuple(int(n) for n in strides),
                      device=dev, keys=backend_keyset(dev.type) | cls._py_keys | _pk.PYTHON)
        if storage_offset:
            t._offset = int(storage_offset)
        t.__class__ = cls
        if requires_grad:
            t.requires_grad_()
        return t

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, **kwargs):
        """An alias of `data` (same storage) whose class is `cls` (nn.Parameter's constructor)."""
        t = data.detach()
        if type(t) is not cls:
            t.__class__ = cls
            t._keys |= cls._py_keys
        if require_grad:
            t.requires_grad_()
        return t

    def as_subclass(self, cls):
        """This tensor's data as an instance of `cls` (shares storage and autograd history)."""
        with _pk.DisableTorchFunctionSubclass():
            t = self.view_as(self) if self.requires_grad else self.detach()
        t.__class__ = cls
        t._keys = (t._keys & ~(_pk.PYTHON | _pk.TORCH_FUNCTION)) | cls._py_keys
        return t

    # ---- metadata --------------------------------------------------------------------------
    @property
    def shape(self):
        return _tnew(Size, self._shape)

    def size(self, dim=None, *, axis=None):
        if dim is None:
            if axis is None:
                return _tnew(Size, self._shape)
            dim = axis  # NumPy's name, as torch's argument parser accepts it
        elif axis is not None:
            raise TypeError("size() got an unexpected keyword argument 'axis'")
        shape = self._shape
        if not shape:
            if isinstance(dim, int):
                raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        from ember.core.errors import wrap_dim
        return shape[wrap_dim(dim, len(shape))]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    ndimension = dim

    def numel(self):
        n = 1
        for s in self._shape:
            n *= s
        return n

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self._dtype.itemsize

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    @property
    def is_meta(self):
        return self._device.type == "meta"

    @property
    def is_mps(self):
        return False

    @property
    def is_nested(self):
        return False

    @property
    def layout(self):
        ks = self._keys
        if ks & (SPARSE_BIT | SPARSE_CSR_BIT):
            return sparse_coo if ks & SPARSE_BIT else sparse_csr
        return strided

    @property
    def is_sparse_csr(self):
        return bool(self._keys & SPARSE_CSR_BIT)

    @property
    def is_sparse(self):
        return bool(self._keys & SPARSE_BIT)

    # ---- sparse COO (ember/kernels/sparse): the methods torch writes as composites ----------------
    def to_dense(self, dtype=None, *, masked_grad=None):
        if not self._keys & (SPARSE_BIT | SPARSE_CSR_BIT):
            return self if dtype is None or dtype is self._dtype else self.to(dtype)
        return self._to_dense(dtype, masked_grad)

    def to_sparse_coo(self):
        return self.to_sparse()

    def coalesce(self):
        if not self._keys & SPARSE_BIT:
            raise RuntimeError("coalesce expected sparse coordinate tensor layout but got "
                               + ("SparseCsr" if self._keys & SPARSE_CSR_BIT else "Strided"))
        if self._sp.coalesced:
            return self
        return _F._coalesce(self)

    @property
    def is_quantized(self):
        return False

    def is_contiguous(self, memory_format=None):
        if memory_format is None or getattr(memory_format, "name", "")[:13] != "channels_last":
            for n in self._shape:
                if n == 0:  # an empty tensor is contiguous whatever its strides (c10)
                    return True
        return TensorImpl.is_contiguous(self, memory_format)

    def is_floating_point(self):
        return self._dtype.category == _dt.FLOAT

    def is_complex(self):
        return self._dtype.category == _dt.COMPLEX

    def is_signed(self):
        return self._dtype.is_signed

    def share_memory_(self):
        """Move this tensor's storage into shared memory (a no-op if it is there already, or on
        CUDA); processes this tensor is passed to then map the same memory."""
        _shared.share_(self)
        return self

    def is_shared(self):
        return _shared.is_shared(self)

    def is_pinned(self, device=None):
        g = sys.modules.get("ember.cuda._runtime")  # nothing is pinned before CUDA is touched
        return g is not None and g.is_pinned(self)

    def pin_memory(self, device=None):
        """A copy of this CPU tensor in page-locked host memory (the source of asynchronous
        copies to CUDA); the tensor itself when it is pinned already."""
        from ember import cuda as _cuda
        if not _cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{_conv.legacy_type_name(self)}' only dense CPU tensors can be pinned")
        if self.is_pinned():
            return self
        from ember.core.tensor_impl import wrap_cpu
        from ember.cuda import _runtime as _glue
        r = wrap_cpu(_glue.pin(self.detach()._np))
        if self.requires_grad:
            r = r.requires_grad_()
        return r

    def record_stream(self, stream):
        """Tell the caching allocator this tensor's memory is used by work on `stream`: the
        memory is not reused until that work has finished (torch.Tensor.record_stream)."""
        if self._device.type != "cuda":
            # an out-of-tree backend's device module (ember._register_device_module) may implement it
            fn = getattr(getattr(sys.modules["ember"], self._device.type, None), "record_stream", None)
            if fn is None or self._device.type == "cpu":
                raise RuntimeError("unknown parameter type")
            return fn(self, stream)
        from ember.cuda import _runtime as _glue
        if not isinstance(stream, _glue.StreamBase):
            raise RuntimeError("unknown parameter type")
        st = self.untyped_storage()
        alloc = _glue.state(self._device.index or 0).allocator
        blk = alloc.block_of(st)
        if blk is not None:
            alloc.record_stream(blk, stream)

    def get_device(self):
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    @property
    def _is_view_(self):
        return self._base is not None

    def _is_view(self):
        return self._base is not None

    # ---- autograd state (the autograd layer extends this) ----------------------------------
    @property
    def requires_grad(self):
        m = self._ameta
        return m is not None and m.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if flag and self._dtype.category < _dt.FLOAT:
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        from ember.autograd.meta import set_requires_grad
        set_requires_grad(self, flag)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self._dtype.category < _dt.FLOAT:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        from ember.autograd.meta import set_requires_grad
        set_requires_grad(self, requires_grad)
        return self

    @property
    def grad(self):
        m = self._ameta
        return None if m is None else m.grad

    @grad.setter
    def grad(self, value):
        from ember.autograd.meta import get_meta
        get_meta(self).grad = value

    @property
    def grad_fn(self):
        m = self._ameta
        if m is None:
            return None
        if m.grad_fn is not None and self._base is not None and m.view_version != self._vc[0]:
            from ember.autograd.graph import refresh_view_history
            return refresh_view_history(self)
        return m.grad_fn

    @property
    def is_leaf(self):
        m = self._ameta
        return m is None or m.grad_fn is None

    @property
    def data(self):
        # torch's variable_data(): the same storage under a version counter of its own, so a write
        # through x.data does not invalidate what autograd saved of x
        t = self.detach()
        t._vc = [0]
        return t

    @data.setter
    def data(self, other):
        # swap the metadata and memory, as `x.data = y` does
        for s in ("_np", "_shape", "_dtype", "_device"):
            object.__setattr__(self, s, getattr(other, s))
        for s in ("_strides", "_offset", "_storage"):
            try:
                object.__setattr__(self, s, getattr(other, s))
            except AttributeError:
                try:
                    object.__delattr__(self, s)
                except AttributeError:
                    pass
        ag = self._keys & ~_BACKEND_AND_VIEW
        self._keys = (other._keys & _BACKEND_AND_VIEW) | ag

    # ---- conversion to Python and NumPy ----------------------------------------------------
    def item(self):
        return self._local_scalar_dense()

    def tolist(self):
        dev = self._device.type
        if dev == "cpu":
            if self._dtype is _dt.complex32:
                return _chalf.as_python(self._np)
            return self._np.tolist()
        if dev == "meta":
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self.detach().to("cpu")._np.tolist()

    def numpy(self, *, force=False):
        if force:
            t = self.detach()
            if t._device.type != "cpu":
                t = t.to("cpu")
            return t._np
        if self._device.type != "cpu":
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._keys & (SPARSE_BIT | SPARSE_CSR_BIT):
            raise TypeError(f"can't convert {'Sparse' if self._keys & SPARSE_BIT else 'SparseCsr'} layout tensor "
                            "to numpy. Use Tensor.to_dense() first.")
        if self._dtype is _dt.complex32:  # NumPy has no complex32 (ember's structured arrays stay inside)
            raise TypeError("Got unsupported ScalarType ComplexHalf")
        return self._np

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        # numpy.sin(tensor) -> tensor; numpy.greater(tensor, 0) -> uint8 tensor, as in torch
        arr = np.asarray(arr)
        if arr.dtype == np.bool_:
            arr = arr.astype(np.uint8)
        from ember._creation import from_numpy
        return from_numpy(arr)

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        n = self.numel()
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                               if n > 1 else "Boolean value of Tensor with no values is ambiguous")
        return bool(self.item())

    def _scalar(self, ctype):
        if self.numel() != 1:
            raise ValueError(_SCALAR_ERR)
        v = self.item()
        if v.__class__ is complex:
            if v.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
            v = v.real
        return v

    def __float__(self):
        return float(self._scalar("double"))

    def __int__(self):
        return int(self._scalar("int64_t"))

    def __complex__(self):
        if self.numel() != 1:
            raise ValueError(_SCALAR_ERR)
        return complex(self.item())

    def __index__(self):
        if self._dtype.category not in (_dt.INT, _dt.BOOL) or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, spec):
        if not self._shape and self._device.type != "meta" and type(self) is Tensor:
            return self.detach().item().__format__(spec)
        return object.__format__(self, spec)

    __repr__ = _tensor_str.tensor_repr

    def __contains__(self, element):
        if isinstance(element, (TensorImpl, numbers.Number)):
            return bool((self == element).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                           f"a {type(element)}.")

    def __reversed__(self):
        return self.flip(0) if self._shape else self

    __getitem__ = _indexing.getitem
    __setitem__ = _indexing.setitem

    # ---- reflected operators that are not commutative -------------------------------------
    # the number goes straight to the op, so it keeps its wrapped-number promotion category
    def __rsub__(self, other):
        return _F.rsub(self, other)

    def __rtruediv__(self, other):
        return _F.div(other, self)

    __rdiv__ = __rtruediv__  # torch keeps the Python 2 name as an alias

    def __rfloordiv__(self, other):
        return _F.floor_divide(other, self)

    def __rmod__(self, other):
        return _F.remainder(other, self)

    def __rpow__(self, other):
        return _F.pow(other, self)

    def __rmatmul__(self, other):
        return other.matmul(self) if isinstance(other, Tensor) else NotImplemented

    def __rlshift__(self, other):
        return _scalar_like(other, self).bitwise_left_shift(self)

    def __rrshift__(self, other):
        return _scalar_like(other, self).bitwise_right_shift(self)

    # ---- dtype / device conversion --------------------------------------------------------
    def to(self, *args, **kwargs):
        return _conv.to(self, *args, **kwargs)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        return _conv.type_(self, dtype, non_blocking, **kwargs)

    def cpu(self, memory_format=None):
        if memory_format is not None:
            return self.to("cpu", memory_format=memory_format)
        return self if self._device is CPU else self.to("cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        if isinstance(device, (_device, str)):
            dev = _device(device)
        else:
            dev = _device("cuda", device) if device is not None else _device("cuda")
        return self.to(dev, non_blocking=non_blocking, memory_format=memory_format)

    def float(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.float32, memory_format)

    def double(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.float64, memory_format)

    def half(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.float16, memory_format)

    def bfloat16(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.bfloat16, memory_format)

    def int(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.int32, memory_format)

    def long(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.int64, memory_format)

    def short(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.int16, memory_format)

    def char(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.int8, memory_format)

    def byte(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.uint8, memory_format)

    def bool(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.bool_, memory_format)

    def chalf(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.complex32, memory_format)

    def cfloat(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.complex64, memory_format)

    def cdouble(self, memory_format=None):
        return _conv.to_dtype_fast(self, _dt.complex128, memory_format)

    def type_as(self, other):
        return self.to(other._device, other._dtype)

    # ---- DLPack, pickling, copying ---------------------------------------------------------
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self._device.type != "cpu":
            raise BufferError(f"Cannot pack tensors on {self._device}")
        kw = {}
        if max_version is not None:
            kw["max_version"] = max_version
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        return self._np.__dlpack__(**kw)

    def __dlpack_device__(self):
        if self._device.type != "cpu":
            raise ValueError(f"Unknown device type {self._device.type} for Dlpack")
        return (1, 0)

    def __reduce_ex__(self, proto):
        return _conv.reduce_tensor(self)

    def __deepcopy__(self, memo):
        return _conv.deepcopy_tensor(self, memo)

    def _dict_or_none(self):
        try:
            return self.__dict__
        except AttributeError:
            return None

    def untyped_storage(self):
        return TensorImpl.untyped_storage(self)

    def storage(self):
        return self.untyped_storage()

    # ---- methods whose binding is more than one schema (torch/_tensor.py, python_arg_parser) ----
    # Written next to their functions in ember/_python_api and ember/_indexing, and named here as
    # class attributes: a name in this class body wins over _TensorBase's generated one, and the
    # call goes straight to the implementation (no forwarding method in between).
    view = _api_shape._view
    view_as = _api_shape._view_as
    movedim = moveaxis = _api_shape.movedim
    split = _api_shape._split_method
    tensor_split = _api_shape.tensor_split
    squeeze = _api_shape._squeeze_method
    hsplit = _api_shape.hsplit
    vsplit = _api_shape.vsplit
    dsplit = _api_shape.dsplit
    repeat_interleave = _api_shape.repeat_interleave

    new_empty = _api_creation.new_empty
    new_zeros = _api_creation.new_zeros
    new_ones = _api_creation.new_ones
    new_full = _api_creation.new_full
    new_empty_strided = _api_creation.new_empty_strided
    new_tensor = _api_creation.new_tensor

    max = _api_reduction._max_method
    min = _api_reduction._min_method
    var = _api_reduction._var_method
    std = _api_reduction._std_method
    norm = _api_reduction._norm_method
    unique = _api_reduction.unique
    unique_consecutive = _api_reduction.unique_consecutive
    sort = _api_reduction.sort
    argsort = _api_reduction.argsort
    nonzero = _indexing.nonzero

    bincount = _api_complex.bincount
    histc = _api_complex.histc
    histogram = _api_histogram.histogram
    stft = _api_spectral.stft
    istft = _api_spectral.istft
    gcd = _api_complex._gcd_method
    gcd_ = _api_complex._gcd_
    lcm = _api_complex._lcm_method
    lcm_ = _api_complex._lcm_
    frexp = _api_complex.frexp

    # ---- autograd (torch/_tensor.py), written in ember/_python_api/autograd.py ---------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        # torch.Tensor.backward is torch.autograd.backward(self, ...): one way into the engine
        _autograd.backward(self, gradient, retain_graph, create_graph, None, inputs)

    register_hook = _api_autograd.register_hook
    register_post_accumulate_grad_hook = _api_autograd.register_post_accumulate_grad_hook
    retain_grad = _api_autograd.retain_grad
    detach_ = _api_autograd.detach_

    @property
    def retains_grad(self):
        m = self._ameta
        return bool(m is not None and m.retains_grad)

    # ---- transposes and complex parts -------------------------------------------------------
    @property
    def T(self):
        n = len(self._shape)
        if n == 2:
            return self.transpose(0, 1)
        if n == 0:
            _warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in "
                       "these cases.")
            return self
        _warn_once(_T_DEPRECATED)
        return self.permute(*range(n - 1, -1, -1))

    @property
    def mT(self):
        n = len(self._shape)
        if n == 0:
            _warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                       "these cases.")
            return self
        if n < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {n}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):
        n = len(self._shape)
        if n == 0:
            _warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
            return self.conj()
        if n != 2:
            extra = " For batches of matrices, consider using tensor.mH" if n > 2 else ""
            raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{n}-D tensor.{extra}")
        t = self.transpose(0, 1)
        return t.conj()

    @property
    def mH(self):
        n = len(self._shape)
        if n == 0:
            _warn_once("Tensor.mH is deprecated on 0-D tensors. Consider using x.conj().")
            return self.conj()
        if n < 2:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {n}-D tensor.")
        t = self.transpose(-2, -1)
        return t.conj()

    @property
    def real(self):
        if not self.is_complex():
            return self
        return _real_imag(self, 0)

    @real.setter
    def real(self, value):
        self.real.copy_(value)

    @property
    def imag(self):
        if not self.is_complex():
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return _real_imag(self, 1)

    @imag.setter
    def imag(self, value):
        self.imag.copy_(value)


def _real_imag(t, i):
    """The real (i=0) or imaginary (i=1) part of a complex tensor, as a view."""
    if t.requires_grad:  # through operators, so autograd records SelectBackward0
        import ember
        return ember.view_as_real(t).select(-1, i)
    rdt = t._dtype.to_real()
    if t._np is not None:
        from ember.kernels.cpu.views import complex_part
        r = make_view_cpu(t, complex_part(t._np, i))
    else:
        r = make_view_meta(t, t._shape, tuple(2 * s for s in t.stride()),
                           2 * t.storage_offset() + i)
    r._dtype = rdt
    return r


def _scalar_like(other, self):
    if isinstance(other, Tensor):
        return other
    from ember._creation import scalar_tensor_for
    return scalar_tensor_for(other, self)


_BACKEND_AND_VIEW = ~sum(1 << k for k in set(AUTOGRAD_OF.values()))  # sparse keys share AutogradCPU
tensor_class[0] = Tensor
_TF_DEFAULT = Tensor.__torch_function__.__func__
bind_tensor_class(Tensor)


__all__ = ["Tensor", "DispatchKey", "_device"]
