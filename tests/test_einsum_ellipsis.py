"""``einsum`` with an ellipsis (``...``) and in the sublist form, against PyTorch 2.13: the graph of
permutes, views and ``bmm`` it is written with, values and grads."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, weighted_backward  # noqa: E402


def leaf(name: str, *shape) -> str:
    count = 1
    for size in shape:
        count *= size
    return (f"{name} = (torch.arange({count}, dtype=torch.float64).reshape({list(shape)}) * 0.31 % 1.7 - 0.8)"
            ".requires_grad_()\n")


CASES = {
    "batch_matmul": leaf("a", 2, 3, 4) + leaf("b", 2, 4, 5) + weighted_backward("torch.einsum('...ij,...jk->...ik', a, b)"),
    "broadcast_batch": leaf("a", 2, 3, 4) + leaf("b", 4, 5) + weighted_backward("torch.einsum('...ij,jk', a, b)"),
    "broadcast_ellipses": leaf("a", 2, 1, 3) + leaf("b", 4, 3) + weighted_backward("torch.einsum('...i,...i->...', a, b)"),
    "middle": leaf("a", 2, 3, 4) + weighted_backward("torch.einsum('i...j->j...i', a)"),
    "implicit": leaf("a", 3, 4) + leaf("b", 4) + weighted_backward("torch.einsum('...j,...j', a, b)"),
    "summed_away": leaf("a", 2, 3, 4) + weighted_backward("torch.einsum('...ij->ij', a)"),
    "summed_with_label": leaf("a", 2, 3, 4) + leaf("b", 4, 2) + weighted_backward("torch.einsum('...ij,jk->k', a, b)"),
    "sublist": leaf("a", 2, 3) + leaf("b", 3, 4) + weighted_backward("torch.einsum(a, [0, 1], b, [1, 2], [0, 2])"),
    "sublist_implicit": leaf("a", 2, 3) + leaf("b", 3, 4) + weighted_backward("torch.einsum(a, [0, 1], b, [1, 2])"),
    "sublist_ellipsis": leaf("a", 2, 3, 4) + leaf("b", 4, 5)
    + weighted_backward("torch.einsum(a, [Ellipsis, 1, 2], b, [2, 3], [Ellipsis, 1, 3])"),
    "sublist_lowercase": leaf("a", 3, 3) + "y = torch.einsum(a, [30, 30])\ny.backward()\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_einsum_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_einsum_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")
