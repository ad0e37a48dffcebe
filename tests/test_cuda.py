"""gradviz on a GPU: tensors on ``device="cuda"`` hold torch CUDA arrays, and everything a lesson does
with them (a training loop in the seeds' style, higher-order and forward-mode gradients, the
decompositions, stepping, showing and exporting the graph) gives what torch gives on the same GPU.

The whole file skips where torch sees no CUDA device (CI has none). On a machine with one, run
``python -m pytest tests/test_cuda.py``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradviz as gv

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def to_numpy(tensor) -> np.ndarray:
    data = tensor._data if isinstance(tensor, gv.Tensor) else tensor
    if isinstance(data, np.ndarray):
        return data.astype(np.float64)
    return data.detach().cpu().double().numpy()


def close(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=rtol, atol=atol)


def seed_style_step(lib, data, steps=5, lr=0.1):
    """The seeds' raw-tensor network: ``x @ W + b``, tanh, BCE with logits, ``p -= lr * p.grad``."""
    x, target, w1, b1, w2 = (lib.tensor(value, device="cuda") for value in data)
    for p in (w1, b1, w2):
        p.requires_grad_(True)
    losses = []
    for _ in range(steps):
        hidden = (x @ w1 + b1).tanh()
        loss = lib.nn.functional.binary_cross_entropy_with_logits(hidden @ w2, target)
        loss.backward()
        with lib.no_grad():
            for p in (w1, b1, w2):
                p -= lr * p.grad
                p.grad = None
        losses.append(loss)
    return losses, hidden, (w1, b1, w2)


def lesson_data(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((16, 3)).astype(np.float32), (rng.random((16, 1)) > 0.5).astype(np.float32),
            rng.standard_normal((3, 8)).astype(np.float32), np.zeros(8, np.float32),
            rng.standard_normal((8, 1)).astype(np.float32)]


def test_a_seed_style_training_loop_runs_on_the_gpu_as_in_torch():
    ours, our_hidden, our_params = seed_style_step(gv, lesson_data())
    theirs, their_hidden, their_params = seed_style_step(torch, lesson_data())
    for mine, reference in zip(ours, theirs):
        close(mine, reference)
    assert ours[-1].device.type == "cuda" and ours[-1]._data.is_cuda
    assert repr(ours[-1]) == repr(theirs[-1])  # tensor(0.8..., device='cuda:0',\n       grad_fn=<...>)
    assert type(our_hidden.grad_fn).__name__ == type(their_hidden.grad_fn).__name__ == "TanhBackward0"
    for mine, reference in zip(our_params, their_params):
        close(mine, reference)
        assert mine.grad is None and mine._data.is_cuda


def test_backward_steps_on_the_gpu_run_in_torchs_order_and_give_torchs_grads():
    data = lesson_data(1)
    results = []
    for lib in (gv, torch):
        x, target, w1, b1, w2 = (lib.tensor(value, device="cuda") for value in data)
        for p in (w1, b1, w2):
            p.requires_grad_(True)
        hidden = (x @ w1 + b1).tanh()
        loss = lib.nn.functional.binary_cross_entropy_with_logits(hidden @ w2, target) + (w1 ** 2).sum() * 1e-3
        results.append((loss, (w1, b1, w2)))
    (loss, params), (torch_loss, torch_params) = results
    order = []
    handles = [node.register_prehook(lambda grads, node=node: order.append(type(node).__name__))
               for node in _torch_nodes(torch_loss.grad_fn)]
    torch_loss.backward()
    for handle in handles:
        handle.remove()
    steps = list(gv.autograd.backward_steps(loss))
    assert [step.node.name() for step in steps if not step.node.name().startswith("torch::")] == [
        name for name in order if name != "AccumulateGrad"]
    for mine, reference in zip(params, torch_params):
        assert mine.grad._data.is_cuda
        close(mine.grad, reference.grad)


def _torch_nodes(root):
    seen, stack = [], [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return seen


def test_second_and_forward_mode_derivatives_on_the_gpu_match_torch():
    values = [0.5, -1.25, 2.0]
    grads, tangents = [], []
    for lib in (gv, torch):
        x = lib.tensor(values, device="cuda", requires_grad=True)
        y = (x.sin() * x ** 3).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        h, = lib.autograd.grad(g.sum(), x)
        grads.append((g, h))
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(lib.tensor(values, device="cuda"), lib.tensor([1.0, 0.5, -2.0], device="cuda"))
            out = (dual.exp() * dual).log_softmax(0)
            tangents.append(fw.unpack_dual(out).tangent)
    close(grads[0][0], grads[1][0])
    close(grads[0][1], grads[1][1])
    assert type(grads[0][0].grad_fn).__name__ == type(grads[1][0].grad_fn).__name__
    close(tangents[0], tangents[1])
    assert tangents[0]._data.is_cuda


def test_decompositions_and_their_gradients_on_the_gpu_match_torch():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 3))
    results = []
    for lib in (gv, torch):
        m = lib.tensor(a, device="cuda", requires_grad=True)
        u, s, vh = lib.linalg.svd(m, full_matrices=False)
        sym = m.T @ m
        values, vectors = lib.linalg.eigh(sym)
        loss = (u * s @ vh).pow(2).sum() + s.sum() + values.sum() + (vectors @ vectors.T).trace()
        loss = loss + lib.linalg.det(sym) + lib.linalg.inv(sym + lib.eye(3, device="cuda")).sum()
        loss.backward()
        results.append((s, values, m.grad))
    for mine, reference in zip(*results):
        close(mine, reference, rtol=1e-9, atol=1e-9)


