"""Shape helpers (``gradviz/ops/shape_helpers.py``) against PyTorch 2.13 itself: ``tensor_split``,
``split_with_sizes``, ``rot90``, ``diagflat``, ``dstack``, ``row_stack``, ``block_diag``, ``sum_to_size``,
``unravel_index``, ``torch.fill``, ``torch.range`` (and its warning), ``logspace``, ``byte``/``char``/``short``,
``new``, ``get_device``. Each snippet runs in both libraries (numpy and torch backends); values, dtypes, grads,
the whole ``grad_fn`` graph and the printed text must agree, and so must the errors.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

A = "a = torch.tensor([[1.0, -2.0, 0.3], [0.5, 2.0, -1.0]], requires_grad=True)\n"
C = "c = torch.arange(24.0).reshape(2, 3, 4).requires_grad_()\n"


def _backward_all(names: str) -> str:
    """Backward from a weighted sum of every piece in ``names`` (a tuple of tensors)."""
    return (f"total = sum(((p * torch.arange(1.0, p.numel() + 1.0).reshape(p.shape)).sum() for p in {names}), "
            "torch.tensor(0.0))\ntotal.backward()\n")


CASES = {
    # -- tensor_split, split_with_sizes ----------------------------------------------------------------------
    "tensor_split_sections": A + "ps = torch.tensor_split(a, 2, dim=1)\nqs = a.tensor_split(4, -1)\n"
    "rs = torch.tensor_split(a, 2)\nss = torch.tensor_split(a, 2, axis=1)\nts = a.tensor_split([1], axis=-1)\n"
    + _backward_all("ps + qs + rs + ss + ts") + "print(ps, qs, rs, ss, ts)\n",
    "tensor_split_indices": A + "ps = torch.tensor_split(a, [1, 5], dim=1)\nqs = a.tensor_split([2, 1], 1)\n"
    "rs = torch.tensor_split(a, [-1], dim=1)\nss = torch.tensor_split(a, (), 1)\n" + _backward_all("ps + qs + rs + ss")
    + "print(ps, qs, rs, ss)\n",
    "tensor_split_tensor_argument": A + "ps = torch.tensor_split(a, torch.tensor([1, 2]), 1)\n"
    "qs = torch.tensor_split(a, torch.tensor(2), dim=1)\n" + _backward_all("ps + qs") + "print(ps, qs)\n",
    "tensor_split_3d": C + "ps = torch.tensor_split(c, 3, dim=2)\n" + _backward_all("ps") + "print(ps)\n",
    "split_with_sizes": A + "ps = a.split_with_sizes([1, 2], 1)\nqs = torch.split_with_sizes(a, [1, 1])\n"
    "rs = a.split_with_sizes([2, 1], dim=-1)\n" + _backward_all("ps + qs + rs") + "print(ps, qs)\n",
    # -- rot90 -------------------------------------------------------------------------------------------------
    "rot90": A + C + "ys = [torch.rot90(a), a.rot90(2), a.rot90(-1, [1, 0]), a.rot90(4), torch.rot90(a, 7, (-1, -2)), "
    "torch.rot90(c, 1, [0, 2]), c.rot90(-3, (2, 1))]\n" + _backward_all("ys") + "print(ys)\n",
    "rot90_double_backward": "x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)\n"
    "y = torch.rot90(x * x, 1)\ng, = torch.autograd.grad((y * torch.arange(4.0, dtype=torch.float64).reshape(2, 2)).sum(), "
    "x, create_graph=True)\ng.sum().backward()\nprint(g)\n",
    # -- diagflat, dstack, row_stack, block_diag ------------------------------------------------------------------
    "diagflat": A + "ys = [torch.diagflat(a), a[0].diagflat(1), torch.diagflat(a, -1), torch.diagflat(a[0, 0])]\n"
    + _backward_all("ys") + "print(ys)\n",
    "dstack_row_stack": A + "ys = [torch.dstack([a, a * 2]), torch.dstack((a[0], a[1])), torch.dstack([a[0, 0], a[0, 1]]), "
    "torch.row_stack([a, a[0]]), torch.row_stack((a[0], a[1]))]\n" + _backward_all("ys") + "print(ys)\n",
    "block_diag": A + "ys = [torch.block_diag(a, a[0], torch.tensor(3.0)), torch.block_diag(a), "
    "torch.block_diag(a[0, 0], a.t())]\n" + _backward_all("ys") + "z = torch.block_diag()\n"
    "w = torch.block_diag(torch.tensor([1, 2]), torch.tensor([[1.5]]))\n"
    "v = torch.block_diag(torch.ones(0, 2), torch.tensor([[1, 2]], dtype=torch.int32))\nprint(ys, z, w, v)\n",
    # -- sum_to_size -------------------------------------------------------------------------------------------
    "sum_to_size": A + C + "ys = [a.sum_to_size(1, 3), a.sum_to_size((3,)), a.sum_to_size(2, 1), a.sum_to_size([1, 1]), "
    "c.sum_to_size(3, 1), c.sum_to_size(1, 1, 4)]\ns = a.sum_to_size(2, 3)\nsame = s is a\n" + _backward_all("ys")
    + "print(ys, same)\n",
    # -- unravel_index --------------------------------------------------------------------------------------------
    "unravel_index": "r = torch.unravel_index(torch.tensor([4, 1, 5]), (2, 3))\n"
    "s = torch.unravel_index(torch.tensor([[4, 1]]), (2, 3))\nt = torch.unravel_index(torch.tensor(3), 4)\n"
    "u = torch.unravel_index(torch.tensor([6, -1, 7]), torch.Size([2, 3]))\n"
    "v = torch.unravel_index(torch.tensor([3], dtype=torch.int32), (2, 2, 1))\nprint(r, s, t, u, v)\n",
    # -- torch.fill -------------------------------------------------------------------------------------------------
    "fill": A + "x = torch.tensor(2.0, requires_grad=True)\ny = torch.fill(a, 1.5)\nz = torch.fill(a * 1, x)\n"
    "((y + z) * torch.arange(6.0).reshape(2, 3)).sum().backward()\n"
    "w = torch.fill(torch.tensor([1, 2]), 2.7)\nv = torch.fill(a, torch.tensor(3.0))\nprint(y, z, w, v)\n",
    # -- creation: torch.range, logspace --------------------------------------------------------------------------
    "range": "import warnings\nwith warnings.catch_warnings(record=True) as caught:\n"
    "    warnings.simplefilter('always')\n    r = torch.range(1, 4)\n    s = torch.range(0, 1, 0.25)\n"
    "    t = torch.range(0, 5, 2, dtype=torch.int64)\n    u = torch.range(1, 0, -0.5)\n"
    "    v = torch.range(0, 2, requires_grad=True)\n"
    "print(r, s, t, u, v, [str(w.message) for w in caught], [w.category.__name__ for w in caught])\n",
    "logspace": "r = torch.logspace(0, 2, 3)\ns = torch.logspace(0, 2, 3, base=2)\nt = torch.logspace(0, 3, 4, "
    "dtype=torch.int32)\nu = torch.logspace(-1, 1, 5, base=3, dtype=torch.float64)\nv = torch.logspace(0, 1, 1)\n"
    "w = torch.logspace(2, 2, 0)\nx = torch.logspace(0, 1, 3, requires_grad=True)\ny = torch.logspace(-2, 3, 11)\n"
    "print(r, s, t, u, v, w, x, y)\n",
    # -- cartesian_prod, combinations, vander, linalg.vander -------------------------------------------------------
    "cartesian_prod": "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = torch.tensor([4.0, 5.0], requires_grad=True)\n"
    "c = torch.cartesian_prod(x, y)\nd = torch.cartesian_prod(x, y, x[:2])\nsame = torch.cartesian_prod(x) is x\n"
    + _backward_all("(c, d)") + "e = torch.cartesian_prod(torch.tensor([1, 2]), torch.tensor([3]))\nprint(c, d, e, same)\n",
    "combinations": "x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)\nk = torch.combinations(x)\n"
    "m = torch.combinations(x, 3, with_replacement=True)\nn = torch.combinations(x, r=1)\n" + _backward_all("(k, m, n)")
    + "z = torch.combinations(x, 0)\nw = torch.combinations(x, 5)\nv = torch.combinations(torch.tensor([1, 2, 3]), "
    "with_replacement=True)\nprint(k, m, n, z, w, v)\n",
    "vander": "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\nv = torch.vander(x)\n"
    "w = torch.vander(x, N=2, increasing=True)\nu = torch.vander(torch.tensor([1, 2]), 3)\nt = torch.vander(x, 0)\n"
    "s = torch.vander(x, 1)\nprint(v, w, u, t, s)\n",
    "vander_backward_refused_as_in_torch": "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\nv = torch.vander(x)\n"
    "try:\n    v.sum().backward()\nexcept RuntimeError as error:\n    print(error)\n",
    "linalg_vander": "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\nv = torch.linalg.vander(x)\n"
    "w = torch.linalg.vander(x, N=4)\nb = torch.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)\n"
    "u = torch.linalg.vander(b, N=3)\n" + _backward_all("(v, w, u)")
    + "i = torch.linalg.vander(torch.tensor([[1, 2], [3, 4]]), N=3)\nprint(v, w, u, i)\n",
    # -- squeeze_, unsqueeze_, t_, transpose_ ------------------------------------------------------------------
    "view_ops_in_place": "a = torch.arange(6.0).reshape(2, 1, 3).requires_grad_()\nb = a * 1\nv0 = b._version\n"
    "r = b.squeeze_(-2)\nc = a * 2\nc.squeeze_((-2, 0))\nd = a * 3\nd.squeeze_()\ne = a * 4\ne.unsqueeze_(-1)\n"
    "f = a * 5\nf.transpose_(-1, 0)\ng = (a * 6).squeeze(1)\ng.t_()\nh = a * 7\nh.squeeze_(1)\n"
    "ys = [b, c, d, e, f, g, h]\n" + _backward_all("ys") + "print(ys, r is b, b._version - v0, f.is_contiguous(), "
    "f.stride())\n",
    "view_ops_in_place_views": "a = torch.arange(6.0).reshape(2, 3).requires_grad_()\nb = a * 1\nw = b[0]\n"
    "w.unsqueeze_(0)\nu = b.view(6)\nb.t_()\nb.mul_(2)\nb.sum().backward()\n"
    "print(w, u, w._base is b, b._version)\n",
    "view_ops_in_place_no_grad": "a = torch.arange(6.0).reshape(2, 3).requires_grad_()\nb = a * 1\n"
    "with torch.no_grad():\n    b.unsqueeze_(0)\nc = torch.ones(2, 3)\nc.t_()\nprint(b, c, c.stride(), c._version)\n",
    # -- conversions, new, get_device -------------------------------------------------------------------------------
    "byte_char_short": A + "b = (a * 100).byte()\nc = a.char()\nd = a.short()\ne = torch.tensor([True, False]).short()\n"
    "print(b, c, d, e)\n",
    "new": A + "n1 = a.new([1, 2])\nn2 = a.new()\nn3 = a.new((2,))\nn4 = torch.tensor([1, 2]).new([3.7])\n"
    "n5 = a.new(torch.Size([2, 3])).shape\nn6 = a.new(2, 3).shape\nn7 = a.new(a.detach())\nprint(n1, n2, n3, n4, n5, n6, "
    "n1.requires_grad)\n",
    "get_device": A + "print(a.get_device(), torch.get_device(a), torch.tensor(1).get_device())\nz = a * 1\n",
}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_shape_helpers_match_torch(name, backend):
    assert_same(CASES[name], backend=backend)


ERRORS = [
    A + "torch.tensor_split(a, 0)",
    A + "torch.tensor_split(a, torch.tensor([[1]]))",
    A + "torch.tensor_split(a, torch.tensor([1.0]))",
    "torch.tensor_split(torch.tensor(1.0), 1)",
    A + "torch.tensor_split(a, 2, dim=2)",
    A + "a.split_with_sizes([1, 1], 1)",
    A + "torch.rot90(a, 1, [0])",
    A + "torch.rot90(a, 1, [0, 0])",
    A + "torch.rot90(a, 1, [0, 2])",
    A + "torch.rot90(a[0])",
    A + "torch.rot90(a, 1, [0, -2])",
    "torch.block_diag(torch.ones(2, 2, 2))",
    A + "a.sum_to_size(1, 2, 3)",
    A + "a.sum_to_size(3, 3)",
    A + "a.sum_to_size(2, 2)",
    "torch.unravel_index(torch.tensor([1.0]), (2, 3))",
    A + "torch.fill(a, torch.tensor([1.0, 2.0]))",
    "torch.range(0, 5, 0)",
    "torch.range(0, 5, -1)",
    "torch.logspace(0, 1, -1)",
    "torch.tensor([1.0, 2.0]).new(torch.tensor([1, 2]))",
    A + "(a * 1).t_().unsqueeze_(0).t_()",
    A + "torch.cartesian_prod(a[0], a)",
    A + "torch.combinations(a[0], -1)",
    A + "torch.combinations(a)",
    A + "torch.vander(a[0], -1)",
    A + "torch.vander(a)",
    A + "torch.linalg.vander(a, N=1)",
    "torch.linalg.vander(torch.tensor(2.0))",
    "torch.linalg.vander(torch.tensor([True]))",
    A + "a.unsqueeze_(0)",
    A + "a[0].unsqueeze_(0)",
    A + "(a * 1).squeeze_(3)",
    A + "(a * 1).unsqueeze_(5)",
    A + "(a * 1).transpose_(0, 3)",
]


@pytest.mark.parametrize("code", ERRORS)
def test_shape_helpers_errors_match_torch(code):
    assert_same_error(code + "\n")


def test_range_warns_at_the_callers_line():
    """The deprecation warning names the learner's line, not gradviz's, as PyTorch's does."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gradviz.range(0, 3)
    assert caught and caught[0].filename == __file__ and caught[0].category is UserWarning


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.one_of(st.integers(1, 9), st.lists(st.integers(-9, 9), max_size=4)), st.integers(-2, 1))
def test_tensor_split_pieces_match_torch(size, indices_or_sections, dim):
    """Every way of cutting: the pieces' shapes and values, for sections and for any indices (out of range,
    decreasing, negative)."""
    values = np.arange(2.0 * size).reshape(2, size)
    expected = torch.tensor_split(torch.tensor(values), indices_or_sections, dim)
    actual = gradviz.tensor_split(gradviz.tensor(values), indices_or_sections, dim)
    assert len(actual) == len(expected)
    for piece_t, piece_g in zip(expected, actual):
        np.testing.assert_array_equal(piece_g.numpy(), piece_t.numpy())


