"""The backward engine: PyTorch's execution order, accumulation, hooks, and the stepper.

Order tests run the same program in torch and in gradviz; torch's order is read from
pre-hooks registered on every node of its graph, so the oracle is torch's own engine. Tests that
take the ``torch`` fixture skip without torch; the others run in the torch-blocked pass too.
"""
import shutil
import subprocess
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gradviz as gv
from gradviz.autograd import engine
from gradviz.autograd.engine import GraphTask, InputBuffer, ReadyQueue, RecordingInputBuffer, make_grads
from gradviz.autograd.function import gradient_edge
from gradviz.autograd.node import ACCUMULATE_SEQUENCE_NR, FREED_MESSAGE
from orders import torch_order
from programs import random_programs, run_program


def gradviz_order(output, gradient=None):
    return [step.name for step in gv.autograd.backward_steps(output, gradient)]


def run_both(torch, program, leaves):
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
def test_step_order_and_grads_match_torch(torch, name):
    (t_out, t_leaves), (g_out, g_leaves) = run_both(torch, PROGRAMS[name], VALUES[name])
    expected = torch_order(t_out)
    assert gradviz_order(g_out) == expected
    for t_leaf, g_leaf in zip(t_leaves, g_leaves):
        np.testing.assert_allclose(g_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(random_programs(), st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.lists(st.floats(-2, 2), min_size=3, max_size=3))
def test_random_programs_match_torch(torch, steps, x_values, y_values):
    (t_out, t_leaves), (g_out, g_leaves) = run_both(
        torch, lambda lib, x, y: run_program(lib, steps, x, y), [x_values, y_values])
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


def test_hooks_match_torch(torch):
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


def test_a_leaf_hook_sees_a_summed_scalar_gradient_as_torch_does(torch):
    def program(lib):
        x = lib.tensor(2.0, requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(repr(g)) or g * 10)  # x * x: two pieces summed first
        (x * x).backward()
        return seen, repr(x.grad)

    assert program(gv) == program(torch)


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


def test_ready_queue_ties_break_like_torch(torch):
    # Many AccumulateGrad nodes become ready together: torch's heap decides their order.
    values = [[float(i)] for i in range(7)]
    (t_out, _), (g_out, _) = run_both(
        torch, lambda lib, *xs: sum((v * (i + 1)).sum() for i, v in enumerate(xs)), values)
    assert gradviz_order(g_out) == torch_order(t_out)


def test_hooks_run_with_grad_mode_off_like_torch(torch):
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


def test_a_hook_that_sends_no_gradient_stops_that_path_only(torch):
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        z = y * 2
        z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (None, None))
        (z.sum() + (x * 3).sum()).backward()
        return x.grad.tolist()

    assert program(gv) == program(torch) == [3.0, 3.0]


# -- the pieces of the engine, as engine.cpp names them -----------------------------------------------
def test_input_buffer_sums_what_arrives_and_a_recording_one_keeps_the_pieces():
    first, second = np.array([1.0, 2.0]), np.array([10.0, 20.0])
    summing = InputBuffer((None,))
    summing.add(0, first, "mul")
    summing.add(0, None, "hooked")  # an undefined gradient adds nothing
    summing.add(0, second, "exp")
    assert [g.tolist() for g in summing] == [[11.0, 22.0]]
    assert first.tolist() == [1.0, 2.0]  # the sum is a new array: a node may send one array on two edges

    recording = RecordingInputBuffer((None, None))
    recording.add(1, first, "mul")
    recording.add(1, None, "hooked")
    recording.add(1, second, "exp")
    assert recording[0] is None and recording[1].tolist() == [11.0, 22.0]
    assert [[(sender, g.tolist()) for sender, g in pieces] for pieces in recording.contributions] == [
        [], [("mul", [1.0, 2.0]), ("exp", [10.0, 20.0])]]


class _Task:
    """Stands in for a node in the ready queue: only its sequence number counts."""

    def __init__(self, sequence_nr, name):
        self._sequence_nr, self.name = sequence_nr, name


# Few distinct numbers, so that ties (every AccumulateGrad is UINT64_MAX) are common.
SEQUENCE_NRS = st.sampled_from([0, 1, 2, 3, 5, 8, ACCUMULATE_SEQUENCE_NR])
QUEUE_OPERATIONS = st.lists(st.one_of(SEQUENCE_NRS, st.just("pop")), max_size=60)


