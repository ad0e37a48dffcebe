"""gradviz.render: DOT text and node positions, with and without the ``dot`` executable."""
from __future__ import annotations

import shutil
import subprocess

import pytest

import gradviz as gv
from fixtures import shapes
from fixtures.widget_graphs import HOSTILE
from gradviz.render import compute_layout, dot_available, graph_to_dot
from gradviz.render.dot import quote
from gradviz.render.layout import GROUP_ABOVE, Shape, choose_engine, closest_spaced
from gradviz.snapshot import graph_of
from gradviz.render.node_text import (CHAR_WIDTH, LINE_HEIGHT, MAX_CHARS, PADDING_X, PADDING_Y, chars_fitting,
                                      node_lines, node_size, with_node_text)
from gradviz.snapshot.model import ArraySummary, Graph, GraphEdge, GraphNode, SavedSummary

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")


def small_graph(label_x: str = "x") -> Graph:
    """``loss = x * w`` drawn by hand: output <- MulBackward0 <- two AccumulateGrads <- leaves."""
    scalar = ArraySummary((), "float32", "2.")
    nodes = (
        GraphNode("n0", "output", "loss", "loss", (), "float32", scalar),
        GraphNode("n1", "function", "MulBackward0", "loss", (), "float32",
                  saved=(SavedSummary("self", scalar), SavedSummary("other", scalar))),
        GraphNode("n2", "accumulate", "AccumulateGrad", "AccumulateGrad"),
        GraphNode("n3", "leaf", label_x, label_x, (), "float32", scalar),
        GraphNode("n4", "accumulate", "AccumulateGrad", "AccumulateGrad"),
        GraphNode("n5", "leaf", "w", "w", (), "float32", scalar),
    )
    edges = (GraphEdge("n1", "n0", 0, "output"), GraphEdge("n2", "n1", 0), GraphEdge("n3", "n2", 0, "variable"),
             GraphEdge("n4", "n1", 1), GraphEdge("n5", "n4", 0, "variable"))
    return Graph(nodes, edges, "n0")


def chain_graph(length: int, module_every: int = 0) -> Graph:
    """A long chain of functions with a leaf feeding every fifth one: big graphs cheaply."""
    nodes = [GraphNode("n0", "output", "out", "out")]
    edges = []
    previous = "n0"
    for i in range(1, length):
        module = f"layers.{i // module_every}" if module_every else None
        node_id = f"n{i}"
        if i % 5 == 4:
            nodes.append(GraphNode(node_id, "leaf", f"p{i}", f"p{i}", (3,), "float32", module=module))
            edges.append(GraphEdge(node_id, f"n{i - 1}", 1, "variable"))
            continue
        nodes.append(GraphNode(node_id, "function", "AddBackward0", "AddBackward0", module=module))
        edges.append(GraphEdge(node_id, previous, 0, "data" if previous != "n0" else "output"))
        previous = node_id
    return Graph(tuple(nodes), tuple(edges), "n0")


def assert_forward_direction(graph: Graph, layout: dict) -> None:
    """Every edge points down the page: inputs above the nodes that consume them."""
    positions = layout["nodes"]
    assert set(positions) == {node.id for node in graph.nodes}
    for edge in graph.edges:
        assert positions[edge.source][1] < positions[edge.target][1], edge


def overlapping_pairs(boxes: dict) -> list:
    """Pairs of ``{id: [center x, center y, w, h]}`` boxes that intersect (by more than 0.5 px),
    by a sweep over the boxes sorted by their top edge: n log n plus the pairs that share rows."""
    spans = sorted((y - h / 2, y + h / 2, x - w / 2, x + w / 2, key) for key, (x, y, w, h) in boxes.items())
    found, open_spans = [], []
    for top, bottom, left, right, key in spans:
        open_spans = [span for span in open_spans if span[1] > top + 0.5]
        found += [(other[4], key) for other in open_spans if other[2] < right - 0.5 and left < other[3] - 0.5]
        open_spans.append((top, bottom, left, right, key))
    return found


