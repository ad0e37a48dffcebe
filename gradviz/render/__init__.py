"""Graph -> pictures: DOT text for Graphviz and node positions for the widget."""
from gradviz.render.dot import graph_to_dot
from gradviz.render.layout import compute_layout, dot_available

__all__ = ["graph_to_dot", "compute_layout", "dot_available"]
