"""ember.fx Graph, Node, GraphModule, Interpreter, Transformer and dead-code elimination, against torch.fx.

Each program builds the same graph with both libraries' APIs; names, ops, targets, printed graphs and
generated code must match (ember's code says `ember.` where torch's says `torch.`), and running the
GraphModule must equal running the program eagerly.
"""
import copy
import operator

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx
from harness import check, same_error


def close(a, b):
    """Two ember tensors hold the same values (an ember-only comparison)."""
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def norm(s):
    return s.replace("ember.", "torch.")


def build_basic(lib):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=2)
    a = g.call_function(operator.add, (x, y))
    r = g.call_function(lib.relu, (a,))
    s = g.call_method("sum", (r,), {"dim": 1, "keepdim": True})
    m = g.call_function(operator.mul, (s, 3))
    v = g.call_method("view", (m, -1))
    g.output((v, [a, {"k": s}]))
    return g


def graph_summary(g):
    return [(n.op, n.name, n.target if isinstance(n.target, str) else norm(n._pretty_print_target(n.target)),
             len(n.users), [u.name for u in n.all_input_nodes]) for n in g.nodes]


def test_graph_build_print_and_code():
    tg, eg = build_basic(torch), build_basic(ember)
    assert graph_summary(eg) == graph_summary(tg)
    assert norm(str(eg)) == str(tg)
    tgm, egm = torch.fx.GraphModule(torch.nn.Module(), tg), ember.fx.GraphModule(ember.nn.Module(), eg)
    assert norm(egm.code) == tgm.code
    assert norm(eg.python_code("self").src) == tg.python_code("self").src
    assert norm(egm.print_readable(print_output=False)) == tgm.print_readable(print_output=False)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    tout, eout = tgm(torch.tensor(x)), egm(ember.tensor(x))
    check(eout[0], tout[0])
    check(eout[1][0], tout[1][0])
    check(eout[1][1]["k"], tout[1][1]["k"])
    check(egm(ember.tensor(x), 5)[0], tgm(torch.tensor(x), 5)[0])


def test_names_are_deduplicated_like_torch():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.add, (x, 1))
        b = g.call_function(operator.add, (a, 1))
        c = g.call_method("sum", (b,))
        d = g.call_method("sum", (c,))
        e = g.call_function(lib.relu, (d,), name="relu_1")
        f = g.call_function(lib.relu, (e,))
        h = g.create_node("call_function", operator.getitem, (x, 0), name="list")   # a builtin's name
        i = g.call_function(getattr, (x, "shape"))
        g.output((f, h, i))
        return g
    tg, eg = build(torch), build(ember)
    assert [n.name for n in eg.nodes] == [n.name for n in tg.nodes]
    assert norm(ember.fx.GraphModule({}, eg).code) == torch.fx.GraphModule({}, tg).code


def test_node_api():
    def run(lib):
        g = build_basic(lib)
        nodes = list(g.nodes)
        x, y, a, r, s, m, v, out = nodes
        out_rows = [len(g.nodes), [n.name for n in a.users], a.all_input_nodes == [x, y], a.next is r, r.prev is a]
        # replace_all_uses_with: every user of `a` now reads `x`
        changed = a.replace_all_uses_with(x)
        out_rows.append(sorted(n.name for n in changed))
        out_rows.append([n.name for n in x.users])
        # insert a node before r, move it with append/prepend
        with g.inserting_before(r):
            neg = g.call_function(operator.neg, (x,))
        out_rows.append([n.name for n in g.nodes])
        m.append(neg)
        out_rows.append([n.name for n in g.nodes])
        with g.inserting_after(x):
            g.call_method("abs", (x,))
        out_rows.append([n.name for n in g.nodes])
        r.update_arg(0, neg)
        out_rows.append([n.name for n in r.all_input_nodes])
        r.update_kwarg("k", 1)
        out_rows.append(dict(r.kwargs))
        return out_rows
    # neg after m is used by r before it: only order checks, no lint here
    assert run(ember) == run(torch)


