"""The rest of pooling against PyTorch 2.13: ``F.max_pool3d``/``avg_pool3d``/``adaptive_avg_pool3d``, adaptive
max pooling (1-d, 2-d, 3-d, return_indices), ``max_unpool1d/2d/3d``, ``lp_pool1d/2d/3d`` (PyTorch's composite),
``F.fold``/``F.unfold``, ``F.local_response_norm`` (PyTorch's composite, 3-d, 4-d and 5-d input) and their
modules: values, grads, graphs with saved values, second-order nodes, printed modules, errors; central
differences to first and second order; hypothesis over shapes, windows, strides, paddings and ceil_mode.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz as gv  # noqa: E402
from gradviz.autograd.gradcheck import gradcheck, gradgradcheck  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402


def leaf(*shape, dtype: str = "float64") -> str:
    count = int(np.prod(shape))
    return (f"x = ((torch.arange({count}, dtype=torch.{dtype}).reshape({list(shape)}) * 0.37) % 1.9 - 0.8)"
            ".requires_grad_()\n")


def second_order(expression: str) -> str:
    """``y = expression`` of ``x``, its gradient recorded with create_graph, then a backward through that."""
    return (f"y = {expression}\ng, = torch.autograd.grad((y * y).sum(), (x,), create_graph=True)\n"
            "(g * g).sum().backward()\n")


ROUNDED = "x = torch.tensor(np_data, requires_grad=True)\n"

CASES = {
    "max_pool3d": leaf(2, 2, 5, 6, 4) + weighted_backward("F.max_pool3d(x, 3, stride=2, padding=1)") + "print(y)\n",
    "max_pool3d_ceil_dilation": leaf(1, 2, 7, 5, 6) + weighted_backward(
        "F.max_pool3d(x, (2, 2, 3), stride=(2, 1, 3), dilation=(2, 1, 1), ceil_mode=True)"),
    "max_pool3d_indices_unbatched": leaf(2, 4, 5, 6, dtype="float32")
    + "y, i = F.max_pool3d(x, 2, ceil_mode=True, return_indices=True)\n(y * y).sum().backward()\nprint(i)\n",
    "max_pool3d_ties": "x = (torch.arange(64.).reshape(1, 1, 4, 4, 4) % 3).requires_grad_()\n"
    "y, i = F.max_pool3d(x, 3, 1, 1, return_indices=True)\ny.sum().backward()\n",
    "max_pool3d_with_indices": leaf(1, 2, 4, 4, 4) + "y, i = F.max_pool3d_with_indices(x, 2)\n"
    "z = torch.max_pool3d(x, 3, 1, 1)\n(y.sum() + z.sum()).backward()\n",
    "avg_pool3d": leaf(2, 2, 5, 6, 4) + weighted_backward("F.avg_pool3d(x, 3, stride=2, padding=1)") + "print(y)\n",
    "avg_pool3d_ceil_no_pad_count": leaf(1, 2, 7, 5, 6) + weighted_backward(
        "F.avg_pool3d(x, (3, 2, 2), stride=2, padding=(1, 1, 0), ceil_mode=True, count_include_pad=False)"),
    "avg_pool3d_divisor_unbatched": leaf(2, 4, 5, 5, dtype="float32") + weighted_backward(
        "F.avg_pool3d(x, 2, divisor_override=3)"),
    "adaptive_avg_pool3d": leaf(2, 2, 5, 6, 7) + weighted_backward("F.adaptive_avg_pool3d(x, (2, 4, 3))"),
    "adaptive_avg_pool3d_none_grow": leaf(2, 3, 2, 5) + weighted_backward("F.adaptive_avg_pool3d(x, (None, 4, 7))"),
    "adaptive_avg_pool3d_one": leaf(2, 2, 3, 4, 5) + weighted_backward("F.adaptive_avg_pool3d(x, 1)"),
    "adaptive_max_pool2d": leaf(2, 3, 7, 6) + "y, i = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)\n"
    "(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\nprint(y)\nprint(i)\n",
    "adaptive_max_pool2d_grow_none_unbatched": leaf(3, 3, 5) + weighted_backward("F.adaptive_max_pool2d(x, (None, 7))"),
    "adaptive_max_pool2d_one": leaf(2, 3, 4, 5) + weighted_backward("F.adaptive_max_pool2d(x, 1)"),
    "adaptive_max_pool2d_ties": "x = (torch.arange(49.).reshape(1, 1, 7, 7) % 2).requires_grad_()\n"
    "y, i = F.adaptive_max_pool2d_with_indices(x, 3)\ny.sum().backward()\n",
    "adaptive_max_pool2d_nan": "x = torch.tensor([[[[1., float('nan'), 3., float('nan'), 0.], [float('nan'), 0., 2., "
    "1., 4.], [0., 1., 5., float('nan'), 1.]]]], requires_grad=True)\ny, i = F.adaptive_max_pool2d(x, 2, True)\n"
    "y.sum().backward()\n",
    "adaptive_max_pool_to_nothing": leaf(2, 2, 5, 6, 7) + "y, i = F.adaptive_max_pool3d(x, (2, 0, 2), True)\n"
    "z, j = F.adaptive_max_pool2d(x[0], (0, 3), True)\n",
    "adaptive_max_pool3d": leaf(2, 2, 5, 6, 7) + "y, i = F.adaptive_max_pool3d(x, (2, 4, 3), return_indices=True)\n"
    "(y * torch.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()\n",
    "adaptive_max_pool3d_unbatched": leaf(2, 3, 4, 5, dtype="float32") + weighted_backward(
        "F.adaptive_max_pool3d(x, (2, None, 3))"),
    "adaptive_max_pool1d": leaf(2, 3, 10) + "y, i = F.adaptive_max_pool1d(x, 4, return_indices=True)\n"
    "z, j = torch.adaptive_max_pool1d(x[0], 3)\n(y.sum() + z.sum()).backward()\n",
    "max_unpool2d": leaf(2, 3, 6, 4) + "p, i = F.max_pool2d(x, 2, return_indices=True)\n"
    + weighted_backward("F.max_unpool2d(p, i, 2)") + "print(y)\n",
    "max_unpool2d_output_size": leaf(1, 2, 7, 5) + "p, i = F.max_pool2d(x, 2, return_indices=True)\n"
    + weighted_backward("F.max_unpool2d(p, i, 2, output_size=(1, 2, 7, 5))"),
    "max_unpool2d_unbatched_stride": leaf(2, 7, 7) + "p, i = F.max_pool2d(x, 3, 2, 1, return_indices=True)\n"
    + weighted_backward("F.max_unpool2d(p, i, 3, 2, 1)"),
    "max_unpool1d": leaf(2, 3, 9) + "p, i = F.max_pool1d(x, 2, return_indices=True)\n"
    + weighted_backward("F.max_unpool1d(p, i, 2, output_size=[9])"),
    "max_unpool3d": leaf(1, 2, 4, 6, 4) + "p, i = F.max_pool3d(x, 2, return_indices=True)\n"
    + weighted_backward("F.max_unpool3d(p, i, 2)"),
    "max_unpool_of_a_leaf": "p = torch.tensor([[[[1., 2.], [3., 4.]]]], requires_grad=True)\n"
    "i = torch.tensor([[[[0, 3], [9, 15]]]])\n" + weighted_backward("F.max_unpool2d(p, i, 2)"),
    "max_unpool_repeated_index": "p = torch.tensor([[[[1., 2.], [3., 4.]]]], requires_grad=True)\n"
    "i = torch.tensor([[[[0, 0], [5, 5]]]])\n" + weighted_backward("F.max_unpool2d(p, i, 2)"),
    "max_unpool_of_overlapping_windows": leaf(1, 2, 5, 5) + "p, i = F.max_pool2d(x, 3, 1, 1, return_indices=True)\n"
    + weighted_backward("F.max_unpool2d(p, i, 3, 1, 1)"),
    "lp_pool2d": leaf(2, 3, 6, 7) + weighted_backward("F.lp_pool2d(x, 2, 2)"),
    "lp_pool2d_stride_ceil": leaf(2, 3, 7, 7) + weighted_backward("F.lp_pool2d(x, 3, (3, 2), stride=2, ceil_mode=True)"),
    "lp_pool2d_inf": leaf(3, 6, 6) + weighted_backward("F.lp_pool2d(x, float('inf'), 2)")
    + "z = F.lp_pool2d(x, -float('inf'), 3, 1)\n",
    "lp_pool1d": leaf(2, 3, 9) + weighted_backward("F.lp_pool1d(x, 3, 2)"),
    "lp_pool1d_float": leaf(2, 3, 9) + weighted_backward("F.lp_pool1d(x, 1.5, 3, 2, True)"),
    "lp_pool3d": leaf(1, 2, 4, 4, 6) + weighted_backward("F.lp_pool3d(x, 2, (2, 2, 3))"),
    "unfold": leaf(2, 3, 6, 5) + weighted_backward("F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))")
    + "print(y)\n",
    "unfold_unbatched": leaf(2, 4, 4, dtype="float32") + weighted_backward("F.unfold(x, 2)"),
    "fold": leaf(2, 12, 10) + weighted_backward("F.fold(x, (4, 5), (2, 3), padding=(1, 0), stride=(1, 2))") + "print(y)\n",
    "fold_unbatched_dilated": leaf(8, 9) + weighted_backward("F.fold(x, 5, 2, dilation=2, padding=1, stride=2)"),
    "fold_of_unfold": leaf(1, 2, 5, 5) + weighted_backward("F.fold(F.unfold(x, 3, padding=1), (5, 5), 3, padding=1)"),
    "local_response_norm_3d": leaf(2, 5, 6) + weighted_backward("F.local_response_norm(x, 3)"),
    "local_response_norm_4d": leaf(2, 5, 3, 4) + weighted_backward("F.local_response_norm(x, 2, 0.1, 0.6, 2.0)"),
    "local_response_norm_5d": leaf(2, 4, 2, 3, 2, dtype="float32") + weighted_backward("F.local_response_norm(x, 4)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_ops_match_pytorch(name):
    assert_same(CASES[name])


MODULES = {
    "max3d": leaf(1, 2, 6, 6, 6) + "m = torch.nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True)\nprint(m)\n"
    "y = m(x)\ny.sum().backward()\n",
    "avg3d": leaf(1, 2, 6, 6, 6) + "m = torch.nn.AvgPool3d((3, 2, 2), padding=1, count_include_pad=False)\nprint(m)\n"
    "y = m(x)\ny.sum().backward()\n",
    "adaptive_avg3d": leaf(1, 2, 6, 6, 6) + "m = torch.nn.AdaptiveAvgPool3d((2, None, 3))\nprint(m)\ny = m(x)\n"
    "y.sum().backward()\n",
    "adaptive_max": leaf(2, 3, 6, 6) + "m = torch.nn.AdaptiveMaxPool2d((2, None), return_indices=True)\nprint(m)\n"
    "y, i = m(x)\ny.sum().backward()\nm1 = torch.nn.AdaptiveMaxPool1d(4)\nprint(m1)\nz = m1(x[0])\n"
    "m3 = torch.nn.AdaptiveMaxPool3d(2)\nprint(m3)\nu = m3(x)\n",
    "unpool": leaf(2, 3, 6, 6) + "pool = torch.nn.MaxPool2d(2, return_indices=True)\n"
    "m = torch.nn.MaxUnpool2d(2)\nprint(m)\np, i = pool(x)\ny = m(p, i, output_size=x.size())\ny.sum().backward()\n"
    "m1 = torch.nn.MaxUnpool1d(2, stride=2)\nprint(m1)\np1, i1 = F.max_pool1d(x[0], 2, return_indices=True)\n"
    "z = m1(p1, i1)\nm3 = torch.nn.MaxUnpool3d((1, 2, 2))\nprint(m3)\np3, i3 = F.max_pool3d(x, (1, 2, 2), "
    "return_indices=True)\nu = m3(p3, i3)\n",
    "lp": leaf(2, 3, 6, 6) + "m = torch.nn.LPPool2d(2, 3, stride=2)\nprint(m)\ny = m(x)\ny.sum().backward()\n"
    "m1 = torch.nn.LPPool1d(1.5, 2)\nprint(m1)\nz = m1(x[0])\nm3 = torch.nn.LPPool3d(3, 2, ceil_mode=True)\n"
    "print(m3)\nu = m3(x)\n",
    "fold": leaf(2, 3, 6, 6) + "m = torch.nn.Unfold((2, 3), dilation=1, padding=1, stride=2)\nprint(m)\ny = m(x)\n"
    "f = torch.nn.Fold((6, 6), (2, 3), padding=1, stride=2)\nprint(f)\nz = f(y)\nz.sum().backward()\n",
    "lrn": leaf(2, 5, 3, 3) + "m = torch.nn.LocalResponseNorm(3, alpha=0.01)\nprint(m)\ny = m(x)\ny.sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_print_and_run_as_pytorch(name):
    assert_same(MODULES[name])


SECOND_ORDER = {
    "max3d": leaf(1, 2, 4, 4, 4) + second_order("F.max_pool3d(x, 2, 1)"),
    "avg3d": leaf(1, 2, 4, 4, 4) + second_order("F.avg_pool3d(x, 3, 2, 1, ceil_mode=True)"),
    "adaptive_avg3d": leaf(1, 2, 4, 5, 4) + second_order("F.adaptive_avg_pool3d(x, (2, 3, 3))"),
    "adaptive_max2d": leaf(1, 2, 5, 5) + second_order("F.adaptive_max_pool2d(x, 3)"),
    "adaptive_max3d": leaf(1, 2, 4, 5, 4) + second_order("F.adaptive_max_pool3d(x, (2, 3, 3))"),
    "unpool2d": leaf(1, 2, 4, 4) + "p, i = F.max_pool2d(x, 2, return_indices=True)\n"
    "y = F.max_unpool2d(p * p, i, 2)\ng, = torch.autograd.grad((y * y).sum(), (x,), create_graph=True)\n"
    "(g * g).sum().backward()\n",
    "unpool3d": leaf(1, 2, 4, 4, 4) + "p, i = F.max_pool3d(x, 2, return_indices=True)\n"
    "y = F.max_unpool3d(p * p, i, 2)\ng, = torch.autograd.grad((y * y).sum(), (x,), create_graph=True)\n"
    "(g * g).sum().backward()\n",
    "unfold": leaf(1, 2, 4, 4) + second_order("F.unfold(x, 2, padding=1)"),
    "fold": "x = torch.linspace(-1, 1, 32, dtype=torch.float64).reshape(1, 8, 4).requires_grad_()\n"
    + second_order("F.fold(x, 3, 2)"),
    "lp": leaf(1, 2, 4, 4) + second_order("F.lp_pool2d(x, 2, 2)"),
    "lrn": leaf(2, 4, 3) + second_order("F.local_response_norm(x, 3)"),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_create_graph_records_the_second_order_nodes_as_pytorch(name):
    assert_same(SECOND_ORDER[name])


ERRORS = {
    "max3d_dims": "F.max_pool3d(torch.ones(2, 5, 5), 2)",
    "max3d_empty": "F.max_pool3d(torch.ones(1, 0, 5, 5), 2)",
    "max3d_kernel": "F.max_pool3d(torch.ones(1, 1, 5, 5, 5), (2, 2))",
    "max3d_stride_zero": "F.max_pool3d(torch.ones(1, 1, 5, 5, 5), 2, stride=0)",
    "max3d_stride_negative": "F.max_pool3d(torch.ones(1, 1, 5, 5, 5), 2, stride=(1, 1, -1))",
    "max3d_pad": "F.max_pool3d(torch.ones(1, 1, 5, 5, 5), 2, padding=2)",
    "max3d_pad_kernel": "F.max_pool3d(torch.ones(1, 1, 9, 9, 9), (3, 1, 1), padding=(2, 0, 0), dilation=(2, 1, 1))",
    "max3d_small": "F.max_pool3d(torch.ones(1, 1, 2, 2, 2), 3)",
    "max3d_dilation": "F.max_pool3d(torch.ones(1, 1, 5, 5, 5), 2, dilation=0)",
    "avg3d_dims": "F.avg_pool3d(torch.ones(2, 5, 5), 2)",
    "avg3d_kernel": "F.avg_pool3d(torch.ones(1, 1, 5, 5, 5), (2, 2))",
    "avg3d_pad": "F.avg_pool3d(torch.ones(1, 1, 5, 5, 5), 3, padding=2)",
    "avg3d_divisor": "F.avg_pool3d(torch.ones(1, 1, 5, 5, 5), 3, divisor_override=0)",
    "avg3d_small": "F.avg_pool3d(torch.ones(1, 1, 2, 3, 4), 3)",
    "adaptive_avg3d_dims": "F.adaptive_avg_pool3d(torch.ones(5, 5), 2)",
    "adaptive_avg3d_empty": "F.adaptive_avg_pool3d(torch.ones(1, 0, 5, 5), 2)",
    "adaptive_avg3d_size": "F.adaptive_avg_pool3d(torch.ones(1, 2, 5, 5), (2, 2))",
    "adaptive_avg3d_negative": "F.adaptive_avg_pool3d(torch.ones(1, 1, 5, 5, 5), (-1, 2, 2))",
    "adaptive_avg2d_negative": "F.adaptive_avg_pool2d(torch.ones(1, 1, 5, 5), (2, -3))",
    "adaptive_avg_one_of_a_vector": "F.adaptive_avg_pool3d(torch.ones(5), 1)",
    "adaptive_max3d_negative": "F.adaptive_max_pool3d(torch.ones(1, 1, 5, 5, 5), (-1, 2, 2))",
    "adaptive_max2d_dims": "F.adaptive_max_pool2d(torch.ones(5), 2)",
    "adaptive_max2d_empty": "F.adaptive_max_pool2d(torch.ones(1, 0, 5), 2)",
    "adaptive_max2d_size": "F.adaptive_max_pool2d(torch.ones(1, 1, 5, 5), (2, 2, 2))",
    "adaptive_max3d_dims": "F.adaptive_max_pool3d(torch.ones(5, 5), 2)",
    "adaptive_max3d_empty": "F.adaptive_max_pool3d(torch.ones(1, 0, 5, 5), 2)",
    "adaptive_max1d_dims": "F.adaptive_max_pool1d(torch.ones(5), 2)",
    "adaptive_max1d_size": "F.adaptive_max_pool1d(torch.ones(2, 5), (2, 2))",
    "unpool_index": "F.max_unpool2d(torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 2, 2, dtype=torch.long) + 30, 2)",
    "unpool_output_size": "F.max_unpool2d(torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 2, 2, dtype=torch.long), 2, "
    "output_size=(9, 9))",
    "unpool_output_size_length": "F.max_unpool2d(torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 2, 2, dtype=torch.long), 2, "
    "output_size=(1, 1, 4))",
    "unpool_index_dtype": "F.max_unpool2d(torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), 2)",
    "unpool_index_shape": "F.max_unpool2d(torch.ones(1, 1, 2, 2), torch.zeros(1, 1, 2, 3, dtype=torch.long), 2)",
    "unpool_dims": "F.max_unpool2d(torch.ones(2, 2), torch.zeros(2, 2, dtype=torch.long), 2)",
    "unpool3d_index": "F.max_unpool3d(torch.ones(1, 1, 2, 2, 2), torch.zeros(1, 1, 2, 2, 2, dtype=torch.long) + 300, 2)",
    "unpool3d_index_dtype": "F.max_unpool3d(torch.ones(1, 1, 2, 2, 2), torch.zeros(1, 1, 2, 2, 2, dtype=torch.int32), 2)",
    "unpool3d_index_shape": "F.max_unpool3d(torch.ones(1, 1, 2, 2, 2), torch.zeros(1, 1, 2, 2, 1, dtype=torch.long), 2)",
    "unpool3d_dims": "F.max_unpool3d(torch.ones(2, 2, 2), torch.zeros(2, 2, 2, dtype=torch.long), 2)",
    "unpool1d_index": "F.max_unpool1d(torch.ones(1, 1, 2), torch.zeros(1, 1, 2, dtype=torch.long) + 9, 2)",
    "unfold_dims": "F.unfold(torch.ones(2, 5), 2)",
    "unfold_small": "F.unfold(torch.ones(1, 1, 2, 4), 3)",
    "unfold_kernel": "F.unfold(torch.ones(1, 1, 5, 5), 0)",
    "unfold_stride": "F.unfold(torch.ones(1, 1, 5, 5), 2, stride=0)",
    "unfold_dilation": "F.unfold(torch.ones(1, 1, 5, 5), 2, dilation=0)",
    "unfold_padding": "F.unfold(torch.ones(1, 1, 5, 5), 2, padding=-1)",
    "unfold_5d": "F.unfold(torch.ones(1, 1, 5, 5, 5), 2)",
    "fold_blocks": "F.fold(torch.ones(1, 4, 5), (3, 3), 2)",
    "fold_divisible": "F.fold(torch.ones(1, 5, 4), (3, 3), 2)",
    "fold_unbatched_blocks": "F.fold(torch.ones(4, 5), (3, 3), 2)",
    "fold_dims": "F.fold(torch.ones(1, 2, 4, 5), (3, 3), 2)",
    "fold_kernel": "F.fold(torch.ones(1, 4, 4), (3, 3), 0)",
    "fold_stride_before_dilation": "F.fold(torch.ones(1, 4, 4), (3, 3), 2, dilation=0, stride=0)",
    "lrn_dims": "F.local_response_norm(torch.ones(2, 3), 2)",
    "lp_small": "F.lp_pool2d(torch.ones(1, 1, 2, 2), 2, 3)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    assert_same_error(ERRORS[name])


@pytest.mark.parametrize("function", [
    lambda x: gv.nn.functional.max_pool3d(x, 2, 1, 1, dilation=(1, 2, 1), ceil_mode=True),
    lambda x: gv.nn.functional.avg_pool3d(x, (2, 3, 3), 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: gv.nn.functional.avg_pool3d(x, 2, divisor_override=3),
    lambda x: gv.nn.functional.adaptive_avg_pool3d(x, (3, 2, 2)),
    lambda x: gv.nn.functional.adaptive_max_pool3d(x, (3, 2, 2)),
    lambda x: gv.nn.functional.adaptive_max_pool2d(x[0], (3, 2)),
    lambda x: gv.nn.functional.adaptive_max_pool1d(x[0, 0], 3),
    lambda x: gv.nn.functional.max_unpool3d(*gv.nn.functional.max_pool3d(x, 2, return_indices=True), 2,
                                                     output_size=(2, 4, 5)),
    lambda x: gv.nn.functional.max_unpool2d(*gv.nn.functional.max_pool2d(x[0], 2, return_indices=True), 2,
                                                     output_size=(4, 5)),
    lambda x: gv.nn.functional.max_unpool1d(*gv.nn.functional.max_pool1d(x[0, 0], 2, return_indices=True), 2),
    lambda x: gv.nn.functional.lp_pool3d(x, 2, 2),
    lambda x: gv.nn.functional.lp_pool2d(x[0], 3, (2, 1), 1),
    lambda x: gv.nn.functional.lp_pool1d(x[0, 0], 1.5, 2),
    lambda x: gv.nn.functional.unfold(x[0], (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
    lambda x: gv.nn.functional.fold(x.reshape(1, 8, 10), (3, 9), 2, stride=(1, 2), padding=(0, 1)),
    lambda x: gv.nn.functional.local_response_norm(x[0], 3, 0.5, 0.75, 1.0),
    lambda x: gv.nn.functional.local_response_norm(x, 2, 0.5),
], ids=["max3d", "avg3d", "avg3d_divisor", "adaptive_avg3d", "adaptive_max3d", "adaptive_max2d", "adaptive_max1d",
        "unpool3d", "unpool2d", "unpool1d", "lp3d", "lp2d", "lp1d", "unfold", "fold", "lrn4d", "lrn5d"])
def test_gradcheck_and_gradgradcheck(function):
    """Central differences in float64, to first and second order (the input keeps its elements apart, so
    that no window's maximum is a tie a small step could flip)."""
    x = gv.tensor(np.random.default_rng(0).permutation(80).reshape(2, 2, 4, 5) / 20.0 + 0.3, requires_grad=True)
    assert gradcheck(function, (x,))
    assert gradgradcheck(function, (x,))


@st.composite
def cases(draw):
    kind = draw(st.sampled_from(["max3d", "avg3d", "adaptive_avg3d", "adaptive_max2d", "adaptive_max3d", "unfold",
                                 "fold", "lp2d", "unpool2d", "unpool3d", "lrn"]))
    dims = 2 if kind in ("adaptive_max2d", "unfold", "fold", "lp2d", "unpool2d", "lrn") else 3
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims)) if kind in ("max3d", "unfold", "fold") else \
        (1,) * dims
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel) if kind != "lp2d" else (0,) * dims
    size = tuple(d * (k - 1) + 1 + draw(st.integers(0, 4)) for k, d in zip(kernel, dilation))
    return dict(kind=kind, kernel=kernel, stride=stride, dilation=dilation, padding=padding, size=size,
                ceil_mode=draw(st.booleans()) and not kind.startswith("unpool"), count_include_pad=draw(st.booleans()),
                divisor=draw(st.sampled_from([None, None, 2])), out=tuple(draw(st.integers(1, 4)) for _ in range(dims)),
                batch=draw(st.sampled_from([(), (2,)])), dtype=draw(st.sampled_from(["float32", "float64"])),
                integers=draw(st.booleans()))


