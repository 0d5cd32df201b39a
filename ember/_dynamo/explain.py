"""explain(fn)(*args): what capture made of a call, with torch's ExplainOutput fields."""
import traceback

from ember._dynamo import eval_frame


class GraphCompileReason:
    """Why a graph ended (torch._dynamo.output_graph.GraphCompileReason)."""

    def __init__(self, reason, user_stack, graph_break=True):
        self.reason, self.user_stack, self.graph_break = reason, user_stack, graph_break

    def __repr__(self):
        return (f"GraphCompileReason(reason={self.reason!r}, user_stack={self.user_stack!r}, "
                f"graph_break={self.graph_break})")


class ExplainOutput:
    def __init__(self, graphs, graph_count, graph_break_count, break_reasons, op_count, ops_per_graph=None,
                 out_guards=None, compile_times=None):
        self.graphs = graphs
        self.graph_count = graph_count
        self.graph_break_count = graph_break_count
        self.break_reasons = break_reasons
        self.op_count = op_count
        self.ops_per_graph = ops_per_graph
        self.out_guards = out_guards
        self.compile_times = compile_times

    def __str__(self):
        out = (f"Graph Count: {self.graph_count}\nGraph Break Count: {self.graph_break_count}\n"
               f"Op Count: {self.op_count}\n")
        out += "Break Reasons:\n"
        for i, r in enumerate(self.break_reasons):
            out += f"  Break Reason {i + 1}:\n    Reason: {r.reason}\n    User Stack:\n"
            for fs in r.user_stack:
                out += f"      {fs}\n"
        if self.ops_per_graph is not None:
            out += "Ops per Graph:\n"
            for i, ops in enumerate(self.ops_per_graph):
                out += f"  Ops {i + 1}:\n"
                for op in ops:
                    out += f"    {op}\n"
        if self.out_guards is not None:
            out += "Out Guards:\n"
            for i, g in enumerate(self.out_guards):
                out += f"  Guard {i + 1}:\n    {g}\n"
        if self.compile_times is not None:
            out += f"Compile Times: {self.compile_times}\n"
        return out

    __repr__ = __str__


def _frame(where):
    fn, line, name = where
    import linecache  # lazy: source lines of break locations
    return traceback.FrameSummary(fn, line, name, line=linecache.getline(fn, line).strip())


def explain(f, *extra_args, **extra_kwargs):
    """`explain(fn)(*args, **kwargs)` -> ExplainOutput (the older `explain(fn, *args)` form works too)."""
    def inner(*args, **kwargs):
        eval_frame._explain_sink.append(True)
        try:
            cf = eval_frame.CompiledFunction(f, "eager")
            cf(*args, **kwargs)
        finally:
            eval_frame._explain_sink.pop()
        graphs, ops_per_graph, reasons = [], [], []
        for e in cf.entries:
            for seg in cf._segments(e.root, []):
                graphs.append(seg.gm)
                ops_per_graph.append([n.op for n in seg.nodes])
                b = seg.brk
                if b is not None:
                    reasons.append(GraphCompileReason(b.reason, [_frame(b.where)] if b.where else []))
        for reason, where in cf.break_reasons:
            reasons.append(GraphCompileReason(reason, [_frame(where)] if where else []))
        guards = [d for e in cf.entries for d in e.guard_descr]
        times = "TorchDynamo compilation metrics:\nFunction, Runtimes (s)\n_compile.compile_inner, " + \
            ", ".join(f"{t:.4f}" for t in cf.compile_times)
        return ExplainOutput(graphs, len(graphs), len(reasons), reasons,
                             sum(len(o) for o in ops_per_graph), ops_per_graph, guards, times)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