def test_erase_node_and_errors():
    for lib in (torch, ember):
        g = build_basic(lib)
        a = [n for n in g.nodes if n.name == "add"][0]
        with pytest.raises(RuntimeError) as e:
            g.erase_node(a)
        assert str(e.value).startswith("Tried to erase Node add but it still had 2 users in the graph")

    def erase_wrong_graph(lib):
        g1, g2 = build_basic(lib), build_basic(lib)
        out = list(g1.nodes)[-1]
        g2.erase_node(out)
    same_error(erase_wrong_graph)


def test_lint_errors():
    def used_before_defined(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.add, (x, 1))
        b = g.call_function(operator.neg, (a,))
        g.output(b)
        a.prepend(b)
        g.lint()
    same_error(used_before_defined)

    def foreign_node(lib):
        g1, g2 = lib.fx.Graph(), lib.fx.Graph()
        x1 = g1.placeholder("x")
        x2 = g2.placeholder("x")
        g2.output(g2.call_function(operator.add, (x2, x1)))
        g2.lint()
    same_error(foreign_node)

    def missing_attr(lib):
        g = lib.fx.Graph()
        g.output(g.get_attr("nope"))
        lib.fx.GraphModule(lib.nn.Module(), g).graph.lint()
    same_error(missing_attr)


def test_graph_module_errors_and_root_dict():
    def too_few(lib):
        lib.fx.GraphModule(lib.nn.Module(), build_basic(lib).__class__())  # empty graph: no forward args
        g = lib.fx.Graph()
        x, y = g.placeholder("x"), g.placeholder("y")
        g.output(g.call_function(operator.add, (x, y)))
        lib.fx.GraphModule(lib.nn.Module(), g)(lib.ones(2))
    same_error(too_few)

    def missing_target(lib):
        g = lib.fx.Graph()
        g.output(g.call_module("lin", (g.placeholder("x"),)))
        lib.fx.GraphModule({}, g)
    same_error(missing_target)

    def bad_root(lib):
        lib.fx.GraphModule(3, lib.fx.Graph())
    same_error(bad_root, match="Unsupported type 3 passed for root!")

    # a dict root: modules and tensors under dotted names
    lin = ember.nn.Linear(3, 2)
    g = ember.fx.Graph()
    x = g.placeholder("x")
    h = g.call_module("sub.lin", (x,))
    w = g.get_attr("consts.w")
    g.output(g.call_function(operator.add, (h, w)))
    w_t = ember.ones(2)
    gm = ember.fx.GraphModule({"sub.lin": lin, "consts.w": w_t}, g)
    assert gm.sub.lin is lin
    assert "w" in dict(gm.consts.named_buffers())
    xin = ember.randn(4, 3)
    close(gm(xin), lin(xin) + w_t)
    assert "sub_lin = self.sub.lin(x)" in gm.code
    assert "consts_w = self.consts.w" in gm.code


def test_recompile_after_edit_and_copies():
    g = build_basic(ember)
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is ember.relu:
            n.target = ember.sigmoid
    gm.recompile()
    assert "ember.sigmoid(add)" in gm.code
    x = ember.randn(2, 3)
    close(gm(x)[1][0], x + 2)
    close(gm(x)[0], ((x + 2).sigmoid().sum(1, keepdim=True) * 3).view(-1))
    gm2 = copy.deepcopy(gm)
    assert gm2.code == gm.code and gm2.graph is not gm.graph
    close(gm2(x)[0], gm(x)[0])
    g3 = copy.deepcopy(g)
    assert [n.name for n in g3.nodes] == [n.name for n in g.nodes]
    assert type(gm).__name__ == "GraphModule"
    other = ember.fx.GraphModule(ember.nn.Module(), build_basic(ember), class_name="Other")
    assert type(other).__name__ == "Other" and type(gm).__name__ == "GraphModule"
    assert type(gm) is not type(other)


