"""Every function of ops/order_statistics, summaries, special_math, lookups and searching on tensors that need no gradient (and under ``no_grad``): nothing is recorded, so the
forward must not lean on what a recording node keeps. Values, dtypes and text against PyTorch 2.13."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0, 0.1], [1.2, 0.3, -0.7, 0.9], [0.2, 1.1, -0.4, 0.6]])\n"
EXPRESSIONS = [
    "x.kthvalue(2, 1)", "x.median()", "x.median(0)", "x.nanmedian(1)", "x.nanmedian()", "x.mode(0)", "x.cummax(1)",
    "x.cummin(0)", "torch.std_mean(x, 1)", "torch.var_mean(x)", "torch.var_mean(x, 0, keepdim=True)", "x.aminmax()",
    "x.aminmax(dim=0)", "x.nansum(0)", "x.nanmean()", "x.logcumsumexp(1)", "torch.logaddexp(x, x[0])",
    "x.logaddexp2(x)", "x.addcdiv(x, x + 3)", "torch.xlogy(x.abs(), x + 2)", "torch.xlogy(2, x.abs())",
    "x.xlogy(2)", "x.sinc()", "x.deg2rad()", "x.rad2deg()", "x.heaviside(torch.tensor([0.5]))", "(x.abs() / 3).logit(0.1)",
    "x.take(torch.tensor([1, -1]))", "torch.take_along_dim(x, torch.tensor([[1], [0], [3]]), 1)",
    "x.index_fill(0, torch.tensor([1]), 2.0)", "x.index_copy(1, torch.tensor([0]), torch.ones(3, 1))", "x.erfc()",
    "(x / 3).erfinv()", "x.abs().lgamma()", "(x.abs() + 0.5).digamma()", "torch.special.entr(x.abs())",
    "torch.special.ndtr(x)", "torch.unique(x.round())", "torch.histc(x, bins=3)",
]
CASES = {expression: X + f"out = {expression}\nprint(out)\n" for expression in EXPRESSIONS}


@pytest.mark.parametrize("backend", ("numpy", "torch"))
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_without_gradients_matches_torch(expression, backend):
    assert_same(CASES[expression], backend)


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_under_no_grad_matches_torch(expression):
    assert_same(X.replace("])\n", "], requires_grad=True)\n") + "with torch.no_grad():\n"
                f"    out = {expression}\nprint(out)\n")
