"""ember.save / ember.load against torch.save / torch.load: the zip checkpoint format both ways
(byte layout, pickled names, storage sharing, every dtype), the legacy format, the weights_only
unpickler (hostile pickles refused before anything runs), map_location, mmap and file kinds."""
import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import torch

import ember
import ember.serialization as es
from harness import DTYPES, check, pair_from, same_error


# ---- building the same object in both libraries ------------------------------------------------
def _data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        a = rng.random(n) < 0.5
    elif dtype in ("complex64", "complex128"):
        a = (rng.integers(-9, 9, n) + 1j * rng.integers(-9, 9, n)).astype(dtype)
    elif dtype == "bfloat16":
        a = rng.integers(-9, 9, n).astype(np.float32)
    else:
        a = rng.integers(0 if dtype == "uint8" else -9, 9, n).astype(dtype)
    return a.reshape(shape)


def state_pair():
    """(ember object, torch object): a state_dict-like OrderedDict of every dtype, 0-d and empty
    tensors, views sharing one storage, nested containers and plain Python values."""
    e, t = collections.OrderedDict(), collections.OrderedDict()
    for i, dt in enumerate(DTYPES):
        e[f"w_{dt}"], t[f"w_{dt}"] = pair_from(_data(dt, (2, 3), i), dt)
    e["scalar"], t["scalar"] = pair_from(_data("float32", (), 50), "float32")
    e["empty"], t["empty"] = ember.zeros(0, 3), torch.zeros(0, 3)
    eb, tb = pair_from(np.arange(24, dtype=np.float64).reshape(4, 6), "float64")
    e["base"], t["base"] = eb, tb
    e["transposed"], t["transposed"] = eb.t(), tb.t()
    e["slice"], t["slice"] = eb[1:3, ::2], tb[1:3, ::2]
    e["row"], t["row"] = eb[2], tb[2]
    e["expanded"], t["expanded"] = eb[1].as_strided((3, 6), (0, 1), 6), \
        tb[1].as_strided((3, 6), (0, 1), 6)
    e["same_object"], t["same_object"] = eb, tb
    ei, ti = pair_from(np.arange(5, dtype=np.int64), "int64")
    e["nested"] = {"list": [ei, 1, 2.5, "s", None, True], "tuple": (ei[1:], (3, 4)),
                   "dict": {"k": ei[::2], 1: "one"}, "bytes": b"\x00\xff", "complex": 1 + 2j,
                   "set": {1, 2}, "size": ember.Size([2, 3]), "dtype": ember.bfloat16,
                   "device": ember.device("cpu"), "big": 2 ** 70, "neg": -5}
    t["nested"] = {"list": [ti, 1, 2.5, "s", None, True], "tuple": (ti[1:], (3, 4)),
                   "dict": {"k": ti[::2], 1: "one"}, "bytes": b"\x00\xff", "complex": 1 + 2j,
                   "set": {1, 2}, "size": torch.Size([2, 3]), "dtype": torch.bfloat16,
                   "device": torch.device("cpu"), "big": 2 ** 70, "neg": -5}
    return e, t


def compare(e, t):
    """ember object `e` is torch object `t` (values, dtypes, shapes, strides, offsets, requires_grad,
    types of every container and value)."""
    check(e, t, check_stride=True, check_requires_grad=True, strict_types=True)


