"""``linalg.solve`` whose batches broadcast (A (2,1,3,3) against B (4,3,k), one matrix against a batch, a batch
against one right-hand side, vectors, ``left=False``) under ``create_graph=True``: the gradients' values and
graphs node by node against PyTorch 2.13 running the same lines, a second backward through them, and the
second derivative against central differences of the first."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv
from orders import graph_names as _graph

SHAPES = {
    "both_batches_broadcast": ((2, 1, 3, 3), (4, 3, 2), True),
    "one_matrix_batch_of_B": ((3, 3), (2, 3, 2), True),
    "batch_of_A_one_B": ((2, 3, 3), (3, 2), True),
    "size_one_batch_of_B": ((2, 3, 3), (1, 3, 2), True),
    "left_false_broadcast": ((2, 1, 3, 3), (4, 2, 3), False),
    "left_false_one_matrix": ((3, 3), (2, 4, 3), False),
    "vector_against_batch": ((2, 3, 3), (3,), True),
    "batch_of_vectors": ((4, 3, 3), (4, 3), True),
    "four_dims_broadcast": ((1, 2, 3, 3), (3, 1, 3, 1), True),
}


def _leaves(t, name):
    shape_a, shape_b, _ = SHAPES[name]
    rng = np.random.default_rng(3)
    A = t.tensor(rng.standard_normal(shape_a) + 3 * np.eye(3), dtype=t.float64, requires_grad=True)
    B = t.tensor(rng.standard_normal(shape_b), dtype=t.float64, requires_grad=True)
    return A, B


def _loss(t, A, B, left):
    return (t.linalg.solve(A, B, left=left) ** 3).sum()


def _run(t, name):
    A, B = _leaves(t, name)
    grads = t.autograd.grad(_loss(t, A, B, SHAPES[name][2]), (A, B), create_graph=True)
    total = sum(((g ** 2) * t.arange(1.0, g.numel() + 1.0, dtype=t.float64).reshape(g.shape)).sum() for g in grads)
    total.backward()
    return ([g.detach().numpy() for g in grads], [_graph(g.grad_fn) for g in grads], [tuple(g.shape) for g in grads],
            [A.grad.numpy(), B.grad.numpy()])


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_broadcast_solve_recorded_backward_matches_torch(torch, name):
    first, graphs, shapes, second = _run(gv, name)
    first_t, graphs_t, shapes_t, second_t = _run(torch, name)
    assert shapes == shapes_t
    for ours, theirs in zip(first + second, first_t + second_t):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)
    assert graphs == graphs_t


@pytest.mark.parametrize("name", ["both_batches_broadcast", "left_false_broadcast", "vector_against_batch"])
def test_broadcast_solve_second_derivative_by_central_differences(name):
    left, step = SHAPES[name][2], 1e-6

    def gradient(a, b):
        A, B = (gv.tensor(v, dtype=gv.float64, requires_grad=True) for v in (a, b))
        return [g.numpy() for g in gv.autograd.grad(_loss(gv, A, B, left), (A, B))]

    A, B = _leaves(gv, name)
    grads = gv.autograd.grad(_loss(gv, A, B, left), (A, B), create_graph=True)
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal(tuple(g.shape)) for g in grads]
    directions = [rng.standard_normal(tuple(t.shape)) for t in (A, B)]
    recorded = gv.autograd.grad(sum((g * gv.tensor(w)).sum() for g, w in zip(grads, weights)), (A, B))
    a, b = A.detach().numpy(), B.detach().numpy()
    plus = gradient(a + step * directions[0], b + step * directions[1])
    minus = gradient(a - step * directions[0], b - step * directions[1])
    estimate = sum(((p - m) / (2 * step) * w).sum() for p, m, w in zip(plus, minus, weights))
    exact = sum((r.numpy() * d).sum() for r, d in zip(recorded, directions))
    np.testing.assert_allclose(exact, estimate, rtol=1e-5, atol=1e-6)
