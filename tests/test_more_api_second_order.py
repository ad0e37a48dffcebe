"""Second order through the ops of ops/order_statistics, summaries, special_math and lookups: ``create_graph=True`` records the backward pass, and the recorded graph
(node names, ``next_functions``, saved values) and the second backward's gradients are torch's, compared with
``assert_same``. (addcdiv's wrapped number reads back as None instead of torch's freed-tensor error after backward:
it is checked in its own file by value.)"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
Y = "y = torch.tensor([[0.4, 0.8, -1.1], [1.0, 2.0, 0.3]], requires_grad=True)\n"
P = "p = torch.tensor([[0.25, 0.5, 0.75], [0.1, 0.9, 0.4]], requires_grad=True)\n"
GRAPHS = {
    'logaddexp': X + Y + "g, = torch.autograd.grad(torch.logaddexp(x, y).sum(), x, create_graph=True)\n(g * y).sum().backward()\n",
    'logaddexp_both': X + Y + "g = torch.autograd.grad(torch.logaddexp(x, y).sum(), (x, y), create_graph=True)\n(g[0] * g[1]).sum().backward()\n",
    'logaddexp2': X + Y + "g, = torch.autograd.grad(torch.logaddexp2(x, y).sum(), x, create_graph=True)\n(g * y).sum().backward()\n",
    'xlogy': P + Y + "g = torch.autograd.grad(torch.xlogy(p, y.abs()).sum(), (p, y), create_graph=True)\n(g[0] + g[1]).sum().backward()\n",
    'xlog1py': P + Y + "g = torch.autograd.grad(torch.special.xlog1py(p, y.abs()).sum(), (p, y), create_graph=True)\n"
               "(g[0] + g[1]).sum().backward()\n",
    'xlog1py1': P + "g, = torch.autograd.grad(torch.special.xlog1py(3.0, p).sum(), p, create_graph=True)\ng.sum().backward()\n",
    'xlogy1': P + "g, = torch.autograd.grad(torch.xlogy(3.0, p).sum(), p, create_graph=True)\ng.sum().backward()\n",
    'sinc': X + "g, = torch.autograd.grad(x.sinc().sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'deg2rad': X + "g, = torch.autograd.grad((x.deg2rad() ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'erfc': X + "g, = torch.autograd.grad((x.erfc()).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'erfinv': P + "g, = torch.autograd.grad((p.erfinv()).sum(), p, create_graph=True)\n(g * g).sum().backward()\n",
    'lgamma': P + "g, = torch.autograd.grad((p.lgamma()).sum(), p, create_graph=True)\n(g * g).sum().backward()\n",
    'entr': P + "g, = torch.autograd.grad(torch.special.entr(p).sum(), p, create_graph=True)\n(g * g).sum().backward()\n",
    'kthvalue': X + "g, = torch.autograd.grad((x.kthvalue(2).values ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'median': X + "g, = torch.autograd.grad((x.median() ** 2), x, create_graph=True)\n(g * g).sum().backward()\n",
    'median_dim': X + "g, = torch.autograd.grad((x.median(1).values ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'cummax': X + "g, = torch.autograd.grad((x.cummax(1).values ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'nansum': X + "g, = torch.autograd.grad((x.nansum(1) ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'var_mean': X + "v, m = torch.var_mean(x, 1)\ng, = torch.autograd.grad((v * m).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'aminmax': X + "lo, hi = x.aminmax(dim=0)\ng, = torch.autograd.grad((lo * hi).sum(), x, create_graph=True)\n(g * x).sum().backward()\n",
    'index_fill': X + "g, = torch.autograd.grad((x.index_fill(1, torch.tensor([1]), 2.0) ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    'logit_eps': "p = torch.tensor([0.05, 0.5, 0.97], requires_grad=True)\n"
                 "g, = torch.autograd.grad((p.logit(0.1) ** 2).sum(), p, create_graph=True)\ng.sum().backward()\n",
    'take': X + "g, = torch.autograd.grad((x.take(torch.tensor([0, 5, 5])) ** 3).sum(), x, create_graph=True)\n"
            "g.sum().backward()\n",
    'put': X + Y + "g = torch.autograd.grad((x.put(torch.tensor([4, 0]), y[0, :2] ** 2) ** 2).sum(), (x, y), "
                   "create_graph=True)\n(g[0].sum() * g[1]).sum().backward()\n",
    'index_copy': X + Y + "g = torch.autograd.grad((x.index_copy(0, torch.tensor([1]), y[:1] ** 2) ** 2).sum(), (x, y), create_graph=True)\n(g[0] * g[1].sum()).sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_recorded_backward_matches_torch(name):
    assert_same(GRAPHS[name])
