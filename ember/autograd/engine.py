"""The backward engine: dependency counts and a ready queue, no recursion (engine.cpp).

Nodes run in the order PyTorch's CPU queue gives: among ready nodes, the most recently created
(highest sequence number) first. Each node's incoming gradients are summed in an input buffer;
a gradient whose shape differs from the forward value's (broadcasting) is reduced with sum_to.
"""
import heapq
import sys

import numpy as np

from ember.autograd.graph import AccumulateGrad, Node
from ember.core import tls
from ember.core.keys import AUTOGRAD_MASK as _AUTOGRAD_MASK

_state = tls.state
_getrefcount = sys.getrefcount
_nd = np.ndarray
_np_add = np.add


def _validate(g, meta, node, i):
    """Reduce a broadcast gradient to the input's shape and cast it to the input's dtype."""
    shape, dtype, device = meta
    if g._shape != shape:
        from ember.autograd.formulas import sum_to
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


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _zeros_for(meta):
    import ember
    shape, dtype, device = meta
    return ember.zeros(shape, dtype=dtype, device=device)


def run_backward(roots, grads, keep_graph, create_graph, accumulate=True, captures=None,
                 allow_unused=False, inputs_for_backward=None):
    """roots: edges (node, nr); grads: their gradients. With `captures` (edges), return the
    gradients arriving at them instead of accumulating into leaves (autograd.grad)."""
    if captures is None and accumulate and len(roots) == 1 and roots[0] is not None and not _state._anomaly:
        _backward_one(roots[0], grads[0], keep_graph, create_graph)
        return []
    # 1. dependency counts over the reachable graph
    deps = {}
    stack = []
    rootset = set()
    for e in roots:
        if e is not None and e[0] not in rootset:
            rootset.add(e[0])
            stack.append(e[0])
    pop_stack, push_stack = stack.pop, stack.append
    while stack:
        for e in pop_stack()._next:
            if e is not None:
                n = e[0]
                d = deps.get(n)
                if d is None:
                    deps[n] = 1
                    if n not in rootset:
                        push_stack(n)
                else:
                    deps[n] = d + 1
    seen = rootset.union(deps)

    # 2. with captures, run only nodes that lead to a captured edge
    cap_index = {}
    needed = None
    if captures is not None:
        for k, e in enumerate(captures):
            if e is not None:
                cap_index.setdefault((id(e[0]), e[1]), []).append(k)
        needed = _needed_nodes(roots, captures, seen)
    cap_vals = [None] * (len(captures) if captures is not None else 0)

    # 3. seed the input buffers
    buffers = {}
    for e, g in zip(roots, grads):
        if e is None:
            continue
        node, nr = e
        if captures is not None and (id(node), nr) in cap_index:
            for k in cap_index[(id(node), nr)]:
                cap_vals[k] = _add(cap_vals[k], g)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * max(len(node._input_meta), nr + 1, 1)
        buf[nr] = _add(buf[nr], g)
    grads = g = None  # the engine must not hold gradients (AccumulateGrad steals unshared ones)
    ready = []
    push, pop = heapq.heappush, heapq.heappop
    for node in buffers:
        if deps.get(node, 0) == 0:
            push(ready, (-node._seq, node))

    st = _state
    prev_grad = st.grad_enabled
    st.grad_enabled = create_graph
    excl = _exclude_autograd(st, create_graph)
    plain = captures is None and accumulate
    anomaly = st.anomaly
    if plain and not anomaly:
        try:
            _run_plain(ready, buffers, deps, keep_graph, not create_graph)
        finally:
            st.grad_enabled = prev_grad
            if excl:
                _restore_autograd(st, excl)
        return cap_vals
    pop_buffer = buffers.pop
    try:
        while ready:
            node = pop(ready)[1]
            buf = pop_buffer(node, None)
            nf = node._next
            if buf is None or (not plain and (
                    (needed is not None and node not in needed)
                    or (not accumulate and isinstance(node, AccumulateGrad)))):
                outs = ()  # nothing to compute: only let the dependency counts below fall
            elif len(buf) == 1 and not node._has_hooks and node._anomaly is None and not anomaly:
                if buf[0] is None:
                    outs = ()
                else:
                    outs = node.apply(buf)
                    if not keep_graph:
                        node.release_variables()
            elif all(x is None for x in buf):
                outs = ()
            else:
                outs = _call_node(node, buf, keep_graph)
            buf = None
            n_outs = len(outs)
            for i, e in enumerate(nf):
                if e is None:
                    continue
                nxt, nr = e
                g = outs[i] if i < n_outs else None
                if g is not None:
                    im = nxt._input_meta
                    meta = im[nr] if nr < len(im) else None
                    if meta is not None and (g._dtype is not meta[1] or g._shape != meta[0]):
                        g = _validate(g, meta, node, i)
                    if not plain:
                        ks = cap_index.get((id(nxt), nr))
                        if ks:
                            for k in ks:
                                cap_vals[k] = _add(cap_vals[k], g)
                    b = buffers.get(nxt)
                    if b is None:
                        b = buffers[nxt] = [None] * (len(im) or 1) if nr < max(len(im), 1) \
                            else [None] * (nr + 1)
                        b[nr] = g
                    else:
                        old = b[nr]
                        b[nr] = g if old is None else old + g
                    g = None
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    push(ready, (-nxt._seq, nxt))
            outs = None
    finally:
        st.grad_enabled = prev_grad
        if excl:
            _restore_autograd(st, excl)
    return cap_vals


