"""``zeros_like`` and its neighbours keep their input's memory layout, as PyTorch's ``preserve_format`` does
(random ones fill it in memory order, so a seeded ``randn_like`` of a transposed tensor prints torch's numbers),
and ``autograd.grad(materialize_grads=True)`` gives an unused input such zeros, requiring grad under
``create_graph``. Each case runs in torch 2.13 and in gradviz and compares what they print and leave."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402

LAYOUTS = {
    "transposed": "y = torch.ones(2, 3, dtype=torch.float64).t()\n",
    "permuted_3d": "y = torch.ones(2, 3, 4).permute(2, 0, 1)\n",  # 16+ values: torch draws them one pair at a time
    "sliced": "y = torch.ones(4, 6)[:, ::2]\n",
    "transposed_then_sliced": "y = torch.ones(4, 6).t()[::2]\n",
    "column": "y = torch.ones(1, 3).t()\n",
    "size_one_dims": "y = torch.ones(2, 1, 3).transpose(0, 2)\n",  # dense: its strides exactly, the size-1 one's too
    "contiguous": "y = torch.ones(2, 3)\n",
}
LIKES = ("torch.zeros_like(y)", "torch.ones_like(y)", "torch.full_like(y, 2.5)", "torch.empty_like(y).zero_()",
         "torch.randn_like(y)", "torch.rand_like(y)", "torch.randint_like(y, 7)",
         "torch.zeros_like(y, dtype=torch.float64, requires_grad=True)")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_like_factories_keep_the_layout_and_fill_in_memory_order(layout):
    lines = "".join(f"torch.manual_seed(3)\nz{i} = {like}\nprint(z{i}, z{i}.stride(), z{i}.is_contiguous())\n"
                    for i, like in enumerate(LIKES))
    assert_same(LAYOUTS[layout] + lines)


@pytest.mark.parametrize("create_graph", [False, True])
def test_materialized_grads_of_unused_inputs_are_torchs_zeros(create_graph):
    assert_same("x = torch.tensor([0.5, -1.0], requires_grad=True)\n"
                "y = torch.ones(2, 3, dtype=torch.float64).t().requires_grad_()\n"
                f"gx, gy = torch.autograd.grad(x.exp().sum(), [x, y], create_graph={create_graph}, "
                "allow_unused=True, materialize_grads=True)\n"
                "print(gx, gy, gy.stride(), gy.requires_grad, gy.is_leaf, gy.grad_fn)\n")


def test_random_like_factories_check_what_torch_checks():
    assert_same("y = torch.ones(4, 5, dtype=torch.float64).t()\ntorch.manual_seed(0)\n"
                "a = torch.randn_like(y, requires_grad=True)\nb = torch.rand_like(y, dtype=torch.float32)\n"
                "c = torch.randint_like(y, 2, 9)\nd = torch.randint_like(y, 5, dtype=torch.int64)\n"
                "print(a, b, c, d, a.stride(), d.stride())\n")
