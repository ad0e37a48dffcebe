"""``select_scatter``, ``slice_scatter``, ``diagonal_scatter``, ``masked_scatter(_)``, ``renorm(_)``,
``fill_diagonal_``, ``x.addmm(_)`` and ``torch.pinverse`` against torch 2.13: values, gradients, graphs with saved
values (negative arguments as PyTorch shows them), the recorded double backward, errors."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402


def leaf(name: str, *shape) -> str:
    count = 1
    for size in shape:
        count *= size
    return (f"{name} = torch.arange({count}, dtype=torch.float64).reshape({list(shape)})\n"
            f"{name} = ((0.37 * {name} + 0.011 * {name} * {name}) % 1.9 - 0.8).requires_grad_()\n")


CASES = {
    "select_scatter": leaf("x", 4, 3) + leaf("s", 3) + weighted_backward("torch.select_scatter(x, s, 0, 1)"),
    "select_scatter_negative": leaf("x", 2, 4, 3) + leaf("s", 2, 3) + weighted_backward("x.select_scatter(s, -2, -1)"),
    "slice_scatter": leaf("x", 5, 3) + leaf("s", 2, 3) + weighted_backward("torch.slice_scatter(x, s, 0, 1, 5, 2)"),
    "slice_scatter_open_end": leaf("x", 4, 5) + leaf("s", 4, 2) + weighted_backward("x.slice_scatter(s, -1, 3)"),
    "slice_scatter_defaults": leaf("x", 2, 3) + leaf("s", 2, 3) + weighted_backward("torch.slice_scatter(x, s)"),
    "diagonal_scatter": leaf("x", 4, 3) + leaf("s", 3) + weighted_backward("torch.diagonal_scatter(x, s)"),
    "diagonal_scatter_offset_dims": leaf("x", 2, 3, 4) + leaf("s", 3, 1) + weighted_backward(
        "x.diagonal_scatter(s, 1, -1, 0)"),
    "masked_scatter": leaf("x", 3, 4) + leaf("s", 12) + "m = torch.tensor([[True, False, True, False]] * 3)\n"
    + weighted_backward("x.masked_scatter(m, s)") + "print(y)\n",
    "masked_scatter_broadcast_mask": leaf("x", 2, 3) + leaf("s", 2, 3)
    + "m = torch.tensor([False, True, True])\n" + weighted_backward("torch.masked_scatter(x, m, s)"),
    "masked_scatter_in_place": leaf("x", 2, 3) + leaf("s", 4) + "m = torch.tensor([[True, False, True]] * 2)\n"
    "y = x * 1\ny.masked_scatter_(m, s)\n(y * y).sum().backward()\n",
    "renorm": leaf("x", 3, 4) + weighted_backward("x.renorm(2, 0, 1.0)") + "print(y)\n",
    "renorm_p_dim": leaf("x", 2, 3, 2) + weighted_backward("torch.renorm(x, 3, -1, 0.9)"),
    "renorm_in_place": leaf("x", 3, 2) + "y = x * 2\ny.renorm_(1, 1, 1.5)\n(y * y).sum().backward()\n",
    "fill_diagonal": leaf("x", 3, 3) + "y = x * 1\ny.fill_diagonal_(5.0)\n(y * y).sum().backward()\nprint(y)\n",
    "fill_diagonal_wrap": leaf("x", 7, 3) + "y = x * 1\ny.fill_diagonal_(-1.0, wrap=True)\n(y * y).sum().backward()\n",
    "fill_diagonal_tall_no_wrap": "y = torch.zeros(7, 3)\ny.fill_diagonal_(2.0)\nz = torch.zeros(2, 2, 2)\n"
    "z.fill_diagonal_(3.0)\nprint(y, z)\n",
    "addmm_method": leaf("x", 2, 3) + leaf("a", 2, 4) + leaf("b", 4, 3) + weighted_backward(
        "x.addmm(a, b, beta=0.5, alpha=2.0)"),
    "addmm_in_place": leaf("x", 2, 3) + leaf("a", 2, 4) + leaf("b", 4, 3)
    + "y = x * 1\ny.addmm_(a, b)\n(y * y).sum().backward()\n",
    "pinverse": leaf("x", 4, 3) + weighted_backward("torch.pinverse(x)") + "z = x.pinverse(rcond=1e-10)\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    assert_same(CASES[name])


SECOND_ORDER = {
    kind: leaf("x", 4, 3) + leaf("s", *shape) + f"y = {call}\n" + leaf("go", 4, 3)
    + "gx, gs = torch.autograd.grad(y, (x, s), go, create_graph=True)\n((gx * gx).sum() + (gs * gs).sum()).backward()\n"
    for kind, call, shape in (("select", "torch.select_scatter(x, s, 1, -1)", (4,)),
                              ("slice", "torch.slice_scatter(x, s, 0, 1, 3)", (2, 3)),
                              ("slice_negative", "torch.slice_scatter(x, s, -2, -3, -1)", (2, 3)),
                              ("diagonal", "torch.diagonal_scatter(x, s, -1, 1, 0)", (2,)))
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_matches_torch(name):
    assert_same(SECOND_ORDER[name])


ERRORS = {
    "select_scatter_shape": "torch.select_scatter(torch.zeros(4, 3), torch.zeros(4), 0, 1)",
    "select_scatter_index": "torch.select_scatter(torch.zeros(4, 3), torch.zeros(3), 0, 4)",
    "slice_scatter_shape": "torch.slice_scatter(torch.zeros(4, 3), torch.zeros(3, 3), 0, 0, 2)",
    "diagonal_scatter_shape": "torch.diagonal_scatter(torch.zeros(4, 3), torch.zeros(4))",
    "masked_scatter_mask_dtype": "torch.zeros(2).masked_scatter(torch.tensor([1, 0]), torch.ones(2))",
    "masked_scatter_source_dtype": "torch.zeros(2).masked_scatter(torch.tensor([True, False]), torch.ones(2, "
    "dtype=torch.float64))",
    "masked_scatter_too_few": "torch.zeros(3).masked_scatter(torch.tensor([True, True, True]), torch.ones(2))",
    "renorm_one_dim": "torch.ones(3).renorm(2, 0, 1.0)",
    "renorm_negative_p": "torch.ones(3, 2).renorm(-1, 0, 1.0)",
    "renorm_negative_maxnorm": "torch.ones(3, 2).renorm(2, 0, -1.0)",
    "fill_diagonal_one_dim": "torch.zeros(3).fill_diagonal_(1.0)",
    "fill_diagonal_unequal": "torch.zeros(2, 3, 3).fill_diagonal_(1.0)",
    "fill_diagonal_leaf": "torch.zeros(3, 3, requires_grad=True).fill_diagonal_(1.0)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(ERRORS[name])
