"""ember.nn.utils (torch.nn.utils): gradient clipping, parameters <-> vector, rnn.pad_sequence."""
from ember.nn.utils import clip_grad, convert_parameters, rnn  # noqa: F401
from ember.nn.utils.clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                                      clip_grads_with_norm_, get_total_norm)
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters", "rnn"]
