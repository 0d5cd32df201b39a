"""ember.device against torch.device: parsing, equality, hashing, str/repr, errors."""
import pickle

import pytest
import torch

import ember

VALID = [("cpu",), ("cuda",), ("cuda:0",), ("cuda:1",), ("cuda:12",), ("cuda", 0), ("cuda", 3),
         ("meta",), ("meta:0",), ("cpu", 0), ("cpu:0",), ("cpu", None), ("cuda", None),
         ("mps",), ("xpu:1",), ("privateuseone",), ("privateuseone:0",)]


def same(e, t):
    assert repr(e) == repr(t)
    assert str(e) == str(t)
    assert e.type == t.type
    assert e.index == t.index


@pytest.mark.parametrize("args", VALID)
def test_valid(args):
    same(ember.device(*args), torch.device(*args))


def test_keywords_and_copy():
    same(ember.device(type="cuda", index=2), torch.device(type="cuda", index=2))
    d = ember.device("cuda:1")
    assert ember.device(d) is d
    assert pickle.loads(pickle.dumps(d)) == d
    assert pickle.loads(pickle.dumps(ember.device("cpu"))) == ember.device("cpu")


def test_equality_and_hash():
    a, b = ember.device("cuda:1"), ember.device("cuda", 1)
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a != ember.device("cuda") and a != ember.device("cuda:0")
    assert ember.device("cpu", 0) != ember.device("cpu")
    assert (torch.device("cpu", 0) == torch.device("cpu")) is False
    # torch devices never equal strings
    assert (ember.device("cuda:1") == "cuda:1") == (torch.device("cuda:1") == "cuda:1")
    assert (ember.device("cpu") != "cpu") == (torch.device("cpu") != "cpu")
    assert len({ember.device("cpu"), ember.device("cpu"), ember.device("meta")}) == 2


def test_int_is_accelerator_index():
    # torch.device(0) is the current accelerator's device 0 (an error in torch's CPU build)
    assert ember.device(0) == ember.device("cuda", 0)
    assert ember.device(2) == ember.device("cuda:2")


def test_cached():
    assert ember.device("cuda:1") is ember.device("cuda:1")
    assert ember.device("cuda", 1) is ember.device("cuda:1")


BAD = [("cuda:x",), ("cuda:-1",), ("cuda", -1), (-1,), ("foo",), ("CUDA",), ("cuda:1:2",), ("",),
       (" cuda",), ("cuda:01",), ("cuda:00",), ("cuda:1 ",), ("cuda0",), ("cuda:",), ("cuda", "a"),
       ("cuda", 1.0), ("cpu", True), ("cuda:1", 1), ("cuda:1", None), (1.5,), (True,), (None,),
       ([1],), ()]


@pytest.mark.parametrize("args", BAD)
def test_errors(args):
    with pytest.raises(Exception) as te:
        torch.device(*args)
    with pytest.raises(Exception) as ee:
        ember.device(*args)
    assert type(ee.value) is type(te.value)
    tmsg = str(te.value).split("\n")[0].replace("torch.", "ember.")
    assert str(ee.value).split("\n")[0] == tmsg


def test_device_from_tensor_device_arg():
    t = ember.empty(2, device="meta")
    assert t.device == ember.device("meta")
    assert t.device.type == "meta"
    assert repr(ember.empty(2).device) == "device(type='cpu')"


def test_device_type_not_valid_for_tensors():
    # a device that parses but has no backend still parses; using it fails with a RuntimeError
    assert ember.device("cuda:3").index == 3
