"""The nn pieces tutorials reach for beyond the lessons, against PyTorch 2.13: activations, losses,
containers, Embedding, LayerNorm and the functional helpers. Each case runs the same lines in both
libraries (``tests/parity.py``) and compares values, grads, the whole grad_fn graph and printed text."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
TARGETS = ("t = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)\n"
           "c = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])\n")


def weighted(expression: str) -> str:
    """``y = expression``, then a backward pass that gives every element of ``y`` its own gradient."""
    return f"y = {expression}\n(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\n"


ACTIVATIONS = [
    "F.leaky_relu(x)", "F.leaky_relu(x, 0.2)", "F.gelu(x)", "F.gelu(x, approximate='tanh')", "F.silu(x)", "F.elu(x)",
    "F.elu(x, 0.5)", "F.softplus(x)", "F.softplus(x, beta=2, threshold=1)", "F.relu6(x * 4)", "F.hardtanh(x)",
    "F.hardtanh(x, -0.5, 0.5)", "torch.nn.ReLU6()(x * 4)", "torch.nn.Softplus()(x)", "torch.nn.GELU('tanh')(x)",
    "torch.nn.LeakyReLU(0.3)(x)", "torch.nn.SiLU()(x)", "torch.nn.ELU(alpha=0.3)(x)", "torch.nn.Hardtanh(-2, 0.5)(x)",
]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("expression", ACTIVATIONS)
def test_activations_match_torch(expression, backend):
    assert_same(X + weighted(expression), backend=backend)


LOSSES = [
    "F.l1_loss(x, c)", "F.l1_loss(x, t, reduction='sum')", "F.l1_loss(x, c, reduction='none')", "F.l1_loss(x, c, weight=c)",
    "F.smooth_l1_loss(x, c)", "F.smooth_l1_loss(x, t, beta=0.5, reduction='sum')", "F.smooth_l1_loss(x, c, beta=0.0)",
    "F.smooth_l1_loss(x, t, reduction='none')", "F.huber_loss(x, c)", "F.huber_loss(x, t, delta=0.5, reduction='none')",
    "F.huber_loss(x, c, weight=c)", "F.kl_div(x, c, reduction='batchmean')", "F.kl_div(x, c)",
    "F.kl_div(x, c, reduction='none', log_target=True)", "F.kl_div(x, c, reduction='sum')",
    "F.kl_div(x, t, reduction='batchmean', log_target=True)", "torch.nn.BCELoss()(x.sigmoid(), c)",
    "torch.nn.BCELoss(weight=c, reduction='sum')(x.sigmoid(), c)", "torch.nn.L1Loss()(x, c)",
    "torch.nn.SmoothL1Loss(beta=2.0)(x, t)", "torch.nn.HuberLoss(delta=0.7)(x, c)",
    "torch.nn.KLDivLoss(reduction='batchmean')(x.log_softmax(1), c)", "F.l1_loss(x, c[0])", "F.smooth_l1_loss(x[:1], c)",
]


@pytest.mark.parametrize("expression", LOSSES)
def test_losses_match_torch(expression):
    assert_same(X + TARGETS + weighted(expression))


def test_integer_hardtanh_and_relu6_stay_integer_like_torch():
    assert_same("i = torch.tensor([1, -2, 3])\ny = F.hardtanh(i)\nz = F.relu6(i * 4)\n")


ERRORS = [
    "F.leaky_relu(i)", "F.gelu(i)", "F.silu(i)", "F.elu(i)", "F.softplus(i)", "F.gelu(i.float(), approximate='x')",
    "F.hardtanh(i.float(), 2, 1)", "torch.nn.Hardtanh(1, 0)", "F.smooth_l1_loss(i.float(), i.float(), beta=-1.0)",
    "F.huber_loss(i.float(), i.float(), delta=0)", "F.l1_loss(torch.ones(2), torch.ones(3))",
    "torch.nn.HuberLoss(delta='a')", "F.huber_loss(i.float(), i.float(), weight=torch.ones(2))",
]


@pytest.mark.parametrize("expression", ERRORS)
def test_errors_match_torch(expression):
    assert_same_error(f"i = torch.tensor([1, -2, 3])\ny = {expression}\n")


def test_module_reprs_match_torch():
    torch = pytest.importorskip("torch")
    import gradviz

    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.LeakyReLU(), nn.LeakyReLU(0.2, inplace=True), nn.GELU(), nn.GELU("tanh"), nn.SiLU(),
                             nn.SiLU(True), nn.ELU(), nn.ELU(0.5, True), nn.Softplus(), nn.Softplus(2, 10), nn.ReLU6(),
                             nn.ReLU6(True), nn.Hardtanh(), nn.Hardtanh(-2, 2, True), nn.Identity(), nn.BCELoss(),
                             nn.L1Loss(), nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=2.0),
                             nn.KLDivLoss(reduction="batchmean"))

    assert repr(build(gradviz)) == repr(build(torch))
