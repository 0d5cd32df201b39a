"""Max unpooling, 3-d power-average and 3-d adaptive pooling layers (torch/nn/modules/pooling.py)."""
from ember.nn import functional as F
from ember.nn.modules.conv import _pair, _single, _triple
from ember.nn.modules.module import Module
from ember.nn.modules.pooling import _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd, _LPPoolNd

__all__ = ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool3d", "AdaptiveMaxPool3d", "AdaptiveAvgPool3d"]


class _MaxUnpoolNd(Module):
    _ntuple = None  # _single / _pair / _triple in the subclasses

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        tup = type(self)._ntuple
        self.kernel_size = tup(kernel_size)
        self.stride = tup(stride if (stride is not None) else kernel_size)
        self.padding = tup(padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: maxima back at their indices, zeros elsewhere."""
    _ntuple = staticmethod(_single)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d: maxima back at their indices, zeros elsewhere."""
    _ntuple = staticmethod(_pair)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d: maxima back at their indices, zeros elsewhere."""
    _ntuple = staticmethod(_triple)

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling."""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-d adaptive max pooling to `output_size` (None keeps that input size)."""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-d adaptive average pooling to `output_size` (None keeps that input size)."""

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)
