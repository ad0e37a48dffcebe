"""Statistics (``gradviz/ops/statistics_more.py``) against PyTorch 2.13 itself: ``quantile``/``nanquantile`` in
every interpolation mode, ``cov`` (weights, correction), ``corrcoef``, ``trapezoid``/``trapz``,
``cumulative_trapezoid``. Each snippet runs in both libraries (numpy and torch backends); values, dtypes,
grads, the whole ``grad_fn`` graph and the printed text must agree, and so must the errors.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([[1.0, 5.0, 2.0, 8.0], [3.0, -1.0, 0.0, 4.0]], requires_grad=True)\n"
D = ("d = torch.tensor([[1.0, 5.0, 2.0, 8.0], [3.0, -1.0, 0.0, 4.0], [0.5, 0.5, 2.5, -3.0]], dtype=torch.float64, "
     "requires_grad=True)\n")
MODES = ("linear", "lower", "higher", "midpoint", "nearest")

CASES = {
    # -- quantile, nanquantile ---------------------------------------------------------------------------------
    "quantile_all": X + weighted_backward("torch.quantile(x, 0.3)") + "print(y)\n",
    **{f"quantile_{mode}": D + weighted_backward(
        f"torch.quantile(d, torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64), dim=0, interpolation='{mode}')")
       + f"z = d.quantile(0.4, dim=1, keepdim=True, interpolation='{mode}')\nprint(y, z)\n" for mode in MODES},
    "quantile_dims": D + "ys = [torch.quantile(d, 0.25, dim=-1), torch.quantile(d, 0.5, keepdim=True), "
    "torch.quantile(d, torch.tensor([0.2, 0.7], dtype=torch.float64), dim=1, keepdim=True), "
    "torch.quantile(d[0], 0.6, dim=0), torch.quantile(torch.tensor(3.0), 0.2), "
    "torch.quantile(torch.tensor(3.0), 0.2, dim=0, keepdim=True)]\n"
    "sum((y * torch.arange(1.0, y.numel() + 1.0, dtype=y.dtype).reshape(y.shape)).sum() for y in ys[:4]).backward()\n"
    "print(ys)\n",
    "quantile_nan": "n = torch.tensor([[1.0, float('nan'), 3.0, 2.0], [4.0, 0.5, 1.0, 2.0]], requires_grad=True)\n"
    "q = torch.quantile(n, 0.5, dim=1)\nm = torch.nanquantile(n, 0.5, dim=1)\nk = n.nanquantile(torch.tensor([0.0, 1.0]))\n"
    "z = torch.tensor([[float('nan'), float('nan')], [1.0, 2.0]]).nanquantile(0.5, dim=1)\n"
    "(m.sum() + k.sum()).backward()\nprint(q, m, k, z)\n",
    "quantile_double_backward": D + "y = torch.quantile(d * d, 0.3, dim=0)\n"
    "g, = torch.autograd.grad(y.sum(), d, create_graph=True)\ng.sum().backward()\nprint(g)\n",
    # -- cov, corrcoef -------------------------------------------------------------------------------------------
    "cov": X + weighted_backward("torch.cov(x)") + "z = x.cov(correction=0)\nw = torch.cov(x[0])\n"
    "v = torch.cov(torch.tensor([[1, 2], [3, 5]]))\nprint(y, z, w, v)\n",
    "cov_weights": X + weighted_backward("torch.cov(x, correction=0, fweights=torch.tensor([1, 2, 1, 1]), "
                                         "aweights=torch.tensor([0.5, 1.0, 1.0, 2.0]))")
    + "z = x.cov(fweights=torch.tensor([1, 2, 1, 1]))\nw = torch.cov(x, aweights=torch.tensor([0.5, 1.0, 1.0, 2.0]))\n"
    "print(y, z, w)\n",
    "cov_no_degrees_of_freedom": X + "y = torch.cov(x, correction=4)\nprint(y)\n",
    "corrcoef": X + weighted_backward("torch.corrcoef(x)") + "z = x.corrcoef()\nw = torch.corrcoef(x[0])\n"
    "v = torch.corrcoef(torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [1.0, 1.0, 1.0]]))\nprint(y, z, w, v)\n",
    # -- trapezoid, trapz, cumulative_trapezoid ----------------------------------------------------------------
    "trapezoid": X + "ys = [torch.trapezoid(x), torch.trapezoid(x, dx=0.5, dim=0), "
    "torch.trapezoid(x, torch.tensor([0.0, 1.0, 3.0, 4.0])), "
    "torch.trapezoid(x, torch.tensor([[0.0, 1.0, 3.0, 4.0], [1.0, 2.0, 2.0, 5.0]]), dim=1), torch.trapz(x, dim=0), "
    "torch.trapz(x, torch.tensor([0.0, 2.0]), dim=0)]\n"
    "sum((y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum() for y in ys).backward()\n"
    "z = torch.trapezoid(torch.ones(2, 0))\nw = torch.trapezoid(torch.tensor([1, 2, 4]))\nprint(ys, z, w)\n",
    "cumulative_trapezoid": X + "ys = [torch.cumulative_trapezoid(x), torch.cumulative_trapezoid(x, dx=2, dim=0), "
    "torch.cumulative_trapezoid(x, torch.tensor([0.0, 1.0, 3.0, 4.0]))]\n"
    "sum((y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum() for y in ys).backward()\n"
    "z = torch.cumulative_trapezoid(torch.tensor([1, 2, 4]))\nw = torch.cumulative_trapezoid(torch.ones(2, 1))\n"
    "print(ys, z, w)\n",
    # -- histogram -------------------------------------------------------------------------------------------
    "histogram": X + "h = torch.histogram(x, 3)\nsame_node = h.hist.grad_fn is h.bin_edges.grad_fn\n"
    "e = torch.histogram(torch.tensor([]), 2)\nf = torch.histogram(torch.tensor([2.0, 2.0]), 2)\n"
    "g = x.detach().histogram(2)\nk = torch.histogram(x.detach(), bins=2, weight=torch.tensor([[1.0, 2.0, 3.0, 4.0], "
    "[0.5, 0.5, 0.5, 0.5]]), density=True)\nm = torch.histogram(torch.tensor([0.1, 0.2, 0.3, 0.7, 1.0], "
    "dtype=torch.float64), 10)\nn = torch.histogram(torch.tensor([1.0, float('nan'), 3.0, 7.0]), 2, range=(0.0, 4.0))\n"
    "o = torch.histogram(x.detach(), torch.tensor([-1.0, 0.0, 2.5, 10.0]), density=True)\n"
    "p = torch.histogram(x.detach(), 4, range=(0.0, 4.0), weight=torch.ones(2, 4))\n"
    "print(h, same_node, h.bin_edges.output_nr, e, f, g, k, m, n, o, p)\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_statistics_match_torch(name, backend):
    assert_same(CASES[name], backend=backend)


ERRORS = [
    X + "torch.quantile(x, 1.5)",
    X + "torch.quantile(x, 0.5, interpolation='foo')",
    X + "torch.quantile(x.long(), 0.5)",
    X + "torch.quantile(x, torch.tensor([[0.5]]))",
    X + "torch.quantile(x, torch.tensor([0.5], dtype=torch.float64))",
    X + "torch.quantile(x, torch.tensor([0.5, 1.5]))",
    X + "torch.nanquantile(x, -0.1)",
    X + "torch.nanquantile(x.long(), 0.5)",
    X + "torch.nanquantile(x, torch.tensor([0.5, 1.5]))",
    "torch.quantile(torch.ones(0), 0.5)",
    X + "torch.quantile(x, 0.5, dim=2)",
    "torch.cov(torch.ones(2, 2, 2))",
    "torch.cov(torch.tensor([True]))",
    X + "torch.cov(x, fweights=torch.tensor([1.0, 2.0, 1.0, 1.0]))",
    X + "torch.cov(x, fweights=torch.tensor([1, 2]))",
    X + "torch.cov(x, fweights=torch.tensor([1, -2, 1, 1]))",
    X + "torch.cov(x, aweights=torch.tensor([1, 2, 1, 1]))",
    X + "torch.cov(x, aweights=torch.zeros(4))",
    X + "torch.cov(x, fweights=torch.ones(1, 4, dtype=torch.long))",
    "torch.corrcoef(torch.ones(2, 2, 2))",
    "torch.trapezoid(torch.tensor([True]))",
    X + "torch.trapezoid(x, torch.tensor([1.0, 2.0]))",
    X + "torch.trapezoid(x, dx=True)",
    X + "torch.cumulative_trapezoid(x, torch.tensor([1.0, 2.0]))",
    "torch.cumulative_trapezoid(torch.tensor([True, False]))",
    X + "torch.histogram(x, 3).hist.sum().backward()",
    "torch.histogram(torch.tensor([1, 2]), 3)",
    X + "torch.histogram(x.detach(), torch.tensor([0.0, 2.0], dtype=torch.float64))",
    X + "torch.histogram(x.detach(), 3, weight=torch.ones(3))",
    X + "torch.histogram(x.detach(), 3, weight=torch.ones(2, 4, dtype=torch.float64))",
    X + "torch.histogram(x.detach(), -1)",
    X + "torch.histogram(x.detach(), 3, range=(2.0, 1.0))",
    X + "torch.histogram(x.detach(), 3, range=(0.0, float('inf')))",
    X + "torch.histogram(x.detach(), torch.tensor([[1.0, 2.0]]))",
    "torch.histogram(torch.tensor([1.0, float('nan'), 3.0]), 2)",
]


@pytest.mark.parametrize("code", ERRORS)
def test_statistics_errors_match_torch(code):
    assert_same_error(code + "\n")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=9), st.floats(0, 1), st.sampled_from(MODES))
def test_quantile_values_match_torch(values, q, mode):
    expected = torch.quantile(torch.tensor(values, dtype=torch.float64), q, interpolation=mode)
    actual = gradviz.quantile(gradviz.tensor(values, dtype=gradviz.float64), q, interpolation=mode)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=12), st.integers(1, 9),
       st.sampled_from(("float32", "float64")), st.booleans())
def test_histogram_matches_torch(values, bins, dtype, density):
    expected = torch.histogram(torch.tensor(values, dtype=getattr(torch, dtype)), bins, density=density)
    actual = gradviz.histogram(gradviz.tensor(values, dtype=getattr(gradviz, dtype)), bins, density=density)
    np.testing.assert_array_equal(actual.bin_edges.numpy(), expected.bin_edges.numpy())
    np.testing.assert_allclose(actual.hist.numpy(), expected.hist.numpy(), rtol=1e-6)


def test_statistics_gradcheck():
    from gradviz.autograd import gradcheck, gradgradcheck

    d = gradviz.tensor([[1.0, 5.0, 2.0, 8.0], [3.0, -1.0, 0.0, 4.5]], dtype=gradviz.float64, requires_grad=True)
    q = gradviz.tensor([0.15, 0.5, 0.85], dtype=gradviz.float64)
    for mode in MODES:  # (a transposed result: gradcheck's own view(-1) wants it contiguous)
        assert gradcheck(lambda t: gradviz.quantile(t, q, dim=1, interpolation=mode).contiguous(), (d,))
    assert gradcheck(lambda t: gradviz.nanquantile(t, 0.3), (d,))
    assert gradgradcheck(lambda t: gradviz.cov(t), (d,))
    assert gradgradcheck(lambda t: gradviz.corrcoef(t), (d,))
    points = gradviz.tensor([0.0, 1.0, 3.0, 4.5], dtype=gradviz.float64, requires_grad=True)
    assert gradgradcheck(lambda t, p: gradviz.trapezoid(t * t, p), (d, points))
    assert gradgradcheck(lambda t: gradviz.cumulative_trapezoid(t * t, dx=0.5), (d,))
