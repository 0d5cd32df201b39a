"""Errors of ember.distributed, DDP and DistributedSampler, printed as JSON on rank 0 (type and
first line of the message) so that the test can compare them with torch's. Every case fails
before any communication, on every rank alike."""
import datetime

from _lib import LIB, dist, report, torch

nn = torch.nn
out = {}


def case(name, fn):
    try:
        fn()
        out[name] = None
    except Exception as e:  # the exception is the result
        out[name] = [type(e).__name__, str(e).split("\n")[0]]


case("get_rank before init", lambda: dist.get_rank())
case("all_reduce before init", lambda: dist.all_reduce(torch.ones(2)))
case("barrier before init", lambda: dist.barrier())
case("new_group before init", lambda: dist.new_group())
case("destroy before init", lambda: dist.destroy_process_group())
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank()
case("init twice", lambda: dist.init_process_group("gloo"))
case("all_reduce of a list", lambda: dist.all_reduce([torch.ones(2)]))
case("all_gather list of ints", lambda: dist.all_gather([1, 2], torch.ones(2)))
case("all_gather wrong length", lambda: dist.all_gather([torch.ones(2)], torch.ones(2)))
case("all_gather wrong size", lambda: dist.all_gather([torch.ones(3), torch.ones(3)], torch.ones(2)))
case("all_gather_into_tensor wrong size", lambda: dist.all_gather_into_tensor(torch.ones(3), torch.ones(2)))
case("all_gather_into_tensor 2-d wrong size", lambda: dist.all_gather_into_tensor(torch.ones(2, 3, 4), torch.ones(3, 4)))
case("broadcast invalid root", lambda: dist.broadcast(torch.ones(2), src=5))
case("all_reduce complex MAX", lambda: dist.all_reduce(torch.ones(2, dtype=torch.complex64), op=dist.ReduceOp.MAX))
case("all_reduce complex PRODUCT", lambda: dist.all_reduce(torch.ones(2, dtype=torch.complex64),
                                                          op=dist.ReduceOp.PRODUCT))
case("send to self", lambda: dist.send(torch.ones(2), dst=rank))
if LIB == "ember":  # torch's gloo goes into its transport there and fails (or hangs) on a pair to itself
    case("recv from self", lambda: dist.recv(torch.ones(2), src=rank))
case("scatter without list on src", lambda: dist.scatter(torch.ones(2), None, src=rank))
case("gather wrong size", lambda: dist.gather(torch.ones(2), [torch.ones(3), torch.ones(3)], dst=rank))
case("meta tensor", lambda: dist.all_reduce(torch.ones(2, device="meta")))
case("ReduceOp repr", lambda: (_ for _ in ()).throw(ValueError(repr(dist.ReduceOp.SUM) + str(dist.ReduceOp.MAX))))
case("backend name", lambda: (_ for _ in ()).throw(ValueError(str(dist.get_backend()))))

case("DDP without parameters to train", lambda: nn.parallel.DistributedDataParallel(nn.ReLU()))
case("DDP device_ids on CPU", lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]))
case("DDP two device_ids", lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0, 1]))


def two_hooks():
    m = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))
    h = __import__(f"{torch.__name__}.distributed.algorithms.ddp_comm_hooks.default_hooks", fromlist=["x"])
    m.register_comm_hook(None, h.allreduce_hook)
    m.register_comm_hook(None, h.allreduce_hook)


case("register_comm_hook twice", two_hooks)


class Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)

    def forward(self, x):
        return self.a(x)


def unused_without_find():
    m = nn.parallel.DistributedDataParallel(Unused())
    m(torch.ones(1, 2)).sum().backward()
    m(torch.ones(1, 2))


case("unused parameter without find_unused_parameters", unused_without_find)
case("sampler rank out of range",
     lambda: torch.utils.data.distributed.DistributedSampler(range(4), num_replicas=2, rank=2))
case("sampler negative rank",
     lambda: torch.utils.data.distributed.DistributedSampler(range(4), num_replicas=2, rank=-1))
dist.barrier()
if rank == 0:
    report("ERRORS", out)
dist.destroy_process_group()
case("destroy twice", lambda: dist.destroy_process_group())
