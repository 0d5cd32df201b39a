"""ember.viz: pictures of the stack, drawn from measured runs (the optional `viz` extra:
pip install ember[viz], i.e. matplotlib and graphviz).

- make_dot(var, params=None, show_attrs=False, show_saved=False): torchviz's autograd graph, a
  graphviz.Digraph.
- dispatcher_trace_plot(fn), autograd_graph_plot(expr_fn), python_tax_timeline(fn),
  overhead_curve(op): the articles' four widgets as matplotlib figures, written to SVG or PNG.

graphviz and matplotlib are imported when a picture is made, not by `import ember.viz`.
"""
from ember.viz.dot import make_dot, make_dot_from_trace, resize_graph
from ember.viz.widgets import autograd_graph_plot, dispatcher_trace_plot, overhead_curve, python_tax_timeline

__all__ = ["make_dot", "make_dot_from_trace", "resize_graph", "dispatcher_trace_plot", "autograd_graph_plot",
           "python_tax_timeline", "overhead_curve"]
