"""Higher-order gradients: ``create_graph=True`` records the backward pass as an ordinary graph.

Compared with PyTorch 2.13 running the same code: the gradient's graph (node names,
``next_functions``, saved tensors), its values, the second derivatives, and the order in which
both backward passes run. Second derivatives are also checked by central differences.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gradviz as gv
from programs import random_programs, run_program

X = "x = torch.tensor([1.5, -0.5, 2.0], requires_grad=True)\ny = torch.tensor([0.5, 2.0, -1.0], requires_grad=True)\n"
M = "M = torch.tensor([[0.3, -0.2, 0.1], [0.5, 1.1, -0.7]], requires_grad=True)\n"


def second_order(expression: str, wrt: str = "x") -> str:
    """``g = d(expression)/d(wrt)`` recorded, then backward through ``g`` into every leaf's ``.grad``."""
    return (X + M + f"out = {expression}\n"
            f"g, = torch.autograd.grad(out, {wrt}, create_graph=True)\n"
            "print(g)\n"
            "(g * torch.arange(1.0, g.numel() + 1.0).reshape(g.shape)).sum().backward()\n")


EXPRESSIONS = {
    "cube": "(x ** 3).sum()",
    "square_by_mul": "(x * x).sum()",
    "product": "(x * y * x).sum()",
    "quotient": "(x / y).sum()",
    "quotient_other": ("(x / y).sum()", "y"),
    "reciprocal": "(2 / x).sum()",
    "difference": "((x - y) * y).sum()",
    "rsub": "((1 - x) * x).sum()",
    "exp": "(x.exp() * y).sum()",
    "log": "((x * x + 1).log() * x).sum()",
    "sin": "(x.sin() * x).sum()",
    "cos": "x.cos().sum()",
    "tanh": "(x.tanh() * y).sum()",
    "sigmoid": "(x.sigmoid() * x).sum()",
    "relu": "(x.relu() * x).sum()",
    "sqrt": "((x * x).sqrt() * y).sum()",
    "mean_squared": "(x * y).mean() ** 2",
    "sum_dim": "((x * y).sum(0) * x).sum()",
    "broadcast": "((x.unsqueeze(1) * y) ** 2).sum()",
    "broadcast_other": ("((x.unsqueeze(1) * y) ** 2).sum()", "y"),
    "mm": "((x.unsqueeze(0) @ M.t()) ** 2).sum()",
    "mm_weight": ("((x.unsqueeze(0) @ M.t()) ** 2).sum()", "M"),
    "mv": "((M @ x) ** 2).sum()",
    "mv_matrix": ("((M @ x) ** 2).sum()", "M"),
    "bce_with_logits": "F.binary_cross_entropy_with_logits(x * y, torch.tensor([1.0, 0.0, 1.0]))",
    "mse": "F.mse_loss(x * y, torch.tensor([1.0, 0.0, 2.0]))",
    "mse_sum": "F.mse_loss(x.tanh(), y, reduction='sum')",
    "mean_dim": "((x.unsqueeze(0) * M).mean(1) ** 2).sum()",
    "squeeze": "((x.unsqueeze(1).unsqueeze(0).squeeze() * y) ** 2).sum()",
    "squeeze_dim": "((x.unsqueeze(1).squeeze(-1)) ** 3).sum()",
    "transpose_permute": "((M.transpose(0, -1).unsqueeze(2).permute(2, 1, 0) * x) ** 2).sum()",
    "vector_matrix": ("((y @ M.t()) ** 2).sum()", "M"),
    "clone": "(x.clone() ** 3).sum()",
    "select": "(M[1] ** 2 * x).sum() + (M[:, -1] ** 3).sum()",
    "select_matrix": ("(M[1] ** 2 * x).sum() + (M[:, -1] ** 3).sum()", "M"),
    "slice": ("(M[:, 0:2] ** 2).sum() + (M[0, 1:] ** 3).sum()", "M"),
    "cross_entropy": ("F.cross_entropy(M * M, torch.tensor([0, 2]))", "M"),
    "cross_entropy_sum": ("F.cross_entropy(M.tanh(), torch.tensor([1, 2]), reduction='sum')", "M"),
    "cross_entropy_none": ("(F.cross_entropy(M * 2, torch.tensor([1, 0]), reduction='none') * y[:2]).sum()", "M"),
    "log_softmax": ("(F.log_softmax(M, dim=-1) * M).sum()", "M"),
    "softmax": ("(M.softmax(-1) * M).sum()", "M"),
    "softmax_dim0": ("(F.softmax(M * 2, dim=0) ** 2).sum()", "M"),
    "abs": "(x.abs() * x).sum()",
    "abs_power": "((x * y).abs() ** 3).sum()",
    "clamp": "(x.clamp(-1, 1) * x).sum()",
    "clamp_min": "(x.clamp(min=0.0) ** 2 * y).sum()",
    "clamp_max": ("(x.clamp(max=1.0) ** 2 * y).sum()", "y"),
    "maximum": "(torch.maximum(x, y) * x).sum()",
    "maximum_tie_broadcast": "(torch.maximum(x * y, torch.tensor(0.75)) ** 2).sum()",
    "minimum_other": ("(torch.minimum(x.unsqueeze(1), y) ** 2).sum()", "y"),
    "where": "(torch.where(x > 0, x, y) * x).sum()",
    "where_other": ("(torch.where(x > 0, x * y, y.unsqueeze(1)) ** 2).sum()", "y"),
    "where_number": "(torch.where(x > 0, x, 0.0) * x).sum()",
    "max": "(x.max() * x).sum()",
    "max_tie": "(x.clamp(max=1.0).max() ** 2 * y).sum()",
    "max_dim": ("(M.max(1)[0] ** 2).sum()", "M"),
    "max_dim_keepdim_negative": ("(M.max(-2, keepdim=True)[0] ** 3 * M).sum()", "M"),
    "max_dim_vector": "(x.max(0)[0] * x).sum()",
    "norm": "(x.norm() * x).sum()",
    "norm_dim": ("(M.norm(dim=1) ** 2).sum()", "M"),
    "norm_dim_keepdim": ("(M.norm(2, dim=0, keepdim=True) * M).sum()", "M"),
    "norm_dims_negative": ("(M.unsqueeze(0).norm(dim=(-1, 0)) * M[:, 0]).sum()", "M"),
    "norm_1": "(x.norm(p=1) * x).sum()",
    "norm_1_dim": ("(M.norm(1, dim=-1) ** 2).sum()", "M"),
    "norm_inf": "(x.norm(p=float('inf')) * x).sum()",
    "norm_minus_inf_dim": ("(M.norm(p=float('-inf'), dim=-1) ** 2).sum()", "M"),
    "norm_inf_tie": "((x * y).abs().norm(p=float('inf'), dim=0, keepdim=True) * x).sum()",
    "norm_3_dim": ("(M.norm(p=3, dim=1) * 2).sum()", "M"),
    "norm_3": "(x.norm(p=3) * x).sum()",
    "norm_half": "(x.norm(p=0.5) ** 2).sum()",
    "norm_half_zero": "((x * torch.tensor([1.0, 0.0, 1.0])).norm(p=0.5) * x).sum()",
    "norm_1_5_keepdim": ("(M.norm(p=1.5, dim=0, keepdim=True) * M).sum()", "M"),
    "norm_fro_dims": ("(M.norm(p='fro', dim=(0, 1)) * M).sum()", "M"),
    "norm_0": "(x.norm(p=0) * x).sum()",
    "cat": "(torch.cat([x, y * x]) ** 2).sum()",
    "cat_negative_dim": ("(torch.cat([M, M * 2, M[:, :1]], -1) ** 2).sum()", "M"),
    "stack": "(torch.stack([x, y * x], 1) ** 2).sum()",
    "stack_negative_dim": ("(torch.stack([M, M * y], -1) ** 3).sum()", "M"),
    "repeat": "(x.repeat(2) ** 2 * torch.arange(6.0)).sum()",
    "repeat_lead_dims": ("(M.repeat(2, 1, 3) ** 3).sum()", "M"),
    "repeat_ones": ("(M.repeat(1, 1) ** 2).sum()", "M"),
    "dot": "(x.dot(y) * x).sum()",
    "dot_other": ("x.dot(y) ** 2", "y"),
    "bmm": ("(torch.bmm(M.unsqueeze(0), M.t().unsqueeze(0)) ** 2).sum()", "M"),
    "bmm_batches": ("(torch.bmm(M.reshape(3, 1, 2), M.reshape(3, 2, 1) * 2) ** 2).sum()", "M"),
    "pow_tensor": "(x.abs() ** y * x).sum()",
    "pow_tensor_exponent": ("(x.abs() ** y).sum()", "y"),
    "pow_tensor_broadcast": ("((M * M) ** x.unsqueeze(0)).sum()", "M"),
    "pow_tensor_zero_exponent": "(x ** (y * 0)).sum() + (x ** y.abs()).sum()",
    "pow_number_base": "(2.0 ** x * y).sum()",
    "pow_number_base_int": ("(3 ** (x * y)).sum()", "y"),
    "masked_fill": "(x.masked_fill(x > 1, 0.0) ** 2 * y).sum()",
    "masked_fill_broadcast": ("(M.masked_fill(torch.tensor([True, False, True]), -1.0) ** 3).sum()", "M"),
    "masked_fill_tensor_value": "(x.masked_fill(x < 0, torch.tensor(2.0)) ** 2).sum()",
    "masked_fill_value_needs_grad": ("(x.masked_fill(x < 0, y[0] * 2) ** 2).sum()", "y"),
    "masked_fill_value_and_input": "(x.masked_fill(torch.tensor([True, False, True]), (x * y).sum()) * x).sum()",
    "masked_fill_value_broadcast_mask": ("(M.masked_fill(torch.tensor([[True], [False]]), y[1]) ** 3).sum()", "y"),
    "cat_mixed_dtypes": "(torch.cat([x, x.double() * y.double()]) ** 2).sum()",
    "cat_mixed_dtypes_dim": ("(torch.cat([M, (M * 2).double()], 1) ** 3).sum()", "M"),
    "stack_mixed_dtypes": "(torch.stack([x * 2, y.double()], 1) ** 3).sum()",
    "pow_negative_base": "((-2.0) ** (x * y) * x).sum()",
    "pow_zero_base": "(0.0 ** (x * x) + 0 ** (x - 1)).sum()",
    "gather": "(x.gather(0, torch.tensor([2, 0, 2])) ** 2 * y).sum()",
    "gather_smaller_index": ("(M.gather(-1, torch.tensor([[2, 2], [0, 1]])) ** 3).sum()", "M"),
    "index_select": ("(M.index_select(1, torch.tensor([2, 0, 2])) ** 2).sum()", "M"),
    "index_select_negative_dim": "(x.index_select(-1, torch.tensor([1, 1])) ** 3 * y[:2]).sum()",
    "bce": "F.binary_cross_entropy(x.sigmoid(), torch.tensor([1.0, 0.0, 0.5]))",
    "bce_weight_sum": ("F.binary_cross_entropy((M * M).tanh(), torch.ones(2, 3) * 0.25, weight=torch.full((2, 3), 0.5), "
                       "reduction='sum')", "M"),
    "bce_logits_target": ("F.binary_cross_entropy_with_logits(x * 2, y.sigmoid())", "y"),
    "bce_logits_target_and_input": "F.binary_cross_entropy_with_logits(x * y, (x * 2).sigmoid(), reduction='sum')",
    "bce_logits_weights": ("F.binary_cross_entropy_with_logits(M * 2, torch.ones(2, 3) * 0.3, weight=torch.tensor([1.0, "
                           "2.0, 0.5]), pos_weight=torch.tensor([2.0, 1.0, 0.5]))", "M"),
    "bce_logits_weight_target": ("(F.binary_cross_entropy_with_logits(M * 2, (M * M).sigmoid(), weight=torch.tensor([1.0, 2.0, "
                                 "0.5]), reduction='none') ** 2).sum()", "M"),
    "bce_logits_pos_weight_none": ("(F.binary_cross_entropy_with_logits(M.tanh(), torch.ones(2, 3) * 0.3, pos_weight="
                                   "torch.tensor([2.0, 1.0, 0.5]), reduction='none') * M).sum()", "M"),
    "bce_target": ("F.binary_cross_entropy(x.sigmoid(), y.sigmoid())", "y"),
    "bce_target_and_input": "F.binary_cross_entropy(x.sigmoid(), (x * y).sigmoid(), reduction='sum')",
    "bce_target_weight_none": ("(F.binary_cross_entropy(M.sigmoid(), (M * 2).sigmoid(), weight=torch.tensor([1.0, 2.0, "
                               "0.5]), reduction='none') * M).sum()", "M"),
    "bce_broadcast_weight": ("F.binary_cross_entropy(M.sigmoid(), torch.ones(2, 3) * 0.3, weight=torch.tensor([1.0, "
                             "2.0, 0.5]))", "M"),
    "index": "(x[torch.tensor([2, 0, 2])] ** 3 * y).sum()",
    "index_mask": "(x[x > 0] ** 3).sum()",
    "index_two_tensors": ("(M[torch.tensor([1, 0]), torch.tensor([2, 2])] ** 3).sum()", "M"),
    "index_after_slice": ("(M[1:, torch.tensor([2, 0])] ** 3).sum()", "M"),
    "index_list_rows": ("(M[[1, 0, 1]] ** 2 * x).sum()", "M"),
    "index_mask_matrix": ("(M[M > 0] ** 3).sum()", "M"),
    "index_mask_rows": ("(M[torch.tensor([False, True])] ** 3).sum()", "M"),
    "trace": ("(torch.trace(M) ** 2 * M).sum()", "M"),
    "trace_of_a_product": ("torch.trace(M @ M.t()) ** 2", "M"),
    "trace_and_slice": ("(torch.trace(M[:, 1:]) * M).sum()", "M"),
    "diagonal": ("(M.diagonal(1) ** 3).sum()", "M"),
    "diagonal_negative_dims": ("(M.unsqueeze(0).diagonal(-1, -1, -2) ** 3 * x[:1]).sum()", "M"),
    "diag": ("(torch.diag(M) ** 2 * x[:2]).sum()", "M"),
    "remainder_tensor": ("(torch.remainder(x * 3, y) ** 2).sum()", "y"),
    "fmod_tensor": ("(torch.fmod(x * 3, y * y) ** 2 * x).sum()", "y"),
    "remainder_tensor_both": "(torch.remainder(x, y) * y * x).sum()",
    "softplus": "(F.softplus(x * y, 2, 1.5) * x).sum()",
    "softplus_default": ("(F.softplus(M) ** 2).sum()", "M"),
    "elu": "(F.elu(x * y, 0.7) * x).sum()",
    "selu_weight": ("(F.selu(M) ** 2).sum()", "M"),
    "elu_in_place": "(F.elu(x * y, 1.3, inplace=True) ** 2).sum()",
    "celu_in_place": ("(F.celu(M * 2, 0.5, True) * M).sum()", "M"),
    "logsigmoid": "(F.logsigmoid(x * y) * x).sum()",
    "logsigmoid_weight": ("(F.logsigmoid(M * 3) ** 2).sum()", "M"),
    "hardswish": "(F.hardswish(x * y) * x).sum()",
    "hardswish_weight": ("(F.hardswish(M * 4) ** 2).sum()", "M"),
    "bce_none": "(F.binary_cross_entropy((x * y).sigmoid(), torch.tensor([0.0, 1.0, 1.0]), reduction='none') * y).sum()",
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_the_graph_of_a_gradient_matches_torch(torch, name):
    from parity import assert_same

    expression, wrt = EXPRESSIONS[name] if isinstance(EXPRESSIONS[name], tuple) else (EXPRESSIONS[name], "x")
    assert_same(second_order(expression, wrt))


THIRD_ORDER = {
    "mse": ("F.mse_loss(x * x, y)", "x"),
    "mse_none_target": ("(F.mse_loss(x, y * y, reduction='none') * x).sum()", "y"),
    "mse_sum_both": ("F.mse_loss(x.sin(), y * x, reduction='sum')", "x"),
    "softmax": ("(M.softmax(-1) * M).sum()", "M"),
    "softmax_dim0": ("(F.softmax(M * 2, dim=0) ** 2).sum()", "M"),
    "log_softmax": ("(F.log_softmax(M, dim=-1) * M).sum()", "M"),
    "cross_entropy": ("F.cross_entropy(M * M, torch.tensor([0, 2]))", "M"),
    "nll_sum": ("F.nll_loss(M * M, torch.tensor([0, 2]), reduction='sum')", "M"),
    "nll_none_weight": ("(F.nll_loss(M.tanh(), torch.tensor([1, 2]), weight=torch.tensor([1.0, 2.0, 0.5]), "
                        "reduction='none') * y[:2]).sum()", "M"),
    "index_select": ("(M.index_select(1, torch.tensor([2, 0, 2])) ** 3).sum()", "M"),
    "bce": ("F.binary_cross_entropy(x.sigmoid(), torch.tensor([1.0, 0.0, 0.5]))", "x"),
    "bce_target_and_input": ("F.binary_cross_entropy(x.sigmoid(), (x * y).sigmoid(), reduction='sum')", "x"),
    "bce_weight_none": ("(F.binary_cross_entropy(M.sigmoid(), (M * 2).sigmoid(), weight=torch.tensor([1.0, 2.0, 0.5]), "
                        "reduction='none') * M).sum()", "M"),
    "softplus": ("(F.softplus(x * y, 2, 1.5) * x).sum()", "x"),
    "softplus_default": ("(F.softplus(M * y) ** 2).sum()", "M"),
    "trace_diagonal": ("(torch.trace(M) ** 3 + (M.diagonal(1) ** 3).sum())", "M"),
    "elu": ("(F.elu(x * y, 0.7) * x).sum()", "x"),
    "celu_in_place": ("(F.celu(M * 2, 0.5, True) * M).sum()", "M"),
    "logsigmoid": ("(F.logsigmoid(x * y) * x).sum()", "y"),
    "hardswish": ("(F.hardswish(x * 2) ** 2 * y).sum()", "x"),
}


def third_order(expression: str, wrt: str) -> str:
    """Two recorded gradients, the second through the first's second-order nodes, then a backward through it."""
    return (X + M + f"out = {expression}\n"
            f"g1, = torch.autograd.grad(out, {wrt}, create_graph=True)\n"
            f"g2, = torch.autograd.grad((g1 ** 2 * torch.arange(1.0, g1.numel() + 1.0).reshape(g1.shape)).sum(), {wrt}, "
            "create_graph=True)\nprint(g1, g2)\n(g2 ** 2).sum().backward()\n")


@pytest.mark.parametrize("name", sorted(THIRD_ORDER))
def test_the_graph_of_a_second_derivative_matches_torch(torch, name):
    """The second-order nodes (MseLossBackwardBackward0, SoftmaxBackwardDataBackward0, ...) differentiated."""
    from parity import assert_same

    assert_same(third_order(*THIRD_ORDER[name]))


@pytest.mark.parametrize("name", sorted(THIRD_ORDER))
def test_the_third_backward_pass_runs_in_torch_order(torch, name):
    from orders import torch_order

    expression, wrt = THIRD_ORDER[name]
    totals = {}
    for library in (torch, gv):
        scope = {"torch": library, "F": library.nn.functional}
        exec(X + M + f"g1, = torch.autograd.grad({expression}, {wrt}, create_graph=True)\n"
             f"g2, = torch.autograd.grad((g1 ** 2).sum(), {wrt}, create_graph=True)\ntotal = (g2 ** 2).sum()\n", scope)
        totals[library.__name__] = scope["total"]
    assert steps_in_order(totals["gradviz"]) == torch_order(totals["torch"])


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_every_second_order_graph_differentiated_again_matches_torch(torch, name):
    """Each gradient's gradient recorded (its second-order nodes' own backward), then a backward through it:
    graph, values and step order against torch."""
    from orders import torch_order
    from parity import assert_graph

    expression, wrt = EXPRESSIONS[name] if isinstance(EXPRESSIONS[name], tuple) else (EXPRESSIONS[name], "x")
    scopes = {}
    for library in (torch, gv):
        scope = scopes[library.__name__] = {"torch": library, "F": library.nn.functional}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(X + M + f"g1, = torch.autograd.grad({expression}, {wrt}, create_graph=True)\n"
                 f"g2, = torch.autograd.grad((g1 ** 2).sum(), {wrt}, create_graph=True, allow_unused=True)\n", scope)
    expected, actual = scopes["torch"]["g2"], scopes["gradviz"]["g2"]
    assert (actual is None) == (expected is None)
    if expected is None:
        return
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert actual.requires_grad == expected.requires_grad
    assert_graph(expected.grad_fn, actual.grad_fn, "g2")
    if expected.requires_grad:
        assert steps_in_order((actual ** 2).sum()) == torch_order((expected ** 2).sum())


LINEAR = """
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
inputs = torch.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]], requires_grad=True)
"""

PROGRAMS = {
    "backward_create_graph_twice": X + """
z = (x ** 3).sum()
z.backward(create_graph=True)
first = x.grad
print(first.grad_fn.name())
z = (x ** 3).sum()
z.backward(create_graph=True)
second = x.grad
print(second.grad_fn.name())
""",
    "gradient_penalty": LINEAR + """
out = model(inputs).sum()
g, = torch.autograd.grad(out, inputs, create_graph=True)
penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
penalty.backward()
w = model[0].weight
""",
    "third_order": X + """
g1, = torch.autograd.grad((x.tanh() * y).sum(), x, create_graph=True)
g2, = torch.autograd.grad(g1.sum(), x, create_graph=True)
g3, = torch.autograd.grad(g2.sum(), x, create_graph=True)
print(g1, g2, g3)
""",
    "sigmoid_third_order": X + """
g1, = torch.autograd.grad((x.sigmoid() * y).sum(), x, create_graph=True)
g2, = torch.autograd.grad(g1.sum(), x, create_graph=True)
g2.sum().backward()
""",
    "maximum_minimum_where_both": X + """
out = (torch.maximum(x, y) * torch.minimum(x, y * 2) + torch.where(x > y, x * y, y) ** 2).sum()
gx, gy = torch.autograd.grad(out, [x, y], create_graph=True)
print(gx, gy)
(gx * y + gy).sum().backward()
""",
    "dot_and_bmm_both": X + M + """
A = M.unsqueeze(0) * torch.tensor([[[1.0]], [[2.0]]])
out = (x.dot(y) * x).sum() + (torch.bmm(A, A.transpose(1, 2)) ** 2).sum()
gx, gy, gM = torch.autograd.grad(out, [x, y, M], create_graph=True)
print(gx, gy, gM)
(gx * y + gy + gM.sum()).sum().backward()
""",
    "hessian_vector_product": X + """
out = (x ** 2 * y).sum() + (x * y).exp().sum()
g, = torch.autograd.grad(out, x, create_graph=True)
v = torch.tensor([1.0, 0.5, -1.0])
hv, = torch.autograd.grad(g, x, grad_outputs=v)
print(hv)
""",
    "grad_outputs_with_graph": X + """
out = x ** 2
g, = torch.autograd.grad(out, x, grad_outputs=y, create_graph=True)
g.sum().backward()
""",
    "allow_unused": X + """
g = torch.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
print(g)
""",
    "materialize_grads": X + """
g = torch.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True)
print(g)
""",
    "only_inputs": X + """
g, = torch.autograd.grad((x * y).sum(), x, only_inputs=True)
print(g)
""",
    "meta_learning_step": """
torch.manual_seed(0)
w = torch.randn(3, 1, requires_grad=True)
inputs = torch.randn(8, 3)
targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5]])
inner_loss = ((inputs @ w - targets) ** 2).mean()
g, = torch.autograd.grad(inner_loss, w, create_graph=True)
adapted = w - 0.1 * g
outer_loss = ((inputs @ adapted - targets) ** 2).mean()
outer_loss.backward()
print(outer_loss)
""",
    "index_put_value_needs_grad": X + """
z = x * 1
z[torch.tensor([0, 2])] = y[:2] ** 2
gx, gy = torch.autograd.grad((z ** 3).sum(), [x, y], create_graph=True)
print(gx, gy)
(gx * y + gy).sum().backward()
""",
    "mask_assign_broadcast_value": X + """
z = x * 1
z[x > 0] = y[0] ** 2
gx, gy = torch.autograd.grad((z ** 3).sum(), [x, y], create_graph=True)
(gx * y + gy).sum().backward()
""",
    "index_put_accumulate": X + M + """
z = M * 1
z.index_put_((torch.tensor([0, 0]), torch.tensor([1, 1])), x[:2] ** 2, accumulate=True)
gM, gx = torch.autograd.grad((z ** 3).sum(), [M, x], create_graph=True)
(gM.sum() + gx.sum()).backward()
""",
    "index_put_function_row_value": X + M + """
z = M.index_put((torch.tensor([1]),), x.unsqueeze(0) * 2)
gM, gx = torch.autograd.grad((z ** 2).sum(), [M, x], create_graph=True)
(gM.sum() * gx.sum()).backward()
""",
    "index_third_order": X + """
g1, = torch.autograd.grad((x[torch.tensor([2, 0, 2])] ** 4).sum(), x, create_graph=True)
g2, = torch.autograd.grad(g1.sum(), x, create_graph=True)
g3, = torch.autograd.grad(g2.sum(), x, create_graph=True)
print(g1, g2, g3)
""",
    "write_through_view_in_place_math": X + M + """
z = M * 2
z[0].sin_()
z[:, 1:].mul_(x[:2])
gM, gx = torch.autograd.grad((z * z).sum(), [M, x], create_graph=True)
print(gM, gx)
(gM.sum() + gx.sum()).backward()
""",
    "write_through_view_number_and_tensor": X + M + """
z = M * 2
z[0] = 2.
z[1, 2] = x[0]
z[:, 0] = x[1:] ** 2
gM, gx = torch.autograd.grad((z ** 3).sum(), [M, x], create_graph=True)
(gM.sum() * gx.sum()).backward()
""",
    "write_into_a_constant": X + M + """
c = torch.zeros(2, 3)
c[0] = M[1] * x
c.t()[2].exp_()
gM, gx = torch.autograd.grad((c * c).sum(), [M, x], create_graph=True)
(gM ** 2).sum().backward()
""",
    "view_read_after_its_base_changed": X + M + """
z = M * 2
row, column, corner = z[1], z.t()[2], z[:, :1]
z.mul_(x)
gM, gx = torch.autograd.grad((row * column.sum() + corner.exp().sum()).sum(), [M, x], create_graph=True)
print(gM, gx)
(gM ** 2).sum().backward()
""",
    "view_of_an_expanded_view_read_after_a_write": X + """
z = x * 1
wide = z.unsqueeze(0).expand(2, 3)[1]
z[0] = y[1] * 3
gx, gy = torch.autograd.grad((wide ** 3).sum(), [x, y], create_graph=True)
(gx.sum() * gy.sum()).backward()
""",
    "quotient_with_a_recorded_gradient": X + """
z = x * y
out = (z / (z.norm() + 1) + (2 / z) * z.exp() + z.reciprocal() * z.sin()).sum()
g, = torch.autograd.grad(out, x, create_graph=True)
(g * g).sum().backward()
""",
    "hook_on_recorded_pass": X + """
z = x * y
z.register_hook(lambda grad: grad * 2)
g, = torch.autograd.grad(z.sum(), x, create_graph=True)
g.sum().backward()
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_higher_order_programs_match_torch(torch, name):
    from parity import assert_same

    assert_same(PROGRAMS[name])


ERRORS = {
    "second_backward_without_create_graph": X + """
g, = torch.autograd.grad((x ** 3).sum(), x)
g.sum().backward()
""",
    "materialize_with_allow_unused_false": X + """
torch.autograd.grad((x * 2).sum(), [x, y], materialize_grads=True, allow_unused=False)
""",
    "unused_input": X + "torch.autograd.grad((x * 2).sum(), [x, y])\n",
    "both_factors_changed_in_place": X + """
a, b = x * 1, y * 2
c = a * b
a[0] = 2.0
a[1] = 3.0
b[0] = 1.0
torch.autograd.grad(c.sum(), x, create_graph=True)
""",
    "in_place_leaky_relu_negative_slope": X + """
h = torch.nn.functional.leaky_relu(x * 1, -0.2, inplace=True)
torch.autograd.grad((h ** 2).sum(), x, create_graph=True)
""",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_higher_order_errors_match_torch(torch, name):
    from parity import assert_same_error

    assert_same_error(ERRORS[name])


def test_backward_with_create_graph_warns_once_as_torch_does(torch):
    """PyTorch warns once per process (TORCH_WARN_ONCE), so its text is read in a fresh one."""
    import subprocess
    import sys

    from gradviz.autograd import engine

    script = ("import warnings, torch\nwarnings.simplefilter('always')\n"
              "x = torch.tensor([1.0], requires_grad=True)\n"
              "with warnings.catch_warnings(record=True) as caught:\n"
              "    warnings.simplefilter('always')\n    (x * x).sum().backward(create_graph=True)\n"
              "print(caught[0].category.__name__ + ': ' + str(caught[0].message))\n")
    expected = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    engine._warned_reference_cycle = False
    caught_runs = []
    for _ in range(2):
        x = gv.tensor([1.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (x * x).sum().backward(create_graph=True)
        caught_runs.append([f"{w.category.__name__}: {w.message}" for w in caught])
    assert caught_runs == [[expected.strip()], []]


def run_both_libraries(torch, program, values):
    leaves = {}
    for library in (torch, gv):
        tensors = [library.tensor(v, dtype=library.float64, requires_grad=True) for v in values]
        leaves[library.__name__] = (program(library, *tensors), tensors)
    return leaves["torch"], leaves["gradviz"]


def steps_in_order(output) -> list:
    return [step.name for step in gv.autograd.backward_steps(output)]


@pytest.mark.parametrize("name", ["cube", "product", "tanh", "sigmoid", "mean_squared", "broadcast", "mm", "abs",
                                  "clamp", "maximum", "where", "max", "norm", "cat", "stack", "dot",
                                  "pow_tensor", "pow_number_base", "index", "index_mask", "norm_inf",
                                  "norm_3", "norm_half", "norm_half_zero"])
def test_both_backward_passes_run_in_torch_order(torch, name):
    """The first pass (recording, with create_graph) and the second (through the gradient's graph)."""
    from orders import torch_order

    expression = EXPRESSIONS[name]
    program = lambda lib, x, y: eval(expression, {"torch": lib, "x": x, "y": y, "M": lib.tensor(  # noqa: E731
        [[0.3, -0.2, 0.1], [0.5, 1.1, -0.7]], dtype=lib.float64)})
    values = [[1.5, -0.5, 2.0], [0.5, 2.0, -1.0]]
    (t_out, _), (g_out, _) = run_both_libraries(torch, program, values)
    first_steps = [step.name for step in gv.autograd.backward_steps(g_out, create_graph=True)]
    assert first_steps == torch_order(t_out)
    (t_out, t_leaves), (g_out, g_leaves) = run_both_libraries(torch, program, values)
    t_grad, = torch.autograd.grad(t_out, t_leaves[0], create_graph=True)
    g_grad, = gv.autograd.grad(g_out, g_leaves[0], create_graph=True)
    second_t = (t_grad * torch.arange(1.0, 4.0, dtype=torch.float64)).sum()
    second_g = (g_grad * gv.arange(1.0, 4.0, dtype=gv.float64)).sum()
    assert steps_in_order(second_g) == torch_order(second_t)
    np.testing.assert_allclose(g_grad.detach().numpy(), t_grad.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("expression", ["torch.where(x > 0, x * y, y.unsqueeze(1))", "torch.maximum(x * y, y)",
                                        "torch.minimum(x, y * 2)", "x * y - y / x", "x.dot(y) * y"])
def test_both_inputs_gradients_are_recorded_in_torch_order(torch, expression):
    """An op whose two inputs both need a gradient records them in its generated code's order (the second
    input's first for these), which decides the order of the backward through them."""
    from orders import torch_order

    program = lambda lib, x, y: (eval(expression, {"torch": lib, "x": x, "y": y}) ** 2).sum()  # noqa: E731
    (t_out, t_leaves), (g_out, g_leaves) = run_both_libraries(torch, program, [[1.5, -0.5, 2.0], [0.5, 2.0, -1.0]])
    t_grads = torch.autograd.grad(t_out, t_leaves, create_graph=True)
    g_grads = gv.autograd.grad(g_out, g_leaves, create_graph=True)
    assert steps_in_order(g_grads[0].sum() * g_grads[1].sum()) == torch_order(t_grads[0].sum() * t_grads[1].sum())


def test_the_recording_pass_steps_in_torch_order(torch):
    """``backward(create_graph=True)`` runs the nodes in the same order as a plain backward."""
    from orders import torch_order

    program = lambda lib, x, y: ((x * y).tanh() + (x + y).sigmoid() * x).sum()  # noqa: E731
    (t_out, _), (g_out, _) = run_both_libraries(torch, program, [[0.1, 0.2], [0.3, -0.4]])
    expected = torch_order(t_out)
    assert [s.name for s in gv.autograd.backward_steps(g_out, create_graph=True)] == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(random_programs(max_steps=7), st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.lists(st.floats(-2, 2), min_size=3, max_size=3))
def test_random_programs_differentiated_twice_match_torch(torch, steps, x_values, y_values):
    from orders import torch_order
    from parity import assert_graph

    program = lambda lib, x, y: run_program(lib, steps, x, y)  # noqa: E731
    (t_out, t_leaves), (g_out, g_leaves) = run_both_libraries(torch, program, [x_values, y_values])
    t_grads = torch.autograd.grad(t_out, t_leaves, create_graph=True, allow_unused=True)
    g_grads = gv.autograd.grad(g_out, g_leaves, create_graph=True, allow_unused=True)
    for t_grad, g_grad in zip(t_grads, g_grads):
        if t_grad is None:
            assert g_grad is None
            continue
        np.testing.assert_allclose(g_grad.detach().numpy(), t_grad.detach().numpy(), rtol=1e-9, atol=1e-12)
        assert g_grad.requires_grad == t_grad.requires_grad
        assert_graph(t_grad.grad_fn, g_grad.grad_fn)
    t_total = sum(g.sum() for g in t_grads if g is not None and g.requires_grad)
    g_total = sum(g.sum() for g in g_grads if g is not None and g.requires_grad)
    if isinstance(t_total, int):
        return  # the gradients are constants: nothing to differentiate again
    assert steps_in_order(g_total) == torch_order(t_total)
    for t_leaf, g_leaf in zip(t_leaves, g_leaves):
        if t_leaf.grad is None:
            assert g_leaf.grad is None
        else:
            np.testing.assert_allclose(g_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-9, atol=1e-12)


SECOND = ("ga, gb = torch.autograd.grad(loss, [a, b], create_graph=True)\n"
          "second = (ga * ga).sum() + (gb * torch.arange(1.0, 5.0, dtype=torch.float64)).sum()\n")


# nested_given: importing test_tensor_programs (only here, so that the torch-blocked pass can import this
# file) defines its @given tests inside this one; none of them runs
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.nested_given])
@given(st.data(), st.integers(0, 2**31 - 1))
def test_random_tensor_programs_differentiated_twice_match_torch(torch, data, seed):
    """The tensor-API programs of ``test_tensor_programs`` (indexing, writes through views, in-place math)
    differentiated twice: the gradients' graphs, the second backward's order and the leaves' grads."""
    from orders import torch_order
    from parity import assert_graph, mask, raised, run
    from test_tensor_programs import MAKE_RECORDED, prelude, programs

    code = prelude(seed) + "\n".join(data.draw(programs(MAKE_RECORDED))) + "\n" + SECOND
    expected = raised(code, torch)
    if expected is not None:  # torch refuses the program (an in-place change of a saved tensor...)
        actual = raised(code, gv)
        assert type(actual) is type(expected) and mask(str(actual)) == mask(str(expected)), code
        return
    (scope_t, _), (scope_g, _) = run(code, torch), run(code, gv)
    for name in ("ga", "gb"):
        np.testing.assert_allclose(scope_g[name].detach().numpy(), scope_t[name].detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=code)
        assert_graph(scope_t[name].grad_fn, scope_g[name].grad_fn, f"{name} in\n{code}")
    assert steps_in_order(scope_g["second"]) == torch_order(scope_t["second"]), code


SECOND_DERIVATIVES = {
    "cube": lambda x: (x ** 3).sum(),
    "exp_sin": lambda x: (x.sin() * x.exp()).sum(),
    "tanh_sigmoid": lambda x: (x.tanh() * x.sigmoid()).sum(),
    "quotient_log": lambda x: ((x * x + 1).log() / (x + 3)).sum(),
    "sqrt_cos": lambda x: ((x * x + 1).sqrt() * x.cos()).sum(),
    "mean_squared": lambda x: (x * x.exp()).mean() ** 2,
    "matrix": lambda x: ((x.reshape(1, 3) @ gv.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.1]],
                                                     dtype=gv.float64)) ** 2).sum(),
    "abs": lambda x: (x.abs() ** 3 + x.abs() * x.sin()).sum(),
    "clamp": lambda x: (x.clamp(-0.5, 1.0) * x.exp() + x.clamp(min=0.0) ** 3).sum(),
    "max": lambda x: (x.max() ** 3 + x.reshape(3, 1).mul(x).max(0)[0].exp().sum() * x.sin()).sum(),
    "norm_other_orders": lambda x: (x.norm(p=3) * x.sin() + x.norm(p=0.5) * x.exp() + x.norm(p=1.5) ** 2
                                    + x.norm(p=float("inf")) * x + x.reshape(3, 1).mul(x).norm(p=4, dim=1) ** 2).sum(),
    "norm": lambda x: (x.norm() * x.sin() + x.reshape(3, 1).mul(x).norm(dim=0) ** 3 + x.norm(p=1) * x).sum(),
    "cat_stack_repeat": lambda x: ((gv.cat([x, x * x]) ** 3).sum() + (gv.stack([x.sin(), x], 1) ** 2).sum(1)
                                   * x.repeat(2, 1).exp().sum(0)).sum(),
    "dot_bmm": lambda x: (x.dot(x.sin()) ** 2 + (gv.bmm(x.reshape(1, 3, 1), x.reshape(1, 1, 3).exp()) ** 2).sum()),
    "pow_tensor": lambda x: ((x * x + 1) ** x.sin() + 2.0 ** (x * x) + (x.exp() ** x).sum() * x).sum(),
    "masked_fill": lambda x: (x.masked_fill(x > 1, 0.5) ** 3 * x.exp()).sum(),
    "gather": lambda x: (x.gather(0, gv.tensor([2, 0, 2, 1])) ** 3 * x.sin().repeat(2)[:4]).sum(),
    "index_select": lambda x: (x.index_select(0, gv.tensor([2, 0, 2])) ** 3 * x.cos()).sum(),
    "bce_logits_weights": lambda x: gv.nn.functional.binary_cross_entropy_with_logits(
        x * x, x.sigmoid(), weight=gv.tensor([1.0, 2.0, 0.5], dtype=gv.float64)) + gv.nn.functional.
    binary_cross_entropy_with_logits(x.sin(), gv.tensor([1.0, 0.0, 0.3], dtype=gv.float64),
                                     pos_weight=gv.tensor([2.0, 1.0, 0.5], dtype=gv.float64), reduction="sum"),
    "bce_target": lambda x: gv.nn.functional.binary_cross_entropy(x.sigmoid(), (x * x).sigmoid(),
                                                                   weight=gv.tensor([1.0, 2.0, 0.5], dtype=gv.float64)),
    "bce": lambda x: gv.nn.functional.binary_cross_entropy((x * x).sigmoid(), gv.tensor([1.0, 0.0, 0.25],
                                                                                         dtype=gv.float64)),
    "index": lambda x: (x[gv.tensor([2, 0, 2])] ** 3 * x[x > 0].sum() + x[[True, False, True]].exp().sum()).sum(),
    "index_put": lambda x: _written(x).pow(3).sum(),
    "write_through_views": lambda x: (_written_through_views(x) ** 3).sum(),
    "view_read_after_a_write": lambda x: _read_after_write(x),
    "masked_fill_value": lambda x: (x.masked_fill(x > 0.5, (x * x).sum()) ** 3).sum(),
    "trace_diagonal": lambda x: (gv.trace(x.reshape(3, 1) * x) ** 2 + (x.reshape(1, 3) * x.reshape(3, 1)).diagonal(1)
                                 .exp().sum() + gv.diag(x.reshape(3, 1) * x.sin()).pow(3).sum()),
    "logsigmoid_hardswish": lambda x: (gv.nn.functional.logsigmoid(x * 2) * x.exp() + gv.nn.functional.hardswish(x * 3)
                                       * x.sin()).sum(),
    "huber_smooth_l1": lambda x: (gv.nn.functional.huber_loss(x * x, x.sin(), delta=0.8) + gv.nn.functional.smooth_l1_loss(
        x.exp(), x * 3, beta=0.6, reduction="sum")),
    "in_place_activations": lambda x: (gv.nn.functional.elu(x * 2, 0.7, inplace=True) ** 3 + gv.nn.functional.celu(
        x.sin(), 0.5, True) * x.exp() + gv.nn.functional.leaky_relu(x * x, 0.2, True) * x).sum(),
    "mish": lambda x: (gv.nn.functional.mish(x * 2) * x.exp()).sum(),
    "maximum_minimum_where": lambda x: (gv.maximum(x, 0.5 - x) ** 3 + gv.minimum(x.sin(), x) * x
                                        + gv.where(x > 0, x * x, x.exp()) ** 2).sum(),
}


