"""Every collective on 2 ranks against a NumPy reference, for several dtypes and shapes (contiguous,
0-d, non-contiguous), sync and async; point to point; object collectives; groups; the launcher's
environment. Inputs are small multiples of 1/4, so every reduction is exact in every dtype."""
import datetime
import os

import numpy as np
from _lib import LIB, dist, torch

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
assert world == 2
assert int(os.environ["RANK"]) == rank and int(os.environ["WORLD_SIZE"]) == world
assert int(os.environ["LOCAL_RANK"]) == rank and os.environ["MASTER_ADDR"] and os.environ["MASTER_PORT"]
assert dist.is_initialized() and dist.get_backend() == "gloo"

DTYPES = ["float32", "float64", "int32", "int64", "uint8", "float16", "bfloat16", "complex64"]
SHAPES = [(3, 4), (), "transposed"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
checked = []


def data(r, dt, shape, salt=0):
    """Rank r's input as a float64/complex NumPy array (exact in every dtype)."""
    rs = np.random.RandomState(1000 * r + 17 * salt + len(dt))
    shp = (4, 3) if shape == "transposed" else shape
    v = rs.randint(1, 5, size=shp).astype(np.float64)
    if dt.startswith("float") or dt == "bfloat16":
        v = v / 4 * rs.choice([-1, 1], size=shp)
    elif dt.startswith("int"):
        v = v * rs.choice([-1, 1], size=shp)
    elif dt.startswith("complex"):
        v = v / 2 + 1j * rs.randint(-2, 3, size=shp)
    return v.T if shape == "transposed" else v


def make_like(a, dt, shape):
    """A tensor of dtype dt holding `a`, with the layout `shape` names."""
    if shape == "transposed":
        return torch.from_numpy(np.array(a.T)).to(getattr(torch, dt)).t()  # a copy: never alias the input
    return torch.from_numpy(np.array(a)).to(getattr(torch, dt))


def back(t):
    if t.is_complex():
        return t.to(torch.complex128).numpy()
    return t.to(torch.float64).numpy()


def close(t, ref, what):
    got = back(t)
    assert got.shape == np.shape(ref), (what, got.shape, np.shape(ref))
    assert np.array_equal(got, ref), (what, got, ref)
    checked.append(what)


def reduce_ref(arrs, op, dt):
    if op in ("SUM", "AVG"):
        out = sum(arrs)
        if op == "AVG":
            out = out / len(arrs)
    elif op == "PRODUCT":
        out = np.prod(np.stack(arrs), axis=0)
    elif op == "MIN":
        out = np.min(np.stack(arrs), axis=0)
    else:
        out = np.max(np.stack(arrs), axis=0)
    return out


for dt in DTYPES:
    for shape in SHAPES:
        ins = [data(r, dt, shape) for r in range(world)]
        for op in OPS:
            if dt.startswith("complex") and op not in ("SUM", "AVG"):
                continue  # torch refuses them (tested in test_errors)
            if op == "AVG" and dt.startswith(("int", "uint")):
                continue
            for async_op in (False, True):
                t = make_like(ins[rank], dt, shape)
                w = dist.all_reduce(t, op=getattr(dist.ReduceOp, op), async_op=async_op)
                if async_op:
                    w.wait()
                    assert w.is_completed()
                close(t, reduce_ref(ins, op, dt), f"all_reduce {op} {dt} {shape} async={async_op}")
        # broadcast from rank 1
        for async_op in (False, True):
            t = make_like(ins[rank], dt, shape)
            w = dist.broadcast(t, src=1, async_op=async_op)
            if async_op:
                w.wait()
            close(t, ins[1], f"broadcast {dt} {shape} async={async_op}")
        # reduce to rank 0
        t = make_like(ins[rank], dt, shape)
        dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
        if rank == 0:
            close(t, sum(ins), f"reduce {dt} {shape}")
        # all_gather (list and into a tensor)
        outs = [make_like(np.zeros_like(ins[0]), dt, shape) for _ in range(world)]
        w = dist.all_gather(outs, make_like(ins[rank], dt, shape), async_op=True)
        w.wait()
        for r in range(world):
            close(outs[r], ins[r], f"all_gather {dt} {shape}")
        if shape != ():
            d0, rest = np.shape(ins[0])[0], tuple(np.shape(ins[0])[1:])
            big = torch.zeros((world * d0,) + rest, dtype=getattr(torch, dt))
            dist.all_gather_into_tensor(big, make_like(ins[rank], dt, shape))
            close(big, np.concatenate(ins), f"all_gather_into_tensor {dt} {shape}")
        # gather to rank 1, scatter from rank 0
        gl = [make_like(np.zeros_like(ins[0]), dt, shape) for _ in range(world)] if rank == 1 else None
        gloo_gap = LIB == "torch" and dt.startswith("complex")  # torch's gloo: "Invalid scalar type"
        if not gloo_gap:
            dist.gather(make_like(ins[rank], dt, shape), gl, dst=1)
        if rank == 1 and not gloo_gap:
            for r in range(world):
                close(gl[r], ins[r], f"gather {dt} {shape}")
        parts = [data(9, dt, shape, salt=r) for r in range(world)]
        t = make_like(np.zeros_like(ins[0]), dt, shape)
        dist.scatter(t, [make_like(p, dt, shape) for p in parts] if rank == 0 else None, src=0)
        close(t, parts[rank], f"scatter {dt} {shape}")
        # reduce_scatter (list and tensor), all_to_all
        if dt.startswith("complex") and LIB == "torch":
            continue
        rows = [[data(r, dt, shape, salt=10 + k) for k in range(world)] for r in range(world)]
        t = make_like(np.zeros_like(ins[0]), dt, shape)
        dist.reduce_scatter(t, [make_like(x, dt, shape) for x in rows[rank]])
        close(t, sum(rows[r][rank] for r in range(world)), f"reduce_scatter {dt} {shape}")
        if shape != ():
            src = torch.cat([make_like(x, dt, shape) for x in rows[rank]])
            out = torch.zeros(np.shape(ins[0]), dtype=getattr(torch, dt))
            dist.reduce_scatter_tensor(out, src)
            close(out, sum(rows[r][rank] for r in range(world)), f"reduce_scatter_tensor {dt} {shape}")
        outs = [make_like(np.zeros_like(ins[0]), dt, shape) for _ in range(world)]
        dist.all_to_all(outs, [make_like(x, dt, shape) for x in rows[rank]])
        for r in range(world):
            close(outs[r], rows[r][rank], f"all_to_all {dt} {shape}")

# point to point, sync and async
for dt in ("float32", "int64", "bfloat16"):
    x = data(5, dt, (2, 3))
    if rank == 0:
        dist.send(make_like(x, dt, (2, 3)), dst=1, tag=3)
        w = dist.isend(make_like(2 * x, dt, (2, 3)), dst=1)
        w.wait()
    else:
        t = make_like(np.zeros((2, 3)), dt, (2, 3))
        src = dist.recv(t, src=0, tag=3)
        assert src == 0, src
        close(t, x, f"send/recv {dt}")
        t2 = make_like(np.zeros((3, 2)), dt, "transposed")
        w = dist.irecv(t2, src=0)
        w.wait()
        close(t2, 2 * x.reshape(3, 2), f"isend/irecv {dt} (non-contiguous)")
dist.barrier()
w = dist.barrier(async_op=True)
w.wait()

# object collectives
objs = [None] * world
dist.all_gather_object(objs, {"rank": rank, "t": torch.arange(3) + rank, "s": "x" * rank})
assert [o["rank"] for o in objs] == [0, 1] and [o["s"] for o in objs] == ["", "x"]
assert all(torch.equal(o["t"], torch.arange(3) + r) for r, o in enumerate(objs))
lst = [rank, None, "a"] if rank == 1 else [None, None, None]
dist.broadcast_object_list(lst, src=1)
assert lst == [1, None, "a"], lst
checked.append("objects")

# groups
g = dist.new_group([1])
if rank == 1:
    assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1
    t = torch.ones(2)
    dist.all_reduce(t, group=g)
    close(t, np.ones(2), "all_reduce on a one-rank group")
else:
    assert dist.get_rank(g) == -1
g2 = dist.new_group([0, 1])
t = torch.ones(3) * (rank + 1)
dist.all_reduce(t, group=g2)
close(t, np.full(3, 3.0), "all_reduce on a new group")
print(f"rank {rank} {LIB} collectives OK ({len(checked)} checks)", flush=True)
dist.destroy_process_group()
