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


class _Fn(nn.Module):
    """A module whose forward is fn: one export per small op test."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _check_fn(fn, *xs, ops=(), **kw):
    proto, sess = _check(_Fn(fn), *xs, **kw)
    with ember.no_grad():
        ref = fn(*xs)
    ref = ref if isinstance(ref, tuple) else (ref,)
    outs = sess.run(None, {i.name: x.numpy() for i, x in zip(sess.get_inputs(), xs)})
    for o, r in zip(outs, ref):     # _check compares values; shapes and dtypes must match too
        assert o.shape == tuple(r.shape) and o.dtype == r.numpy().dtype, (o.shape, o.dtype, r)
    assert {n.op_type for n in proto.graph.node} >= set(ops)
    return proto


def test_slice_select_narrow():
    x = ember.randn(4, 6, 5)
    _check_fn(lambda x: (x[1:3, ::2, -1], x[:, 1], x[-2:, :-1], x[..., None], x[:, 2:100],
                         x[:, 1:], x.narrow(1, 2, 3), x.narrow(2, -2, 2)), x,
              ops={"Slice", "Gather", "Unsqueeze"})


def test_index_gather_embedding():
    ember.manual_seed(0)
    x = ember.randn(4, 6, 5)
    idx = ember.tensor([[0, 2], [1, -1]])
    emb = nn.Embedding(7, 3)
    _check_fn(lambda x: (x[ember.tensor([0, 2, -1])], x[:, idx], x.index_select(2, idx[0]),
                         ember.gather(x, 1, ember.tensor([[[0, 1, 2, 3, 5]]]).expand(4, 2, 5)),
                         emb(ember.tensor([[1, 6], [0, 0]])) + 1), x,
              ops={"Gather", "GatherElements"})


def test_split_chunk_unbind_stack_cat():
    x = ember.randn(4, 6, 5)
    proto = _check_fn(lambda x: (x.split(2, 1) + x.split([1, 5], 1) + x.chunk(3, 2) + x.unbind(1)
                                 + (ember.stack([x, x * 2], -1), ember.cat([x, x.int()], 0))), x,
                      ops={"Split", "Squeeze", "Concat"})
    assert sum(n.op_type == "Split" for n in proto.graph.node) == 4


def test_repeat_flip_expand_trilu():
    x = ember.randn(4, 6, 5)
    _check_fn(lambda x: (x.repeat(1, 2, 1), x.repeat(2, 1, 1, 2), x.flip(0, 2), x.flip(-1),
                         x[:, :1].expand(2, 4, 6, 5), x.triu(), x.tril(-1)), x,
              ops={"Tile", "Slice", "Expand", "Trilu"})


def test_where_masked_fill_comparisons_logic():
    x = ember.randn(4, 6)
    _check_fn(lambda x: (ember.where(x > 0, x, 0.0), ember.where(x < 0, 1, x.int()),
                         ember.where(x >= 0.5, x, x * 2), x.masked_fill(x <= 0, 1.0),
                         x.masked_fill(x != x[0], ember.tensor(-2.0)),
                         (x > 0) & (x < 1), ~(x > 0), (x == 0) | (x.int() != 1),
                         (x > 0) ^ (x > 1), ember.logical_not(x)), x,
              ops={"Where", "Greater", "Less", "Equal", "Not", "And", "Or", "Xor"})


def test_constants_and_fill_like():
    x = ember.randn(3, 5)
    _check_fn(lambda x: (x + ember.arange(5) + ember.ones(5) * ember.full((1,), 2.0),
                         ember.zeros_like(x) + ember.full_like(x, 3), ember.ones_like(x.int()),
                         x.new_zeros(2, 3) + ember.arange(0, 3, 2, dtype=ember.float32)[-1]), x,
              ops={"ConstantOfShape"})


def test_inplace_on_a_graph_value_is_exported():
    def fn(x):
        m = ember.zeros_like(x)
        m.masked_fill_(x > 0, -1.0)
        return m + x

    _check_fn(fn, ember.randn(3, 4), ops={"Where"})


def test_inplace_that_others_could_see_is_refused():
    def fn(x):
        x.masked_fill_(x > 0, 0.0)       # mutates the model's input
        return x + 1

    with pytest.raises(ember.onnx.OnnxExporterError,
                       match=r"'aten::masked_fill_.Scalar' .* not supported \(in-place"):
        _export(_Fn(fn), ember.randn(3))


def test_boolean_mask_index_is_refused():
    with pytest.raises(ember.onnx.OnnxExporterError,
                       match=r"'aten::index.Tensor' .*boolean mask"):
        _export(_Fn(lambda x: x[x > 0]), ember.randn(3))


def test_conv_transpose():
    ember.manual_seed(0)
    for model, shape in [
            (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 5)),
            (nn.ConvTranspose1d(4, 6, 3, stride=2, groups=2, dilation=2), (2, 4, 7)),
            (nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=(1, 2, 2), padding=(0, 1, 1),
                                output_padding=(0, 1, 0), bias=False), (1, 2, 3, 4, 5))]:
        proto, _ = _check(model.eval(), ember.randn(*shape), atol=1e-4)
        assert [n.op_type for n in proto.graph.node][0] == "ConvTranspose"
    x = ember.randn(1, 4, 3, 3)
    w = ember.randn(4, 2, 2, 2)
    _check_fn(lambda x: F.conv_transpose2d(x, w, stride=2, groups=2), x, atol=1e-4)


def test_conv_and_pools_1d_3d():
    ember.manual_seed(0)
    _check(nn.Sequential(nn.Conv1d(3, 4, 3, padding=2, dilation=2), nn.MaxPool1d(2),
                         nn.AvgPool1d(3, 2, 1), nn.AdaptiveAvgPool1d(1)), ember.randn(2, 3, 9),
           atol=1e-4)
    _check(nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.MaxPool3d(2), nn.AvgPool3d(1),
                         nn.AdaptiveAvgPool3d((1, 3, 1))), ember.randn(1, 2, 4, 6, 6), atol=1e-4)
    _check_fn(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), ember.randn(1, 2, 4, 6),
              ops={"AveragePool"})
    with pytest.raises(ember.onnx.OnnxExporterError, match=r"adaptive_avg_pool2d.* divides"):
        _export(_Fn(lambda x: F.adaptive_avg_pool2d(x, 3)), ember.randn(1, 2, 4, 4))


def test_baddbmm_reductions_that_pick_and_pointwise():
    x = ember.randn(2, 3, 4)
    _check_fn(lambda x: (ember.baddbmm(x[:, :, :3], x, x.transpose(1, 2), beta=0.5, alpha=2),
                         ember.bmm(x, x.transpose(1, 2)), ember.addbmm(x[0, :, :3], x,
                                                                        x.transpose(1, 2))), x,
              ops={"MatMul"}, atol=1e-4)
    _check_fn(lambda x: (x.amax(-1), x.amin((0, 2), keepdim=True), x.max(), x.min(),
                         x.max(1).values, x.max(1, keepdim=True).indices, x.min(dim=2)[1],
                         x.argmax(), x.argmin(1, keepdim=True), x.argmax(keepdim=True),
                         (x > 0).any(), (x > 0).all(1), x.any(-1, keepdim=True)), x,
              ops={"ReduceMax", "ReduceMin", "ArgMax", "ArgMin"})
    _check_fn(lambda x: (F.silu(x), F.leaky_relu(x, 0.2), F.elu(x), x.clamp(-0.5, 0.5),
                         x.clamp(min=0), x.clamp(max=0.1), F.hardtanh(x), x ** 2, x.abs() ** x,
                         x.int().clamp(0, 1), ember.sin(x).floor() + x.cos().ceil() + x.sign()),
              x, ops={"Clip", "Pow", "LeakyRelu", "Elu"})


def test_scaled_dot_product_attention():
    ember.manual_seed(0)
    q, k, v = ember.randn(2, 2, 5, 4), ember.randn(2, 2, 6, 4), ember.randn(2, 2, 6, 3)
    keep = ember.rand(5, 6) > 0.3
    keep[:, 0] = True               # no fully masked row (its softmax is nan in both)
    bias = -ember.rand(5, 6)
    _check_fn(lambda q, k, v: (F.scaled_dot_product_attention(q, k, v),
                               F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
                               F.scaled_dot_product_attention(q, k, v, attn_mask=bias),
                               F.scaled_dot_product_attention(q, k[:, :, :5], v[:, :, :5],
                                                              is_causal=True, scale=0.3)),
              q, k, v, ops={"MatMul", "Softmax", "Where"}, atol=1e-5)


def test_transformer_encoder_layer():
    ember.manual_seed(0)
    x = ember.randn(2, 5, 8)
    post = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()
    proto, _ = _check(post, x)
    assert {n.op_type for n in proto.graph.node} >= {"Split", "MatMul", "Softmax",
                                                       "LayerNormalization", "Relu"}
    pre = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True,
                                     activation="gelu", norm_first=True).eval()
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    padding = ember.tensor([[False] * 4 + [True], [False] * 5])
    _check_fn(lambda x: (pre(x, src_mask=causal), pre(x, src_key_padding_mask=padding),
                         pre(x, src_mask=causal, is_causal=True)), x)


class _TokenModel(nn.Module):
    """Embedding + learned positions + TransformerEncoder + Conv1d, pooled two ways: a small
    LSTM-free sequence classifier."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.register_buffer("pos", ember.randn(1, 16, 8))
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
        self.conv = nn.Conv1d(8, 8, 3, padding=1)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens):
        h = self.emb(tokens) * 8 ** 0.5 + self.pos[:, :tokens.shape[1]]
        h = self.enc(h, src_key_padding_mask=tokens == 0)
        h = F.relu(self.conv(h.transpose(1, 2))).transpose(1, 2)
        return self.head(h.mean(1)), h[:, 0], h.max(1).values