def test_node_copy_and_graph_copy():
    def run(lib):
        g = build_basic(lib)
        g2 = lib.fx.Graph()
        val_map = {}
        out = g2.graph_copy(g, val_map)
        g2.output(out)
        g3 = lib.fx.Graph()
        env = {}
        for n in g.nodes:
            env[n] = g3.node_copy(n, lambda a: env[a])
        return [str(g2), str(g3), [n.name for n in val_map]]
    e, t = run(ember), run(torch)
    assert [norm(s) for s in e[:2]] == t[:2] and e[2] == t[2]


def _dce_graph(lib, inplace):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    g.call_function(operator.add, (x, 1))                       # dead
    dead2 = g.call_function(lib.relu, (x,))
    g.call_method("neg", (dead2,))                              # dead chain
    if inplace:
        g.call_function(lib.ops.aten.add_.Tensor, (x, 1))        # mutates: kept
        g.call_function(lib.ops.aten.rand.default, ([2],))       # random: kept
        g.call_function(lib.ops.aten.relu.default, (x,))         # dead aten op
        g.call_function(operator.setitem, (x, 0, 1.0))           # side effect: kept
    g.output(g.call_function(operator.mul, (x, 2)))
    return g


@pytest.mark.parametrize("inplace", [False, True])
def test_eliminate_dead_code(inplace):
    tg, eg = _dce_graph(torch, inplace), _dce_graph(ember, inplace)
    assert eg.eliminate_dead_code() == tg.eliminate_dead_code()
    assert [n.name for n in eg.nodes] == [n.name for n in tg.nodes]
    assert eg.eliminate_dead_code() is False
    assert tg.eliminate_dead_code() is False


def test_dce_keeps_impure_module_and_custom_predicate():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.call_function(operator.add, (x, 1))
    g.output(x)
    assert g.eliminate_dead_code(is_impure_node=lambda n: n.op != "call_function" or True) is False
    assert len(g.nodes) == 3
    assert g.eliminate_dead_code() is True
    assert len(g.nodes) == 2


# ---- Interpreter / Transformer -------------------------------------------------------------------
def _traced_model(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 4)

        def forward(self, x):
            return self.lin(x).sigmoid().neg() + lib.relu(x).sum()
    lib.manual_seed(0)
    return lib.fx.symbolic_trace(M())


def test_interpreter_runs_and_overrides():
    x = ember.randn(2, 3)
    gm = _traced_model(ember)
    close(ember.fx.Interpreter(gm).run(x), gm(x))

    class Swap(ember.fx.Interpreter):
        def call_method(self, target, args, kwargs):
            if target == "neg":
                return args[0].exp()
            return super().call_method(target, args, kwargs)

        def call_function(self, target, args, kwargs):
            if target is operator.add:
                return operator.sub(*args)
            return super().call_function(target, args, kwargs)
    lin = gm.lin
    close(Swap(gm).run(x), lin(x).sigmoid().exp() - ember.relu(x).sum())

    seen = []

    class Log(ember.fx.Interpreter):
        def run_node(self, n):
            seen.append(n.op)
            return super().run_node(n)
    Log(gm).run(x)
    assert seen == ["placeholder", "call_module", "call_method", "call_method", "call_function", "call_method",
                    "call_function", "output"]
    interp = ember.fx.Interpreter(gm)
    interp.env = {}
    n = list(gm.graph.nodes)[1]
    interp.env[list(gm.graph.nodes)[0]] = x
    args, kwargs = interp.fetch_args_kwargs_from_env(n)
    assert args[0] is x and kwargs == {}


