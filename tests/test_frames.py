"""gradviz.render.frames: module frames in the built-in layered layout, checked on the geometry.

Whatever the model, in the layout data: sibling frames never intersect, a child frame lies inside
its parent's, every node of a module lies inside its frame and no other node does, and every frame
lies on the canvas. Graphs big enough to leave ``dot``'s budget get the layered layout by
themselves; smaller ones ask for it.
"""
from __future__ import annotations

import shutil

import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv
from gradviz import nn
from gradviz.render import compute_layout
from gradviz.render.layout import choose_engine, Shape
from gradviz.snapshot import graph_of
from gradviz.snapshot.model import Graph, GraphEdge, GraphNode


needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")


def box_of(node_box: list) -> list:
    x, y, w, h = node_box
    return [x - w / 2, y - h / 2, w, h]


def intersect(a: list, b: list) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def contains(outer: list, inner: list) -> bool:
    return (outer[0] <= inner[0] and outer[1] <= inner[1] and inner[0] + inner[2] <= outer[0] + outer[2]
            and inner[1] + inner[3] <= outer[1] + outer[3])


def frame_faults(layout: dict) -> list:
    """Every way the frames of ``layout`` mislead, as readable tuples (``[]`` when truthful)."""
    groups = layout["groups"]
    by_id = {group["id"]: group for group in groups}
    faults = []
    for group in groups:
        box, label = group["box"], group["label"]
        if not contains([0, 0, layout["width"], layout["height"]], box):
            faults.append(("off the canvas", label))
        if group["parent"] is not None and not contains(by_id[group["parent"]]["box"], box):
            faults.append(("outside its parent", label))
        for other in groups:
            nested = contains(box, other["box"]) or contains(other["box"], box)
            if other is not group and intersect(box, other["box"]) and not nested:
                faults.append(("overlaps", label, other["label"]))
        members = set(group["members"])
        for node_id, node_box in layout["nodes"].items():
            inside = intersect(box, box_of(node_box))
            if node_id in members and not contains(box, box_of(node_box)):
                faults.append(("member outside", label, node_id))
            elif node_id not in members and inside:
                faults.append(("stranger inside", label, node_id))
    return faults


class Block(nn.Module):
    """Linear, ReLU, Linear: the block a deep Sequential repeats."""

    def __init__(self, width: int):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Residual(nn.Module):
    """A block beside a skip Linear, summed, then a ReLU."""

    def __init__(self, width: int):
        super().__init__()
        self.body, self.skip = Block(width), nn.Linear(width, width)

    def forward(self, x):
        return gv.relu(self.body(x) + self.skip(x))


class SharedLayer(nn.Module):
    """One Linear called twice, a tanh between: its two uses interleave with the tanh."""

    def __init__(self):
        super().__init__()
        self.fc, self.head = nn.Linear(3, 3), nn.Linear(3, 1)

    def forward(self, x):
        return self.head(self.fc(gv.tanh(self.fc(x))))


def layout_of(model, inputs, engine: str = "layered") -> dict:
    loss = model(inputs).pow(2).mean()
    return compute_layout(graph_of(loss, {"loss": loss}, model), engine=engine)


def test_a_deep_sequential_leaves_dot_and_its_blocks_stack_in_frames():
    gv.manual_seed(0)
    model = nn.Sequential(*[Block(2) for _ in range(170)])
    loss = model(gv.randn(2, 2)).sum()
    graph = graph_of(loss, {"loss": loss}, model)
    assert choose_engine(Shape(graph)) == "layered"  # over dot's budget by itself
    layout = compute_layout(graph)
    assert layout["engine"] == "layered" and frame_faults(layout) == []
    blocks = stacked_blocks(layout)  # one under the other, not a staircase
    assert [block["label"] for block in blocks] == [str(index) for index in range(170)]
    assert layout["width"] < 3 * max(block["box"][2] for block in blocks)


def stacked_blocks(layout: dict) -> list:
    """The top-level frames, in order, each wholly below the one before (else an AssertionError)."""
    blocks = sorted((g for g in layout["groups"] if g["parent"] is None), key=lambda g: g["box"][1])
    for upper, lower in zip(blocks, blocks[1:]):
        assert upper["box"][1] + upper["box"][3] < lower["box"][1], (upper["label"], lower["label"])
    return blocks