@settings(max_examples=40, deadline=None)
@given(st.floats(-3, 3), st.floats(-3, 3), st.integers(0, 40), st.sampled_from((10.0, 2.0, 0.5, 3.0)),
       st.sampled_from(("float32", "float64")))
def test_logspace_matches_torch(start, end, steps, base, dtype):
    expected = torch.logspace(start, end, steps, base, dtype=getattr(torch, dtype))
    actual = gradviz.logspace(start, end, steps, base, dtype=getattr(gradviz, dtype))
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=2e-6 if dtype == "float32" else 1e-14)


def test_rot90_and_block_diag_gradgradcheck():
    from gradviz.autograd import gradcheck, gradgradcheck

    x = gradviz.tensor(np.linspace(-1, 1, 12).reshape(2, 3, 2), dtype=gradviz.float64, requires_grad=True)
    assert gradcheck(lambda t: gradviz.rot90(t, 3, (0, 2)), (x,))
    assert gradgradcheck(lambda t: gradviz.rot90(t * t, 1, (2, 1)), (x,))
    m = gradviz.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=gradviz.float64, requires_grad=True)
    v = gradviz.tensor([1.5, -0.5, 0.75], dtype=gradviz.float64, requires_grad=True)
    assert gradcheck(lambda p, q: gradviz.block_diag(p, q), (m, v))
    assert gradcheck(lambda p: gradviz.tensor_split(p, [1], 1)[1] * 2, (m,))
    assert gradcheck(lambda p: p.sum_to_size(1, 2), (m,))
    w = gradviz.tensor([0.5, 2.5], dtype=gradviz.float64, requires_grad=True)
    assert gradcheck(lambda p, q: gradviz.cartesian_prod(p, q), (v, w))
    assert gradcheck(lambda p: gradviz.combinations(p, 2, with_replacement=True), (v,))
    assert gradgradcheck(lambda p: gradviz.linalg.vander(p, N=4), (v,))
