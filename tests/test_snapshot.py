"""gradviz.snapshot: one walk for gradviz and torch graphs, so the same program gives the same Graph.

The gradviz-only tests need no torch (they run in the torch-blocked pass); the parity tests run
each program twice, as ``import gradviz as lib`` and as ``import torch as lib``, and compare.
"""
from __future__ import annotations

import json

import pytest

import gradviz as gv
from gradviz.render import compute_layout
from fixtures.widget_graphs import lesson_tensors
from gradviz.snapshot import Graph, graph_of
from gradviz.snapshot.walk import CONSTANT_NOTE, LEAF_NOTE, LEAF_OUTPUT_NOTE, NO_GRAPH_NOTE


def by_label(graph: Graph) -> dict:
    return {node.label: node for node in graph.nodes}


def two_layer(lib, seed=0):
    """Linear-ReLU-Linear under a BCE-with-logits loss, with data and a target that need no grad."""
    lib.manual_seed(seed)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 1))
    x = lib.randn(5, 3)
    target = lib.ones(5, 1)
    logits = model(x)
    loss = lib.nn.functional.binary_cross_entropy_with_logits(logits, target)
    return loss, model, {"x": x, "target": target, "logits": logits, "loss": loss}


def with_numbers(lib):
    """Python numbers and a tensor without grad as inputs: constants in both libraries."""
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    scale = lib.tensor([2.0, 2.0, 2.0])
    h = (a * 2 + 1) * scale
    return (h.tanh() - a).sum(), {"a": a, "scale": scale, "h": h}


# ---------------------------------------------------------------- gradviz graphs (no torch)

def test_the_function_gv_graph_and_the_package_gradviz_snapshot_do_not_collide():
    import gradviz.snapshot

    loss, names = lesson_tensors()
    assert callable(gv.graph) and gv.graph is gradviz.snapshot.graph
    assert gv.graph(loss, names).node("n0").label == "loss"
    with pytest.raises(TypeError, match="gradviz.Tensor or a torch.Tensor"):
        gv.graph([1.0, 2.0])


def test_names_work_in_both_directions_and_name_non_leaves_by_their_grad_fn():
    loss, names = lesson_tensors()
    forward = graph_of(loss, names)
    backward = graph_of(loss, {tensor: label for label, tensor in names.items()})
    assert forward.to_dict() == backward.to_dict()
    labels = by_label(forward)
    assert labels["x"].kind == labels["w"].kind == labels["b"].kind == "leaf"
    assert labels["z"].kind == "function" and labels["z"].name == "AddBackward0"  # z = x * w + b
    assert labels["z"].value.preview == "7." and labels["z"].shape == ()
    assert forward.node("n0").label == "loss" and forward.node("n1").label == "loss"


def test_leaves_match_by_identity_and_the_first_name_wins():
    loss, names = lesson_tensors()
    twin = gv.tensor(2.0, requires_grad=True)  # equal to x, but another tensor
    graph = graph_of(loss, {"first": names["x"], "second": names["x"], "twin": twin, "w": names["w"]})
    leaves = sorted(node.label for node in graph.nodes if node.kind == "leaf")
    assert leaves == ["first", "tensor(scalar)", "w"]


def test_notes_are_worded_once_for_every_kind_of_node():
    loss, names = lesson_tensors()
    graph = graph_of(loss * 2, names)
    notes = {(node.kind, node.note) for node in graph.nodes}
    assert ("leaf", LEAF_NOTE) in notes and ("constant", CONSTANT_NOTE) in notes
    assert graph_of(gv.ones(3)).node("n0").note == NO_GRAPH_NOTE
    leaf = graph_of(names["x"])
    assert [node.kind for node in leaf.nodes] == ["output", "accumulate", "leaf"]
    assert leaf.node("n0").note == LEAF_OUTPUT_NOTE


def test_constants_show_what_they_were_when_gradviz_knows():
    loss, names = with_numbers(gv)
    constants = [node for node in graph_of(loss, names).nodes if node.kind == "constant"]
    assert [node.label for node in constants] == ["scale", "1", "2"]
    assert constants[0].shape == (3,) and constants[0].value.preview == "[2., 2., 2.]"


def test_a_gradviz_model_gets_module_groups_like_a_torch_one():
    loss, model, names = two_layer(gv)
    graph = graph_of(loss, names, model)
    modules = {node.label: node.module for node in graph.nodes if node.kind in ("leaf", "function")}
    assert modules["0.weight"] == modules["0.bias"] == "0"
    assert modules["2.weight"] == modules["2.bias"] == "2"
    assert modules["logits"] == "2"          # AddmmBackward0 of the last Linear, named by its output
    assert modules["ReluBackward0"] == "1"   # the nn.ReLU whose forward recorded it
    json.dumps(graph.to_dict())


