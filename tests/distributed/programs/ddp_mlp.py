"""DDP training of an MLP for 20 steps on 2 ranks with DistributedSampler, checked against
single-process training on the global batch (1e-5) and for equality across the ranks.
argv: configurations, each a '+'-joined set of options (or 'plain'): gradient_as_bucket_view,
comm_hook, fp16_hook, find_unused, no_sync, cnn (the digits CNN of examples/digits_cnn.py on the
digits, with Adam, instead of the MLP with SGD). CKPT=path: rank 0 saves the first model's state_dict."""
import datetime
import os
import sys

from _lib import LIB, dist, torch

nn = torch.nn
DDP = torch.nn.parallel.DistributedDataParallel

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 3)
        self.unused = nn.Linear(4, 4)  # never called: exercises find_unused_parameters

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x):
        return self.net(x)


def train(opts):
    torch.manual_seed(0)
    N, B, STEPS = 96, 8, 20  # B per rank; the global batch is B * world
    X = torch.randn(N, 8)
    Y = torch.randint(0, 3, (N,))
    MLP_ = MLP
    if "cnn" in opts:
        import numpy as np
        from sklearn.datasets import load_digits
        d = load_digits()
        X = torch.tensor(d.images[:320].astype(np.float32) / 16.0).unsqueeze(1)
        Y = torch.tensor(d.target[:320].astype(np.int64))
        N, B, MLP_ = 320, 16, CNN
    ds = torch.utils.data.TensorDataset(X, Y)

    torch.manual_seed(1 + rank)  # different initial weights per rank: DDP must broadcast rank 0's
    model = MLP_()
    if "find_unused" not in opts and hasattr(model, "unused"):
        del model.unused
    ddp = DDP(model, bucket_cap_mb=0.002, gradient_as_bucket_view="gradient_as_bucket_view" in opts,
              find_unused_parameters="find_unused" in opts)
    if "comm_hook" in opts:
        from importlib import import_module
        hooks = import_module(f"{torch.__name__}.distributed.algorithms.ddp_comm_hooks.default_hooks")
        ddp.register_comm_hook(None, hooks.allreduce_hook)
    if "fp16_hook" in opts:
        from importlib import import_module
        hooks = import_module(f"{torch.__name__}.distributed.algorithms.ddp_comm_hooks.default_hooks")
        ddp.register_comm_hook(None, hooks.fp16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)

    # the single-process reference, from rank 0's initial weights
    torch.manual_seed(1)
    ref = MLP_()
    if "find_unused" not in opts and hasattr(ref, "unused"):
        del ref.unused
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    if "cnn" in opts:
        opt = torch.optim.Adam(ddp.parameters(), lr=3e-3)
        ref_opt = torch.optim.Adam(ref.parameters(), lr=3e-3)

    sampler = torch.utils.data.distributed.DistributedSampler(ds, shuffle=True, seed=3)
    ref_sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True, seed=3)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    accum = 2 if "no_sync" in opts else 1
    for epoch in range(100):
        sampler.set_epoch(epoch)
        ref_sampler.set_epoch(epoch)
        mine = list(sampler)
        everyone = list(ref_sampler)
        # the global batch of a step is the union of the ranks' batches: rank r's k-th sample is
        # the (k * world + r)-th index of the padded permutation, as in torch
        for k in range(0, len(mine) - B + 1, B):
            idx = torch.tensor(mine[k:k + B])
            gidx = torch.tensor(everyone[k * world:(k + B) * world])
            if "no_sync" in opts:  # two micro-batches: the first without the all-reduce
                half = B // 2
                with ddp.no_sync():
                    (loss_fn(ddp(X[idx[:half]]), Y[idx[:half]]) / accum).backward()
                (loss_fn(ddp(X[idx[half:]]), Y[idx[half:]]) / accum).backward()
                gl = gidx.view(-1, world)  # rows of one index per rank
                for part in (gl[:half], gl[half:]):
                    (sum(loss_fn(ref(X[part[:, r]]), Y[part[:, r]]) for r in range(world)) / world / accum).backward()
            else:
                loss_fn(ddp(X[idx]), Y[idx]).backward()
                loss_fn(ref(X[gidx]), Y[gidx]).backward()
            opt.step()
            opt.zero_grad()
            ref_opt.step()
            ref_opt.zero_grad()
            step += 1
            if step == STEPS:
                break
        if step == STEPS:
            break

    sd = ddp.state_dict()
    assert all(k.startswith("module.") for k in sd), list(sd)
    worst = 0.0
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        worst = max(worst, float((p.detach() - q.detach()).abs().max()))
        gathered = [torch.zeros_like(p) for _ in range(world)]
        dist.all_gather(gathered, p.detach().contiguous())
        assert all(torch.equal(g, gathered[0]) for g in gathered), f"{name} differs across ranks"
    tol = 1e-2 if "fp16_hook" in opts else 1e-5  # fp16 compression rounds the gradients
    assert worst <= tol, f"DDP vs single process: max difference {worst}"
    if rank == 0 and os.environ.get("CKPT") and not os.path.exists(os.environ["CKPT"]):
        torch.save(ddp.module.state_dict(), os.environ["CKPT"])  # loads into a single-process model
    print(f"rank {rank} {LIB} ddp {sorted(opts)} OK max|ddp-ref|={worst:.2e}", flush=True)


for conf in sys.argv[1:]:
    train(set(conf.split("+")) - {"plain"})
dist.destroy_process_group()
