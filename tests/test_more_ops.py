"""The ops tutorials reach for that gradviz lacked, against PyTorch 2.13 itself: ``fmax``/``fmin``,
``copysign``, ``nextafter``, ``float_power``, ``true_divide``, ``floor_divide`` and ``//``, ``dist``, ``cdist``,
``diag_embed``, ``F.glu``/``softshrink``/``hardshrink``/``threshold``/``rrelu``/``pairwise_distance`` and their
modules. Each snippet runs in both libraries (numpy and torch backends); values, dtypes, grads, the whole
``grad_fn`` graph and the printed text must agree.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

A = "a = torch.tensor([[1.0, -2.0, 0.3], [0.5, 2.0, -1.0]], requires_grad=True)\n"
B = "b = torch.tensor([[2.0, -3.0, 1.0], [0.1, 0.2, 0.3]], requires_grad=True)\n"
AB = A + B
ROW = "r = torch.tensor([0.5, float('nan'), -1.0], requires_grad=True)\n"

CASES = {
    # -- two operands --------------------------------------------------------------------------------
    "fmax": AB + ROW + weighted_backward("torch.fmax(a, r) + torch.fmax(b, a)") + "print(y)\n",
    "fmin": AB + ROW + weighted_backward("torch.fmin(r, a) + a.fmin(b)") + "print(y)\n",
    "fmax_ties_and_nans": "x = torch.tensor([1.0, float('nan'), 2.0, float('nan')], requires_grad=True)\n"
    "z = torch.tensor([1.0, 3.0, float('nan'), float('nan')], requires_grad=True)\n"
    "y = torch.fmax(x, z)\ny.sum().backward()\nprint(y, x.grad, z.grad)\n",
    "fmax_ints": "y = torch.fmax(torch.tensor([1, 5]), torch.tensor([3, 2]))\nz = torch.fmin(torch.tensor([1, 2]), "
    "torch.tensor([1.5, 0.0]))\nprint(y, z)\n",
    "copysign": AB + weighted_backward("torch.copysign(a, b) + a.copysign(-1.5) + torch.copysign(b, a[0])")
    + "print(y)\n",
    "copysign_zeros": "x = torch.tensor([0.0, -0.0, 2.0, -3.0], requires_grad=True)\n"
    "y = torch.copysign(x, torch.tensor([-1.0, 1.0, -0.0, 0.0]))\ny.sum().backward()\nprint(y, x.grad)\n",
    "copysign_ints": "y = torch.copysign(torch.tensor([1, -2]), -1)\nz = torch.copysign(torch.tensor([1, 2]), "
    "torch.tensor([-1, 1]))\nprint(y, z)\n",
    "nextafter": AB + weighted_backward("torch.nextafter(a, b)") + "print(y - a)\n",
    "nextafter_float64": "x = torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)\n"
    "y = torch.nextafter(x, torch.tensor([2.0, -1.0, 0.0], dtype=torch.float64)) - x\nprint(y)\n",
    "float_power": AB + weighted_backward("torch.float_power(a, 2) + a.float_power(b.abs()) + torch.float_power(2, b)"),
    "float_power_tensor_exponent": AB + "y = torch.float_power(a.abs(), b)\ny.sum().backward()\nprint(y)\n",
    "float_power_double_input": "x = torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True)\n"
    "y = torch.float_power(x, 3)\ny.sum().backward()\n",
    "float_power_int": "y = torch.float_power(torch.tensor([2, 3]), 2)\nprint(y)\n",
    "true_divide": AB + weighted_backward("torch.true_divide(a, b) + a.true_divide(2)"),
    "floor_divide_floats": AB + "y = torch.floor_divide(a, b)\nz = a // 0.7\nw = 2 // b\nv = a.floor_divide(-0.3)\n"
    "print(y, z, w, v)\n",
    "floor_divide_ints": "x = torch.tensor([5, -5, 7, -7])\ny = torch.floor_divide(x, 2)\nz = x // torch.tensor([2, 2, -3, -3])\n"
    "w = 9 // x\nprint(y, z, w)\n",
    "floor_divide_by_zero_floats": "y = torch.tensor([1.0, -1.0, 0.0]) // 0\nprint(y)\n",
    "dist": AB + "ys = [torch.dist(a, b, p) for p in (1, 2, 3, 0.5, float('inf'), float('-inf'))]\n"
    "sum(ys).backward()\nprint(ys)\n",
    "dist_broadcast": AB + "y = torch.dist(a, b[0])\ny.backward()\nz = a.dist(b, 1.5)\nprint(y, z)\n",
    "dist_inf_ties": "x = torch.tensor([1.0, -3.0, 3.0], requires_grad=True)\n"
    "y = torch.dist(x, torch.zeros(3), float('inf'))\ny.backward()\nprint(y, x.grad)\n",
    "dist_zero": "x = torch.tensor([1.0, 3.0], requires_grad=True)\nz = torch.tensor([1.0, 3.0], requires_grad=True)\n"
    "y = torch.dist(x, z)\ny.backward()\nprint(x.grad, z.grad)\n",
    "dist_p0_forward": AB + "y = torch.dist(a, b, 0)\nprint(y)\n",
    # -- cdist -----------------------------------------------------------------------------------------
    **{f"cdist_p{p}": "x1 = torch.tensor([[1.0, -2.0, 0.3], [0.5, 2.0, -1.0]], requires_grad=True)\n"
       "x2 = torch.tensor([[2.0, -3.0, 1.0], [0.1, 0.2, 0.3], [0.5, 2.0, -1.0]], requires_grad=True)\n"
       + weighted_backward(f"torch.cdist(x1, x2, p={p})") + "print(y)\n"
       for p in ("0.0", "1.0", "2.0", "3.0", "0.5", "float('inf')")},
    "cdist_batched_broadcast": "x1 = torch.linspace(-1, 1, 24).reshape(2, 3, 4).requires_grad_()\n"
    "x2 = torch.linspace(0, 2, 20).reshape(5, 4).requires_grad_()\n"
    + weighted_backward("torch.cdist(x1, x2)") + weighted_backward("torch.cdist(x1, x2, 1)"),
    "cdist_float64": "x1 = torch.tensor([[0.0, 1.0], [2.0, 2.5]], dtype=torch.float64, requires_grad=True)\n"
    "x2 = torch.tensor([[1.0, 1.0]], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("torch.cdist(x1, x2, compute_mode='donot_use_mm_for_euclid_dist')") + "print(y)\n",
    # -- diag_embed ------------------------------------------------------------------------------------
    "diag_embed": A + weighted_backward("torch.diag_embed(a)") + "print(y)\n",
    "diag_embed_offsets": A + "ys = [torch.diag_embed(a, o, d1, d2) for o, d1, d2 in "
    "((1, -2, -1), (-1, 0, 2), (2, 2, 0), (0, 1, 0))]\nsum(y.sum() * (i + 1) for i, y in enumerate(ys)).backward()\n"
    "print(ys[0], ys[1])\nz = a.diag_embed()\n",
    # -- activations ----------------------------------------------------------------------------------
    "glu": "x = torch.linspace(-2, 2, 24).reshape(2, 3, 4).requires_grad_()\n"
    + weighted_backward("F.glu(x) + F.glu(x, 0).sum() + F.glu(x, -1)") + "print(y)\n",
    "softshrink_hardshrink": "x = torch.tensor([-2.0, -1.0, -0.5, -0.2, 0.0, 0.3, 0.5, 1.0, 3.0], requires_grad=True)\n"
    + weighted_backward("F.softshrink(x) + F.softshrink(x, 1.0) * 2 + F.hardshrink(x) + F.hardshrink(x, 0.2) * 3")
    + "print(y, F.softshrink(x, 1.0))\n",
    "threshold": "x = torch.tensor([-2.0, -1.0, 0.1, 0.2, 0.5, 3.0], requires_grad=True)\n"
    + weighted_backward("F.threshold(x, 0.1, 20.0) + F.threshold(x * 2, 0.4, -1.0, inplace=True)") + "print(y)\n",
    "rrelu_eval": "x = torch.tensor([-2.0, -1.0, 0.0, 0.5, 3.0], requires_grad=True)\n"
    + weighted_backward("F.rrelu(x) + F.rrelu(x, 0.2, 0.4, False) * 2") + "print(y)\n",
    "rrelu_training_seeded": "torch.manual_seed(3)\nx = torch.randn(4, 5, requires_grad=True)\n"
    + weighted_backward("F.rrelu(x, training=True)") + "z = torch.rand(2)\nprint(y, z)\n",
    "rrelu_training_float64_in_place": "torch.manual_seed(7)\nx = torch.randn(6, dtype=torch.float64, requires_grad=True)\n"
    "y = F.rrelu(x * 1, 0.05, 0.5, training=True, inplace=True)\ny.sum().backward()\nprint(y)\n",
    "pairwise_distance": AB + weighted_backward("F.pairwise_distance(a, b) + F.pairwise_distance(a, b, 1.0, 1e-3)")
    + "z = F.pairwise_distance(a, b, keepdim=True)\nw = F.pairwise_distance(a[0], b[0])\nprint(y, z, w)\n",
    "modules": "x = torch.linspace(-2, 2, 12).reshape(2, 6).requires_grad_()\n"
    "mods = [torch.nn.GLU(), torch.nn.GLU(dim=0), torch.nn.Softshrink(), torch.nn.Hardshrink(0.3), "
    "torch.nn.Threshold(0.1, 20.0), torch.nn.Threshold(0.1, 2, True), torch.nn.RReLU(0.1, 0.3, True), "
    "torch.nn.Tanhshrink(), torch.nn.PairwiseDistance(p=1.0, keepdim=True)]\nprint(mods)\n"
    "m = torch.nn.RReLU()\nm.eval()\nys = [mods[i](x * 1) for i in range(8) if i != 6] + [m(x), mods[8](x, x.flip(0))]\n"
    "sum(y.sum() for y in ys).backward()\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_more_ops_match_torch(name, backend):
    assert_same(CASES[name], backend=backend)


ERRORS = [
    A + "torch.fmax(a, 2.0)",
    A + "torch.copysign(2.0, a)",
    A + "torch.dist(a, a, 'fro')",
    A + "torch.cdist(a[0], a)",
    A + "torch.cdist(a, a[:, :2])",
    A + "torch.cdist(a, a, p=-1)",
    "torch.cdist(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.long))",
    "torch.nextafter(torch.tensor([1]), torch.tensor([2]))",
    "torch.tensor([5, -5]) // 0",
    A + "torch.floor_divide(a, a).sum().backward()",
    A + "torch.diag_embed(a, dim1=0, dim2=0)",
    A + "torch.diag_embed(a, dim1=3)",
    A + "F.glu(a)",
    "F.glu(torch.tensor(1.0))",
    A + "F.softshrink(a, -1.0)",
    A + "F.softshrink(a.double(), -1.0)",
    A + "F.rrelu(a, lower=0.5, upper=0.2)",
    A + "F.threshold(a, 0.5, 9.0, inplace=True)",
    "F.softshrink(torch.tensor([1, 2]))",
]


@pytest.mark.parametrize("code", ERRORS)
def test_more_ops_errors_match_torch(code):
    assert_same_error(code + "\n")
