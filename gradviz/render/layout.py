"""Node positions for a Graph, computed once in Python and shipped to the front end.

Two engines give the same JSON, so the widget draws identical SVG (and identical test hooks)
either way:

* ``dot``: Graphviz's ``dot -Tplain``, for graphs it lays out quickly: installed, and with at most
  ``DOT_BUDGET`` nodes once every edge that skips layers is counted as the chain of virtual
  nodes ``dot`` routes it through, and no node with more than ``DOT_MAX_DEGREE`` edges. ``dot``
  is fast on chains and small models and slow (seconds, then minutes) where one tensor feeds many
  layers (a weight used at every step of an unrolled RNN makes a quadratic number of virtual
  nodes); the shape decides, before ``dot`` runs, never a timeout. Module groups become ``dot``
  clusters, so their frames nest and no frame holds a node that is not its member.
* ``layered``: a built-in layered (Sugiyama-style) layout in plain Python for everything else:
  longest-path layers, barycentre ordering, then x positions pulled toward neighbours. Every pass
  is a loop over lists (never recursion) that visits each node and edge a fixed number of times
  (plus a sort per layer): n log n, 100,000 nodes in seconds.

Forward direction: leaves at the top, the output at the bottom. JSON shape::

    {"engine": "dot" | "layered", "width": px, "height": px,
     "nodes": {id: [center_x, center_y, width, height]},
     "edges": [[x0, y0, x1, y1, ...] | null],   # per graph edge: cubic Bezier points, or null
     "groups": [{"id", "kind": "module" | "band", "label", "members": [id, ...],
                 "parent": id | None, "box": [x, y, w, h]}],  # parents first; see _groups
     "text": {id: [{"text", "cls", "title"?, "max"?}]},  # each node's lines, cut to fit its box
     "line_height": px}                                    # see render/node_text.py

A group's box holds its members and its child groups' boxes, with ``GROUP_HEADER`` px at its top
for the header the widget draws there (inside the frame, so a header never covers a node).
Box sizes come from ``node_text.node_size``, from the same lines the widget draws.
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
from collections import Counter, defaultdict

from gradviz.render.dot import layout_source
from gradviz.render.frames import GROUP_HEADER, GROUP_PAD, FrameLayout, is_placeholder
from gradviz.render.node_text import LINE_HEIGHT, PADDING_Y, node_size, shared_lines, with_node_text
from gradviz.snapshot.model import Graph

LAYER_GAP = 36          # vertical space between layers
NODE_GAP = 20           # horizontal space between neighbours in a layer
MARGIN = 16
DOT_BUDGET = 2000       # nodes + virtual nodes (layers an edge skips) dot lays out in well under 1 s
MODULE_DOT_BUDGET = 1000  # the same with module clusters stacked by invisible edges (about 3x slower)
DOT_MAX_DEGREE = 64     # a node with more edges than this makes dot's crossing reduction crawl
DOT_GUARD_S = 30        # never reached by a graph within the budget; a broken dot falls back
GROUP_ABOVE = 2000      # graphs without module names bigger than this get bands of layers as groups
GROUP_LAYERS = 12       # layers per band


def dot_available() -> bool:
    return shutil.which("dot") is not None


class Shape:
    """What both engines and the choice between them need: each node's neighbours and layer."""

    def __init__(self, graph: Graph):
        self.ids = [node.id for node in graph.nodes]
        self.successors, self.predecessors = defaultdict(list), defaultdict(list)
        for edge in graph.edges:
            self.successors[edge.source].append(edge.target)
            self.predecessors[edge.target].append(edge.source)
        self.layers = _assign_layers(self.ids, self.successors, self.predecessors)
        self.layer_of = {node_id: index for index, layer in enumerate(self.layers) for node_id in layer}

    def dot_work(self) -> int:
        """Nodes plus the virtual nodes ``dot`` would add: one per layer an edge skips."""
        layer_of = self.layer_of
        skipped = sum(layer_of[target] - layer_of[source] - 1
                      for source, targets in self.successors.items() for target in targets)
        return len(self.ids) + skipped

    def max_degree(self) -> int:
        return max((len(linked) for linked in (*self.successors.values(), *self.predecessors.values())), default=0)


