"""The backward engine: PyTorch's execution order, accumulation, hooks, and the stepper.

Order tests run the same program in torch and in gradviz; torch's order is read from
pre-hooks registered on every node of its graph, so the oracle is torch's own engine.
"""
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz as gv

torch = pytest.importorskip("torch")


def torch_order(output, gradient=None):
    """The node names in the order torch's engine runs them (via pre-hooks on every node)."""
    order, handles, seen, stack = [], [], set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        handles.append(node.register_prehook(lambda grads, node=node: order.append(node.name())))
        stack.extend(fn for fn, _ in node.next_functions)
    try:
        output.backward(gradient)
    finally:
        for handle in handles:
            handle.remove()
    return order


def gradviz_order(output, gradient=None):
    return [step.name for step in gv.autograd.backward_steps(output, gradient)]


def run_both(program, leaves):
    """Run ``program(lib, *leaves)`` in torch and in gradviz on the same float64 values."""
    torch_leaves = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in leaves]
    gv_leaves = [gv.tensor(v, dtype=gv.float64, requires_grad=True) for v in leaves]
    return (program(torch, *torch_leaves), torch_leaves), (program(gv, *gv_leaves), gv_leaves)


PROGRAMS = {
    "chain": lambda t, x: (x * 2).sin().exp().sum(),
    "reuse": lambda t, x: (x * x + x).sum(),
    "diamond": lambda t, x, y: ((x * y).tanh() + (x + y).sigmoid()).mean(),
    "seed_cos": lambda t, x: t.sin(2 * x * (t.cos(x) ** 2)),
    "two_leaves_shared": lambda t, x, y: (x @ y).sum() + (x * 3).sum() + y.pow(2).sum(),
    "branches": lambda t, x: ((x ** 2).sum() * (x.exp()).sum() - x.relu().mean()),
}
VALUES = {
    "chain": [[0.5, -1.0, 2.0]],
    "reuse": [[1.0, 2.0]],
    "diamond": [[0.1, 0.2], [0.3, -0.4]],
    "seed_cos": [4.0],
    "two_leaves_shared": [[[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 1.5]]],
    "branches": [[1.0, -2.0, 3.0]],
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_step_order_and_grads_match_torch(name):
    (t_out, t_leaves), (g_out, g_leaves) = run_both(PROGRAMS[name], VALUES[name])
    expected = torch_order(t_out)
    assert gradviz_order(g_out) == expected
    for t_leaf, g_leaf in zip(t_leaves, g_leaves):
        np.testing.assert_allclose(g_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-10)


UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "relu", "neg"]
BINARY = ["add", "mul", "sub"]


@st.composite
def random_programs(draw):
    """A random straight-line program over two leaves, as a list of (op, operand indices)."""
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        available = 2 + len(steps)
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(UNARY)), (draw(st.integers(0, available - 1)),)))
        else:
            steps.append((draw(st.sampled_from(BINARY)),
                          (draw(st.integers(0, available - 1)), draw(st.integers(0, available - 1)))))
    return steps


def run_program(lib, steps, x, y):
    values = [x, y]
    for op, args in steps:
        operands = [values[i] for i in args]
        values.append(getattr(lib, op)(*operands) if op != "neg" else -operands[0])
    return sum(v.sum() for v in values[2:]) if len(values) > 2 else values[0].sum()


@settings(max_examples=60, deadline=None)
@given(random_programs(), st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.lists(st.floats(-2, 2), min_size=3, max_size=3))
def test_random_programs_match_torch(steps, x_values, y_values):
    (t_out, t_leaves), (g_out, g_leaves) = run_both(
        lambda lib, x, y: run_program(lib, steps, x, y), [x_values, y_values])
    assert gradviz_order(g_out) == torch_order(t_out)
    np.testing.assert_allclose(g_out.item(), t_out.item(), rtol=1e-9, atol=1e-12)
    for t_leaf, g_leaf in zip(t_leaves, g_leaves):
        if t_leaf.grad is None:
            assert g_leaf.grad is None
        else:
            np.testing.assert_allclose(g_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_step_records_what_arrives_and_leaves():
    x = gv.tensor(3.0, requires_grad=True)
    y = x * x
    steps = list(gv.autograd.backward_steps(y))
    assert [s.name for s in steps] == ["MulBackward0", "torch::autograd::AccumulateGrad"]
    mul, accumulate = steps
    assert [float(g) for g in mul.grad_outputs] == [1.0]
    assert [float(g) for g in mul.grad_inputs] == [3.0, 3.0]
    # x is used twice: its AccumulateGrad shows both contributions and their sum
    assert [float(g) for _, g in accumulate.contributions[0]] == [3.0, 3.0]
    assert float(accumulate.grad_outputs[0]) == 6.0
    assert accumulate.grad_before is None and float(accumulate.grad_after) == 6.0
    assert x.grad.item() == 6.0


def test_accumulate_step_shows_grad_before_and_after():
    x = gv.tensor(2.0, requires_grad=True)
    y = x ** 2
    y.backward(retain_graph=True)
    steps = list(gv.autograd.backward_steps(y, retain_graph=True))
    assert float(steps[-1].grad_before) == 4.0 and float(steps[-1].grad_after) == 8.0
    assert x.grad.item() == 8.0


def test_dry_run_changes_nothing():
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    y = (x.sigmoid() * 3).sum()
    steps = list(gv.autograd.backward_steps(y, dry_run=True))
    assert x.grad is None
    assert steps[-1].grad_after is not None
    y.backward()  # the saved tensors were not freed by the dry run
    np.testing.assert_allclose(x.grad.numpy(), steps[-1].grad_after)


def test_half_consumed_stepper_leaves_later_nodes_intact():
    x = gv.tensor(2.0, requires_grad=True)
    y = (x ** 2).exp()
    stepper = gv.autograd.backward_steps(y)
    first = next(stepper)
    assert first.name == "ExpBackward0"
    stepper.close()
    assert x.grad is None
    assert y.grad_fn.next_functions[0][0]._saved_self.item() == 2.0  # PowBackward0 not run yet


def test_backward_twice_depends_on_saved_tensors():
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    y = (x + x).sum()
    y.backward()
    y.backward()  # nothing was saved, so nothing was freed
    assert x.grad.tolist() == [4.0, 4.0]
    z = (x ** 2).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.backward()


def test_retain_graph_allows_second_backward_and_accumulates():
    x = gv.tensor(3.0, requires_grad=True)
    y = x ** 2
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 12.0
    x.grad.zero_()
    assert repr(x.grad) == "tensor(0.)"


def test_hooks_match_torch():
    def program(lib, log):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: log.append(("y", g.tolist())) or g * 10)
        x.register_hook(lambda g: log.append(("x", g.tolist())))
        z = y.sum()
        z.grad_fn.register_prehook(lambda grads: log.append(("pre", grads[0].tolist())))
        z.grad_fn.register_hook(lambda inputs, outputs: log.append(("post", inputs[0].tolist())))
        z.backward()
        return x.grad.tolist()

    torch_log, gv_log = [], []
    assert program(gv, gv_log) == program(torch, torch_log)
    assert gv_log == torch_log


