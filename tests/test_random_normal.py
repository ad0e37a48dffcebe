"""``torch.normal`` in all its forms against PyTorch 2.13 under ``manual_seed``: a tensor of means with a
number std, a number mean with a tensor of stds, both tensors (broadcast), numbers with ``size=``, a
``generator=``, ``out=``; its nodes (NormalBackward1/2/3, which send zeros) and its errors.

Below 16 numbers PyTorch draws one Box-Muller pair at a time and gradviz gives its numbers bit for bit;
from 16 on it transforms blocks of 16 with SIMD code whose last bit depends on the CPU, so those
cases are compared to 1e-6 relative (see ``tests/test_random.py``).
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

SEEDED = "torch.manual_seed({seed})\n"
M = "m = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)\n"
S = "s = torch.tensor([1.0, 0.5, 2.0], requires_grad=True)\n"

CASES = {
    "tensor_mean": M + "y = torch.normal(m, 2.0)\nprint(y)\ny.sum().backward()\n",
    "tensor_mean_default_std": M + "y = torch.normal(m)\nz = torch.normal(mean=m * 2, std=0.5)\n",
    "tensor_std": S + "y = torch.normal(1.0, s)\nprint(y)\n(y * 3).sum().backward()\n",
    "both_tensors": M + S + "y = torch.normal(m, s)\nprint(y)\ny.sum().backward()\n",
    "both_tensors_one_needs_grad": M + S + "y = torch.normal(m.detach(), s)\nz = torch.normal(m, s.detach())\n"
    "(y + z).sum().backward()\n",
    "broadcast": "y = torch.normal(torch.zeros(2, 1), torch.ones(3))\n",
    "float64_mean": "y = torch.normal(torch.zeros(5, dtype=torch.float64), 1.5)\nz = torch.normal(0.5, torch.ones(4, dtype=torch.float64))\n",
    "numbers_with_size": "y = torch.normal(2.0, 3.0, size=(2, 5))\nz = torch.normal(2.0, 3.0, (3,), dtype=torch.float64)\n",
    "generator": "g = torch.Generator().manual_seed(5)\ny = torch.normal(torch.zeros(7), 1.5, generator=g)\n"
    "z = torch.normal(1.0, torch.ones(3), generator=g)\n",
    "out": "o = torch.empty(3)\nr = torch.normal(torch.ones(3), 1.0, out=o)\nsame = r is o\np = torch.empty(2)\n"
    "torch.normal(0.0, 1.0, size=(2,), out=p)\nprint(same)\n",
    "no_grad": M + "with torch.no_grad():\n    y = torch.normal(m, 1.0)\n",
    "many": "y = torch.normal(torch.arange(40.0).reshape(2, 20), 0.5)\nz = torch.normal(torch.zeros(20, 1), torch.ones(3))\n",
}


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_normal_matches_torch(name, backend, seed):
    assert_same(SEEDED.format(seed=seed) + CASES[name], backend=backend)


ERRORS = [
    "torch.normal(torch.zeros(2), -1.0)",
    "torch.normal(1.0, torch.tensor([-1.0]))",
    "torch.normal(torch.zeros(2), torch.tensor([1.0, -1.0]))",
    "torch.normal(torch.zeros(2), torch.ones(3))",
    "torch.normal(torch.zeros(2, dtype=torch.long), 1.0)",
    "torch.normal(1.0, 2.0)",
    "torch.normal(torch.zeros(2, requires_grad=True), 1.0, out=torch.empty(2))",
]


@pytest.mark.parametrize("code", ERRORS)
def test_normal_errors_match_torch(code):
    assert_same_error(code + "\n")
