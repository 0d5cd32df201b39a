"""A small pytree (torch.utils._pytree / torch.fx._pytree): flatten nested tuples, lists and dicts
to leaves plus a TreeSpec, and rebuild them. Graphs of functions with nested inputs (make_fx) read
their flat placeholders with `tree_flatten_spec` and build their output with `tree_unflatten`."""

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_flatten_spec", "tree_leaves"]


class TreeSpec:
    def __init__(self, type_, context, children_specs):
        self.type = type_
        self.context = context
        self.children_specs = children_specs
        self.num_leaves = sum(c.num_leaves for c in children_specs)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type == other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __repr__(self):
        inner = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{inner}])"

    def is_leaf(self):
        return False


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type = None
        self.context = None
        self.children_specs = []
        self.num_leaves = 1

    def __repr__(self):
        return "*"

    def is_leaf(self):
        return True


def _children(x):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x), None, list(x)
    if isinstance(x, (tuple, list)):
        return type(x), None, list(x)
    if isinstance(x, dict):
        keys = list(x)
        return dict, keys, [x[k] for k in keys]
    return None


def tree_flatten(tree):
    """(leaves, spec)."""
    node = _children(tree)
    if node is None:
        return [tree], LeafSpec()
    type_, context, kids = node
    leaves, specs = [], []
    for k in kids:
        lv, sp = tree_flatten(k)
        leaves.extend(lv)
        specs.append(sp)
    return leaves, TreeSpec(type_, context, specs)


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
    return spec.type(*kids)   # a namedtuple


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


class _PytreeNamespace:
    """What generated code calls `pytree` (torch.utils._pytree): a second name for this module's
    functions (one object cannot hold two global names in the generated code)."""
    tree_flatten = staticmethod(tree_flatten)
    tree_unflatten = staticmethod(tree_unflatten)
    tree_leaves = staticmethod(tree_leaves)


pytree = _PytreeNamespace()
