"""Partitioners (torch/_functorch/partitioners.py): split a joint trace into forward and backward.

A joint trace (aot_autograd._Joint) holds forward nodes over the inputs and backward nodes over
forward values and tangents, all as slots. A partition returns (forward nodes, backward nodes,
saved slots): the forward graph returns the outputs then the saved values; the backward graph
takes the saved values then the tangents.

* default_partition: save what eager saves - every forward value a backward node reads.
* min_cut_rematerialization_partition: torch's min-cut rematerialization. Every value v of the
  joint graph becomes two vertices v_in -> v_out whose edge costs what saving v costs: its size in
  bytes x 1.1 ** distance to the backward (clamped to 1..100), doubled when every user of v is a
  fusible op (torch's "not materialized"). Data dependencies are infinite edges u_out -> v_in;
  the source feeds the inputs and every value that must not be recomputed (inputs, random ops,
  compute-heavy ops such as mm / bmm / addmm / convolution / attention, ops outside torch's
  recomputable list, reductions whose output is 4x smaller than their inputs, values a non-
  fusible backward op reads, in-place ops); whatever the backward reads goes to the sink. A
  minimum s-t cut (Edmonds-Karp max flow below, pure Python) picks the values to save: those
  whose v_in is on the source side and v_out on the sink side. Everything else the backward needs
  is recomputed there from the saved values. Views are never banned: they are free to recompute.
  Backward ops that read no tangent (torch's required_bw nodes outside the tangents' closure,
  e.g. `sin(x)` in the derivative of cos) may run in the forward when saving their output is
  the cheaper cut, as in torch.

  Not carried over from torch (heuristics for inductor's fusion, which ember's graphs do not do):
  ban_recompute_used_far_apart, ban_recompute_long_fusible_chains, activation_memory_budget's
  knapsack, and treat_parameters_as_free_to_save (ember's segments do not tell parameters from
  other inputs). Guards torch does not need (its joint graphs are functional): a value written in
  place (dropout's bernoulli_ into empty_like) and every node that read it before the write are
  never recomputed; a cut that would store more bytes than the default partition, or that does
  not cover the backward, gets the default partition (`last_decision` says which and why; the
  aot callable's .partition_note too).
"""
from collections import deque

from ember._dynamo.capture import PyOp, Ref, ref_slots as _slots_of

INF = float("inf")

# torch.get_default_op_list(): ops that may be recomputed (besides pointwise-tagged ops and views)
_RECOMPUTABLE = frozenset((
    "add", "sub", "div", "atan2", "mul", "max", "min", "pow", "remainder", "fmod", "__and__", "__or__",
    "__xor__", "__lshift__", "__rshift__", "eq", "ne", "ge", "gt", "le", "lt", "abs", "bitwise_not", "ceil",
    "floor", "frac", "neg", "relu", "round", "silu", "trunc", "log", "log10", "log1p", "log2", "lgamma", "exp",
    "expm1", "erf", "erfc", "cos", "acos", "cosh", "sin", "asin", "sinh", "tan", "atan", "tanh", "atanh", "sqrt",
    "rsqrt", "reciprocal", "sigmoid", "softplus", "threshold", "threshold_backward", "clamp", "where", "lerp",
    "addcmul", "gelu", "gelu_backward", "sum", "mean", "_grad_sum_to_size", "sum_to_size", "amax", "to",
    "type_as", "squeeze", "unsqueeze", "rsub", "_to_copy", "clone", "full_like", "var", "std", "select",
    "_unsafe_view", "view", "expand", "slice", "reshape", "broadcast_tensors", "scalar_tensor", "ones",
    "new_zeros", "lift_fresh_copy", "arange", "triu", "var_mean", "isinf", "any", "full", "as_strided", "zeros",
    "empty", "empty_like", "argmax", "maximum", "index", "gather", "zeros_like"))
# torch's view ops (never banned), plus the names ember records for the same views
_VIEWS = frozenset(("squeeze", "unsqueeze", "alias", "view", "slice", "t", "expand", "as_strided", "permute",
                    "select", "split", "transpose", "detach", "conj", "_conj", "_unsafe_view", "unfold",
                    "narrow", "diagonal", "view_as", "expand_as", "_reshape_alias"))
