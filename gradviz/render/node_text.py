"""The text inside a node's box, decided once, here.

``node_lines`` is the one rule for what a node says. It gives the DOT label (``render/dot.py``),
the box size the layout reserves (``node_size``), and the lines the widget draws, which are
shipped in the layout JSON already cut to fit their box (``with_node_text``), so the browser
holds no label rule and no font metric of its own.

A line is ``{"text", "cls"}``; ``cls`` is the widget's CSS class for it:

* ``gv-title``: the grad_fn name, or the tensor's label;
* ``gv-sub``: the variable holding a function's output (with its value), its module, a shape;
* ``gv-value``: a tensor's values;
* ``gv-grad``: a leaf's ``.grad`` (the widget rewrites it as the steps fill ``.grad``);
* ``gv-saved``: the tensors a function saved for backward, freed ones marked; drawn only while
  the widget's ``show_saved`` is on.

Shipped lines (``fitted_lines``) also carry ``title``, the full text, when the line was cut, and a
``gv-grad`` line carries ``max``, the characters its box holds, for the rewritten text.
"""
from __future__ import annotations

import math

from gradviz.snapshot.model import Graph, GraphNode

CHAR_WIDTH = 7.2        # px per character of the 12px monospace font the widget draws in
LINE_HEIGHT = 16        # px per text line
PADDING_X = 16
PADDING_Y = 10
MAX_CHARS = 28          # a longer line makes no wider box: it is cut, its full text in the tooltip
MIN_WIDTH = 64
LEAF_MIN_CHARS = 14     # room for "grad: -0.1234" once .grad arrives
ELLIPSIS = "\u2026"
FREED_MARK = "\u2717"   # after the name of a saved tensor that backward() freed


def node_lines(node: GraphNode) -> list[dict]:
    """The lines a node shows, in full: its grad_fn name, or the tensor's label, shape and values."""
    if node.kind in ("function", "accumulate"):
        lines = [_line(node.name, "gv-title")]
        if node.label and node.label != node.name:  # the variable holding this node's output
            lines.append(_line(f"{node.label} = {node.value.preview}" if node.value else node.label, "gv-sub"))
        if node.module:
            lines.append(_line(node.module, "gv-sub"))
        if node.kind == "function" and node.saved:
            lines.append(_line(_saved_text(node.saved), "gv-saved"))
        return lines
    lines = [_line(node.label or node.name, "gv-title")]
    if node.shape:  # a 0-d tensor is a plain number: no shape line
        lines.append(_line(f"({', '.join(str(d) for d in node.shape)})", "gv-sub"))
    if node.value is not None:
        lines.append(_line(node.value.preview, "gv-value"))
    if node.kind == "leaf":
        lines.append(_line(f"grad: {node.grad.preview if node.grad is not None else 'None'}", "gv-grad"))
    return lines


def shared_lines(nodes) -> dict:
    """``{node id: node_lines(node)}``, one list shared by all the nodes whose lines are the same
    (a chain's 66,000 ``SinBackward0 / saved: self`` boxes), so that their sizes, their fitted
    text and their packed form (``gradviz.widget.wire``) are each made once. Lists are never
    changed in place."""
    known: dict = {}
    by_fields: dict = {}  # what node_lines reads of a node -> its shared list
    lines = {}
    for node in nodes:
        fields = _line_fields(node)
        own = by_fields.get(fields)
        if own is None:
            own = node_lines(node)
            own = by_fields[fields] = known.setdefault(tuple(tuple(line.values()) for line in own), own)
        lines[node.id] = own
    return lines


def _line_fields(node: GraphNode) -> tuple:
    """Everything ``node_lines`` reads of ``node``: nodes equal here have equal lines."""
    if node.kind in ("function", "accumulate"):
        return (node.kind, node.name, node.label, node.value.preview if node.value else None, node.module,
                tuple([(item.name, item.freed) for item in node.saved]) if node.saved else ())
    return (node.kind, node.name, node.label, node.shape, None if node.value is None else node.value.preview,
            None if node.grad is None else node.grad.preview)


def _line(text: str, cls: str) -> dict:
    return {"text": text, "cls": cls}


def _saved_text(saved: tuple) -> str:
    """``saved: self, other``; once backward() freed them, ``saved: self ✗, other ✗ (freed)``."""
    names = ", ".join(f"{item.name} {FREED_MARK}" if item.freed else item.name for item in saved)
    return f"saved: {names}{' (freed)' if any(item.freed for item in saved) else ''}"


def node_size(node: GraphNode, lines: list | None = None) -> tuple[float, float]:
    """Box size in px: wide enough for the longest line (up to ``MAX_CHARS``), one row per line;
    ``lines`` are ``node_lines(node)`` when the caller has them already."""
    lines = node_lines(node) if lines is None else lines
    longest = min(max([len(line["text"]) for line in lines]), MAX_CHARS)
    if node.kind == "leaf":
        longest = max(longest, LEAF_MIN_CHARS)
    width = max(MIN_WIDTH, round(longest * CHAR_WIDTH + PADDING_X))
    height = len(lines) * LINE_HEIGHT + PADDING_Y
    return width, height


def chars_fitting(width: float) -> int:
    """How many characters a box ``width`` px wide holds (at least 4)."""
    return max(4, math.floor((width - PADDING_X) / CHAR_WIDTH + 0.5))


def cut(text: str, limit: int) -> str:
    """``text`` shortened to ``limit`` characters, the last one an ellipsis, when it is longer."""
    if len(text) <= limit:
        return text
    cut = text[:max(1, limit - 1)].rstrip(", ")  # a preview's own "…" is not doubled: "[1., 2., …" not "…, …"
    return cut if cut.endswith(ELLIPSIS) else cut + ELLIPSIS


def fitted_lines(node: GraphNode, width: float, lines: list | None = None) -> list[dict]:
    """The node's lines (``lines``, else ``node_lines(node)``) as the widget draws them in a box
    ``width`` px wide."""
    limit = chars_fitting(width)
    shipped = []
    for line in node_lines(node) if lines is None else lines:
        text, cls = line["text"], line["cls"]
        if len(text) <= limit and cls != "gv-grad":  # most lines: shipped as they are
            shipped.append(line)
            continue
        item = {"text": cut(text, limit), "cls": cls}
        if item["text"] != text:
            item["title"] = text
        if cls == "gv-grad":
            item["max"] = limit
        shipped.append(item)
    return shipped


def with_node_text(layout: dict, graph: Graph, lines: dict | None = None) -> dict:
    """``layout`` with ``text: {node id: fitted lines}`` for ``graph``'s current values, and the
    ``line_height`` they are drawn at. Positions are kept, so a refresh after ``backward()``
    re-cuts new values into the boxes the layout already has. ``lines``: ``{id: node_lines}``
    when the caller made them already.
    """
    positions = layout["nodes"]
    lines = lines or shared_lines(graph.nodes)
    fitted: dict = {}  # (id(lines), width) -> shipped lines: shared lines are fitted once per width
    text = {}
    for node in graph.nodes:
        box = positions.get(node.id)
        if box is None:
            continue
        own = lines[node.id]
        key = (id(own), box[2])
        shipped = fitted.get(key)
        if shipped is None:
            shipped = fitted[key] = fitted_lines(node, box[2], own)
        text[node.id] = shipped
    return {**layout, "text": text, "line_height": LINE_HEIGHT}