def _written(x):
    """``x`` with two elements overwritten by values that depend on ``x`` (IndexPutBackward0)."""
    z = x * x.sin()
    z[gv.tensor([0, 2])] = x[1:].exp()
    return z


def _read_after_write(x):
    """A view made before its base changed in place, read after (AsStridedBackward0)."""
    z = x * x.sin()
    head = z[:2]
    z.mul_(x.exp())
    return (head ** 3).sum() * z.sum()


def _written_through_views(x):
    """Writes through views of a tensor made from ``x`` (CopySlices wrapping CopyBackwards and SinBackward0)."""
    z = x * x.cos()
    z[0] = x[-1] ** 2
    z[1:].sin_()
    return z


@pytest.mark.parametrize("name", sorted(SECOND_DERIVATIVES))
def test_second_derivatives_by_central_differences(name):
    """Each row of the Hessian (grad of one gradient component) against a central difference of the gradient."""
    function = SECOND_DERIVATIVES[name]
    point = np.array([0.3, -0.7, 1.1])

    def gradient_at(values):
        x = gv.tensor(values, dtype=gv.float64, requires_grad=True)
        g, = gv.autograd.grad(function(x), x)
        return g.numpy()

    x = gv.tensor(point, dtype=gv.float64, requires_grad=True)
    g, = gv.autograd.grad(function(x), x, create_graph=True)
    step = 1e-6
    for row in range(3):
        hessian_row, = gv.autograd.grad(g[row], x, retain_graph=True)
        numeric = [(gradient_at(point + step * np.eye(3)[col]) - gradient_at(point - step * np.eye(3)[col]))[row]
                   / (2 * step) for col in range(3)]
        np.testing.assert_allclose(hessian_row.numpy(), numeric, rtol=1e-5, atol=1e-7)