# torch: native_dropout, rand_like, randn_like; ember records these random ops too
_RANDOM = frozenset(("native_dropout", "rand_like", "randn_like", "bernoulli", "bernoulli_", "rand", "randn",
                     "randint", "randint_like", "normal", "normal_", "uniform", "uniform_", "multinomial",
                     "randperm", "dropout", "exponential_", "geometric_", "cauchy_", "log_normal_",
                     "random_", "poisson", "rrelu_with_noise", "_fused_dropout"))
# torch's compute-intensive ops, plus the unlowered forms ember may record
_COMPUTE_INTENSIVE = frozenset((
    "mm", "convolution", "convolution_backward", "bmm", "addmm", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_flash_attention_forward", "_efficient_attention_forward",
    "upsample_bilinear2d", "_scaled_mm", "matmul", "linear", "conv1d", "conv2d", "conv3d", "_convolution",
    "baddbmm", "addbmm", "addmv", "mv", "dot", "scaled_dot_product_attention",
    "_scaled_dot_product_attention_math", "einsum", "tensordot", "conv_transpose2d"))


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


def _name(n):
    return str(getattr(n.op, "_opname", None) or n.op.name)


def _writes(n):
    if isinstance(n.op, PyOp):
        return True
    for a, sa in zip(n.args, n.op.schema.arguments):
        if sa.is_write and isinstance(a, Ref):
            return True
    return _name(n).endswith("_") and not _name(n).startswith("_")


def _written_slots(n):
    """The slots an op writes in place (schema's Tensor(a!)), or None for a Python step."""
    if isinstance(n.op, PyOp):
        return None
    out = []
    for a, sa in zip(n.args, n.op.schema.arguments):
        if sa.is_write:
            _slots_of(a, out)
    return out


def _is_view(n):
    return _name(n) in _VIEWS or "view" in getattr(n.op, "tags", ())


def _fusible(n):
    """torch's fusible_ops: the recomputable ops and the random ones."""
    name = _name(n)
    return (name in _RECOMPUTABLE or name in _RANDOM or name in _VIEWS or
            "pointwise" in getattr(n.op, "tags", ()))


def _nbytes(v):
    try:
        return v.numel() * v.element_size()
    except Exception:
        return None


def saved_bytes(joint, saved):
    """Bytes the forward keeps for the backward (what a partition's saved list costs)."""
    return sum(_nbytes(joint.values[s]) or 0 for s in saved if s < len(joint.values))


def max_flow_min_cut(n_vertices, edges, source, sink):
    """Edmonds-Karp: (flow value, the vertices on the source side of a minimum cut).
    edges: (u, v, capacity) with capacity an int or INF."""
    graph = [[] for _ in range(n_vertices)]   # per vertex: [to, capacity left, index of the reverse edge]
    for u, v, c in edges:
        graph[u].append([v, c, len(graph[v])])
        graph[v].append([u, 0, len(graph[u]) - 1])
    flow = 0
    while True:
        parent = [None] * n_vertices
        parent[source] = (source, -1)
        q = deque([source])
        while q and parent[sink] is None:
            u = q.popleft()
            for k, (v, c, _r) in enumerate(graph[u]):
                if c > 0 and parent[v] is None:
                    parent[v] = (u, k)
                    q.append(v)
        if parent[sink] is None:
            break
        push = INF
        v = sink
        while v != source:
            u, k = parent[v]
            push = min(push, graph[u][k][1])
            v = u
        if push == INF:
            return INF, None
        v = sink
        while v != source:
            u, k = parent[v]
            e = graph[u][k]
            e[1] -= push
            graph[v][e[2]][1] += push
            v = u
        flow += push
    side = {source}
    q = deque([source])
    while q:
        u = q.popleft()
        for v, c, _r in graph[u]:
            if c > 0 and v not in side:
                side.add(v)
                q.append(v)
    return flow, side


