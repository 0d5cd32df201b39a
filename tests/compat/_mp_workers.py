"""Worker functions for tests/compat/test_multiprocessing.py (importable by spawned children)."""
import ember


def add_ones(rank, model, lock, n):
    for _ in range(n):
        with lock, ember.no_grad():
            for p in model.parameters():
                p.add_(1.0)


def hogwild_train(rank, model, x, y, steps):
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def put_back(rank, q_in, q_out):
    t = q_in.get()
    t.mul_(2)  # in place: the sender's tensor sees it
    q_out.put((t.is_shared(), t.dtype, tuple(t.shape)))


def fail(rank):
    if rank == 1:
        raise ValueError("worker 1 failed")


def exit_code(rank):
    import os
    os._exit(3 if rank == 0 else 0)
