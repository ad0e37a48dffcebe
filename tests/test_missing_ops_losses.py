"""Losses and functional names (``gradviz/ops/losses_more.py``) against PyTorch 2.13 itself:
``margin_ranking_loss``, ``hinge_embedding_loss``, ``soft_margin_loss``, ``poisson_nll_loss``, ``gaussian_nll_loss``,
``triplet_margin_loss`` (functions and nn modules), F's in-place activations, and the ``torch.*`` names of
functional forms. Each snippet runs in both libraries (numpy and torch backends); values, dtypes, grads, the whole
``grad_fn`` graph and the printed text must agree, and so must the errors.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

import gradviz  # noqa: E402
import gradviz.nn.functional as F  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

ABN = ("a = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]], requires_grad=True)\n"
       "b = torch.tensor([[1.0, 0.5, -2.0], [0.1, 0.4, 0.3]], requires_grad=True)\n"
       "n = torch.tensor([[0.2, 0.1, -1.0], [1.0, -0.4, 0.8]], requires_grad=True)\n"
       "t = torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]])\n")

CASES = {
    "margin_ranking_loss": ABN + weighted_backward("F.margin_ranking_loss(a, b, t) + F.margin_ranking_loss(a, b, t, "
                                                   "margin=0.5, reduction='none') + F.margin_ranking_loss(a[0], b[0], "
                                                   "t[0], reduction='sum')") + "print(y)\n",
    "hinge_embedding_loss": ABN + weighted_backward("F.hinge_embedding_loss(a, t) + F.hinge_embedding_loss(a, t, "
                                                    "margin=0.5, reduction='none')") + "print(y)\n",
    "soft_margin_loss": ABN + weighted_backward("F.soft_margin_loss(a, t) + F.soft_margin_loss(a, t, reduction='none')"
                                                " + F.soft_margin_loss(a, t, reduction='sum')") + "print(y)\n",
    "poisson_nll_loss": ABN + weighted_backward("F.poisson_nll_loss(a, b.detach().abs()) + F.poisson_nll_loss(a.abs(), "
                                                "b.detach().abs() * 3, log_input=False, full=True, reduction='none')")
    + "print(y)\n",
    "gaussian_nll_loss": ABN + weighted_backward("F.gaussian_nll_loss(a, b, n.abs()) + F.gaussian_nll_loss(a, b, "
                                                 "n[:, :1].abs(), full=True, reduction='none') + "
                                                 "F.gaussian_nll_loss(a, b, n[:, 0].abs(), reduction='sum') + "
                                                 "F.gaussian_nll_loss(a, b, 0.5)") + "print(y)\n",
    "triplet_margin_loss": ABN + weighted_backward("F.triplet_margin_loss(a, b, n) + F.triplet_margin_loss(a, b, n, "
                                                   "margin=2.0, p=1, swap=True, reduction='none')") + "print(y)\n",
    "legacy_reduction_arguments": ABN + "y = F.margin_ranking_loss(a, b, t, size_average=False)\n"
    "z = F.soft_margin_loss(a, t, reduce=False)\nprint(y, z)\n",
    "loss_modules": ABN + "m = [torch.nn.MarginRankingLoss(0.2), torch.nn.HingeEmbeddingLoss(0.5, reduction='sum'), "
    "torch.nn.SoftMarginLoss(), torch.nn.PoissonNLLLoss(log_input=False, full=True), "
    "torch.nn.GaussianNLLLoss(full=True, eps=1e-3), torch.nn.TripletMarginLoss(margin=0.5, p=3, swap=True)]\n"
    "ys = [m[0](a, b, t), m[1](a, t), m[2](a, t), m[3](a.abs(), b.detach().abs()), m[4](a, b, n.abs()), m[5](a, b, n)]\n"
    "sum(ys).backward()\nprint(m, ys, m[3].log_input, m[3].full, m[3].eps, m[4].eps, m[5].margin, m[5].p, m[5].swap, "
    "m[5].eps)\n",
    "in_place_activations": ABN + "c = a * 1\nF.relu_(c)\nd = a * 1\nF.elu_(d, 0.5)\ne = a * 1\nF.selu_(e)\nf = a * 1\n"
    "F.celu_(f)\ng = a * 1\nF.leaky_relu_(g, 0.2)\nh = a * 1\nF.hardtanh_(h, -0.5, 0.5)\n"
    "(c + d + e + f + g + h).sum().backward()\nprint(c, d, e, f, g, h)\n",
    "tensor_methods": ABN + "w = torch.tensor([0.25], requires_grad=True)\ny = a.hardshrink(0.4) + a.hardshrink() + "
    "a.prelu(w)\n(y * torch.arange(6.0).reshape(2, 3)).sum().backward()\nprint(y)\n",
    "torch_names": ABN + "w = torch.tensor([0.25], requires_grad=True)\n"
    "ys = [torch.selu(a), torch.celu(a, 0.5), torch.threshold(a, 0.1, 2.0), torch.rrelu(a), torch.hardshrink(a, 0.4), "
    "torch.prelu(a, w), torch.cosine_similarity(a, b), torch.pairwise_distance(a, b), "
    "torch.margin_ranking_loss(a, b, t, 0.0, 1), torch.hinge_embedding_loss(a, t, 1.0, 2), "
    "torch.poisson_nll_loss(a, b.detach().abs(), True, False, 1e-8, 0), "
    "torch.triplet_margin_loss(a, b, n, 1.0, 2, 1e-6, False, 1), torch.dropout(a, 0.0, False), "
    "torch.layer_norm(a, [3])]\n"
    "sum(y.sum() for y in ys).backward()\nc = a.detach().clone()\ntorch.selu_(c)\nd = a.detach().clone()\n"
    "torch.celu_(d)\ne = a.detach().clone()\ntorch.threshold_(e, 0.0, 5.0)\nf = a.detach().clone()\ntorch.rrelu_(f)\n"
    "print(ys, c, d, e, f)\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_losses_match_torch(name, backend):
    assert_same(CASES[name], backend=backend)


def test_torch_batch_norm_name_matches_torch():
    """``torch.batch_norm``'s top-level signature (numpy backend: ``F.batch_norm`` itself fails on the torch
    backend in training, a bug outside these ops)."""
    assert_same(ABN + "rm = torch.zeros(3)\nrv = torch.ones(3)\n"
                "y = torch.batch_norm(a, None, None, rm, rv, True, 0.1, 1e-5, True)\n"
                "z = torch.batch_norm(a, n[0], b[0], rm, rv, False, 0.1, 1e-5, True)\n(y.sum() + (z * z).sum()).backward()\n"
                "print(y, z, rm, rv)\n")


ERRORS = [
    ABN + "F.margin_ranking_loss(a, b[0], t)",
    ABN + "F.margin_ranking_loss(a, b, t, reduction='foo')",
    ABN + "F.triplet_margin_loss(a, b, n, margin=0)",
    ABN + "F.triplet_margin_loss(a, b, n[0])",
    ABN + "F.gaussian_nll_loss(a, b, -n.abs())",
    ABN + "F.gaussian_nll_loss(a, b, n[0])",
    ABN + "F.gaussian_nll_loss(a, b, n.abs(), reduction='foo')",
    ABN + "F.gaussian_nll_loss(a, b, -0.5)",
    ABN + "F.poisson_nll_loss(a, b, reduction='x')",
    ABN + "F.soft_margin_loss(a, b)",
    ABN + "F.soft_margin_loss(a, t[0, :2])",
    ABN + "F.hinge_embedding_loss(a, t, reduction='bad')",
    "torch.nn.TripletMarginLoss(margin=0)",
    ABN + "torch.margin_ranking_loss(a, a, a, reduction='mean')",
]


@pytest.mark.parametrize("code", ERRORS)
def test_losses_errors_match_torch(code):
    assert_same_error(code + "\n")


def test_losses_gradcheck():
    from gradviz.autograd import gradcheck, gradgradcheck

    def tensor(rows):
        return gradviz.tensor(rows, dtype=gradviz.float64, requires_grad=True)

    a = tensor([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]])
    b = tensor([[1.0, 0.5, -2.0], [0.1, 0.4, 0.3]])
    n = tensor([[0.2, 0.1, -1.0], [1.0, -0.4, 0.8]])
    t = gradviz.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]], dtype=gradviz.float64)
    assert gradcheck(lambda p, q: F.margin_ranking_loss(p, q, t, margin=0.3, reduction="none"), (a, b))
    assert gradcheck(lambda p: F.hinge_embedding_loss(p, t, margin=0.7, reduction="none"), (a,))
    assert gradcheck(lambda p: F.soft_margin_loss(p, t), (a,))
    assert gradcheck(lambda p: F.poisson_nll_loss(p, b.detach().abs(), reduction="sum"), (a,))
    assert gradgradcheck(lambda p, q, v: F.gaussian_nll_loss(p, q, v.abs() + 0.1), (a, b, n))
    assert gradgradcheck(lambda p, q, r: F.triplet_margin_loss(p, q, r, margin=2.0), (a, b, n))
