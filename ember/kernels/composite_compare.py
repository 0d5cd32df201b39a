"""where's Scalar overloads as PyTorch writes them (CompositeImplicitAutograd): where.self with the
number in place of a tensor (its kernels take numbers), so autograd records WhereBackward0 for every
overload."""
from ember._generated import ops as _ops


def where_scalar_self(condition, self, other):
    return _ops.where_self.call(condition, self, other)


def where_scalar_other(condition, self, other):
    return _ops.where_self.call(condition, self, other)
