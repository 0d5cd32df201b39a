"""ember's layers hold: no import cycle and no upward import in hand-written code.

The order of the layers is declared once, in ember/_layers.py. This test reads every module of
ember with `ast` and collects its imports of other ember modules:

- at module level, and inside functions (an import in a function runs on the first call: it is a
  dependency all the same). A function-level import is exempt only when its line, or the line
  above, says why with a `# lazy: <why>` comment;
- `from ember.a.b import c` imports ember.a.b.c when that is a module, else ember.a.b;
- importing ember.a.b.c runs the __init__ of package ember.a.b (and ember.a) first, unless the
  importer lives inside that package: such an import also depends on those packages;
- a bare `import ember` binds the public op namespace late (see _layers.OP_NAMESPACE): it counts
  for the layer order, not for cycles.

Generated modules (ember/_generated) are nodes of the graph, but only edges whose source is
hand-written are reported. Run `python tests/test_layers.py` to print the full report.
"""
import ast
import importlib.util
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "ember"
LAZY = re.compile(r"#\s*lazy:\s*\S")


def _load_layers():
    # read the table without importing ember: the report must work while ember cannot import
    spec = importlib.util.spec_from_file_location("_ember_layers", PKG / "_layers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


L = _load_layers()


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    path: str
    line: int
    kind: str      # "module", "function", or "package" (an __init__ run by importing inside it)
    text: str
    exempt: bool   # a function-level import with a `# lazy:` reason


def find_modules():
    """dotted module name -> (path, is package)"""
    mods = {}
    for p in sorted(PKG.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (p, is_pkg)
    return mods


def _ancestors(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve(name, mods):
    """The module a dotted name refers to: itself, or its nearest enclosing module."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


class _Collector(ast.NodeVisitor):
    def __init__(self, name, is_pkg, mods, lines, path):
        self.name, self.mods, self.lines, self.path = name, mods, lines, path
        self.package = name if is_pkg else name.rpartition(".")[0]
        self.depth = 0
        self.found = []  # (target module, line, in function, exempt)

    def _in_func(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _in_func

    def visit_If(self, node):
        t = node.test
        if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
                isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"):
            for n in node.orelse:
                self.visit(n)
            return  # annotations only: never imported at run time
        self.generic_visit(node)

    def _exempt(self, node):
        if not self.depth:
            return False
        first = node.lineno - 1
        last = getattr(node, "end_lineno", node.lineno) - 1
        near = self.lines[max(first - 1, 0):last + 1]
        return any(LAZY.search(s) for s in near)

    def _add(self, target, node):
        self.found.append((target, node.lineno, self.depth > 0, self._exempt(node)))

    def visit_Import(self, node):
        for a in node.names:
            if a.name == "ember":
                self._add(L.OP_NAMESPACE, node)
            elif a.name.startswith("ember."):
                t = _resolve(a.name, self.mods)
                if t:
                    self._add(t, node)

    def visit_ImportFrom(self, node):
        if node.level:
            base = self.package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            mod = f"{base}.{node.module}" if node.module else base
        else:
            mod = node.module or ""
        if mod != "ember" and not mod.startswith("ember."):
            return
        for a in node.names:
            full = f"{mod}.{a.name}"
            t = full if full in self.mods else _resolve(mod, self.mods)
            if t:
                self._add(t, node)


def build_graph():
    """(modules, edges): every import of one ember module by another, as Edge records."""
    mods = find_modules()
    read = {}
    for name, (path, is_pkg) in mods.items():
        src = path.read_text()
        lines = src.splitlines()
        c = _Collector(name, is_pkg, mods, lines, path)
        c.visit(ast.parse(src, str(path)))
        read[name] = (c.found, lines)
    # a package whose __init__ imports nothing of ember adds nothing when it runs
    active = {m for m, (path, is_pkg) in mods.items() if is_pkg and read[m][0]}
    edges = set()
    for name, (found, lines) in read.items():
        rel = str(mods[name][0].relative_to(ROOT))
        own = set(_ancestors(name)) | {name}
        for target, line, in_func, exempt in found:
            if target == name:
                continue
            text = lines[line - 1].strip()
            kind = "function" if in_func else "module"
            edges.add(Edge(name, target, rel, line, kind, text, exempt))
            if target == L.OP_NAMESPACE:
                continue
            for pkg in _ancestors(target):
                # the root package is always initialised first; packages enclosing the importer
                # are already being initialised
                if pkg != "ember" and pkg not in own and pkg in active:
                    edges.add(Edge(name, pkg, rel, line, "package", text, exempt))
    return mods, sorted(edges, key=lambda e: (e.path, e.line, e.dst))


def _hand_written(module):
    return module != L.OP_NAMESPACE and not L.is_generated(module)


def _sccs(nodes, succ):
    """Strongly connected components (iterative Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
    return out


def _direct_lines(edges):
    return {(e.src, e.line) for e in edges if e.kind != "package"}


def _shown(edges):
    """Edges to print: a package edge only where its line has no direct edge in the list."""
    direct = _direct_lines(edges)
    return [e for e in edges if e.kind != "package" or (e.src, e.line) not in direct]


def _fmt(e):
    where = "" if e.kind == "module" else f" [{e.kind}]"
    return f"    {e.path}:{e.line}  {e.src} -> {e.dst}{where}\n        {e.text}"


def _rank(module):
    r = L.layer_of(module)
    return -1 if r is None else r[0]


def _path(succ, start, goal, members):
    """Shortest path start -> goal inside one component (breadth first)."""
    prev = {start: None}
    todo = [start]
    for v in todo:
        if v == goal:
            break
        for w in sorted(succ.get(v, ())):
            if w in members and w not in prev:
                prev[w] = v
                todo.append(w)
    out = [goal]
    while prev[out[-1]] is not None:
        out.append(prev[out[-1]])
    return out[::-1]


def _cover(suspects, succ, members):
    """One shortest cycle per suspect edge that no cycle chosen before contains."""
    by_pair = defaultdict(list)
    for e in suspects:
        by_pair[(e.src, e.dst)].append(e)
    shown, covered = [], set()
    for pair in sorted(by_pair, key=lambda p: (len(_path(succ, p[1], p[0], members)), p)):
        if pair in covered:
            continue
        cyc = [pair[0]] + _path(succ, pair[1], pair[0], members)
        steps = set(zip(cyc, cyc[1:]))
        hits = [p for p in by_pair if p in steps]
        covered.update(hits)
        shown.append((cyc, [e for p in hits for e in by_pair[p]]))
    return shown


def _components(es):
    succ = defaultdict(set)
    nodes = set()
    for e in es:
        succ[e.src].add(e.dst)
        nodes.update((e.src, e.dst))
    return succ, [c for c in _sccs(sorted(nodes), succ) if len(c) > 1]


def cycles(edges):
    """[(modules of one strongly connected component, [(a cycle, its edges to break)])].

    A cycle needs an edge that does not point down the layer order. The hand-written upward
    edges of a component come first, each with one shortest cycle through it; the cycles left
    once they are gone run within one layer, and their same-layer hand-written edges are listed
    (a package importing its own submodule is how packages work, not a place to break)."""
    counted = [e for e in edges if not e.exempt and e.dst != L.OP_NAMESPACE]
    succ, comps = _components(counted)
    found = []
    for comp in comps:
        members = set(comp)
        inside = [e for e in counted if e.src in members and e.dst in members]
        if not any(_hand_written(e.src) for e in inside):
            continue
        up = [e for e in inside if _hand_written(e.src) and _rank(e.dst) > _rank(e.src)]
        shown = _cover(up, succ, members)
        rest = [e for e in inside if e not in set(up)]
        sub_succ, subs = _components(rest)
        for sub in subs:
            sm = set(sub)
            mine = [e for e in rest if e.src in sm and e.dst in sm and _hand_written(e.src)]
            same = [e for e in mine if not e.dst.startswith(e.src + ".")] or mine
            shown += _cover(same, sub_succ, sm)
        found.append((comp, shown))
    return found


def upward(edges):
    """{(from layer, to layer): [edges]} of hand-written imports of a later layer."""
    out = defaultdict(list)
    for e in edges:
        if e.exempt or not _hand_written(e.src):
            continue
        a, b = L.layer_of(e.src), L.layer_of(e.dst)
        if a is not None and b is not None and b[0] > a[0]:
            out[(a[1], b[1])].append(e)
    return out


def unassigned(mods):
    return sorted(m for m in mods if L.layer_of(m) is None)


MAX_SHOWN = 12  # cycles shown per component


def report_cycles(found):
    parts = []
    for comp, shown in found:
        names = ", ".join(comp[:6]) + (f", ... ({len(comp)} in all)" if len(comp) > 6 else "")
        parts.append(f"import cycle among {len(comp)} modules: {names}")
        for cyc, es in shown[:MAX_SHOWN]:
            parts.append("  cycle: " + " -> ".join(cyc) + "\n  break it at:")
            parts.extend(_fmt(e) for e in _shown(es))
        if len(shown) > MAX_SHOWN:
            parts.append(f"  ... {len(shown) - MAX_SHOWN} more cycles in this component (they may "
                         "go away with the ones above; run `python tests/test_layers.py` again)")
    return "\n".join(parts)


def report_upward(found):
    parts = []
    for (a, b), es in sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        es = _shown(es)
        parts.append(f"upward: layer '{a}' imports layer '{b}' ({len(es)})")
        parts.extend(_fmt(e) for e in es)
    return "\n".join(parts)


HOW = ("\nThe layer order is in ember/_layers.py. Move the code to its layer, pass it down as a "
       "hook registered from above, or, for an import inside a function that must stay lazy, say "
       "why on its line: `# lazy: <why>`.")


def test_every_module_has_a_layer():
    mods, _ = build_graph()
    missing = unassigned(mods)
    assert not missing, "modules no layer in ember/_layers.py names:\n  " + "\n  ".join(missing)


def test_every_layer_entry_names_modules():
    mods = find_modules()
    stale = [p for _, ps in L.LAYERS for p in ps if p != L.OP_NAMESPACE
             and not any(L._matches(p, m) for m in mods)]
    assert not stale, f"ember/_layers.py names modules that do not exist: {stale}"


def test_layer_table_orders_known_modules():
    # a few fixed points of DESIGN's order, so that an edit of the table cannot invert it
    order = ["ember.core.keys", "ember.dispatch.operator", "ember.cuda.streams",
             "ember.kernels.meta.pointwise", "ember.kernels.cpu.pointwise",
             "ember.kernels.composite_shape", "ember.autograd.engine", "ember.amp.autocast_mode",
             "ember.tensor", "ember.nn.modules.linear"]
    ranks = [L.layer_of(m)[0] for m in order]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks), list(zip(order, ranks))


def test_no_import_cycles():
    _, edges = build_graph()
    found = cycles(edges)
    if found:
        pytest.fail(f"{len(found)} import cycle(s) in hand-written code:\n" + report_cycles(found)
                    + HOW, pytrace=False)


def test_no_upward_imports():
    _, edges = build_graph()
    found = upward(edges)
    n = sum(len(_shown(v)) for v in found.values())
    if found:
        pytest.fail(f"{n} upward import(s) in hand-written code:\n" + report_upward(found) + HOW,
                    pytrace=False)


def test_graph_reader_sees_each_kind_of_import(tmp_path):
    # the reader itself: relative imports, function-level imports, the `# lazy:` exemption,
    # implicit package imports and the late-bound `import ember`
    src = ("import ember\nfrom ember.core import dtype\nfrom . import sibling\n"
           "def f():\n    from ember.autograd.graph import Node\n"
           "    from ember.nn import functional  # lazy: only f needs it\n")
    mods = {"ember.kernels.cpu.x": (None, False), "ember.kernels.cpu.sibling": (None, False),
            "ember.core.dtype": (None, False), "ember.autograd.graph": (None, False),
            "ember.autograd": (None, True), "ember.nn.functional": (None, False),
            "ember.core": (None, True), "ember.nn": (None, True)}
    c = _Collector("ember.kernels.cpu.x", False, mods, src.splitlines(), None)
    c.visit(ast.parse(src))
    assert c.found == [(L.OP_NAMESPACE, 1, False, False), ("ember.core.dtype", 2, False, False),
                       ("ember.kernels.cpu.sibling", 3, False, False),
                       ("ember.autograd.graph", 5, True, False),
                       ("ember.nn.functional", 6, True, True)]


if __name__ == "__main__":
    _mods, _edges = build_graph()
    _c, _u = cycles(_edges), upward(_edges)
    print(report_cycles(_c) or "no import cycles")
    print()
    print(report_upward(_u) or "no upward imports")
    print()
    print("unassigned:", unassigned(_mods) or "none")
    print(f"\n{len(_c)} cycle(s), {sum(len(_shown(v)) for v in _u.values())} upward import(s)")
