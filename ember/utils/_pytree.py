"""torch.utils._pytree, the part ember uses: tuples, lists, dicts and namedtuples are nodes, everything
else (None included) is a leaf. vmap reads its in_dims/out_dims with it, ember.func its inputs and
outputs, and fx graphs of functions with nested inputs flatten and rebuild them with it."""

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
           "tree_flatten_spec", "broadcast_prefix"]


class TreeSpec:
    __slots__ = ("type", "context", "children_specs", "num_leaves")

    def __init__(self, type_, context, children_specs):
        self.type = type_
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)

    def is_leaf(self):
        return False

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type == other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __repr__(self, indent=0):
        # torch's text: children after the first on lines of their own
        name = getattr(self.type, "__name__", str(self.type))
        ctx = self.context if self.type in (dict, tuple, list) else self.type
        kids = ""
        if self.children_specs:
            indent += 2
            first, *rest = self.children_specs
            kids = first.__repr__(indent) + ("," if rest else "")
            kids += ",".join("\n" + " " * indent + c.__repr__(indent) for c in rest)
        return f"TreeSpec({name}, {ctx}, [{kids}])"


class LeafSpec(TreeSpec):
    __slots__ = ()

    def __init__(self):
        self.type = self.context = None
        self.children_specs = []
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __repr__(self, indent=0):
        return "*"


_LEAF = LeafSpec()


def _flatten(x, leaves):
    t = type(x)
    if isinstance(x, (tuple, list)):  # namedtuples and other subclasses keep their type
        return TreeSpec(t, None, [_flatten(v, leaves) for v in x])
    if isinstance(x, dict):
        keys = list(x)
        return TreeSpec(dict, keys, [_flatten(x[k], leaves) for k in keys])
    leaves.append(x)
    return _LEAF


def tree_flatten(tree):
    """(leaves, spec)."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_unflatten(leaves, spec):
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to "
                         f"a pytree that holds {spec.num_leaves} items ({spec}).")
    return _build(iter(leaves), spec)


def _build(it, spec):
    if spec.is_leaf():
        return next(it)
    kids = [_build(it, c) for c in spec.children_specs]
    if spec.type is dict:
        return dict(zip(spec.context, kids))
    if spec.type in (list, tuple):
        return spec.type(kids)
    return spec.type(*kids)  # a namedtuple


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def tree_flatten_spec(pytree, spec):
    """The leaves of `pytree`, read in the order `spec` gives (dict values by the spec's keys)."""
    if spec.is_leaf():
        return [pytree]
    if spec.type is dict:
        kids = [pytree[k] for k in spec.context]
    else:
        kids = list(pytree)
        if len(kids) != len(spec.children_specs):
            raise RuntimeError(f"the input has {len(kids)} items where the traced structure had "
                               f"{len(spec.children_specs)}: {spec}")
    out = []
    for k, c in zip(kids, spec.children_specs):
        out.extend(tree_flatten_spec(k, c))
    return out


def broadcast_prefix(prefix, tree):
    """The leaves of `prefix` repeated over the subtrees of `tree` they stand for (vmap's in_dims);
    None when `prefix` is not a prefix of `tree`'s structure."""
    out = []
    return out if _broadcast(prefix, tree, out) else None


def _broadcast(p, t, out):
    pspec = _flatten(p, [])
    if pspec.is_leaf():  # a leaf of the prefix covers the whole subtree
        out.extend([p] * len(tree_leaves(t)))
        return True
    tspec = _flatten(t, [])
    if pspec.type is dict:
        if tspec.type is not dict or set(p) != set(t):
            return False
        return all(_broadcast(p[k], t[k], out) for k in t)
    if tspec.type != pspec.type or len(p) != len(t):
        return False
    return all(_broadcast(a, b, out) for a, b in zip(p, t))


class _PytreeNamespace:
    """A second object for this module's functions: fx's generated code names the module both
    `fx_pytree` and `pytree`, as torch's does, and fx binds one name per object."""
    tree_flatten = staticmethod(tree_flatten)
    tree_unflatten = staticmethod(tree_unflatten)
    tree_leaves = staticmethod(tree_leaves)


pytree = _PytreeNamespace()