def _ban_reason(n, slot_users, producer, fw_ids, values):
    """Why torch's should_ban_recomputation keeps a forward node from being recomputed, or None."""
    name = _name(n)
    if _writes(n):
        return "in-place op"
    if _is_view(n):
        return None                      # views are free to recompute
    if name in _RANDOM:
        return "random op"
    if name in _COMPUTE_INTENSIVE:
        return "compute intensive op"
    if not _fusible(n):
        return "not in recomputable allowlist"
    # materialized in the backward: a backward op that cannot fuse with it reads it (through views)
    todo = list(_outs(n))
    seen = set(todo)
    while todo:
        s = todo.pop()
        for u in slot_users.get(s, ()):
            if id(u) not in fw_ids and not _fusible(u):
                return "materialized in backward"
            if _is_view(u):
                for o in _outs(u):
                    if o not in seen:
                        seen.add(o)
                        todo.append(o)
    ins = sum(_nbytes(values[a]) or 0 for a in set(_slots_of(list(n.args), [])) if a < len(values))
    out = sum(_nbytes(values[o]) or 0 for o in set(_outs(n)) if o < len(values))
    if out * 4 < ins:
        return "reduction op"
    return None


# why the last min-cut call chose what it chose ("min cut", or the reason it fell back)
last_decision = [None]


def _default(why, fw, bw, saved):
    last_decision[0] = f"default partition: {why}"
    return fw, bw, saved