def compare_t(a, b):
    """Two torch objects are equal (torch.load of ember's file against the original)."""
    if isinstance(b, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
        assert a.storage_offset() == b.storage_offset() and a.requires_grad == b.requires_grad
        assert torch.equal(a.detach(), b.detach())
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in b:
            compare_t(a[k], b[k])
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            compare_t(x, y)
    else:
        assert type(a) is type(b) and a == b


def check_sharing(d, ptr):
    """The views of the loaded state share one storage, as the saved ones did."""
    base = d["base"]
    for k in ("transposed", "slice", "row", "expanded"):
        assert ptr(d[k]) == ptr(base), k
    assert ptr(d["w_float32"]) != ptr(base)
    assert d["same_object"] is base
    nested = d["nested"]
    assert ptr(nested["tuple"][0]) == ptr(nested["list"][0]) == ptr(nested["dict"]["k"])


def eptr(x):
    return x.untyped_storage().data_ptr()


def tptr(x):
    return x.untyped_storage().data_ptr()


def saved(lib, obj, **kw):
    b = io.BytesIO()
    lib.save(obj, b, **kw)
    return b.getvalue()


# ---- round trips -------------------------------------------------------------------------------
def test_ember_to_ember():
    e, t = state_pair()
    r = ember.load(io.BytesIO(saved(ember, e)))
    compare(r, t)
    check_sharing(r, eptr)
    r["base"][0, 0] = 100.0  # one memory: the views see the write
    assert r["transposed"][0, 0].item() == 100.0


def test_torch_to_ember():
    e, t = state_pair()
    r = ember.load(io.BytesIO(saved(torch, t)))
    compare(r, t)
    check_sharing(r, eptr)


def test_ember_to_torch():
    e, t = state_pair()
    r = torch.load(io.BytesIO(saved(ember, e)))  # weights_only=True in torch too
    compare_t(r, t)
    check_sharing(r, tptr)


def test_pickle_and_records_equal_torch(tmp_path):
    """The same object saved under the same file name gives the same archive, byte for byte
    (but the random serialization id): names, records, alignment, data.pkl."""
    e, t = state_pair()
    (tmp_path / "e").mkdir()
    (tmp_path / "t").mkdir()
    ember.save(e, tmp_path / "e" / "model.pt")
    torch.save(t, tmp_path / "t" / "model.pt")
    eb = (tmp_path / "e" / "model.pt").read_bytes()
    tb = (tmp_path / "t" / "model.pt").read_bytes()
    ez, tz = zipfile.ZipFile(io.BytesIO(eb)), zipfile.ZipFile(io.BytesIO(tb))
    assert ez.namelist() == tz.namelist()
    assert ez.namelist()[0] == "model/data.pkl"
    for ei, ti in zip(ez.infolist(), tz.infolist()):
        assert (ei.header_offset, ei.file_size, ei.flag_bits) == \
            (ti.header_offset, ti.file_size, ti.flag_bits)
        if not ei.filename.endswith("serialization_id"):
            assert ez.read(ei) == tz.read(ti), ei.filename
    assert len(eb) == len(tb)
    sid = ez.getinfo("model/.data/serialization_id")
    assert len(ez.read(sid)) == 40 and ez.read(sid).isdigit()
    assert ez.read("model/byteorder") == b"little" and ez.read("model/version") == b"3\n"
    # every record's data starts on a 64-byte boundary
    for info in ez.infolist():
        n, x = struct.unpack("<HH", eb[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + n + x) % 64 == 0
    # a buffer gets the archive name "archive"
    assert zipfile.ZipFile(io.BytesIO(saved(ember, 1))).namelist()[0] == "archive/data.pkl"


def test_torch_computed_offsets(tmp_path, monkeypatch):
    """torch's mmap loader can compute each record's offset from the previous one (it assumes
    miniz's layout); its debug mode checks the computed offsets against the real ones."""
    e, t = state_pair()
    ember.save(e, tmp_path / "x.pt")
    monkeypatch.setenv("TORCH_SERIALIZATION_DEBUG", "1")
    with torch.utils.serialization.config.patch({"load.calculate_storage_offsets": True}):
        compare_t(torch.load(tmp_path / "x.pt", mmap=True), t)


def test_zip64_records(monkeypatch):
    """Sizes and offsets past 4 GiB go in zip64 extra fields (the threshold lowered to test)."""
    monkeypatch.setattr(es, "_ZIP64_AT", 100)
    x = {"a": ember.arange(100.0), "b": ember.arange(5)}
    data = saved(ember, x)
    compare_t(torch.load(io.BytesIO(data)), {"a": torch.arange(100.0), "b": torch.arange(5)})
    check(ember.load(io.BytesIO(data))["a"], torch.arange(100.0))


def test_legacy_format():
    e, t = state_pair()
    del e["nested"], t["nested"]  # the legacy format's storage keys are per storage as well
    compare(ember.load(io.BytesIO(saved(torch, t, _use_new_zipfile_serialization=False))), t)
    r = torch.load(io.BytesIO(saved(ember, e, _use_new_zipfile_serialization=False)))
    compare_t(r, t)
    assert tptr(r["transposed"]) == tptr(r["base"])
    r = ember.load(io.BytesIO(saved(ember, e, _use_new_zipfile_serialization=False)))
    compare(r, t)
    assert eptr(r["slice"]) == eptr(r["base"])


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_pickle_protocols(protocol):
    e, t = state_pair()
    with pytest.warns(UserWarning, match="Detected pickle protocol"):
        compare(ember.load(io.BytesIO(saved(ember, e, pickle_protocol=protocol))), t)
    compare(ember.load(io.BytesIO(saved(torch, t, pickle_protocol=protocol)),
                       weights_only=False), t)
    compare_t(torch.load(io.BytesIO(saved(ember, e, pickle_protocol=protocol)),
                         weights_only=False), t)


def test_requires_grad_and_attributes():
    e = ember.ones(2, 3, requires_grad=True)
    t = torch.ones(2, 3, requires_grad=True)
    e.note, t.note = "hello", "hello"
    r = torch.load(io.BytesIO(saved(ember, {"p": e, "q": ember.zeros(1, requires_grad=True)})))
    assert r["p"].requires_grad and r["p"].note == "hello" and type(r["p"]) is torch.Tensor
    assert r["q"].requires_grad and r["q"].is_leaf
    r = ember.load(io.BytesIO(saved(torch, {"p": t})))
    assert r["p"].requires_grad and r["p"].note == "hello" and type(r["p"]) is ember.Tensor
    compare(r["p"], t)


def test_parameter_from_torch():
    t = collections.OrderedDict(weight=torch.nn.Parameter(torch.arange(6.0).reshape(2, 3)),
                                frozen=torch.nn.Parameter(torch.ones(2), requires_grad=False))
    r = ember.load(io.BytesIO(saved(torch, t)))
    P = es._parameter_class()
    for k in t:
        assert r[k].requires_grad == t[k].requires_grad
        compare(r[k].detach(), t[k].detach())
        if P is not None:
            assert isinstance(r[k], P)
    if P is not None:  # and back: torch reads ember's Parameters as Parameters
        back = torch.load(io.BytesIO(saved(ember, r)))
        assert isinstance(back["weight"], torch.nn.Parameter) and back["weight"].requires_grad


def test_parameter_class(monkeypatch):
    """With an ember.nn.Parameter, checkpoints' Parameters load as it, and it saves as torch's."""
    import sys
    import types

    class Parameter(ember.Tensor):
        def __new__(cls, data=None, requires_grad=True):
            if data is None:
                data = ember.empty(0)
            return ember.Tensor._make_subclass(cls, data, requires_grad)

    monkeypatch.setitem(sys.modules, "ember.nn", types.SimpleNamespace(Parameter=Parameter))
    t = {"w": torch.nn.Parameter(torch.arange(4.0)), "b": torch.nn.Parameter(torch.ones(2), False)}
    r = ember.load(io.BytesIO(saved(torch, t)))
    assert type(r["w"]) is Parameter and r["w"].requires_grad
    assert type(r["b"]) is Parameter and not r["b"].requires_grad
    compare(r["w"].detach(), t["w"].detach())
    back = torch.load(io.BytesIO(saved(ember, r)))
    assert type(back["w"]) is torch.nn.Parameter and back["w"].requires_grad
    assert type(back["b"]) is torch.nn.Parameter and not back["b"].requires_grad
    assert torch.equal(back["w"].detach(), t["w"].detach())
    assert saved(ember, r).split(b"data.pkl")[1][:400] == saved(torch, t).split(b"data.pkl")[1][:400]


def test_module_state_dict():
    """A torch module's state_dict (an OrderedDict with a _metadata attribute) goes through ember
    and back into a torch module."""
    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))

    sd = model().state_dict()
    e = ember.load(io.BytesIO(saved(torch, sd)))
    assert e._metadata == sd._metadata and list(e) == list(sd)
    back = torch.load(io.BytesIO(saved(ember, e)))
    assert back._metadata == sd._metadata
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    m.load_state_dict(back)
    for k, v in m.state_dict().items():
        assert torch.equal(v, sd[k])


