"""Helpers for the ember.viz tests: a graphviz Digraph as a labelled graph, compared up to node ids."""
import hashlib
import re
from collections import Counter

_NODE = re.compile(r"^\t(\"(?:[^\"\\]|\\.)*\"|\S+) \[(.*)\]\n?$", re.S)
_EDGE = re.compile(r"^\t(\"(?:[^\"\\]|\\.)*\"|\S+) -> (\"(?:[^\"\\]|\\.)*\"|\S+)(?: \[(.*)\])?\n?$", re.S)
_ATTR = re.compile(r"(\w+)=(\"(?:[^\"\\]|\\.)*\"|[^\s\]]+)", re.S)


def _unquote(s):
    return s[1:-1].replace('\\"', '"') if s.startswith('"') else s


def _attrs(text):
    return {k: _unquote(v) for k, v in _ATTR.findall(text or "")}


def parse(dot):
    """(nodes: id -> attrs, the later statement's attributes winning as in graphviz; edges: a list of
    (src, dst, attrs)) from a Digraph's body."""
    nodes, edges = {}, []
    for line in dot.body:
        m = _EDGE.match(line)
        if m:
            a, b, rest = m.groups()
            edges.append((_unquote(a), _unquote(b), tuple(sorted(_attrs(rest).items()))))
            nodes.setdefault(_unquote(a), {})
            nodes.setdefault(_unquote(b), {})
            continue
        m = _NODE.match(line)
        assert m, f"unparsed body line {line!r}"
        nodes.setdefault(_unquote(m.group(1)), {}).update(_attrs(m.group(2)))
    return nodes, edges


def _h(x):
    return hashlib.sha1(repr(x).encode()).hexdigest()[:16]


def canonical(dot, rounds=6):
    """The graph up to node ids: the multiset of node colours after Weisfeiler-Lehman refinement
    (start: label and fill colour; each round adds the sorted in- and out-edges with their attributes
    and the neighbours' colours), and the multiset of edges between coloured nodes."""
    nodes, edges = parse(dot)
    color = {n: _h((a.get("label", ""), a.get("fillcolor", ""))) for n, a in nodes.items()}
    for _ in range(rounds):
        out = {n: [] for n in nodes}
        inc = {n: [] for n in nodes}
        for a, b, attrs in edges:
            out[a].append((attrs, color[b]))
            inc[b].append((attrs, color[a]))
        color = {n: _h((color[n], sorted(out[n]), sorted(inc[n]))) for n in nodes}
    return Counter(color.values()), Counter((color[a], color[b], attrs) for a, b, attrs in edges)


def labelled(dot):
    """Readable form for failure messages: node (label, fillcolor) multiset and labelled edges."""
    nodes, edges = parse(dot)

    def name(n):
        return (nodes[n].get("label", ""), nodes[n].get("fillcolor", ""))
    return Counter(name(n) for n in nodes), Counter((name(a)[0], name(b)[0], attrs) for a, b, attrs in edges)


def assert_same_graph(e_dot, t_dot):
    el, tl = labelled(e_dot), labelled(t_dot)
    assert el[0] == tl[0], f"nodes differ:\nember only {el[0] - tl[0]}\ntorch only {tl[0] - el[0]}"
    assert el[1] == tl[1], f"edges differ:\nember only {el[1] - tl[1]}\ntorch only {tl[1] - el[1]}"
    assert canonical(e_dot) == canonical(t_dot)
    assert dict(e_dot.node_attr) == dict(t_dot.node_attr)
    assert dict(e_dot.graph_attr) == dict(t_dot.graph_attr)
