"""Graph -> pictures: DOT text for Graphviz, node positions and node text for the widget."""
from gradviz.render.dot import graph_to_dot
from gradviz.render.layout import compute_layout, dot_available
from gradviz.render.node_text import node_lines, with_node_text

__all__ = ["graph_to_dot", "compute_layout", "dot_available", "node_lines", "with_node_text"]