def _run_ready_queue(operations) -> list:
    """Push a task for each number, pop at each "pop" (when not empty), then drain: the names popped."""
    queue, popped = ReadyQueue(), []
    for index, operation in enumerate(operations):
        if operation != "pop":
            queue.push(_Task(operation, index), f"buffer {index}")
        elif queue.heap:
            popped.append(queue.pop()[0].name)
    while queue.heap:
        popped.append(queue.pop()[0].name)
    return popped


@given(QUEUE_OPERATIONS)
def test_ready_queue_always_pops_a_highest_sequence_number(operations):
    queue, present = ReadyQueue(), {}
    for index, operation in enumerate(operations + ["pop"] * len(operations)):
        if operation != "pop":
            queue.push(_Task(operation, index), f"buffer {index}")
            present[index] = operation
        elif queue.heap:
            task, input_buffer = queue.pop()
            assert input_buffer == f"buffer {task.name}"
            assert present.pop(task.name) == max([task._sequence_nr, *present.values()])
    assert not present


LIBSTDCXX_PRIORITY_QUEUE = r"""
#include <cstdint>
#include <iostream>
#include <queue>
#include <string>
#include <utility>
#include <vector>
// PyTorch's ReadyQueue: a std::priority_queue of tasks compared by sequence_nr alone.
using Task = std::pair<std::uint64_t, int>;
struct BySequenceNr {
  bool operator()(const Task& a, const Task& b) const { return a.first < b.first; }
};
int main() {
  std::priority_queue<Task, std::vector<Task>, BySequenceNr> queue;
  std::string operation;
  int index = 0;
  while (std::cin >> operation) {
    if (operation == "pop") {
      if (!queue.empty()) { std::cout << queue.top().second << "\n"; queue.pop(); }
    } else {
      queue.push({std::stoull(operation), index});
    }
    ++index;
  }
  while (!queue.empty()) { std::cout << queue.top().second << "\n"; queue.pop(); }
}
"""


