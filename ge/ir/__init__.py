"""ge's intermediate representation."""
from .graph import Dim, Graph, Node, Shape, Value
from .printer import format_graph, format_node, format_value
from .verify import VerifyError, verify

__all__ = ["Dim", "Graph", "Node", "Shape", "Value", "format_graph", "format_node", "format_value",
           "VerifyError", "verify"]
