"""Hand-written parts of the public API that are not one schema each (torch/functional.py and
the Python-only helpers of torch/_tensor.py). Each module lists the functions it adds to the ember
namespace in `__all__`; ember/__init__.py imports them by name. Tensor methods written here are
named as class attributes in the body of ember.Tensor (ember/tensor.py).

This layer sits below ember.tensor (see ember/_layers.py): its modules never import the Tensor
class (new tensors come from tensor_class[0]) nor the libraries (nn, optim, utils)."""
