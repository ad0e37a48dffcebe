"""The last pieces of the tensor API tutorials use: ``split``/``chunk``/``unbind`` (one node, several
outputs, each a view), ``out=``, and torch's errors for operands that are not tensors or numbers."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.arange(1.0, 11.0, requires_grad=True)\nm = torch.arange(1.0, 7.0).reshape(2, 3).requires_grad_()\n"

PROGRAMS = {
    "split": X + "a = x.split(3)\nprint(a, [t.output_nr for t in a], a[0]._base is x)\n(a[0] * 2).sum().backward()\n",
    "split_sizes": X + "a = torch.split(x, [2, 8])\nprint(a[1])\n(a[1] ** 2).sum().backward()\n",
    "split_dim": X + "a = m.split(2, dim=-1)\n(a[0].sum() + a[1].sum() * 3).backward()\n",
    "chunk": X + "a = x.chunk(3)\nprint([t.shape for t in a])\n(a[2] * a[2]).sum().backward()\n",
    "chunk_more_than_size": "x = torch.ones(3, requires_grad=True)\na = x.chunk(5)\nprint(a)\n",
    "unbind": X + "rows = m.unbind()\ncols = torch.unbind(m, 1)\n(rows[0] * cols[2].sum()).sum().backward()\n",
    "all_pieces_used": X + weighted_backward("torch.stack(x.split(5), dim=0)"),
    "add_out": "x = torch.ones(2, 3)\ny = torch.full((2, 3), 2.0)\nresult = torch.empty(2, 3)\n"
               "r = torch.add(x, y, out=result)\nprint(result, r is result)\n",
    "mul_out_resized": "result = torch.empty(0)\ntorch.mul(torch.ones(3), 4, out=result)\nprint(result)\n",
    "matmul_out": "result = torch.empty(2, 2)\ntorch.matmul(torch.ones(2, 3), torch.ones(3, 2), out=result)\n",
    "out_under_no_grad": "w = torch.ones(3, requires_grad=True)\nresult = torch.empty(3)\n"
                         "with torch.no_grad():\n    torch.sub(w, 1, out=result)\nprint(result)\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tutorial_api_matches_torch(name):
    assert_same(PROGRAMS[name])


def test_the_graph_of_a_split_gradient_matches_torch():
    assert_same(X + "a = x.split(3)\ng, = torch.autograd.grad((a[0] * a[0]).sum() + (a[3] ** 3).sum(), x, "
                    "create_graph=True)\ng.sum().backward()\n")


ERRORS = {
    "add_str": "torch.add(torch.ones(3), 'a')\n",
    "add_str_method": "torch.ones(3).add('a')\n",
    "add_str_first": "torch.add('a', torch.ones(3))\n",
    "mul_none": "torch.mul(torch.ones(3), None)\n",
    "sub_list_method": "torch.ones(3).sub([1.0])\n",
    "div_str": "torch.div(torch.ones(3), 'a')\n",
    "matmul_str": "torch.matmul(torch.ones(3), 'a')\n",
    "out_needs_grad": "w = torch.ones(3, requires_grad=True)\ntorch.add(w, w, out=torch.empty(3))\n",
    "out_int": "torch.add(torch.ones(3), 1, out=torch.empty(3, dtype=torch.long))\n",
    "split_sizes_sum": "torch.ones(5).split([2, 2])\n",
    "chunk_zero": "torch.ones(5).chunk(0)\n",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_tutorial_api_errors_match_torch(name):
    assert_same_error(ERRORS[name])
