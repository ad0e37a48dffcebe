"""A leaf's ``.grad`` laid out as PyTorch's AccumulateGrad lays it out (``utils::obeys_layout_contract``): a
gradient that matches the leaf's strides on every dim of size > 1 is kept as it is, its size-1 dims' strides too
(PyTorch steals it), any other is copied into the leaf's strides exactly (size-1 dims included), and a leaf that is
not dense gets a contiguous ``.grad``. ``.stride()`` and ``is_contiguous()`` of ``.grad`` against PyTorch 2.13 for
a sweep of ops whose backward gives non-contiguous gradients, with plain leaves and with transposed ones."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv

SQUARE = 3 * np.eye(3)
OPS = {  # the program, the leaves' shapes, which leaf's .grad is looked at
    "solve_B": (lambda t, A, B: t.linalg.solve(A, B), [(3, 3), (3, 1)], 1),
    "solve_B_batch": (lambda t, A, B: t.linalg.solve(A, B), [(2, 3, 3), (2, 3, 1)], 1),
    "solve_B_batch_of_one": (lambda t, A, B: t.linalg.solve(A, B), [(1, 3, 3), (1, 3, 2)], 1),
    "solve_A_batch_of_one": (lambda t, A, B: t.linalg.solve(A, B), [(1, 3, 3), (1, 3, 2)], 0),
    "solve_A_vector": (lambda t, A, B: t.linalg.solve(A, B), [(3, 3), (3,)], 0),
    "solve_right_B_row": (lambda t, A, B: t.linalg.solve(A, B, left=False), [(3, 3), (1, 3)], 1),
    "solve_right_B": (lambda t, A, B: t.linalg.solve(A, B, left=False), [(3, 3), (2, 3)], 1),
    "solve_right_A": (lambda t, A, B: t.linalg.solve(A, B, left=False), [(3, 3), (1, 3)], 0),
    "solve_triangular_B": (lambda t, A, B: t.linalg.solve_triangular(A.triu(), B, upper=True), [(3, 3), (3, 1)], 1),
    "inv_batch_of_one": (lambda t, A, B: t.linalg.inv(A) * B, [(1, 3, 3), (1, 3, 3)], 0),
    "lstsq_B": (lambda t, A, B: t.linalg.lstsq(A, B).solution, [(4, 3), (4, 1)], 1),
    "pinv_column": (lambda t, A, B: t.linalg.pinv(A) * B, [(3, 1), (1, 3)], 0),
    "svdvals_column": (lambda t, A, B: t.linalg.svdvals(A) * B, [(3, 1), (1,)], 0),
    "mm_row": (lambda t, A, B: A @ B, [(1, 3), (3, 4)], 0),
    "mm_column": (lambda t, A, B: A @ B, [(2, 3), (3, 1)], 1),
    "bmm_row": (lambda t, A, B: A @ B, [(2, 1, 3), (2, 3, 4)], 0),
    "bmm_column": (lambda t, A, B: A @ B, [(2, 1, 3), (2, 3, 1)], 1),
    "matmul_broadcast": (lambda t, A, B: A @ B, [(1, 2, 3), (3, 1)], 1),
    "mT_matmul": (lambda t, A, B: A.mT @ B, [(2, 3, 1), (2, 3, 3)], 0),
    "t": (lambda t, A, B: A.t() * B, [(3, 1), (1, 3)], 0),
    "permute": (lambda t, A, B: A.permute(2, 0, 1) * B, [(1, 2, 3), (3, 1, 2)], 0),
    "transpose": (lambda t, A, B: A.transpose(0, 2) * B, [(2, 1, 3), (3, 1, 2)], 0),
    "expand": (lambda t, A, B: A.expand(2, 3) * B, [(1, 3), (2, 3)], 0),
    "broadcast_mul": (lambda t, A, B: A * B, [(3, 1), (1, 4)], 0),
    "unsqueeze": (lambda t, A, B: A.unsqueeze(0) * B, [(3, 1), (2, 3, 1)], 0),
    "squeeze": (lambda t, A, B: A.squeeze() * B, [(3, 1, 2), (3, 2)], 0),
    "flip": (lambda t, A, B: A.flip(0) * B, [(3, 1), (3, 1)], 0),
    "index": (lambda t, A, B: A[:, 0] * B, [(3, 1), (3,)], 0),
    "cat": (lambda t, A, B: t.cat([A, B], 1), [(3, 1), (3, 1)], 1),
    "stack": (lambda t, A, B: t.stack([A, B], 1), [(3, 1), (3, 1)], 1),
}
# Left out: where the op's own backward formula gives a gradient whose strides differ from torch's on a size-1 dim
# before AccumulateGrad sees it (mm's column-major choices, mm_mat1/mat2_backward, for a transposed leaf).
DIFFERENT_BEFORE_ACCUMULATION = {("mm_row", True), ("mm_column", True), ("matmul_broadcast", True)}
SWEEP = [(name, transposed) for name in sorted(OPS) for transposed in (False, True)
         if (name, transposed) not in DIFFERENT_BEFORE_ACCUMULATION]


def _leaves(t, shapes, which, transposed):
    leaves = []
    for index, shape in enumerate(shapes):
        a = np.random.default_rng(index).standard_normal(shape)
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            a = a + SQUARE
        if transposed and index == which and len(shape) >= 2:  # the same values, stored transposed
            leaf = t.tensor(np.swapaxes(a, -1, -2).tolist(), dtype=t.float64).mT
        else:
            leaf = t.tensor(a, dtype=t.float64)
        leaves.append(leaf.requires_grad_())
    return leaves


def _layout(t, name, transposed):
    program, shapes, which = OPS[name]
    leaves = _leaves(t, shapes, which, transposed)
    out = program(t, *leaves)
    out.backward(t.ones_like(out))
    grad = leaves[which].grad
    return tuple(leaves[which].stride()), tuple(grad.stride()), grad.is_contiguous(), grad.numpy().tolist()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name, transposed", SWEEP, ids=[f"{n}-{'transposed' if t else 'plain'}" for n, t in SWEEP])
def test_grad_strides_match_torch(torch, name, transposed, backend):
    from gradviz import backends

    with backends.using(backend):
        ours = _layout(gv, name, transposed)
    theirs = _layout(torch, name, transposed)
    assert ours[:3] == theirs[:3]
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("code", [
    "x = t.tensor([[1., 2., 3., 4.]] * 4)[:, ::2].detach().requires_grad_(); (x.t() * 2).sum().backward()",
    "x = t.tensor([[1., 2., 3., 4.]] * 4)[:, ::2].detach().requires_grad_(); x.t().exp().t().sum().backward()",
    "x = t.tensor([[1., 2., 3., 4.]] * 4)[:, ::2].detach().requires_grad_(); (x * 3).sum().backward()",
    "x = t.ones(3, 1, requires_grad=True); x.t().backward(t.ones(1, 3))",
    "x = t.ones(2, 1, 3, requires_grad=True); x.permute(2, 1, 0).exp().sum().backward()",
    "x = t.ones(1, 3).mT.requires_grad_(); (x.t() * t.ones(1, 3)).sum().backward()",
])
def test_grad_of_a_leaf_that_is_not_dense_or_odd_on_a_size_one_dim(torch, code, backend):
    from gradviz import backends

    def layout(t):
        scope = {"t": t}
        exec(code, scope)
        return tuple(scope["x"].stride()), tuple(scope["x"].grad.stride()), scope["x"].grad.is_contiguous()

    with backends.using(backend):
        ours = layout(gv)
    assert ours == layout(torch)


@pytest.mark.parametrize("name", ["solve_B", "t", "solve_right_B_row"])
def test_create_graph_grad_takes_the_leafs_strides_as_torch_does(torch, name):
    """With ``create_graph`` grad mode is on and PyTorch never steals: ``.grad`` is a copy in the leaf's strides."""
    def layout(t):
        program, shapes, which = OPS[name]
        leaves = _leaves(t, shapes, which, True)
        out = program(t, *leaves)
        out.backward(t.ones_like(out), create_graph=True)
        return tuple(leaves[which].grad.stride()), leaves[which].grad.is_contiguous()

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert layout(gv) == layout(torch)