def assert_no_overlap(layout: dict) -> None:
    assert overlapping_pairs(layout["nodes"]) == []


# ---------------------------------------------------------------- DOT text


def test_graph_to_dot_names_every_node_and_edge():
    graph = small_graph()
    text = graph_to_dot(graph)
    assert text.startswith("digraph gradviz {")
    assert "MulBackward0" in text and "AccumulateGrad" in text
    assert text.count("->") == len(graph.edges)
    assert not hasattr(graph, "to_dot")  # the model knows no renderer: DOT comes from gradviz.render


def test_graph_to_dot_quotes_hostile_labels():
    text = graph_to_dot(small_graph('a"b\\c\n' + HOSTILE))
    assert '"a\\"b\\\\c\\n' in text


@needs_dot
def test_dot_accepts_the_text_for_hostile_labels():
    result = subprocess.run(["dot", "-Tsvg"], input=graph_to_dot(small_graph('a"b\\' + HOSTILE)),
                            capture_output=True, text=True, check=True)
    assert "<img" not in result.stdout  # Graphviz escapes it as &lt;img


# ---------------------------------------------------------------- layout


@needs_dot
def test_layout_uses_dot_when_present():
    graph = small_graph()
    layout = compute_layout(graph)
    assert layout["engine"] == "dot"
    assert_forward_direction(graph, layout)
    assert len(layout["edges"]) == len(graph.edges)
    assert all(points and len(points) >= 8 for points in layout["edges"])


def test_layout_without_dot_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not dot_available()
    graph = small_graph()
    layout = compute_layout(graph)
    assert layout["engine"] == "layered"
    assert_forward_direction(graph, layout)
    assert_no_overlap(layout)
    assert layout["edges"] == [None] * len(graph.edges)
    assert layout["width"] > 0 and layout["height"] > 0


def test_both_engines_give_the_same_json_shape(monkeypatch, tmp_path):
    graph = small_graph()
    layered = compute_layout(graph, engine="layered")
    if dot_available():
        assert set(compute_layout(graph, engine="dot")) == set(layered)
    assert set(layered) == {"engine", "width", "height", "nodes", "edges", "groups", "text", "line_height"}
    for node in graph.nodes:  # sizes come from the same rule either way
        assert tuple(layered["nodes"][node.id][2:]) == node_size(node)


def test_layered_layout_handles_big_deep_graphs_without_recursion():
    graph = chain_graph(6000)
    layout = compute_layout(graph, engine="layered")
    assert_forward_direction(graph, layout)
    assert_no_overlap(layout)
    assert layout["width"] < 2000  # a chain stays a column, it does not drift sideways


SHAPES = {"fan-out of 1,000 uses": (shapes.fan_out, 1000), "RNN unrolled 60 steps": (shapes.unrolled_rnn, 60),
          "RNN unrolled 200 steps": (shapes.unrolled_rnn, 200), "chain of 20,000": (shapes.chain, 20_000)}


@pytest.mark.parametrize("case", SHAPES)
def test_shapes_dot_is_slow_on_get_the_layered_layout_chosen_up_front(case, monkeypatch):
    """The shape decides: dot is never started (so never waited for) on a graph it is slow on."""
    from gradviz.render import layout as layout_module

    make, size = SHAPES[case]
    graph = graph_of(make(size), {})
    monkeypatch.setattr(layout_module, "dot_available", lambda: True)
    monkeypatch.setattr(layout_module.subprocess, "run", lambda *a, **k: pytest.fail("dot was started"))
    layout = compute_layout(graph)
    assert layout["engine"] == "layered"
    assert_forward_direction(graph, layout)
    assert_no_overlap(layout)


