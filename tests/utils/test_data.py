"""ember.utils.data against torch.utils.data: datasets, random_split, samplers, default_collate
(structure, shapes and dtypes equal torch's) and DataLoader, including worker processes."""
import collections
import math
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from harness import same_error

import ember
import ember.utils.data as edata
from ember.utils.data import DataLoader, get_worker_info

Point = collections.namedtuple("Point", ["x", "y"])


def data_of(lib):
    return tdata if lib is torch else edata


def to_np(x):
    return x.detach().numpy() if isinstance(x, (torch.Tensor, ember.Tensor)) else x


def same_structure(e, t):
    """ember's collated value mirrors torch's: same container types, tensor shapes, dtypes and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(to_np(e), to_np(t))
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            same_structure(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), (type(e), type(t))
        for a, b in zip(e, t):
            same_structure(a, b)
    else:
        assert type(e) is type(t) and e == t


# ----------------------------------------------------------------------------- datasets

def test_tensor_dataset():
    x = np.arange(12.0).reshape(6, 2)
    y = np.arange(6)
    for lib in (torch, ember):
        ds = data_of(lib).TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
        assert len(ds) == 6
        a, b = ds[4]
        assert a.tolist() == [8.0, 9.0] and b.item() == 4
    same_error(lambda lib: data_of(lib).TensorDataset(lib.zeros(3), lib.zeros(4)))


def test_subset_concat_stack_chain():
    for lib in (torch, ember):
        D = data_of(lib)
        base = D.TensorDataset(lib.arange(10))
        sub = D.Subset(base, [7, 2, 5])
        assert len(sub) == 3 and sub[1][0].item() == 2
        cat = D.ConcatDataset([D.TensorDataset(lib.arange(3)), D.TensorDataset(lib.arange(10, 14))])
        assert len(cat) == 7 and cat[3][0].item() == 10 and cat[-1][0].item() == 13
        assert cat.cumulative_sizes == [3, 7]
        added = base + base
        assert isinstance(added, D.ConcatDataset) and len(added) == 20
        st = D.StackDataset(a=base, b=base)
        assert st[2]["a"][0].item() == 2 and len(st) == 10
        st2 = D.StackDataset(base, base)
        assert len(st2[3]) == 2

        class It(D.IterableDataset):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n))

            def __len__(self):
                return self.n
        ch = It(2) + It(3)
        assert isinstance(ch, D.ChainDataset) and list(ch) == [0, 1, 0, 1, 2] and len(ch) == 5
    same_error(lambda lib: data_of(lib).ConcatDataset([]))
    same_error(lambda lib: data_of(lib).ConcatDataset([data_of(lib).TensorDataset(lib.zeros(2))])[-3])
    same_error(lambda lib: data_of(lib).StackDataset())


def test_dataset_getitem_not_implemented():
    same_error(lambda lib: data_of(lib).Dataset()[0])


@pytest.mark.parametrize("n,lengths", [(10, [3, 7]), (10, [0.5, 0.5]), (11, [0.3, 0.3, 0.4]), (7, [0.1, 0.9]),
                                       (5, [1, 1, 3]), (10, [0.25, 0.25, 0.25, 0.25]), (3, [0.0, 1.0])])
def test_random_split_sizes(n, lengths):
    sizes = {}
    for lib in (torch, ember):
        D = data_of(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parts = D.random_split(D.TensorDataset(lib.arange(n)), lengths, generator=lib.Generator().manual_seed(0))
        sizes[lib] = [len(p) for p in parts]
        idx = sorted(i for p in parts for i in p.indices)
        assert idx == list(range(n))
    assert sizes[ember] == sizes[torch]


def test_random_split_generator_reproducible():
    ds = edata.TensorDataset(ember.arange(20))
    a = edata.random_split(ds, [5, 15], generator=ember.Generator().manual_seed(3))
    b = edata.random_split(ds, [5, 15], generator=ember.Generator().manual_seed(3))
    assert a[0].indices == b[0].indices and a[1].indices == b[1].indices
    ember.manual_seed(1)
    c = edata.random_split(ds, [0.5, 0.5])
    ember.manual_seed(1)
    d = edata.random_split(ds, [0.5, 0.5])
    assert c[0].indices == d[0].indices


def test_random_split_errors():
    same_error(lambda lib: data_of(lib).random_split(range(10), [3, 4]))
    same_error(lambda lib: data_of(lib).random_split(range(10), [1.5, -0.5]))


def test_random_split_zero_length_warns():
    with pytest.warns(UserWarning, match="Length of split at index 0 is 0"):
        edata.random_split(range(3), [0.0, 1.0])


# ----------------------------------------------------------------------------- collate

def _samples(lib, rng):
    def T(a):
        return lib.from_numpy(np.array(a))
    f32 = rng.standard_normal((3, 2)).astype(np.float32)
    return {
        "tensors_f32": [T(f32[i]) for i in range(3)],
        "tensors_0d": [T(np.int32(i)) for i in range(3)],
        "tensors_bool": [T(np.array([True, i % 2 == 0])) for i in range(3)],
        "tensors_f16": [T(f32[i].astype(np.float16)) for i in range(3)],
        "ints": [1, 2, 3],
        "floats": [1.5, 2.0, -3.25],
        "bools": [True, False, True],
        "strings": ["a", "bb", "c"],
        "bytes": [b"a", b"b"],
        "np_arrays_f32": [f32[i] for i in range(3)],
        "np_arrays_i16": [np.arange(4, dtype=np.int16) + i for i in range(3)],
        "np_arrays_u8": [np.arange(4, dtype=np.uint8) + i for i in range(3)],
        "np_scalars_f32": [np.float32(i) for i in range(3)],
        "np_scalars_i64": [np.int64(i) for i in range(3)],
        "np_scalars_bool": [np.bool_(i % 2) for i in range(3)],
        "tuples": [(T(f32[i]), i, float(i)) for i in range(3)],
        "lists": [[i, float(i), T(f32[i])] for i in range(3)],
        "dicts": [{"x": T(f32[i]), "y": i, "name": "n%d" % i} for i in range(3)],
        "nested": [{"a": (i, [np.float64(i), T(f32[i])]), "b": {"c": [True]}} for i in range(3)],
        "namedtuples": [Point(T(f32[i]), i) for i in range(3)],
        "ordered": [collections.OrderedDict([("z", i), ("a", float(i))]) for i in range(3)],
    }


@pytest.mark.parametrize("kind", list(_samples(torch, np.random.default_rng(0))))
def test_default_collate_matches_torch(kind):
    t = tdata.default_collate(_samples(torch, np.random.default_rng(0))[kind])
    e = edata.default_collate(_samples(ember, np.random.default_rng(0))[kind])
    if kind == "namedtuples":
        assert type(e) is Point
        same_structure(list(e), list(t))
    else:
        same_structure(e, t)


@pytest.mark.parametrize("kind", ["np_arrays_f32", "np_scalars_i64", "tuples", "dicts", "ints", "nested"])
def test_default_convert_matches_torch(kind):
    t = tdata.default_convert(_samples(torch, np.random.default_rng(0))[kind])
    e = edata.default_convert(_samples(ember, np.random.default_rng(0))[kind])
    same_structure(e, t)


def test_default_collate_errors():
    same_error(lambda lib: data_of(lib).default_collate([object(), object()]))
    same_error(lambda lib: data_of(lib).default_collate([[1, 2], [1]]))
    same_error(lambda lib: data_of(lib).default_collate([np.array(["a"]), np.array(["b"])]))
    same_error(lambda lib: data_of(lib).default_collate([lib.zeros(2), lib.zeros(3)]), match="stack")


# ----------------------------------------------------------------------------- samplers

def test_sequential_and_batch_sampler_match_torch():
    for n, bs, dl in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (0, 2, False)]:
        t = list(tdata.BatchSampler(tdata.SequentialSampler(range(n)), bs, dl))
        e = list(edata.BatchSampler(edata.SequentialSampler(range(n)), bs, dl))
        assert e == t
        assert len(edata.BatchSampler(range(n), bs, dl)) == len(tdata.BatchSampler(range(n), bs, dl))
    assert list(edata.SequentialSampler(range(4))) == [0, 1, 2, 3]


def test_random_sampler():
    g = ember.Generator().manual_seed(7)
    a = list(edata.RandomSampler(range(10), generator=g))
    assert sorted(a) == list(range(10))
    b = list(edata.RandomSampler(range(10), generator=ember.Generator().manual_seed(7)))
    assert a == b
    c = list(edata.RandomSampler(range(5), num_samples=12, generator=g))
    assert len(c) == 12 and sorted(c[:5]) == list(range(5)) and sorted(c[5:10]) == list(range(5))
    r = list(edata.RandomSampler(range(4), replacement=True, num_samples=70, generator=g))
    assert len(r) == 70 and set(r) <= set(range(4))
    assert len(edata.RandomSampler(range(4), replacement=True, num_samples=70)) == 70
    ember.manual_seed(0)
    x = list(edata.RandomSampler(range(8)))
    ember.manual_seed(0)
    assert list(edata.RandomSampler(range(8))) == x


def test_subset_and_weighted_samplers():
    s = list(edata.SubsetRandomSampler([10, 20, 30, 40], generator=ember.Generator().manual_seed(0)))
    assert sorted(s) == [10, 20, 30, 40]
    w = list(edata.WeightedRandomSampler([0.0, 1.0, 0.0, 1.0], 20, generator=ember.Generator().manual_seed(0)))
    assert len(w) == 20 and set(w) <= {1, 3}
    w2 = list(edata.WeightedRandomSampler([1, 1, 1], 3, replacement=False))
    assert sorted(w2) == [0, 1, 2]


@pytest.mark.parametrize("fn", [
    lambda D: D.RandomSampler(range(3), replacement=1),
    lambda D: D.RandomSampler(range(3), num_samples=0),
    lambda D: D.RandomSampler(range(3), num_samples=2.5),
    lambda D: D.BatchSampler(range(3), 0, False),
    lambda D: D.BatchSampler(range(3), True, False),
    lambda D: D.BatchSampler(range(3), 2, 1),
    lambda D: D.WeightedRandomSampler([1.0], 0),
    lambda D: D.WeightedRandomSampler([1.0], 1, replacement=1),
    lambda D: D.WeightedRandomSampler([[1.0]], 1),
])
def test_sampler_errors(fn):
    same_error(lambda lib: fn(data_of(lib)))


# ----------------------------------------------------------------------------- DataLoader (main process)

class SquareDataset(edata.Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"x": ember.full((2,), float(i)), "y": i, "sq": np.float32(i * i)}

    def __len__(self):
        return self.n


def batches_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x["x"].tolist() == y["x"].tolist() and x["y"].tolist() == y["y"].tolist()
        assert x["sq"].tolist() == y["sq"].tolist()


def test_dataloader_batches_shapes_dtypes_match_torch():
    x = np.arange(20.0, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    out = {}
    for lib in (torch, ember):
        D = data_of(lib)
        dl = D.DataLoader(D.TensorDataset(lib.from_numpy(x), lib.from_numpy(y)), batch_size=4)
        out[lib] = list(dl)
        assert len(dl) == 3
    assert len(out[ember]) == len(out[torch])
    for e, t in zip(out[ember], out[torch]):
        same_structure(e, t)


def test_dataloader_options():
    ds = SquareDataset(10)
    b = list(DataLoader(ds, batch_size=3, drop_last=True))
    assert len(b) == 3 and len(DataLoader(ds, batch_size=3, drop_last=True)) == 3
    assert b[0]["y"].dtype == ember.int64 and b[0]["sq"].dtype == ember.float32 and b[0]["x"].shape == (3, 2)
    assert len(DataLoader(ds, batch_size=3)) == 4
    nb = list(DataLoader(ds, batch_size=None))
    assert len(nb) == 10 and nb[3]["y"] == 3 and isinstance(nb[3]["sq"], ember.Tensor)
    cf = list(DataLoader(ds, batch_size=4, collate_fn=lambda batch: [s["y"] for s in batch]))
    assert cf == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    sb = list(DataLoader(ds, sampler=[9, 8, 7], batch_size=2))
    assert [s["y"].tolist() for s in sb] == [[9, 8], [7]]
    bs = list(DataLoader(ds, batch_sampler=[[1, 2], [5]]))
    assert [s["y"].tolist() for s in bs] == [[1, 2], [5]]
    if ember.cuda.is_available():  # tests/cuda's simulator is on in this worker: batches get pinned
        pm = DataLoader(ds, batch_size=5, pin_memory=True)
        assert pm.pin_memory is True and len(list(pm)) == 2
    else:
        with pytest.warns(UserWarning, match="pin_memory"):
            pm = DataLoader(ds, batch_size=5, pin_memory=True)
            assert pm.pin_memory is True and len(list(pm)) == 2


def test_dataloader_shuffle_generator():
    ds = SquareDataset(12)
    a = [b["y"].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True,
                                            generator=ember.Generator().manual_seed(1))]
    b = [b["y"].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True,
                                            generator=ember.Generator().manual_seed(1))]
    assert a == b and sorted(sum(a, [])) == list(range(12))
    ember.manual_seed(4)
    c = [b["y"].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    ember.manual_seed(4)
    d = [b["y"].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    assert c == d


@pytest.mark.parametrize("fn", [
    lambda D, ds: D.DataLoader(ds, num_workers=-1),
    lambda D, ds: D.DataLoader(ds, timeout=-1),
    lambda D, ds: D.DataLoader(ds, prefetch_factor=2),
    lambda D, ds: D.DataLoader(ds, num_workers=1, prefetch_factor=-1),
    lambda D, ds: D.DataLoader(ds, persistent_workers=True),
    lambda D, ds: D.DataLoader(ds, sampler=[0, 1], shuffle=True),
    lambda D, ds: D.DataLoader(ds, batch_sampler=[[0]], batch_size=2),
    lambda D, ds: D.DataLoader(ds, batch_sampler=[[0]], drop_last=True),
    lambda D, ds: D.DataLoader(ds, batch_size=None, drop_last=True),
    lambda D, ds: D.DataLoader(ds, multiprocessing_context="fork"),
    lambda D, ds: D.DataLoader(ds, num_workers=1, multiprocessing_context="nope"),
    lambda D, ds: D.DataLoader(ds, num_workers=1, multiprocessing_context=3),
    lambda D, ds: setattr(D.DataLoader(ds), "batch_size", 3),
])
def test_dataloader_errors(fn):
    same_error(lambda lib: fn(data_of(lib), data_of(lib).TensorDataset(lib.zeros(4))))


def test_iterable_dataset_errors():
    class It(edata.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    class TIt(tdata.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    def fn(lib):
        data_of(lib).DataLoader(It() if lib is ember else TIt(), shuffle=True)
    same_error(fn)


# ----------------------------------------------------------------------------- DataLoader (workers)

class WorkerTagged(edata.Dataset):
    def __getitem__(self, i):
        info = get_worker_info()
        return ember.tensor([i, -1 if info is None else info.id, ember.randint(0, 1000, ()).item()])

    def __len__(self):
        return 8


def test_workers_same_batches_as_main_process():
    ds = SquareDataset(11)
    ref = list(DataLoader(ds, batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(5)))
    got = list(DataLoader(ds, batch_size=3, shuffle=True, generator=ember.Generator().manual_seed(5),
                          num_workers=2))
    batches_equal(got, ref)
    got_pf = list(DataLoader(ds, batch_size=2, shuffle=True, generator=ember.Generator().manual_seed(5),
                             num_workers=2, prefetch_factor=1, drop_last=True))
    ref_pf = list(DataLoader(ds, batch_size=2, shuffle=True, generator=ember.Generator().manual_seed(5),
                             drop_last=True))
    batches_equal(got_pf, ref_pf)


def test_worker_info_seed_and_init_fn():
    assert get_worker_info() is None
    dl = DataLoader(WorkerTagged(), batch_size=2, num_workers=2, generator=ember.Generator().manual_seed(0),
                    worker_init_fn=lambda wid: ember.manual_seed(100 + wid))
    rows = ember.cat(list(dl)).tolist()
    assert [r[0] for r in rows] == list(range(8))
    # batches are handed out round-robin: batch k goes to worker k % 2
    assert [r[1] for r in rows] == [0, 0, 1, 1, 0, 0, 1, 1]
    rows2 = ember.cat(list(DataLoader(WorkerTagged(), batch_size=2, num_workers=2,
                                      worker_init_fn=lambda wid: ember.manual_seed(100 + wid)))).tolist()
    assert [r[2] for r in rows] == [r[2] for r in rows2]  # worker_init_fn seeding is honoured


class ShardedRange(edata.IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / info.num_workers))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        return iter(range(lo, hi))


def test_iterable_dataset_with_workers():
    ds = ShardedRange(3, 10)
    assert [int(x) for x in DataLoader(ds, batch_size=None)] == list(range(3, 10))
    got = sorted(int(x) for x in DataLoader(ds, num_workers=2))
    assert got == list(range(3, 10))
    batches = list(DataLoader(ds, batch_size=2, num_workers=2))
    assert sorted(v for b in batches for v in b.tolist()) == list(range(3, 10))
    assert all(b.dtype == ember.int64 for b in batches)


def test_persistent_workers_multiple_epochs():
    ds = SquareDataset(6)
    dl = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
    first = [b["y"].tolist() for b in dl]
    it = dl._iterator
    second = [b["y"].tolist() for b in dl]
    assert first == second == [[0, 1], [2, 3], [4, 5]]
    assert dl._iterator is it
    it._shutdown_workers()


def test_worker_exception_is_reraised():
    class Bad(edata.Dataset):
        def __getitem__(self, i):
            if i == 3:
                raise ValueError("bad index 3")
            return i

        def __len__(self):
            return 6

    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process"):
        list(DataLoader(Bad(), batch_size=2, num_workers=2))


def test_timeout_requires_workers():
    for lib in (torch, ember):
        D = data_of(lib)
        dl = D.DataLoader(D.TensorDataset(lib.zeros(2)), timeout=1)
        with pytest.raises(AssertionError):
            iter(dl)
    out = list(DataLoader(SquareDataset(4), batch_size=2, num_workers=1, timeout=30))
    assert [b["y"].tolist() for b in out] == [[0, 1], [2, 3]]


class CountingIterable(edata.IterableDataset):
    def __init__(self, n, claimed):
        self.n, self.claimed = n, claimed

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.claimed


def test_iterable_len_and_overrun_warning():
    dl = DataLoader(CountingIterable(5, 3), batch_size=2)
    assert len(dl) == 2
    assert len(DataLoader(CountingIterable(5, 5), batch_size=2, drop_last=True)) == 2
    assert [b.tolist() for b in dl] == [[0, 1], [2, 3], [4]]
    dl1 = DataLoader(CountingIterable(5, 3), batch_size=None)
    assert len(dl1) == 3
    with pytest.warns(UserWarning, match="Length of IterableDataset .* was reported to be 3"):
        assert [int(b) for b in dl1] == [0, 1, 2, 3, 4]


def test_out_of_order_workers_yield_everything():
    got = list(DataLoader(SquareDataset(9), batch_size=2, num_workers=2, in_order=False))
    assert sorted(v for b in got for v in b["y"].tolist()) == list(range(9))


def test_loader_attributes_match_torch():
    for lib in (torch, ember):
        D = data_of(lib)
        ds = D.TensorDataset(lib.arange(6))
        dl = D.DataLoader(ds, batch_size=4, shuffle=True)
        assert type(dl.sampler).__name__ == "RandomSampler" and type(dl.batch_sampler).__name__ == "BatchSampler"
        assert dl.batch_size == 4 and dl.drop_last is False and dl.num_workers == 0 and dl.prefetch_factor is None
        assert dl.collate_fn is D.default_collate
        dl2 = D.DataLoader(ds, batch_size=None)
        assert dl2.batch_sampler is None and dl2.collate_fn is D.default_convert
        assert D.DataLoader(ds, num_workers=1).prefetch_factor == 2
