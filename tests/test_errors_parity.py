"""Errors a learner meets, raised with PyTorch's exception type and exact message.

Each snippet raises in torch; gradviz must raise the same type with the same text.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same_error  # noqa: E402

X = "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"

ERRORS = {
    "matmul_shapes": "a = torch.ones(2, 3)\nb = torch.ones(2, 3)\na @ b\n",
    "mm_shapes": "torch.mm(torch.ones(2, 3), torch.ones(4, 2))\n",
    "mv_shapes": "torch.ones(2, 3) @ torch.ones(4)\n",
    "dot_sizes": "torch.ones(3) @ torch.ones(4)\n",
    "matmul_0d": "torch.tensor(1.0) @ torch.ones(3)\n",
    "broadcast": "torch.ones(2, 3) + torch.ones(4)\n",
    "broadcast_mul": X + "x * torch.ones(2, 2)\n",
    "backward_twice": X + "y = (x ** 2).sum()\ny.backward()\ny.backward()\n",
    "backward_twice_mul": X + "y = (x * x).sum()\ny.backward()\ny.backward()\n",
    "backward_twice_exp": X + "y = x.exp().sum()\ny.backward()\ny.backward()\n",
    "no_grad_fn": "x = torch.tensor(2.0)\ny = x ** 2\ny.backward()\n",
    "no_grad_fn_detach": X + "y = (x.detach() * 2).sum()\ny.backward()\n",
    "no_grad_block": X + "with torch.no_grad():\n    y = (x * 2).sum()\ny.backward()\n",
    "implicit_grad": X + "(x * 2).backward()\n",
    "int_requires_grad_factory": "torch.tensor([1, 2], requires_grad=True)\n",
    "int_requires_grad_method": "torch.tensor([1, 2]).requires_grad_()\n",
    "int_requires_grad_setter": "t = torch.tensor([1, 2])\nt.requires_grad = True\n",
    "leaf_in_place": X + "x += 1\n",
    "leaf_in_place_mul": X + "x.mul_(2)\n",
    "non_leaf_requires_grad": X + "y = x * 2\ny.requires_grad = False\n",
    "numpy_with_grad": X + "x.numpy()\n",
    "modified_saved_tensor": X + "y = x.exp()\ny.add_(1)\ny.sum().backward()\n",
    "modified_saved_input": X + "a = x * 1\ny = a ** 2\na.mul_(2)\ny.sum().backward()\n",
    "sigmoid_saved_modified": X + "y = torch.sigmoid(x)\ny.mul_(2)\ny.sum().backward()\n",
    "bce_logits_size": X + "F.binary_cross_entropy_with_logits(x, torch.zeros(2))\n",
    "bce_range": "F.binary_cross_entropy(torch.tensor([1.5, 0.5]), torch.tensor([1.0, 0.0]))\n",
    "mean_of_ints": "torch.tensor([1, 2]).mean()\n",
    "dim_out_of_range": X + "x.sum(3)\n",
    "clamp_no_bounds": X + "torch.clamp(x)\n",
    "where_condition": X + "torch.where(x, x, x)\n",
    "view_size": X + "x.view(2, 2)\n",
    "item_many": X + "x.item()\n",
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_matches_torch(name, backend):
    assert_same_error(ERRORS[name], backend)