F64 = dict(dtype=gv.float64)
THIRD_DERIVATIVES = {
    "mse": lambda x: gv.nn.functional.mse_loss(x * x, x.sin()) + gv.nn.functional.mse_loss(
        x.exp(), x, reduction="none").sum() * 2,
    "softmax": lambda x: (gv.softmax(x.reshape(1, 3) * x, -1) * x.exp()).sum(),
    "log_softmax": lambda x: (gv.log_softmax(x.reshape(3, 1) * x, 0) * x.sin()).sum(),
    "cross_entropy": lambda x: gv.nn.functional.cross_entropy(x.reshape(3, 1) * x, gv.tensor([0, 2, 1])),
    "index_select": lambda x: (x.index_select(0, gv.tensor([2, 0, 2])) ** 4 * x.exp()).sum(),
    "masked_fill_value": lambda x: (x.masked_fill(gv.tensor([True, False, True]), (x * x.exp()).sum()) ** 3).sum(),
    "bce": lambda x: gv.nn.functional.binary_cross_entropy(x.sigmoid(), (x * x).sigmoid(), weight=gv.tensor(
        [1.0, 2.0, 0.5], **F64)) + gv.nn.functional.binary_cross_entropy(x.sin() * 0.4 + 0.5, gv.tensor(
            [1.0, 0.0, 0.3], **F64), reduction="sum"),
    "softplus": lambda x: (gv.nn.functional.softplus(x.reshape(3, 1) * x, 2, 1.5) * x.exp()).sum(),
    "elu_selu": lambda x: (gv.nn.functional.elu(x.reshape(3, 1) * x, 0.7) * x.exp() + gv.nn.functional.selu(x * 2) ** 2).sum(),
    "elu_in_place": lambda x: (gv.nn.functional.elu(x.reshape(3, 1) * x, 1.3, inplace=True) * x.sin()).sum(),
    "logsigmoid": lambda x: (gv.nn.functional.logsigmoid(x.reshape(3, 1) * x) * x.exp()).sum(),
    "trace_diagonal": lambda x: gv.trace(x.reshape(3, 1) * x) ** 3 + ((x.reshape(3, 1) * x.sin()).diagonal(-1) ** 3).sum(),
}


