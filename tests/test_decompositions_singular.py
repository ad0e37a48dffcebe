"""``det`` and ``slogdet`` of singular matrices against PyTorch 2.13. First derivative: det's is zero where
``det A == 0`` (PyTorch solves ``ḡ det A`` = 0 against perturbed LU factors); slogdet's comes from the saved LU
factors with a zero pivot, so PyTorch's inf and nan land in the same places. Recorded (``create_graph=True``):
det switches to the SVD formula (the adjugate, finite, with its own graph), each formula on its own matrices of
a mixed batch; slogdet's recorded solve raises PyTorch's LinAlgError."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv
from orders import graph_names as _graph

SINGULAR = {
    "rank_one_2x2": [[1.0, 2.0], [2.0, 4.0]],
    "rank_two_3x3": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
    "zero": [[0.0, 0.0], [0.0, 0.0]],
    "rank_one_3x3": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]],
    "diagonal_with_zero": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
    "nonsymmetric": [[1.0, 2.0], [3.0, 6.0]],
    "batch_all_singular": [[[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [0.0, 3.0]]],
}
MIXED = [[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]], [[1.0, 3.0], [2.0, 6.0]]]


def _weights(t, shape):
    return t.arange(1.0, float(np.prod(shape)) + 1.0, dtype=t.float64).reshape(shape)


def _det_run(t, matrix, create_graph, transposed=False):
    A = t.tensor(matrix, dtype=t.float64)
    A = (A.mT.contiguous().mT if transposed else A).requires_grad_()
    d = t.linalg.det(A)
    g, = t.autograd.grad((d * _weights(t, tuple(d.shape))).sum(), A, create_graph=create_graph)
    second = None
    if create_graph:
        (g ** 2 * _weights(t, tuple(g.shape))).sum().backward()
        second = A.grad.numpy()
    return d.detach().numpy(), g.detach().numpy(), _graph(g.grad_fn), second


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_det_of_a_singular_matrix_matches_torch(torch, name, create_graph):
    ours, theirs = _det_run(gv, SINGULAR[name], create_graph), _det_run(torch, SINGULAR[name], create_graph)
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert ours[2] == theirs[2]
    if create_graph:  # the second derivative where PyTorch's is finite (the SVD's derivative divides by s_i² - s_j²)
        finite = np.isfinite(theirs[3])
        np.testing.assert_array_equal(np.isfinite(ours[3]), finite)
        np.testing.assert_allclose(ours[3][finite], theirs[3][finite], rtol=1e-7, atol=1e-8)


def test_det_recorded_on_a_mixed_batch_matches_torch(torch):
    ours, theirs = _det_run(gv, MIXED, True), _det_run(torch, MIXED, True)
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    finite = np.isfinite(theirs[3])
    np.testing.assert_array_equal(np.isfinite(ours[3]), finite)
    np.testing.assert_allclose(ours[3][finite], theirs[3][finite], rtol=1e-7, atol=1e-8)
    assert ours[2] == theirs[2] and ours[2][0] == "IndexPutBackward0"


def test_det_recorded_adjugate_is_the_cofactor_matrix():
    """At a singular matrix det is still differentiable: its gradient is the adjugate's transpose."""
    A = gv.tensor([[1.0, 2.0], [3.0, 6.0]], dtype=gv.float64, requires_grad=True)
    g, = gv.autograd.grad(gv.linalg.det(A), A, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [[6.0, -3.0], [-2.0, 1.0]], atol=1e-12)


def _slogdet_first(t, matrix, transposed):
    A = t.tensor(matrix, dtype=t.float64)
    A = (A.mT.contiguous().mT if transposed else A).requires_grad_()
    out = t.linalg.slogdet(A)
    g, = t.autograd.grad((out.logabsdet * _weights(t, tuple(out.logabsdet.shape))).sum(), A)
    return out.sign.detach().numpy(), out.logabsdet.detach().numpy(), g.numpy()


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_slogdet_first_derivative_of_a_singular_matrix_matches_torch(torch, name, transposed):
    ours, theirs = _slogdet_first(gv, SINGULAR[name], transposed), _slogdet_first(torch, SINGULAR[name], transposed)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a) & (a > 0), np.isinf(b) & (b > 0))
        np.testing.assert_array_equal(np.isinf(a) & (a < 0), np.isinf(b) & (b < 0))
        finite = np.isfinite(b)
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-7)


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_slogdet_recorded_on_a_singular_matrix_raises_torchs_error(torch, name):
    from parity import raised

    code = (f"A = torch.tensor({SINGULAR[name]}, dtype=torch.float64, requires_grad=True)\n"
            "torch.autograd.grad(torch.linalg.slogdet(A).logabsdet.sum(), A, create_graph=True)\n")
    expected, actual = raised(code, torch), raised(code, gv)
    assert type(expected) is torch.linalg.LinAlgError and type(actual) is gv.linalg.LinAlgError
    assert str(actual) == str(expected)
