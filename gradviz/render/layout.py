"""Node positions for a Graph, computed once in Python and shipped to the front end.

Two engines give the same JSON, so the widget draws identical SVG (and identical test hooks)
either way:

* ``dot``: Graphviz's ``dot -Tplain`` when the executable is on PATH (and the graph is not too
  big for it to finish quickly);
* ``layered``: a built-in layered (Sugiyama-style) layout in plain Python for when ``dot`` is
  missing: longest-path layers, barycentre ordering, then x positions pulled toward neighbours.
  Every pass is a loop over lists, never recursion, so 5,000+ nodes lay out in well under a second.

Forward direction: leaves at the top, the output at the bottom. JSON shape::

    {"engine": "dot" | "layered", "width": px, "height": px,
     "nodes": {id: [center_x, center_y, width, height]},
     "edges": [[x0, y0, x1, y1, ...] | null],   # per graph edge: cubic Bezier points, or null
     "groups": [{"id", "label", "members": [id, ...], "box": [x, y, w, h]}]}  # big graphs only
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
from collections import defaultdict

from gradviz.graph.model import Graph
from gradviz.render.dot import layout_source, node_text

CHAR_WIDTH = 7.2        # px per character of the 12px monospace font the widget uses
LINE_HEIGHT = 16        # px per text line
PADDING_X = 16
PADDING_Y = 10
MAX_CHARS = 28          # longer lines are cut with an ellipsis (full text in the tooltip)
MIN_WIDTH = 64
LEAF_MIN_CHARS = 14
LAYER_GAP = 36          # vertical space between layers
NODE_GAP = 20           # horizontal space between neighbours in a layer
MARGIN = 16
DOT_MAX_NODES = 1500    # above this, dot takes seconds; the built-in layout takes milliseconds
DOT_TIMEOUT_S = 20
GROUP_ABOVE = 2000      # graphs bigger than this are drawn with collapsed groups
GROUP_LAYERS = 12       # layers per collapsed group when no module names are known


def node_size(node) -> tuple[float, float]:
    """Box size in px for a node, from the lines the widget will draw in it."""
    lines = node_text(node)
    if node.kind == "function" and node.saved:
        lines = lines + ["saved: " + ", ".join(s.name for s in node.saved)]
    longest = min(max(len(line) for line in lines), MAX_CHARS)
    if node.kind == "leaf":
        longest = max(longest, LEAF_MIN_CHARS)  # room for "grad: -0.1234" once .grad arrives
    width = max(MIN_WIDTH, round(longest * CHAR_WIDTH + PADDING_X))
    height = len(lines) * LINE_HEIGHT + PADDING_Y
    return width, height


def dot_available() -> bool:
    return shutil.which("dot") is not None


def compute_layout(graph: Graph, engine: str = "auto") -> dict:
    """Positions for every node of ``graph``; ``engine`` is ``"auto"``, ``"dot"`` or ``"layered"``.

    ``auto`` uses dot when it is installed and the graph has at most ``DOT_MAX_NODES`` nodes,
    and falls back to the layered layout if dot fails or times out.
    """
    sizes = {node.id: node_size(node) for node in graph.nodes}
    result = None
    if engine == "dot" or (engine == "auto" and dot_available() and len(graph.nodes) <= DOT_MAX_NODES):
        result = _dot_layout(graph, sizes, strict=engine == "dot")
    if result is None:
        result = _layered_layout(graph, sizes)
    result["groups"] = _groups(graph, result) if len(graph.nodes) > GROUP_ABOVE else []
    return result


def _dot_layout(graph: Graph, sizes: dict, strict: bool) -> dict | None:
    """Run ``dot -Tplain`` and read positions back; None (or an error when strict) on failure."""
    try:
        completed = subprocess.run(
            ["dot", "-Tplain"], input=layout_source(graph, sizes), capture_output=True,
            text=True, timeout=DOT_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError):
        if strict:
            raise
        return None
    return _parse_plain(completed.stdout, graph)


def _parse_plain(text: str, graph: Graph) -> dict:
    """Read Graphviz's ``plain`` output (inches, y up) into px with y down."""
    scale = 72.0
    nodes, edge_points = {}, defaultdict(list)
    height_in = 0.0
    width_in = 0.0
    for line in text.splitlines():
        fields = shlex.split(line)
        if not fields:
            continue
        if fields[0] == "graph":
            width_in, height_in = float(fields[2]), float(fields[3])
        elif fields[0] == "node":
            x, y, w, h = (float(v) for v in fields[2:6])
            nodes[fields[1]] = [round((x + 0.25) * scale, 1), round((height_in - y + 0.25) * scale, 1),
                                round(w * scale, 1), round(h * scale, 1)]
        elif fields[0] == "edge":
            count = int(fields[3])
            coords = [float(v) for v in fields[4:4 + 2 * count]]
            points = []
            for i in range(0, len(coords), 2):
                points += [round((coords[i] + 0.25) * scale, 1),
                           round((height_in - coords[i + 1] + 0.25) * scale, 1)]
            edge_points[(fields[1], fields[2])].append(points)
    edges = []
    for edge in graph.edges:
        candidates = edge_points.get((edge.source, edge.target))
        edges.append(candidates.pop(0) if candidates else None)
    return {"engine": "dot", "width": round((width_in + 0.5) * scale), "height": round((height_in + 0.5) * scale),
            "nodes": nodes, "edges": edges}