@pytest.mark.parametrize("name", sorted(THIRD_DERIVATIVES))
def test_third_derivatives_by_central_differences(name):
    """d/dx_j of the summed Hessian (recorded twice) against a central difference of the summed Hessian."""
    function = THIRD_DERIVATIVES[name]
    point = np.array([0.3, -0.7, 1.1])

    def hessian_sums(values, create_graph=False):
        x = gv.tensor(values, requires_grad=True, **F64)
        g, = gv.autograd.grad(function(x), x, create_graph=True)
        h, = gv.autograd.grad(g.sum(), x, create_graph=create_graph)
        return x, h

    x, h = hessian_sums(point, create_graph=True)
    third, = gv.autograd.grad(h.sum(), x)
    step = 1e-5
    numeric = [(hessian_sums(point + step * np.eye(3)[j])[1].sum().item()
                - hessian_sums(point - step * np.eye(3)[j])[1].sum().item()) / (2 * step) for j in range(3)]
    np.testing.assert_allclose(third.numpy(), numeric, rtol=1e-5, atol=1e-6)


def test_recorded_and_array_backward_forms_agree_for_every_op_that_has_both():
    """The derivative has two forms (arrays for speed, Tensors to record); they must give the same numbers."""
    x = gv.tensor([[0.7, -1.2, 2.0], [0.4, 1.5, -0.3]], dtype=gv.float64, requires_grad=True)
    y = gv.tensor([[1.1, 0.5, -0.8], [2.0, -0.6, 0.9]], dtype=gv.float64, requires_grad=True)
    W = gv.tensor([[0.2, -0.4], [1.0, 0.3], [-0.5, 0.8]], dtype=gv.float64, requires_grad=True)
    v = gv.tensor([0.6, -1.4], dtype=gv.float64, requires_grad=True)
    outputs = {
        "add": x + y * 2, "sub": x - y, "rsub": 1 - x, "mul": x * y, "div": x / y, "reciprocal": 2 / x,
        "neg": -x, "pow": x ** 3, "exp": x.exp(), "log": (x * x).log(), "sin": x.sin(), "cos": x.cos(),
        "tanh": x.tanh(), "sigmoid": x.sigmoid(), "relu": x.relu(), "sqrt": (x * x).sqrt(), "sum": x.sum(),
        "sum_dim": x.sum(1), "mean": x.mean(), "mean_dim": x.mean(0), "mm": x @ W, "addmm": gv.nn.functional.linear(
            x, W.t(), gv.tensor([0.1, 0.2], dtype=gv.float64)), "mv": W @ v, "t": x.t(),
        "view": x.view(3, 2), "unsqueeze": x.unsqueeze(0), "expand": x.sum(0).expand(2, 3), "broadcast": x * y.sum(0),
        "squeeze": x.unsqueeze(0).squeeze(), "transpose": x.transpose(0, 1), "permute": x.unsqueeze(0).permute(2, 0, 1),
        "clone": x.clone(), "abs": x.abs(), "clamp": x.clamp(-1.0, 1.0), "clamp_min": x.clamp(min=0.0),
        "maximum": gv.maximum(x, y.sum(0)), "max": x.max(), "norm": x.norm(), "norm_3": x.norm(p=3, dim=1), "norm_half": x.norm(p=0.5),
        "norm_inf": x.norm(p=float("inf"), dim=0), "norm_1_5": x.norm(p=1.5), "repeat": x.repeat(2, 1, 2),
        "dot": x[0].dot(y[1]), "pow_tensor": x.abs() ** y, "pow_number": 2.0 ** x,
        "masked_fill": x.masked_fill(y > 0, 1.0),
        "gather": x.gather(1, gv.tensor([[2, 2], [0, 1]])), "index_select": x.index_select(-1, gv.tensor([2, 0, 2])), "masked_fill_value": x.masked_fill(y > 0, v.detach()[0]), "bmm": gv.bmm(x.unsqueeze(0), W.unsqueeze(0)),
        "norm_dim": x.norm(dim=1), "norm_1_keepdim": x.norm(1, dim=0, keepdim=True),
        "max_dim": x.max(1)[0], "max_dim_keepdim": x.max(0, keepdim=True)[0], "minimum": gv.minimum(x, y), "where": gv.where(x > 0, x, y.sum(0)), "split": gv.cat(x.split(2, 1)[::-1], 1), "unbind": gv.stack(x.unbind(0)[::-1]),
        "bce_target": gv.nn.functional.binary_cross_entropy(x.sigmoid(), y.sigmoid(), weight=v.detach()[:1]),
        "bce_logits_weights": gv.nn.functional.binary_cross_entropy_with_logits(
            x, y.sigmoid(), weight=W.detach()[:, 0], reduction="sum"),
        "bce_logits_pos_weight": gv.nn.functional.binary_cross_entropy_with_logits(
            x, (y > 0).double(), pos_weight=W.detach()[:, 1]),
        "masked_fill_value_grad": x.masked_fill(y > 0, v[0] * 2), "cat_mixed": gv.cat([x, y.float()], 1),
        "stack_mixed": gv.stack([x.float(), y], -1), "pow_zero_base": 0.0 ** (x * y), "pow_negative_base": -1.5 ** x,
        "to_float": x.float() * 2,
        "mse": gv.nn.functional.mse_loss(x, y), "index": x[gv.tensor([1, 0, 1])], "copy_slices": _written_through_views(x * y), "index_mask": x[y > 0],
        "index_put": x.index_put((gv.tensor([1]),), y[0] * 2), "index_put_accumulate": x.index_put(
            (gv.tensor([0, 0]), gv.tensor([2, 2])), v, accumulate=True),
        "trace": gv.trace(x) * x, "diagonal": x.diagonal(-1, 1, 0), "diag": gv.diag(x),
        "logsigmoid": gv.nn.functional.logsigmoid(x * 3), "hardswish": gv.nn.functional.hardswish(x * 3),
        "huber": gv.nn.functional.huber_loss(x, y, delta=0.7), "smooth_l1": gv.nn.functional.smooth_l1_loss(
            x, y, reduction="none", beta=0.9),
        "elu_": gv.nn.functional.elu(x * 1, 0.7, inplace=True), "celu_": gv.nn.functional.celu(x * 2, 0.5, True),
        "leaky_relu_": gv.nn.functional.leaky_relu(x * 1, 0.2, True),
        "remainder": gv.remainder(x * 3, y), "fmod": gv.fmod(x * 3, y),
        "mish": gv.nn.functional.mish(x * 3),
        "bce_probabilities": gv.nn.functional.binary_cross_entropy(x.sigmoid(), (y > 0).double()), "bce": gv.nn.functional.binary_cross_entropy_with_logits(
            x, (y > 0).double()),
    }
    for name, out in outputs.items():
        weights = gv.arange(1.0, out.numel() + 1.0, dtype=gv.float64).reshape(out.shape)
        plain = gv.autograd.grad(out, [x, y, W, v], weights, retain_graph=True, allow_unused=True)
        recorded = gv.autograd.grad(out, [x, y, W, v], weights, retain_graph=True, allow_unused=True,
                                    create_graph=True)
        for a, b in zip(plain, recorded):
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-12, err_msg=name)


