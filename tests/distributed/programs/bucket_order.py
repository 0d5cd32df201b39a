"""Bucketing and overlap: record, per iteration, the order of the all-reduces that DDP fires from
its autograd hooks (through a communication hook that logs the bucket and its parameters) against
the progress of the backward pass (hooks on each layer's output gradient). Prints the log as JSON
on rank 0; the test compares torch's log with ember's and checks the overlap."""
import datetime

from _lib import LIB, dist, report, torch

nn = torch.nn
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
hooks = __import__(f"{torch.__name__}.distributed.algorithms.ddp_comm_hooks.default_hooks",
                   fromlist=["allreduce_hook"])

log = []


def run(cap, find_unused):
    torch.manual_seed(0)
    layers = [nn.Linear(64, 64) for _ in range(4)]
    model = nn.Sequential(*[m for pair in zip(layers, [nn.Tanh() for _ in layers]) for m in pair])
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap, find_unused_parameters=find_unused)
    names = {id(p): n for n, p in model.named_parameters()}
    events = []


    def hook(state, bucket):
        events.append(["allreduce", bucket.index(), [names[id(p)] for p in bucket.parameters()]])
        return hooks.allreduce_hook(state, bucket)


    ddp.register_comm_hook(None, hook)


    def watch(i):
        def forward_hook(module, inp, out):
            out.register_hook(lambda g: events.append(["backward reaches layer", i]))
        return forward_hook


    for i, layer in enumerate(layers):
        layer.register_forward_hook(watch(i))
    for _it in range(3):
        events.clear()
        x = torch.randn(8, 64)
        ddp(x).sum().backward()
        log.append([cap, find_unused, list(events)])


for conf in [(0.02, False), (0.02, True), (None, False)]:
    run(*conf)
if rank == 0:
    report("LOG", {"lib": LIB, "log": log})
dist.destroy_process_group()
