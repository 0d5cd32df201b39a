"""torch._chunk_cat against torch 2.13: values and errors."""
import numpy as np
import pytest
import torch

import ember
from harness import same_error


@pytest.mark.parametrize("case", [([(2, 3), (2, 5)], 1, 2), ([(2, 3), (5, 2)], 0, 2), ([(2, 3, 1), (2, 5, 1)], 1, 3),
                                  ([(2, 3), (2, 5)], -1, 4), ([(4, 6)], 1, 3)])
def test_chunk_cat(case):
    shapes, dim, n = case
    arrs = [np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)]
    e = ember._chunk_cat([ember.tensor(a) for a in arrs], dim, n)
    t = torch._chunk_cat([torch.tensor(a) for a in arrs], dim, n)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_chunk_cat_errors():
    same_error(lambda lib: lib._chunk_cat([], 0, 2))
    same_error(lambda lib: lib._chunk_cat([lib.ones(2, 3), lib.ones(2, 5).double()], 1, 2))
    same_error(lambda lib: lib._chunk_cat([lib.ones(2, 3)], 1, 0))
    same_error(lambda lib: lib._chunk_cat([lib.ones(2, 3)], 2, 2))
    same_error(lambda lib: lib._chunk_cat([lib.ones(2, 3), lib.zeros(2, 0)], 1, 2))
    same_error(lambda lib: lib._chunk_cat([lib.ones(2, 3), lib.zeros(3)], 1, 2))
    same_error(lambda lib: lib._chunk_cat([lib.ones(2, 3), lib.ones(3, 3)], 1, 2))
