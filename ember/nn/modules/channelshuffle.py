"""ChannelShuffle (torch/nn/modules/channelshuffle.py)."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Shuffles the channels of (N, C, *) in `groups` groups (see F.channel_shuffle)."""
    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
