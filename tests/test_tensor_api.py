"""The tensor API that tutorials use beyond the seeds, against PyTorch 2.13.

Each case runs in torch and in gradviz (``parity.assert_same``): values, dtypes, grads, the whole
grad_fn graph with ``next_functions`` and ``_saved_*`` attributes, and the printed text. The
cases run on the numpy backend and on the torch backend.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], requires_grad=True)\n"
V = "v = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)\n"
M = "m = torch.tensor([[True, False, True], [False, False, True]])\n"

backward = weighted_backward


CASES = {
    # reductions and predicates
    "norm": X + backward("x.norm()"),
    "norm_fn": X + backward("torch.norm(x)"),
    "norm_p1": X + backward("x.norm(p=1)"),
    "norm_p3": X + backward("x.norm(p=3)"),
    "norm_fro": X + backward("x.norm(p='fro')"),
    "norm_inf": X + backward("x.norm(p=float('inf'))"),
    "norm_dim": X + backward("x.norm(dim=1)"),
    "norm_dim_keep": X + backward("x.norm(2, 1, True)"),
    "norm_dims_neg": X + backward("x.norm(dim=(-1,))"),
    "all_any": X + M + "a = m.all()\nb = m.any()\nc = (x > 0).all(dim=1)\nd = (x > 0).any(1, keepdim=True)\n"
                       "e = torch.all(x)\nf = torch.any(x > 5)\nprint(a, b, c, d, e, f)\n",
    "argmax_argmin": X + "a = x.argmax()\nb = x.argmax(1)\nc = x.argmin(dim=0, keepdim=True)\nd = torch.argmax(x, 1)\n"
                         "e = torch.argmin(x)\nf = x.argmax(keepdim=True)\nprint(a, b, c, d, e, f)\n",
    "equal_allclose": X + "a = torch.tensor([torch.equal(x, x), x.equal(x.detach() + 1), torch.equal(x, x[0]),\n"
                          "    torch.allclose(x, x + 1e-9), x.allclose(x * 2), torch.allclose(x, x + 1e-3, atol=1e-2)])\n",
    # shapes and views
    "view_as": X + backward("x.view_as(torch.ones(3, 2))"),
    "reshape_as": X + backward("x.reshape_as(torch.ones(6))"),
    "reshape_as_copy": X + backward("x.t().reshape_as(torch.ones(6))"),
    "expand_as": V + X + backward("v.expand_as(x)"),
    "expand_minus_one": V + backward("v.expand(2, -1)"),
    "expand_new_dims": V + backward("v.unsqueeze(1).expand(2, 3, 4)"),
    "narrow": X + backward("x.narrow(1, 1, 2)"),
    "narrow_negative": X + backward("x.narrow(-1, -2, 1)"),
    "contiguous_copy": X + backward("x.t().contiguous()"),
    "contiguous_same": X + "y = x.contiguous()\nz = x.t().is_contiguous()\nprint(y is x, z, x.stride(), x.t().stride())\n",
    "repeat": V + backward("v.repeat(2, 2)"),
    "repeat_more_dims": X + backward("x.repeat(2, 1, 3)"),
    "repeat_tuple": X + backward("x.repeat((2, 2))"),
    # joining
    "cat": X + backward("torch.cat([x, x * 2])"),
    "cat_dim": X + backward("torch.cat((x, x * 2), dim=1)"),
    "cat_negative_dim": X + backward("torch.cat((x, x), -1)"),
    "cat_constant": X + backward("torch.cat([x, torch.ones(1, 3)], 0)"),
    "cat_promotes": X + backward("torch.cat([x, torch.ones(1, 3, dtype=torch.float64)])"),
    "cat_legacy_empty": V + backward("torch.cat([v, torch.ones(0)])"),
    "concat_aliases": X + "a = torch.concat([x, x])\nb = torch.concatenate([x, x], 1)\n",
    "stack": V + backward("torch.stack([v, v * 2])"),
    "stack_dim": V + backward("torch.stack([v, v * 2], dim=1)"),
    "stack_negative_dim": V + backward("torch.stack([v, torch.ones(3)], -1)"),
    # choosing elements
    "where": X + M + backward("torch.where(m, x, 0.)"),
    "where_method": X + M + backward("x.where(m, 0.)"),
    "where_method_tensor": X + V + M + backward("x.where(m, v)"),
    "where_numbers": M + "y = torch.where(m, 1., 0.)\nz = torch.where(m, 1, 0)\nw = torch.where(m, 1., 0)\nprint(y, z, w)\n",
    "where_condition_only": M + "rows, cols = torch.where(m)\nprint(rows, cols)\n",
    "masked_fill": X + M + backward("x.masked_fill(m, 0.)"),
    "masked_fill_fn": X + M + backward("torch.masked_fill(x, m, 1.)"),
    "masked_fill_row_mask": X + M + backward("x.masked_fill(m[0], 1.)"),
    "masked_fill_tensor": X + M + backward("x.masked_fill(m, torch.tensor(2.))"),
    "masked_fill_tensor_grad": X + V + M + backward("x.masked_fill(m, v[0])"),
    "masked_fill_in_place": X + M + "b = x * 1\nb.masked_fill_(m, 0.)\n(b * b).sum().backward()\n",
    "index_select": X + backward("x.index_select(1, torch.tensor([0, 2, 0]))"),
    "index_select_fn": X + backward("torch.index_select(x, 0, torch.tensor([1, 1, 0]))"),
    "gather": X + backward("x.gather(1, torch.tensor([[0, 0], [1, 2]]))"),
    "gather_fn": X + backward("torch.gather(x, 0, torch.tensor([[0, 1, 1]]))"),
    "square": X + backward("x.square()"),
    "mask_logic": X + M + "i = torch.tensor([3, 5, 6])\na = ~m\nb = m & (x > 0)\nc = m | False\nd = m ^ m\ne = ~i\n"
                          "f = i & 1\ng = 1 | i\nh = True & m\nk = torch.logical_not(x)\nl = torch.logical_and(m, x)\n"
                          "n = m.logical_or(i)\no = torch.logical_xor(m, m[0])\nprint(a, b, c, d, e, f, g, h, k, l, n, o)\n",
    "pruning_tutorial": X + "mask = x.abs() > 1.6\npruned = x.masked_fill(~mask, 0.)\n"
                                "loss = pruned.norm() + torch.stack([x[0], x[1]]).sum() + torch.cat([x, x]).mean()\n"
                                "loss.backward()\nidx = x.argmax(dim=1)\nbest = x.gather(1, idx.unsqueeze(1))\n",
    "one_hot_tutorial": X + "target = torch.tensor([1, 2])\nonehot = torch.zeros(2, 3)\n"
                                "onehot[torch.arange(2), target] = 1.\n"
                                "loss = -(onehot * torch.log_softmax(x, dim=1)).sum() / 2\nloss.backward()\n",
    # in-place math, recorded with PyTorch's node names
    **{f"in_place_{name}": X + f"b = x * 1\nr = b.{name}({args})\nprint(r is b, b._version)\n(b * b).sum().backward()\n"
       for name, args in (("cos_", ""), ("sin_", ""), ("exp_", ""), ("neg_", ""), ("tanh_", ""), ("sigmoid_", ""),
                          ("relu_", ""), ("clamp_", "0, 4"), ("clamp_", "min=0."), ("clip_", "max=1."),
                          ("pow_", "2"), ("pow_", "3"), ("square_", ""), ("reciprocal_", ""), ("mul_", "x"),
                          ("div_", "x"), ("add_", "x"), ("sub_", "x"), ("add_", "x, alpha=2"), ("mul_", "2"),
                          ("fill_", "2."), ("zero_", ""), ("copy_", "torch.ones(3)"))},
    **{f"in_place_{name}_positive": X + f"b = x.abs() + 1\nb.{name}()\nb.sum().backward()\n"
       for name in ("log_", "sqrt_", "abs_")},
    "in_place_other_requires_grad": X + V + "c = torch.zeros(2, 3)\nc.mul_(v)\nc.add_(x)\nc.sum().backward()\n",
    "in_place_fill_tensor": X + V + "b = x * 1\nb.fill_(v[1])\nb.sum().backward()\n",
    "in_place_chain": X + "b = x * 1\nb.sin_().mul_(2).exp_()\nb.sum().backward()\n",
    "in_place_no_grad": X + "b = x * 1\nwith torch.no_grad():\n    b.cos_()\nb.sum().backward()\n",
    "retain_grad_moves": X + "b = x * 1\nb.retain_grad()\nb.mul_(2)\nb.sum().backward()\n",
    "grad_laid_out_like_leaf": X + "inputs = torch.tensor([[1., 2.], [3., 4.], [5., 6.]])\n"
                                   "F.linear(inputs, x.t()).sum().backward()\ng = x.grad.view(-1)\n"
                                   "print(x.grad.is_contiguous(), x.grad.stride())\n",
    "layout_follows_first_operand": X + "a = x.t().contiguous().t() + x\nb = x + x.t().contiguous().t()\n"
                                        "print(a.stride(), b.stride(), a.t().is_contiguous(), (x.t() * 2).stride())\n",
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_api_matches_torch(name, backend):
    assert_same(CASES[name], backend)


FACTORIES = {
    "size_keyword": "a = torch.zeros(size=(2, 3))\nb = torch.ones(size=[2])\nc = torch.empty(size=(1,))\n"
                    "d = torch.full(size=(2,), fill_value=3.)\ne = torch.randn(size=()).shape\nf = torch.rand(size=(2,)).shape\n"
                    "print(a, b, c.shape, d, e, f)\ndel c\n",
    "size_forms": "a = torch.zeros(())\nb = torch.ones([])\nc = torch.zeros(torch.Size([2, 1]))\nd = torch.empty(0)\n"
                  "e = torch.ones(2, 3)\nf = torch.zeros((2, 3))\n",
    "full_dtypes": "a = torch.full((2,), 7)\nb = torch.full((2,), True)\nc = torch.full((2,), 1.5)\nprint(a, b, c)\n",
    "default_dtype": "torch.set_default_dtype(torch.float64)\ntry:\n"
                     "    a = torch.tensor([1.5])\n    b = torch.zeros(1)\n    c = torch.arange(3.)\n    d = torch.tensor([1])\n"
                     "    e = torch.tensor([1]) * 2.5\n    f = torch.linspace(0, 1, 3)\n    g = torch.Tensor([1])\n"
                     "    h = torch.FloatTensor([1])\n    print(torch.get_default_dtype())\nfinally:\n"
                     "    torch.set_default_dtype(torch.float32)\nprint(torch.get_default_dtype())\n",
    "default_dtype_half": "torch.set_default_dtype(torch.float16)\ntry:\n    a = torch.tensor([1.5])\nfinally:\n"
                          "    torch.set_default_dtype(torch.float32)\n",
    "default_device": "print(torch.get_default_device())\ntorch.set_default_device('cpu')\ntry:\n"
                      "    a = torch.zeros(2)\n    print(torch.get_default_device(), a.device)\nfinally:\n"
                      "    torch.set_default_device(None)\nprint(torch.get_default_device())\n",
    "accelerator": "device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else 'cpu'\n"
                   "a = torch.ones(2, device=device)\n"
                   "print(device, torch.accelerator.is_available(), torch.accelerator.device_count(),\n"
                   "      torch.accelerator.current_accelerator(), torch.accelerator.current_accelerator(True))\n",
    "legacy_tensor": "a = torch.Tensor([-4.0])\nb = torch.Tensor([[1, 2], [3, 4]])\nc = torch.Tensor()\n"
                     "d = torch.Tensor((2, 3))\ne = torch.Tensor([True])\nprint(a, b, c, d, e)\n",
    "legacy_sizes": "a = torch.Tensor(2, 3).shape\nb = torch.Tensor(torch.Size([2, 3])).shape\nc = torch.Tensor(3).shape\n"
                    "d = torch.LongTensor(3)\nprint(a, b, c, d.shape, d.dtype)\ndel d\nx = torch.ones(1)\n",
    "legacy_alias": "z = torch.tensor([1, 2])\na = torch.Tensor(z)\na[0] = 5\nprint(z, a.dtype)\n",
    "legacy_typed": "a = torch.FloatTensor([1, 2])\nb = torch.DoubleTensor([1, 2])\nc = torch.LongTensor([1.7, 2])\n"
                    "d = torch.IntTensor([1])\ne = torch.BoolTensor([1, 0])\nf = torch.ByteTensor([1])\n"
                    "g = torch.FloatTensor(2, 2).zero_()\n"
                    "print(isinstance(a, torch.FloatTensor), isinstance(a, torch.DoubleTensor), isinstance(a, torch.Tensor))\n"
                    "print(torch.FloatTensor, torch.FloatTensor.dtype, torch.FloatTensor.is_cuda, a.type(), c.type())\n",
    "legacy_numpy": "import numpy as np\na = torch.Tensor(np.array([1, 2]))\nb = torch.LongTensor(np.array([1.5]))\n",
    "variable": "Variable = torch.autograd.Variable\nz = torch.tensor([1., 2.])\nv = Variable(z, requires_grad=True)\n"
                "w = Variable(torch.ones(2))\nu = Variable()\ny = (v * 2).sum()\ny.backward()\n"
                "print(v, v is z, isinstance(z, Variable), z.requires_grad, v.is_leaf, w, u)\n",
    "variable_of_non_leaf": "Variable = torch.autograd.Variable\nx = torch.ones(2, requires_grad=True)\nv = Variable(x * 2)\n"
                            "print(v, v.is_leaf, v.requires_grad)\n",
    "float_int_of_one_element": "x = torch.tensor([2.5])\nprint(float(x), int(x), float(torch.tensor(3)), int(torch.tensor(-2.7)))\n",
    "type_conversion": "x = torch.tensor([1.5, 2.5])\na = x.type(torch.DoubleTensor)\nb = x.type('torch.LongTensor')\nprint(a, b, x.type())\n",
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factories_and_legacy_constructors_match_torch(name):
    assert_same(FACTORIES[name])


ERRORS = {
    "size_twice": "torch.zeros((2,), size=(3,))\n",
    "size_missing": "torch.zeros()\n",
    "size_float": "torch.zeros(2.5)\n",
    "size_negative": "torch.zeros(-1)\n",
    "size_negative_ones": "torch.ones(2, -1)\n",
    "full_int_size": "torch.full(2, 1.)\n",
    "default_dtype_int": "torch.set_default_dtype(torch.int64)\n",
    "default_dtype_text": "torch.set_default_dtype('float64')\n",
    "accelerator_index": "torch.accelerator.current_device_index()\n",
    "accelerator_synchronize": "torch.accelerator.synchronize()\n",
    "legacy_number": "torch.Tensor(3.5)\n",
    "legacy_string": "torch.Tensor('a')\n",
    "legacy_negative": "torch.Tensor(-1)\n",
    "legacy_requires_grad": "torch.Tensor([1, 2], requires_grad=True)\n",
    "legacy_dtype": "torch.Tensor([1.], dtype=torch.float64)\n",
    "legacy_typed_mismatch": "torch.FloatTensor(torch.tensor([1, 2]))\n",
    "variable_of_list": "torch.autograd.Variable([1.])\n",
    "float_of_many": "float(torch.ones(3))\n",
    "int_of_many": "int(torch.ones(3))\n",
    "float_of_empty": "float(torch.ones(0))\n",
    "norm_of_ints": "torch.ones(3, dtype=torch.int64).norm()\n",
    "expand_smaller": "torch.ones(3).expand(4)\n",
    "expand_mismatch": "torch.ones(3).expand(2, 4)\n",
    "expand_fewer_dims": "torch.ones(2, 3).expand(3)\n",
    "repeat_fewer_dims": "torch.ones(2, 3).repeat(2)\n",
    "cat_dims": "torch.cat([torch.ones(3), torch.ones(2, 3)])\n",
    "cat_sizes": "torch.cat([torch.ones(2, 3), torch.ones(2, 2)])\n",
    "cat_empty": "torch.cat([])\n",
    "cat_dim_range": "torch.cat([torch.ones(2, 3)], 2)\n",
    "stack_sizes": "torch.stack([torch.ones(3), torch.ones(2)])\n",
    "stack_empty": "torch.stack([])\n",
    "stack_dim_range": "torch.stack([torch.ones(2, 3)], 3)\n",
    "allclose_dtypes": "torch.allclose(torch.ones(2), torch.ones(2, dtype=torch.float64))\n",
    "allclose_shapes": "torch.allclose(torch.ones(2), torch.ones(3))\n",
    "masked_fill_int_mask": "torch.ones(3).masked_fill(torch.tensor([1, 0, 1]), 0.)\n",
    "masked_fill_vector_value": "torch.ones(3).masked_fill(torch.tensor([True, False, True]), torch.ones(3))\n",
    "masked_fill_shape": "torch.ones(2, 3).masked_fill(torch.tensor([True, False]), 1.)\n",
    "index_select_range": "torch.ones(2, 3).index_select(0, torch.tensor([2]))\n",
    "index_select_matrix": "torch.ones(2, 3).index_select(0, torch.tensor([[0]]))\n",
    "index_select_float": "torch.ones(2, 3).index_select(0, torch.tensor([0.]))\n",
    "gather_range": "torch.ones(2, 3).gather(1, torch.tensor([[5]]))\n",
    "gather_dims": "torch.ones(2, 3).gather(1, torch.tensor([0]))\n",
    "gather_float": "torch.ones(2, 3).gather(1, torch.tensor([[0.]]))\n",
    "in_place_int_result": "torch.tensor([1, 2]).cos_()\n",
    "in_place_changes_saved_result": X + "b = x * 1\nb.exp_().mul_(2)\nb.sum().backward()\n",
    "in_place_leaf": X + "x.cos_()\n",
    "in_place_other_type": "torch.ones(3).add_('a')\n",
    "copy_from_list": "torch.ones(3).copy_([1.])\n",
    "copy_shape": "torch.ones(2, 3).copy_(torch.ones(2))\n",
    "fill_vector": "torch.ones(3).fill_(torch.ones(2))\n",
    "int_negative_power": "torch.tensor([2]) ** -1\n",
    "invert_float": "~torch.ones(2)\n",
    "bitwise_float": "torch.ones(2) & 1\n",
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_tensor_api_errors_match_torch(name, backend):
    assert_same_error(ERRORS[name], backend)
