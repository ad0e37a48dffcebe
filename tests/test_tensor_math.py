"""The wider tensor API (more math, reductions, orderings, matrices, ``inference_mode``) against PyTorch 2.13.

Each case is a few lines a tutorial might write; ``assert_same`` runs them in torch and in gradviz
and compares every tensor left behind (values, dtype, grads, the grad_fn graph with its saved
values) and the printed text, on the numpy backend and on the torch backend. Second-order cases
record the gradient with ``create_graph=True`` and compare its graph too.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0], [1.2, 0.3, -0.7]], requires_grad=True)\n"
Y = "y = torch.tensor([[0.4, 0.8, -1.1], [1.0, 2.0, 0.3]], requires_grad=True)\n"
P = "p = torch.tensor([[0.25, 0.5, 0.75], [0.1, 0.9, 0.4]], requires_grad=True)\n"  # inside (0, 1)
V = "v = torch.tensor([0.4, -0.8, 1.1], requires_grad=True)\n"
I = "i = torch.tensor([[3, -2, 0], [1, 5, -4]])\n"


def backward(expression: str) -> str:
    """``y = expression``, then backward from a weighted sum (each element's gradient differs), and print."""
    return (f"out = {expression}\n"
            "if out.requires_grad:\n"
            "    (out * torch.arange(1.0, out.numel() + 1.0).reshape(out.shape)).sum().backward()\n"
            "print(out)\n")


MATH = {
    "log1p": X + backward("(x * x).log1p()"),
    "expm1": X + backward("x.expm1()"),
    "log2": X + backward("torch.log2(x.abs())"),
    "log10": X + backward("x.abs().log10()"),
    "rsqrt": X + backward("(x * x + 0.5).rsqrt()"),
    "erf": X + backward("torch.erf(x)"),
    "asin": P + backward("p.asin()"),
    "acos": P + backward("torch.acos(p)"),
    "atan": X + backward("x.atan()"),
    "arctan_alias": X + backward("torch.arctan(x)"),
    "sinh": X + backward("x.sinh()"),
    "cosh": X + backward("torch.cosh(x)"),
    "atan2": X + Y + backward("torch.atan2(x, y)"),
    "atan2_broadcast": X + V + backward("x.atan2(v)"),
    "floor": X + backward("x.floor() * x"),
    "ceil": X + backward("torch.ceil(x)"),
    "trunc": X + backward("x.trunc()"),
    "round": "x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.7, 2.2], requires_grad=True)\n" + backward("x.round()"),
    "round_decimals": X + backward("torch.round(x * 1.234, decimals=1)"),
    "sign": X + backward("x.sign() * x"),
    "frac": X + backward("x.frac()"),
    "int_rounding": I + "a = i.floor()\nb = i.sign()\nc = i.round()\nd = i.ceil()\nprint(a, b, c, d)\n",
    "int_to_float": I + "a = i.log1p()\nb = i.erf()\nc = torch.atan2(i, i)\nd = i.rsqrt()\nprint(a.dtype, c.dtype)\n",
    "clamp_min": X + backward("x.clamp_min(0.25)"),
    "clamp_max": X + backward("torch.clamp_max(x, 0)"),
    "remainder_number": X + backward("x % 0.7"),
    "remainder_tensor": X + Y + backward("x.remainder(y)"),
    "fmod_number": X + backward("torch.fmod(x, 0.7)"),
    "fmod_tensor": X + Y + backward("x.fmod(y)"),
    "int_remainder": I + "a = i % 3\nb = i.fmod(3)\nprint(a, b)\n",
    "lerp": X + Y + backward("x.lerp(y, 0.3)"),
    "lerp_fn": X + Y + backward("torch.lerp(x, y, 0.75)"),
    "addcmul": X + Y + V + backward("x.addcmul(y, v, value=0.5)"),
    "addcmul_fn": X + Y + backward("torch.addcmul(x, y, x)"),
    "hypot": X + Y + backward("x.hypot(y)"),
    "nan_to_num": "x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')], requires_grad=True)\n"
                  + backward("x.nan_to_num()"),
    "nan_to_num_values": "x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')], requires_grad=True)\n"
                         + backward("torch.nan_to_num(x, nan=0.5, posinf=9.0, neginf=-9.0)"),
    "isnan_isinf_isfinite": "x = torch.tensor([1.0, float('nan'), float('inf'), -float('inf')])\n"
                            "a = x.isnan()\nb = torch.isinf(x)\nc = x.isfinite()\nprint(a, b, c)\n",
    "in_place": X + "z = x * 1\nz.log1p_()\nz.floor_()\nw = x * 2\nw.clamp_min_(0.5)\nw.sinh_()\n"
                "(z.sum() + w.sum()).backward()\n",
}

CASES = {**MATH}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_torch(name, backend):
    assert_same(CASES[name], backend)


def second_order(expression: str) -> str:
    """The gradient of ``expression`` recorded with ``create_graph=True``, then differentiated again."""
    return (X + Y + f"out = {expression}\n"
            "g, = torch.autograd.grad(out, x, create_graph=True)\n"
            "print(g)\n"
            "(g * torch.arange(1.0, g.numel() + 1.0).reshape(g.shape)).sum().backward()\n")


SECOND_ORDER = {
    "log1p": "(x * x).log1p().sum()",
    "expm1": "(x.expm1() * y).sum()",
    "log2_log10": "((x * x + 1).log2() + (x * x + 1).log10()).sum()",
    "rsqrt": "((x * x + 1).rsqrt() * y).sum()",
    "erf": "(x.erf() * x).sum()",
    "asin_acos": "((x * 0.3).asin() * y + (x * 0.3).acos() * x).sum()",
    "atan": "(x.atan() * x).sum()",
    "sinh_cosh": "(x.sinh() * y + x.cosh() * x).sum()",
    "atan2": "(torch.atan2(x, y) * x).sum()",
    "rounding": "(x.floor() * x + x.frac() * x * x + x.sign() * x).sum()",
    "clamp_min_max": "(x.clamp_min(0.25) ** 2 + x.clamp_max(0.0) ** 3).sum()",
    "lerp": "(x.lerp(y, 0.3) ** 2).sum()",
    "addcmul": "(torch.addcmul(y, x, x, value=0.5) * x).sum()",
    "hypot": "(x.hypot(y) * x).sum()",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_graph_matches_torch(name):
    assert_same(second_order(SECOND_ORDER[name]))


ERRORS = {
    "frac_int": I + "i.frac()\n",
    "round_decimals_int": I + "i.round(decimals=1)\n",
    "atan2_number": X + "torch.atan2(x, 2.0)\n",
    "leaf_in_place": X + "x.floor_()\n",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(ERRORS[name])