def test_removed_hook_does_not_run():
    x = gv.tensor(1.0, requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(g))
    handle.remove()
    (x * 2).backward()
    assert calls == []


def test_retain_grad_and_non_leaf_warning():
    x = gv.tensor(4.0, requires_grad=True)
    y = 2 * x * gv.cos(x) ** 2
    z = gv.sin(y)
    z.backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert y.grad is None
    assert caught and caught[0].category is UserWarning
    assert str(caught[0].message).startswith("The .grad attribute of a Tensor that is not a leaf Tensor")
    assert f"{x.grad.item():.4f}" == "6.7924"
    a = gv.tensor(2.0, requires_grad=True)
    b = a * 3
    b.retain_grad()
    (b * b).backward()
    assert b.grad.item() == 12.0


def test_grad_modes_as_contexts_decorators_and_per_thread():
    x = gv.tensor(1.0, requires_grad=True)
    with gv.no_grad():
        assert not (x * 2).requires_grad
        with gv.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad

    @gv.no_grad()
    def predict(value):
        return value + 10

    assert not predict(x).requires_grad
    with gv.set_grad_enabled(False):
        assert not gv.is_grad_enabled()
    assert gv.is_grad_enabled()

    seen = []
    with gv.no_grad():
        thread = threading.Thread(target=lambda: seen.append(gv.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


def test_autograd_grad_returns_without_accumulating():
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    w = gv.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    (gx,) = gv.autograd.grad(y, x, retain_graph=True)
    assert gx.tolist() == [3.0, 4.0] and x.grad is None
    gx, gw = gv.autograd.grad(y, [x, w])
    assert gw.tolist() == [1.0, 2.0]
    unused = gv.tensor(1.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        gv.autograd.grad((x * 2).sum(), [x, unused])
    assert gv.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)[1] is None


def test_backward_with_inputs_only_fills_those():
    x = gv.tensor(1.0, requires_grad=True)
    w = gv.tensor(2.0, requires_grad=True)
    (x * w).backward(inputs=[w])
    assert x.grad is None and w.grad.item() == 1.0


def test_gradient_argument_for_non_scalar_outputs():
    x = gv.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(gv.tensor([1.0, 0.1, 0.01]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 0.2, 0.02], rtol=1e-6)


def test_deep_chain_has_no_recursion_error():
    x = gv.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    assert len(gv.graph(y, names={})) > 100_000


def test_ready_queue_ties_break_like_torch():
    # Many AccumulateGrad nodes become ready together: torch's heap decides their order.
    values = [[float(i)] for i in range(7)]
    (t_out, _), (g_out, _) = run_both(lambda lib, *xs: sum((v * (i + 1)).sum() for i, v in enumerate(xs)), values)
    assert gradviz_order(g_out) == torch_order(t_out)


def test_hooks_run_with_grad_mode_off_like_torch():
    def program(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(lib.is_grad_enabled()))
        z = y.sum()
        z.grad_fn.register_prehook(lambda grads: seen.append(lib.is_grad_enabled()))
        z.grad_fn.register_hook(lambda inputs, outputs: seen.append(lib.is_grad_enabled()))
        z.backward()
        return seen

    assert program(gv) == program(torch) == [False, False, False]


def test_dry_run_does_not_fill_retained_grads():
    x = gv.tensor(2.0, requires_grad=True)
    y = x * 3
    y.retain_grad()
    list(gv.autograd.backward_steps(y * y, dry_run=True))
    assert y.grad is None


def test_a_hook_that_sends_no_gradient_stops_that_path_only():
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        z = y * 2
        z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (None, None))
        (z.sum() + (x * 3).sum()).backward()
        return x.grad.tolist()

    assert program(gv) == program(torch) == [3.0, 3.0]