def activation_modules(lib, model, inputs) -> dict:
    """``{grad_fn name: [module of each such node]}`` of ``model(inputs).pow(2).mean()``."""
    loss = model(inputs).pow(2).mean()
    modules = {}
    for node in graph_of(loss, model=model).nodes:
        if node.kind == "function":
            modules.setdefault(node.name, []).append(node.module)
    return modules


@pytest.mark.parametrize("library", ["gradviz", "torch"])
def test_an_activation_inside_a_block_is_drawn_in_that_blocks_frame(library, request):
    """gradviz's modules note which nodes their forward recorded: each activation is in the
    nn.Tanh that made it (``0.1`` inside the block ``0``; ``1`` at the top). torch's graph keeps
    no such note, so a parameterless node there belongs to the innermost module enclosing both its
    input's and its consumer's modules: the Tanh between the block's two Linears is the block's,
    the Tanh between two top-level modules the model's own (no frame). The loss is in none."""
    lib = gv if library == "gradviz" else request.getfixturevalue("torch")
    lib.manual_seed(0)
    block = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 4))
    model = lib.nn.Sequential(block, lib.nn.Tanh(), lib.nn.Linear(4, 1))
    modules = activation_modules(lib, model, lib.randn(2, 3))
    expected = ["0.1", "1"] if library == "gradviz" else ["0", None]
    assert sorted(modules["TanhBackward0"], key=str) == expected
    assert sorted(modules["AddmmBackward0"]) == ["0.0", "0.2", "2"]
    assert modules["PowBackward0"] == modules["MeanBackward0"] == [None]


@pytest.mark.parametrize("library", ["gradviz", "torch"])
def test_a_blocks_last_activation_is_in_the_block_when_its_module_noted_it(library, request):
    """The ReLU that ends a block feeds the next top-level module: only the note gradviz's
    ``Module.__call__`` leaves tells that it was made inside the block; torch's graph cannot."""
    lib = gv if library == "gradviz" else request.getfixturevalue("torch")
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU()), lib.nn.Linear(4, 1))
    loss = model(lib.randn(2, 3)).pow(2).mean()
    graph = graph_of(loss, model=model)
    relu = next(node for node in graph.nodes if node.name == "ReluBackward0")
    assert relu.module == ("0.1" if library == "gradviz" else None)
    layout = compute_layout(graph, engine="layered")
    block = next(group for group in layout["groups"] if group["label"] == "0")
    assert (relu.id in block["members"]) == (library == "gradviz")


def test_explicit_names_win_over_the_models_parameter_paths():
    loss, model, names = two_layer(gv)
    graph = graph_of(loss, {**names, "w_out": model[2].weight}, model)
    assert "w_out" in by_label(graph) and "2.weight" not in by_label(graph)
    assert by_label(graph)["w_out"].module == "2"


# ---------------------------------------------------------------- the same Graph from gradviz and torch

def picture(graph: Graph) -> dict:
    """What both libraries can know about a graph: everything but what only one of them keeps.

    torch keeps no record of the inputs that need no gradient (gradviz draws them as what they
    were), and records the output shape of every function node (gradviz only of named ones).
    """
    nodes = []
    for node in graph.nodes:
        known = node.kind != "constant" and (node.kind != "function" or node.label != node.name)
        nodes.append({"id": node.id, "kind": node.kind, "name": node.name if node.kind != "constant" else None,
                      "label": node.label if node.kind != "constant" else None,
                      "shape": node.shape if known else None, "dtype": node.dtype if known else None,
                      "module": node.module, "note": node.note,
                      "saved": [(saved.name, saved.freed) for saved in node.saved],
                      "formula": [formula.input for formula in node.formula]})
    edges = [edge.to_dict() for edge in graph.edges]
    return {"root": graph.root, "nodes": nodes, "edges": edges}


def both(torch, program, *args):
    """``(gradviz Graph, torch Graph)`` of the same program, labelled the same way."""
    graphs = []
    for lib in (gv, torch):
        result = program(lib, *args)
        loss, names, model = (result[0], result[-1], result[1] if len(result) == 3 else None)
        graphs.append(graph_of(loss, names, model))
    return graphs


@pytest.mark.parametrize("program", [lambda lib: lesson_tensors(lib=lib), with_numbers, two_layer],
                         ids=["lesson", "numbers", "two-layer-model"])
def test_the_same_program_gives_the_same_graph_from_gradviz_and_torch(torch, program):
    mine, theirs = both(torch, program)
    assert (mine.source, theirs.source) == ("gradviz", "torch")
    mine_picture, theirs_picture = picture(mine), picture(theirs)
    for node, ours, their in zip(mine.nodes, mine_picture["nodes"], theirs_picture["nodes"]):
        if node.kind == "function" and ours["module"] != their["module"]:
            # gradviz's modules note which nodes their forward made; torch's are inferred from the
            # parameters around a node, which places a parameterless one less deep, never elsewhere
            assert their["module"] is None or ours["module"].startswith(their["module"] + "."), node.name
            ours["module"] = their["module"]
    assert mine_picture == theirs_picture


