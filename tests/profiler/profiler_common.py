"""The same small MLP train step (forward, loss, backward, SGD step) in ember and torch."""
import numpy as np


def mlp(lib):
    rng = np.random.default_rng(0)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    x = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    y = lib.tensor(rng.standard_normal((3, 2)).astype(np.float32))

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def tree(events, with_memory=False):
    """Top-level events as (name, [children...]) tuples, in order."""
    def node(e):
        return (e.name, [node(c) for c in e.cpu_children if with_memory or c.name != "[memory]"])
    return [node(e) for e in events if e.cpu_parent is None and (with_memory or e.name != "[memory]")]


def flat(t, depth=0, out=None):
    out = [] if out is None else out
    for name, kids in t:
        out.append(("  " * depth) + name)
        flat(kids, depth + 1, out)
    return out
