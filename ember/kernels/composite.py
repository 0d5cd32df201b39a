"""Composite operators: written with other ember operators, so they run on every backend
(CompositeImplicitAutograd, and CompositeExplicitAutograd where a backend may override)."""
import ember
from ember.core.dtype import check_cast
from ember.core.errors import warn_resized
from ember.core.layout import like_strides
from ember.core.tensor_impl import contiguous_strides


def store_out(out, r, stacklevel=3):
    """out <- r for a composite's out= variant, as ATen does it: the cast check, a resize to the
    result's shape (with ATen's warning when out had elements), then copy_."""
    check_cast(r.dtype, out.dtype)
    if out.shape != r.shape:
        if out.numel():
            warn_resized(out.shape, r.shape, stacklevel + 1)
        out.resize_(r.shape)
    return out.copy_(r)


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    """Cross-device or cross-dtype copy: allocate on the target, then copy_ (which converts)."""
    dtype = dtype or self._dtype
    device = device or self._device
    st = self.stride()
    strides = contiguous_strides(self._shape)
    if memory_format is not None or st != strides:  # the common contiguous input skips the stride rules
        strides = like_strides(self._shape, st, memory_format)
    r = ember.empty_strided(tuple(self._shape), strides, dtype=dtype, device=device)
    r.copy_(self, non_blocking)
    return r


def contiguous(self, memory_format=None):
    """Tensor.contiguous(memory_format): self when already laid out so, else a clone."""
    if self.is_contiguous(memory_format):
        return self
    if memory_format is None:
        memory_format = ember.contiguous_format
    elif memory_format.name == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return self.clone(memory_format=memory_format)


def conj(self):
    """Complex conjugate. ember has no lazy conjugate bit: complex tensors get a conjugated copy,
    real ones are returned as is (as PyTorch does for them)."""
    if self.is_complex():
        return ember.conj_physical(self)
    return self


def resolve_same(self):
    return self


def resize_(self, size, memory_format=None):
    """Tensor.resize_: keep the elements that fit, reallocate when it grows."""
    size = tuple(size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    if self._device.type == "cpu":
        from ember.kernels.cpu._glue import resize_cpu
        resize_cpu(self, size)
    else:
        self._shape = size
        self._strides = contiguous_strides(size)
    return self