def test_interpreter_errors():
    def missing_arg(lib):
        lib.fx.Interpreter(_traced_model(lib)).run()
    same_error(missing_arg)

    def bad_attr(lib):
        g = lib.fx.Graph()
        g.output(g.get_attr("w"))
        gm = lib.fx.GraphModule({"w": lib.ones(1)}, g)
        del gm.w
        lib.fx.Interpreter(gm).run()
    same_error(bad_attr)


def test_transformer():
    class NegSigmSwap(ember.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is ember.sigmoid:
                return ember.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                self_obj, *rest = args
                return self_obj.sigmoid(*rest, **kwargs)
            return super().call_method(target, args, kwargs)

    def fn(x):
        return ember.sigmoid(x).neg()
    gm = ember.fx.symbolic_trace(fn)
    new = NegSigmSwap(gm).transform()
    x = ember.randn(3, 4)
    close(new(x), ember.neg(x).sigmoid())
    assert isinstance(new, ember.fx.GraphModule)
    assert [n.op for n in new.graph.nodes] == ["placeholder", "call_function", "call_method", "output"]
    # the identity transform keeps the graph
    same = ember.fx.Transformer(_traced_model(ember)).transform()
    assert norm(same.code) == _traced_model(torch).code


def test_op_overload_targets_names_and_code():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.ops.aten.add.Tensor, (x, 1))
        b = g.call_function(lib.ops.aten.add.Tensor, (a, 1))
        c = g.call_function(lib.ops.aten.sum.dim_IntList, (b, [0]), {"keepdim": True})
        g.output(c)
        return g
    tg, eg = build(torch), build(ember)
    assert [n.name for n in eg.nodes] == [n.name for n in tg.nodes] == ["x", "add_tensor", "add_tensor_1",
                                                                       "sum_dim_int_list", "output"]
    assert norm(str(eg)) == str(tg)
    tgm, egm = torch.fx.GraphModule({}, tg), ember.fx.GraphModule({}, eg)
    assert norm(egm.code) == tgm.code
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(egm(ember.tensor(x)), tgm(torch.tensor(x)))
    check(ember.fx.Interpreter(egm).run(ember.tensor(x)), tgm(torch.tensor(x)))


def test_print_tabular_lists_every_node(capsys):
    build_basic(ember).print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert [line.split()[1] for line in out[2:]] == ["x", "y", "add", "relu", "sum_1", "mul", "view", "output"]


def test_str_of_graph_module():
    tgm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
    egm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.ReLU()))
    assert str(egm) == str(tgm)


def test_erased_node_state():
    def run(lib):
        g = build_basic(lib)
        v = [n for n in g.nodes if n.name == "view"][0]
        out = list(g.nodes)[-1]
        out.args = ((v,),)
        m = v.args[0]
        v.args = (v.args[0].args[0], -1)
        g.erase_node(m)
        return m.args, m.kwargs, len(g.nodes), [n.name for n in m.args if hasattr(n, "name")], list(m.users)
    e, t = run(ember), run(torch)
    assert e == t


def test_user_function_targets_become_globals():
    def run(lib):
        def inner(a):
            return a + 1
        g = lib.fx.Graph()
        x = g.placeholder("x")
        h = g.call_function(inner, (x,))
        g.output(g.call_function(lib.neg, (h,)))
        gm = lib.fx.GraphModule({}, g)
        return str(g), gm.code, gm(lib.ones(2)).tolist()
    e, t = run(ember), run(torch)
    assert (norm(e[0]), norm(e[1]), e[2]) == t


def test_find_nodes_and_default_insert_points():
    def run(lib):
        g = build_basic(lib)
        found = [n.name for n in g.find_nodes(op="call_method")]
        found_t = [n.name for n in g.find_nodes(op="call_function", target=operator.add)]
        with g.inserting_after():       # at the start of the graph
            g.placeholder("z")
        with g.inserting_before():      # at the end of the graph
            extra = g.call_function(operator.neg, (list(g.nodes)[0],))
        return found, found_t, [n.name for n in g.nodes], extra.name
    assert run(ember) == run(torch)