def test_meta_tensors():
    e = ember.empty(2, 3, device="meta").t()
    t = torch.empty(2, 3, device="meta").t()
    r = torch.load(io.BytesIO(saved(ember, {"m": e})))["m"]
    assert r.is_meta and r.shape == t.shape and r.stride() == t.stride()
    r = ember.load(io.BytesIO(saved(torch, {"m": t})))["m"]
    assert r.device.type == "meta" and r.shape == t.shape and r.stride() == t.stride()


def test_conj_view_from_torch():
    t = torch.tensor([1 + 2j, 3 - 1j]).conj()
    check(ember.load(io.BytesIO(saved(torch, t))), t.resolve_conj())


def test_unsupported_dtype_from_torch():
    data = saved(torch, {"u": torch.zeros(3, dtype=torch.uint16)})
    with pytest.raises(RuntimeError, match="does not support dtype torch.uint16"):
        ember.load(io.BytesIO(data))


def test_save_dtype_conflict():
    x = ember.ones(4)
    tx = torch.ones(4)
    with pytest.raises(RuntimeError) as te:
        torch.save([tx, tx.view(torch.int32)], io.BytesIO())
    with pytest.raises(RuntimeError) as ee:
        ember.save([x, x.view(ember.int32)], io.BytesIO())
    assert str(ee.value) == str(te.value)


