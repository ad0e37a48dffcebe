"""Decompositions differentiated twice: ``create_graph=True`` through svd/svdvals, eigh/eigvalsh, qr, pinv, lstsq
and matrix_exp records their backward pass (PyTorch writes it with ATen ops). Compared with PyTorch 2.13 running
the same lines (the first gradient's values and graph, node by node; the leaves' second-order ``.grad``), and
with central differences of the first gradient (a Hessian-vector product). The losses read the singular vectors
and eigenvectors only through sign-invariant forms (``U diag(S) Vh``, ``U Uᵀ``, ``|U Vh|``), since LAPACK fixes
each vector only up to its sign."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv
from orders import graph_names as _graph

CASES = {
    "svdvals_tall": (lambda t, A: (t.linalg.svdvals(A) ** 3).sum(), (4, 3)),
    "svdvals_wide": (lambda t, A: (t.linalg.svdvals(A) ** 3).sum(), (3, 4)),
    "svdvals_batch": (lambda t, A: (t.linalg.svdvals(A) ** 3).sum(), (2, 3, 3)),
    "svd_square": (lambda t, A: (lambda U, S, Vh: ((U * S.unsqueeze(-2)) @ Vh).sin().sum() + (U @ Vh).abs().sum())(
        *t.linalg.svd(A, full_matrices=False)), (3, 3)),
    "svd_tall_reduced": (lambda t, A: (lambda U, S, Vh: (U @ U.mT).sin().sum() + (Vh.mT @ Vh * S.sum()).cos().sum())(
        *t.linalg.svd(A, full_matrices=False)), (4, 3)),
    "svd_wide_full": (lambda t, A: (lambda U, S, Vh: (U[..., :3] @ U[..., :3].mT).sin().sum()
                                    + (Vh[:3].mT @ Vh[:3] * S[0]).cos().sum())(*t.linalg.svd(A)), (3, 5)),
    "svd_tall_full": (lambda t, A: (lambda U, S, Vh: (U[:, :2] @ U[:, :2].mT * S.sum()).sin().sum())(
        *t.linalg.svd(A)), (4, 2)),
    "svd_vectors_right_only": (lambda t, A: (lambda U, S, Vh: (Vh.mT @ Vh * A[:1]).sin().sum())(
        *t.linalg.svd(A, full_matrices=False)), (3, 4)),
    "torch_svd": (lambda t, A: (lambda U, S, V: ((U * S) @ V.mT).exp().sum())(*t.svd(A)), (3, 3)),
    "eigh": (lambda t, A: (lambda L, V: (L ** 3).sum() + ((V * L.unsqueeze(-2)) @ V.mT).sin().sum()
                           + (V @ V.mT * A).sum())(*t.linalg.eigh(A + A.mT)), (3, 3)),
    "eigh_vectors_only": (lambda t, A: (lambda L, V: (V @ (V.mT * A)).sin().sum())(*t.linalg.eigh(A @ A.mT)), (3, 3)),
    "eigh_upper_batch": (lambda t, A: (lambda L, V: ((V * L.unsqueeze(-2).exp()) @ V.mT).sum())(
        *t.linalg.eigh(A + A.mT, UPLO="U")), (2, 3, 3)),
    "eigvalsh": (lambda t, A: (t.linalg.eigvalsh(A + A.mT) ** 3).sum(), (4, 4)),
    "qr_tall": (lambda t, A: (lambda Q, R: (Q @ R).sin().sum() + (R ** 3).sum() + (Q ** 2 * A[:, :1]).sum())(
        *t.linalg.qr(A)), (4, 3)),
    "qr_square_R_only": (lambda t, A: (t.linalg.qr(A).R ** 3).sum(), (3, 3)),
    "qr_square_Q_only": (lambda t, A: (t.linalg.qr(A).Q * A).sin().sum(), (3, 3)),
    "qr_wide": (lambda t, A: (lambda Q, R: (R ** 3).sum() + (Q * Q.sum()).sum())(*t.linalg.qr(A)), (3, 5)),
    "qr_wide_R_only": (lambda t, A: (t.linalg.qr(A).R ** 3).sum(), (2, 4)),
    "qr_wide_Q_only": (lambda t, A: (t.linalg.qr(A).Q * A[:, :2]).sin().sum(), (2, 4)),
    "qr_wide_batch_complete": (lambda t, A: (lambda Q, R: (Q @ R).exp().sum() + R.sum())(*t.linalg.qr(A, mode="complete")),
                               (2, 2, 3)),
    "pinv_tall": (lambda t, A: (t.linalg.pinv(A) ** 3).sum(), (4, 3)),
    "pinv_wide": (lambda t, A: t.linalg.pinv(A).sin().sum(), (2, 4)),
    "pinv_batch": (lambda t, A: (t.linalg.pinv(A) ** 2 * A.mT).sum(), (2, 3, 2)),
    "solve_right": (lambda t, A: (t.linalg.solve(A + 3 * t.eye(3, dtype=t.float64), A.sin(), left=False) ** 3).sum(),
                    (3, 3)),
    "solve_right_batch": (lambda t, A: (t.linalg.solve(A + 3 * t.eye(3, dtype=t.float64), A[:, :2].cos(), left=False)
                                        ** 3).sum(), (2, 3, 3)),
    "matrix_exp": (lambda t, A: (t.linalg.matrix_exp(A) ** 2).sum(), (3, 3)),
    "matrix_exp_batch": (lambda t, A: t.linalg.matrix_exp(A * 0.5).sin().sum(), (2, 2, 2)),
}


def _point(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _twice(t, loss, leaves):
    tensors = [t.tensor(leaf, dtype=t.float64, requires_grad=True) for leaf in leaves]
    grads = t.autograd.grad(loss(t, *tensors), tensors, create_graph=True)
    total = sum(((g ** 2) * t.arange(1.0, g.numel() + 1.0, dtype=t.float64).reshape(g.shape)).sum() for g in grads)
    total.backward()
    return ([g.detach().numpy() for g in grads], [_graph(g.grad_fn) for g in grads],
            [x.grad.numpy() for x in tensors])


def _compare(torch, loss, leaves, same_graph=True):
    first, graphs, second = _twice(gv, loss, leaves)
    first_t, graphs_t, second_t = _twice(torch, loss, leaves)
    for ours, theirs in zip(first + second, first_t + second_t):
        np.testing.assert_allclose(ours, theirs, rtol=1e-7, atol=1e-9)
    if same_graph:
        assert graphs == graphs_t


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_torch(torch, name, backend):
    from gradviz import backends

    loss, shape = CASES[name]
    with backends.using(backend):
        _compare(torch, loss, [_point(shape)])


LSTSQ = {
    "solution": lambda t, A, B: (t.linalg.lstsq(A, B, driver="gelsd").solution ** 3).sum(),
    "solution_and_residuals": lambda t, A, B: (lambda r: (r.solution ** 3).sum() + (r.residuals ** 2).sum())(
        t.linalg.lstsq(A, B, driver="gelsd")),
    "residuals_only": lambda t, A, B: (t.linalg.lstsq(A, B, driver="gelsd").residuals ** 2).sum(),
    "default_driver": lambda t, A, B: t.linalg.lstsq(A, B).solution.sin().sum(),
}


@pytest.mark.parametrize("name", sorted(LSTSQ))
def test_lstsq_second_derivatives_match_torch(torch, name):
    _compare(torch, LSTSQ[name], [_point((4, 3)), _point((4, 2), seed=1)])


def test_lstsq_vector_right_hand_side_matches_torch(torch):
    _compare(torch, lambda t, A, b: (t.linalg.lstsq(A, b).solution ** 3).sum(), [_point((4, 3)), _point((4,), 2)])


def _gradient(loss, leaves):
    tensors = [gv.tensor(leaf, dtype=gv.float64, requires_grad=True) for leaf in leaves]
    return [g.numpy() for g in gv.autograd.grad(loss(gv, *tensors), tensors)]


def _hessian_vector_by_differences(loss, leaves, directions, step=1e-5):
    plus = _gradient(loss, [x + step * d for x, d in zip(leaves, directions)])
    minus = _gradient(loss, [x - step * d for x, d in zip(leaves, directions)])
    return [(p - m) / (2 * step) for p, m in zip(plus, minus)]


def _hessian_vector_recorded(loss, leaves, directions):
    tensors = [gv.tensor(leaf, dtype=gv.float64, requires_grad=True) for leaf in leaves]
    grads = gv.autograd.grad(loss(gv, *tensors), tensors, create_graph=True)
    total = sum((g * gv.tensor(d, dtype=gv.float64)).sum() for g, d in zip(grads, directions))
    return [h.numpy() for h in gv.autograd.grad(total, tensors)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_by_central_differences(name):
    loss, shape = CASES[name]
    leaves, directions = [_point(shape)], [_point(shape, seed=7)]
    for recorded, estimated in zip(_hessian_vector_recorded(loss, leaves, directions),
                                   _hessian_vector_by_differences(loss, leaves, directions)):
        np.testing.assert_allclose(recorded, estimated, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(LSTSQ))
def test_lstsq_second_derivatives_by_central_differences(name):
    leaves = [_point((4, 3)), _point((4, 2), seed=1)]
    directions = [_point((4, 3), seed=5), _point((4, 2), seed=6)]
    for recorded, estimated in zip(_hessian_vector_recorded(LSTSQ[name], leaves, directions),
                                   _hessian_vector_by_differences(LSTSQ[name], leaves, directions)):
        np.testing.assert_allclose(recorded, estimated, rtol=1e-5, atol=1e-6)


def test_third_derivative_of_matrix_exp_matches_torch(torch):
    """The recorded backward records matrix_exp again, whose backward is recorded too: a third order."""
    def third(t):
        A = t.tensor(_point((2, 2)), dtype=t.float64, requires_grad=True)
        g, = t.autograd.grad(t.linalg.matrix_exp(A).sum(), A, create_graph=True)
        h, = t.autograd.grad((g ** 2).sum(), A, create_graph=True)
        (h ** 2).sum().backward()
        return A.grad.numpy()

    np.testing.assert_allclose(third(gv), third(torch), rtol=1e-7, atol=1e-9)
