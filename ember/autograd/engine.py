"""The backward engine: dependency counts and a ready queue, no recursion (engine.cpp).

One entry, `execute` (PyTorch's Engine::execute): Tensor.backward, autograd.backward and
autograd.grad all come here. It counts dependencies once, seeds input buffers with the root
gradients, and runs one main loop. Nodes run in the order PyTorch's CPU queue gives: among ready
nodes, the most recently created (highest sequence number) first. Each node's incoming gradients
are summed in an input buffer; a gradient whose shape differs from the forward value's
(broadcasting) is reduced with sum_to.
"""
import heapq
import sys

import numpy as np

from ember.autograd.graph import AccumulateGrad, Node
from ember.core import tls
from ember.core.keys import AUTOGRAD_MASK as _AUTOGRAD_MASK, DispatchKey as _K

_state = tls.current
_getrefcount = sys.getrefcount
_nd = np.ndarray
_np_add = np.add
_FW = 1 << _K.ForwardAD  # a gradient with a forward-mode tangent adds through the ForwardAD layer
_heappush, _heappop = heapq.heappush, heapq.heappop


def execute(roots, grads, keep_graph, create_graph, accumulate_grad=True, outputs=None):
    """Run backward from `roots` (edges (node, input_nr), or None) seeded with `grads`.

    Without `outputs`, gradients flow into the leaves' AccumulateGrad nodes (backward()).
    With `outputs` (edges), only the nodes that lead to them run, and the gradients arriving at
    them are returned, one per edge, None where none arrived (autograd.grad, backward(inputs=)).
    accumulate_grad=False: no AccumulateGrad node runs. Returns [] without `outputs`."""
    # 1. dependency counts: deps[n] = the number of edges into n from the graph reachable from the
    # roots. A root starts at 0 so that reaching it again counts an edge without a second walk.
    deps = {}
    stack = []
    for e in roots:
        if e is not None and e[0] not in deps:
            deps[e[0]] = 0
            stack.append(e[0])
    pop_stack, push_stack, get = stack.pop, stack.append, deps.get
    while stack:
        for e in pop_stack()._next:
            if e is not None:
                n = e[0]
                d = get(n)
                if d is None:
                    deps[n] = 1
                    push_stack(n)
                else:
                    deps[n] = d + 1

    # 2. the roots' input buffers; the roots nothing else leads to are ready. deps[n] turns
    # negative once n has a buffer (see _run)
    buffers = {}
    for e, g in zip(roots, grads):
        if e is not None:
            node, nr = e
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * max(len(node._input_meta), nr + 1)
            old = buf[nr]
            buf[nr] = g if old is None else old + g
    grads = g = old = buf = None  # the engine must not hold gradients (AccumulateGrad steals unshared ones)
    ready = []
    for n in buffers:
        d = deps[n]
        if d:
            deps[n] = -d
        else:
            ready.append((-n._seq, n))
    if len(ready) > 1:
        heapq.heapify(ready)
    task = None if outputs is None and accumulate_grad else _GraphTask(outputs, deps, accumulate_grad)

    # 3. run the formulas in grad mode only for create_graph
    st = _state()
    prev_grad = st._grad
    if create_graph:
        st.grad_enabled = True
    else:
        st._grad, st.ag = False, 0  # what the grad_enabled setter stores, without its two calls
    excl = _exclude_autograd(st, create_graph)
    try:
        _run(ready, buffers, deps, keep_graph, not create_graph, task)
    finally:
        st._grad = prev_grad
        st._set_ag()
        if excl:
            _restore_autograd(st, excl)
    return [] if task is None else task.captured


class _GraphTask:
    """What a run with `outputs` adds (GraphTask's exec_info): the gradients it captures at the
    output edges, and the nodes that lead to them, the only ones that run."""

    def __init__(self, outputs, deps, accumulate_grad):
        self.captures = {}  # node -> [(input_nr, index in outputs)]
        if outputs is None:
            self.captured = []
            needed = set(deps)
        else:
            self.captured = [None] * len(outputs)
            for k, e in enumerate(outputs):
                if e is not None:
                    self.captures.setdefault(e[0], []).append((e[1], k))
            needed = _needed_nodes(deps, self.captures)
        if not accumulate_grad:
            needed = {n for n in needed if not isinstance(n, AccumulateGrad)}
        self.needed = needed

    def take(self, node, buf):
        """Capture the gradients summed for `node`; its buffer if it is to run, else None."""
        caps = self.captures.get(node)
        if caps:
            for nr, k in caps:
                self.captured[k] = buf[nr] if nr < len(buf) else None
        return buf if node in self.needed else None


