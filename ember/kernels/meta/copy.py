"""Meta functions of copy_, clone, item."""
from ember.core.layout import like_strides


def copy_(dst, src, non_blocking=False):
    if dst._device.type != "meta" and src._device.type == "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    from ember.kernels.meta._glue import store_inplace
    store_inplace(dst, (src._shape if hasattr(src, "_shape") else (), dst._dtype), "copy_")


def clone(t, memory_format=None):
    # preserve_format's strides: the layout rule in _glue (_clone)
    if memory_format is None or memory_format.name == "preserve_format":
        return t._shape, t._dtype
    return t._shape, t._dtype, like_strides(t._shape, None, memory_format)


def local_scalar_dense(t):
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")


def to_copy(t, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    return t._shape, dtype or t._dtype