@pytest.mark.slow
def test_a_chain_of_100000_nodes_lays_out_without_recursion():
    graph = graph_of(shapes.chain(100_000), {})
    layout = compute_layout(graph)
    assert layout["engine"] == "layered" and len(layout["nodes"]) == 100_003
    assert_forward_direction(graph, layout)
    assert_no_overlap(layout)
    assert layout["width"] < 400  # a chain stays a column


@needs_dot
@pytest.mark.parametrize("make, size", [(shapes.fan_out, 20), (shapes.unrolled_rnn, 8), (shapes.chain, 1000)])
def test_shapes_dot_lays_out_quickly_get_dot(make, size):
    graph = graph_of(make(size), {})
    assert choose_engine(Shape(graph)) == "dot"
    layout = compute_layout(graph)
    assert layout["engine"] == "dot"
    assert_no_overlap(layout)


def test_the_choice_counts_the_layers_an_edge_skips():
    """An RNN of 30 steps has only 188 nodes, but its weights' edges skip 5,000 layers in all."""
    shape = Shape(graph_of(shapes.unrolled_rnn(30), {}))
    assert len(shape.ids) < 200 and shape.dot_work() > 5000
    assert Shape(graph_of(shapes.chain(500), {})).dot_work() == 503


def module_graph() -> Graph:
    """A gradviz MLP with nested modules: ``0``, ``2`` (itself ``2.0``, ``2.1``) and ``3``."""
    gv.manual_seed(0)
    model = gv.nn.Sequential(gv.nn.Linear(3, 4), gv.nn.ReLU(),
                             gv.nn.Sequential(gv.nn.Linear(4, 4), gv.nn.Tanh()), gv.nn.Linear(4, 1))
    loss = model(gv.randn(5, 3)).pow(2).mean()
    return graph_of(loss, {"loss": loss}, model)


def intersect(a: list, b: list) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def contains(outer: list, inner: list) -> bool:
    return (outer[0] <= inner[0] and outer[1] <= inner[1] and inner[0] + inner[2] <= outer[0] + outer[2]
            and inner[1] + inner[3] <= outer[1] + outer[3])


@needs_dot
def test_module_frames_nest_without_overlapping_and_hold_only_their_members():
    graph = module_graph()
    layout = compute_layout(graph)
    assert layout["engine"] == "dot"
    groups = layout["groups"]
    assert {g["label"] for g in groups} >= {"0", "2", "3"}
    by_id = {g["id"]: g for g in groups}
    for group in groups:
        if group["parent"] is not None:
            assert contains(by_id[group["parent"]]["box"], group["box"])
        for other in groups:
            if other is not group and intersect(group["box"], other["box"]):
                assert contains(group["box"], other["box"]) or contains(other["box"], group["box"])
        for node_id, (x, y, w, h) in layout["nodes"].items():
            if node_id not in group["members"]:
                assert not intersect(group["box"], [x - w / 2, y - h / 2, w, h]), (group["label"], node_id)


def test_layout_falls_back_when_dot_fails(monkeypatch):
    from gradviz.render import layout as layout_module

    def broken(*args, **kwargs):
        raise subprocess.TimeoutExpired("dot", 1)

    monkeypatch.setattr(layout_module, "dot_available", lambda: True)
    monkeypatch.setattr(layout_module.subprocess, "run", broken)
    assert compute_layout(small_graph())["engine"] == "layered"


def test_big_graphs_get_collapsible_groups():
    graph = chain_graph(GROUP_ABOVE + 500)
    layout = compute_layout(graph, engine="layered")
    members = [m for group in layout["groups"] for m in group["members"]]
    assert layout["groups"] and len(members) == len(set(members))
    assert graph.root not in members
    small = compute_layout(chain_graph(200), engine="layered")
    assert small["groups"] == []


def test_groups_follow_module_names_when_known():
    layout = compute_layout(chain_graph(GROUP_ABOVE + 500, module_every=100), engine="layered")
    assert {group["label"] for group in layout["groups"]} >= {"layers.0", "layers.1"}


