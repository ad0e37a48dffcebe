"""Function forms with a Python number first (``torch.mul(2.5, x)``, ``torch.sub(2, x, alpha=3)``): PyTorch keeps
the operands in order, so the node's first edge is ``(None, 0)`` and the number is saved as ``self`` (a float64
0-d tensor); in half precision the number is rounded to half before the product. Functions with no overload for a
number first raise PyTorch's TypeError. Each case runs the same lines in torch 2.13 and gradviz."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

from parity import assert_same, assert_same_error  # noqa: E402

H = "h = torch.tensor([1.1, 2.3, 3.7], dtype=torch.{dtype}, requires_grad=True)\n"
BACKWARD = "(y * torch.arange(1.0, 4.0, dtype=y.dtype)).sum().backward()\nprint(y)\n"

CASES = {
    "mul": "y = torch.mul(2.5, h)\n",
    "mul_int": "y = torch.mul(3, h)\n",
    "mul_tenth": "y = torch.mul(0.1, h)\n",
    "multiply": "y = torch.multiply(0.1, h)\n",
    "add": "y = torch.add(0.1, h)\n",
    "add_alpha": "y = torch.add(2, h, alpha=3)\n",
    "add_bool": "y = torch.add(True, h)\n",
    "sub": "y = torch.sub(2.5, h)\n",
    "sub_alpha": "y = torch.sub(2, h, alpha=3)\n",
    "subtract": "y = torch.subtract(0.1, h)\n",
    "div": "y = torch.div(2.5, h)\n",
    "div_tenth": "y = torch.div(0.1, h)\n",
    "divide": "y = torch.divide(3, h)\n",
    "pow": "y = torch.pow(2.5, h)\n",
    "chain": "y = torch.mul(2.5, torch.sub(1, torch.div(3, h * h)))\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_number_first_matches_torch(name, dtype, backend):
    assert_same(H.format(dtype=dtype) + CASES[name] + BACKWARD, backend=backend)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("line", ["y = torch.add(2, 3)", "y = torch.mul(2, 3.5)", "y = torch.sub(2.5, 1)",
                                  "y = torch.div(1, 4)", "y = torch.mul(2, torch.tensor([1, 2]))",
                                  "y = torch.div(2, torch.tensor([1, 2]))", "y = torch.mul(2.5, h.detach())"])
def test_number_first_without_grad_matches_torch(line, backend):
    assert_same(H.format(dtype="float32") + line + "\nprint(y)\n", backend=backend)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_remainder_with_a_number_first_has_no_derivative(backend):
    assert_same(H.format(dtype="float32") + "y = torch.remainder(2.5, h)\nprint(y)\n", backend=backend)
    assert_same_error(H.format(dtype="float32") + "torch.remainder(2.5, h).sum().backward()\n", backend=backend)


@pytest.mark.parametrize("function", ["eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "atan2", "fmod",
                                      "hypot", "logical_and", "logical_or", "logical_xor", "rsub", "heaviside"])
@pytest.mark.parametrize("number", ["2.5", "2"])
def test_functions_without_a_number_first_overload_raise_torchs_error(function, number):
    assert_same_error(H.format(dtype="float32") + f"torch.{function}({number}, h)\n")