def test_tensor_to_label_names_work_the_same_for_torch(torch):
    loss, names = lesson_tensors(lib=torch)
    forward = graph_of(loss, names)
    backward = graph_of(loss, {tensor: label for label, tensor in names.items()})
    assert picture(forward) == picture(backward)
    assert by_label(backward)["z"].name == "AddBackward0"


def test_graphless_and_leaf_outputs_are_the_same_for_both(torch):
    for lib in (gv, torch):
        assert graph_of(lib.ones(3)).node("n0").note == NO_GRAPH_NOTE
        leaf = lib.tensor([1.0, 2.0], requires_grad=True)
        graph = graph_of(leaf, {"leaf": leaf})
        assert [(n.kind, n.label, n.note) for n in graph.nodes] == [
            ("output", "leaf", LEAF_OUTPUT_NOTE), ("accumulate", "AccumulateGrad", None), ("leaf", "leaf", LEAF_NOTE)]


def test_freed_saved_tensors_show_the_same_for_both(torch):
    pictures = []
    for lib in (gv, torch):
        loss, names = lesson_tensors(lib=lib)
        loss.backward()
        graph = graph_of(loss, names)
        assert all(saved.freed and saved.value is None for node in graph.nodes for saved in node.saved)
        assert by_label(graph)["x"].grad.preview == "13."
        pictures.append(picture(graph))
    assert pictures[0] == pictures[1]


def test_saved_values_are_summarised_per_tensor_for_both(torch):
    """Python numbers saved by several nodes keep their own values (summaries are shared only per tensor)."""
    for lib in (gv, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        graph = graph_of((a * 2 * 3 * 4).sum())
        saved = [(saved.name, saved.value.preview) for node in graph.nodes for saved in node.saved]
        assert saved == [("other", "4"), ("other", "3"), ("other", "2")]


def test_new_node_makes_the_same_frozen_node_as_the_dataclass():
    """``model.new_node`` (the walk's fast constructor) gives the object ``GraphNode(**fields)`` gives."""
    import dataclasses

    from gradviz.snapshot.model import GraphNode, new_node

    fields = dict(id="n1", kind="function", name="MulBackward0", label="z", shape=(2,), dtype="float32",
                  module="fc1", order=2)
    node = new_node("n1", "function", "MulBackward0", "z", (2,), "float32", module="fc1", order=2)
    assert node == GraphNode(**fields) and repr(node) == repr(GraphNode(**fields))
    assert hash(node) == hash(GraphNode(**fields)) and node.saved == () and node.note is None
    assert vars(node) == vars(GraphNode(**fields))  # every field, in the dataclass's order
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.label = "w"
    with pytest.raises(TypeError, match="missing"):
        new_node("n1")


def test_a_trace_made_in_one_loop_equals_the_stepped_one():
    """``traced_steps`` (one loop, grad mode set once) gives the Steps ``backward_steps`` yields,
    and a custom Function's backward sees the same grad mode under both."""
    from gradviz.autograd.engine import backward_steps, traced_steps
    from gradviz.snapshot import observe_all_steps

    seen = []

    class Cube(gv.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            seen.append(gv.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return grad * 3 * x ** 2

    x = gv.tensor([[1.0, -2.0, 3.0], [0.5, 0.0, 4.0]], requires_grad=True)
    w = gv.tensor([0.3, -0.7, 1.1], requires_grad=True)
    y = x.clone()
    y[0] = x[0] * w
    outputs = [(Cube.apply(y) * w).tanh().sum(), (x * w).exp(), shapes_chain(30)]
    for output in outputs:
        gradient = None if output.numel() == 1 else gv.ones_like(output)
        stepped = tuple(backward_steps(output, gradient, retain_graph=True, dry_run=True, run_hooks=False))
        once = traced_steps(output, gradient)
        assert len(observe_all_steps(output, gradient)) == len(once) == len(stepped) > 3
        assert [(s.index, s.node) for s in once] == [(s.index, s.node) for s in stepped]
        for a, b in zip(once, stepped):
            assert same(a.grad_before, b.grad_before) and same(a.grad_after, b.grad_after)
            for field in ("grad_outputs", "grad_inputs"):
                assert len(getattr(a, field)) == len(getattr(b, field))
                assert all(same(p, q) for p, q in zip(getattr(a, field), getattr(b, field)))
            assert [[sender for sender, _ in pieces] for pieces in a.contributions] == \
                [[sender for sender, _ in pieces] for pieces in b.contributions]
    assert seen == [False] * 3 and gv.is_grad_enabled() and x.grad is None and w.grad is None


def same(a, b) -> bool:
    import numpy as np

    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def shapes_chain(length):
    from fixtures import shapes

    return shapes.chain(length)