def _run(lib, case, x):
    F = lib.nn.functional
    kind, extra = case["kind"], None
    if kind == "max3d":
        y, extra = F.max_pool3d(x, case["kernel"], case["stride"], case["padding"], case["dilation"], case["ceil_mode"],
                                return_indices=True)
    elif kind == "avg3d":
        y = F.avg_pool3d(x, case["kernel"], case["stride"], case["padding"], case["ceil_mode"],
                         case["count_include_pad"], case["divisor"])
    elif kind == "adaptive_avg3d":
        y = F.adaptive_avg_pool3d(x, case["out"])
    elif kind.startswith("adaptive_max"):
        y, extra = getattr(F, f"adaptive_max_pool{kind[-2:]}")(x, case["out"], return_indices=True)
    elif kind == "unfold":
        y = F.unfold(x, case["kernel"], case["dilation"], case["padding"], case["stride"])
    elif kind == "fold":
        y = F.fold(F.unfold(x, case["kernel"], case["dilation"], case["padding"], case["stride"]) * 1.5,
                   case["size"], case["kernel"], case["dilation"], case["padding"], case["stride"])
    elif kind == "lp2d":
        y = F.lp_pool2d(x, 2, case["kernel"], case["stride"], case["ceil_mode"])
    elif kind == "lrn":  # over the channels of a 3-d (unbatched) or 4-d input
        y = F.local_response_norm(x, case["kernel"][0] + case["stride"][0], 0.3, 0.75, 0.5 + case["padding"][0])
    else:
        dims = int(kind[-2])
        pool, unpool = getattr(F, f"max_pool{dims}d"), getattr(F, f"max_unpool{dims}d")
        pooled, indices = pool(x, case["kernel"], case["stride"], case["padding"], return_indices=True)
        y = unpool(pooled, indices, case["kernel"], case["stride"], case["padding"], x.shape[-dims:])
    return y, (None if extra is None else extra.numpy())


