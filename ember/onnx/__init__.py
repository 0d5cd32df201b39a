"""ember.onnx (torch.onnx): `export` writes an ONNX model of an ember model.

export traces the model's ATen calls with ember.fx's make_fx and converts each ATen node to ONNX
nodes (ember/onnx/_export.py); `is_in_onnx_export()` is True while it runs. It needs the optional
`onnx` package (`pip install onnx`, or ember's `onnx` extra). `dynamo_export` is not implemented."""

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "ExportOptions", "OnnxExporterError"]

_IN_EXPORT = False


class OnnxExporterError(RuntimeError):
    """torch.onnx.OnnxExporterError: an export failed."""


class ExportOptions:
    """torch.onnx.ExportOptions (the dynamo exporter's options); accepted and kept."""

    def __init__(self, *, dynamic_shapes=None, fake_context=None, onnx_registry=None,
                 diagnostic_options=None):
        self.dynamic_shapes = dynamic_shapes
        self.fake_context = fake_context
        self.onnx_registry = onnx_registry
        self.diagnostic_options = diagnostic_options


def is_in_onnx_export():
    """Whether ember.onnx.export is running (True inside the model's forward while it traces)."""
    return _IN_EXPORT


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=False,
           input_names=None, output_names=None, opset_version=None, dynamic_axes=None,
           do_constant_folding=True, **options):
    """torch.onnx.export (the TorchScript-style exporter's arguments): write `model` called on
    `args` (a tuple of tensors, possibly ending with a dict of keyword arguments, or one tensor)
    as an ONNX model to `f`, a path or a binary file-like object such as io.BytesIO.

    - the model is traced once with ember.fx.experimental.proxy_tensor.make_fx under no_grad, in
      the train/eval state it is given (batch norm and dropout must be in eval mode); its
      parameters and buffers become initializers named after them ("0.weight"), or graph inputs
      when export_params=False;
    - inputs are named `input_names`, else "input_0", "input_1", ... and outputs `output_names`,
      else "output_0", ... (torch's defaults are "input.1"-style names; ember's are plainer);
    - opset_version defaults to 17; an ATen op without a converter raises OnnxExporterError
      "Exporting the operator 'aten::xyz' to ONNX opset version 17 is not supported";
    - dynamic_axes ({name: {axis: "dim_name"}} or {name: [axis]}) marks those dims symbolic in
      the graph's inputs/outputs. Shapes are traced: only a leading (batch) axis really varies,
      because reshapes whose leading size is the input's leading size then copy it at run time;
    - what the trace cannot see is fixed at the traced values: a Python branch on a tensor's
      value (TransformerEncoder's padding check) takes the traced path, and factory ops such as
      arange or zeros become constants; an in-place op is exported only on a value the graph made
      itself (mutating an input, a parameter or a view is refused);
    - do_constant_folding, verbose (prints the traced graph) and other torch options
      (keep_initializers_as_inputs, training, ...) are accepted; the traced graph has no
      foldable subgraphs beyond its initializers.
    The written model passes onnx.checker.check_model. Returns None, like torch (>= 2.5 without
    dynamo)."""
    global _IN_EXPORT
    try:
        import onnx  # lazy: onnx is an optional dependency (pip install onnx)
    except ImportError as e:
        raise ModuleNotFoundError(
            "ember.onnx.export needs the 'onnx' package: pip install onnx "
            "(or install ember with its 'onnx' extra)") from e
    from ember.onnx import _export  # lazy: pulls in onnx-facing code only when exporting
    if f is None:
        raise ValueError("ember.onnx.export: f (a path or a binary file-like object) is required")
    opset = int(opset_version) if opset_version is not None else _export.DEFAULT_OPSET
    args, call_kwargs = _split_args(args, kwargs)
    param_names = {}
    if hasattr(model, "named_parameters"):
        for name, p in model.named_parameters():
            param_names.setdefault(id(p), name)
        for name, b in model.named_buffers():
            param_names.setdefault(id(b), name)
    _IN_EXPORT, previous = True, _IN_EXPORT
    try:
        gm = _trace(model, args, call_kwargs)
    finally:
        _IN_EXPORT = previous
    if verbose:
        print(gm.graph)
    proto = _export.convert(gm, opset=opset, export_params=export_params, param_names=param_names,
                            input_names=input_names, output_names=output_names,
                            dynamic_axes=dynamic_axes,
                            doc_string=f"exported by ember.onnx.export from {type(model).__name__}")
    onnx.checker.check_model(proto)
    if hasattr(f, "write"):
        f.write(proto.SerializeToString())
    else:
        onnx.save(proto, f)


def _split_args(args, kwargs):
    import ember  # lazy: the public op namespace (layering: bound late)
    if isinstance(args, ember.Tensor):
        args = (args,)
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    call_kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        call_kwargs.update(args[-1])
        args = args[:-1]
    for a in args:
        if not isinstance(a, ember.Tensor):
            raise OnnxExporterError(
                f"ember.onnx.export: args must be tensors (got {type(a).__name__}); "
                "pass other values as keyword arguments")
    return args, call_kwargs


def _trace(model, args, call_kwargs):
    import ember  # lazy: the public op namespace (layering: bound late)
    from ember.fx.experimental.proxy_tensor import make_fx  # lazy: capture only when exporting
    with ember.no_grad():
        return make_fx(lambda *a: model(*a, **call_kwargs))(*args)


def dynamo_export(model, /, *model_args, export_options=None, **model_kwargs):
    raise NotImplementedError("ember.onnx.dynamo_export is not implemented; use ember.onnx.export")