def test_sequence_model_with_padding():
    ember.manual_seed(0)
    model = _TokenModel().eval()
    tokens = ember.tensor([[3, 5, 7, 1, 0, 0], [2, 2, 9, 19, 4, 0]])
    _, sess = _check(model, tokens)
    # the padding mask is computed in the graph: other (left-aligned) padding runs the same model
    other = ember.tensor([[3, 0, 0, 0, 0, 0], [2, 2, 9, 19, 4, 11]])
    with ember.no_grad():
        ref = model(other)
    for o, r in zip(sess.run(None, {"input_0": other.numpy()}), ref):
        np.testing.assert_allclose(o, r.numpy(), atol=1e-5, rtol=1e-5)


def test_still_unsupported_ops_name_themselves():
    for fn, name in [(lambda x: ember.cumsum(x, 0), "aten::cumsum"),
                     (lambda x: ember.maximum(x, x * 2), "aten::maximum"),
                     (lambda x: ember.nonzero(x), "aten::nonzero"),
                     (lambda x: x.sort().values, "aten::sort")]:
        with pytest.raises(ember.onnx.OnnxExporterError,
                           match=rf"Exporting the operator '{name}.*' to ONNX opset version 17 "
                                 r"is not supported"):
            _export(_Fn(fn), ember.randn(3))