def test_closest_spaced_keeps_order_and_gaps():
    assert closest_spaced([0, 50, 100], [10, 10]) == [0, 50, 100]
    placed = closest_spaced([5, 5, 5], [10, 10])
    assert placed == [-5, 5, 15]
    placed = closest_spaced([30, 0], [20])
    assert placed[1] - placed[0] == pytest.approx(20)
    assert sum(placed) / 2 == pytest.approx(15)


def test_module_groups_nest_like_the_modules_at_any_size():
    modules = ["block.0.conv", "block.0.conv", "block.0.norm", "block.0.norm", "block.1.conv", "block.1.conv", None]
    nodes = [GraphNode("n0", "output", "out", "out")]
    nodes += [GraphNode(f"n{i + 1}", "function", "MulBackward0", "MulBackward0", module=m)
              for i, m in enumerate(modules)]
    edges = [GraphEdge(f"n{i + 1}", f"n{i}") for i in range(len(modules))]
    graph = Graph(tuple(nodes), tuple(edges), "n0")
    groups = {g["label"]: g for g in compute_layout(graph, engine="layered")["groups"]}
    assert set(groups) == {"block", "block.0", "block.0.conv", "block.0.norm", "block.1"}
    by_id = {g["id"]: g for g in groups.values()}
    assert groups["block"]["parent"] is None
    assert by_id[groups["block.0.conv"]["parent"]]["label"] == "block.0"
    assert "block.1.conv" not in groups  # the same nodes as block.1: one frame is enough
    assert all(g["kind"] == "module" for g in groups.values())
    outer, inner = groups["block"]["box"], groups["block.0"]["box"]
    assert outer[0] < inner[0] and outer[1] < inner[1]  # frames nest without coinciding


# ---------------------------------------------------------------- node text


def freed(graph: Graph) -> Graph:
    """The same graph after backward(): saved tensors freed, the leaves' .grad filled."""
    from dataclasses import replace

    grad = ArraySummary((), "float32", "-123.4567")
    nodes = tuple(replace(node, saved=tuple(replace(t, value=None, freed=True) for t in node.saved),
                          grad=grad if node.kind == "leaf" else None) for node in graph.nodes)
    return replace(graph, nodes=nodes)


def text_graphs() -> list:
    """Graphs whose text covers every kind of line, short and too long for any box."""
    long_label = "a_label_far_longer_than_any_box_allows_" * 2
    return [small_graph(), small_graph(long_label), freed(small_graph(long_label)), chain_graph(30, module_every=7)]


def test_node_lines_say_what_each_kind_of_node_is():
    graph = small_graph()
    texts = {node.id: [(line["text"], line["cls"]) for line in node_lines(node)] for node in graph.nodes}
    assert texts["n1"] == [("MulBackward0", "gv-title"), ("loss", "gv-sub"), ("saved: self, other", "gv-saved")]
    assert texts["n2"] == [("AccumulateGrad", "gv-title")]
    assert texts["n3"] == [("x", "gv-title"), ("2.", "gv-value"), ("grad: None", "gv-grad")]  # 0-d: no shape
    assert texts["n0"] == [("loss", "gv-title"), ("2.", "gv-value")]
    after = {node.id: [line["text"] for line in node_lines(node)] for node in freed(graph).nodes}
    assert after["n1"][-1] == "saved: self \u2717, other \u2717 (freed)"
    assert after["n3"][-1] == "grad: -123.4567"
    leaf = next(node for node in chain_graph(10, module_every=3).nodes if node.kind == "leaf")
    assert [line["text"] for line in node_lines(leaf)] == [leaf.label, "(3)", "grad: None"]  # no value line


