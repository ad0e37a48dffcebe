"""``std_mean``, ``var_mean``, ``aminmax``, ``nansum``, ``nanmean``, ``logcumsumexp`` against PyTorch 2.13: values,
the two-output nodes (both outputs hang from one node, ``output_nr`` 0 and 1), saved values, grads, text."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0, 0.1], [1.2, 0.3, -0.7, 0.9], [0.2, 1.1, -0.4, 0.6]], requires_grad=True)\n"
TIES = "x = torch.tensor([[2.0, 1.0, 2.0, 1.0], [0.0, 0.0, 3.0, 3.0], [5.0, 5.0, 5.0, 5.0]], requires_grad=True)\n"
NANS = "x = torch.tensor([[1.0, float('nan'), 2.0, 0.5], [float('nan'), 3.0, float('nan'), 3.0]], requires_grad=True)\n"

CASES = {
    "std_mean": X + "s, m = torch.std_mean(x, 1)\n(s * 2 + m * 3).sum().backward()\nprint(s, m)\n",
    "std_mean_all": X + "s, m = torch.std_mean(x)\n(s - m).backward()\nprint(torch.std_mean(x))\n",
    "std_mean_only_std": X + "s, m = torch.std_mean(x, 0, keepdim=True, correction=0)\ns.sum().backward()\n",
    "var_mean": X + "v, m = torch.var_mean(x, -1)\n(v * m).sum().backward()\n",
    "var_mean_only_mean": X + "v, m = torch.var_mean(x, (0, 1), unbiased=False)\nm.backward()\n",
    "var_mean_keepdim": X + "v, m = torch.var_mean(x, 0, keepdim=True)\n(v + m).sum().backward()\n",
    "aminmax": X + "lo, hi = x.aminmax()\n(lo * 2 + hi).backward()\nprint(x.aminmax())\n",
    "aminmax_dim": X + "r = torch.aminmax(x, dim=1)\n(r.min + r.max * 3).sum().backward()\nprint(r)\n",
    "aminmax_ties": TIES + "r = x.aminmax(dim=-1, keepdim=True)\n(r.min * 2 + r.max).sum().backward()\n",
    "aminmax_ties_all": TIES + "lo, hi = x.aminmax()\n(hi * 2 - lo).backward()\n",
    "aminmax_int": "i = torch.tensor([[3, 1], [0, 7]])\nr = i.aminmax(dim=0)\nprint(r)\n",
    "nansum": NANS + weighted_backward("x.nansum(1)") + "print(y, x.nansum())\n",
    "nansum_all_keepdim": NANS + weighted_backward("torch.nansum(x, (0, 1), keepdim=True)"),
    "nansum_int": "i = torch.tensor([[3, 1], [0, 7]], dtype=torch.int32)\na = i.nansum()\nb = i.nansum(0)\nprint(a, b)\n",
    "nanmean": NANS + weighted_backward("x.nanmean(1)") + "print(y)\n",
    "nanmean_all": NANS + weighted_backward("torch.nanmean(x)"),
    "logcumsumexp": X + weighted_backward("x.logcumsumexp(1)") + "print(y)\n",
    "logcumsumexp_dim0": X + weighted_backward("torch.logcumsumexp(x, dim=-2)"),
    "logcumsumexp_inf": "x = torch.tensor([-float('inf'), 0.0, 1000.0, -float('inf')], requires_grad=True)\n"
                        + weighted_backward("x.logcumsumexp(0)"),
}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_summary_matches_torch(name, backend):
    assert_same(CASES[name], backend)


SECOND_ORDER = {
    "var_mean": X + "v, m = torch.var_mean(x, 1)\ng, = torch.autograd.grad((v * m).sum(), x, create_graph=True)\n"
                    "(g * g).sum().backward()\n",
    "std_mean": X + "s, m = torch.std_mean(x)\ng, = torch.autograd.grad(s * m, x, create_graph=True)\n(g ** 2).sum().backward()\n",
    "aminmax": X + "lo, hi = x.aminmax(dim=0)\ng, = torch.autograd.grad((lo * hi).sum(), x, create_graph=True)\n"
                   "(g * x).sum().backward()\n",
    "nansum": NANS + "g, = torch.autograd.grad((x.nansum(1) ** 2).sum(), x, create_graph=True)\ng.nansum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_values_match_torch(name):
    """The gradient of the gradient: values and grads (the recorded graph's shape is gradviz's own here)."""
    from parity import run_both, assert_values

    (scope_t, _), (scope_g, _) = run_both(SECOND_ORDER[name])
    assert_values(scope_t["g"], scope_g["g"], "g")
    assert_values(scope_t["x"].grad, scope_g["x"].grad, "x.grad")


ERRORS = {
    "nanmean_int": "torch.tensor([1, 2]).nanmean()",
    "aminmax_empty": "torch.zeros(0).aminmax()",
    "aminmax_empty_dim": "torch.zeros(2, 0).aminmax(dim=1)",
    "std_mean_int": "torch.std_mean(torch.tensor([1, 2]))",
    "logcumsumexp_int": "torch.tensor([1, 2]).logcumsumexp(0)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_summary_errors_match_torch(name):
    assert_same_error(ERRORS[name])