def test_showing_and_exporting_a_gpu_graph_changes_nothing(tmp_path):
    """A gradviz graph and a torch graph on the GPU (the torch one with a bf16 part) export; nothing gets a .grad,
    no hook runs, and the learner's later backward gives torch's numbers."""
    calls = []
    data = lesson_data(2)
    for lib in (gv, torch):
        x, target, w1, b1, w2 = (lib.tensor(value, device="cuda") for value in data)
        for p in (w1, b1, w2):
            p.requires_grad_(True)
        hidden = (x @ w1 + b1).tanh()
        hidden.register_hook(lambda grad: calls.append(lib.__name__))
        small = hidden.to(torch.bfloat16).float() if lib is torch else hidden  # gradviz has no bfloat16
        loss = lib.nn.functional.binary_cross_entropy_with_logits(small @ w2, target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a missing Graphviz 'dot' says it falls back to gradviz's layout
            path = gv.export_html(loss, tmp_path / f"{lib.__name__}.html", names={"w1": w1, "w2": w2})
        text = path.read_text()
        assert "AddmmBackward0" in text or "MmBackward0" in text
        assert calls == [] and all(p.grad is None for p in (w1, b1, w2))
        loss.backward()
        assert calls == [lib.__name__] and w1.grad.is_cuda
        calls.clear()


# -- random programs on the GPU --------------------------------------------------------------------------------
# The property-based programs of the CPU suite (tests/programs.py), run on the GPU in both libraries: the loss,
# every leaf's gradient, the order of the backward steps and, for the default vocabulary, the second derivative
# through the graph that ``create_graph=True`` records.

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from orders import torch_order  # noqa: E402
from programs import random_programs, run_program  # noqa: E402

VECTORS = st.lists(st.floats(-2, 2), min_size=3, max_size=3)


def _program_results(lib, steps, x_values, y_values, second_order):
    leaves = [lib.tensor(v, dtype=lib.float64, device="cuda", requires_grad=True) for v in (x_values, y_values)]
    out = run_program(lib, steps, *leaves)
    if second_order:
        grads = lib.autograd.grad(out, leaves, create_graph=True, allow_unused=True, materialize_grads=True)
        total = sum((g * g).sum() for g in grads)
        if not total.requires_grad:
            return out.item(), [], [None, None], [type(g.grad_fn).__name__ for g in grads]
        out = total
    order = torch_order(out) if lib is torch else [step.name for step in gv.autograd.backward_steps(out)]
    grads = [None if t.grad is None else t.grad for t in leaves]
    assert all(g is None or g.is_cuda for g in grads)
    return out.item(), order, [None if g is None else to_numpy(g) for g in grads], []


def _compare_programs(steps, x_values, y_values, second_order):
    theirs, ours = (_program_results(lib, steps, x_values, y_values, second_order) for lib in (torch, gv))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-9, atol=1e-12)
    assert ours[1] == theirs[1] and ours[3] == theirs[3]
    for expected, actual in zip(theirs[2], ours[2]):
        assert (expected is None) == (actual is None)
        if expected is not None:
            np.testing.assert_allclose(actual, expected, rtol=1e-8, atol=1e-10)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(max_steps=6, wider=True), VECTORS, VECTORS)
def test_random_programs_on_the_gpu_match_torch(steps, x_values, y_values):
    _compare_programs(steps, x_values, y_values, second_order=False)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(max_steps=5), VECTORS, VECTORS)
def test_second_derivatives_of_random_programs_on_the_gpu_match_torch(steps, x_values, y_values):
    _compare_programs(steps, x_values, y_values, second_order=True)


def test_function_transforms_and_a_transposed_leaf_on_the_gpu_match_torch():
    """torch.func's per-sample gradients, jacfwd and hessian on the GPU; a transposed leaf's first .grad is on the
    GPU with torch's strides; a post-accumulate-grad hook sees it there."""
    data = lesson_data(4)
    results = []
    for lib in (gv, torch):
        x, target, w1, b1, w2 = (lib.tensor(value, device="cuda") for value in data)

        def loss_of_one(weights, xi, ti):
            hidden = (xi @ weights + b1).tanh()
            return lib.nn.functional.binary_cross_entropy_with_logits(hidden @ w2, ti)

        per_sample = lib.func.vmap(lib.func.grad(loss_of_one), in_dims=(None, 0, 0))(w1, x, target)
        jac = lib.func.jacfwd(lambda v: (v.sin() * v.sum()))(x[0])
        hess = lib.func.hessian(lambda v: (v.exp() * v).sum())(x[1])
        leaf = lib.tensor(data[2].T.copy(), device="cuda").t().requires_grad_()  # (3, 8) stored transposed
        seen = []
        leaf.register_post_accumulate_grad_hook(lambda p: seen.append((p.grad.is_cuda, p.grad.stride())))
        ((x @ leaf).tanh() * 2).sum().backward()
        results.append((per_sample, jac, hess, leaf.grad, seen))
    (*mine, my_seen), (*theirs, their_seen) = results
    for ours, reference in zip(mine, theirs):
        assert ours._data.is_cuda
        close(ours, reference)
    assert my_seen == their_seen == [(True, theirs[3].stride())]
