"""A small pytree (torch.utils._pytree's tree_flatten / tree_unflatten) for vmap's in_dims and out_dims:
tuples, lists, dicts and namedtuples are nodes, everything else (None included) is a leaf."""


class TreeSpec:
    __slots__ = ("kind", "ctx", "children")

    def __init__(self, kind, ctx, children):
        self.kind, self.ctx, self.children = kind, ctx, children

    @property
    def num_leaves(self):
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind == other.kind and self.ctx == other.ctx
                and self.children == other.children)

    def __repr__(self, indent=0):
        # torch.utils._pytree.TreeSpec's text: children after the first on lines of their own
        if self.kind is None:
            return "*"
        name = getattr(self.kind, "__name__", str(self.kind))
        ctx = self.ctx if self.kind in (dict, tuple, list) else self.kind
        kids = ""
        if self.children:
            indent += 2
            kids = self.children[0].__repr__(indent) + ("," if len(self.children) > 1 else "")
            kids += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children[1:])
        return f"TreeSpec({name}, {ctx}, [{kids}])"


LEAF = TreeSpec(None, None, [])


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree):
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves):
    if _is_namedtuple(x):
        return TreeSpec(type(x), None, [_flatten(v, leaves) for v in x])
    if type(x) in (tuple, list):
        return TreeSpec(type(x), None, [_flatten(v, leaves) for v in x])
    if type(x) is dict:
        keys = list(x)
        return TreeSpec(dict, keys, [_flatten(x[k], leaves) for k in keys])
    leaves.append(x)
    return LEAF


def tree_unflatten(leaves, spec):
    it = iter(leaves)
    return _unflatten(it, spec)


def _unflatten(it, spec):
    if spec.kind is None:
        return next(it)
    vals = [_unflatten(it, c) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.ctx, vals))
    if spec.kind in (tuple, list):
        return spec.kind(vals)
    return spec.kind(*vals)


def broadcast_prefix(prefix, tree):
    """The leaves of `prefix` repeated over the subtrees of `tree` they stand for; None when
    `prefix` is not a prefix of `tree`'s structure."""
    out = []
    if not _broadcast(prefix, tree, out):
        return None
    return out


def _broadcast(p, t, out):
    pspec = _flatten(p, [])
    if pspec.kind is None:  # a leaf of the prefix covers the whole subtree
        out.extend([p] * len(tree_flatten(t)[0]))
        return True
    tspec = _flatten(t, [])
    if pspec.kind is dict:
        if tspec.kind is not dict or set(p) != set(t):
            return False
        return all(_broadcast(p[k], t[k], out) for k in t)
    if tspec.kind != pspec.kind or len(p) != len(t):
        return False
    return all(_broadcast(a, b, out) for a, b in zip(p, t))
