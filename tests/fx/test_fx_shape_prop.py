"""ShapeProp against torch.fx.passes.shape_prop: the TensorMetadata of every node."""
import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp as TShapeProp

import ember
import ember.fx
from ember._subclasses.fake_tensor import FakeTensorMode
from ember.fx.passes.shape_prop import ShapeProp as EShapeProp, TensorMetadata


def norm(s):
    return s.replace("ember.", "torch.")


def model(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 3)
            self.lin = lib.nn.Linear(144, 5)

        def forward(self, x, y):
            h = lib.relu(self.conv(x))
            cl = h.permute(0, 2, 3, 1)
            flat = h.flatten(1)
            out = self.lin(flat).t()
            return out, cl * 2, (y > 0).long(), y[::2], flat.shape
    lib.manual_seed(0)
    return Net()


def test_shape_prop_matches_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    y = rng.standard_normal(6).astype(np.float32)
    tgm = torch.fx.symbolic_trace(model(torch))
    egm = ember.fx.symbolic_trace(model(ember))
    TShapeProp(tgm).propagate(torch.tensor(x), torch.tensor(y))
    EShapeProp(egm).propagate(ember.tensor(x), ember.tensor(y))
    for en, tn in zip(egm.graph.nodes, tgm.graph.nodes):
        assert en.name == tn.name
        assert ("tensor_meta" in en.meta) == ("tensor_meta" in tn.meta), en.name
        if "tensor_meta" in tn.meta:
            assert norm(repr(en.meta["tensor_meta"])) == repr(tn.meta["tensor_meta"]), en.name
        assert en.meta["type"].__name__ == tn.meta["type"].__name__
    meta = [n for n in egm.graph.nodes if n.name == "permute"][0].meta["tensor_meta"]
    assert isinstance(meta, TensorMetadata) and meta.memory_format is None
    assert meta._fields == ("shape", "dtype", "requires_grad", "stride", "memory_format", "is_quantized", "qparams")


def test_shape_prop_fake_mode_same_metadata():
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    y = ember.tensor(rng.standard_normal(6).astype(np.float32))
    real = ember.fx.symbolic_trace(model(ember))
    fake = ember.fx.symbolic_trace(model(ember))
    EShapeProp(real).propagate(x, y)
    EShapeProp(fake, fake_mode=FakeTensorMode()).propagate(x, y)
    for a, b in zip(real.graph.nodes, fake.graph.nodes):
        if "tensor_meta" in a.meta and a.op != "output":
            assert repr(a.meta["tensor_meta"]) == repr(b.meta["tensor_meta"]), a.name


def test_shape_prop_error_names_node():
    gm = ember.fx.symbolic_trace(lambda x, y: x @ y)
    with pytest.raises(RuntimeError, match=r"ShapeProp error for: node=%matmul"):
        EShapeProp(gm).propagate(ember.ones(2, 3), ember.ones(2, 3))


@pytest.mark.parametrize("shape,stride", [((2, 4, 6, 6), (144, 1, 24, 4)), ((2, 4, 6, 6), (144, 36, 6, 1)),
                                          ((3, 4), (1, 3)), ((), ())])
def test_extract_tensor_metadata_memory_formats(shape, stride):
    from torch.fx.passes.shape_prop import _extract_tensor_metadata as t_extract

    from ember.fx.passes.shape_prop import _extract_tensor_metadata as e_extract
    t = torch.empty_strided(shape, stride).requires_grad_()
    e = ember.empty_strided(shape, stride).requires_grad_()
    em, tm = e_extract(e), t_extract(t)
    assert norm(repr(em)) == repr(tm)
