"""Issue 15: the data pipeline's randomness is torch's: samplers, random_split, DataLoader's shuffle
order and base seed, worker seeds and get_worker_info().seed."""
import pytest
import torch
from rng_harness import assert_same, same_state

import ember


def D(L):
    return L.utils.data


def _ds(L):
    return D(L).TensorDataset(L.arange(50))


CASES = {
    "RandomSampler": lambda L: L.tensor(list(D(L).RandomSampler(range(100)))),
    "RandomSampler-replacement": lambda L: L.tensor(
        list(D(L).RandomSampler(range(100), replacement=True, num_samples=70))),
    "RandomSampler-num_samples": lambda L: L.tensor(list(D(L).RandomSampler(range(10), num_samples=25))),
    "RandomSampler-generator": lambda L: L.tensor(
        list(D(L).RandomSampler(range(40), generator=L.Generator().manual_seed(5)))),
    "SubsetRandomSampler": lambda L: L.tensor(list(D(L).SubsetRandomSampler(list(range(5, 40))))),
    "WeightedRandomSampler": lambda L: L.tensor(
        list(D(L).WeightedRandomSampler([0.1, 0.5, 2.0, 1.0, 0.3], 40))),
    "WeightedRandomSampler-norepl": lambda L: L.tensor(
        list(D(L).WeightedRandomSampler([0.1, 0.5, 2.0, 1.0, 0.3], 4, replacement=False))),
    "random_split": lambda L: [L.tensor(s.indices) for s in D(L).random_split(range(30), [10, 15, 5])],
    "random_split-fractions": lambda L: [L.tensor(s.indices)
                                         for s in D(L).random_split(range(31), [0.5, 0.5])],
    "random_split-generator": lambda L: [
        L.tensor(s.indices)
        for s in D(L).random_split(range(30), [10, 20], generator=L.Generator().manual_seed(42))],
    "DataLoader-shuffle": lambda L: [b[0] for b in D(L).DataLoader(_ds(L), batch_size=8, shuffle=True)],
    "DataLoader-two-epochs": lambda L: [L.cat([b[0] for b in D(L).DataLoader(_ds(L), batch_size=8,
                                                                             shuffle=True)])
                                        for _ in range(2)],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_data_randomness(name):
    torch.manual_seed(3)
    t = CASES[name](torch)
    ember.manual_seed(3)
    e = CASES[name](ember)
    assert_same(e, t, name)
    same_state()


def _worker_view(L):
    class DS(L.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            info = L.utils.data.get_worker_info()
            # the worker's seed, the seed torch/ember seeded the worker's generator with, a draw
            return L.tensor([info.seed % 2 ** 62, L.initial_seed() % 2 ** 62, i,
                             int(L.randint(0, 10 ** 9, ()))])

    return L.cat([b for b in L.utils.data.DataLoader(DS(), batch_size=2, shuffle=True,
                                                    num_workers=2)])


def test_workers_seeds_and_shuffle():
    torch.manual_seed(12)
    t = _worker_view(torch)
    ember.manual_seed(12)
    e = _worker_view(ember)
    assert_same(e, t)
    same_state()
