"""ShapeProp (torch/fx/passes/shape_prop.py): run a GraphModule on example inputs and record each
node's TensorMetadata in node.meta['tensor_meta'] (and its result type in node.meta['type'])."""
import traceback
from typing import Any, NamedTuple

import ember
from ember.fx.interpreter import Interpreter
from ember.fx.node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


_CHANNELS_LAST_3D = getattr(ember, "channels_last_3d", None)


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _is_contiguous_for(t, fmt):
    ndim = t.dim()
    if fmt is ember.channels_last and ndim != 4:
        return False
    if fmt is _CHANNELS_LAST_3D and ndim != 5:
        return False
    try:
        return t.is_contiguous(memory_format=fmt)
    except (RuntimeError, TypeError, ValueError):
        return False


def _extract_tensor_metadata(result, include_contiguity=True):
    shape = result.shape
    dtype = result.dtype
    requires_grad = result.requires_grad
    stride = result.stride()
    memory_format = None
    if include_contiguity:
        for fmt in (ember.contiguous_format, ember.channels_last, _CHANNELS_LAST_3D):
            if fmt is None:
                continue
            if _is_contiguous_for(result, fmt):
                memory_format = fmt
                break
    return TensorMetadata(shape, dtype, requires_grad, stride, memory_format, False, {})


class ShapeProp(Interpreter):
    """`ShapeProp(gm).propagate(*example_inputs)`: each node's meta['tensor_meta'] gets the shape,
    dtype, requires_grad, stride and memory format of its result."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n):
        try:
            if self.fake_mode is not None:
                with self.fake_mode:
                    result = super().run_node(n)
            else:
                result = super().run_node(n)
        except Exception as e:
            traceback.print_exc()
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with meta={n.meta}") from e
        found_tensor = False

        def extract(obj):
            nonlocal found_tensor
            if isinstance(obj, ember.Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        if self.fake_mode is None:
            return super().run(*args)
        args = [self.fake_mode.from_tensor(t) if isinstance(t, ember.Tensor) else t for t in args]
        # the module's parameters and buffers become fakes as they are used (torch deep-copies the
        # module to fake tensors first: the same metadata)
        prev = self.fake_mode.allow_non_fake_inputs
        self.fake_mode.allow_non_fake_inputs = True
        try:
            return super().run(*args)
        finally:
            self.fake_mode.allow_non_fake_inputs = prev