def test_nodes_recorded_by_a_backward_pass_know_their_order():
    x = gv.tensor([1.0, 2.0], requires_grad=True)
    g, = gv.autograd.grad((x.exp() * x).sum(), x, create_graph=True)
    h, = gv.autograd.grad(g.sum(), x, create_graph=True)
    graph = gv.graph(h)
    orders = {node.order for node in graph.nodes if node.kind == "function"}
    assert orders == {1, 2, 3}
    forward = gv.graph((x.sin() * x).sum())
    assert {node.order for node in forward.nodes} == {1}
    assert all("order" in node for node in graph.to_dict()["nodes"])


def test_an_op_without_a_recorded_backward_says_so():
    from gradviz.autograd.function import OpFunction

    class CubeBackward0(OpFunction):  # an op with an array backward only
        inputs = ("self",)

        def forward(ctx, self):
            ctx.save(self=self)
            return self._data ** 3

        def backward(ctx, grad):
            return grad * 3 * ctx.saved("self") ** 2

    x = gv.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    loss = (CubeBackward0.apply(x) ** 2).sum()
    with pytest.raises(NotImplementedError, match="CubeBackward0"):
        gv.autograd.grad(loss, x, create_graph=True)


def test_an_op_without_a_recorded_backward_is_fine_when_nothing_it_reads_needs_a_gradient(torch):
    grads = []
    for library in (torch, gv):
        x = library.tensor([1.0, -2.0, 3.0], requires_grad=True)
        g, = library.autograd.grad((library.cat([x, x * 2]) * 3).sum(), x, create_graph=True)
        grads.append((g.requires_grad, g.tolist()))
    assert grads[1] == grads[0]