def test_big_endian_file():
    """A checkpoint whose byteorder record says big: the bytes are swapped on load."""
    def swap(n, b):
        if n.endswith("byteorder"):
            return b"big"
        if n.endswith("data/0"):
            return np.frombuffer(b, "<i4").astype(">i4").tobytes()
        if n.endswith("data/1"):
            return np.frombuffer(b, "<f4").astype(">f4").tobytes()
        return b

    data = _rewrite(saved(torch, {"a": torch.arange(4, dtype=torch.int32),
                                  "b": torch.tensor([1.5, -2.0])}), swap)
    for lib in (ember, torch):
        r = lib.load(io.BytesIO(data))
        check(r["a"] if lib is ember else ember.from_numpy(r["a"].numpy()),
              torch.arange(4, dtype=torch.int32))
        check(r["b"] if lib is ember else ember.from_numpy(r["b"].numpy()),
              torch.tensor([1.5, -2.0]))


# ---- files -------------------------------------------------------------------------------------
def test_paths_and_files(tmp_path):
    e, t = state_pair()
    p = tmp_path / "ck.pt"
    ember.save(e, str(p))
    compare(ember.load(str(p)), t)
    compare(ember.load(p), t)
    assert zipfile.ZipFile(p).namelist()[0] == "ck/data.pkl"
    with open(p, "rb") as f:
        compare(ember.load(f), t)
    with open(tmp_path / "fo.pt", "wb") as f:
        ember.save(e, f)
    compare_t(torch.load(tmp_path / "fo.pt"), t)
    same_error(lambda lib: lib.save(lib.ones(1), 3))
    same_error(lambda lib: lib.save(lib.ones(1), tmp_path / "missing" / "x.pt"))
    same_error(lambda lib: lib.load(tmp_path / "missing.pt"))
    same_error(lambda lib: lib.load(io.BytesIO(b"")))
    with open(tmp_path / "nb.pt", "wb") as f:
        ember.save(e, f, _disable_byteorder_record=True)
    names = zipfile.ZipFile(tmp_path / "nb.pt").namelist()
    assert names[0] == "archive/data.pkl" and not any(n.endswith("byteorder") for n in names)
    compare(ember.load(tmp_path / "nb.pt"), t)
    same_error(lambda lib: lib.load(io.BytesIO(saved(lib, 1)), mmap=True))


