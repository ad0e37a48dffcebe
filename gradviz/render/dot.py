"""DOT text for a Graph: a readable picture for Graphviz, and the bare skeleton the layout uses.

``graph_to_dot(graph)`` gives labelled boxes coloured by kind, in the forward direction (leaves
at the top, the output at the bottom), ready for ``dot -Tsvg``.
``layout_source`` gives the same graph with fixed box sizes and no labels, so ``dot`` only
decides positions and never sees user text.
"""
from __future__ import annotations

from gradviz.snapshot.model import Graph, GraphNode

# Okabe-Ito colours (safe for the common colour-vision deficiencies), light tints for fills.
KIND_STYLE = {
    "output": {"fillcolor": "#b9e0d5", "style": "filled,bold"},
    "function": {"fillcolor": "#cfe3f3", "style": "filled"},
    "accumulate": {"fillcolor": "#e3e3e3", "style": "filled"},
    "leaf": {"fillcolor": "#fbe6bf", "style": "filled"},
    "constant": {"fillcolor": "#ffffff", "style": "dashed"},
}


def quote(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines kept as ``\\n``."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def node_text(node: GraphNode) -> list[str]:
    """The lines a node shows: its grad_fn name, or the tensor's label, shape and values."""
    if node.kind in ("function", "accumulate"):
        lines = [node.name]
        if node.label and node.label != node.name:  # the variable holding this node's output
            lines.append(f"{node.label} = {node.value.preview}" if node.value else node.label)
        if node.module:
            lines.append(node.module)
        return lines
    lines = [node.label or node.name]
    if node.shape:  # a 0-d tensor is a plain number: no shape line
        lines.append(f"({', '.join(str(d) for d in node.shape)})")
    if node.value is not None:
        lines.append(node.value.preview)
    if node.kind == "leaf":
        lines.append(f"grad: {node.grad.preview if node.grad is not None else 'None'}")
    return lines


def graph_to_dot(graph: Graph) -> str:
    """The graph as DOT source, every label quoted for DOT."""
    lines = [
        "digraph gradviz {",
        '  graph [rankdir=TB, ordering=in, fontsize=12];',
        '  node [shape=box, fontname="monospace", fontsize=11, style=filled];',
    ]
    for node in graph.nodes:
        style = KIND_STYLE.get(node.kind, KIND_STYLE["function"])
        label = quote("\n".join(node_text(node)))
        lines.append(f"  {quote(node.id)} [label={label}, style={quote(style['style'])}, "
                     f"fillcolor={quote(style['fillcolor'])}];")
    for edge in graph.edges:
        lines.append(f"  {quote(edge.source)} -> {quote(edge.target)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def layout_source(graph: Graph, sizes: dict) -> str:
    """Label-free DOT with each node's box fixed to ``sizes[id] = (width_px, height_px)``."""
    lines = [
        "digraph layout {",
        "  graph [rankdir=TB, ordering=in, nodesep=0.3, ranksep=0.45];",
        '  node [shape=box, fixedsize=true, label=""];',
    ]
    for node in graph.nodes:
        width, height = sizes[node.id]
        lines.append(f"  {quote(node.id)} [width={width / 72:.3f}, height={height / 72:.3f}];")
    for edge in graph.edges:
        lines.append(f"  {quote(edge.source)} -> {quote(edge.target)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
