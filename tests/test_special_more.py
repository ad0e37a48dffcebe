"""``torch.special``'s extras against PyTorch 2.13: ``i0e``, ``i1``, ``i1e``, ``polygamma``, ``multigammaln``,
``ndtri``, ``log_ndtr``, ``erfcx``, ``zeta``, ``gammainc``, ``gammaincc`` (and their top-level names
``torch.polygamma``, ``torch.mvlgamma``, ``torch.igamma``, ``torch.igammac``).

gradviz computes them in float64 from series, asymptotic expansions and continued fractions (no scipy);
the grids below compare them with torch's to 1e-13 relative (the incomplete gamma functions 1e-12), and
digamma and trigamma (``polygamma`` 0 and 1) exactly: they follow PyTorch's own algorithms.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([-2.5, -0.3, 0.0, 0.7, 1.5, 4.0, 35.0], dtype=torch.float64, requires_grad=True)\n"
POSITIVE = "x = torch.tensor([0.2, 0.7, 1.5, 4.0, 12.5], dtype=torch.float64, requires_grad=True)\n"
P = "p = torch.tensor([1e-12, 0.01, 0.3, 0.5, 0.8, 0.999], dtype=torch.float64, requires_grad=True)\n"
F32 = "x = torch.tensor([-2.5, -0.3, 0.7, 1.5, 4.0], requires_grad=True)\n"

CASES = {
    "i0e": X + weighted_backward("torch.special.i0e(x)") + "print(y)\n",
    "i1": X + weighted_backward("torch.special.i1(x)") + "print(y)\n",
    "i1e": X + weighted_backward("torch.special.i1e(x)") + "print(y)\n",
    "i0e_float32": F32 + weighted_backward("torch.special.i0e(x) + torch.special.i1e(x) + torch.special.i1(x)"),
    "polygamma_0_to_4": POSITIVE + "y = sum(torch.special.polygamma(n, x) * (n + 1) for n in range(5))\n"
    "y.sum().backward()\nprint(y)\n",
    "polygamma_top_level_and_method": POSITIVE + "y = torch.polygamma(2, x) + x.polygamma(3)\ny.sum().backward()\n",
    "polygamma_negative_x": "x = torch.tensor([-2.5, -0.3, -1.0, 0.0], dtype=torch.float64, requires_grad=True)\n"
    "y = torch.special.polygamma(1, x) + torch.special.polygamma(2, x)\nprint(y)\n",
    "multigammaln": "x = torch.tensor([2.5, 3.0, 7.25], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("torch.special.multigammaln(x, 3) + torch.mvlgamma(x, p=1)") + "print(y)\n",
    "ndtri": P + weighted_backward("torch.special.ndtri(p)") + "print(y)\n",
    "ndtri_edges": "y = torch.special.ndtri(torch.tensor([0.0, 1.0, -0.5, 1.5, 0.5]))\nprint(y)\n",
    "log_ndtr": X + weighted_backward("torch.special.log_ndtr(x * 3)") + "print(y)\n",
    "erfcx": X + weighted_backward("torch.special.erfcx(x)") + "print(y)\n",
    "erfcx_far": "y = torch.special.erfcx(torch.tensor([-30.0, -26.0, 1e9, 50.0, 1e300], dtype=torch.float64))\nprint(y)\n",
    "zeta": "s = torch.tensor([1.5, 2.0, 3.0, 0.5, 1.0], dtype=torch.float64, requires_grad=True)\n"
    "q = torch.tensor([1.0, 0.5, 2.0, 1.0, 3.0], dtype=torch.float64)\n"
    "y = torch.special.zeta(s, q)\nz = torch.special.zeta(s, 2.0)\nw = torch.special.zeta(2.0, q.requires_grad_())\nprint(y, z, w)\n"
    "v = torch.special.zeta(s.detach(), q)\n(v * torch.arange(5.0)).sum().backward()\n(w * torch.arange(5.0)).sum().backward()\n",
    "zeta_negative_q": "y = torch.special.zeta(torch.tensor([2.0, 2.5, 3.0]), torch.tensor([-1.5, -1.5, -2.0]))\nprint(y)\n",
    "gammainc": "a = torch.tensor([0.5, 1.0, 2.5, 7.0], dtype=torch.float64)\n"
    "x = torch.tensor([0.3, 2.0, 2.5, 12.0], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("torch.special.gammainc(a, x) * 3 + torch.special.gammaincc(a, x) * 2 + torch.igamma(a, x)")
    + "print(torch.special.gammainc(a, x), torch.special.gammaincc(a, x), x.igammac(a))\n",
    "gammainc_edges": "y = torch.special.gammainc(torch.tensor([0.0, 0.0, 1.0, -1.0, 2.0]), torch.tensor([1.0, 0.0, 0.0, 1.0, "
    "float('inf')]))\nz = torch.special.gammaincc(torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1.0, 0.0, -1.0]))\n"
    "print(y, z)\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_special_functions_match_torch(name, backend):
    assert_same(CASES[name], backend=backend)


ERRORS = [
    "torch.special.polygamma(-1, torch.ones(2))",
    "torch.special.polygamma(1.5, torch.ones(2))",
    "torch.special.multigammaln(torch.ones(2), 0)",
    # derivatives PyTorch does not implement
    "s = torch.tensor([2.0, 3.0], requires_grad=True)\ntorch.special.zeta(s, torch.ones(2)).sum().backward()",
    "s = torch.tensor([2.0, 3.0], requires_grad=True)\ntorch.special.zeta(s, 2.0).sum().backward()",
    "s = torch.tensor([2.0, 3.0], requires_grad=True)\ntorch.special.zeta(s, s * 2).sum().backward()",
    "a = torch.tensor([2.0, 3.0], requires_grad=True)\ntorch.special.gammainc(a, torch.ones(2)).sum().backward()",
    "a = torch.tensor([2.0, 3.0], requires_grad=True)\ntorch.special.gammaincc(a, a * 2).sum().backward()",
]


@pytest.mark.parametrize("code", ERRORS)
def test_special_errors_match_torch(code):
    assert_same_error(code + "\n")


def _grid_values(name, values):
    import torch

    function = {"i0e": "i0e", "i1": "i1", "i1e": "i1e", "erfcx": "erfcx", "log_ndtr": "log_ndtr", "ndtri": "ndtri"}[name]
    return (getattr(torch.special, function)(torch.tensor(values)).numpy(),
            getattr(gv.special, function)(gv.tensor(values)).numpy())


WIDE = np.concatenate([np.linspace(-40, 40, 801), np.linspace(-3, 3, 97), [0.0, 1e-300, -1e-10, 700, -700, 1000]])
UNIT = np.concatenate([np.linspace(0, 1, 1001), [1e-300, 1e-20, 1e-10, 1 - 1e-10, -0.1, 1.1]])


@pytest.mark.parametrize("name", ["i0e", "i1", "i1e", "erfcx", "log_ndtr", "ndtri"])
def test_values_on_a_grid_match_torch(name):
    expected, actual = _grid_values(name, UNIT if name == "ndtri" else WIDE)
    np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=0, equal_nan=True)


@pytest.mark.parametrize("n", range(5))
def test_polygamma_on_a_grid_matches_torch(n):
    import torch

    grid = np.concatenate([np.linspace(0.05, 30, 300), np.linspace(-5.5, -0.05, 50)])
    expected = torch.special.polygamma(n, torch.tensor(grid)).numpy()
    actual = gv.special.polygamma(n, gv.tensor(grid)).numpy()
    if n < 2:  # digamma and trigamma: PyTorch's own algorithms, so the same bits
        np.testing.assert_array_equal(actual, expected)
    np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=0)


def test_multigammaln_zeta_and_incomplete_gamma_on_grids_match_torch():
    import torch

    points = np.linspace(2, 30, 200)
    for p in (1, 2, 4):
        np.testing.assert_allclose(gv.special.multigammaln(gv.tensor(points), p).numpy(),
                                   torch.special.multigammaln(torch.tensor(points), p).numpy(), rtol=1e-13)
    s, q = (grid.ravel() for grid in np.meshgrid(np.linspace(1.01, 12, 60), np.linspace(0.1, 15, 60)))
    np.testing.assert_allclose(gv.special.zeta(gv.tensor(s), gv.tensor(q)).numpy(),
                               torch.special.zeta(torch.tensor(s), torch.tensor(q)).numpy(), rtol=1e-13)
    a, x = (grid.ravel() for grid in np.meshgrid(np.linspace(0.05, 20, 50), np.linspace(0.01, 40, 50)))
    for name in ("gammainc", "gammaincc"):
        np.testing.assert_allclose(getattr(gv.special, name)(gv.tensor(a), gv.tensor(x)).numpy(),
                                   getattr(torch.special, name)(torch.tensor(a), torch.tensor(x)).numpy(),
                                   rtol=1e-12, atol=1e-300)


def test_float32_values_are_within_a_few_float32_ulps_of_torch():
    import torch

    # beyond ±4 torch rounds x² (erfcx) or erfc (log_ndtr) in float32 on the way: gradviz is the closer there
    grid = np.linspace(-4, 4, 81).astype(np.float32)
    for name in ("i0e", "i1", "i1e", "erfcx", "log_ndtr"):
        expected = getattr(torch.special, name)(torch.tensor(grid)).numpy()
        actual = getattr(gv.special, name)(gv.tensor(grid)).numpy()
        assert actual.dtype == np.float32
        np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=0, err_msg=name)  # torch: float32 arithmetic


def test_formulas_give_what_torchs_nodes_sent():
    """Each new node's learner formula, computed from what torch's node saved, gives the gradient it sent."""
    import torch

    from gradviz.autograd.engine import backward_steps
    from gradviz.snapshot.formula_table import TABLE
    from gradviz.snapshot.formulas import gradient_sent
    from gradviz.snapshot.model import to_numpy

    x = torch.tensor([-2.5, -0.3, 0.0, 0.7, 1.5, 4.0], dtype=torch.float64, requires_grad=True)
    positive = torch.tensor([0.2, 0.7, 1.5, 4.0], dtype=torch.float64, requires_grad=True)
    a = torch.tensor([0.5, 1.0, 2.5, 7.0], dtype=torch.float64)
    out = (torch.special.i0e(x) + torch.special.i1(x) * 2 + torch.special.i1e(x) * 3 + torch.special.erfcx(x)
           + torch.special.log_ndtr(x)).sum()
    out = out + (torch.special.polygamma(3, positive) + torch.special.multigammaln(positive + 2, 2)
                 + torch.special.ndtri(positive / 5) + torch.special.zeta(a + 1, positive)
                 + torch.special.zeta(2.5, positive) + torch.special.gammainc(a, positive)
                 + torch.special.gammaincc(a, positive) * 2).sum()
    checked = set()
    for step in backward_steps(out, retain_graph=True, dry_run=True):
        assert step.name in TABLE, f"torch node without a learner formula: {step.name}"
        if step.is_accumulate:
            continue
        arriving = [None if grad is None else to_numpy(grad) for grad in step.grad_outputs]
        shapes = tuple(None if grad is None else tuple(grad.shape) for grad in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            if sent is not None:
                np.testing.assert_allclose(gradient_sent(step.node, slot, arriving, shapes), to_numpy(sent),
                                           rtol=1e-9, atol=1e-12, err_msg=f"{step.name}, input {slot}")
        checked.add(step.name)
    assert {"SpecialI0EBackward0", "SpecialI1Backward0", "SpecialI1EBackward0", "SpecialErfcxBackward0",
            "SpecialLogNdtrBackward0", "PolygammaBackward0", "MvlgammaBackward0", "SpecialNdtriBackward0",
            "SpecialZetaBackward0", "SpecialZetaBackward1", "IgammaBackward0", "IgammacBackward0"} <= checked
