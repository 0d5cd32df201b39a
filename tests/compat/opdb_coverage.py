"""How many of PyTorch's OpInfo op_db names ember resolves (a plain script, not a test).

    python tests/compat/opdb_coverage.py [--list]

Each OpInfo's `name` is looked up the way torch's op is found: a dotted name ("nn.functional.relu",
"special.erf", "linalg.svd", "fft.fft", "masked.sum", "signal.windows.hann") as an attribute path
under `ember` ("torch.ops.aten.x.default" as `ember.ops.aten.x.default`); a plain name as `ember.<name>`, else
as a Tensor method (`__radd__`, `byte`, ...), else as an operator packet `ember.ops.aten.<name>`;
if that fails, the OpInfo's `aten_name` is tried the same way. The random-sampling OpInfos (cauchy,
exponential, ...) call the in-place method `torch.Tensor.<name>_`: that method is looked up for them. Needs torch and `expecttest`
(pip install expecttest) for torch.testing._internal.common_methods_invocations.
"""
import inspect
import sys

import ember
from torch.testing._internal.common_methods_invocations import op_db


def _path(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def resolve(name):
    if name.startswith("torch."):  # "torch.ops.aten._safe_softmax.default", "torch._scaled_mm"
        name = name[len("torch."):]
    if "." in name:
        return _path(ember, name)
    obj = getattr(ember, name, None)
    if obj is None:
        obj = getattr(ember.Tensor, name, None)
    if obj is None:  # operators torch has only under torch.ops.aten (slice, native_dropout_backward, ...)
        obj = getattr(ember.ops.aten, name, None)
    return obj


def _inplace_method(op):
    """`name_` when the OpInfo's op is a lambda over torch.Tensor.<name>_ (the random samplers)."""
    try:
        src = inspect.getsource(op.op)
    except (OSError, TypeError):
        return None
    return f"{op.name}_" if f"torch.Tensor.{op.name}_" in src else None


def main():
    names = sorted({op.name for op in op_db})
    aten = {op.name: getattr(op, "aten_name", None) for op in op_db}
    inplace = {op.name: _inplace_method(op) for op in op_db}
    resolved, missing = [], []
    for name in names:
        if resolve(name) is not None or (aten.get(name) and resolve(aten[name]) is not None) or \
                (inplace.get(name) and getattr(ember.Tensor, inplace[name], None) is not None):
            resolved.append(name)
        else:
            missing.append(name)
    print(f"op_db: {len(op_db)} OpInfos, {len(names)} names; ember resolves {len(resolved)}, "
          f"missing {len(missing)}")
    if "--quiet" not in sys.argv:
        for n in missing:
            print("  missing:", n)


if __name__ == "__main__":
    main()
