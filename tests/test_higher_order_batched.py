"""``autograd.grad(..., is_grads_batched=True, create_graph=True)``: one backward pass with the batch as a leading
dim, recorded as PyTorch 2.13's legacy vmap records it (views on unbatched operands, the fallback loop's stack
and view for the ops with no batching rule), compared with PyTorch running the same lines: each gradient's
shape, values and graph node by node (shared nodes numbered), with grad_outputs that have a graph of their own
and without, then a second backward through the batched gradients (the leaves' ``.grad``), and central
differences of the batched vector-Jacobian products. Programs gradviz has no rule for keep one pass per row:
the same values and second derivatives, a different graph."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradviz as gv

RNG = np.random.default_rng(0)
X, Y, T, W = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal((4, 3))

PROGRAMS = {  # elementwise, reductions, losses
    "sin_of_square": lambda t, x, y, w: (x * x).sin(),
    "cos_times_sin_exp": lambda t, x, y, w: (x.cos() * y.sin()).exp(),
    "exp_times_sum": lambda t, x, y, w: (x.exp() * y).sum(),
    "square_sum": lambda t, x, y, w: x.pow(2).sum(),
    "cube_mean": lambda t, x, y, w: (x ** 3).mean(),
    "quotient_sum": lambda t, x, y, w: (x / y).sum(),
    "sum_and_difference": lambda t, x, y, w: (x + y) - x * 2,
    "negated_log_exp": lambda t, x, y, w: -(x.exp().log()),
    "tanh": lambda t, x, y, w: x.tanh(),
    "relu": lambda t, x, y, w: (x * y).relu(),
    "sigmoid": lambda t, x, y, w: x.sigmoid(),
    "sqrt": lambda t, x, y, w: (x * x + 1).sqrt(),
    "abs": lambda t, x, y, w: (x.abs() * y).sum(),
    "mean_over_a_dim": lambda t, x, y, w: (w * w).mean(1),
    "sum_over_a_dim": lambda t, x, y, w: (w * w).sum(0),
    "sum_keepdim": lambda t, x, y, w: w.sin().sum(1, keepdim=True),
    "sum_of_two_dims": lambda t, x, y, w: (w.exp() * w).sum((0, 1)),
    "mse": lambda t, x, y, w: t.nn.functional.mse_loss(x, t.tensor(T)),
    "mse_of_sin": lambda t, x, y, w: t.nn.functional.mse_loss(x.sin(), t.tensor(T)),
    "mse_of_tanh_product": lambda t, x, y, w: t.nn.functional.mse_loss(x.tanh() * y, t.tensor(T)),
    "broadcast_product": lambda t, x, y, w: (x.view(3, 1) * w.t()).sin(),
    "reshape_of_a_transpose": lambda t, x, y, w: w.t().reshape(12).exp(),
    "unsqueeze": lambda t, x, y, w: (x.unsqueeze(0) * w).sum(1),
    "unsqueeze_last": lambda t, x, y, w: (x.unsqueeze(-1) * y).cos(),
    "expand": lambda t, x, y, w: (x.expand(4, 3) * w).sin(),
    "expand_a_row": lambda t, x, y, w: x.view(1, 3).expand(4, 3) * w,
    "squeeze_a_dim": lambda t, x, y, w: (w.view(4, 1, 3).squeeze(1) * w).sum(),
    "squeeze_all": lambda t, x, y, w: (w.view(4, 1, 3, 1).squeeze().exp() * w).sum(0),
    "squeeze_last": lambda t, x, y, w: (x.view(3, 1).squeeze(-1) * y).sin(),
    "dot": lambda t, x, y, w: (x @ y).sin(),
    "matmul": lambda t, x, y, w: w @ w.t(),
    "matmul_of_a_transpose": lambda t, x, y, w: (w.t() @ w).sin(),
    "matmul_of_transpose_dims": lambda t, x, y, w: w.transpose(0, 1) @ w,
    "matmul_chain": lambda t, x, y, w: ((w @ w.t()).tanh() @ w).sum(0),
    "matrix_vector": lambda t, x, y, w: w @ x,
    "matrix_vector_between_functions": lambda t, x, y, w: (w.sin() @ x.exp()).cos(),
}
PER_ROW = {  # no rule here: one pass per row, stacked (PyTorch's graph differs)
    "cumsum": lambda t, x, y, w: (x.cumsum(0) * y).sum(),
    "softmax": lambda t, x, y, w: w.softmax(1),
}


def _tree(fn, seen=None, out=None, depth=0):
    """The graph under ``fn`` depth first, in ``next_functions`` order, a node seen before by its number."""
    if seen is None:
        seen, out = {}, []
    if fn is None:
        out.append((depth, None))
        return out
    if id(fn) in seen:
        out.append((depth, fn.name(), seen[id(fn)]))
        return out
    seen[id(fn)] = len(seen)
    out.append((depth, fn.name(), seen[id(fn)]))
    for child, _ in fn.next_functions:
        _tree(child, seen, out, depth + 1)
    return out


def _leaves(t):
    return [t.tensor(value, requires_grad=True) for value in (X, Y, W)]


def _batched(t, program, grad_outputs_need_grad):
    leaves = _leaves(t)
    out = program(t, *leaves)
    v = t.tensor(np.random.default_rng(1).standard_normal((2,) + tuple(out.shape)), requires_grad=grad_outputs_need_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads = t.autograd.grad(out, leaves, v, create_graph=True, is_grads_batched=True, allow_unused=True)
    return leaves, v, grads


def _second_backward(t, leaves, v, grads):
    if not any(g is not None and g.requires_grad for g in grads):
        return []  # (gradients with no graph: nothing to differentiate, in both)
    weights = np.random.default_rng(2)
    total = sum((g * t.tensor(weights.standard_normal(tuple(g.shape)))).sum() for g in grads if g is not None
                and g.requires_grad)
    total.backward()
    return [None if leaf.grad is None else leaf.grad.numpy() for leaf in leaves + [v]]


def _outcome(t, program, grad_outputs_need_grad):
    leaves, v, grads = _batched(t, program, grad_outputs_need_grad)
    first = [None if g is None else (tuple(g.shape), g.detach().numpy(), _tree(g.grad_fn)) for g in grads]
    return first, _second_backward(t, leaves, v, grads)


def _compare_values(ours, theirs):
    assert len(ours) == len(theirs)
    for mine, expected in zip(ours, theirs):
        assert (mine is None) == (expected is None)
        if mine is not None:
            np.testing.assert_allclose(mine, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("grad_outputs_need_grad", [False, True], ids=["plain_v", "v_with_graph"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_batched_gradient_graph_matches_torchs_vmap(torch, name, grad_outputs_need_grad):
    (first, second), (first_t, second_t) = (_outcome(lib, PROGRAMS[name], grad_outputs_need_grad)
                                            for lib in (gv, torch))
    for ours, theirs in zip(first, first_t):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert ours[0] == theirs[0]
            np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
            assert ours[2] == theirs[2]
    _compare_values(second, second_t)


@pytest.mark.parametrize("name", sorted(PER_ROW))
def test_programs_without_rules_keep_torchs_values_in_per_row_passes(torch, name):
    (first, second), (first_t, second_t) = (_outcome(lib, PER_ROW[name], False) for lib in (gv, torch))
    for ours, theirs in zip(first, first_t):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert ours[0] == theirs[0]
            np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-10, atol=1e-12)
            assert ours[2][0][1] == "StackBackward0"  # one pass per row, stacked
    _compare_values(second, second_t)


@pytest.mark.parametrize("name", ["sin_of_square", "cube_mean", "mse_of_tanh_product", "quotient_sum", "matmul_chain",
                                  "matrix_vector_between_functions"])
def test_batched_vector_jacobian_products_by_central_differences(name):
    """Each row of the batched gradient is ``vᵀ J``: checked against central differences of ``v · f``."""
    program, step = PROGRAMS[name], 1e-6
    leaves, v, grads = _batched(gv, program, False)
    for row in range(v.shape[0]):
        for index, leaf in enumerate(leaves):
            if grads[index] is None:
                continue
            direction = np.random.default_rng(row + 10 * index).standard_normal(tuple(leaf.shape))

            def along(sign):
                values = [value.detach().numpy().copy() for value in leaves]
                values[index] = values[index] + sign * step * direction
                tensors = [gv.tensor(value) for value in values]
                return float((program(gv, *tensors) * v[row].detach()).sum())

            estimate = (along(1) - along(-1)) / (2 * step)
            np.testing.assert_allclose(float((grads[index][row].detach().numpy() * direction).sum()), estimate,
                                       rtol=1e-6, atol=1e-8)


def test_the_batched_pass_records_nodes_of_the_next_order():
    leaves, _, grads = _batched(gv, PROGRAMS["sin_of_square"], False)
    assert grads[0].grad_fn._order == 2


def test_retain_graph_false_frees_the_graph_as_torch_does(torch):
    def outcome(t):
        x = t.tensor(X, requires_grad=True)
        out = (x * x).sin()
        v = t.ones((2, 3), dtype=t.float64)
        t.autograd.grad(out, x, v, create_graph=True, retain_graph=False, is_grads_batched=True)
        try:
            t.autograd.grad(out, x, v, create_graph=True, is_grads_batched=True)
        except RuntimeError as error:
            return str(error)
        return None

    assert outcome(gv) == outcome(torch) is not None


@pytest.mark.parametrize("code", [
    "t.autograd.grad((x * x).sin(), x, t.ones(2, 4, dtype=t.float64), create_graph=True, is_grads_batched=True)",
    "t.autograd.grad((x * x).sum(), x, t.ones((), dtype=t.float64), create_graph=True, is_grads_batched=True)",
    "t.autograd.grad((x * x).sum(), x, create_graph=True, is_grads_batched=True)",
    "t.autograd.grad((x * x).sin(), x, t.ones(2, 2, 3, dtype=t.float64), create_graph=True, is_grads_batched=True)",
    "t.autograd.grad((x * x).sin(), [x, y], t.ones(2, 3, dtype=t.float64), create_graph=True, is_grads_batched=True)",
    "t.autograd.grad((x * x).sin(), [x, y], t.ones(2, 3, dtype=t.float64), create_graph=True, is_grads_batched=True,"
    " allow_unused=True)[1]",
    "t.autograd.grad((x * x).sin(), [x, y], t.ones(2, 3, dtype=t.float64), create_graph=True, is_grads_batched=True,"
    " materialize_grads=True)[1].shape",
])
def test_checks_and_unused_inputs_as_torch(torch, code):
    def outcome(t):
        x, y = t.tensor(X, requires_grad=True), t.tensor(Y, requires_grad=True)
        try:
            value = eval(code)
        except (RuntimeError, ValueError, IndexError) as error:
            return type(error).__name__, str(error)
        return value if value is None else tuple(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert outcome(gv) == outcome(torch)
