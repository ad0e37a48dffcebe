"""``take``, ``take_along_dim``, ``put``, ``index_fill``, ``index_copy`` (and in place) against PyTorch 2.13: values, the graph
(TakeBackward0; take_along_dim's ExpandBackward0 + GatherBackward0; IndexFillBackward0/1; IndexCopyBackward0 with
its saved source), grads, printed text and errors."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, run_both, assert_values, weighted_backward  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0, 0.1], [1.2, 0.3, -0.7, 0.9], [0.2, 1.1, -0.4, 0.6]], requires_grad=True)\n"
S = "s = torch.tensor([[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 1.0, 2.0]], requires_grad=True)\n"

CASES = {
    "take": X + weighted_backward("x.take(torch.tensor([0, 5, -1, 5]))") + "print(y)\n",
    "take_2d_index": X + weighted_backward("torch.take(x, torch.tensor([[11, 0], [3, 3]]))"),
    "take_along_dim": X + weighted_backward("torch.take_along_dim(x, torch.tensor([[0], [3], [1]]), 1)") + "print(y)\n",
    "take_along_dim_broadcast": X + weighted_backward("x.take_along_dim(torch.tensor([[2, 0, 1, 1]]), dim=0)"),
    "take_along_dim_flat": X + weighted_backward("torch.take_along_dim(x, torch.tensor([3, 0, 7]))"),
    "take_along_dim_argsort": X + weighted_backward("torch.take_along_dim(x, x.argsort(1), 1)"),
    "put": X + S + weighted_backward("x.put(torch.tensor([-1, 0, 4]), s[0, :3] * 1)") + "print(y)\n",
    "put_accumulate": X + S + weighted_backward("torch.put(x, torch.tensor([[1, 1], [2, 1]]), s[:, :2] ** 2, accumulate=True)"),
    "put_in_place": X + S + "z = x * 1\nz.put_(torch.tensor([3]), s[1, :1] * 2)\nz.put_(torch.tensor([3, 0]), s[0, :2], True)\n"
                            "z.sum().backward()\n",
    "put_constant_source": X + weighted_backward("x.put(torch.tensor([2]), torch.tensor([9.0]))"),
    "index_fill": X + weighted_backward("x.index_fill(1, torch.tensor([0, 2, 2]), 3.0)") + "print(y)\n",
    "index_fill_negative_dim": X + weighted_backward("torch.index_fill(x, -2, torch.tensor([1]), -1)"),
    "index_fill_tensor_value": X + weighted_backward("x.index_fill(1, torch.tensor([3]), x[0, 0] * 2)"),
    "index_fill_in_place": X + "z = x * 1\nz.index_fill_(0, torch.tensor([2, 0]), 0.5)\n(z * z).sum().backward()\n",
    "index_copy": X + S + weighted_backward("x.index_copy(0, torch.tensor([2, 0]), s[:2])") + "print(y)\n",
    "index_copy_dim1": X + S + weighted_backward("torch.index_copy(x, 1, torch.tensor([3, 1]), s.t()[:3] * 1)"),
    "index_copy_in_place": X + S + "z = x * 1\nz.index_copy_(0, torch.tensor([1]), s[1:] * 2)\nz.sum().backward()\n",
    "index_copy_no_grad_source": X + "z = x.index_copy(1, torch.tensor([0]), torch.ones(3, 1))\nz.sum().backward()\n",
}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_lookup_matches_torch(name, backend):
    assert_same(CASES[name], backend)


ERRORS = {
    "take_out_of_range": "torch.ones(2, 3).take(torch.tensor([6]))",
    "take_float_index": "torch.ones(2, 3).take(torch.tensor([1.0]))",
    "take_along_dim_ndim": "torch.take_along_dim(torch.ones(2, 3), torch.tensor([1]), 0)",
    "index_fill_float_index": "torch.ones(2, 3).index_fill(0, torch.tensor([1.0]), 1)",
    "index_fill_out_of_range": "torch.ones(2, 3).index_fill(0, torch.tensor([5]), 1)",
    "index_fill_vector_value": "torch.ones(2, 3).index_fill(0, torch.tensor([1]), torch.tensor([1.0, 2.0]))",
    "put_sizes": "torch.zeros(2, 3).put(torch.tensor([1, 1]), torch.ones(1))",
    "put_out_of_range": "torch.zeros(2, 3).put(torch.tensor([7]), torch.ones(1))",
    "put_float_index": "torch.zeros(2, 3).put(torch.tensor([1.0]), torch.ones(1))",
    "put_dtype": "torch.zeros(2, 3).put(torch.tensor([1]), torch.ones(1, dtype=torch.float64))",
    "index_copy_dtype": "torch.ones(2, 3, dtype=torch.float64).index_copy(0, torch.tensor([1]), torch.ones(1, 3))",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_lookup_errors_match_torch(name):
    assert_same_error(ERRORS[name])


SECOND_ORDER = {
    "index_fill": X + "g, = torch.autograd.grad((x.index_fill(1, torch.tensor([1]), 2.0) ** 2).sum(), x, create_graph=True)\n"
                      "(g * g).sum().backward()\n",
    "index_copy": X + S + "g, = torch.autograd.grad((x.index_copy(0, torch.tensor([2, 0]), s[:2] ** 2) ** 2).sum(), x, "
                          "create_graph=True)\n(g * x).sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_values_match_torch(name):
    (scope_t, _), (scope_g, _) = run_both(SECOND_ORDER[name])
    assert_values(scope_t["g"], scope_g["g"], "g")
    assert_values(scope_t["x"].grad, scope_g["x"].grad, "x.grad")
