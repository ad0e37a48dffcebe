"""``Tensor.unfold`` (UnfoldBackward0, a view of overlapping windows) and ``as_strided``
(AsStridedBackward0) against PyTorch 2.13: values, views, grads, saved values, errors."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = (torch.arange(24, dtype=torch.float64).reshape(2, 3, 4) * 0.3 - 2).requires_grad_()\n"
V = "v = torch.tensor([0.5, -1.0, 2.0, 1.5, 0.25, -0.75], requires_grad=True)\n"

CASES = {
    "unfold_overlapping": V + weighted_backward("v.unfold(0, 3, 1)") + "print(y, y._base is v)\n",
    "unfold_disjoint_with_rest": V + weighted_backward("v.unfold(0, 2, 4)"),
    "unfold_middle_dim": X + weighted_backward("x.unfold(1, 2, 1)"),
    "unfold_negative_dim": X + weighted_backward("x.unfold(-1, 3, 2)"),
    "unfold_twice": X + weighted_backward("x.unfold(2, 2, 1).unfold(1, 2, 1)"),
    "unfold_scalar": "s = torch.tensor(2.5, requires_grad=True)\n" + weighted_backward("s.unfold(0, 1, 1)"),
    "unfold_then_in_place": V + "w = v * 1\nu = w.unfold(0, 2, 2)\nu.mul_(3)\n(w * torch.arange(6.0)).sum().backward()\n",
    "as_strided_overlapping": V + weighted_backward("v.as_strided((3, 3), (1, 1), 0)") + "print(y)\n",
    "as_strided_offset": V + weighted_backward("torch.as_strided(v, (2, 2), (2, 1), 1)"),
    "as_strided_transposed": X + weighted_backward("x.as_strided((4, 3), (1, 4), 2)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")


@pytest.mark.parametrize("line", ["v.unfold(0, 7, 1)", "v.unfold(0, 2, 0)", "v.unfold(0, -1, 1)", "v.unfold(1, 2, 1)",
                                  "v.as_strided((2, 2), (1, 2), -1)", "v.as_strided((7,), (1,))"])
def test_strided_errors_match_torch(line):
    assert_same_error(V + line + "\n")


def test_unfold_gradient_by_central_differences():
    rng = np.random.default_rng(2)
    array, weights = rng.normal(size=(3, 7)), rng.normal(size=(3, 3, 3))

    def value(a):
        return float((gv.tensor(a).unfold(1, 3, 2).numpy() * weights).sum())

    x = gv.tensor(array, requires_grad=True)
    (x.unfold(1, 3, 2) * gv.tensor(weights)).sum().backward()
    numeric = np.zeros_like(array)
    for position in np.ndindex(*array.shape):
        up, down = array.copy(), array.copy()
        up[position] += 1e-6
        down[position] -= 1e-6
        numeric[position] = (value(up) - value(down)) / 2e-6
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_an_empty_tensor_has_torchs_contiguous_strides():
    """numpy gives a new empty array all-zero strides; PyTorch counts a size-0 dimension as 1."""
    torch = pytest.importorskip("torch")
    for shape in [(0,), (0, 2), (2, 0), (3, 0, 2), (0, 0)]:
        for make in ("zeros", "empty", "ones"):
            assert getattr(gv, make)(*shape).stride() == getattr(torch, make)(*shape).stride(), (make, shape)
