"""ember.Size: the tuple subclass x.shape returns (torch.Size)."""
import operator

_tnew = tuple.__new__


def _as_int(x, i):
    if x.__class__ is int:
        return x
    try:
        if getattr(x, "_dtype", None) is not None and x.numel() == 1 and x._dtype.category <= 1:
            return int(x.item())  # a one-element integer (or bool) tensor
        if not hasattr(x, "_dtype"):
            return operator.index(x)  # int subclasses (bool), numpy integers
    except TypeError:
        pass
    name = "Tensor" if hasattr(x, "_dtype") else type(x).__name__
    raise TypeError(f"ember.Size() takes an iterable of 'int' (item {i} is '{name}')")


class Size(tuple):
    __slots__ = ()

    def __new__(cls, sizes=()):
        if sizes.__class__ is tuple:
            for x in sizes:
                if x.__class__ is not int:
                    break
            else:
                return _tnew(cls, sizes)
        return _tnew(cls, [_as_int(x, i) for i, x in enumerate(sizes)])

    def __repr__(self):
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return _tnew(Size, r) if i.__class__ is slice else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to ember.Size")
        return _tnew(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _tnew(Size, tuple.__add__(other, self))

    def __mul__(self, n):
        r = tuple.__mul__(self, n)
        return r if r is NotImplemented else _tnew(Size, r)

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


__all__ = ["Size"]
