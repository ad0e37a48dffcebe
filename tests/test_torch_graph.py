"""Real PyTorch graphs: snapshot (interop/torch_source.py) and stepping (interop/torch_steps.py).

Every expectation is computed from torch itself in the test: a direct ``next_functions`` walk,
torch's own node hooks, and a plain ``loss.backward()`` on an identical graph.
"""
import gc
import json
import subprocess
import sys
import weakref

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from fixtures.torch_models import ResNet18  # noqa: E402
from gradviz.interop import torch_steps  # noqa: E402
from gradviz.interop.torch_source import build_torch_graph  # noqa: E402
from gradviz.interop.torch_steps import torch_backward_steps  # noqa: E402
from gradviz.snapshot.trace import trace_to_dict  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


# ---------------------------------------------------------------- helpers, independent of gradviz

def all_nodes(root):
    """Every node reachable from root, found with a plain stack (the test's own walk)."""
    found, stack, seen = [], [root], {id(root)}
    while stack:
        node = stack.pop()
        found.append(node)
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return found


def torch_run_order(loss, **backward_kwargs):
    """The nodes in the order torch's engine runs them, seen by pre-hooks the test registers."""
    order = []
    handles = [node.register_prehook(lambda grads, node=node: order.append(node))
               for node in all_nodes(loss.grad_fn)]
    try:
        loss.backward(**backward_kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return order


def mlp_problem(seed=0, device="cpu"):
    """The lesson's network: a tensor used twice, a constant input, a bias, two layers."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(8, 3, generator=gen).to(device)
    target = (torch.rand(8, 1, generator=gen) > 0.5).float().to(device)
    w1 = torch.randn(3, 5, generator=gen).to(device).requires_grad_()
    b1 = torch.zeros(5, device=device, requires_grad=True)
    w2 = torch.randn(5, 1, generator=gen).to(device).requires_grad_()
    hidden = torch.tanh(x @ w1 + b1)
    logits = hidden @ w2 + (hidden * hidden).sum(dim=1, keepdim=True) * 0.1
    loss = nn.functional.binary_cross_entropy_with_logits(logits, target) + (w1 ** 2).sum() * 1e-3
    return loss, {"x": x, "w1": w1, "b1": b1, "w2": w2, "hidden": hidden, "loss": loss}


def leaves(names):
    return [names[key] for key in ("w1", "b1", "w2")]


# ---------------------------------------------------------------- graph snapshot

def test_node_names_and_edges_equal_a_direct_next_functions_walk():
    loss, names = mlp_problem()
    graph = build_torch_graph(loss, names=names)
    nodes = all_nodes(loss.grad_fn)
    expected_edges = set()
    constants = 0
    for node in nodes:
        node_id = graph.id_of(node)
        assert node_id is not None
        assert graph.node(node_id).name == type(node).__name__
        for slot, (child, _) in enumerate(node.next_functions):
            if child is None:
                constants += 1
                continue
            expected_edges.add((graph.id_of(child), node_id, slot))
    data_edges = [e for e in graph.edges if e.kind == "data"]
    from_functions = {(e.source, e.target, e.slot) for e in data_edges
                      if graph.node(e.source).kind != "constant"}
    assert from_functions == expected_edges
    assert sum(1 for e in data_edges if graph.node(e.source).kind == "constant") == constants
    accumulates = [n for n in nodes if type(n).__name__ == "AccumulateGrad"]
    assert len(graph) == 1 + len(nodes) + len(accumulates) + constants
    assert [n.id for n in graph.nodes] == [f"n{i}" for i in range(len(graph))]
    assert graph.root == "n0" and graph.node("n0").kind == "output"
    assert graph.source == "torch"


def test_leaves_link_to_their_accumulate_grad_and_take_labels():
    loss, names = mlp_problem()
    graph = build_torch_graph(loss, names=names)
    for node in all_nodes(loss.grad_fn):
        if type(node).__name__ != "AccumulateGrad":
            continue
        accumulate_id = graph.id_of(node)
        [edge] = [e for e in graph.edges if e.target == accumulate_id and e.kind == "variable"]
        leaf = graph.node(edge.source)
        assert leaf.kind == "leaf"
        label = next(k for k, v in names.items() if v is node.variable)
        assert leaf.label == label == leaf.name
        assert leaf.shape == tuple(node.variable.shape)
    assert graph.node("n0").label == "loss"
    hidden_node = graph.node(graph.id_of(names["hidden"].grad_fn))
    assert hidden_node.label == "hidden" and hidden_node.name == "TanhBackward0"
    assert hidden_node.value is not None


def test_snapshot_is_deterministic_and_json_ready():
    first = build_torch_graph(mlp_problem()[0]).to_dict()
    second = build_torch_graph(mlp_problem()[0]).to_dict()
    assert first == second
    json.dumps(first)


def test_saved_tensors_are_shown_then_marked_freed_after_backward():
    a = torch.randn(4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    loss = (a * b).sum()
    mul = graph_node_named(build_torch_graph(loss), "MulBackward0")
    assert {s.name for s in mul.saved} == {"self", "other"}
    assert all(not s.freed and s.value.shape == (4,) for s in mul.saved)
    loss.backward()
    mul = graph_node_named(build_torch_graph(loss), "MulBackward0")
    assert mul.saved and all(s.freed and s.value is None for s in mul.saved)


def graph_node_named(graph, name):
    return next(n for n in graph.nodes if n.name == name)


def test_tensors_without_a_graph_give_one_node_with_a_note():
    plain = torch.randn(3)
    for tensor in (plain, torch.randn(3, requires_grad=True).detach()):
        graph = build_torch_graph(tensor)
        assert len(graph) == 1 and graph.edges == ()
        assert "does not require grad" in graph.node("n0").note


def test_a_leaf_shows_its_accumulate_grad_so_its_backward_can_be_stepped():
    leaf = torch.randn(3, requires_grad=True)
    graph = build_torch_graph(leaf, names={"leaf": leaf})
    assert [(n.kind, n.label) for n in graph.nodes] == [
        ("output", "leaf"), ("accumulate", "AccumulateGrad"), ("leaf", "leaf")]
    assert "leaf" in graph.node("n0").note
    trace = trace_to_dict(torch_backward_steps(leaf, torch.ones(3), dry_run=True), graph)
    assert [(entry["node"], entry["leaf"]) for entry in trace] == [("n1", "n2")]
    assert leaf.grad is None


def test_torch_func_tensors_get_a_note_instead_of_an_error():
    seen = []

    def f(a):
        seen.append(build_torch_graph(a.sin()))
        return a.sin().sum()

    torch.func.grad(f)(torch.randn(3))
    torch.func.vmap(lambda row: seen.append(build_torch_graph(row.cos())) or row)(torch.randn(2, 3))
    assert len(seen) == 2
    assert all("torch.func" in graph.node("n0").note for graph in seen)


def test_torch_compile_output_is_one_node_with_a_note():
    compiled = torch.compile(lambda a: (a.sin() * a).sum(), backend="aot_eager")
    a = torch.randn(3, requires_grad=True)
    graph = build_torch_graph(compiled(a), names={"a": a})
    assert "torch.compile" in graph.node("n0").note
    assert "CompiledFunction" in graph.node("n1").name
    assert any(n.kind == "leaf" and n.label == "a" for n in graph.nodes)


def test_non_tensor_input_is_a_type_error():
    with pytest.raises(TypeError):
        build_torch_graph([1.0, 2.0])


# ---------------------------------------------------------------- module grouping

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
        self.head = nn.Linear(6, 1, bias=False)

    def forward(self, x):
        return self.head(self.encoder(x)).sum()


def test_model_labels_parameters_and_groups_nodes_by_owning_module():
    torch.manual_seed(0)
    model = Net()
    graph = build_torch_graph(model(torch.randn(2, 4)), model=model)
    leaf_labels = {n.label: n.module for n in graph.nodes if n.kind == "leaf"}
    assert leaf_labels == {"encoder.0.weight": "encoder.0", "encoder.0.bias": "encoder.0",
                           "head.weight": "head"}
    modules = {n.name: n.module for n in graph.nodes if n.kind == "function"}
    assert modules["AddmmBackward0"] == "encoder.0"
    assert modules["MmBackward0"] == "head"      # through TBackward0 of head.weight
    assert modules["ReluBackward0"] is None
    assert modules["SumBackward0"] is None


# ---------------------------------------------------------------- stepping torch's backward

def test_step_order_equals_the_order_torch_hooks_see():
    loss, _ = mlp_problem()
    steps = list(torch_backward_steps(loss, retain_graph=True))
    expected = torch_run_order(loss)
    assert [step.node for step in steps] == expected
    assert [step.index for step in steps] == list(range(len(expected)))
    assert len(steps) == len(all_nodes(loss.grad_fn))


def test_grad_after_stepping_equals_loss_backward():
    stepped_loss, stepped = mlp_problem()
    plain_loss, plain = mlp_problem()
    for tensor in leaves(stepped) + leaves(plain):  # accumulation into existing .grad too
        tensor.grad = torch.full_like(tensor, 0.5)
    list(torch_backward_steps(stepped_loss))
    plain_loss.backward()
    for mine, theirs in zip(leaves(stepped), leaves(plain)):
        assert torch.equal(mine.grad, theirs.grad)


def test_steps_carry_grads_in_out_and_leaf_grad_before_after():
    loss, names = mlp_problem()
    steps = list(torch_backward_steps(loss, retain_graph=True))
    assert steps[0].node is loss.grad_fn
    assert torch.equal(steps[0].grad_outputs[0], torch.tensor(1.0))
    for step in steps:
        if step.is_accumulate:
            assert step.grad_inputs == ()
            assert step.grad_before is None
            assert torch.equal(step.grad_after, step.node.variable.grad)
        else:
            assert len(step.grad_inputs) == len(step.node.next_functions)
        for arrived, pieces in zip(step.grad_outputs, step.contributions):
            total = sum(piece for _, piece in pieces)
            assert torch.allclose(total, arrived)
    hidden_step = next(s for s in steps if s.node is names["hidden"].grad_fn)
    senders = [type(sender).__name__ for sender, _ in hidden_step.contributions[0]]
    assert sorted(senders) == ["MmBackward0", "MulBackward0", "MulBackward0"]  # hidden * hidden


def test_dry_run_leaves_grad_untouched_and_keeps_the_graph():
    loss, names = mlp_problem()
    w1, b1, w2 = leaves(names)
    w2.grad = torch.ones_like(w2)
    kept = w2.grad
    steps = list(torch_backward_steps(loss, dry_run=True))
    assert w1.grad is None and b1.grad is None
    assert w2.grad is kept and torch.equal(kept, torch.ones_like(w2))
    assert any(s.is_accumulate and s.grad_after is not None for s in steps)
    loss.backward()  # the graph is still there


def test_trace_names_every_step_by_graph_id():
    loss, names = mlp_problem()
    graph = build_torch_graph(loss, names=names)
    trace = trace_to_dict(torch_backward_steps(loss, dry_run=True), graph)
    assert all(entry["node"] is not None for entry in trace)
    leaf_ids = {n.id for n in graph.nodes if n.kind == "leaf"}
    assert {entry["leaf"] for entry in trace if entry["leaf"]} == leaf_ids
    json.dumps(trace)


def test_backward_from_a_leaf_runs_its_accumulate_grad():
    leaf = torch.randn(3, requires_grad=True)
    [step] = list(torch_backward_steps(leaf, torch.ones(3)))
    assert step.is_accumulate and torch.equal(leaf.grad, torch.ones(3))


# ---------------------------------------------------------------- hooks are removed

class TrackedRecorder(torch_steps._BackwardRecorder):
    instances = []

    def __init__(self, *args):
        super().__init__(*args)
        TrackedRecorder.instances.append(weakref.ref(self))


@pytest.fixture
def tracked(monkeypatch):
    TrackedRecorder.instances = []
    monkeypatch.setattr(torch_steps, "_BackwardRecorder", TrackedRecorder)
    return TrackedRecorder.instances


def test_hooks_are_gone_afterwards(tracked):
    loss, _ = mlp_problem()
    list(torch_backward_steps(loss, retain_graph=True))
    gc.collect()
    assert [ref() for ref in tracked] == [None]  # no node holds a hook closure any more
    before = torch_run_order(loss, retain_graph=True)
    assert before == torch_run_order(loss)


class Explodes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom")


def test_hooks_are_gone_when_backward_fails(tracked):
    a = torch.randn(3, requires_grad=True)
    loss = Explodes.apply(a.exp()).sum()
    with pytest.raises(ValueError, match="boom"):
        list(torch_backward_steps(loss, retain_graph=True))
    gc.collect()
    assert [ref() for ref in tracked] == [None]


def test_dry_run_over_a_freed_graph_raises_and_cleans_up(tracked):
    loss, names = mlp_problem()
    loss.backward()
    grads = [leaf.grad.clone() for leaf in leaves(names)]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        list(torch_backward_steps(loss, dry_run=True))
    gc.collect()
    assert [ref() for ref in tracked] == [None]
    assert all(torch.equal(g, leaf.grad) for g, leaf in zip(grads, leaves(names)))


# ---------------------------------------------------------------- scale

def deep_chain(layers, seed=0):
    """x = tanh(x @ w_i + b_i), 1-D x: Unsqueeze, Mm, Squeeze, Add, Tanh and two leaves a layer."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(4, generator=gen)
    params = []
    for _ in range(layers):
        w = (torch.randn(4, 4, generator=gen) * 0.5).requires_grad_()
        b = torch.zeros(4, requires_grad=True)
        params += [w, b]
        x = torch.tanh(x @ w + b)
    return x.sum(), params


def test_two_thousand_layers_snapshot_and_step_without_recursion_error():
    loss, params = deep_chain(2000)
    assert sys.getrecursionlimit() < 18000
    graph = build_torch_graph(loss)
    assert len(graph) >= 18000
    json.dumps(graph.to_dict())
    steps = list(torch_backward_steps(loss, dry_run=True))
    assert all(p.grad is None for p in params)
    assert len(steps) == len(all_nodes(loss.grad_fn))


def test_resnet18_sized_model_snapshots_with_module_groups():
    torch.manual_seed(0)
    model = ResNet18()
    loss = nn.functional.cross_entropy(model(torch.randn(2, 3, 32, 32)), torch.tensor([1, 3]))
    graph = build_torch_graph(loss, model=model)
    leaves_by_label = {n.label: n for n in graph.nodes if n.kind == "leaf"}
    assert set(leaves_by_label) == {name for name, _ in model.named_parameters()}
    for node_name, module_type in (("ConvolutionBackward0", nn.Conv2d),
                                   ("NativeBatchNormBackward0", nn.BatchNorm2d)):
        grouped = [n.module for n in graph.nodes if n.name == node_name]
        owners = [path for path, m in model.named_modules() if isinstance(m, module_type)]
        assert sorted(grouped) == sorted(owners)  # each conv / norm node in its own module
    assert graph_node_named(graph, "AddmmBackward0").module == "fc"
    json.dumps(graph.to_dict())
    steps = list(torch_backward_steps(loss, dry_run=True))
    assert all(p.grad is None for p in model.parameters())
    assert [s.node for s in steps] == torch_run_order(loss)


# ---------------------------------------------------------------- laziness and CUDA

def test_importing_the_torch_modules_does_not_import_torch():
    code = ("import sys; import gradviz.interop.torch_source, gradviz.interop.torch_steps, "
            "gradviz.interop.compare; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@cuda
def test_cuda_graph_snapshots_and_steps_like_backward():
    stepped_loss, stepped = mlp_problem(device="cuda")
    plain_loss, plain = mlp_problem(device="cuda")
    graph = build_torch_graph(stepped_loss, names=stepped)
    assert graph.node("n0").value is not None
    steps = list(torch_backward_steps(stepped_loss, retain_graph=True))
    plain_loss.backward()
    for mine, theirs in zip(leaves(stepped), leaves(plain)):
        assert mine.grad.is_cuda and torch.equal(mine.grad, theirs.grad)
    assert [s.node for s in steps] == torch_run_order(stepped_loss)
    trace_to_dict(steps, graph)


# ---------------------------------------------------------------- compare (interop/compare.py)

def small_loss(values=(1.0, 2.0, 3.0), module=torch, second="mul"):
    """The same lines for torch or gradviz: a used twice, so one node gets two contributions."""
    a = module.tensor(list(values), requires_grad=True)
    b = module.tensor([0.5, -1.0, 2.0], requires_grad=True)
    mixed = a * b if second == "mul" else a - b
    return (mixed + a * a).sum(), {"a": a, "b": b}


def test_compare_reports_agreement_for_identical_programs():
    from gradviz.interop.compare import compare

    loss, _ = small_loss()
    reference, names = small_loss()
    result = compare(loss, reference, names=names)
    assert result.names_agree and result.values_agree and result.order_agree and result.agree
    assert result.matched_nodes == len(all_nodes(reference.grad_fn))
    assert "names       agree" in result.report()
    assert names["a"].grad is None and loss.requires_grad  # dry runs: no .grad written


def test_compare_names_the_disagreements():
    from gradviz.interop.compare import compare

    reference, names = small_loss()
    different_op = compare(small_loss(second="sub")[0], reference, names=names)
    assert not different_op.names_agree and not different_op.order_agree
    assert "gradviz has SubBackward0, torch has MulBackward0" in different_op.report()
    different_values = compare(small_loss(values=(1.0, 2.0, 4.0))[0], reference, names=names)
    assert different_values.names_agree and different_values.order_agree
    assert not different_values.values_agree
    assert "leaf a" in str(different_values)


def test_compare_gradviz_with_torch():
    gv = pytest.importorskip("gradviz")
    if not callable(getattr(gv, "tensor", None)):
        pytest.skip("gradviz's public tensor API is not wired yet")
    from gradviz.interop.compare import compare

    reference, names = small_loss()
    result = compare(small_loss(module=gv)[0], reference, names=names)
    assert result.agree, result.report()
