"""The op database's value tests: every op_db entry, in each of its dtypes, on each of its sample
inputs (ordinary, 0-d, zero-size, broadcast, transposed, strided, expanded), through every call form
it lists, gives torch's result (values, dtype, shape) or torch's error; and its error inputs raise
torch's error, whose message the entry states."""
import re

import pytest
import torch
from harness import compare, same_error
from opdb import materialize, op_db

import ember


VALUES = [(op, dtype) for op in op_db for dtype in op.dtypes]


@pytest.mark.parametrize("op,dtype", VALUES, ids=[f"{op.name}-{dtype}" for op, dtype in VALUES])
def test_values(op, dtype):
    for i, sample in enumerate(op.sample_inputs(dtype)):
        ea, ta, ek, tk = materialize(sample, dtype, seed=i)
        for fn in op.calls():
            compare(fn, ea, ta, ek, tk, tols=op.tols, ember_warnings=op.ember_warnings)


ERRORS = [(op, i) for op in op_db for i in range(len(op.error_inputs))]


@pytest.mark.parametrize("op,i", ERRORS, ids=[f"{op.name}-{i}" for op, i in ERRORS])
def test_error_inputs(op, i):
    err = op.error_inputs[i]
    fn = err.fn or op.op
    ea, ta, ek, tk = materialize(err.sample, err.dtype)
    with pytest.raises(err.error) as te:
        fn(torch, *ta, **tk)
    assert re.search(err.match, str(te.value)), f"torch's message changed: {te.value}"
    same_error(lambda lib: fn(lib, *(ta if lib is torch else ea), **(tk if lib is torch else ek)))


def test_op_db_is_described_once():
    """Every entry names its call forms and samples; its names are unique."""
    assert len({op.name for op in op_db}) == len(op_db)
    for op in op_db:
        assert op.sample_inputs(op.dtypes[0]), op.name
        assert callable(op.ember) and callable(op.torch)
    assert ember.Tensor is not None