def test_mmap(tmp_path):
    e, t = state_pair()
    p = tmp_path / "m.pt"
    ember.save(e, p)
    before = p.read_bytes()
    r = ember.load(p, mmap=True)
    compare(r, t)
    check_sharing(r, eptr)
    r["base"].fill_(7.0)  # copy-on-write: the tensors are writable, the file is untouched
    assert r["slice"].eq(7.0).all().item()
    del r
    assert p.read_bytes() == before


# ---- map_location ------------------------------------------------------------------------------
@pytest.mark.parametrize("ml", ["cpu", b"cpu", ember.device("cpu"), {"cpu": "cpu"},
                                lambda s, loc: s, lambda s, loc: None])
def test_map_location_cpu(ml):
    e, t = state_pair()
    r = ember.load(io.BytesIO(saved(torch, t)), map_location=ml)
    compare(r, t)
    check_sharing(r, eptr)


@pytest.mark.parametrize("ml", ["meta", ember.device("meta"), {"cpu": "meta"}])
def test_map_location_meta(ml):
    e, t = state_pair()
    r = ember.load(io.BytesIO(saved(torch, t)), map_location=ml)
    tm = torch.load(io.BytesIO(saved(torch, t)), map_location="meta")
    for k in ("w_float32", "w_bfloat16", "scalar", "empty", "transposed", "slice", "expanded"):
        assert r[k].device.type == "meta"
        assert r[k].dtype.name == str(tm[k].dtype)[6:] and tuple(r[k].shape) == tuple(tm[k].shape)
        assert r[k].stride() == tm[k].stride()
    assert r["slice"].storage_offset() == tm["slice"].storage_offset()
    assert r["slice"].untyped_storage() is r["base"].untyped_storage()


def test_map_location_callable_args():
    seen = []

    def ml(storage, location):
        seen.append((storage.nbytes(), location))
        return storage

    ember.load(io.BytesIO(saved(torch, {"a": torch.ones(3), "b": torch.ones(2, dtype=torch.int8)})),
               map_location=ml)
    assert seen == [(12, "cpu"), (2, "cpu")]


@pytest.mark.parametrize("ml", ["cuda", "cuda:1", {"cpu": "cuda:0"}, "foo", "xla:0", "cpu:0"])
def test_map_location_unavailable(ml):
    if ember.cuda.is_available() and "cuda" in str(ml):
        pytest.skip("CUDA (tests/cuda's simulator) is available in this worker")
    same_error(lambda lib: lib.load(io.BytesIO(saved(torch, {"a": torch.ones(2)})),
                                    map_location=ml))


def _rewrite(data, fn):
    """A copy of the zip checkpoint `data` with each record's bytes passed through fn(name, b)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n in src.namelist():
            z.writestr(n, fn(n, src.read(n)))
    return out.getvalue()


def test_cuda_checkpoint_to_cpu():
    """A checkpoint saved on a GPU (location tag cuda:0) loads with map_location='cpu'."""
    data = _rewrite(saved(torch, {"a": torch.arange(3.0)}), lambda n, b: b.replace(
        b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0") if n.endswith("data.pkl") else b)
    check(ember.load(io.BytesIO(data), map_location="cpu")["a"], torch.arange(3.0))
    check(ember.load(io.BytesIO(data), map_location={"cuda:0": "cpu"})["a"], torch.arange(3.0))
    if ember.cuda.is_available():  # tests/cuda's simulator is on in this worker: it loads on cuda:0
        r = ember.load(io.BytesIO(data))["a"]
        assert r.is_cuda and r.tolist() == [0.0, 1.0, 2.0]
    else:
        same_error(lambda lib: lib.load(io.BytesIO(data)))


# ---- weights_only ------------------------------------------------------------------------------
class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class Exec:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


class Holder:
    def __init__(self, t, n):
        self.t, self.n = t, n


def _as_checkpoint(pickle_bytes):
    """A zip checkpoint whose data.pkl is `pickle_bytes`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return out.getvalue()


