"""Partitioners (torch/_functorch/partitioners.py): split a joint trace into forward and backward.

A joint trace (aot_autograd._Joint) holds forward nodes over the inputs and backward nodes over
forward values and tangents, all as slots. A partition returns (forward nodes, backward nodes,
saved slots): the forward graph returns the outputs then the saved values; the backward graph
takes the saved values then the tangents.

* default_partition: save what eager saves - every forward value a backward node reads.
* min_cut_rematerialization_partition: recompute instead of saving where that stores fewer
  bytes. torch solves a min cut with weights size x distance; this is its greedy form: a saved
  value made by a cheap op (pointwise, view, or a reduction-free reshape) whose inputs are forward
  inputs or saved anyway is recomputed in the backward when its inputs cost no more memory to
  keep than it does. Random ops and compute-heavy ops (matmul, convolution, reductions) are never
  recomputed.
"""
from ember._dynamo.capture import Ref

_NEVER_RECOMPUTE = ("mm", "addmm", "bmm", "matmul", "convolution", "_convolution", "conv2d", "baddbmm",
                    "native_layer_norm", "native_batch_norm", "_softmax", "_log_softmax", "sum", "mean",
                    "max", "min", "amax", "amin", "var", "std", "cumsum", "sort", "topk", "embedding",
                    "index", "index_select", "gather", "scatter", "bernoulli", "bernoulli_", "rand",
                    "randn", "randint", "normal", "uniform_", "native_dropout", "multinomial", "randperm")


def _slots_of(a, acc):
    if isinstance(a, Ref):
        acc.append(a.i)
    elif isinstance(a, (list, tuple)):
        for e in a:
            _slots_of(e, acc)
    return acc


def _outs(n):
    return _slots_of(n.out, [])


def _reads(nodes):
    acc = []
    for n in nodes:
        for a in n.args:
            _slots_of(a, acc)
    return acc


def default_partition(joint):
    fw_made = set(joint.in_slots)
    for n in joint.fw_nodes:
        fw_made.update(_outs(n))
    bw_made = set(joint.tangent_slots)
    saved = []
    seen = set()
    for n in joint.bw_nodes:
        for s in _slots_of(list(n.args), []):
            if s in fw_made and s not in bw_made and s not in seen:
                seen.add(s)
                saved.append(s)
        bw_made.update(_outs(n))
    # grads that are forward values themselves (an identity backward) are saved too
    for s in joint.grad_slots:
        if s is not None and s in fw_made and s not in seen:
            seen.add(s)
            saved.append(s)
    return list(joint.fw_nodes), list(joint.bw_nodes), saved


def _cheap(n):
    name = str(n.op.name)
    if name in _NEVER_RECOMPUTE or name.endswith("_"):
        return False
    tags = getattr(n.op, "tags", ())
    return "pointwise" in tags or "view" in tags or name in ("view", "reshape", "t", "transpose", "permute",
                                                                  "expand", "unsqueeze", "squeeze", "relu",
                                                                  "gelu", "tanh", "sigmoid", "neg", "mul", "add",
                                                                  "sub", "div", "exp", "where", "_to_copy")


def _numel(v):
    try:
        return v.numel() * v.element_size()
    except Exception:
        return 1 << 60


def min_cut_rematerialization_partition(joint):
    fw_nodes, bw_nodes, saved = default_partition(joint)
    producer = {}
    for n in fw_nodes:
        for s in _outs(n):
            producer[s] = n
    inputs = set(joint.in_slots)
    values = joint.values
    changed = True
    recompute = []
    saved = list(saved)
    while changed:
        changed = False
        for s in list(saved):
            n = producer.get(s)
            if n is None or not _cheap(n) or s in joint.grad_slots:
                continue
            deps = _slots_of(list(n.args), [])
            new = [d for d in deps if d not in saved]
            if not all(d in inputs or d in producer for d in deps):
                continue
            if sum(_numel(values[d]) for d in set(new)) > _numel(values[s]):
                continue
            saved.remove(s)
            for d in new:
                if d not in saved:
                    saved.append(d)
            recompute.append(n)
            changed = True
    # recomputed nodes run first in the backward, in forward order
    order = {id(n): k for k, n in enumerate(fw_nodes)}
    recompute.sort(key=lambda n: order[id(n)])
    return fw_nodes, recompute + list(bw_nodes), saved