@settings(max_examples=80, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**16))
def test_any_case_matches_pytorch(case, seed):
    rng = np.random.default_rng(seed)
    channels = (3,) if case["kind"] == "unfold" else (2,)
    data = rng.standard_normal(case["batch"] + channels + case["size"])
    if case["integers"] and case["kind"] != "lp2d":  # many ties, which max pooling must resolve as PyTorch does
        data = np.round(data)
    data = data.astype(case["dtype"])
    results = []
    for lib in (torch, gv):
        x = lib.tensor(data, requires_grad=True)
        y, extra = _run(lib, case, x)
        weights = rng.standard_normal(tuple(y.shape)).astype(case["dtype"]) if lib is torch else results[0][3]
        (y * lib.tensor(weights)).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), extra, weights, y.grad_fn.name()))
    (y_t, g_t, e_t, _, name_t), (y_g, g_g, e_g, _, name_g) = results
    assert name_g == name_t
    tolerance = dict(rtol=1e-5, atol=1e-5) if case["dtype"] == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert y_g.shape == y_t.shape and y_g.dtype == y_t.dtype
    np.testing.assert_allclose(y_g, y_t, **tolerance)
    np.testing.assert_allclose(g_g, g_t, **tolerance)
    if e_t is not None:
        np.testing.assert_array_equal(e_g, e_t)


