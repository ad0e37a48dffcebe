"""``torch.linalg`` against PyTorch 2.13: inv, det, slogdet, logdet, cholesky, solve, the norms and
the old ``torch.inverse``/``torch.det``/``torch.cholesky`` names, with their nodes
(LinalgInvExBackward0, LinalgDetBackward0 ...), saved LU factors, values, grads and errors.

A matrix these cannot factor raises PyTorch's ``torch.linalg.LinAlgError`` in torch and gradviz's
``gv.linalg.LinAlgError`` here: both RuntimeErrors, with the same message.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, raised, weighted_backward  # noqa: E402

# a well-conditioned matrix, a symmetric positive-definite one, a batch, a singular one
A = "A = torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0]], dtype=torch.float64, requires_grad=True)\n"
P = ("M = torch.tensor([[2.0, -1.0, 0.5], [0.3, 1.5, -0.7], [1.0, 0.2, 3.0]], dtype=torch.float64)\n"
     "P = (M @ M.T + torch.eye(3, dtype=torch.float64)).requires_grad_()\n")
BATCH = ("Ab = torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 1.5]]], dtype=torch.float64, "
         "requires_grad=True)\n")
NEGATIVE = "N = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64, requires_grad=True)\n"
B = "b = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64, requires_grad=True)\n"
BM = "Bm = torch.tensor([[1.0, 0.0], [-2.0, 1.0], [0.5, 3.0]], dtype=torch.float64, requires_grad=True)\n"

CASES = {
    "inv": A + weighted_backward("torch.linalg.inv(A)") + "print(y)\n",
    "inverse_method": A + weighted_backward("A.inverse()"),
    "inv_batch": BATCH + weighted_backward("torch.inverse(Ab)"),
    "inv_float32": "A = torch.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)\n" + weighted_backward("torch.linalg.inv(A)"),
    "det": A + "y = torch.linalg.det(A)\ny.backward()\nprint(y)\n",
    "det_method_batch": BATCH + weighted_backward("Ab.det()"),
    "det_singular": "S = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64, requires_grad=True)\n"
    "y = torch.det(S)\ny.backward()\n",
    "slogdet": A + "sign, logabsdet = torch.linalg.slogdet(A)\nlogabsdet.backward()\nprint(torch.linalg.slogdet(A))\n",
    "slogdet_negative": NEGATIVE + "result = torch.slogdet(N)\nprint(result)\n(result.logabsdet * 2).backward()\n",
    "slogdet_batch": BATCH + "sign, logabsdet = Ab.slogdet()\n(logabsdet * torch.tensor([1.0, 2.0], dtype=torch.float64)).sum().backward()\n",
    "logdet": P + "y = torch.logdet(P)\ny.backward()\nprint(y)\n",
    "logdet_negative": NEGATIVE + "y = N.logdet()\nprint(y)\n",
    "cholesky": P + weighted_backward("torch.linalg.cholesky(P)") + "print(y)\n",
    "cholesky_upper": P + weighted_backward("torch.linalg.cholesky(P, upper=True)"),
    "cholesky_deprecated": P + weighted_backward("torch.cholesky(P)"),
    "solve_vector": A + B + weighted_backward("torch.linalg.solve(A, b)"),
    "solve_matrix": A + BM + weighted_backward("torch.linalg.solve(A, Bm)"),
    "solve_batch": BATCH + "c = torch.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("torch.linalg.solve(Ab, c)"),
    "matrix_norm_fro": A + "y = torch.linalg.matrix_norm(A)\ny.backward()\n",
    "matrix_norm_1_inf": A + "y = torch.linalg.matrix_norm(A, 1) + torch.linalg.matrix_norm(A, float('inf'))\n"
    "y.backward()\n",
    "matrix_norm_negative_batch": BATCH + weighted_backward("torch.linalg.matrix_norm(Ab, -1)")
    + "z = torch.linalg.matrix_norm(Ab, -float('inf'), keepdim=True)\n",
    "linalg_norm": A + B + "y = torch.linalg.norm(A) + torch.linalg.norm(b) + torch.linalg.norm(b, 1)\ny.backward()\n",
    "vector_norm": A + weighted_backward("torch.linalg.vector_norm(A, 3, dim=1)"),
    "linalg_multi_dot_and_cross": A + B + weighted_backward("torch.linalg.multi_dot([A, A, b]) * torch.linalg.cross(b, b * 2)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")


@pytest.mark.parametrize("transposed", [False, True])
def test_lu_factors_are_lapacks(transposed):
    """The saved LU and pivots of det, slogdet and solve are getrf's, for matrices that need row swaps
    (det and slogdet factor a row-major matrix's transpose, as PyTorch does), laid out as LAPACK's."""
    import torch

    rng = np.random.default_rng(3)
    for size in (1, 2, 3, 5):
        matrix = rng.normal(size=(size, size))
        for library, saved in ((torch, {}), (gv, {})):
            A = library.tensor(matrix, requires_grad=True)
            A = A.mT if transposed else A
            for name, out in (("det", library.linalg.det(A)), ("slogdet", library.linalg.slogdet(A).logabsdet),
                              ("solve", library.linalg.solve(A, library.ones(size, dtype=library.float64)))):
                saved[name] = (out.grad_fn._saved_LU, out.grad_fn._saved_pivots)
            if library is torch:
                expected = saved
        for name, (lu, pivots) in saved.items():
            np.testing.assert_allclose(lu.numpy(), expected[name][0].numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
            assert lu.stride() == expected[name][0].stride(), name
            assert pivots.tolist() == expected[name][1].tolist() and pivots.dtype == gv.int32, name


SINGULAR = "S = torch.tensor([[1.0, 2.0], [2.0, 4.0]])\n"
LINALG_ERRORS = [
    SINGULAR + "torch.linalg.inv(S)",
    SINGULAR + "torch.inverse(torch.stack([torch.eye(2), S]))",
    "torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))",
    "torch.linalg.cholesky(torch.tensor([[-1.0, 2.0], [2.0, 1.0]]))",
    "torch.linalg.cholesky(torch.stack([torch.eye(2), -torch.eye(2)]))",
    "torch.linalg.det(torch.ones(2, 2)); torch.linalg.solve(torch.stack([torch.eye(2), torch.ones(2, 2)]), torch.ones(2, 2))",
    SINGULAR + "torch.linalg.solve(S, torch.ones(2))",
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("code", LINALG_ERRORS)
def test_a_matrix_that_cannot_be_factored_raises_torchs_linalg_error(code, backend):
    import torch

    from gradviz import backends

    expected = raised(code + "\n", torch)
    with backends.using(backend):
        actual = raised(code + "\n", gv)
    assert type(expected) is torch.linalg.LinAlgError and type(actual) is gv.linalg.LinAlgError
    assert isinstance(actual, RuntimeError) and str(actual) == str(expected)


ERRORS = [
    "torch.linalg.inv(torch.ones(2, 3))",
    "torch.linalg.inv(torch.ones(3))",
    "torch.linalg.det(torch.ones(2, 3))",
    "torch.linalg.inv(torch.eye(2, dtype=torch.long))",
    "torch.linalg.det(torch.eye(2, dtype=torch.long))",
    "torch.linalg.slogdet(torch.ones(2, 3))",
    "torch.logdet(torch.ones(2, 3))",
    "torch.linalg.solve(torch.eye(2), torch.ones(3))",
    "torch.linalg.matrix_norm(torch.ones(3))",
]


@pytest.mark.parametrize("line", ERRORS)
def test_linalg_errors_match_torch(line):
    assert_same_error(line + "\n")


SECOND_ORDER = {
    "inv": A + "y = (torch.linalg.inv(A) * torch.arange(9.0, dtype=torch.float64).reshape(3, 3)).sum()\n",
    "det": A + "y = torch.linalg.det(A) ** 2\n",
    "det_of_a_product": A + "B = A * A.sum()\ny = torch.det(B)\n",
    "slogdet": A + "y = torch.linalg.slogdet(A * 2).logabsdet * 3\n",
    "logdet": P + "y = P.logdet()\n",
    "solve_vector": A + B + "y = (torch.linalg.solve(A, b) ** 2).sum()\n",
    "solve_matrix": A + BM + "y = (torch.linalg.solve(A, Bm * 2) ** 3).sum()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_recorded_backward_matches_torch(name):
    code = SECOND_ORDER[name]
    inputs = "(A, b)" if "b = " in code else "(A, Bm)" if "Bm = " in code else "(P,)" if "P = " in code else "(A,)"
    assert_same(code + f"grads = torch.autograd.grad(y, {inputs}, create_graph=True)\n"
                "total = sum((g * g).sum() for g in grads)\ntotal.backward()\n")


L_LOW = "L = torch.tensor([[2.0, 9.0, 9.0], [1.0, 3.0, 9.0], [0.5, -1.0, 1.5]], dtype=torch.float64, requires_grad=True)\n"
TRIANGULAR = {
    "lower_left": L_LOW + BM + weighted_backward("torch.linalg.solve_triangular(L, Bm, upper=False)") + "print(y)\n",
    "upper_left_unit": L_LOW + BM + weighted_backward("torch.linalg.solve_triangular(L.mT, Bm, upper=True, unitriangular=True)"),
    "lower_right": L_LOW + BM + weighted_backward("torch.linalg.solve_triangular(L, Bm.mT, upper=False, left=False)"),
    "upper_right_batch": L_LOW + "c = torch.ones(2, 2, 3, dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("torch.linalg.solve_triangular(L.mT * 1, c, upper=True, left=False)"),
}


@pytest.mark.parametrize("name", sorted(TRIANGULAR))
def test_solve_triangular_matches_torch(name):
    assert_same(TRIANGULAR[name])
    assert_same(TRIANGULAR[name], backend="torch")


def test_solve_triangular_shape_error_matches_torch():
    assert_same_error(L_LOW + "torch.linalg.solve_triangular(L, torch.ones(2, 2, dtype=torch.float64), upper=True)\n")


SECOND_ORDER_CHOLESKY = {
    "cholesky": P + "y = (torch.linalg.cholesky(P) * torch.arange(9.0, dtype=torch.float64).reshape(3, 3)).sum()\n",
    "cholesky_upper": P + "y = (torch.linalg.cholesky(P, upper=True) ** 2).sum()\n",
    "cholesky_of_a_product": A + "y = (torch.linalg.cholesky(A @ A.T + torch.eye(3, dtype=torch.float64)) ** 3).sum()\n",
    "solve_triangular": L_LOW + BM + "y = (torch.linalg.solve_triangular(L, Bm, upper=False) ** 2).sum()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER_CHOLESKY))
def test_recorded_cholesky_backward_matches_torch(name):
    code = SECOND_ORDER_CHOLESKY[name]
    inputs = "(L, Bm)" if "Bm = " in code else "(P,)" if "P = " in code else "(A,)"
    assert_same(code + f"grads = torch.autograd.grad(y, {inputs}, create_graph=True)\n"
                "total = sum((g * g).sum() for g in grads)\ntotal.backward()\n")