def _backward_one(root, g, keep_graph, create_graph):
    """backward() from one root edge, without captures or anomaly mode (the common case)."""
    node, nr = root
    deps = {}
    stack = [node]
    pop_stack, push_stack = stack.pop, stack.append
    get = deps.get
    while stack:
        for e in pop_stack()._next:
            if e is not None:
                n = e[0]
                d = get(n)
                if d is None:
                    deps[n] = 1
                    if n is not node:
                        push_stack(n)
                else:
                    deps[n] = d + 1
    n_in = len(node._input_meta)
    if n_in <= 1 and nr == 0:
        buf = [g]
    else:
        buf = [None] * max(n_in, nr + 1)
        buf[nr] = g
    g = None
    buffers = {node: buf}
    buf = None
    ready = [(-node._seq, node)] if node not in deps else []
    st = _state
    prev_grad = st._grad
    if create_graph:
        st.grad_enabled = True
    else:
        st._grad, st.ag = False, 0  # what the grad_enabled setter stores, without its two calls
    excl = _exclude_autograd(st, create_graph)
    try:
        _run_plain(ready, buffers, deps, keep_graph, not create_graph)
    finally:
        st._grad = prev_grad
        st._set_ag()
        if excl:
            _restore_autograd(st, excl)


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


def _run_plain(ready, buffers, deps, keep_graph, inplace_ok):
    """The main loop for backward() without captures or anomaly mode (the common case).

    deps[n] counts the edges into n not yet processed; it is made negative once n has an input
    buffer, so one look-up per edge tells both. A node that becomes ready and is newer than
    everything queued runs next with its buffer in hand: a chain of single-input nodes touches
    neither the heap nor the buffer dict."""
    push, pop = heapq.heappush, heapq.heappop
    pop_buffer = buffers.pop
    for n in buffers:
        d = deps.get(n)
        if d:
            deps[n] = -d
    if ready:
        node = pop(ready)[1]
        buf = pop_buffer(node, None)
    else:
        node = buf = None
    while node is not None:
        if buf is None:
            outs = ()
        elif len(buf) == 1 and not node._has_hooks and node._anomaly is None:
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
                        # _sum_into inlined: the 2nd..nth gradient of a leaf used n times lands here
                        a = old._np
                        if (_getrefcount(old) == 3 and old._ameta is None and old._base is None
                                and old._shape == g._shape and old._dtype is g._dtype and a.__class__ is _nd
                                and g._np.__class__ is _nd and _getrefcount(a) == 3 and a.base is None
                                and a.flags.writeable):
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


def _position(nf, outs, e, g):
    """The output index of edge `e` carrying gradient `g` (for error messages)."""
    for i, (x, y) in enumerate(zip(nf, outs)):
        if x is e and y is g:
            return i
    return 0


def _needed_nodes(roots, captures, seen):
    """Nodes on some path from a root to a captured edge."""
    targets = {e[0] for e in captures if e is not None}
    # reverse adjacency over the reachable graph
    parents = {}
    for n in seen:
        for e in n._next:
            if e is not None:
                parents.setdefault(e[0], []).append(n)
    needed = set()
    stack = [t for t in targets if t in seen]
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        stack.extend(parents.get(n, ()))
    # the capture targets themselves (e.g. AccumulateGrad of an input) need not run
    for t in targets:
        if isinstance(t, AccumulateGrad):
            needed.discard(t)
    return needed


def _call_node(node, buf, keep_graph):
    if buf is None:
        buf = [None]
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
        outs = node.apply(buf)
    except Exception:
        if node._anomaly is not None:
            from ember.autograd.anomaly import report
            report(node)
        raise
    if _state._anomaly and _state.anomaly_check_nan:
        from ember.autograd.anomaly import check_nan
        check_nan(node, outs)
    if node._post_hooks:
        for h in list(node._post_hooks):
            r = h(tuple(outs), tuple(buf))
            if r is not None:
                outs = tuple(r)
    if not keep_graph:
        node.release_variables()
    return outs


__all__ = ["run_backward", "Node"]
