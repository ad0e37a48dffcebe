"""``logaddexp``, ``logaddexp2``, ``addcdiv``, ``xlogy``, ``sinc``, ``deg2rad``/``rad2deg``, ``heaviside``, ``logit(eps)``
and ``torch.special`` against PyTorch 2.13 (values, dtypes, graphs with saved values, grads, text, errors)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, run_both, assert_values, weighted_backward  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.0, -0.7]], requires_grad=True)\n"
Y = "y = torch.tensor([[0.4, 0.8, -1.1], [1.0, 2.0, 0.3]], requires_grad=True)\n"
P = "p = torch.tensor([[0.25, 0.5, 0.75], [0.1, 0.0, 0.4]], requires_grad=True)\n"
Q = "q = torch.tensor([[1.5, 0.5, 3.0], [0.2, 2.0, 0.0]], requires_grad=True)\n"

CASES = {
    "logaddexp": X + Y + weighted_backward("torch.logaddexp(x, y)") + "print(y)\n",
    "logaddexp_broadcast_inf": "a = torch.tensor([[-float('inf'), 1e3], [2.0, float('inf')]], requires_grad=True)\n"
                               "b = torch.tensor([-float('inf'), 3.0], requires_grad=True)\n"
                               "out = a.logaddexp(b)\nprint(out)\n",
    "logaddexp2": X + Y + weighted_backward("x.logaddexp2(y)") + "print(y)\n",
    "addcdiv": X + Y + Q + weighted_backward("torch.addcdiv(x, y, q + 1, value=0.5)"),
    "addcdiv_method_broadcast": X + Y + weighted_backward("x.addcdiv(y, y[0] + 3)"),
    "addcdiv_in_place": X + Y + "z = x * 1\nz.addcdiv_(y, y + 3, value=-2)\nz.sum().backward()\n",
    "xlogy": P + Q + weighted_backward("torch.xlogy(p, q)"),
    "xlogy_number_first": Q + weighted_backward("torch.xlogy(2.0, q + 1)"),
    "xlogy_number_second": P + weighted_backward("p.xlogy(3)"),
    "xlogy_zero_other": P + weighted_backward("torch.xlogy(p, 0.0)"),
    "xlogy_in_place": P + Q + "z = p * 1\nz.xlogy_(q + 1)\nz.sum().backward()\n",
    "xlog1py": P + Q + weighted_backward("torch.special.xlog1py(p, q - 1)"),
    "xlog1py_numbers": P + Q + weighted_backward("torch.special.xlog1py(2, q) + torch.special.xlog1py(p, -1)"
                                                 " + torch.special.xlog1py(p, 0.5)"),
    "sinc": X + weighted_backward("x.sinc()") + "print(y)\n",
    "deg2rad": X + weighted_backward("torch.deg2rad(x) + x.rad2deg()") + "print(y)\n",
    "deg2rad_int_bool": "i = torch.tensor([90, 180])\na = i.deg2rad()\nb = torch.rad2deg(i)\nc = torch.tensor([True, False]).deg2rad()\n"
                        "print(a, b, c)\n",
    "heaviside": "x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)\nv = torch.tensor([0.5])\n"
                 "h = torch.heaviside(x, v)\nprint(h, h.grad_fn.name())\n",
    "heaviside_int": "i = torch.tensor([-2, 0, 3])\nh = i.heaviside(torch.tensor([7]))\nprint(h)\n",
    "logit_eps": P + weighted_backward("p.logit(0.2)") + "print(y)\n",
    "logit_eps_fn": P + weighted_backward("torch.logit(p, eps=1e-6)"),
    "special_aliases": P + weighted_backward(
        "torch.special.expit(p) + torch.special.logit(p + 0.05) + torch.special.log1p(p) + torch.special.expm1(p)"
        " + torch.special.exp2(p) + torch.special.sinc(p) + torch.special.erf(p) + torch.special.xlogy(p, p + 1)"),
    "special_reductions": X + weighted_backward("torch.special.logsumexp(x, 1) + torch.special.softmax(x, 1)[:, 0]"
                                                " + torch.special.log_softmax(x, 0)[:, 0]"),
    "special_erfc": X + weighted_backward("torch.special.erfc(x) + x.erfc()"),
    "special_erfinv": P + weighted_backward("torch.special.erfinv(p * 1.2 - 0.5) + (p - 0.2).erfinv()"),
    "special_gamma": Q + weighted_backward("torch.special.gammaln(q + 0.5) + torch.lgamma(q - 1.7) + (q + 1).digamma()"
                                           " + torch.special.psi(q + 2)"),
    "special_entr": P + weighted_backward("torch.special.entr(p)") + "print(torch.special.entr(torch.tensor([-1.0, 0.0])))\n",
    "special_ndtr": X + weighted_backward("torch.special.ndtr(x)"),
    "special_i0": X + weighted_backward("torch.special.i0(x * 3) + x.i0() + torch.i0(x * 30)")
                  + "print(torch.tensor([1, 2]).i0(), y)\n",
    "poles": "x = torch.tensor([0.0, -1.0, -2.5, float('inf'), -float('inf'), float('nan')])\n"
             "a = x.lgamma()\nb = torch.digamma(x)\nc = torch.erfinv(torch.tensor([1.0, -1.0, 1.5, 0.0]))\nprint(a, b, c)\n",
}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_special_math_matches_torch(name, backend):
    assert_same(CASES[name], backend)


ERRORS = {
    "logaddexp_number": "torch.logaddexp(torch.tensor([1.0]), 2.0)",
    "addcdiv_integers": "torch.addcdiv(torch.tensor([1]), torch.tensor([1]), torch.tensor([2]))",
    "heaviside_dtypes": "torch.heaviside(torch.tensor([1.0]), torch.tensor([1]))",
    "heaviside_backward": "x = torch.tensor([1.0, -2.0], requires_grad=True)\nx.heaviside(torch.tensor([0.5])).sum().backward()",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_special_math_errors_match_torch(name):
    assert_same_error(ERRORS[name])


SECOND_ORDER = {
    "logaddexp": X + Y + "g, = torch.autograd.grad(torch.logaddexp(x, y).sum(), x, create_graph=True)\n(g * y).sum().backward()\n",
    "addcdiv": X + Y + "g, = torch.autograd.grad((x.addcdiv(y, y + 3) ** 2).sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    "xlogy": Y + "x = torch.tensor([[0.5, 1.5], [2.0, 0.7]], requires_grad=True)\n"
             "g, = torch.autograd.grad(torch.xlogy(x, x + 1).sum(), x, create_graph=True)\ng.sum().backward()\n",
    "sinc": X + "g, = torch.autograd.grad(x.sinc().sum(), x, create_graph=True)\n(g * g).sum().backward()\n",
    "erfc_erfinv_lgamma": "x = torch.tensor([0.3, -0.6, 0.8], requires_grad=True)\n"
                          "g, = torch.autograd.grad((x.erfc() + x.erfinv() + (x + 2).lgamma()).sum(), x, create_graph=True)\n"
                          "g.sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_values_match_torch(name):
    (scope_t, _), (scope_g, _) = run_both(SECOND_ORDER[name])
    assert_values(scope_t["g"], scope_g["g"], "g")
    assert_values(scope_t["x"].grad, scope_g["x"].grad, "x.grad")


def test_heaviside_node_prints_and_points_like_torchs():
    ours = gv.tensor([1.0, -2.0], requires_grad=True).heaviside(gv.tensor([0.5]))
    theirs = torch.tensor([1.0, -2.0], requires_grad=True).heaviside(torch.tensor([0.5]))
    assert repr(ours) == repr(theirs)
    assert repr(ours.grad_fn).split(" at ")[0] == repr(theirs.grad_fn).split(" at ")[0]
    assert type(ours.grad_fn).__module__ == type(theirs.grad_fn).__module__
    assert len(ours.grad_fn.next_functions) == len(theirs.grad_fn.next_functions) == 1


def test_special_functions_in_float32_within_a_few_ulps_of_torch():
    rng = np.random.default_rng(3)
    inside = rng.uniform(-0.999, 0.999, 500).astype(np.float32)
    positive = rng.uniform(0.05, 30, 500).astype(np.float32)
    for name, data in (("erfinv", inside), ("erfc", inside * 4), ("lgamma", positive), ("digamma", positive),
                       ("i0", inside * 20)):
        ours = getattr(gv.tensor(data), name)().numpy()
        theirs = getattr(torch.tensor(data), name)().numpy()
        np.testing.assert_allclose(ours, theirs, rtol=4e-6, atol=4e-6, err_msg=name)
