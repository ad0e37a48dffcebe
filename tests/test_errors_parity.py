"""Errors a learner meets, raised with PyTorch's exception type and exact message.

Each snippet raises in torch; gradviz must raise the same type with the same text.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

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
    "modified_saved_input_add": X + "a = x * 1\ny = a ** 2\na.add_(2)\ny.sum().backward()\n",
    # errors tutorials beyond the seeds meet
    "backward_list_of_numbers": X + "y = x * 2\ny.backward([1., 1., 1.])\n",
    "backward_tuple_of_numbers": X + "y = x * 2\ny.backward((1., 1., 1.))\n",
    "backward_number": X + "y = (x * 2).sum()\ny.backward(1.)\n",
    "grad_list_of_numbers": X + "y = (x * 2).sum()\ntorch.autograd.grad(y, x, [1.])\n",
    "grad_number": X + "y = (x * 2).sum()\ntorch.autograd.grad(y, x, 1.)\n",
    "float_of_many": X + "float(x)\n",
    "int_of_many": X + "int(x)\n",
    "view_not_viewable": "torch.ones(2, 3).t().view(6)\n",
    "bmm_2d_first": "torch.bmm(torch.ones(2, 3), torch.ones(3, 2))\n",
    "bmm_2d_second": "torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 3))\n",
    "bmm_batches": "torch.bmm(torch.ones(2, 2, 3), torch.ones(3, 3, 2))\n",
    "bmm_inner": "torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 4, 2))\n",
    "grad_int_assigned": X + "x.grad = torch.tensor([1, 2, 3])\n",
    "grad_double_assigned": X + "x.grad = torch.tensor([1., 2., 3.], dtype=torch.float64)\n",
    "grad_list_assigned": X + "x.grad = [1., 2., 3.]\n",
    "hook_changes_size": X + "x.register_hook(lambda g: g.sum())\n(x * 2).sum().backward()\n",
    "named_hook_changes_size": X + "def first_two(g):\n    return g[:2]\nx.register_hook(first_two)\n(x * 2).sum().backward()\n",
    "non_leaf_hook_changes_size": X + "y = x * 2\ny.register_hook(lambda g: g.sum())\ny.sum().backward()\n",
    "hook_changes_type": X + "x.register_hook(lambda g: g.double())\n(x * 2).sum().backward()\n",
    "softmax_without_dim": X + "torch.softmax(x)\n",
    "softmax_method_without_dim": X + "x.softmax()\n",
    "grad_unused_second": X + "y = torch.tensor([1., 2.], requires_grad=True)\ntorch.autograd.grad((x * 2).sum(), [x, y])\n",
    "grad_unused_first": X + "y = torch.tensor([1., 2.], requires_grad=True)\ntorch.autograd.grad((x * 2).sum(), [y, x])\n",
    "add_string": X + "x + 'a'\n",
    "string_add": X + "'a' + x\n",
    "times_string": X + "x * 'a'\n",
    "minus_none": X + "x - None\n",
    "matmul_string": X + "x @ 'a'\n",
    "less_than_string": X + "x < 'a'\n",
    "in_place_add_string": X + "y = x.detach()\ny += 'a'\n",
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_matches_torch(name, backend):
    assert_same_error(ERRORS[name], backend)


WARNINGS = {
    "softmax_implicit_dim": X + "y = F.softmax(x)\n",
    "softmax_implicit_dim_2d": "y = F.softmax(torch.ones(2, 3))\n",
    "log_softmax_implicit_dim_3d": "y = F.log_softmax(torch.ones(2, 3, 4))\n",
    "mse_loss_shapes": X + "y = F.mse_loss(x, torch.ones(3, 1))\ny.backward()\n",
    "mse_loss_shapes_other_way": X + "y = F.mse_loss(x.unsqueeze(1), torch.ones(3))\ny.backward()\n",
}


def warned(code: str, module) -> list:
    """The warnings ``code`` gives with ``torch`` bound to ``module``: (category, message) pairs."""
    import warnings

    from parity import namespace

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(code, namespace(module))
    return [(w.category.__name__, str(w.message)) for w in caught if not issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("name", sorted(WARNINGS))
def test_warning_and_result_match_torch(name):
    import torch

    import gradviz

    expected = warned(WARNINGS[name], torch)
    assert expected, "torch did not warn: the snippet does not test a warning"
    assert warned(WARNINGS[name], gradviz) == expected
    assert_same(WARNINGS[name])


def test_float_of_a_tensor_that_requires_grad_warns_once_as_torch_does():
    """PyTorch warns once per process, so each library runs in a fresh one."""
    import subprocess
    import sys

    code = ("import warnings, {lib} as torch\nwarnings.simplefilter('always')\n"
            "x = torch.tensor(1., requires_grad=True)\nprint(float(x), float(x * 2), int(x))\n")
    outputs = [subprocess.run([sys.executable, "-c", code.format(lib=lib)], capture_output=True, text=True, check=True)
               for lib in ("torch", "gradviz")]
    (torch_out, torch_err), (ours_out, ours_err) = [(run.stdout, run.stderr) for run in outputs]
    assert ours_out == torch_out
    warning_lines = [[line for line in err.splitlines() if "Warning" in line or "Consider" in line]
                     for err in (torch_err, ours_err)]
    assert [line.split("UserWarning: ")[-1] for line in warning_lines[1]] == \
           [line.split("UserWarning: ")[-1] for line in warning_lines[0]]