def _layered_layout(graph: Graph, sizes: dict) -> dict:
    ids = [node.id for node in graph.nodes]
    successors, predecessors = defaultdict(list), defaultdict(list)
    for edge in graph.edges:
        successors[edge.source].append(edge.target)
        predecessors[edge.target].append(edge.source)

    layers = _assign_layers(ids, successors, predecessors)
    _order_layers(layers, successors, predecessors)
    positions, width, height = _place(layers, sizes, successors, predecessors)
    return {"engine": "layered", "width": width, "height": height, "nodes": positions,
            "edges": [None] * len(graph.edges)}


def _assign_layers(ids, successors, predecessors) -> list[list[str]]:
    """Layer = longest distance *down* to a sink, flipped, so each input sits just above its consumer.

    Kahn's algorithm from the sinks (the output) upwards; a node left over by a cycle (never seen
    in autograd graphs) joins the top layer rather than being lost.
    """
    remaining = {node_id: len(successors[node_id]) for node_id in ids}
    depth = {node_id: 0 for node_id in ids}
    queue = [node_id for node_id in ids if remaining[node_id] == 0]
    head = 0
    while head < len(queue):
        node_id = queue[head]
        head += 1
        for parent in predecessors[node_id]:
            depth[parent] = max(depth[parent], depth[node_id] + 1)
            remaining[parent] -= 1
            if remaining[parent] == 0:
                queue.append(parent)
    deepest = max(depth.values(), default=0)
    seen = set(queue)
    layers = [[] for _ in range(deepest + 1)]
    for node_id in ids:
        layer = deepest - depth[node_id] if node_id in seen else 0
        layers[layer].append(node_id)
    return layers


def _order_layers(layers, successors, predecessors, sweeps: int = 6) -> None:
    """Reduce crossings: sort each layer by the mean position of its neighbours, down then up."""
    position = {}
    for layer in layers:
        for index, node_id in enumerate(layer):
            position[node_id] = index
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        order = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for layer_index in order:
            layer = layers[layer_index]
            neighbours = predecessors if downward else successors
            keys = {}
            for node_id in layer:
                linked = [position[other] for other in neighbours[node_id]]
                keys[node_id] = sum(linked) / len(linked) if linked else position[node_id]
            layer.sort(key=lambda node_id: keys[node_id])
            for index, node_id in enumerate(layer):
                position[node_id] = index


