"""A forward-mode AD sweep: for each op a learner may meet (elementwise math, special functions, activations,
losses, reductions, linear algebra, indexing), the tangent gradviz computes (written rule or the double-vjp
fallback, whose backward formulas are read at u = 0) against the tangent PyTorch 2.13 computes from its own forward
formulas, on random inputs in every op's domain: the same values and dtype, or the same error (``special_zeta``,
``igamma``, ``igammac`` have no forward formula in torch). Also ``clamp`` with tensor bounds and ``cross``, whose
forward failed when nothing was recorded."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402


pytestmark = pytest.mark.usefixtures("no_dual_level_left")


EXPRESSIONS = [
    'torch.log1p(d)', 'F.logsigmoid(d)', 'torch.special.entr(d)', 'torch.special.erfcx(d)', 'torch.special.i0e(d)',
    'torch.special.i1(d)', 'torch.special.i1e(d)', 'torch.special.log_ndtr(d)', 'torch.special.ndtri(d)',
    'torch.special.xlog1py(d, q)', 'torch.special.xlog1py(q, d)', 'torch.special.zeta(d + 2, q)', 'torch.deg2rad(d)',
    'torch.rad2deg(d)', 'd.cumsum(1)', 'd.cumprod(1)', 'd.logsumexp(1)', 'd.logcumsumexp(0)',
    'torch.polygamma(1, d)', 'torch.mvlgamma(d + 2, 2)', 'torch.igamma(d, q)', 'torch.igammac(q, d)',
    'torch.lerp(d, q, 0.3)', 'torch.addcdiv(d, q, q + 1, value=0.5)', 'torch.addcmul(d, d, q)',
    'torch.linalg.vector_norm(d)', 'torch.linalg.vector_norm(d, 1, dim=1)', 'd.norm()', 'd.kthvalue(2, 1)[0]',
    'd.topk(2)[0]', 'd.cummax(1)[0]', 'd.cummin(0)[0]', 'd.prod()', 'd.prod(1)', 'd.std()', 'd.var(1)', 'd.median()',
    'd.amax(1)', 'd.max()', 'd.min(1)[0]', 'F.hardsigmoid(d - 0.5)', 'F.hardswish(d * 5)', 'F.hardtanh(d * 3 - 1)',
    'F.elu(d - 0.5)', 'F.celu(d - 0.5)', 'F.selu(d - 0.5)', 'F.softplus(d)', 'F.mish(d)', 'F.huber_loss(d, q)',
    'F.smooth_l1_loss(d, q)', 'F.l1_loss(d, q)', 'F.binary_cross_entropy(d, q)',
    'F.binary_cross_entropy_with_logits(d, q)', "F.kl_div(d.log(), q, reduction='batchmean')",
    'F.nll_loss(d, torch.tensor([1, 0, 3]))', 'F.cross_entropy(d, torch.tensor([1, 0, 3]))', 'F.mse_loss(d, q)',
    'd.clamp_min(0.4)', 'd.clamp_max(0.4)', 'd.clamp(0.3, 0.6)', 'torch.clamp_min(d, q)', 'd.clamp(min=q)',
    'torch.where(d > 0.5, d, q)', 'torch.linalg.det(d[:, :3])', 'torch.linalg.inv(d[:, :3] + 2 * torch.eye(3))',
    'torch.linalg.slogdet(d[:, :3] + torch.eye(3))[1]',
    'torch.linalg.cholesky(d[:, :3] @ d[:, :3].T + torch.eye(3))', 'torch.linalg.eigh(d[:, :3] + d[:, :3].T)[0]',
    'torch.linalg.svdvals(d)', 'torch.linalg.qr(d.T)[1]', 'torch.linalg.pinv(d)',
    'torch.linalg.matrix_exp(d[:, :3])', 'torch.linalg.solve(d[:, :3] + torch.eye(3), q[:, :2])',
    'torch.logaddexp(d, q)', 'torch.atan2(d, q)', 'torch.hypot(d, q)', 'torch.fmod(d, 0.3)',
    'torch.remainder(d, 0.3)', 'd.pow(q)', 'q.pow(d)', '2 ** d', 'torch.sinc(d)', 'torch.logit(d)',
    'torch.erfinv(d - 0.5)', 'torch.lgamma(d)', 'torch.digamma(d)', 'd.reciprocal()', 'd.rsqrt()', 'd.sqrt()',
    'd.abs()', 'd.sign()', 'd.frac()', 'torch.nan_to_num(d)', 'd.asin()', 'd.acos()', 'd.atan()', 'd.sinh()',
    'd.cosh()', 'd.exp2()', 'd.expm1()', 'd.log2()', 'd.log10()', 'torch.xlogy(d, q)', 'torch.special.xlogy(q, d)',
    'F.gelu(d)', "F.gelu(d, approximate='tanh')", 'F.silu(d)', 'F.leaky_relu(d - 0.5, 0.1)', 'F.relu6(d * 8)',
    'F.softsign(d)', 'F.tanhshrink(d)', 'F.normalize(d)', 'F.layer_norm(d, (4,))',
    'F.prelu(d - 0.5, torch.tensor([0.2]))', 'F.logsigmoid(-d)', 'F.cosine_similarity(d, q)',
    "F.pad(d, (1, 1), mode='reflect')", 'F.embedding(torch.tensor([0, 2]), d)', 'torch.trace(d)', 'torch.diag(d)',
    'd.tril()', 'torch.kron(d, q)', 'torch.cross(d[:, :3], q[:, :3], dim=1)', 'torch.outer(d[0], q[0])',
    "torch.einsum('ij,kj->ik', d, q)", 'd.unfold(1, 2, 1)', 'd.roll(1, 0)', 'd.flip(0)', 'd.repeat(2, 1)',
    'd.gather(1, torch.tensor([[0], [1], [2]]))', 'd.take(torch.tensor([0, 5]))',
    'd.index_select(0, torch.tensor([2, 0]))', 'd.masked_fill(q > 0.5, 0.)', 'd.nansum()', 'd.nanmean()',
    'd.diff(dim=1)', 'd.sum()', 'torch.special.log_softmax(d, 1)', 'torch.special.softmax(d, 0)',
    'd.log_softmax(1).exp()', 'F.softmin(d, 1)',
]

_rng = np.random.default_rng(1)
PRIMAL = _rng.uniform(0.15, 0.85, (3, 4)).astype(np.float32)
TANGENT = _rng.normal(size=(3, 4)).astype(np.float32)
OTHER = _rng.uniform(0.15, 0.85, (3, 4)).astype(np.float32)


def _tangent(library, expression: str, backend: str = "numpy"):
    from gradviz import backends

    fwAD = library.autograd.forward_ad
    try:
        with backends.using(backend), fwAD.dual_level():
            scope = {"torch": library, "F": library.nn.functional, "q": library.tensor(OTHER)}
            scope["d"] = fwAD.make_dual(library.tensor(PRIMAL), library.tensor(TANGENT))
            return fwAD.unpack_dual(eval(expression, scope)).tangent, None
    except Exception as error:  # noqa: BLE001 - compared with what torch raises
        return None, error


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_tangent_matches_torch(expression, backend):
    import gradviz
    import torch

    expected, error_t = _tangent(torch, expression)
    actual, error_g = _tangent(gradviz, expression, backend)
    if error_t is not None or error_g is not None:
        assert type(error_g) is type(error_t) and str(error_g) == str(error_t), (error_g, error_t)
        return
    if expected is None:
        assert actual is None
        return
    assert str(actual.dtype) == str(expected.dtype) and tuple(actual.shape) == tuple(expected.shape)
    np.testing.assert_allclose(actual.detach().cpu().numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("line", ["torch.clamp_min(a, b)", "torch.clamp_max(a, b)", "a.clamp(min=b)", "a.clamp(max=b)",
                                  "a.clamp(b, b + 0.2)", "torch.cross(a, b, dim=1)", "torch.linalg.cross(a, b)"])
def test_tensor_bounds_and_cross_without_recording(line):
    assert_same("a = torch.tensor([[0.5, 0.2, 0.9], [0.1, 0.7, 0.3]])\nb = torch.tensor([[0.4, 0.4, 0.4], [0.2, 0.2, 0.2]])\n"
                f"y = {line}\nprint(y)\n")
