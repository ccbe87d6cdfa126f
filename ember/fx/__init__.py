"""``ember.fx``: the graph IR, as ``torch.fx``.

``symbolic_trace(module)`` runs forward on Proxies and returns a ``GraphModule``: a Module
whose ``graph`` (placeholder, get_attr, call_function, call_method, call_module and output
nodes) is editable and whose ``forward`` is Python generated from it (``gm.code``).
``Interpreter``/``Transformer`` run or rewrite graphs node by node, ``replace_pattern``
rewrites subgraphs, and ``passes.shape_prop.ShapeProp`` records each node's tensor metadata —
the layer that tracing, export and compilation build on."""
from .graph import Graph, CodeGen, PythonCode  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from .node import Node, map_arg, has_side_effect  # noqa: F401
from .proxy import Proxy, Attribute, TraceError, TracerBase, GraphAppendingTracer  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap, PH, ProxyableClassMeta  # noqa: F401
from .interpreter import Interpreter, Transformer  # noqa: F401
from .subgraph_rewriter import replace_pattern  # noqa: F401
from . import passes  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Node", "Proxy",
           "Interpreter", "Transformer", "replace_pattern", "map_arg", "has_side_effect",
           "PH", "ProxyableClassMeta", "CodeGen", "PythonCode"]
