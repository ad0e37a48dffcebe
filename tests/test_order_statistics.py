"""Order statistics against PyTorch 2.13: ``kthvalue``, ``median``, ``nanmedian``, ``mode``, ``cummax``, ``cummin``.

Which of several equal elements each one reports is decided by the algorithm torch's CPU kernel runs,
so the ties are the point: hypothesis draws rows full of repeated values (and NaNs) and the indices,
values and gradients must be torch's. ``stl_order``'s libstdc++ algorithms are also checked to sort.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("torch")

import torch  # noqa: E402

import gradviz as gv  # noqa: E402
from gradviz.ops import stl_order  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

X = "x = torch.tensor([[0.5, -1.5, 2.0, 0.1], [1.2, 0.3, -0.7, 0.9], [0.2, 1.1, -0.4, 0.6]], requires_grad=True)\n"
TIES = "x = torch.tensor([[2.0, 1.0, 2.0, 1.0, 3.0], [0.0, 0.0, 0.0, 1.0, 1.0], [5.0, 5.0, 5.0, 5.0, 5.0]], requires_grad=True)\n"
NANS = "x = torch.tensor([[1.0, float('nan'), 2.0, 0.5], [float('nan'), 3.0, float('nan'), 3.0]], requires_grad=True)\n"

CASES = {
    "kthvalue": X + weighted_backward("x.kthvalue(2).values") + "r = x.kthvalue(3, 0)\nprint(r)\n",
    "kthvalue_keepdim": X + weighted_backward("torch.kthvalue(x, 1, dim=0, keepdim=True)[0]"),
    "kthvalue_ties": TIES + weighted_backward("x.kthvalue(3, 1)[0]") + "print(x.kthvalue(2))\n",
    "median_all": X + weighted_backward("x.median()") + "print(y)\n",
    "median_all_ties": TIES + weighted_backward("x.median()"),
    "median_dim": X + weighted_backward("x.median(1).values") + "print(x.median(0))\n",
    "median_dim_ties": TIES + weighted_backward("torch.median(x, -1, keepdim=True).values") + "print(x.median(1))\n",
    "median_nan": NANS + "a = x.median()\nb = x.median(1)\nprint(a, b)\n",
    "nanmedian": NANS + weighted_backward("x.nanmedian(1).values") + "print(x.nanmedian(), x.nanmedian(0))\n",
    "nanmedian_all": NANS + weighted_backward("x.nanmedian()"),
    "mode": TIES + weighted_backward("x.mode().values") + "print(x.mode(0))\n",
    "mode_keepdim": TIES + weighted_backward("torch.mode(x, 0, keepdim=True)[0]"),
    "cummax": X + weighted_backward("x.cummax(1).values") + "print(x.cummax(0))\n",
    "cummin": TIES + weighted_backward("torch.cummin(x, dim=1)[0]") + "print(x.cummin(-1))\n",
    "cummax_nan": NANS + weighted_backward("x.cummax(1).values") + "print(x.cummin(1))\n",
    "int_inputs": "i = torch.tensor([[3, 1, 3], [2, 2, 0]])\na = i.median(1)\nb = i.mode(1)\nc = i.kthvalue(2)\n"
                  "d = i.cummax(1)\ne = i.median()\nprint(a, b, c, d, e)\n",
    "scalar": "s = torch.tensor(2.5, requires_grad=True)\n" + weighted_backward("s.median(0).values + s.kthvalue(1)[0] "
                                                                           "+ s.cummin(0)[0] + s.mode()[0]"),
}
BACKENDS = ("numpy", "torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_order_statistic_matches_torch(name, backend):
    assert_same(CASES[name], backend)


ERRORS = {
    "kthvalue_k_too_large": "torch.tensor([1.0, 2.0]).kthvalue(3)",
    "kthvalue_k_zero": "torch.tensor([[1.0, 2.0]]).kthvalue(0, 1)",
    "median_empty_dim": "torch.zeros(0, 3).median(0)",
    "kthvalue_bad_dim": "torch.ones(2, 2).kthvalue(1, 2)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_order_statistic_errors_match_torch(name):
    assert_same_error(ERRORS[name])


def test_second_order_through_kthvalue_and_cummax():
    assert_same(X + "y = (x.kthvalue(2, 1).values ** 3).sum() + (x.cummax(1).values ** 2).sum()\n"
                "g, = torch.autograd.grad(y, x, create_graph=True)\n(g * g).sum().backward()\n")


rows = st.lists(st.integers(0, 3), min_size=1, max_size=70)


def _with_nans(values, nan_every):
    array = np.array(values, dtype=np.float64)
    if nan_every:
        array[::nan_every] = np.nan
    return array


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(rows, min_size=1, max_size=3).map(lambda rs: [r[:min(map(len, rs))] for r in rs]),
       nan_every=st.sampled_from([0, 0, 0, 3, 7]), k=st.integers(1, 70))
def test_ties_land_where_torch_puts_them(rows, nan_every, k):
    data = np.stack([_with_nans(r, nan_every) for r in rows])
    k = min(k, data.shape[1])
    ours, theirs = gv.tensor(data), torch.tensor(data)
    for name, call in (("kthvalue", lambda t: t.kthvalue(k, 1)), ("median", lambda t: t.median(1)),
                       ("nanmedian", lambda t: t.nanmedian(1)), ("mode", lambda t: t.mode(1)),
                       ("cummax", lambda t: t.cummax(1)), ("cummin", lambda t: t.cummin(1))):
        got, expected = call(ours), call(theirs)
        np.testing.assert_array_equal(got.values.numpy(), expected.values.numpy(), err_msg=name)
        np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy(), err_msg=name)
    np.testing.assert_array_equal(ours.median().numpy(), theirs.median().numpy())
    np.testing.assert_array_equal(ours.nanmedian().numpy(), theirs.nanmedian().numpy())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=80), st.integers(0, 79))
def test_libstdcxx_algorithms_order_what_they_should(values, nth):
    """``std_sort`` sorts; ``nth_element`` puts the nth smallest at nth with nothing larger before it."""
    ordered = list(values)
    stl_order.std_sort(ordered, lambda a, b: a < b)
    assert ordered == sorted(values)
    if values:
        nth = nth % len(values)
        partitioned = list(values)
        stl_order.nth_element(partitioned, nth, lambda a, b: a < b)
        assert partitioned[nth] == sorted(values)[nth]
        assert all(v <= partitioned[nth] for v in partitioned[:nth])
        assert all(v >= partitioned[nth] for v in partitioned[nth + 1:])


@pytest.mark.parametrize("function", ["median", "nanmedian", "mode"])
@pytest.mark.parametrize("shape,dim", [((0, 0), 0), ((0, 0), 1), ((0,), 0), ((2, 0), 1), ((0, 2), 0), ((2, 0, 3), 1)])
def test_a_reduced_dim_of_size_zero_is_refused_as_torch_does(function, shape, dim):
    """torch checks the reduced dim alone: size 0 raises even when the result would be empty too
    (hypothesis found ``zeros(0, 0).median(0)`` answering; nanmedian's message names median())."""
    assert_same_error(f"torch.zeros{shape}.{function}({dim})")
