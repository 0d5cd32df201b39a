"""parameters_to_vector / vector_to_parameters (torch/nn/utils/convert_parameters.py)."""
import ember
from ember._python_api.typename import typename as _typename
from ember.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """One 1-D tensor with all the parameters, flattened, in order."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.view(-1))
    return ember.cat(vec)


def vector_to_parameters(vec, parameters):
    """Sets each parameter's data to its slice of `vec` (parameters keep their identity)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    param_device = None
    pointer = 0
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param


def _check_param_device(param, old_param_device):
    if old_param_device is None:
        old_param_device = param.get_device() if param.device.type == "cuda" else -1
    else:
        if param.device.type == "cuda":
            warn = param.get_device() != old_param_device
        else:
            warn = old_param_device != -1
        if warn:
            raise TypeError("Found two parameters on different devices, this is currently not "
                            "supported.")
    return old_param_device