@pytest.mark.parametrize("code", [CASES["max_pool3d"], CASES["avg_pool3d_ceil_no_pad_count"], CASES["adaptive_avg_pool3d"],
                                  CASES["adaptive_max_pool2d"], CASES["max_unpool3d"], CASES["fold"], CASES["unfold"],
                                  CASES["local_response_norm_4d"], SECOND_ORDER["max3d"], SECOND_ORDER["unfold"]],
                         ids=["max3d", "avg3d", "adaptive_avg3d", "adaptive_max2d", "unpool3d", "fold", "unfold", "lrn",
                              "max3d_second_order", "unfold_second_order"])
def test_the_torch_backend_computes_the_same(code):
    assert_same(code, backend="torch")


@pytest.mark.parametrize("program, names", [
    (lambda x: gv.nn.functional.max_pool3d(x, 2, 1, 1, ceil_mode=True), {"MaxPool3DWithIndicesBackward0"}),
    (lambda x: gv.nn.functional.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     {"AvgPool3DBackward0"}),
    (lambda x: gv.nn.functional.adaptive_avg_pool3d(x, (3, 2, 2)), {"AdaptiveAvgPool3DBackward0"}),
    (lambda x: gv.nn.functional.adaptive_max_pool3d(x, (3, 2, 2)), {"AdaptiveMaxPool3DBackward0"}),
    (lambda x: gv.nn.functional.adaptive_max_pool1d(x[0, 0], 2), {"AdaptiveMaxPool2DBackward0"}),
    (lambda x: gv.nn.functional.max_unpool2d(*gv.nn.functional.max_pool2d(x[0], 2, return_indices=True), 2),
     {"MaxUnpool2DBackward0", "MaxPool2DWithIndicesBackward0"}),
    (lambda x: gv.nn.functional.fold(gv.nn.functional.unfold(x[0], 2, padding=1), (5, 4), 2, padding=1),
     {"Col2ImBackward0", "Im2ColBackward0"}),
    (lambda x: gv.nn.functional.local_response_norm(x, 3), {"AvgPool3DBackward0", "ConstantPadNdBackward0"}),
    (lambda x: gv.autograd.grad(gv.nn.functional.max_pool3d(x, 2).pow(2).sum(), (x,), create_graph=True)[0] * x,
     {"MaxPool3DWithIndicesBackwardBackward0"}),
    (lambda x: gv.autograd.grad(gv.nn.functional.adaptive_max_pool2d(x[0], 2).pow(2).sum(), (x,),
                                create_graph=True)[0] * x, {"AdaptiveMaxPool2DBackwardBackward0"}),
    (lambda x: gv.autograd.grad(gv.nn.functional.unfold(x[0], 2).pow(2).sum(), (x,), create_graph=True)[0] * x,
     {"Col2ImBackward0"}),
], ids=["max3d", "avg3d", "adaptive_avg3d", "adaptive_max3d", "adaptive_max1d", "unpool", "fold", "lrn",
        "max3d_second", "adaptive_max_second", "unfold_second"])