@needs_dot
def test_dot_stacks_the_blocks_of_a_sequential_too():
    """dot's clusters nest, and the invisible edges from a block's feeder to the next block's
    parameters stack the blocks instead of a staircase as wide as the model is deep."""
    gv.manual_seed(0)
    model = nn.Sequential(*[Block(3) for _ in range(8)])
    loss = model(gv.randn(2, 3)).sum()
    graph = graph_of(loss, {"loss": loss}, model)
    assert choose_engine(Shape(graph), modules=True) == "dot"
    layout = compute_layout(graph)
    assert layout["engine"] == "dot" and frame_faults(layout) == []
    blocks = stacked_blocks(layout)
    assert len(blocks) == 8 and layout["width"] < 3 * max(block["box"][2] for block in blocks)


def test_module_clusters_halve_dots_budget():
    """Stacked clusters cost dot about three times as much: a graph with modules leaves dot sooner."""
    from gradviz.render.layout import DOT_BUDGET, MODULE_DOT_BUDGET, dot_available

    graph = graph_with_chain(1500)
    if dot_available():
        assert choose_engine(Shape(graph)) == "dot"
    assert choose_engine(Shape(graph), modules=True) == "layered"
    assert MODULE_DOT_BUDGET < 1500 <= DOT_BUDGET


def graph_with_chain(length: int) -> Graph:
    nodes = [GraphNode("n0", "output", "out", "out")]
    nodes += [GraphNode(f"n{i}", "function", "MulBackward0", "MulBackward0") for i in range(1, length)]
    edges = [GraphEdge(f"n{i + 1}", f"n{i}") for i in range(length - 1)]
    return Graph(tuple(nodes), tuple(edges), "n0")


def test_residual_blocks_frame_truthfully():
    gv.manual_seed(1)
    layout = layout_of(nn.Sequential(Residual(3), Residual(3)), gv.randn(5, 3))
    labels = {group["label"] for group in layout["groups"]}
    assert {"0", "0.body", "0.skip", "1.body.fc2"} <= labels
    assert frame_faults(layout) == []


def test_a_layer_used_twice_frames_both_uses_and_keeps_the_tanh_between_outside():
    gv.manual_seed(2)
    model = SharedLayer()
    loss = model(gv.randn(4, 3)).pow(2).mean()
    graph = graph_of(loss, {"loss": loss}, model)
    layout = compute_layout(graph, engine="layered")
    fc = next(group for group in layout["groups"] if group["label"] == "fc")
    names = {node.id: node.name for node in graph.nodes}
    assert sorted(names[m] for m in fc["members"] if names[m] == "AddmmBackward0") == ["AddmmBackward0"] * 2
    tanh = next(node_id for node_id, name in names.items() if name == "TanhBackward0")
    assert tanh not in fc["members"] and not intersect(fc["box"], box_of(layout["nodes"][tanh]))
    assert frame_faults(layout) == []


def test_a_torch_resnet_style_model_frames_truthfully(torch):
    class TorchResidual(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = torch.nn.Conv2d(2, 2, 3, padding=1), torch.nn.BatchNorm2d(2)
            self.conv2, self.bn2 = torch.nn.Conv2d(2, 2, 3, padding=1), torch.nn.BatchNorm2d(2)

        def forward(self, x):
            return torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))) + x)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), TorchResidual(), TorchResidual(), torch.nn.Flatten(),
                                torch.nn.LazyLinear(1))
    layout = layout_of(model, torch.randn(2, 1, 6, 6))
    assert {"1", "1.conv1", "2.bn2"} <= {group["label"] for group in layout["groups"]}
    assert frame_faults(layout) == []


MODULE_PATHS = st.sampled_from([None, "a", "a.x", "a.y", "a.y.p", "b", "b.x", "c"])


@st.composite
def module_graphs(draw) -> Graph:
    """A random DAG (each node feeds one to three later ones) with random module paths."""
    count = draw(st.integers(3, 40))
    nodes = [GraphNode("n0", "output", "out", "out")]
    edges = [GraphEdge("n1", "n0", 0, "output")]
    for index in range(1, count):
        nodes.append(GraphNode(f"n{index}", "function", "MulBackward0", "MulBackward0", module=draw(MODULE_PATHS)))
        if index > 1:
            targets = draw(st.sets(st.integers(1, index - 1), min_size=1, max_size=3))
            edges += [GraphEdge(f"n{index}", f"n{target}", slot) for slot, target in enumerate(sorted(targets))]
    return Graph(tuple(nodes), tuple(edges), "n0")


@settings(max_examples=60, deadline=None)
@given(module_graphs())
def test_any_graph_with_modules_gets_truthful_frames(graph):
    layout = compute_layout(graph, engine="layered")
    assert frame_faults(layout) == []
