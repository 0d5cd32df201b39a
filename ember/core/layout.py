"""torch.layout and torch.memory_format (c10/core/Layout.h, MemoryFormat.h): named constants.

ember has one layout, strided; memory formats are read by name where strides are chosen."""


class layout:
    __module__ = "ember"

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


strided = layout("strided")


class memory_format:
    __module__ = "ember"

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "ember." + self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
preserve_format = memory_format("preserve_format")