def test_the_learner_formula_gives_what_backward_sent(program, names):
    """The snapshot's formulas for the new nodes (``snapshot/window_formulas.py``), evaluated at every step of the
    backward pass, give the gradient each step sent (as ``tests/test_formulas.py`` checks for every op)."""
    from test_formulas import _checked_nodes

    x = gv.tensor(np.random.default_rng(4).standard_normal((1, 2, 6, 5, 4)), requires_grad=True)
    assert names <= _checked_nodes(program(x).sum())


def test_a_3d_cnn_trains_to_pytorchs_losses():
    losses = []
    for lib in (torch, gv):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Conv3d(1, 4, 3, padding=1), lib.nn.ReLU(), lib.nn.MaxPool3d(2),
                                  lib.nn.LocalResponseNorm(2), lib.nn.AvgPool3d(2, ceil_mode=True),
                                  lib.nn.AdaptiveMaxPool3d(1), lib.nn.Flatten(), lib.nn.Linear(4, 3))
        optimizer = lib.optim.Adam(model.parameters(), lr=0.01)
        volumes, labels = lib.randn(3, 1, 6, 6, 6), lib.tensor([0, 1, 2])
        run = []
        for _ in range(4):
            optimizer.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(volumes), labels)
            loss.backward()
            optimizer.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-5)


