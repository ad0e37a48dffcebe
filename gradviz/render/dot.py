"""DOT text for a Graph: a readable picture for Graphviz, and the bare skeleton the layout uses.

``graph_to_dot(graph)`` gives boxes coloured by kind, labelled with the lines the widget draws
(``render/node_text.py``), in the forward direction (leaves at the top, the output at the
bottom), ready for ``dot -Tsvg``.
``layout_source`` gives the same graph with fixed box sizes and no labels, so ``dot`` only
decides positions and never sees user text.
"""
from __future__ import annotations

from gradviz.render.node_text import node_lines
from gradviz.snapshot.model import Graph

# Okabe-Ito colours (safe for the common colour-vision deficiencies), light tints for fills.
KIND_STYLE = {
    "output": {"fillcolor": "#b9e0d5", "style": "filled,bold"},
    "function": {"fillcolor": "#cfe3f3", "style": "filled"},
    "accumulate": {"fillcolor": "#e3e3e3", "style": "filled"},
    "leaf": {"fillcolor": "#fbe6bf", "style": "filled"},
    "constant": {"fillcolor": "#ffffff", "style": "dashed"},
}


MAX_DOT_TEXT = 2000  # characters: escaped, in UTF-8, well inside Graphviz's 16,384-byte strings
_CONTROL_PICTURES = {code: 0x2400 + code for code in range(0x20) if code not in (0x0A, 0x0D)} | {0x7F: 0x2421}


def quote(text: str) -> str:
    """A DOT double-quoted string that Graphviz always accepts, whatever the label holds.

    Backslashes and quotes escaped, newlines kept as ``\\n``; other control characters (NUL would
    end the string) drawn as their Unicode pictures (``\u2400`` for NUL); text that is not valid
    UTF-8 (a lone surrogate) replaced; and a label longer than ``MAX_DOT_TEXT`` cut with an ellipsis.
    """
    text = str(text).encode("utf-8", "replace").decode("utf-8").translate(_CONTROL_PICTURES)
    if len(text) > MAX_DOT_TEXT:
        text = text[:MAX_DOT_TEXT - 1] + "\u2026"
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def graph_to_dot(graph: Graph, show_saved: bool = False) -> str:
    """The graph as DOT source, every label quoted for DOT.

    Each label is the node's lines from ``node_lines``, the text the widget draws, in full;
    saved-tensor lines only with ``show_saved``, as in the widget.
    """
    lines = [
        "digraph gradviz {",
        '  graph [rankdir=TB, ordering=in, fontsize=12];',
        '  node [shape=box, fontname="monospace", fontsize=11, style=filled];',
    ]
    for node in graph.nodes:
        style = KIND_STYLE.get(node.kind, KIND_STYLE["function"])
        label = quote("\n".join(line["text"] for line in node_lines(node)
                                 if show_saved or line["cls"] != "gv-saved"))
        lines.append(f"  {quote(node.id)} [label={label}, style={quote(style['style'])}, "
                     f"fillcolor={quote(style['fillcolor'])}];")
    for edge in graph.edges:
        lines.append(f"  {quote(edge.source)} -> {quote(edge.target)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def layout_source(graph: Graph, sizes: dict, clusters: list = (), order_edges: list = ()) -> str:
    """Label-free DOT with each node's box fixed to ``sizes[id] = (width_px, height_px)``.

    ``clusters``: ``(margin_px, node ids, child clusters)`` trees; dot keeps every cluster's
    nodes together, nested clusters inside their parents, and any other node outside.
    ``order_edges``: ``(above, below)`` id pairs, written as invisible edges: ranks only.
    """
    lines = [
        "digraph layout {",
        "  graph [rankdir=TB, ordering=in, nodesep=0.3, ranksep=0.45];",
        '  node [shape=box, fixedsize=true, label=""];',
    ]
    for node in graph.nodes:
        width, height = sizes[node.id]
        lines.append(f"  {quote(node.id)} [width={width / 72:.3f}, height={height / 72:.3f}];")
    pending = [(cluster, 1) for cluster in reversed(clusters)]  # depth first, without recursion
    count = 0
    while pending:
        item, depth = pending.pop()
        if item is None:
            lines.append("  " * depth + "}")
            continue
        margin, members, children = item
        lines.append("  " * depth + f"subgraph cluster_{count} {{ margin={margin};")
        count += 1
        lines.extend("  " * (depth + 1) + f"{quote(member)};" for member in members)
        pending.append((None, depth))
        pending.extend((child, depth + 1) for child in reversed(children))
    for edge in graph.edges:
        lines.append(f"  {quote(edge.source)} -> {quote(edge.target)};")
    for above, below in order_edges:
        lines.append(f"  {quote(above)} -> {quote(below)} [style=invis];")
    lines.append("}")
    return "\n".join(lines) + "\n"
