"""ember.onnx (torch.onnx): `import ember.onnx` works, and models that ask whether an export is
running (`is_in_onnx_export()`) get torch's answer outside one.

Exporting needs the graph-mode capture of issue 10 (ember.compile / an fx Graph of the model's
ATen calls), which ember does not have yet: `export` and `dynamo_export` raise NotImplementedError
saying so."""

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "ExportOptions", "OnnxExporterError"]

_MISSING = ("ember.onnx.{name}: exporting to ONNX needs graph capture (ember.compile / ember.fx "
            "tracing a model's ATen calls into a graph, issue 10 'Graph mode, part 1: capture'), "
            "which ember does not have yet")


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
    """Whether an ONNX export is running: never in ember."""
    return False


def export(model, args=(), f=None, *pos, **kwargs):
    raise NotImplementedError(_MISSING.format(name="export"))


def dynamo_export(model, /, *model_args, export_options=None, **model_kwargs):
    raise NotImplementedError(_MISSING.format(name="dynamo_export"))
