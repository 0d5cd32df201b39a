"""ember.fx (torch.fx): program capture and transformation.

Graph and Node hold a program as a list of operations; GraphModule turns a Graph back into an
nn.Module with readable generated code; Interpreter and Transformer run or rewrite it node by
node; symbolic_trace records a module's forward at the level of Python calls (modules, functions,
methods, operators), and ember.fx.experimental.proxy_tensor.make_fx records it at the level of
ATen op overloads through the Python dispatch key.
"""
from ember.fx.graph import CodeGen, Graph, PythonCode
from ember.fx.graph_module import GraphModule
from ember.fx.interpreter import Interpreter, Transformer
from ember.fx.node import Node, has_side_effect, map_arg
from ember.fx.proxy import Proxy
from ember.fx._symbolic_trace import PH, Tracer, symbolic_trace, wrap

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter", "Transformer", "Node",
           "Proxy", "map_arg", "has_side_effect", "CodeGen", "PythonCode", "PH"]
