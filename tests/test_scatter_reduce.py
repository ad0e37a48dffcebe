"""``scatter_reduce`` (sum, prod, mean, amax, amin, with and without ``include_self``) and
``scatter(..., reduce=)`` against PyTorch 2.13: values, grads, the ScatterReduceBackward0 node with
its saved values, the NotImplemented node torch records for ``reduce='add'``/``'multiply'``, errors.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0, 0.0], [1.2, 0.3, -0.7, 2.5]], dtype=torch.float64, requires_grad=True)\n"
S = "s = torch.tensor([[1.5, 0.5, -2.0], [0.0, 0.3, 1.0]], dtype=torch.float64, requires_grad=True)\n"
I = "i = torch.tensor([[0, 2, 0], [3, 3, 1]])\n"

CASES = {f"{reduce}_{include}": X + S + I + weighted_backward(
    f"x.scatter_reduce(1, i, s, {reduce!r}, include_self={include})") + "print(y)\n"
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include in (True, False)}
CASES.update({
    "function_dim_0": X + "s = torch.tensor([[3.0, -1.0, 2.0, 0.5]], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("torch.scatter_reduce(x, 0, torch.tensor([[1, 0, 1, 1]]), s, 'amax')"),
    "ties_in_amax": "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
    "s = torch.tensor([2.0, 2.0, 1.0, 3.0], requires_grad=True)\n"
    + weighted_backward("x.scatter_reduce(0, torch.tensor([1, 1, 0, 2]), s, 'amax')"),
    "prod_with_zeros": "x = torch.tensor([1.0, 0.0, 3.0], requires_grad=True)\n"
    "s = torch.tensor([0.0, 2.0, 0.0, 3.0], requires_grad=True)\n"
    + weighted_backward("x.scatter_reduce(0, torch.tensor([0, 1, 2, 2]), s, 'prod')"),
    "in_place": "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ns = torch.tensor([2.0, 5.0], requires_grad=True)\n"
    "z = x * 1\nz.scatter_reduce_(0, torch.tensor([2, 0]), s, 'mean')\n(z * torch.tensor([1.0, 2.0, 3.0])).sum().backward()\n",
    "scatter_reduce_add_graph": X + S + I + "y = x.scatter(1, i, s, reduce='add')\nprint(y)\n",
    "scatter_reduce_multiply_value": X + I + "y = x.scatter(1, i, 2.0, reduce='multiply')\nprint(y)\n",
    # the NotImplemented node has an edge only for the inputs that require grad (no (None, 0) edges)
    "scatter_reduce_add_src_only": X.replace("requires_grad=True", "requires_grad=False") + S + I
    + "y = x.scatter(1, i, s, reduce='add')\nprint(y)\n",
    "scatter_reduce_add_self_only": X + S.replace("requires_grad=True", "requires_grad=False") + I
    + "y = x.scatter(1, i, s, reduce='multiply')\nprint(y)\n",
})


@pytest.mark.parametrize("name", sorted(CASES))
def test_scatter_reduce_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_scatter_reduce_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")


@pytest.mark.parametrize("code", [
    X + "x.scatter_reduce(0, torch.tensor([[0, 1]]), x, reduce='add')\n",
    X + "x.scatter(0, torch.tensor([[0, 1]]), 2.0, reduce='mean')\n",
    X + S + I + "x.scatter(1, i, s, reduce='add').sum().backward()\n",
    X + "x.scatter_reduce(0, torch.tensor([[0.0, 1.0]]), x, reduce='sum')\n",
])
def test_scatter_reduce_errors_match_torch(code):
    assert_same_error(code)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradient_by_central_differences(reduce, include_self):
    rng = np.random.default_rng(5)
    base, src = rng.uniform(0.5, 2.0, size=(3, 4)), rng.uniform(0.5, 2.0, size=(3, 5))
    index = rng.integers(0, 4, size=(3, 5))
    weights = rng.uniform(0.5, 1.5, size=(3, 4))

    def value(b, s):
        out = gv.tensor(b).scatter_reduce(1, gv.tensor(index), gv.tensor(s), reduce, include_self=include_self)
        return float((out.numpy() * weights).sum())

    x, s = gv.tensor(base, requires_grad=True), gv.tensor(src, requires_grad=True)
    (x.scatter_reduce(1, gv.tensor(index), s, reduce, include_self=include_self) * gv.tensor(weights)).sum().backward()
    for tensor, array, which in ((x, base, 0), (s, src, 1)):
        numeric = np.zeros_like(array)
        for position in np.ndindex(*array.shape):
            up, down = array.copy(), array.copy()
            up[position] += 1e-6
            down[position] -= 1e-6
            pair = ((up, src), (down, src)) if which == 0 else ((base, up), (base, down))
            numeric[position] = (value(*pair[0]) - value(*pair[1])) / 2e-6
        np.testing.assert_allclose(tensor.grad.numpy(), numeric, rtol=1e-5, atol=1e-6)
