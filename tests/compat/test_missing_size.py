"""Calls with a required size-like varargs parameter left out, and factories given keywords they do
not take: torch's parser errors, word for word (issue 16's deviations list)."""
import pytest
import torch

import ember

CASES = ["m.empty()", "m.zeros()", "m.ones()", "m.rand()", "m.randn()", "x.new_zeros()", "x.new_ones()",
         "x.new_empty()", "x.reshape()", "x.permute()", "x.repeat()", "x.expand()", "x.flip()", "x.tile()",
         "m.tile(x)", "m.flip(x)", "m.permute(x)", "m.reshape(x)", "m.broadcast_to(x)", "x.view()", "x.resize_()",
         "m.randn(2, 3, 4, 5, memory_format=m.channels_last)", "m.rand(2, foo=1)"]
# still accepted: an explicit empty size, and defaulted varargs
OK = ["m.empty(())", "m.zeros([])", "m.rand(())", "x.new_zeros(())", "m.fft.fftshift(x)", "m.randn(size=(2,))"]


def _run(m, code):
    x = m.ones(2, 3)
    try:
        r = eval(code, {"m": m, "x": x})
    except TypeError as e:
        return "TypeError", str(e).split("\n")[0]
    return "ok", tuple(r.shape)


@pytest.mark.parametrize("code", CASES + OK)
def test_same_as_torch(code):
    assert _run(ember, code) == _run(torch, code)
