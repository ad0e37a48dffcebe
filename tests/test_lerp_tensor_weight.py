"""``torch.lerp(start, end, weight)`` with a tensor ``weight`` (LerpBackward1) against PyTorch 2.13: values,
graphs and gradients with broadcasting among all three, in place, differentiated twice, and torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error  # noqa: E402

PROGRAMS = [
    "a = torch.tensor([1., 2.], requires_grad=True)\nb = torch.tensor([3., 5.], requires_grad=True)\n"
    "w = torch.tensor([0.25, 0.75], requires_grad=True)\nr = torch.lerp(a, b, w)\nr.sum().backward()",
    "a = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)\nw = torch.tensor(0.6, requires_grad=True)\n"
    "r = a.lerp(torch.tensor([3., 5.]), w)\n(r * r).sum().backward()",
    "a = torch.tensor([1., 2.], requires_grad=True)\nw = torch.tensor([[0.2], [0.9]], requires_grad=True)\n"
    "r = torch.lerp(a, torch.tensor([5., 7.]), w)\nr.sum().backward()",
    "r = torch.tensor([1., 2.])\nr.lerp_(torch.tensor([3., 5.]), torch.tensor([0.5, 2.0]))",
    "a = torch.tensor([1., 2.], requires_grad=True)\nw = torch.tensor([0.3, 0.6], requires_grad=True)\n"
    "e = torch.tensor([[4., 1.], [2., 0.]], requires_grad=True)\nr = torch.lerp(a, e, w)\n"
    "g1, g2, g3 = torch.autograd.grad(r.sum(), (a, e, w), create_graph=True)\n"
    "(g1 * g1).sum().backward(retain_graph=True)\n(g3 * g3).sum().backward()",
    "x = torch.tensor([-1e30, 0., 1e30], dtype=torch.float64)\nr = torch.lerp(x, -x, torch.tensor([0.49, 0.5, 0.51], "
    "dtype=torch.float64))",
]


@pytest.mark.parametrize("code", PROGRAMS)
def test_lerp_with_a_tensor_weight_matches_torch(code):
    assert_same(code)


def test_lerp_weight_of_another_dtype_is_refused_as_torch_does():
    assert_same_error("torch.lerp(torch.ones(2), torch.ones(2), torch.ones(2, dtype=torch.float64))")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", ["tensor", 0.3, 0.7])
def test_lerp_bits_match_torch(dtype, weight):
    """PyTorch's kernel: two forms, each exact at its end, with the product fused into the sum where its kernels
    fuse multiply-adds (rounding once, not twice): bit for bit on random numbers, number and tensor weights."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    start, end = (rng.standard_normal(2000).astype(dtype) for _ in range(2))
    weights = rng.uniform(-1, 2, 2000).astype(dtype) if weight == "tensor" else weight
    results = []
    for lib in (torch, gv):
        w = lib.tensor(weights) if weight == "tensor" else weights
        results.append(lib.lerp(lib.tensor(start), lib.tensor(end), w).numpy())
    np.testing.assert_array_equal(results[1], results[0])
