"""``linalg.solve``'s results laid out as PyTorch 2.13 lays them out, batched cases included: ``.stride()``,
``is_contiguous()``, what a later ``.view(-1)`` does (PyTorch refuses a batch of vector solutions, whose last two
dims come back column by column), and the gradients' strides."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv

CASES = [  # A's shape, B's shape, left
    ((3, 3), (3, 2), True), ((3, 3), (3,), True), ((2, 3, 3), (2, 3, 2), True), ((2, 3, 3), (2, 3), True),
    ((2, 2, 3, 3), (2, 2, 3), True), ((2, 3, 3), (3,), True), ((2, 2, 3, 3), (3,), True), ((1, 3, 3), (1, 3), True),
    ((4, 1, 3, 3), (4, 1, 3), True), ((2, 3, 3), (3, 2), True), ((3, 3), (2, 3, 2), True), ((1, 3, 3), (4, 3, 2), True),
    ((2, 3, 3), (2, 3, 1), True), ((2, 3, 3), (2, 3, 4), True), ((2, 3, 3), (2, 2, 3), False), ((3, 3), (2, 3), False),
]


def _layout(t, a, b, left):
    A = t.tensor(a, requires_grad=True)
    B = t.tensor(b, requires_grad=True)
    X = t.linalg.solve(A, B, left=left)
    try:
        viewed = tuple(X.view(-1).shape)
    except RuntimeError as error:
        viewed = str(error)
    (X * X).sum().backward()
    # (a gradient with a size-1 dim: PyTorch's AccumulateGrad keeps its strides there, as gradviz's does)
    grad_B_strides = B.grad.stride()
    transposed = X.mT.is_contiguous() if X.ndim >= 2 else None
    return tuple(X.shape), X.stride(), X.is_contiguous(), transposed, viewed, A.grad.stride(), grad_B_strides


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("shapes", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{'left' if c[2] else 'right'}")
def test_solve_layout_matches_torch(torch, shapes, backend):
    from gradviz import backends

    sa, sb, left = shapes
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa) + 3 * np.eye(sa[-1])
    b = rng.standard_normal(sb)
    with backends.using(backend):
        ours = _layout(gv, a, b, left)
    assert ours == _layout(torch, a, b, left)


def test_solve_values_of_a_batch_of_vectors_are_unchanged(torch):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 2, 3, 3)) + 3 * np.eye(3), rng.standard_normal((2, 2, 3))
    np.testing.assert_allclose(gv.linalg.solve(gv.tensor(a), gv.tensor(b)).numpy(),
                               torch.linalg.solve(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-12)
    np.testing.assert_array_equal(gv.linalg.solve(gv.tensor(a), gv.tensor(b)).contiguous().view(-1).numpy(),
                                  gv.linalg.solve(gv.tensor(a), gv.tensor(b)).reshape(-1).numpy())
