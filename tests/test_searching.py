"""``searchsorted``, ``bucketize``, ``histc``, ``bincount``, ``unique``, ``unique_consecutive``, ``isin`` against PyTorch
2.13: values, dtypes (int64, int32 with ``out_int32``, the weights' dtype), printed text and errors; ``unique`` of a
tensor that requires grad records torch's node, whose backward raises torch's NotImplementedError."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

pytest.importorskip("torch")

import torch  # noqa: E402

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error  # noqa: E402

CASES = {
    "searchsorted": "a = torch.searchsorted(torch.tensor([1, 3, 5, 7]), torch.tensor([3, 6, 9, 0]))\n"
                    "b = torch.searchsorted(torch.tensor([1, 3, 5, 7]), 3, right=True)\nprint(a, b)\n",
    "searchsorted_int32_side": "a = torch.searchsorted(torch.tensor([1.0, 3.0, 5.0]), torch.tensor([3.0]), out_int32=True)\n"
                               "b = torch.searchsorted(torch.tensor([[1, 3, 5, 7], [2, 4, 6, 8]]), "
                               "torch.tensor([[3, 6, 9], [3, 6, 9]]), side='right')\nprint(a, b)\n",
    "searchsorted_sorter": "a = torch.searchsorted(torch.tensor([7, 1, 5, 3]), torch.tensor([3, 6]), "
                           "sorter=torch.tensor([1, 3, 2, 0]))\nprint(a)\n",
    "bucketize": "a = torch.bucketize(torch.tensor([[1, 5], [9, 3]]), torch.tensor([1, 3, 5, 7]), right=True)\n"
                 "b = torch.bucketize(torch.tensor([1.0, 6.5]), torch.tensor([1.0, 3.0]), out_int32=True)\n"
                 "c = torch.bucketize(2, torch.tensor([1, 3]))\nprint(a, b, c)\n",
    "isin": "a = torch.isin(torch.tensor([[1, 2], [3, 4]]), torch.tensor([2, 3]))\n"
            "b = torch.isin(torch.tensor([1, 2]), 2, invert=True)\nc = torch.isin(3, torch.tensor([1, 3]))\nprint(a, b, c)\n",
    "unique": "u, inverse, counts = torch.unique(torch.tensor([3, 1, 2, 3, 1, 7, 2, 2]), sorted=False, "
              "return_inverse=True, return_counts=True)\nv = torch.tensor([[2, 2], [1, 2]]).unique()\nprint(u, inverse, counts, v)\n",
    "unique_nan": "u, counts = torch.unique(torch.tensor([5.0, 1.0, float('nan'), 1.0, float('nan')]), return_counts=True)\n"
                  "print(u, counts)\n",
    "unique_dim": "u, inverse, counts = torch.unique(torch.tensor([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True, "
                  "return_counts=True)\nw = torch.unique(torch.tensor([[1, 2, 1], [3, 4, 3]]), dim=1)\nprint(u, inverse, w)\n",
    "unique_consecutive": "u, inverse, counts = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1]), "
                          "return_inverse=True, return_counts=True)\n"
                          "w, c = torch.tensor([[1, 1, 2], [1, 1, 3]]).unique_consecutive(dim=1, return_counts=True)\n"
                          "print(u, inverse, counts, w, c)\n",
    "bincount": "a = torch.bincount(torch.tensor([0, 1, 1, 3]))\n"
                "b = torch.tensor([0, 1, 1, 3]).bincount(weights=torch.tensor([0.5, 1.0, 1.0, 2.0]))\n"
                "c = torch.bincount(torch.tensor([0, 1]), weights=torch.tensor([1.0, 2.0], dtype=torch.float64), minlength=4)\n"
                "d = torch.bincount(torch.tensor([0, 1]), weights=torch.tensor([1, 2]))\n"
                "e = torch.tensor([], dtype=torch.int64).bincount(minlength=3)\nprint(a, b, c, d, e)\n",
    "histc": "a = torch.histc(torch.tensor([1.0, 2.0, 1.0, 4.0]), bins=4, min=0, max=3)\n"
             "b = torch.tensor([1.0, 2.0, 1.0]).histc(bins=4)\nc = torch.tensor([2.0, 2.0]).histc(bins=3)\n"
             "d = torch.histc(torch.tensor([0.5, 1.5], dtype=torch.float64), bins=2, min=0, max=2)\nprint(a, b, c, d)\n",
    "no_grad_outputs": "x = torch.tensor([1.0, 2.0, 1.0, 4.0], requires_grad=True)\nh = x.histc(bins=3)\n"
                       "s = torch.searchsorted(torch.tensor([1.0, 2.0]), x)\nm = torch.isin(x, x)\nprint(h, s, m)\n",
    "unique_requires_grad": "x = torch.tensor([[1.0, 2.0], [1.0, 2.0]], requires_grad=True)\nu = torch.unique(x)\n"
                            "d = x.unique(dim=0)\nc = torch.unique_consecutive(x)\nprint(u, d, c)\n",
}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_search_matches_torch(name, backend):
    assert_same(CASES[name], backend)


ERRORS = {
    "side_and_right": "torch.searchsorted(torch.tensor([1, 2]), torch.tensor([1]), side='left', right=True)",
    "side_unknown": "torch.searchsorted(torch.tensor([1, 2]), torch.tensor([1]), side='middle')",
    "searchsorted_shapes": "torch.searchsorted(torch.tensor([[1, 2]]), torch.tensor([1]))",
    "sorter_size": "torch.searchsorted(torch.tensor([1, 2]), torch.tensor([1]), sorter=torch.tensor([0]))",
    "bucketize_2d": "torch.bucketize(torch.tensor([1]), torch.tensor([[1]]))",
    "bincount_negative": "torch.bincount(torch.tensor([-1]))",
    "bincount_float": "torch.bincount(torch.tensor([1.0]))",
    "bincount_2d": "torch.bincount(torch.tensor([[1]]))",
    "bincount_minlength": "torch.bincount(torch.tensor([1]), minlength=-1)",
    "bincount_weights": "torch.bincount(torch.tensor([0, 1]), weights=torch.tensor([1.0]))",
    "histc_int": "torch.histc(torch.tensor([1]), bins=3)",
    "histc_bins": "torch.histc(torch.tensor([1.0]), bins=0)",
    "histc_range": "torch.histc(torch.tensor([1.0]), min=3, max=1)",
    "unique_dim": "torch.unique(torch.tensor([1, 2]), dim=1)",
    "unique_backward": "x = torch.tensor([1.0, 2.0], requires_grad=True)\ntorch.unique(x).sum().backward()",
    "unique_dim_backward": "x = torch.tensor([[1.0, 2.0]], requires_grad=True)\nx.unique(dim=0).sum().backward()",
    "unique_consecutive_backward": "x = torch.tensor([1.0, 2.0], requires_grad=True)\nx.unique_consecutive().sum().backward()",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_search_errors_match_torch(name):
    assert_same_error(ERRORS[name])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-5, 5, width=32), min_size=1, max_size=40), st.integers(1, 12),
       st.floats(-3, 0, width=32), st.floats(0.125, 4, width=32))
@example([3.850201368331909], 2, 0.0, 1.0)  # one value, at the middle of [x - 1, x + 1] in double, not in float
def test_histc_counts_like_torch(values, bins, low, width):
    data = np.array(values, dtype=np.float32)
    for kwargs in ({"bins": bins}, {"bins": bins, "min": low, "max": low + width}):
        np.testing.assert_array_equal(gv.histc(gv.tensor(data), **kwargs).numpy(),
                                      torch.histc(torch.tensor(data), **kwargs).numpy())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12), st.integers(1, 3), st.booleans())
def test_unique_and_searchsorted_like_torch(values, rows, right):
    data = np.array(values * rows).reshape(rows, -1)
    for dim in (None, 0, 1):
        ours = gv.unique(gv.tensor(data), return_inverse=True, return_counts=True, dim=dim)
        theirs = torch.unique(torch.tensor(data), return_inverse=True, return_counts=True, dim=dim)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        ours = gv.unique_consecutive(gv.tensor(data), return_inverse=True, return_counts=True, dim=dim)
        theirs = torch.unique_consecutive(torch.tensor(data), return_inverse=True, return_counts=True, dim=dim)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    boundaries = np.sort(data[0])
    np.testing.assert_array_equal(gv.searchsorted(gv.tensor(boundaries), gv.tensor(data), right=right).numpy(),
                                  torch.searchsorted(torch.tensor(boundaries), torch.tensor(data), right=right).numpy())