def _needed_nodes(deps, captures):
    """Nodes on some path from a root to a captured edge (deps' keys: the reachable graph)."""
    parents = {}
    for n in deps:
        for e in n._next:
            if e is not None:
                parents.setdefault(e[0], []).append(n)
    needed = set()
    stack = [t for t in captures if t in deps]
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        stack.extend(parents.get(n, ()))
    # the capture targets themselves (e.g. AccumulateGrad of an input) need not run
    for t in captures:
        if isinstance(t, AccumulateGrad):
            needed.discard(t)
    return needed


def _run(ready, buffers, deps, keep_graph, inplace_ok, task):
    """The main loop.

    deps[n] counts the edges into n not yet processed, negative once n has an input buffer, so
    one look-up per edge tells both. A node that becomes ready and is newer than
    everything queued runs next with its buffer in hand: a chain of single-input nodes touches
    neither the heap nor the buffer dict. Anomaly mode and hooks take _call_node."""
    push, pop = _heappush, _heappop
    pop_buffer = buffers.pop
    plain = not _state()._anomaly and node_hook[0] is None  # a profiler takes _call_node
    if ready:
        node = pop(ready)[1]
        buf = pop_buffer(node, None)
    else:
        node = buf = None
    while node is not None:
        if task is not None and buf is not None:
            buf = task.take(node, buf)
        if buf is None:
            outs = ()
        elif len(buf) == 1 and plain and not node._has_hooks:
            if buf[0] is None:
                outs = ()
            else:
                outs = node.apply(buf)
                if not keep_graph and node._saves:
                    node.release_variables()
        elif all(x is None for x in buf):
            outs = ()
        else:
            outs = _call_node(node, buf, keep_graph)
        buf = None
        nf = node._next
        if len(outs) < len(nf):
            outs = list(outs) + [None] * (len(nf) - len(outs))
        cand = cbuf = None  # the newest node made ready by this one, and its buffer
        for e, g in zip(nf, outs):
            if e is None:
                continue
            nxt, nr = e
            d = deps[nxt]
            if g is not None:
                im = nxt._input_meta
                n_in = len(im)
                if nr < n_in:
                    meta = im[nr]
                    if meta is not None and (g._dtype is not meta[1] or g._shape != meta[0]):
                        g = _validate(g, meta, node, _position(nf, outs, e, g))
                if d > 0:  # the first gradient for nxt
                    if n_in <= 1 and nr == 0:
                        b = [g]
                    else:
                        b = [None] * max(n_in, nr + 1)
                        b[nr] = g
                    g = None
                    if d != 1:
                        buffers[nxt] = b
                        deps[nxt] = 1 - d
                        continue
                else:
                    b = buffers[nxt]
                    old = b[nr]
                    if old is None:
                        b[nr] = g
                    elif not inplace_ok:
                        b[nr] = old + g
                    else:
                        # old += g when nothing else holds old: the 2nd..nth gradient of a leaf
                        # used n times lands here
                        a = old._np
                        if (_getrefcount(old) == 3 and old._ameta is None and old._base is None
                                and old._shape == g._shape and old._dtype is g._dtype and a.__class__ is _nd
                                and g._np.__class__ is _nd and _getrefcount(a) == 3 and a.base is None
                                and a.flags.writeable and not (old._keys | g._keys) & _FW):
                            _np_add(a, g._np, a)
                        else:
                            b[nr] = old + g
                        a = None
                    old = g = None
                    if d != -1:
                        deps[nxt] = d + 1
                        continue
                    del buffers[nxt]
            elif d > 1:
                deps[nxt] = d - 1
                continue
            elif d < -1:
                deps[nxt] = d + 1
                continue
            else:
                b = pop_buffer(nxt) if d == -1 else None
            # nxt is ready, with buffer b
            if cand is None:
                cand, cbuf = nxt, b
            else:
                if nxt._seq > cand._seq:
                    cand, cbuf, nxt, b = nxt, b, cand, cbuf
                if b is not None:
                    buffers[nxt] = b
                push(ready, (-nxt._seq, nxt))
            b = None
        outs = None
        if cand is None:
            if ready:
                node = pop(ready)[1]
                buf = pop_buffer(node, None)
            else:
                node = None
        elif ready and -ready[0][0] > cand._seq:
            if cbuf is not None:
                buffers[cand] = cbuf
            push(ready, (-cand._seq, cand))
            node = pop(ready)[1]
            buf = pop_buffer(node, None)
        else:
            node, buf = cand, cbuf
        cand = cbuf = None


