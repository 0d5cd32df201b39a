"""A small pytree (torch.utils._pytree's tree_flatten / tree_unflatten) for the function transforms:
tuples, lists, dicts and namedtuples are nodes; everything else is a leaf."""


class TreeSpec:
    __slots__ = ("kind", "ctx", "children")

    def __init__(self, kind, ctx, children):
        self.kind, self.ctx, self.children = kind, ctx, children

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind == other.kind and self.ctx == other.ctx
                and self.children == other.children)

    def __repr__(self):
        if self.kind is None:
            return "*"
        kids = ",\n  ".join(repr(c) for c in self.children)
        name = self.kind.__name__ if isinstance(self.kind, type) else self.kind
        return f"TreeSpec({name}, {self.ctx}, [{kids}])"


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def tree_flatten(tree):
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves):
    if isinstance(x, (tuple, list)):
        kind = type(x) if _is_namedtuple(x) else (tuple if isinstance(x, tuple) else list)
        return TreeSpec(kind, None, [_flatten(c, leaves) for c in x])
    if isinstance(x, dict):
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
    kids = [_unflatten(it, c) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.ctx, kids))
    if spec.kind in (tuple, list):
        return spec.kind(kids)
    return spec.kind(*kids)  # a namedtuple


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