def _place(layers, sizes, successors, predecessors):
    """x by pulling each node toward the mean of its neighbours, keeping order and gaps; y by layer."""
    x = {}
    for layer in layers:
        cursor = 0.0
        for node_id in layer:
            width = sizes[node_id][0]
            x[node_id] = cursor + width / 2
            cursor += width + NODE_GAP
    for sweep in range(8):
        downward = sweep % 2 == 0
        order = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for layer_index in order:
            layer = layers[layer_index]
            wanted = []
            for node_id in layer:
                linked = [x[other] for other in predecessors[node_id]]
                linked += [x[other] for other in successors[node_id]]
                wanted.append(sum(linked) / len(linked) if linked else x[node_id])
            gaps = [(sizes[a][0] + sizes[b][0]) / 2 + NODE_GAP for a, b in zip(layer, layer[1:])]
            for node_id, value in zip(layer, closest_spaced(wanted, gaps)):
                x[node_id] = value

    left = min((x[n] - sizes[n][0] / 2 for n in x), default=0.0)
    positions, y, right = {}, MARGIN, 0.0
    for layer in layers:
        layer_height = max((sizes[n][1] for n in layer), default=0)
        for node_id in layer:
            width, height = sizes[node_id]
            center_x = x[node_id] - left + MARGIN
            positions[node_id] = [round(center_x, 1), round(y + layer_height / 2, 1), width, height]
            right = max(right, center_x + width / 2)
        y += layer_height + LAYER_GAP
    return positions, round(right + MARGIN), round(y - LAYER_GAP + MARGIN)


def closest_spaced(wanted: list, gaps: list) -> list:
    """Positions as close as possible (least squares) to ``wanted``, in order, ``gaps`` apart.

    Subtracting the running gap turns "x[i+1] - x[i] >= gap[i]" into "z is non-decreasing", which
    pool-adjacent-violators solves exactly in one pass: merge neighbouring blocks while out of
    order, each block sitting at the mean of what its members want.
    """
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks = []  # [mean, count]
    for want, offset in zip(wanted, offsets):
        blocks.append([want - offset, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            previous = blocks[-1]
            previous[0] = (previous[0] * previous[1] + mean * count) / (previous[1] + count)
            previous[1] += count
    result = []
    for mean, count in blocks:
        result.extend([mean] * count)
    return [z + offset for z, offset in zip(result, offsets)]


def _groups(graph: Graph, layout: dict) -> list[dict]:
    """Collapsible groups for big graphs: by module name when known, else by bands of layers.

    Grouping only changes what the front end draws at first (one box per group, expanded on
    click); every node keeps its own position, so expanding needs no new layout.
    """
    positions = layout["nodes"]
    members = defaultdict(list)
    for node in graph.nodes:
        if node.id == graph.root or node.kind == "output":
            continue
        if node.module:
            members["module:" + node.module].append(node.id)
    if not members:
        band_height = GROUP_LAYERS * (LINE_HEIGHT * 2 + PADDING_Y + LAYER_GAP)
        for node in graph.nodes:
            if node.id == graph.root or node.kind == "output":
                continue
            band = int(positions[node.id][1] // band_height)
            members[f"band:{band}"].append(node.id)
    groups = []
    for index, (key, ids) in enumerate(members.items()):
        if len(ids) < 4:
            continue
        left = min(positions[i][0] - positions[i][2] / 2 for i in ids)
        right = max(positions[i][0] + positions[i][2] / 2 for i in ids)
        top = min(positions[i][1] - positions[i][3] / 2 for i in ids)
        bottom = max(positions[i][1] + positions[i][3] / 2 for i in ids)
        label = key.split(":", 1)[1] if key.startswith("module:") else _summary_label(graph, ids)
        groups.append({"id": f"g{index}", "label": label, "members": ids,
                       "box": [round(left - 6, 1), round(top - 6, 1),
                               round(right - left + 12, 1), round(bottom - top + 12, 1)]})
    return groups


def _summary_label(graph: Graph, ids: list) -> str:
    """What a band holds, by its most frequent grad_fn names: ``AddmmBackward0 ×4, ReluBackward0 ×4``."""
    counts = defaultdict(int)
    by_id = {node.id: node for node in graph.nodes}
    for node_id in ids:
        node = by_id[node_id]
        if node.kind == "function":
            counts[node.name] += 1
    common = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:2]
    return ", ".join(f"{name} \u00d7{count}" for name, count in common) or "leaves"
