"""``autograd.grad(is_grads_batched=True)`` and ``autograd.functional.jacobian/hessian`` with ``vectorize`` and
``strategy`` against PyTorch 2.13: the same values (gradviz runs one reverse-mode pass per row or per output
element where PyTorch vmaps), and PyTorch's errors for the combinations it refuses."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, run_both, assert_values  # noqa: E402

A = "a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
JACOBIAN = "jacobian = torch.autograd.functional.jacobian\n"
HESSIAN = "hessian = torch.autograd.functional.hessian\n"

CASES = {
    "batched_identity": A + "g, = torch.autograd.grad(a ** 2, a, torch.eye(3), is_grads_batched=True)\nprint(g)\n",
    "batched_two_outputs_unused_input": A + "b = torch.ones(2, requires_grad=True)\n"
                                            "g = torch.autograd.grad([a * 2, a.sum()], [a, b], [torch.eye(3), torch.ones(3)], "
                                            "is_grads_batched=True, allow_unused=True)\nprint(g)\n",
    "batched_materialized": A + "b = torch.ones(2, requires_grad=True)\n"
                                "g = torch.autograd.grad(a * 2, [a, b], torch.eye(3)[:2], is_grads_batched=True, "
                                "materialize_grads=True)\n",
    "jacobian_vectorize": JACOBIAN + "x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])\n"
                                     "j1 = jacobian(lambda x: (x ** 2).sum(0), x, vectorize=True)\n"
                                     "j2 = jacobian(lambda x: (x ** 2).sum(0), x, vectorize=True, strategy='forward-mode')\n"
                                     "j3 = jacobian(lambda x, y: x * y, (x, x + 1), vectorize=True)\nprint(j1, j2)\n",
    "hessian_vectorize": HESSIAN + "h = hessian(lambda x: (x ** 3).sum(), torch.tensor([1.0, 2.0]), vectorize=True)\nprint(h)\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    assert_same(CASES[name])


def test_batched_grad_with_create_graph_differentiates_again():
    (scope_t, _), (scope_g, _) = run_both(A + "g, = torch.autograd.grad(a ** 3, a, torch.eye(3), is_grads_batched=True, "
                                              "create_graph=True)\ng.sum().backward()\n")
    assert_values(scope_t["g"], scope_g["g"], "g")
    assert_values(scope_t["a"].grad, scope_g["a"].grad, "a.grad")


ERRORS = {
    "batched_scalar_no_grad_outputs": A + "torch.autograd.grad((a ** 2).sum(), a, is_grads_batched=True)",
    "batched_non_scalar_no_grad_outputs": A + "torch.autograd.grad(a ** 2, a, is_grads_batched=True)",
    "batched_sizes_differ": A + "torch.autograd.grad([a ** 2, a.sum()], a, [torch.eye(3), torch.ones(2)], is_grads_batched=True)",
    "batched_shape": A + "torch.autograd.grad(a ** 2, a, torch.ones(3), is_grads_batched=True)",
    "jacobian_strategy": JACOBIAN + "jacobian(lambda x: x * 2, torch.ones(2), strategy='sideways')",
    "jacobian_forward_needs_vectorize": JACOBIAN + "jacobian(lambda x: x * 2, torch.ones(2), strategy='forward-mode')",
    "jacobian_forward_create_graph": JACOBIAN + "jacobian(lambda x: x * 2, torch.ones(2), strategy='forward-mode', "
                                                "vectorize=True, create_graph=True)",
    "jacobian_forward_strict": JACOBIAN + "jacobian(lambda x: x * 2, torch.ones(2), strategy='forward-mode', vectorize=True, "
                                          "strict=True)",
    "hessian_forward_needs_vectorize": HESSIAN + "hessian(lambda x: (x ** 3).sum(), torch.ones(2), "
                                                 "outer_jacobian_strategy='forward-mode')",
    "hessian_strategy": HESSIAN + "hessian(lambda x: (x ** 3).sum(), torch.ones(2), outer_jacobian_strategy='x', vectorize=True)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(ERRORS[name])