RESHAPES = ["M.t().reshape(3, 2, 1)", "M.t().reshape(-1, 2)", "M.t().reshape(6)", "M.reshape(3, 2)",
            "M.t().unsqueeze(0).flatten(0, 1)", "M[:, :1].reshape(2)", "M[:, ::2].reshape(2, 2, 1)",
            "M[0].expand(2, 3).reshape(2, 3, 1)", "M[0].expand(2, 3).reshape(6)", "M.t().t().reshape(6)",
            "M.unsqueeze(2)[:, :, 0].reshape(6)", "M.t().reshape_as(torch.zeros(3, 2, 1)).reshape(3, 2)",
            "M.t()[:1].flatten()", "M.sum().reshape(1, 1)"]


@pytest.mark.parametrize("expression", RESHAPES)
def test_reshape_is_a_view_an_alias_or_a_copy_as_torch_decides(torch, expression):
    """A contiguous input is viewed (ViewBackward0), a strided one that allows a view aliased
    (ReshapeAliasBackward0), any other copied (CloneBackward0, then UnsafeViewBackward0); the same
    rule applies to the reshape a recorded backward makes."""
    from parity import assert_same

    assert_same(M + f"r = {expression}\nshares = r._base is not None\nprint(shares)\n"
                "out = (r * r * torch.arange(1.0, r.numel() + 1.0).reshape(r.shape)).sum()\n"
                "g, = torch.autograd.grad(out, M, create_graph=True)\n(g ** 2).sum().backward()\n")


