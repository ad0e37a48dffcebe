"""``torch.div(a, b, rounding_mode='floor' | 'trunc')`` and ``div_(..., rounding_mode=)`` against PyTorch
2.13: values and dtypes for every dtype and kind of divisor (integers stay integers, an integer division by
0 raises), DivBackward2 with its saved values and zero gradients, and torch's errors."""
from __future__ import annotations

import itertools

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

DTYPES = ["int64", "int32", "uint8", "float32", "float64"]
DIVISORS = ["2", "-3", "2.5", "0.", "torch.tensor([2, -3, 1])", "torch.tensor([2., -0.5, 3.])"]


@pytest.mark.parametrize("dtype,divisor,mode", [
    (d, o, m) for d, o, m in itertools.product(DTYPES, DIVISORS, ["floor", "trunc"])
    if not (d == "uint8" and o == "-3")])  # (torch wraps -3 into uint8 first; gradviz raises OverflowError)
def test_rounded_division_matches_torch(dtype, divisor, mode):
    assert_same(f"x = torch.tensor([7, -7, 5], dtype=torch.{dtype})\n"
                f"r = torch.div(x, {divisor}, rounding_mode='{mode}')\nprint(r, r.dtype)")


@pytest.mark.parametrize("code", [
    "x = torch.tensor([5., -3.5], requires_grad=True)\nr = x.div(2, rounding_mode='floor')\n"
    "print(r.grad_fn._saved_other, r.grad_fn._saved_rounding_mode)\nr.sum().backward()",
    "x = torch.tensor([5., -3.5], requires_grad=True)\ny = torch.tensor([2., 4.], requires_grad=True)\n"
    "r = torch.div(x, y, rounding_mode='trunc')\nr.sum().backward()",
    "r = torch.tensor([5, -3])\nr.div_(2, rounding_mode='floor')",
    "r = torch.tensor([5., -3.])\nr.div_(torch.tensor(2.), rounding_mode='trunc')",
    "x = torch.tensor([5., -3.5], requires_grad=True)\nr = x * 1\nr.div_(2, rounding_mode='floor')\nr.sum().backward()",
    "r = torch.div(5, torch.tensor([2, 3]), rounding_mode='floor')",
    "r = torch.tensor([5., -3., 0.]).div(0., rounding_mode='trunc')",
    "r = torch.empty(2)\ntorch.div(torch.tensor([5., 3.]), 2, rounding_mode='floor', out=r)",
    "r = torch.tensor([7, 8]).div(3, rounding_mode=None)",
])
def test_rounded_division_programs_match_torch(code):
    assert_same(code)


@pytest.mark.parametrize("code", [
    "torch.div(torch.tensor([1.]), 2, rounding_mode='round')",
    "torch.div(torch.tensor([5, 3]), 0, rounding_mode='floor')",
    "torch.div(torch.tensor([5, 3]), torch.tensor([1, 0]), rounding_mode='trunc')",
    "torch.div(torch.tensor([True]), True, rounding_mode='floor')",
    "torch.div(torch.tensor([True]), True, rounding_mode='trunc')",
])
def test_rounded_division_errors_match_torch(code):
    assert_same_error(code)
