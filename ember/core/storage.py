"""Storage: one flat buffer on one device (c10::StorageImpl). Tensors are strided views of it."""
import numpy as np


def root_array(a):
    """The ndarray that owns the memory a NumPy view looks at (through as_strided's wrappers)."""
    while True:
        b = a.base
        if isinstance(b, np.ndarray):
            a = b
        elif b is not None and isinstance(getattr(b, "base", None), np.ndarray):
            a = b.base  # np.lib.stride_tricks.as_strided keeps its source behind a DummyArray
        else:
            return a


class UntypedStorage:
    """Bytes on a device. On CPU `data` is a flat uint8 NumPy array; on meta it is None."""
    __slots__ = ("data", "_nbytes", "device", "__weakref__")

    def __init__(self, data, nbytes, device):
        self.data = data
        self._nbytes = nbytes
        self.device = device

    @classmethod
    def from_array(cls, arr, device):
        root = root_array(arr)
        flat = root.ravel(order="K") if root.ndim != 1 else root
        if not (flat.flags.c_contiguous and (flat.size == 0 or np.shares_memory(flat, root))):
            flat = root  # exotic owner: keep it whole
        return cls(flat.view(np.uint8) if flat.flags.c_contiguous else flat, root.nbytes, device)

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    def __len__(self):
        return self._nbytes

    def data_ptr(self):
        if self.data is None:
            return 0
        return self.data.__array_interface__["data"][0]

    def tolist(self):
        return self.data.tolist()

    def __repr__(self):
        return f"ember.UntypedStorage(nbytes={self._nbytes}, device={self.device})"