@pytest.mark.parametrize("cls", [Evil, Exec])
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_hostile_pickle_refused(tmp_path, cls, container):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"w": 1, "x": cls(str(marker))}, protocol=2)
    data = _as_checkpoint(payload) if container == "zip" else payload
    for _ in range(2):
        with pytest.raises(pickle.UnpicklingError) as ee:
            ember.load(io.BytesIO(data))
        with pytest.raises(pickle.UnpicklingError):
            ember.load(io.BytesIO(data), weights_only=True)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError) as te:
        torch.load(io.BytesIO(data))
    assert str(ee.value) == str(te.value)  # torch's message, word for word
    assert not marker.exists()
    assert "Weights only load failed" in str(ee.value)


def test_unsupported_globals_messages():
    for obj in (collections.defaultdict(int), Holder(1, 2), slice(1, 2), range(3)):
        data = saved(torch, obj)
        with pytest.raises(pickle.UnpicklingError) as te:
            torch.load(io.BytesIO(data))
        with pytest.raises(pickle.UnpicklingError) as ee:
            ember.load(io.BytesIO(data))
        assert str(ee.value) == str(te.value)


def test_weights_only_false_and_safe_globals():
    h = Holder(ember.arange(4), 3)
    data = saved(ember, {"h": h})
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL "
                                                     "test_serialization.Holder"):
        ember.load(io.BytesIO(data))
    r = ember.load(io.BytesIO(data), weights_only=False)["h"]
    assert isinstance(r, Holder) and r.n == 3 and r.t.tolist() == [0, 1, 2, 3]
    r = ember.load(io.BytesIO(data), pickle_module=pickle)["h"]  # an explicit pickle_module
    assert r.n == 3
    with es.safe_globals([Holder]):
        assert ember.load(io.BytesIO(data))["h"].n == 3
        assert Holder in es.get_safe_globals()
    assert Holder not in es.get_safe_globals()
    assert es.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == ["test_serialization.Holder"]
    assert es.get_unsafe_globals_in_checkpoint(io.BytesIO(saved(ember, state_pair()[0]))) == []
    same_error(lambda lib: lib.load(io.BytesIO(data), pickle_module=pickle, weights_only=True))


def test_weights_only_false_torch_names():
    """A full pickle of torch objects maps torch's names to ember's."""
    t = {"t": torch.arange(3), "l": torch.strided, "s": torch.Size([2])}
    r = ember.load(io.BytesIO(saved(torch, t)), weights_only=False)
    assert r["l"] is ember.strided and type(r["s"]) is ember.Size
    check(r["t"], t["t"])
    back = torch.load(io.BytesIO(saved(ember, r)))
    assert back["l"] is torch.strided and type(back["s"]) is torch.Size


# ---- safetensors (optional) --------------------------------------------------------------------
def test_safetensors_missing(monkeypatch, tmp_path):
    from ember.utils import safetensors as est
    monkeypatch.setitem(__import__("sys").modules, "safetensors", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        est.save_file({"a": ember.ones(2)}, tmp_path / "a.safetensors")
    with pytest.raises(RuntimeError, match="safetensors is not installed"):
        ember.load(str(tmp_path / "a.safetensors"))


def test_safetensors(tmp_path):
    pytest.importorskip("safetensors")
    from ember.utils import safetensors as est
    e, t = state_pair()
    names = [f"w_{d}" for d in DTYPES if d != "complex128"] + ["scalar", "empty"]
    tensors = {k: e[k] for k in names}
    p = tmp_path / "m.safetensors"
    est.save_file(tensors, p, metadata={"format": "pt"})
    for r in (est.load_file(p), est.load(est.save(tensors)), ember.load(str(p))):
        assert sorted(r) == sorted(names)
        for k in names:
            check(r[k], t[k])
    import safetensors.torch as stt
    r = stt.load_file(p)  # torch reads ember's file, ember reads torch's
    for k in names:
        assert torch.equal(r[k], t[k])
    stt.save_file({k: t[k] for k in names}, tmp_path / "t.safetensors")
    r = est.load_file(tmp_path / "t.safetensors")
    for k in names:
        check(r[k], t[k])
    with pytest.raises(RuntimeError, match="share memory"):
        est.save_file({"a": e["base"], "b": e["row"]}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="non contiguous"):
        est.save_file({"a": e["transposed"]}, tmp_path / "x.safetensors")