def choose_engine(shape: Shape, modules: bool = False) -> str:
    """``dot`` where it is fast (see the module docstring), else ``layered``; decided up front.
    With module groups dot also stacks them (``FrameLayout.order_edges``), which costs it about
    three times as much: its budget is ``MODULE_DOT_BUDGET`` then."""
    budget = MODULE_DOT_BUDGET if modules else DOT_BUDGET
    if not dot_available() or shape.max_degree() > DOT_MAX_DEGREE or len(shape.ids) > budget:
        return "layered"
    return "dot" if shape.dot_work() <= budget else "layered"


def compute_layout(graph: Graph, engine: str = "auto") -> dict:
    """Positions for every node of ``graph``; ``engine`` is ``"auto"``, ``"dot"`` or ``"layered"``.

    ``auto`` picks by the graph's shape (``choose_engine``); a ``dot`` that fails (or is killed
    by ``DOT_GUARD_S``) falls back to the layered layout, unless ``dot`` was asked for.
    """
    lines = shared_lines(graph.nodes)
    sizes = _sizes(graph, lines)
    shape = Shape(graph)
    modules = _module_groups(_module_paths(graph))
    chosen = choose_engine(shape, bool(modules)) if engine == "auto" else engine
    result = None
    if chosen == "dot":
        stacking = (FrameLayout(modules, shape.layer_of).order_edges(shape.ids, shape.successors, shape.predecessors,
                                                                     shape.layer_of) if modules else [])
        result = _dot_layout(graph, sizes, modules, stacking, strict=engine == "dot")
    if result is None:
        result = _layered_layout(graph, sizes, shape, modules)
    result["groups"] = _groups(graph, result, modules, shape)
    return with_node_text(result, graph, lines)


def _sizes(graph: Graph, lines: dict) -> dict:
    """``{node id: node_size}``, once per shared list of lines (and leaf or not: a leaf's box
    keeps room for its ``.grad``)."""
    known: dict = {}
    sizes = {}
    for node in graph.nodes:
        own = lines[node.id]
        key = (id(own), node.kind == "leaf")
        size = known.get(key)
        if size is None:
            size = known[key] = node_size(node, own)
        sizes[node.id] = size
    return sizes


def _dot_layout(graph: Graph, sizes: dict, modules: list, stacking: list, strict: bool) -> dict | None:
    """Run ``dot -Tplain`` and read positions back; None (or an error when strict) on failure.
    ``stacking``: invisible edges that stack modules one under the other (``FrameLayout.order_edges``)."""
    try:
        completed = subprocess.run(
            ["dot", "-Tplain"], input=layout_source(graph, sizes, _clusters(modules), stacking), capture_output=True,
            text=True, timeout=DOT_GUARD_S, check=True)
    except (OSError, subprocess.SubprocessError):
        if strict:
            raise
        return None
    return _parse_plain(completed.stdout, graph)


def _clusters(modules: list) -> list:
    """Module groups as nested ``(margin_px, direct member ids, children)`` for ``layout_source``:
    each cluster's margin leaves room for the frame's padding and header."""
    children, inner = defaultdict(list), defaultdict(set)
    for group in modules:
        if group["parent"] is not None:
            children[group["parent"]].append(group["id"])
            inner[group["parent"]].update(group["members"])
    by_id = {group["id"]: group for group in modules}

    def cluster(group_id):  # as deep as the modules nest, a handful of levels
        direct = [member for member in by_id[group_id]["members"] if member not in inner[group_id]]
        return (GROUP_PAD + GROUP_HEADER, direct, [cluster(child) for child in children[group_id]])

    return [cluster(group["id"]) for group in modules if group["parent"] is None]


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


def _layered_layout(graph: Graph, sizes: dict, shape: Shape, modules: list) -> dict:
    """Layers, crossing sweeps, x placement; with module groups, also the frame steps of
    ``render/frames.py`` (each module's nodes side by side, room between frames, frames apart)."""
    frames = FrameLayout(modules, shape.layer_of) if modules else None
    stacked = frames.stacked_layers(shape.ids, shape.successors, shape.predecessors) if frames else None
    if stacked is not None:
        frames = FrameLayout(modules, {node_id: index for index, layer in enumerate(stacked) for node_id in layer})
    layers = stacked or [list(layer) for layer in shape.layers]
    _order_layers(layers, shape.successors, shape.predecessors, sweeps=6 if len(layers) <= GROUP_ABOVE else 2)
    if frames is None:
        positions, width, height = _place(layers, sizes, shape.successors, shape.predecessors)
    else:
        positions, width, height = _place_in_frames(layers, sizes, shape, frames)
    return {"engine": "layered", "width": width, "height": height, "nodes": positions,
            "edges": [None] * len(graph.edges)}


