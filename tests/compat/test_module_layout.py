"""torch.nn.modules.<file>.<Class> paths, and whole modules pickled both ways: ember.save of a
module records torch's class paths (torch.load builds torch's classes), ember.load of torch's
pickle builds ember's."""
import importlib
import inspect
import io
import pkgutil
import warnings

import numpy as np
import pytest
import torch

import ember


def _torch_files():
    for info in pkgutil.iter_modules(torch.nn.modules.__path__):
        yield info.name, importlib.import_module(f"torch.nn.modules.{info.name}")


def test_every_class_in_torchs_file():
    """Each public class of torch.nn.modules.<file> that ember.nn has is in ember.nn.modules.<file>."""
    missing, checked = [], 0
    for name, tmod in _torch_files():
        names = [n for n, v in vars(tmod).items() if inspect.isclass(v) and v.__module__ == tmod.__name__
                 and not n.startswith("_")]
        names += [n for n in getattr(tmod, "__all__", []) if n not in names]
        for n in names:
            if not hasattr(ember.nn, n):
                continue
            try:
                emod = importlib.import_module(f"ember.nn.modules.{name}")
            except ImportError:
                missing.append(f"ember.nn.modules.{name} (for {n})")
                continue
            checked += 1
            cls = getattr(emod, n, None)
            if cls is None:
                missing.append(f"ember.nn.modules.{name}.{n}")
            elif cls is not getattr(ember.nn, n):
                missing.append(f"ember.nn.modules.{name}.{n} is not ember.nn.{n}")
            elif getattr(tmod, n).__module__ == tmod.__name__ and cls.__module__ != emod.__name__:
                missing.append(f"{n} is defined in {cls.__module__}, torch's in {tmod.__name__}")
    assert not missing, missing
    assert checked > 100


def test_no_extra_files():
    """ember.nn.modules has no file that torch.nn.modules lacks (layer classes live in torch's files)."""
    theirs = {name for name, _ in _torch_files()}
    ours = {info.name for info in pkgutil.iter_modules(ember.nn.modules.__path__)}
    assert ours <= theirs, sorted(ours - theirs)


def _models(lib):
    nn = lib.nn
    lib.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                            dim_feedforward=16, dropout=0.0)
    return {
        "transformer": (tr, lambda: ((5, 2, 8), (4, 2, 8))),
        "cnn": (nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(12, 4), nn.LogSoftmax(dim=1)), lambda: ((2, 1, 4, 4),)),
        "mha": (nn.MultiheadAttention(8, 2, batch_first=True), lambda: ((2, 3, 8), (2, 3, 8), (2, 3, 8))),
        "lstm": (nn.LSTM(4, 5, num_layers=2), lambda: ((3, 2, 4),)),
        "gru": (nn.GRU(4, 3, batch_first=True, bidirectional=True), lambda: ((2, 3, 4),)),
        "norms": (nn.Sequential(nn.InstanceNorm1d(3, affine=True), nn.LayerNorm(5), nn.GroupNorm(1, 3),
                                nn.LocalResponseNorm(2), nn.Dropout(0.0), nn.GELU(), nn.ChannelShuffle(1)),
                  lambda: ((2, 3, 5),)),
        "pool": (nn.Sequential(nn.AdaptiveAvgPool3d(2), nn.AdaptiveMaxPool3d(1)), lambda: ((1, 2, 4, 4, 4),)),
        "dict": (nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.ModuleList([nn.Tanh(), nn.PReLU()])}), None),
        "loss": (nn.CrossEntropyLoss(weight=lib.tensor([1.0, 2.0, 0.5]), label_smoothing=0.1), None),
        "embedding": (nn.Embedding(10, 4, padding_idx=0), None),
    }


def _outputs(lib, model, shapes):
    rng = np.random.default_rng(1)
    xs = [lib.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    model.eval()
    with lib.no_grad():
        y = model(*xs)
    if isinstance(y, tuple):
        y = y[0]
    return y.numpy()


def _check_same(src_lib, src, dst_lib, dst, shapes):
    assert type(dst).__module__.split(".")[0] == dst_lib.__name__
    assert type(dst).__name__ == type(src).__name__
    assert type(dst).__module__[len(dst_lib.__name__):] == type(src).__module__[len(src_lib.__name__):]
    sd_s, sd_d = src.state_dict(), dst.state_dict()
    assert list(sd_s) == list(sd_d)
    for k in sd_s:
        np.testing.assert_array_equal(sd_s[k].numpy(), sd_d[k].numpy())
    for (n1, m1), (n2, m2) in zip(src.named_modules(), dst.named_modules()):
        assert n1 == n2 and type(m1).__name__ == type(m2).__name__
        assert m2.training == m1.training
    if shapes is not None:
        np.testing.assert_allclose(_outputs(src_lib, src, shapes()), _outputs(dst_lib, dst, shapes()),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(_models(torch)))
def test_ember_pickle_loads_in_torch(name):
    model, shapes = _models(ember)[name]
    buf = io.BytesIO()
    ember.save(model, buf)
    loaded = torch.load(io.BytesIO(buf.getvalue()), weights_only=False)
    _check_same(ember, model, torch, loaded, shapes)


@pytest.mark.parametrize("name", list(_models(torch)))
def test_torch_pickle_loads_in_ember(name):
    model, shapes = _models(torch)[name]
    buf = io.BytesIO()
    torch.save(model, buf)
    loaded = ember.load(io.BytesIO(buf.getvalue()), weights_only=False)
    _check_same(torch, model, ember, loaded, shapes)


def test_functions_recorded_under_torch_names():
    import pickletools
    import zipfile
    model = ember.nn.TransformerEncoderLayer(8, 2, 16)
    buf = io.BytesIO()
    ember.save(model, buf)
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    names = [a for op, a, _ in pickletools.genops(data) if isinstance(a, str)]
    assert not [n for n in names if n.startswith("ember")], names
    assert "torch.nn.functional relu" in names
    assert "torch.nn.modules.activation MultiheadAttention" in names
