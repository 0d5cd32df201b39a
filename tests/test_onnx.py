"""ember.onnx.export: models traced with make_fx, written as ONNX, and run with onnxruntime against
ember's eager results. Skipped when onnx/onnxruntime are missing (the `test` extra installs them)."""
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx

onnx = pytest.importorskip("onnx", reason="pip install onnx (ember's test/onnx extras) to test export")
ort = pytest.importorskip("onnxruntime", reason="pip install onnxruntime (ember's test extra) to "
                                                "run exported models")


def _export(model, args, **kw):
    buf = io.BytesIO()
    ember.onnx.export(model, args, buf, **kw)
    return buf.getvalue()


def _check(model, *xs, atol=1e-5, **kw):
    data = _export(model, xs if len(xs) != 1 else xs[0], **kw)
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    outs = sess.run(None, {i.name: x.numpy() for i, x in zip(sess.get_inputs(), xs)})
    with ember.no_grad():
        ref = model(*xs)
    ref = ref if isinstance(ref, tuple) else (ref,)
    assert len(outs) == len(ref)
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o, r.numpy(), atol=atol, rtol=1e-5)
    return onnx.load_from_string(data), sess


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.LogSoftmax(dim=1))


def test_mlp():
    ember.manual_seed(0)
    model, _ = _check(_mlp(), ember.randn(5, 4))
    assert {n.op_type for n in model.graph.node} >= {"Gemm", "Relu", "LogSoftmax"}
    assert model.opset_import[0].version == 17
    assert {i.name for i in model.graph.initializer} >= {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_small_cnn_eval_batch_norm():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, stride=2, padding=1, dilation=1,
                                                     groups=2),
                          nn.Flatten(), nn.Linear(4 * 2 * 2, 5))
    with ember.no_grad():
        model[1].running_mean.copy_(ember.randn(4))
        model[1].running_var.copy_(ember.rand(4) + 0.5)
    model.eval()
    proto, _ = _check(model, ember.randn(2, 3, 8, 8))
    assert {n.op_type for n in proto.graph.node} >= {"Conv", "BatchNormalization", "MaxPool",
                                                       "Flatten"}


class _Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(6)
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        y = self.ln(x)
        y = ember.tanh(y) + ember.sigmoid(y) * 2 - 1.5
        y = F.gelu(y) / 3 + F.gelu(y, approximate="tanh")
        z = F.softmax(self.lin(y), dim=-1)
        w = z.mean(dim=-1, keepdim=True) + z.sum(1).unsqueeze(1)
        w = ember.cat([w, z.transpose(0, 1).permute(1, 0), x @ x.t()], 1)
        w = w.view(x.shape[0], -1).reshape(-1).unsqueeze(0).squeeze(0).clone().detach()
        img = x.view(1, 1, -1, 6)
        return (w, F.avg_pool2d(img, 2), F.adaptive_avg_pool2d(img, (1, 1)),
                F.max_pool2d(img, 2, return_indices=True)[0], x.expand(2, -1, -1))


def test_activations_norms_and_shape_ops():
    ember.manual_seed(0)
    proto, _ = _check(_Mixed(), ember.randn(4, 6))
    ops = {n.op_type for n in proto.graph.node}
    assert ops >= {"LayerNormalization", "Tanh", "Sigmoid", "Erf", "Softmax", "ReduceMean",
                   "ReduceSum", "Concat", "Transpose", "Reshape", "AveragePool",
                   "GlobalAveragePool", "MaxPool", "Expand"}


def test_path_output_and_names(tmp_path):
    ember.manual_seed(0)
    model, x = _mlp(), ember.randn(3, 4)
    path = tmp_path / "mlp.onnx"
    assert ember.onnx.export(model, (x,), str(path), input_names=["features"],
                             output_names=["logp"]) is None
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    assert [i.name for i in proto.graph.input] == ["features"]
    assert [o.name for o in proto.graph.output] == ["logp"]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out, = sess.run(["logp"], {"features": x.numpy()})
    with ember.no_grad():
        np.testing.assert_allclose(out, model(x).numpy(), atol=1e-5)


def test_default_names_and_dynamic_batch():
    ember.manual_seed(0)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2))

        def forward(self, x):
            y = self.body(x)
            return y.view(x.shape[0], 2, 1).expand(x.shape[0], 2, 3).reshape(x.shape[0], -1)

    model = Net()
    data = _export(model, ember.randn(5, 4), dynamic_axes={"input_0": {0: "batch"},
                                                            "output_0": [0]})
    proto = onnx.load_from_string(data)
    assert proto.graph.input[0].name == "input_0" and proto.graph.output[0].name == "output_0"
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = ember.randn(9, 4)
    with ember.no_grad():
        np.testing.assert_allclose(sess.run(None, {"input_0": x.numpy()})[0], model(x).numpy(),
                                   atol=1e-5)


def test_opset_version_and_export_params_false():
    ember.manual_seed(0)
    proto = onnx.load_from_string(_export(_mlp(), ember.randn(2, 4), opset_version=18,
                                          export_params=False))
    assert proto.opset_import[0].version == 18
    assert not proto.graph.initializer
    assert "0.weight" in [i.name for i in proto.graph.input]


def test_missing_onnx_says_how_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    with pytest.raises(ImportError, match="pip install onnx"):
        _export(_mlp(), ember.randn(2, 4))


def test_is_in_onnx_export():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2

    assert ember.onnx.is_in_onnx_export() is False
    _check(Probe(), ember.randn(2, 3))
    assert seen[0] is True and seen[-1] is False      # traced inside, then run eagerly outside
    assert ember.onnx.is_in_onnx_export() is False


def test_unsupported_op_names_it():
    class Cum(nn.Module):
        def forward(self, x):
            return ember.cumsum(x, 0)

    with pytest.raises(ember.onnx.OnnxExporterError,
                       match=r"Exporting the operator 'aten::cumsum' to ONNX opset version 17 "
                             r"is not supported"):
        _export(Cum(), ember.randn(3))
    assert ember.onnx.is_in_onnx_export() is False


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_matches_torch_onnx_export():
    """The same MLP exported by torch.onnx.export (TorchScript exporter) and by ember agree."""
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    model, x = _mlp(), ember.randn(3, 4)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3),
                                 torch.nn.LogSoftmax(dim=1))
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), tmodel.named_parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    buf = io.BytesIO()
    try:
        torch.onnx.export(tmodel, (torch.from_numpy(x.numpy()),), buf, dynamo=False)
    except Exception as e:  # noqa: BLE001 - torch.onnx may need packages the environment lacks
        pytest.skip(f"torch.onnx.export unavailable here: {e}")
    theirs = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    ours = ort.InferenceSession(_export(model, x), providers=["CPUExecutionProvider"])
    a = theirs.run(None, {theirs.get_inputs()[0].name: x.numpy()})[0]
    b = ours.run(None, {"input_0": x.numpy()})[0]
    np.testing.assert_allclose(a, b, atol=1e-5)