def _place_in_frames(layers, sizes, shape: Shape, frames: FrameLayout):
    """``_place`` with module frames kept apart: order, room and separation (``render/frames.py``);
    the canvas then wraps the frames as well as the nodes."""
    frames.order(layers)
    sizes = dict(sizes)
    for layer in layers:
        for node_id in layer:
            if is_placeholder(node_id):
                sizes[node_id] = (0, 0)
    gaps, above, below = frames.layer_gaps(len(layers), LAYER_GAP)
    positions, _, height = _place(layers, sizes, shape.successors, shape.predecessors, gaps, above)
    x = frames.separate(layers, {node_id: box[0] for node_id, box in positions.items()},
                        {node_id: sizes[node_id][0] for node_id in positions}, NODE_GAP)
    real = [node_id for node_id in positions if not is_placeholder(node_id)]
    left = min(x[n] - sizes[n][0] / 2 - frames.reach(n) for n in real)
    right = max(x[n] + sizes[n][0] / 2 + frames.reach(n) for n in real)
    placed = {}
    for node_id in real:
        box = positions[node_id]
        placed[node_id] = [round(x[node_id] - left + MARGIN, 1), box[1], box[2], box[3]]
    return placed, round(right - left + 2 * MARGIN), round(height + below)


def _assign_layers(ids, successors, predecessors) -> list[list[str]]:
    """Layer = longest distance *down* to a sink, flipped, so each input sits just above its consumer.

    Kahn's algorithm from the sinks (the output) upwards; a node left over by a cycle (never seen
    in autograd graphs) joins the top layer rather than being lost.
    """
    remaining = {node_id: len(successors[node_id]) for node_id in ids}
    depth = {node_id: 0 for node_id in ids}
    queue = [node_id for node_id in ids if remaining[node_id] == 0]
    for node_id in queue:  # (the loop also visits what it appends)
        below = depth[node_id] + 1
        for parent in predecessors[node_id]:
            if depth[parent] < below:
                depth[parent] = below
            left = remaining[parent] - 1
            remaining[parent] = left
            if not left:
                queue.append(parent)
    deepest = max(depth.values(), default=0)
    seen = set(queue)
    layers = [[] for _ in range(deepest + 1)]
    for node_id in ids:
        layer = deepest - depth[node_id] if node_id in seen else 0
        layers[layer].append(node_id)
    return layers


def _order_layers(layers, successors, predecessors, sweeps: int = 6) -> None:
    """Reduce crossings: sort each layer by the mean position of its neighbours, down then up.

    Each sweep visits every edge once and sorts each layer: n log n. A layer of one node (most
    of a chain's) has nothing to sort.
    """
    position = {}
    for layer in layers:
        for index, node_id in enumerate(layer):
            position[node_id] = index
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        order = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        neighbours = predecessors if downward else successors
        for layer_index in order:
            layer = layers[layer_index]
            if len(layer) == 1:
                continue
            keys = {}
            for node_id in layer:
                linked = neighbours[node_id]
                keys[node_id] = (sum(position[other] for other in linked) / len(linked) if linked
                                 else position[node_id])
            layer.sort(key=keys.__getitem__)
            for index, node_id in enumerate(layer):
                position[node_id] = index