@pytest.mark.parametrize("engine", ["layered", "dot"])
def test_shipped_text_is_the_lines_cut_to_fit_their_box(engine):
    if engine == "dot" and not dot_available():
        pytest.skip("Graphviz dot is not installed")
    for graph in text_graphs():
        layout = compute_layout(graph, engine=engine)
        for node in graph.nodes:
            width, height = layout["nodes"][node.id][2:]
            shipped, full = layout["text"][node.id], node_lines(node)
            limit = chars_fitting(width)
            assert [line["cls"] for line in shipped] == [line["cls"] for line in full]
            assert [line.get("title", line["text"]) for line in shipped] == [line["text"] for line in full]
            for line, whole in zip(shipped, full):
                assert len(line["text"]) <= limit and len(line["text"]) * CHAR_WIDTH + PADDING_X <= width + CHAR_WIDTH / 2
                if len(whole["text"]) > limit:
                    assert line["text"] == whole["text"][:limit - 1] + "\u2026" and line["title"] == whole["text"]
                else:
                    assert line["text"] == whole["text"] and "title" not in line
                assert ("max" in line) == (line["cls"] == "gv-grad")
            assert height == pytest.approx(len(full) * LINE_HEIGHT + PADDING_Y, abs=0.5)
        assert layout["line_height"] == LINE_HEIGHT


def test_box_sizes_fit_the_text_up_to_the_longest_line_allowed():
    for graph in text_graphs():
        for node in graph.nodes:
            width, height = node_size(node)
            longest = max(len(line["text"]) for line in node_lines(node))
            assert chars_fitting(width) >= min(longest, MAX_CHARS)
            assert chars_fitting(width) <= max(longest, 14, 7)  # no wider than the text needs (leaf minimum)
            assert height == len(node_lines(node)) * LINE_HEIGHT + PADDING_Y


def test_a_leaf_grad_line_has_room_for_a_preview():
    layout = compute_layout(small_graph(), engine="layered")
    (grad,) = [line for line in layout["text"]["n3"] if line["cls"] == "gv-grad"]
    assert grad["max"] >= len("grad: -0.1234")


@pytest.mark.parametrize("show_saved", [False, True])
def test_dot_label_is_the_text_the_widget_ships(show_saved):
    for graph in text_graphs():
        text = graph_to_dot(graph, show_saved=show_saved)
        shipped = compute_layout(graph, engine="layered")["text"]
        for node in graph.nodes:
            lines = [line.get("title", line["text"]) for line in shipped[node.id]
                     if show_saved or line["cls"] != "gv-saved"]
            assert f"{quote(node.id)} [label={quote(chr(10).join(lines))}," in text


def test_refreshed_text_keeps_the_boxes_and_recuts_new_values():
    graph = small_graph()
    layout = compute_layout(graph, engine="layered")
    after = with_node_text(layout, freed(graph))
    assert after["nodes"] is layout["nodes"] and after["groups"] is layout["groups"]
    (grad,) = [line for line in after["text"]["n3"] if line["cls"] == "gv-grad"]
    assert grad == {"text": "grad: -123.45\u2026", "cls": "gv-grad", "title": "grad: -123.4567", "max": 14}
    assert layout["text"]["n3"][-1]["text"] == "grad: None"  # the original is not changed


def test_a_cut_preview_ends_with_one_ellipsis():
    """A value preview has its own "…" between head and tail: cutting it must not add a second one
    (lesson 13's box showed ``4.3574, ……``), nor leave ``…, …``."""
    from gradviz.render.node_text import cut

    preview = "[1.2214, -2.1129, 4.3574, …, 0.3110, 2.7023]"
    assert cut(preview, 28) == "[1.2214, -2.1129, 4.3574, …"
    assert cut(preview, 29) == "[1.2214, -2.1129, 4.3574, …"
    assert cut(preview, 30) == "[1.2214, -2.1129, 4.3574, …"
    assert cut("[0.0088, -0.0854, 0.0282, …, 0.5, 0.25]", 29) == "[0.0088, -0.0854, 0.0282, …"
    assert cut("abcdefgh", 5) == "abcd…" and cut("abc", 5) == "abc"
