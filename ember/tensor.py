"""ember.Tensor (torch/_tensor.py). Operator methods are attached from ember/_generated/methods.py;
what is written here is the Python-only surface: metadata, conversion, and protocols."""
import numpy as np

from ember.core import dtype as _dt
from ember.core.device import CPU, device as _device
from ember.core.keys import AUTOGRAD_OF, DispatchKey
from ember.core.tensor_impl import TensorImpl, tensor_class
from ember._size import Size


class Tensor(TensorImpl):
    __slots__ = ()
    __hash__ = object.__hash__
    __array_priority__ = 1000  # numpy defers `ndarray op Tensor` to us

    # ---- metadata --------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        from ember.core.errors import wrap_dim
        return self._shape[wrap_dim(dim, len(self._shape))]

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
    def layout(self):
        from ember import strided
        return strided

    @property
    def is_sparse(self):
        return False

    @property
    def is_quantized(self):
        return False

    def is_floating_point(self):
        return self._dtype.category == _dt.FLOAT

    def is_complex(self):
        return self._dtype.category == _dt.COMPLEX

    def is_signed(self):
        return self._dtype.is_signed

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
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
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
        return None if m is None else m.grad_fn

    @property
    def is_leaf(self):
        m = self._ameta
        return m is None or m.grad_fn is None

    @property
    def data(self):
        return self.detach()

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

    # ---- conversion ------------------------------------------------------------------------
    def item(self):
        return self._local_scalar_dense()

    def tolist(self):
        if self._device.type == "meta":
            raise RuntimeError("Tensor.tolist() is not supported for meta tensors")
        return self.cpu()._np.tolist()

    def numpy(self, *, force=False):
        if self._device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {self._device.type} device type tensor to numpy. "
                                "Use Tensor.cpu() to copy the tensor to host memory first.")
            return self.cpu().numpy()
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._np

    def __array__(self, dtype=None, copy=None):
        a = self.detach().cpu()._np if self._device.type != "cpu" or self.requires_grad else self._np
        return a if dtype is None else a.astype(dtype, copy=False)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return arr

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous"
                               if self.numel() > 1 else
                               "Boolean value of Tensor with no values is ambiguous")
        return bool(self.item())

    def __float__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item().real if isinstance(self.item(), complex) else self.item())

    def __int__(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._dtype.category not in (_dt.INT, _dt.BOOL) or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self):
        from ember._tensor_str import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __contains__(self, element):
        if isinstance(element, (Tensor, int, float, bool, complex)):
            return bool((self == element).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in "
                           f"a {type(element)}.")

    def __reversed__(self):
        return self.flip(0) if self.dim() else self

    def __getitem__(self, index):
        from ember._indexing import getitem
        return getitem(self, index)

    def __setitem__(self, index, value):
        from ember._indexing import setitem
        setitem(self, index, value)

    # ---- reflected operators that are not commutative -------------------------------------
    def __rsub__(self, other):
        return self.rsub(other)

    def __rtruediv__(self, other):
        return _scalar_like(other, self).div(self)

    def __rfloordiv__(self, other):
        return _scalar_like(other, self).floor_divide(self)

    def __rmod__(self, other):
        return _scalar_like(other, self).remainder(self)

    def __rpow__(self, other):
        return _scalar_like(other, self).pow(self)

    def __rmatmul__(self, other):
        return other.matmul(self) if isinstance(other, Tensor) else NotImplemented

    def __rlshift__(self, other):
        return _scalar_like(other, self).bitwise_left_shift(self)

    def __rrshift__(self, other):
        return _scalar_like(other, self).bitwise_right_shift(self)

    # ---- dtype / device conversion --------------------------------------------------------
    def to(self, *args, **kwargs):
        from ember._conversion import to
        return to(self, *args, **kwargs)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        from ember._conversion import type_
        return type_(self, dtype, non_blocking)

    def cpu(self, memory_format=None):
        return self if self._device is CPU else self.to("cpu")

    def float(self, memory_format=None):
        return self.to(_dt.float32)

    def double(self, memory_format=None):
        return self.to(_dt.float64)

    def half(self, memory_format=None):
        return self.to(_dt.float16)

    def bfloat16(self, memory_format=None):
        return self.to(_dt.bfloat16)

    def int(self, memory_format=None):
        return self.to(_dt.int32)

    def long(self, memory_format=None):
        return self.to(_dt.int64)

    def short(self, memory_format=None):
        return self.to(_dt.int16)

    def char(self, memory_format=None):
        return self.to(_dt.int8)

    def byte(self, memory_format=None):
        return self.to(_dt.uint8)

    def bool(self, memory_format=None):
        return self.to(_dt.bool_)

    def cfloat(self):
        return self.to(_dt.complex64)

    def cdouble(self):
        return self.to(_dt.complex128)

    def type_as(self, other):
        return self.to(other._dtype)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from ember._creation import tensor
        return tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                      requires_grad=requires_grad)

    # ---- DLPack and pickling --------------------------------------------------------------
    def __dlpack__(self, stream=None, **kwargs):
        if self._device.type != "cpu":
            raise BufferError("DLPack export is supported for CPU tensors")
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self._np.__dlpack__(**kwargs) if kwargs else self._np.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)

    def __reduce_ex__(self, proto):
        from ember._conversion import rebuild
        a = np.ascontiguousarray(self.detach().cpu()._np) if self._device.type != "meta" else None
        return (rebuild, (a, self._dtype.name, tuple(self._shape), str(self._device),
                          self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = self.detach().clone()
        if self.requires_grad:
            r.requires_grad_()
        if self._dict_or_none():
            import copy
            r.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = r
        return r

    def _dict_or_none(self):
        try:
            return self.__dict__
        except AttributeError:
            return None

    def untyped_storage(self):
        return TensorImpl.untyped_storage(self)

    def storage(self):
        return self.untyped_storage()

    @property
    def T(self):
        if self.dim() > 2:
            raise RuntimeError("The use of `x.T` on tensors of dimension other than 2 to reverse "
                               "their shape is not supported.")
        return self.permute(*range(self.dim() - 1, -1, -1))

    @property
    def mT(self):
        if self.dim() < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self):
        return self.T.conj() if self.is_complex() else self.T

    @property
    def mH(self):
        return self.mT.conj() if self.is_complex() else self.mT

    @property
    def real(self):
        if not self.is_complex():
            return self
        return _real_imag(self, 0)

    @property
    def imag(self):
        if not self.is_complex():
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return _real_imag(self, 1)


def _real_imag(t, i):
    from ember.kernels.cpu._glue import view
    a = t._np.real if i == 0 else t._np.imag
    return view(t, a)


def _scalar_like(other, self):
    if isinstance(other, Tensor):
        return other
    from ember._creation import scalar_tensor_for
    return scalar_tensor_for(other, self)


_BACKEND_AND_VIEW = ~sum(1 << k for k in AUTOGRAD_OF.values())
tensor_class[0] = Tensor


def attach_methods():
    from ember._generated import methods
    for name, fn in methods.METHODS.items():
        if name in Tensor.__dict__ and name not in ("__hash__",):
            continue  # a hand-written method above wins (to, type, size, ...)
        setattr(Tensor, name, fn)
    for name, fn in methods.DUNDERS.items():
        setattr(Tensor, name, fn)
    Tensor.__hash__ = object.__hash__


__all__ = ["Tensor", "DispatchKey", "_device"]