def _place(layers, sizes, successors, predecessors, layer_gaps=None, above=0):
    """x by pulling each node toward the mean of its neighbours, keeping order and gaps; y by layer,
    ``LAYER_GAP`` apart unless ``layer_gaps`` (one per pair of layers) says more, the first layer
    ``above`` px lower.

    Each sweep visits every edge once per end: linear. A layer of one node goes straight to
    where its neighbours want it. Graphs too big to read whole settle in fewer sweeps.
    """
    sweeps = 8 if len(sizes) <= GROUP_ABOVE else 4
    x = {}
    for layer in layers:
        cursor = 0.0
        for node_id in layer:
            width = sizes[node_id][0]
            x[node_id] = cursor + width / 2
            cursor += width + NODE_GAP
    neighbours = {node_id: predecessors[node_id] + successors[node_id] for node_id in x}
    # a layer of one node (most of a chain's): (node, its neighbours, how many), made once
    alone = [(layer[0], neighbours[layer[0]], len(neighbours[layer[0]])) if len(layer) == 1 else None
             for layer in layers]
    # A layer's new x depends only on its neighbours' x (and its own, for a node with none), so a
    # layer none of whose neighbours moved since it was last placed would be placed where it is:
    # only layers marked ``stale`` are placed again, which gives exactly the positions of full
    # sweeps (tests/test_layout_sweeps.py). In a chain a sweep moves a hundred nodes or so.
    stale = [True] * len(layers)
    layer_of = {node_id: index for index, layer in enumerate(layers) for node_id in layer}
    x_of = x.__getitem__
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        order = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for layer_index in order:
            if not stale[layer_index]:
                continue
            stale[layer_index] = False
            single = alone[layer_index]
            if single is not None:
                node_id, linked, count = single
                if count:
                    value = sum(map(x_of, linked)) / count
                    if value != x[node_id]:
                        x[node_id] = value
                        for other in linked:
                            stale[layer_of[other]] = True
                continue
            layer = layers[layer_index]
            wanted = []
            for node_id in layer:
                linked = neighbours[node_id]
                wanted.append(sum(map(x_of, linked)) / len(linked) if linked else x[node_id])
            gaps = [(sizes[a][0] + sizes[b][0]) / 2 + NODE_GAP for a, b in zip(layer, layer[1:])]
            for node_id, value in zip(layer, closest_spaced(wanted, gaps)):
                if value != x[node_id]:
                    x[node_id] = value
                    for other in neighbours[node_id]:
                        stale[layer_of[other]] = True

    left = min((x[n] - sizes[n][0] / 2 for n in x), default=0.0)
    positions, y, right, gap = {}, MARGIN + above, 0.0, 0
    for index, layer in enumerate(layers):
        if len(layer) == 1:  # most of a chain's layers
            node_id = layer[0]
            width, layer_height = sizes[node_id]
            center_x = x[node_id] - left + MARGIN
            positions[node_id] = [round(center_x, 1), round(y + layer_height / 2, 1), width, layer_height]
            if center_x + width / 2 > right:
                right = center_x + width / 2
        else:
            layer_height = max((sizes[n][1] for n in layer), default=0)
            for node_id in layer:
                width, height = sizes[node_id]
                center_x = x[node_id] - left + MARGIN
                positions[node_id] = [round(center_x, 1), round(y + layer_height / 2, 1), width, height]
                reach = center_x + width / 2
                if reach > right:
                    right = reach
        gap = layer_gaps[index] if layer_gaps is not None and index < len(layer_gaps) else LAYER_GAP
        y += layer_height + gap
    return positions, round(right + MARGIN), round(y - gap + MARGIN)


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


def _groups(graph: Graph, layout: dict, modules: list, shape: Shape) -> list[dict]:
    """Collapsible groups: ``modules`` (one per ``nn.Module``, nested as the modules are) when
    nodes carry module paths, else bands of layers for graphs over ``GROUP_ABOVE`` nodes, else none.

    Grouping only changes what the front end draws (a collapsed group is one box, expanded on
    click); every node keeps its own position, so expanding or collapsing needs no new layout.
    Groups come parents first; ``parent`` is the id of the enclosing group or None.
    """
    positions = layout["nodes"]
    if modules:
        groups = [dict(group) for group in modules]
    elif len(graph.nodes) > GROUP_ABOVE:
        groups = _band_groups(graph, shape)
    else:
        return []
    child_boxes = defaultdict(list)
    for group in reversed(groups):  # children come after their parents: their boxes are ready first
        group["box"] = _group_box([_extent(positions, group["members"])] + child_boxes[group["id"]])
        if group["parent"] is not None:
            x, y, w, h = group["box"]
            child_boxes[group["parent"]].append([x, y, x + w, y + h])
    return groups