def _torch_program():
    F = torch.nn.functional
    x = torch.tensor(np.random.default_rng(5).standard_normal((1, 2, 6, 5, 4)), requires_grad=True)
    h = F.max_pool3d(x, 2, 1, 1, ceil_mode=True).sum() + F.avg_pool3d(x, (3, 2, 2), 2, 1, count_include_pad=False).sum()
    h = h + F.adaptive_avg_pool3d(x, (2, 3, 2)).pow(2).sum() + F.adaptive_max_pool3d(x, (3, 2, 2)).pow(2).sum()
    pooled, indices = F.max_pool2d(x[0], 2, return_indices=True)
    h = h + F.max_unpool2d(pooled * 2, indices, 2, output_size=(5, 4)).pow(2).sum()
    pooled, indices = F.max_pool3d(x, 2, return_indices=True)
    h = h + F.max_unpool3d(pooled * 2, indices, 2, output_size=(6, 5, 4)).pow(2).sum()
    h = h + F.fold(F.unfold(x[0], 2, padding=1) * 3, (5, 4), 2, padding=1).pow(2).sum()
    return h + F.adaptive_max_pool1d(x[0, 0], 3).pow(2).sum() + F.local_response_norm(x, 3).sum()


def test_the_learner_formula_reads_torchs_own_nodes():
    """The same formula entries evaluated on torch's nodes (their saved values as torch shows them) give what
    torch's backward sent, step by step. (The second-order nodes' entries run gradviz's own node backward, as
    every ``_recorded_rules`` entry does, so they are checked on gradviz's nodes only.)"""
    from gradviz.autograd.engine import backward_steps
    from gradviz.snapshot.formula_table import TABLE
    from gradviz.snapshot.formulas import gradient_sent
    from gradviz.snapshot.model import to_numpy

    checked, unknown = set(), set()
    for step in backward_steps(_torch_program(), retain_graph=True, dry_run=True):
        if step.name not in TABLE:
            unknown.add(step.name)
            continue
        if step.is_accumulate:
            continue
        arriving = [None if g is None else to_numpy(g) for g in step.grad_outputs]
        shapes = tuple(None if g is None else tuple(g.shape) for g in step.grad_inputs)
        for slot, sent in enumerate(step.grad_inputs):
            if sent is not None:
                np.testing.assert_allclose(gradient_sent(step.node, slot, arriving, shapes), to_numpy(sent),
                                           rtol=1e-9, atol=1e-12, err_msg=f"{step.name}, input {slot}")
        checked.add(step.name)
    assert not unknown, f"torch nodes without a learner formula: {sorted(unknown)}"
    expected = {"MaxPool3DWithIndicesBackward0", "AvgPool3DBackward0", "AdaptiveAvgPool3DBackward0",
                "AdaptiveMaxPool3DBackward0", "AdaptiveMaxPool2DBackward0", "MaxUnpool2DBackward0", "MaxUnpool3DBackward0",
                "Im2ColBackward0",
                "Col2ImBackward0"}
    assert expected <= {name.replace("torch::autograd::", "") for name in checked}