def min_cut_rematerialization_partition(joint):
    """Save the values of a minimum cut, recompute the rest in the backward (see the module doc).
    Falls back to default_partition where the cut is not sound or not smaller."""
    d_fw, d_bw, d_saved = default_partition(joint)
    values = joint.values
    nv = len(values)
    fw_nodes = list(joint.fw_nodes)
    if any(isinstance(n.op, PyOp) for n in fw_nodes):
        return _default("a Python step in the forward", d_fw, d_bw, d_saved)
    # an in-place write (dropout's bernoulli_ into empty_like): the written value is never recomputed
    # (recomputing its producer would miss the write), and neither is any node that read it before
    # the write (a recomputation would read the written value)
    pinned = set()
    written = set()
    for k, n in enumerate(fw_nodes):
        ws = _written_slots(n)
        if ws is None:
            return _default("a Python step in the forward", d_fw, d_bw, d_saved)
        for a in ws:
            written.add(a)
            for m in fw_nodes[:k]:
                if a in _slots_of(list(m.args), []):
                    pinned.add(id(m))
    inputs = [s for s in joint.in_slots if s is not None and s < nv]
    producer = {}
    fw_slots = set(inputs)
    for n in fw_nodes:
        for o in _outs(n):
            if o not in fw_slots:
                fw_slots.add(o)
                producer[o] = n
    # backward nodes: those over tangents stay in the backward; those over forward values only may move
    tan = set(joint.tangent_slots)
    movable, mov_slots, bw_dep = [], set(), []
    for n in joint.bw_nodes:
        args = _slots_of(list(n.args), [])
        if (_writes(n) or any(a in tan for a in args) or
                not all(a in fw_slots or a in mov_slots for a in args)):
            tan.update(o for o in _outs(n) if o not in fw_slots and o not in mov_slots)
            bw_dep.append(n)
        else:
            movable.append(n)
            for o in _outs(n):
                if o not in fw_slots and o not in mov_slots:
                    mov_slots.add(o)
                    producer[o] = n
    known = fw_slots | mov_slots
    slot_users = {}
    for n in fw_nodes + movable + bw_dep:
        outs = set(_outs(n))
        for a in set(_slots_of(list(n.args), [])):
            if a in known and a not in outs:
                slot_users.setdefault(a, []).append(n)
    # distance to the backward (torch's dist_from_bw): backward nodes 0, a forward node one more
    # than its nearest user
    fw_ids = {id(n) for n in fw_nodes}
    dist = {}
    for n in reversed(fw_nodes + movable):
        if id(n) not in fw_ids:
            dist[id(n)] = 0
            continue
        d = int(1e9)
        for o in _outs(n):
            for u in slot_users.get(o, ()):
                d = min(d, dist.get(id(u), 0) + 1)
        dist[id(n)] = d

    def slot_dist(s):
        p = producer.get(s)
        if p is not None:
            return dist[id(p)]
        return min((dist.get(id(u), 0) + 1 for u in slot_users.get(s, ())), default=int(1e9))

    SRC, SNK = 2 * nv, 2 * nv + 1
    edges = []
    banned = set()
    for s in inputs:
        edges.append((SRC, 2 * s, INF))        # a primal input is never recomputed
    for n in fw_nodes:
        why = _ban_reason(n, slot_users, producer, fw_ids, values)
        if id(n) in pinned or any(o in written for o in _outs(n)):
            why = "read or written around an in-place op"
        if why is not None:
            for o in _outs(n):
                if producer.get(o) is n:
                    banned.add(o)
                    edges.append((SRC, 2 * o, INF))
    for s in sorted(known):
        b = _nbytes(values[s]) if s < nv else None
        if b is None:
            w = INF                               # not a tensor: cannot be saved
        else:
            w = int(b * (1.1 ** max(min(slot_dist(s), 100), 1)))
            users = slot_users.get(s, ())
            materialized = producer.get(s) is None or not all(_fusible(u) for u in users)
            if not materialized:
                w *= 2
        edges.append((2 * s, 2 * s + 1, w))
    for n in fw_nodes + movable:
        outs = [o for o in _outs(n) if producer.get(o) is n]
        for a in set(_slots_of(list(n.args), [])):
            if a in known and a not in outs:
                for o in outs:
                    edges.append((2 * a + 1, 2 * o, INF))
    needed = set()
    for n in bw_dep:
        needed.update(a for a in _slots_of(list(n.args), []) if a in known)
    needed.update(s for s in joint.grad_slots if s is not None and s in known)
    needed.update(mov_slots)
    for s in needed:
        edges.append((2 * s + 1, SNK, INF))
    flow, side = max_flow_min_cut(2 * nv + 2, edges, SRC, SNK)
    if side is None:
        return _default("no finite cut", d_fw, d_bw, d_saved)
    saved = [s for s in sorted(known) if 2 * s in side and 2 * s + 1 not in side]
    saved_set = set(saved)
    # movable backward nodes whose output is saved run in the forward
    # (with the backward-only nodes they read, which then run in both graphs where needed)
    moved_ids = {id(n) for n in movable if any(o in saved_set for o in _outs(n) if producer.get(o) is n)}
    for n in reversed(movable):
        if id(n) in moved_ids:
            for a in _slots_of(list(n.args), []):
                p = producer.get(a)
                if a in mov_slots and a not in saved_set and p is not None:
                    moved_ids.add(id(p))
    moved = [n for n in movable if id(n) in moved_ids]
    # what the backward recomputes: producers of needed values that are not saved
    recompute = set()
    todo = [s for s in needed if s not in saved_set]
    todo += [a for n in movable if id(n) not in moved_ids for a in _slots_of(list(n.args), [])
             if a in known and a not in saved_set]
    seen = set()
    while todo:
        s = todo.pop()
        if s in seen or s in saved_set:
            continue
        seen.add(s)
        p = producer.get(s)
        if p is None or s in banned:
            return _default("the cut does not cover the backward", d_fw, d_bw, d_saved)
        if id(p) in fw_ids:
            if id(p) in pinned or _ban_reason(p, slot_users, producer, fw_ids, values) is not None:
                return _default("the cut recomputes a banned op", d_fw, d_bw, d_saved)
            recompute.add(id(p))
        elif id(p) in moved_ids:
            recompute.add(id(p))                 # moved to the forward, and run again in the backward
        todo.extend(a for a in _slots_of(list(p.args), []) if a in known)
    if saved_bytes(joint, saved) > saved_bytes(joint, d_saved):
        return _default("the cut stores more bytes than the default", d_fw, d_bw, d_saved)
    last_decision[0] = "min cut"
    new_fw = fw_nodes + moved
    new_bw = [n for n in fw_nodes if id(n) in recompute] + [n for n in joint.bw_nodes
                                                            if id(n) not in moved_ids or id(n) in recompute]
    return new_fw, new_bw, saved