def _module_paths(graph: Graph) -> dict:
    """``{node id: module path}``: a node's own module; a constant (an input that needs no
    gradient, drawn once per use) takes the longest module path shared by all of its neighbours.
    Function nodes without a module stay outside every frame: ``snapshot/labels.py`` already
    decided they belong to none (made outside every module, or between top-level ones).
    """
    known = {node.id: node.module for node in graph.nodes if node.module}
    if not known:
        return {}
    neighbours = defaultdict(list)
    for edge in graph.edges:
        neighbours[edge.source].append(edge.target)
        neighbours[edge.target].append(edge.source)
    paths = dict(known)
    for node in graph.nodes:
        if node.id in known or node.kind != "constant":
            continue
        around = [known.get(other) for other in neighbours[node.id]]
        if around and all(around):
            shared = _common_prefix([path.split(".") for path in around])
            if shared:
                paths[node.id] = ".".join(shared)
    return paths


def _common_prefix(parts: list) -> list:
    shared = parts[0]
    for other in parts[1:]:
        length = 0
        while length < min(len(shared), len(other)) and shared[length] == other[length]:
            length += 1
        shared = shared[:length]
    return shared


def _module_groups(module_of: dict) -> list[dict]:
    """One group per module path and per enclosing path (``layer1``, ``layer1.0``, ...)."""
    members = defaultdict(list)
    for node_id, path in module_of.items():
        parts = path.split(".")
        for depth in range(1, len(parts) + 1):
            members[".".join(parts[:depth])].append(node_id)
    groups, id_of = [], {}
    for path in sorted(members, key=lambda p: p.count(".")):  # stable: parents first
        parts = path.split(".")
        parent = next((id_of[".".join(parts[:depth])] for depth in range(len(parts) - 1, 0, -1)
                       if ".".join(parts[:depth]) in id_of), None)
        ids = members[path]
        if len(ids) < 2 or (parent is not None and len(ids) == len(groups[int(parent[1:])]["members"])):
            if parent is not None:
                id_of[path] = parent  # the same nodes as the enclosing group: keep that one
            continue
        id_of[path] = f"g{len(groups)}"
        groups.append({"id": id_of[path], "kind": "module", "label": path, "members": ids, "parent": parent})
    return groups


def _band_groups(graph: Graph, shape: Shape) -> list[dict]:
    """Bands of ``GROUP_LAYERS`` layers, labelled by what they hold."""
    members = defaultdict(list)
    for node in graph.nodes:
        if node.id == graph.root or node.kind == "output":
            continue
        members[shape.layer_of[node.id] // GROUP_LAYERS].append(node.id)
    by_id = {node.id: node for node in graph.nodes}
    groups = []
    for _, ids in sorted(members.items()):
        if len(ids) >= 4:
            groups.append({"id": f"g{len(groups)}", "kind": "band", "label": _summary_label(by_id, ids),
                           "members": ids, "parent": None})
    return groups


def _extent(positions: dict, members: list) -> list:
    """``[left, top, right, bottom]`` around the members' boxes (each ``[center x, center y, w, h]``),
    in one pass."""
    x, y, w, h = positions[members[0]]
    left, top, right, bottom = x - w / 2, y - h / 2, x + w / 2, y + h / 2
    for member in members:
        x, y, w, h = positions[member]
        if x - w / 2 < left:
            left = x - w / 2
        if y - h / 2 < top:
            top = y - h / 2
        if x + w / 2 > right:
            right = x + w / 2
        if y + h / 2 > bottom:
            bottom = y + h / 2
    return [left, top, right, bottom]


def _group_box(boxes: list) -> list:
    """``[x, y, w, h]`` around ``[left, top, right, bottom]`` boxes (members and child frames),
    padded, with ``GROUP_HEADER`` px on top for the header."""
    left = min(box[0] for box in boxes) - GROUP_PAD
    top = min(box[1] for box in boxes) - GROUP_PAD - GROUP_HEADER
    right = max(box[2] for box in boxes) + GROUP_PAD
    bottom = max(box[3] for box in boxes) + GROUP_PAD
    return [round(left, 1), round(top, 1), round(right - left, 1), round(bottom - top, 1)]


def _summary_label(by_id: dict, ids: list) -> str:
    """What a band holds, by its most frequent grad_fn names: ``AddmmBackward0 ×4, ReluBackward0 ×4``."""
    counts = Counter(by_id[node_id].name for node_id in ids if by_id[node_id].kind == "function")
    common = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:2]
    return ", ".join(f"{name} \u00d7{count}" for name, count in common) or "leaves"
