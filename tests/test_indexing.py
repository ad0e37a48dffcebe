"""Indexing, assignment through an index, views and in-place ops, against PyTorch 2.13.

``x[key]`` and ``x[key] = value`` must build PyTorch's graph (SelectBackward0, SliceBackward0,
AliasBackward0, IndexBackward0, CopySlices, IndexPutBackward0, AsStridedBackward0) with the same
saved values; views must share memory and the version counter with their base; and the errors
of in-place ops on leaves and views must be PyTorch's.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)\n"
C = "x = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()\nm = torch.tensor([[True, False, True], [False, True, True]])\n"

backward = weighted_backward


READS = {key: C + backward(f"x[{key}]") for key in (
    "0", "-1", "1, 2", "0, -1, 3", ":", "1:", "::2", "-5:", "5:", "1:1", ":, 1", "..., 0", "0, ...", "..., :",
    ":, :", "()", "None", "None, 0", "0, None", ":, None, 1", "torch.tensor(1)", "True", "m", "m, 0", "0, m[0]",
    "..., m[0], 0", "m, None", "[0, 1]", "[[0, 1], [1, 0]]", "torch.tensor([1, 0, 1])", ":, torch.tensor([0, 2])",
    "torch.tensor([0, 1]), :, torch.tensor([3, 0])", "torch.tensor([1]), 1:", "0, torch.tensor([[0, 1], [2, 0]])",
    ":, None, torch.tensor([0, 1])", ":, x[0, :, 0] > 4", "[True, False]")}
READS["chained"] = X + backward("x[0][1:][0]")
READS["0d_tensor"] = "x = torch.tensor(3.0, requires_grad=True)\ny = x[None]\nz = x[...]\nw = x[True]\n(y + z + w).sum().backward()\n"

WRITES = {
    "int_number": X + "b = x * 1\nb[0] = 5.\n(b * b).sum().backward()\n",
    "int_int_number": X + "b = x * 1\nb[1, 2] = 7\n(b * b).sum().backward()\n",
    "slice_tensor": X + "b = x * 1\nb[:, 1:] = torch.tensor([7., 8.])\n(b * b).sum().backward()\n",
    "slice_broadcast": X + "o = torch.tensor([[7.], [8.]], requires_grad=True)\nb = x * 1\nb[:, 1:] = o\n(b * b).sum().backward()\n",
    "leading_ones": X + "o = torch.tensor([[7., 8., 9.]], requires_grad=True)\nb = x * 1\nb[0] = o\n(b * b).sum().backward()\n",
    "full_slice_number": X + "b = x * 1\nb[:] = 1\n(b * x).sum().backward()\n",
    "ellipsis_number": X + "b = x * 1\nb[...] = 1\n(b * x).sum().backward()\n",
    "none_number": X + "b = x * 1\nb[None] = 2.\n(b * x).sum().backward()\n",
    "true_number": X + "b = x * 1\nb[True] = 2.\n(b * x).sum().backward()\n",
    "false_number": X + "b = x * 1\nb[False] = 2.\n(b * x).sum().backward()\n",
    "chained": X + "b = x * 1\nb[0][1] = 1\n(b * b).sum().backward()\n",
    "transposed": X + "b = x * 1\nb.t()[0] = 3\n(b * b).sum().backward()\n",
    "mask_number": X + "b = x * 1\nb[b > 2] = 0.\n(b * b).sum().backward()\n",
    "mask_rows": X + "b = x * 1\nb[torch.tensor([True, False])] = 0.\n(b * b).sum().backward()\n",
    "mask_tensor": X + "o = torch.tensor([7., 8., 9.], requires_grad=True)\nb = x * 1\nb[b > 3] = o\n(b * b).sum().backward()\n",
    "index_pairs": X + "b = x * 1\nb[[0, 1], [1, 2]] = 0.\n(b * b).sum().backward()\n",
    "index_values": X + "o = torch.tensor([7., 8.], requires_grad=True)\nb = x * 1\nb[torch.tensor([0, 1]), torch.tensor([1, 2])] = o\n(b * b).sum().backward()\n",
    "index_columns": X + "b = x * 1\nb[:, torch.tensor([0, 2])] = 0.\n(b * b).sum().backward()\n",
    "index_after_select": X + "b = x * 1\nb[0, torch.tensor([0, 2])] = 0.\n(b * b).sum().backward()\n",
    "index_after_slice": X + "b = x * 1\nb[1:, torch.tensor([0, 2])] = 0.\n(b * b).sum().backward()\n",
    "index_broadcast_values": X + "o = torch.tensor([7., 8., 9.], requires_grad=True)\nb = x * 1\nb[torch.tensor([1, 0])] = o\n(b * b).sum().backward()\n",
    "leaf_without_grad": X + "c = torch.zeros(2, 3)\nc[0] = x[1]\nc.sum().backward()\n",
    "leaf_without_grad_mask": X + "c = torch.zeros(3)\nc[torch.tensor([True, False, True])] = x[0, 1:]\nc.sum().backward()\n",
    "no_grad_write": X + "b = x * 1\nwith torch.no_grad():\n    b[0] = 5.\n(b * b).sum().backward()\n",
    "int_tensor": "t = torch.tensor([1, 2, 3])\nt[0] = 5.7\nt[t > 2] = 0\nprint(t)\n",
    "detached": X + "e = x.detach()\ne[0] = 3\nprint(x, x._version)\n",
    "index_put_method": X + "b = x * 1\nb.index_put_((torch.tensor([0, 1]),), torch.tensor([1., 2., 3.]))\n"
                             "c = x.index_put((torch.tensor([1]),), torch.tensor(5.), accumulate=True)\n(b * b + c).sum().backward()\n",
}

VIEWS = {
    "in_place_on_view": X + "o = torch.tensor([1., 2., 3.], requires_grad=True)\nb = x * 1\nv = b[0]\nv.mul_(o)\n"
                            "w = v * 2\n(b.sum() + w.sum()).backward()\n",
    "in_place_on_base": X + "b = x * 1\nv = b[0]\nb.mul_(2)\nw = v * 3\nw.sum().backward()\n",
    "view_of_view": X + "b = x * 1\nv = b[0]\nu = v[1:]\nu.exp_()\n(b.sum() + v.sum() + u.sum()).backward()\n",
    "cos_through_view": X + "b = x * 1\nb[0:1].cos_()\nb.sum().backward()\n",
    "reshape_view": X + "b = x * 1\nv = b.view(6)\nv[2] = 0.\n(b * b).sum().backward()\n",
    "permute_view": X + "b = x * 1\nb.permute(1, 0)[1].zero_()\n(b * b).sum().backward()\n",
    "expand_row": "x = torch.ones(3, requires_grad=True)\nb = x * 1\ne = b.expand(2, 3)\ne[0].mul_(2)\n(b * b).sum().backward()\n",
    "narrow_view": X + "b = x * 1\nb.narrow(1, 0, 2).add_(1)\n(b * b).sum().backward()\n",
    "squeeze_view": X + "b = x * 1\nb.unsqueeze(0).squeeze(0)[1].fill_(2.)\n(b * b).sum().backward()\n",
    "base_without_grad": X + "c = torch.zeros(2, 3)\nv = c[:, 1:]\nv.mul_(x[:, :2])\nc.sum().backward()\n",
    "base_gains_grad": X + "c = torch.zeros(2, 3)\nv = c[:1]\nc.copy_(x)\nr = v.requires_grad\ny = v * 2\ny.sum().backward()\n",
    "no_grad_change_of_base": X + "b = x * 1\nv = b[0]\nwith torch.no_grad():\n    b.mul_(2)\n(v * v).sum().backward()\n",
    "no_grad_change_of_view": X + "b = x * 1\nv = b[0]\nwith torch.no_grad():\n    v.mul_(2)\n(b * v).sum().backward()\n",
    "leaf_view_after_update": X + "v = x[0]\nwith torch.no_grad():\n    x.mul_(2)\n(v * v).sum().backward()\n",
    "retain_grad_on_base": X + "b = x * 1\nb.retain_grad()\nv = b[:1]\nv.mul_(2)\nb.sum().backward()\n",
    "retain_grad_on_view": X + "b = x * 1\nv = b[:1]\nv.retain_grad()\nb.mul_(2)\n(v.sum() + b.sum()).backward()\n",
    "view_made_under_no_grad": X + "with torch.no_grad():\n    v = x[0]\nr = (v.requires_grad, v.is_leaf)\ny = v * 2\n",
    "printed_nodes": X + "b = x * 1\nb[0] = 2.\nc = x * 1\nc.copy_(torch.zeros(2, 3))\nprint(b, c, b.grad_fn, c.grad_fn)\n"
                        "print(b.grad_fn.name(), c.grad_fn.name(), b[0].grad_fn)\n",
    "versions_shared": X + "b = x * 1\nv = b[0]\nw = b.t()\nv.add_(1)\nprint(b._version, v._version, w._version, v._base is b, w._is_view())\n",
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(READS))
def test_reading_through_an_index_matches_torch(name, backend):
    assert_same(READS[name], backend)


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(WRITES))
def test_writing_through_an_index_matches_torch(name, backend):
    assert_same(WRITES[name], backend)


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_and_in_place_ops_match_torch(name, backend):
    assert_same(VIEWS[name], backend)


ERRORS = {
    "leaf_setitem": X + "x[0] = 5\n",
    "leaf_view_in_place": X + "x[0].mul_(2)\n",
    "leaf_transpose_in_place": X + "x.t().mul_(2)\n",
    "view_made_under_no_grad": X + "with torch.no_grad():\n    v = x[0]\nv.mul_(2)\n",
    "view_of_non_leaf_made_under_no_grad": X + "b = x * 1\nwith torch.no_grad():\n    v = b[0]\nv.mul_(2)\n",
    "no_grad_view_of_changed_base": X + "b = x * 1\nwith torch.no_grad():\n    v = b[0]\nb.mul_(2)\nv.grad_fn\n",
    "expanded_write": X + "b = x * 1\nb.expand(2, 2, 3).mul_(2)\n",
    "expanded_write_no_grad": "torch.ones(3).expand(2, 3).add_(1)\n",
    "not_viewable": "torch.ones(2, 3).t().view(6)\n",
    "not_viewable_grad": X + "x.t().view(-1)\n",
    "saved_base_changed": X + "b = x * 1\ny = b * b\nb[0] = 1.\ny.sum().backward()\n",
    "detach_view_in_place": X + "x[0].detach_()\n",
    "assign_string": X + "x.detach()[0] = 'a'\n",
    "assign_list": X + "x.detach()[0] = [1., 2.]\n",
    "assign_wrong_shape": X + "x.detach()[0] = torch.ones(2)\n",
    "assign_wrong_slice": X + "x.detach()[0, :2] = torch.ones(3)\n",
    "assign_out_of_bounds": X + "x.detach()[5] = 1\n",
    "assign_index_out_of_bounds": X + "x.detach()[[5]] = 1\n",
    "index_put_shape": "torch.ones(2, 3).index_put_((torch.tensor([0]),), torch.ones(2))\n",
    "read_out_of_bounds": X + "x[5]\n",
    "read_out_of_bounds_second": X + "x[0, 5]\n",
    "read_out_of_bounds_after_none": X + "x[None, 0, 5]\n",
    "read_index_out_of_bounds": X + "x[torch.tensor([0, 5])]\n",
    "read_column_out_of_bounds": X + "x[:, torch.tensor([0, 3])]\n",
    "read_float": X + "x[1.5]\n",
    "read_float_tensor": X + "x[torch.tensor([0.5])]\n",
    "read_too_many": X + "x[0, 0, 0]\n",
    "read_mask_shape": X + "x[torch.tensor([True, False, True])]\n",
    "read_negative_step": X + "x[::-1]\n",
    "read_0d": "torch.tensor(3.)[0]\n",
    "read_0d_other": "torch.tensor(3.)[1]\n",
    "slice_0d": "torch.tensor(3.)[:]\n",
}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_indexing_errors_match_torch(name, backend):
    assert_same_error(ERRORS[name], backend)
