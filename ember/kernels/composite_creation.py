"""Composite factories: *_like, new_*, and the Tensor overloads of linspace/logspace, written with
ember ops so that they work on every backend (and across devices: zeros_like(x, device='meta'))."""
import ember
from ember.core import dtype as _dt
from ember.core.layout import like_strides
from ember.core.tensor_impl import contiguous_strides
from ember.kernels.meta.strides import empty_like_strides


def empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """at::empty_like: preserve_format keeps a non-overlapping and dense input's strides (else
    infer_dense_strides); the other formats ask for their layout."""
    shape = self._shape
    if memory_format is None and self._device.type != "meta":
        st = self.stride()
        cs = contiguous_strides(shape)
        if st == cs:  # the common contiguous input: no stride rules to run
            return ember.empty(shape, dtype=dtype or self._dtype, device=device or self._device)
    if self._device.type == "meta" and (memory_format is None or memory_format.name == "preserve_format"):
        strides = empty_like_strides(self)  # torch's meta empty_like: torch._refs.empty_like
    else:
        strides = like_strides(shape, self.stride(), memory_format)
    if strides == contiguous_strides(shape):
        return ember.empty(shape, dtype=dtype or self._dtype, device=device or self._device)
    return ember.empty_strided(shape, strides, dtype=dtype or self._dtype, device=device or self._device)


def zeros_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return empty_like(self, dtype, layout, device, pin_memory, memory_format).zero_()


def ones_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return empty_like(self, dtype, layout, device, pin_memory, memory_format).fill_(1)


def full_like(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
    return empty_like(self, dtype, layout, device, pin_memory, memory_format).fill_(fill_value)


def rand_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return rand_like_generator(self, None, dtype, layout, device, pin_memory, memory_format)


def rand_like_generator(self, generator, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    return empty_like(self, dtype, layout, device, pin_memory, memory_format).uniform_(
        0.0, 1.0, generator=generator)


def randn_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return randn_like_generator(self, None, dtype, layout, device, pin_memory, memory_format)


def randn_like_generator(self, generator, dtype=None, layout=None, device=None, pin_memory=None,
                         memory_format=None):
    return empty_like(self, dtype, layout, device, pin_memory, memory_format).normal_(
        0.0, 1.0, generator=generator)


def randint_like(self, high, dtype=None, layout=None, device=None, pin_memory=None,
                 memory_format=None):
    return randint_like_low_generator(self, 0, high, None, dtype, layout, device, pin_memory,
                                      memory_format)


def randint_like_low(self, low, high, dtype=None, layout=None, device=None, pin_memory=None,
                     memory_format=None):
    return randint_like_low_generator(self, low, high, None, dtype, layout, device, pin_memory,
                                      memory_format)


def randint_like_low_generator(self, low, high, generator, dtype=None, layout=None, device=None,
                               pin_memory=None, memory_format=None):
    return empty_like(self, dtype, layout, device, pin_memory, memory_format).random_(
        low, high, generator=generator)


def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.empty(size, dtype=dtype or self._dtype, device=device or self._device)


def new_empty_strided(self, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.empty_strided(size, stride, dtype=dtype or self._dtype, device=device or self._device)


def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.zeros(size, dtype=dtype or self._dtype, device=device or self._device)


def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.ones(size, dtype=dtype or self._dtype, device=device or self._device)


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return ember.full(size, fill_value, dtype=dtype or self._dtype, device=device or self._device)


def _endpoint(v, which, name):
    """A 0-d tensor endpoint of linspace/logspace as a Python number (0 on meta tensors)."""
    if not isinstance(v, ember.Tensor):
        return v
    if v.dim() != 0:
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                           f"{which} with {v.dim()} dimension(s).")
    if v._device.type == "meta":
        return 0j if v._dtype.category == _dt.COMPLEX else 0
    return v.item()


def linspace_tensor(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    s = _endpoint(start, "start", "linspace")
    e = _endpoint(end, "end", "linspace")
    return ember.linspace(s, e, steps, dtype=dtype, device=device or _device_of(start, end))


def logspace_tensor(start, end, steps, base=10.0, dtype=None, layout=None, device=None,
                    pin_memory=None):
    s = _endpoint(start, "start", "logspace")
    e = _endpoint(end, "end", "logspace")
    return ember.logspace(s, e, steps, base, dtype=dtype, device=device or _device_of(start, end))


def _device_of(start, end):
    for v in (start, end):
        if isinstance(v, ember.Tensor):
            return v._device
    return None