def _validate(g, meta, node, i):
    """Reduce a broadcast gradient to the input's shape and cast it to the input's dtype."""
    shape, dtype, device = meta
    if g._shape != shape:
        from ember.autograd.formulas import sum_to  # lazy: only broadcast gradients need it
        try:
            g = sum_to(g, shape)
        except Exception:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"[{', '.join(map(str, g._shape))}] but expected shape compatible with "
                               f"[{', '.join(map(str, shape))}]") from None
    if g._dtype is not dtype:
        g = g.to(dtype)
    if g._device != device:
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                           f"expected device {device} but got {g._device}")
    return g


def _position(nf, outs, e, g):
    """The output index of edge `e` carrying gradient `g` (for error messages)."""
    for i, (x, y) in enumerate(zip(nf, outs)):
        if x is e and y is g:
            return i
    return 0


def _exclude_autograd(st, create_graph):
    """Without create_graph the formulas run with grad mode off, where the Autograd layer only
    passes calls down: exclude its keys so each formula op skips it (they look like tensors that
    do not require grad). With create_graph, lift an enclosing backward's exclusion instead.
    Returns what to undo: (mask added, 0) or (0, mask lifted), or None."""
    if create_graph:
        m = st.bw_excluded
        if not m:
            return None
        st.bw_excluded = 0
        st.excluded &= ~m
        return (0, m)
    if st.bw_excluded:
        return None  # an enclosing backward already excludes them
    d = st.dk  # (included, ~excluded)
    m = _AUTOGRAD_MASK & d[1]
    if not m:
        return None
    st.dk = (d[0], d[1] & ~m)
    st.bw_excluded = m
    return (m, 0)


def _restore_autograd(st, excl):
    added, lifted = excl
    if added:
        d = st.dk
        st.dk = (d[0], d[1] | added)
        st.bw_excluded = 0
    else:
        st.excluded |= lifted
        st.bw_excluded = lifted


# ember.autograd.profiler sets node_hook[0] = fn(node, buf) -> outs while it records: each node's
# apply then runs inside its "autograd::engine::evaluate_function: <name>" event. Off, it is None
# and backward is not slowed (it is read once per backward call and once per non-plain node)
node_hook = [None]


def _call_node(node, buf, keep_graph):
    """A node with hooks, several inputs or anomaly mode: hooks around apply, zeros for missing
    gradients, NaN checks."""
    # gradients that never arrived for some outputs are zeros (PyTorch passes undefined tensors)
    for i, g in enumerate(buf):
        if g is None and i < len(node._input_meta) and node._input_meta[i] is not None:
            if len(buf) > 1 or isinstance(node, AccumulateGrad):
                continue
            buf[i] = _zeros_for(node._input_meta[i])
    th = node._tensor_pre_hooks
    if th:
        for nr, hooks in th.items():
            for h in list(hooks):
                r = h(buf[nr])
                if r is not None:
                    buf[nr] = r
    rh = node._retain_hooks
    if rh:
        for nr, hooks in rh.items():
            for h in list(hooks):
                h(buf[nr])
    if node._pre_hooks:
        for h in list(node._pre_hooks):
            r = h(tuple(buf))
            if r is not None:
                buf = list(r)
    try:
        outs = node.apply(buf) if node_hook[0] is None else node_hook[0](node, buf)
    except Exception:
        if node._anomaly is not None:
            from ember.autograd.anomaly import report  # lazy: anomaly mode only
            report(node)
        raise
    if _state()._anomaly and _state().anomaly_check_nan:
        from ember.autograd.anomaly import check_nan  # lazy: anomaly mode only
        check_nan(node, outs)
    if node._post_hooks:
        for h in list(node._post_hooks):
            r = h(tuple(outs), tuple(buf))
            if r is not None:
                outs = tuple(r)
    if not keep_graph:
        node.release_variables()
    return outs


def _zeros_for(meta):
    import ember  # lazy: the public factory (ember is loaded before any backward runs)
    shape, dtype, device = meta
    return ember.zeros(shape, dtype=dtype, device=device)


__all__ = ["execute", "Node"]
