"""torch.masked: reductions and normalizations with a `mask=` (ember/masked/_ops.py), strided tensors."""
from ember.masked._ops import (_canonical_dim, _input_mask, _output_mask, _reduction_identity,  # noqa: F401
                               amax, amin, argmax, argmin, cumprod, cumsum, log_softmax, logaddexp,
                               logsumexp, mean, median, norm, normalize, prod, softmax, softmin, std,
                               sum, var)

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std",
           "sum", "var"]