@pytest.fixture(scope="module")
def libstdcxx_queue(tmp_path_factory):
    """A compiled std::priority_queue, the reference PyTorch's ready queue is built on."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("needs g++ to build the libstdc++ reference heap")
    folder = tmp_path_factory.mktemp("ready_queue")
    (folder / "queue.cpp").write_text(LIBSTDCXX_PRIORITY_QUEUE)
    subprocess.run([compiler, "-O1", "-o", str(folder / "queue"), str(folder / "queue.cpp")], check=True)
    return folder / "queue"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUEUE_OPERATIONS)
def test_ready_queue_breaks_ties_exactly_as_libstdcxx(libstdcxx_queue, operations):
    commands = "\n".join(str(operation) for operation in operations)
    result = subprocess.run([str(libstdcxx_queue)], input=commands, capture_output=True, text=True, check=True)
    assert _run_ready_queue(operations) == [int(line) for line in result.stdout.split()]


def test_graph_task_keeps_what_grad_captured_and_runs_only_what_leads_there():
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    w = gv.tensor([3.0, 4.0], requires_grad=True)
    hidden = x * w
    loss = hidden.exp().sum()
    task = GraphTask([gradient_edge(loss)], make_grads([loss], [None]), keep_graph=False)
    task.init_to_execute([gradient_edge(hidden)], accumulate_grad=False)
    exp_node = loss.grad_fn.next_functions[0][0]
    assert task.exec_info[exp_node].needed and not task.exec_info[hidden.grad_fn].needed
    assert task.exec_info[hidden.grad_fn].captures == [(0, 0)]  # (slot, index in grad()'s inputs)
    task.execute()
    (captured,) = task.captured_vars
    np.testing.assert_allclose(captured, np.exp([3.0, 8.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        exp_node._saved_result  # ran, and freed what it saved
    assert hidden.grad_fn._saved_self.tolist() == [1.0, 2.0]  # captured, not run: still has its tensors
    assert x.grad is None and w.grad is None


def test_backward_from_several_tensors_matches_torch(torch):
    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
        return x, w, [(x * w).exp().sum(), (x.sin() * 2).sum(), w * 5]

    tx, tw, t_outputs = program(torch)
    expected = torch_order(t_outputs, [None, torch.tensor(2.0, dtype=torch.float64), None])
    gx, gw, g_outputs = program(gv)
    task = GraphTask([gradient_edge(t) for t in g_outputs],
                     make_grads(g_outputs, [None, gv.tensor(2.0, dtype=gv.float64), None]),
                     keep_graph=False, record_steps=True)
    assert [step.name for step in task.steps()] == expected  # GraphRoot itself is no Step
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(gw.grad.numpy(), tw.grad.numpy())
    fresh_x, fresh_w, fresh_outputs = program(gv)  # and through the public entry point
    gv.autograd.backward(fresh_outputs, [None, gv.tensor(2.0, dtype=gv.float64), None])
    np.testing.assert_allclose(fresh_x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(fresh_w.grad.numpy(), tw.grad.numpy())


def test_grad_captures_after_the_tensor_hooks_exactly_when_torch_does(torch):
    def program(lib, inputs_of):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: log.append("y") or g * 10)
        x.register_hook(lambda g: log.append("x") or g * 100)
        z = (y * y).sum()
        grads = lib.autograd.grad(z, inputs_of(x, y), retain_graph=True)
        return [g.tolist() for g in grads], log, x.grad

    for inputs_of in (lambda x, y: y, lambda x, y: x, lambda x, y: [y, x], lambda x, y: [x, y]):
        assert program(gv, inputs_of) == program(torch, inputs_of)


def test_backward_with_inputs_retains_a_non_leaf_grad_like_torch(torch):
    def program(lib):
        log = []
        x = lib.tensor(2.0, requires_grad=True)
        y = x.exp()
        z = y.sin()
        x.register_hook(lambda g: log.append("x"))
        (z * 3).backward(inputs=[z])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # z retains its grad, so reading it does not warn
            z_grad = z.grad.item()
        return z_grad, z.retains_grad, x.grad, log, round(y.grad_fn._saved_result.item(), 5)  # not run: kept

    assert program(gv) == program(torch)
    for lib in (gv, torch):
        with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty."):
            (lib.tensor(1.0, requires_grad=True) * 2).backward(inputs=[])
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            (lib.tensor(1.0, requires_grad=True) * 2).backward(inputs=[lib.tensor(1.0)])


def test_a_node_that_receives_no_gradient_still_runs_its_hooks_like_torch(torch):
    def program(lib):
        log = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (None, None))
        accumulate = y.grad_fn.next_functions[0][0]
        x.register_hook(lambda g: log.append(("x", g)))
        accumulate.register_prehook(lambda grads: log.append(("pre", grads)))
        accumulate.register_hook(lambda grad_inputs, grad_outputs: log.append(("post", grad_inputs, grad_outputs)))
        return y.sum(), log, x

    t_out, t_log, t_x = program(torch)
    order = torch_order(t_out)
    g_out, g_log, g_x = program(gv)
    assert gradviz_order(g_out) == order  # AccumulateGrad runs, on nothing
    assert g_log == t_log == [("x", None), ("pre", (None,)), ("post", (), (None,))]
    assert g_x.grad is None and t_x.grad is None


def test_backward_steps_steps_torch_tensors_through_the_registered_engine(torch):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x.exp() * x).sum()
    names = [step.name for step in gv.autograd.backward_steps(loss, dry_run=True)]
    assert x.grad is None
    assert names == torch_order(loss)


def test_backward_steps_hands_foreign_tensors_to_their_engine(monkeypatch):
    class ForeignTensor:
        pass

    calls = []

    def foreign_steps(tensor, gradient, retain_graph, **options):
        calls.append((tensor, gradient, retain_graph, options))
        yield "a foreign step"

    monkeypatch.setattr(engine, "_foreign_engines", [])
    engine.register_foreign_engine(lambda tensor: isinstance(tensor, ForeignTensor), foreign_steps)
    foreign = ForeignTensor()
    assert list(gv.autograd.backward_steps(foreign, "seed", True, dry_run=True)) == ["a foreign step"]
    assert list(gv.autograd.backward_steps(foreign, run_hooks=False)) == ["a foreign step"]
    assert calls == [(foreign, "seed", True, {"dry_run": True}),
                     (foreign, None, None, {"dry_run": False, "run_hooks": False})]
    x = gv.tensor(2.0, requires_grad=True)
    assert [step.name for step in gv.autograd.backward_steps(x * 3)] == [
        "MulBackward0", "torch::autograd::AccumulateGrad"]


# -- stepping: half-consumed, and without the user's hooks ------------------------------------------
def _freed(read) -> bool:
    try:
        read()
    except RuntimeError as error:
        assert str(error) == FREED_MESSAGE
        return True
    return False


def test_a_half_consumed_stepper_leaves_the_graph_as_far_as_it_got():
    w = gv.tensor(3.0, requires_grad=True)
    x = gv.tensor(2.0, requires_grad=True)
    power = x ** 2
    loss = w * power.exp()
    exp_node, power_node = loss.grad_fn.next_functions[1][0], power.grad_fn
    stepper = gv.autograd.backward_steps(loss)
    taken = [next(stepper).name for _ in range(3)]
    assert gv.is_grad_enabled()  # between Steps the caller's own grad mode holds
    assert taken == ["MulBackward0", "torch::autograd::AccumulateGrad", "ExpBackward0"]
    assert w.grad.item() == pytest.approx(np.exp(4.0), rel=1e-6)  # reached: its .grad is written
    assert x.grad is None  # not reached yet
    assert _freed(lambda: loss.grad_fn._saved_self) and _freed(lambda: exp_node._saved_result)
    assert power_node._saved_self.item() == 2.0  # not run yet: keeps its saved tensors
    stepper.close()
    assert list(stepper) == []  # closed: nothing more runs
    assert x.grad is None and power_node._saved_self.item() == 2.0


def test_a_stepper_runs_each_node_with_grad_mode_off_and_leaves_the_callers_mode_alone():
    x = gv.tensor(2.0, requires_grad=True)
    y = (x * 3).exp()
    seen = []
    y.grad_fn.register_prehook(lambda grads: seen.append(gv.is_grad_enabled()))
    stepper = gv.autograd.backward_steps(y)
    with gv.no_grad():
        next(stepper)
        assert not gv.is_grad_enabled()
    assert gv.is_grad_enabled()
    list(stepper)
    assert seen == [False] and gv.is_grad_enabled()


def _hooked_graph(lib, log, scratch):
    """A small graph with every kind of user hook, each with a side effect."""
    x = lib.tensor([1.0, -2.0], requires_grad=True)
    y = x.exp() * x
    y.retain_grad()
    x.register_hook(lambda g: log.append("x") or print("x hook ran") or g * 100)
    y.register_hook(lambda g: [scratch.add_(1)] and None)  # writes in place into the user's tensor
    z = y.sum()
    z.grad_fn.register_prehook(lambda grads: log.append("pre") or tuple(g * 7 for g in grads))
    z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: log.append("post"))
    accumulate = y.grad_fn.next_functions[1][0]
    accumulate.register_prehook(lambda grads: log.append("leaf pre"))
    return x, y, z


def test_run_hooks_false_computes_every_gradient_and_touches_nothing(capsys):
    log = []
    with gv.no_grad():
        scratch = gv.zeros(2)
    x, y, z = _hooked_graph(gv, log, scratch)
    version = scratch._version
    steps = list(gv.autograd.backward_steps(z, dry_run=True, run_hooks=False))
    assert log == [] and capsys.readouterr().out == ""
    assert scratch.tolist() == [0.0, 0.0] and scratch._version == version
    assert x.grad is None and y.grad is None  # neither the leaf nor the retained non-leaf
    plain = gv.tensor([1.0, -2.0], requires_grad=True)
    (plain.exp() * plain).sum().backward()  # the same graph with no hooks at all
    np.testing.assert_allclose(steps[-1].grad_after, plain.grad.numpy(), rtol=1e-6)

    z.backward()  # nothing was freed by the trace, and the hooks are still there
    assert log == ["pre", "post", "x", "leaf pre"] and capsys.readouterr().out == "x hook ran\n"
    assert scratch.tolist() == [1.0, 1.0]


def test_the_hooked_graph_runs_its_hooks_as_torch_does(torch):
    def program(lib):
        log = []
        with lib.no_grad():
            scratch = lib.zeros(2)
        x, y, z = _hooked_graph(lib, log, scratch)
        z.backward()
        return log, scratch.tolist(), [round(g, 4) for g in x.grad.tolist()], y.grad.tolist()

    assert program(gv) == program(torch)


def test_run_hooks_false_without_dry_run_writes_the_hook_free_gradients():
    log = []
    with gv.no_grad():
        scratch = gv.zeros(2)
    x, y, z = _hooked_graph(gv, log, scratch)
    for _ in gv.autograd.backward_steps(z, run_hooks=False):
        pass
    assert log == [] and scratch.tolist() == [0.0, 0.0]
    assert y.grad is None  # retain_grad is a hook too
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, -2.0]) * np.array([2.0, -1.0]), rtol=1e-6)


def test_a_dry_run_shows_the_accumulation_but_leaves_grad_as_it_was():
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    grad, version = x.grad, x.grad._version
    step = list(gv.autograd.backward_steps((x * 3).sum(), dry_run=True))[-1]
    assert step.grad_before.tolist() == [2.0, 2.0] and step.grad_after.tolist() == [5.0, 5.0]
    assert x.grad is grad and grad.tolist() == [2.0, 2.0] and grad._version == version