def test_values_only_a_python_branch_read_are_left_out():
    def fn(x):
        if bool((x[1:] > x[:-1]).all()):    # traced once: the branch taken is fixed
            return x * 2
        return x

    proto = _check_fn(fn, ember.arange(4.0))
    assert [n.op_type for n in proto.graph.node] == ["Mul", "Identity"]


def test_interpolate_and_pad():
    ember.manual_seed(0)
    x = ember.randn(1, 2, 3, 4)
    _check_fn(lambda x: (F.interpolate(x, scale_factor=2), F.interpolate(x, size=(5, 7)),
                         F.interpolate(x, scale_factor=1.5), nn.Upsample(scale_factor=2)(x),
                         F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
                         F.interpolate(x, scale_factor=1.5, mode="bilinear"),
                         F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                         F.interpolate(x[0], scale_factor=2, mode="linear"),
                         F.interpolate(x[:, :, None], size=(2, 5, 6), mode="trilinear")), x,
              ops={"Resize"})
    _check_fn(lambda x: (F.pad(x, (1, 2, 0, 1)), F.pad(x, (1, 1, 1, 1), mode="reflect"),
                         F.pad(x, (2, 1, 0, 1), mode="replicate"),
                         F.pad(x, (1, 1, -1, 0), value=3.0)), x, ops={"Pad"})
    with pytest.raises(ember.onnx.OnnxExporterError, match=r"circular.* before opset 19"):
        _export(_Fn(lambda x: F.pad(x, (1, 1), mode="circular")), ember.randn(1, 2, 3))
