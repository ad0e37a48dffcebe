"""``linalg.cond`` for p='fro', 1, -1, inf, -inf, and ``linalg.inv_ex``, against PyTorch 2.13: PyTorch builds these
condition numbers from ``linalg.inv_ex``, fills a singular matrix's inverse with inf in place (MaskedFillBackward0),
multiplies the two matrix norms and applies ``nan_to_num_`` in place (NanToNumBackward0). The in-place fill
modifies the inverse LinalgInvExBackward0 saved, so a backward raises PyTorch's own error; gradviz the same."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

ORDERS = ("'fro'", "1", "-1", "float('inf')", "-float('inf')")
MATRICES = {
    "regular": "torch.tensor([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.5, 1.0, 4.0]], dtype=torch.float64)",
    "singular": "torch.tensor([[1.0, 2.0], [2.0, 4.0]])",
    "zero": "torch.zeros(2, 2, dtype=torch.float64)",
    "batch_one_singular": "torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])",
    "float32": "torch.tensor([[0.3, -1.2], [2.5, 0.7]])",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("matrix", sorted(MATRICES))
@pytest.mark.parametrize("order", ORDERS)
def test_cond_values_and_graph_match_torch(order, matrix, backend):
    assert_same(f"A = {MATRICES[matrix]}.requires_grad_()\nc = torch.linalg.cond(A, {order})\nprint(c)\n"
                f"d = torch.linalg.cond(A.detach(), {order})\nprint(d)\n", backend)


@pytest.mark.parametrize("matrix", sorted(MATRICES))
@pytest.mark.parametrize("order", ORDERS)
def test_cond_backward_raises_torchs_error(order, matrix):
    """The inverse was modified in place after LinalgInvExBackward0 saved it: PyTorch's RuntimeError."""
    assert_same_error(f"A = {MATRICES[matrix]}.requires_grad_()\ntorch.linalg.cond(A, {order}).sum().backward()\n")


def test_cond_keeps_the_other_orders_and_their_errors():
    assert_same_error("torch.linalg.cond(torch.ones(2, 3), 'fro')")
    assert_same_error("torch.linalg.cond(torch.ones(2, 3), 1)")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_inv_ex_matches_torch(backend):
    assert_same("A = torch.tensor([[2.0, 1.0], [0.5, 3.0]], requires_grad=True)\nr = torch.linalg.inv_ex(A)\n"
                "print(r)\nS = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]]])\n"
                "info = torch.linalg.inv_ex(S).info\nprint(info)\n"
                "(r.inverse * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()\n", backend)


@pytest.mark.parametrize("code", ["torch.linalg.inv_ex(torch.tensor([[1.0, 2.0], [2.0, 4.0]]), check_errors=True)",
                                  "torch.linalg.inv_ex(torch.zeros(2, 2, 2), check_errors=True)"])
def test_inv_ex_check_errors_raises_torchs_linalg_error(code):
    import torch

    import gradviz as gv
    from parity import raised

    expected, actual = raised(code, torch), raised(code, gv)
    assert type(expected) is torch.linalg.LinAlgError and type(actual) is gv.linalg.LinAlgError
    assert str(actual) == str(expected)