# -- more recorded backward forms ------------------------------------------------------------------
SAMPLERS = {
    "bernoulli_number": "((x * 1).bernoulli_(0.5) * x).sum()",
    "normal_": "((x * 1).normal_() * x).sum()",
    "uniform_": "((x * 1).uniform_(-1, 2) * x * x).sum()",
    "bernoulli_tensor_p": ("((y * 1).bernoulli_(x.sigmoid()) * x).sum()", "x"),
    "bernoulli_tensor_p_self": ("((y * 1).bernoulli_(x.sigmoid()) * y).sum()", "y"),
    "bernoulli": "(torch.bernoulli(x.sigmoid()) * x).sum()",
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_the_samplers_recorded_backward_is_zeros_as_torch_records_it(torch, name):
    """A sampler's gradient is ``zeros_like(grad)`` with no history: the buffer that sums it with the other
    path's gradient records an AddBackward0 with an empty edge, as PyTorch's does (same seed, same draws)."""
    from parity import assert_same

    expression, wrt = SAMPLERS[name] if isinstance(SAMPLERS[name], tuple) else (SAMPLERS[name], "x")
    assert_same("torch.manual_seed(3)\n" + second_order(expression, wrt))


HARDSIGMOID = ("x = torch.tensor([1.5, -0.5, 2.0, 4.0, -3.5], requires_grad=True)\n"
               "g, = torch.autograd.grad((F.hardsigmoid(x * x) * x).sum(), x, create_graph=True)\n"
               "print(g, g.grad_fn, [n.name() for n, _ in g.grad_fn.next_functions])\n")


HARDSIGMOID_ALONE = ("x = torch.tensor([1.5, -0.5, 2.0, 4.0, -3.5], requires_grad=True)\n"
                     "g, = torch.autograd.grad(F.hardsigmoid(x).sum(), x, create_graph=True)\n"
                     "print(g, g.grad_fn, [n.name() for n, _ in g.grad_fn.next_functions])\n")


@pytest.mark.parametrize("code", [HARDSIGMOID, HARDSIGMOID_ALONE], ids=["grad_requires_grad", "grad_without_history"])
def test_hardsigmoids_recorded_backward_is_torchs_not_implemented_node(torch, code):
    """PyTorch has no derivative for ``hardsigmoid_backward``: its result hangs from a
    ``torch::autograd::NotImplemented`` node with an edge to each input that requires grad (the gradient
    and x; x alone when the gradient has no history), node for node here too."""
    from parity import assert_same

    assert_same(code)


def test_differentiating_hardsigmoid_twice_raises_torchs_error(torch):
    from parity import raised

    code = HARDSIGMOID + "g.sum().backward()\n"
    expected, got = raised(code, torch), raised(code, gv)
    assert expected is not None and type(got) is type(expected) and str(got) == str(expected)


Z = "z = torch.tensor([1.0, 0.0, 1.0])\n"
PRODUCTS = {
    "cumprod": "(x.cumprod(0) * y).sum()",
    "cumprod_dim1": ("(M.cumprod(1) ** 2).sum()", "M"),
    "cumprod_dim0_negative": ("(M.cumprod(-2) * M).sum()", "M"),
    "cumprod_a_zero": "((x * z).cumprod(0) * y).sum()",
    "cumprod_zeros_2d": ("((M * torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])).cumprod(1) * M).sum()", "M"),
    "cumprod_zero_first": "((x * torch.tensor([0.0, 1.0, 1.0])).cumprod(0) ** 2).sum()",
    "cumprod_one_element": "(x[:1].cumprod(0) * y[:1]).sum()",
    "prod_a_zero": "(x * z).prod() * x.sum()",
    "prod_two_zeros": "(x * torch.tensor([0.0, 0.0, 1.0])).prod() + (x * x).sum()",
    "prod_strided_zero": ("(M * torch.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])).t().prod() * M.sum()", "M"),
    "prod_dim_a_zero": ("((M * torch.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])).prod(1) * y[:2]).sum()", "M"),
    "prod_single_zero": "(x[:1] * 0).prod() * x.sum()",
    "prod_dim_size_one_zero": ("((M * torch.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])).reshape(6, 1).prod(1) "
                               "* y.repeat(2)).sum()", "M"),
    "prod_dim_keepdim_zero": ("((M * torch.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])).prod(0, keepdim=True) * M).sum()",
                              "M"),
}


def _product_case(name):
    expression, wrt = PRODUCTS[name] if isinstance(PRODUCTS[name], tuple) else (PRODUCTS[name], "x")
    return Z + expression, wrt


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_cumprod_and_prod_with_zeros_record_torchs_backward(torch, name):
    """cumprod's backward (reversed cumsum over the input, or with a zero PyTorch's O(n²) form: omitted
    products copied into a zero gradient, CopySlices each) and prod's zero-safe backward (cumprods of the
    input before and after each element), node for node, then a backward through them."""
    from parity import assert_same

    setup, wrt = _product_case(name)
    expression = setup.splitlines()[-1]
    assert_same(Z + second_order(expression, wrt))


@pytest.mark.parametrize("name", sorted(set(PRODUCTS) - {"cumprod_one_element", "prod_dim_size_one_zero"}))  # linear
def test_cumprod_and_prod_with_zeros_third_order_and_step_order_match_torch(torch, name):
    from orders import torch_order
    from parity import assert_same

    setup, wrt = _product_case(name)
    expression = setup.splitlines()[-1]
    assert_same(Z + third_order(expression, wrt))
    totals = {}
    for library in (torch, gv):
        scope = {"torch": library, "F": library.nn.functional}
        exec(X + M + Z + f"g1, = torch.autograd.grad({expression}, {wrt}, create_graph=True)\n"
             f"g2, = torch.autograd.grad((g1 ** 2).sum(), {wrt}, create_graph=True)\ntotal = (g2 ** 2).sum()\n", scope)
        totals[library.__name__] = scope["total"]
    assert steps_in_order(totals["gradviz"]) == torch_order(totals["torch"])


PRODUCT_DERIVATIVES = {
    "cumprod": lambda x: (x.cumprod(0) * x.exp()).sum(),
    "cumprod_zero": lambda x: ((x * gv.tensor([1.0, 0.0, 1.0], **F64)).cumprod(0) * x.sin()).sum(),
    "prod_zero": lambda x: (x * gv.tensor([1.0, 0.0, 1.0], **F64)).prod() * x.exp().sum(),
    "prod_two_zeros": lambda x: (x.reshape(3, 1) * x * gv.tensor([[0.0, 1.0, 1.0]], **F64)).prod(1).sum() ** 2,
}


@pytest.mark.parametrize("name", sorted(PRODUCT_DERIVATIVES))
def test_cumprod_and_prod_second_and_third_derivatives_by_central_differences(name):
    function = PRODUCT_DERIVATIVES[name]
    point = np.array([0.3, -0.7, 1.1])

    def gradient_at(values):
        x = gv.tensor(values, requires_grad=True, **F64)
        return gv.autograd.grad(function(x), x)[0].numpy()

    def hessian_sum_at(values):
        x = gv.tensor(values, requires_grad=True, **F64)
        g, = gv.autograd.grad(function(x), x, create_graph=True)
        return gv.autograd.grad(g.sum(), x)[0].numpy().sum()

    x = gv.tensor(point, requires_grad=True, **F64)
    g, = gv.autograd.grad(function(x), x, create_graph=True)
    h, = gv.autograd.grad(g.sum(), x, create_graph=True)
    third, = gv.autograd.grad(h.sum(), x)
    eye = np.eye(3)
    numeric_h = [(gradient_at(point + 1e-6 * eye[j]) - gradient_at(point - 1e-6 * eye[j])).sum() / 2e-6 for j in range(3)]
    np.testing.assert_allclose(h.detach().numpy(), numeric_h, rtol=1e-5, atol=1e-7)
    numeric_third = [(hessian_sum_at(point + 1e-5 * eye[j]) - hessian_sum_at(point - 1e-5 * eye[j])) / 2e-5
                     for j in range(3)]
    np.testing.assert_allclose(third.numpy(), numeric_third, rtol=1e-5, atol=1e-6)


THIRD_ORDER_MORE = {
    "gelu": ("(F.gelu(x * y) * x).sum()", "x"),
    "gelu_tanh": ("(F.gelu(x * y, approximate='tanh') * x).sum()", "x"),
    "gelu_of_a_matrix": ("(F.gelu(M * 2) * M).sum()", "M"),
    "huber": ("F.huber_loss(x * x, y, delta=0.7)", "x"),
    "huber_sum_target": ("F.huber_loss(x, y * y, reduction='sum', delta=1.5)", "y"),
    "huber_none": ("(F.huber_loss(x * y, y.exp(), reduction='none') * x).sum()", "x"),
    "smooth_l1": ("F.smooth_l1_loss(x * x, y, beta=0.7)", "x"),
    "smooth_l1_target": ("F.smooth_l1_loss(x, y * y, reduction='sum')", "y"),
    "smooth_l1_none": ("(F.smooth_l1_loss(x.sin(), y * x, reduction='none', beta=2.0) * y).sum()", "x"),
    "smooth_l1_beta_zero": ("F.smooth_l1_loss(x * x, y, beta=0.0) + (x ** 3).sum()", "x"),
    "mish": ("(F.mish(x * y) * x).sum()", "x"),
    "mish_of_a_matrix": ("(F.mish(M * 2) * M).sum()", "M"),
    "bce_logits_pos_weight_target": ("F.binary_cross_entropy_with_logits(y * 2, x.sigmoid(), "
                                     "pos_weight=torch.tensor([2.0, 1.0, 0.5]), reduction='sum')", "x"),
    "bce_logits_pos_weight_both": ("F.binary_cross_entropy_with_logits(x * y, (x * 0.3).sigmoid(), "
                                   "pos_weight=torch.tensor([2.0, 1.0, 0.5]))", "x"),
    "bce_logits_pos_weight_weight_none": ("(F.binary_cross_entropy_with_logits(M, (M * M).sigmoid(), weight=torch.tensor("
                                          "[1.0, 2.0, 0.5]), pos_weight=torch.tensor([2.0, 1.0, 0.5]), reduction='none') * M).sum()",
                                          "M"),
}


@pytest.mark.parametrize("name", sorted(THIRD_ORDER_MORE))
def test_gelu_huber_and_smooth_l1_second_order_nodes_differentiated_match_torch(torch, name):
    """GeluBackwardBackward0 (PyTorch's gelu_double_backward, both forms), HuberLossBackwardBackward0 and
    SmoothL1LossBackwardBackward0 recorded, and mish's composite (its sigmoid made first, as PyTorch's
    infinitely_differentiable_mish_backward does): graph, values, then the third backward's step order."""
    from orders import torch_order
    from parity import assert_same

    expression, wrt = THIRD_ORDER_MORE[name]
    assert_same(third_order(expression, wrt))
    totals = {}
    for library in (torch, gv):
        scope = {"torch": library, "F": library.nn.functional}
        exec(X + M + f"g1, = torch.autograd.grad({expression}, {wrt}, create_graph=True)\n"
             f"g2, = torch.autograd.grad((g1 ** 2).sum(), {wrt}, create_graph=True)\ntotal = (g2 ** 2).sum()\n", scope)
        totals[library.__name__] = scope["total"]
    assert steps_in_order(totals["gradviz"]) == torch_order(totals["torch"])


MORE_THIRD_DERIVATIVES = {
    "gelu": lambda x: (gv.nn.functional.gelu(x.reshape(3, 1) * x) * x.exp()).sum(),
    "mish": lambda x: (gv.nn.functional.mish(x.reshape(3, 1) * x) * x.exp()).sum(),
    "gelu_tanh": lambda x: (gv.nn.functional.gelu(x.reshape(3, 1) * x, approximate="tanh") * x.sin()).sum(),
    "huber": lambda x: gv.nn.functional.huber_loss(x.reshape(3, 1) * x, x.reshape(3, 1).exp() * x * 0.5, delta=0.4) * x.sum() ** 2,
    "smooth_l1": lambda x: (gv.nn.functional.smooth_l1_loss(x.reshape(3, 1) * x, x.reshape(3, 1).sin() + x, reduction="none", beta=0.6)
                            * x.exp()).sum(),
}


@pytest.mark.parametrize("name", sorted(MORE_THIRD_DERIVATIVES))
def test_gelu_huber_and_smooth_l1_third_derivatives_by_central_differences(name):
    function = MORE_THIRD_DERIVATIVES[name]
    point = np.array([0.3, -0.7, 1.1])

    def hessian_sums(values, create_graph=False):
        x = gv.tensor(values, requires_grad=True, **F64)
        g, = gv.autograd.grad(function(x), x, create_graph=True)
        h, = gv.autograd.grad(g.sum(), x, create_graph=create_graph)
        return x, h

    x, h = hessian_sums(point, create_graph=True)
    third, = gv.autograd.grad(h.sum(), x)
    numeric = [(hessian_sums(point + 1e-5 * np.eye(3)[j])[1].sum().item()
                - hessian_sums(point - 1e-5 * np.eye(3)[j])[1].sum().item()) / 2e-5 for j in range(3)]
    np.testing.assert_allclose(third.numpy(), numeric, rtol=1e-5, atol=1e-6)


PRELU = "a = torch.tensor([0.25], requires_grad=True)\nc = torch.tensor([0.25, -0.5, 1.5], requires_grad=True)\n"
PRELU_CASES = {
    "input": ("(F.prelu(M * M - 0.3, a) * M).sum()", "M"),
    "weight": ("(F.prelu(M * M - 0.3, a) * M).sum()", "a"),
    "per_channel_input": ("(F.prelu((M - 0.2).t(), c[:2]) ** 2).sum()", "M"),
    "per_channel_weight": ("(F.prelu(M.reshape(1, 3, 2) * x.reshape(1, 3, 1), c) ** 2).sum()", "c"),
    "vector": ("(F.prelu(x * y, a) * x).sum()", "x"),
}


@pytest.mark.parametrize("name", sorted(PRELU_CASES))
def test_prelu_records_torchs_two_output_kernel_backward(torch, name):
    """PreluKernelBackwardBackward0: one node, two outputs (the input's gradient and the slope's, summed to
    the slope's shape), as torch records it; then differentiated again (its own formulas)."""
    from parity import assert_same

    expression, wrt = PRELU_CASES[name]
    assert_same(PRELU + second_order(expression, wrt))
    if name != "weight":  # linear in the slope: its second gradient has no graph to differentiate
        assert_same(PRELU + third_order(expression, wrt))


@pytest.mark.parametrize("name", sorted(PRELU_CASES))
def test_prelu_backward_passes_run_in_torch_order(torch, name):
    from orders import torch_order

    expression, wrt = PRELU_CASES[name]
    totals = {}
    for library in (torch, gv):
        scope = {"torch": library, "F": library.nn.functional}
        exec(X + M + PRELU + f"g1, = torch.autograd.grad({expression}, {wrt}, create_graph=True)\n"
             f"g2, = torch.autograd.grad((g1 ** 2).sum() + (a * c).sum() * g1.sum(), {wrt}, create_graph=True)\n"
             "total = (g2 ** 2).sum()\n", scope)
        totals[library.__name__] = scope["total"]
    assert steps_in_order(totals["gradviz"]) == torch_order(totals["torch"])


def test_prelu_second_derivatives_by_central_differences():
    def function(v):
        weight = v[:3] * 0.5
        return (gv.nn.functional.prelu(v[3:].reshape(2, 3) * v[3:].reshape(2, 3).sin(), weight) * v[3:].reshape(2, 3)).sum() \
            + (weight ** 3).sum()

    point = np.array([0.3, -0.7, 1.1, 0.5, -1.2, 0.8, -0.4, 1.5, -0.9])

    def gradient(values):
        v = gv.tensor(values, requires_grad=True, **F64)
        return gv.autograd.grad(function(v), v)[0].numpy()

    v = gv.tensor(point, requires_grad=True, **F64)
    g, = gv.autograd.grad(function(v), v, create_graph=True)
    eye = np.eye(point.size)
    for row in range(point.size):
        hessian_row, = gv.autograd.grad(g[row], v, retain_graph=True)
        numeric = [(gradient(point + 1e-6 * eye[j]) - gradient(point - 1e-6 * eye[j]))[row] / 2e-6 for j in range(point.size)]
        np.testing.assert_allclose(hessian_row.numpy(), numeric, rtol=1e-5, atol=1e-6)


EMBEDDING = "W = torch.tensor([[0.3, -0.2, 0.1], [0.5, 1.1, -0.7], [0.9, -1.3, 0.2]], requires_grad=True)\n"
EMBEDDINGS = {
    "plain": ("(F.embedding(torch.tensor([1, 0, 1]), W) * x).pow(2).sum()", "W"),
    "padding": ("(F.embedding(torch.tensor([[1, 0], [2, 1]]), W, padding_idx=0) * x).pow(2).sum()", "W"),
    "scale_grad_by_freq": ("(F.embedding(torch.tensor([1, 0, 1, 2]), W * 1, scale_grad_by_freq=True) ** 3).sum()", "W"),
    "through_the_other_factor": ("(F.embedding(torch.tensor([1, 0, 1]), W) * x).pow(2).sum()", "x"),
}


@pytest.mark.parametrize("name", sorted(EMBEDDINGS))
def test_embedding_records_torchs_dense_backward(torch, name):
    """EmbeddingDenseBackwardBackward0 (saved indices and padding_idx), and its own backward
    (``index_select`` of the rows, ``masked_fill_`` of the padding row, a view), against torch."""
    from parity import assert_same

    expression, wrt = EMBEDDINGS[name]
    assert_same(EMBEDDING + second_order(expression, wrt))
    assert_same(EMBEDDING + third_order(expression, wrt))


MASKED_SELECTS = {
    "vector": ("(x.masked_select(torch.tensor([True, False, True])) ** 3).sum()", "x"),
    "matrix": ("(M.masked_select(torch.tensor([[True, False, True], [False, True, True]])) * y.repeat(2)[:4]).pow(2).sum()",
               "M"),
    "broadcast_mask": ("(M.masked_select(torch.tensor([True, False, True])) ** 3).sum()", "M"),
}


@pytest.mark.parametrize("name", sorted(MASKED_SELECTS))
def test_a_users_masked_select_differentiated_three_times_matches_torch(torch, name):
    """The source gradient of MaskedScatterBackward0 is PyTorch's ``masked_scatter_backward``, a node of its own
    (MaskedScatterBackwardBackward0), whose gradient is a masked_scatter into zeros."""
    from parity import assert_same

    expression, wrt = MASKED_SELECTS[name]
    assert_same(second_order(expression, wrt))
    assert_same(third_order(expression, wrt))


def test_a_recorded_gradient_of_several_outputs_starts_from_their_gradients(torch):
    """``autograd.grad([a, b], x, [ga, gb], create_graph=True)``: the root that feeds both starting gradients
    runs in the recorded backward pass too, and the result keeps its graph."""
    from parity import assert_same

    assert_same("x = torch.tensor([2.0, -1.0], requires_grad=True)\na = x * x\nb = x.sin()\n"
                "g, = torch.autograd.grad([a, b], x, [torch.tensor([1.0, 2.0]), torch.tensor([0.5, 3.0])], "
                "create_graph=True)\nprint(g)\ng.sum().backward()\nprint(x.grad)\n")
