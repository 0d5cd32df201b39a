"""ember.multiprocessing: shared-memory tensors across processes (fork and spawn), Hogwild-style
training of one shared model by two processes, and torch.multiprocessing's spawn errors."""
import multiprocessing as stdlib_mp

import pytest
import torch

import ember
import ember.multiprocessing as mp
from compat import _mp_workers as W


def test_namespace():
    for n in torch.multiprocessing.__all__:
        assert hasattr(mp, n), n
    for n in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
              "ProcessExitedException"):
        assert hasattr(mp, n), n
    assert mp.get_sharing_strategy() == torch.multiprocessing.get_sharing_strategy()
    assert mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    assert ember.multiprocessing is mp


def test_share_memory_in_place():
    for lib in (torch, ember):
        x = lib.arange(6.0).reshape(2, 3)
        assert not x.is_shared()
        v = x.share_memory_()
        assert v is x and x.is_shared() and x[1].is_shared()
        assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        x[0, 0] = 7
        assert x[0, 0].item() == 7
        assert x.share_memory_() is x
    m = ember.nn.Linear(3, 2)
    w = m.weight.detach().clone()
    m.share_memory()
    assert all(p.is_shared() for p in m.parameters())
    assert ember.equal(m.weight, w) and isinstance(m.weight, ember.nn.Parameter)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_shared_counter(method):
    ctx = stdlib_mp.get_context(method)
    model = ember.nn.Linear(2, 1)
    before = [p.detach().clone() for p in model.parameters()]
    model.share_memory()
    lock = ctx.Lock()
    procs = [ctx.Process(target=W.add_ones, args=(r, model, lock, 5)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    for b, p in zip(before, model.parameters()):
        assert ember.allclose(p.detach(), b + 10)


def test_hogwild_training_fork():
    ctx = stdlib_mp.get_context("fork")
    ember.manual_seed(0)
    x = ember.randn(64, 3)
    y = x @ ember.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = ember.nn.Linear(3, 1)
    model.share_memory()
    loss0 = ember.nn.functional.mse_loss(model(x), y).item()
    procs = [ctx.Process(target=W.hogwild_train, args=(r, model, x, y, 60)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    loss1 = ember.nn.functional.mse_loss(model(x), y).item()
    assert loss1 < loss0 * 0.05, (loss0, loss1)


def test_queue_shares_tensor():
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    t = ember.arange(4, dtype=ember.float32).share_memory_()
    p = ctx.Process(target=W.put_back, args=(0, q_in, q_out))
    p.start()
    q_in.put(t)
    shared, dtype, shape = q_out.get(timeout=60)
    p.join()
    assert shared and dtype == ember.float32 and shape == (4,)
    assert t.is_shared() and t.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_spawn_errors():
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: worker 1 failed"):
        mp.spawn(W.fail, nprocs=2)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        mp.start_processes(W.exit_code, nprocs=2, start_method="fork")
    ctx = mp.start_processes(W.add_ones, args=(ember.nn.Linear(1, 1), stdlib_mp.get_context("fork").Lock(), 1),
                             nprocs=1, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext)
    while not ctx.join():
        pass


def test_dataloader_batches_leave_no_segments():
    import os
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else None
    ds = ember.utils.data.TensorDataset(ember.arange(64.0).reshape(32, 2))
    loader = ember.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    total = sum(float(b[0].sum()) for b in loader)
    assert total == float(ember.arange(64.0).sum())
    if before is not None:
        assert set(os.listdir("/dev/shm")) - before == set()


def test_non_leaf_refused():
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        from multiprocessing.reduction import ForkingPickler
        ForkingPickler.dumps(x)
