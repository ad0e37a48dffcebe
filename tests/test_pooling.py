"""Pooling against PyTorch 2.13: ``F.max_pool1d``/``max_pool2d`` (ties, ceil_mode, dilation, return_indices),
``F.avg_pool1d``/``avg_pool2d`` (count_include_pad, ceil_mode, divisor_override), ``F.adaptive_avg_pool1d``/
``adaptive_avg_pool2d`` and the modules: values, grads, graphs with saved values (the 1-d forms' unsqueeze
and squeeze, a 1x1 adaptive pool's mean), the second-order nodes, printed modules, errors; central
differences to first and second order; hypothesis over windows, strides, paddings and ceil_mode.
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


TIES = "x = torch.tensor([[[[1., 1., 0., 2.], [1., 1., 2., 2.], [0., 3., 3., 0.], [3., 3., 0., 0.]]]], requires_grad=True)\n"

CASES = {
    "max_pool2d": leaf(2, 3, 7, 6) + weighted_backward("F.max_pool2d(x, 3, stride=2, padding=1)") + "print(y)\n",
    "max_pool2d_ties": TIES + weighted_backward("F.max_pool2d(x, 2, stride=1)"),
    "max_pool2d_ties_overlap": TIES + "y, i = F.max_pool2d(x, 3, 1, 1, return_indices=True)\ny.sum().backward()\n",
    "max_pool2d_nan": "x = torch.tensor([[[[1., float('nan'), 3., float('nan')], [float('nan'), 0., 2., 1.], "
    "[0., 1., 5., float('nan')]]]], requires_grad=True)\ny, i = F.max_pool2d(x, 2, 1, return_indices=True)\n"
    "y.sum().backward()\n",
    "max_pool2d_ceil_dilation": leaf(1, 2, 7, 8) + weighted_backward(
        "F.max_pool2d(x, (2, 3), stride=(2, 3), dilation=(2, 1), ceil_mode=True)"),
    "max_pool2d_indices": leaf(2, 2, 5, 5, dtype="float32")
    + "y, i = F.max_pool2d(x, 2, ceil_mode=True, return_indices=True)\n(y * y).sum().backward()\nprint(i)\n",
    "max_pool2d_unbatched": leaf(3, 6, 5) + weighted_backward("torch.max_pool2d(x, (3, 2), (1, 2), (1, 0))"),
    "max_pool1d": leaf(2, 3, 9) + weighted_backward("F.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True)"),
    "max_pool1d_indices_unbatched": leaf(3, 8)
    + "y, i = F.max_pool1d(x, 2, return_indices=True, dilation=2)\ny.sum().backward()\n",
    "max_pool_with_indices": leaf(2, 3, 7, 6) + "y, i = F.max_pool2d_with_indices(x, 3, 2, 1)\n"
    "z, j = F.max_pool1d_with_indices(x[0], 2)\nu, k = torch.max_pool1d_with_indices(x[1], 3, 1, 1)\n"
    "(y.sum() + z.sum() + u.sum()).backward()\n",
    "avg_pool2d": leaf(2, 3, 7, 6) + weighted_backward("F.avg_pool2d(x, 3, stride=2, padding=1)") + "print(y)\n",
    "avg_pool2d_ceil_no_pad_count": leaf(1, 2, 7, 8) + weighted_backward(
        "F.avg_pool2d(x, (3, 2), stride=2, padding=(1, 1), ceil_mode=True, count_include_pad=False)"),
    "avg_pool2d_ceil_pad_count": leaf(1, 2, 7, 8, dtype="float32") + weighted_backward(
        "F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)"),
    "avg_pool2d_divisor": leaf(2, 5, 5) + weighted_backward("F.avg_pool2d(x, 2, divisor_override=3)"),
    "avg_pool1d": leaf(2, 3, 9) + weighted_backward("F.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=False)"),
    "avg_pool1d_unbatched": leaf(3, 8) + weighted_backward("torch.avg_pool1d(x, 2, ceil_mode=True)"),
    "adaptive_avg_pool2d": leaf(2, 3, 7, 6) + weighted_backward("F.adaptive_avg_pool2d(x, (3, 4))"),
    "adaptive_avg_pool2d_grow_and_none": leaf(1, 2, 3, 5) + weighted_backward("F.adaptive_avg_pool2d(x, (None, 7))"),
    "adaptive_avg_pool2d_one": leaf(2, 3, 4, 5) + weighted_backward("F.adaptive_avg_pool2d(x, 1)"),
    "adaptive_avg_pool1d": leaf(2, 3, 10) + weighted_backward("F.adaptive_avg_pool1d(x, 4)"),
    "adaptive_avg_pool1d_one": leaf(3, 10) + weighted_backward("torch.adaptive_avg_pool1d(x, 1)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_pools_match_pytorch(name):
    assert_same(CASES[name])


MODULES = {
    "max": leaf(2, 3, 6, 6) + "m = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)\nprint(m)\n"
    "y = m(x)\ny.sum().backward()\n",
    "max_indices": leaf(2, 3, 6, 6) + "m = torch.nn.MaxPool2d((2, 3), return_indices=True, dilation=1)\nprint(m)\n"
    "y, i = m(x)\ny.sum().backward()\n",
    "max1d": leaf(2, 3, 7) + "m = torch.nn.MaxPool1d(2)\nprint(m)\ny = m(x)\ny.sum().backward()\n",
    "avg": leaf(2, 3, 6, 6) + "m = torch.nn.AvgPool2d(3, padding=1, count_include_pad=False, divisor_override=2)\n"
    "print(m)\ny = m(x)\ny.sum().backward()\n",
    "avg1d": leaf(2, 3, 7) + "m = torch.nn.AvgPool1d(3, stride=2)\nprint(m)\ny = m(x)\ny.sum().backward()\n",
    "adaptive": leaf(2, 3, 6, 6) + "m = torch.nn.AdaptiveAvgPool2d((2, None))\nprint(m)\ny = m(x)\ny.sum().backward()\n"
    "m1 = torch.nn.AdaptiveAvgPool1d(4)\nprint(m1)\nz = m1(x[0])\n",
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_pool_modules_print_and_run_as_pytorch(name):
    assert_same(MODULES[name])


SECOND_ORDER = {
    "max": leaf(1, 2, 5, 5) + "y = F.max_pool2d(x, 2, 1)\ng, = torch.autograd.grad((y * y).sum(), (x,), "
    "create_graph=True)\ng.pow(2).sum().backward()\n",
    "avg": leaf(1, 2, 5, 5) + "y = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)\ng, = torch.autograd.grad((y * y).sum(), "
    "(x,), create_graph=True)\ng.pow(2).sum().backward()\n",
    "adaptive": leaf(1, 2, 5, 5) + "y = F.adaptive_avg_pool2d(x, 3)\ng, = torch.autograd.grad((y * y).sum(), (x,), "
    "create_graph=True)\ng.pow(2).sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_create_graph_records_the_pools_second_order_nodes_as_pytorch(name):
    assert_same(SECOND_ORDER[name])


ERRORS = {
    "max_pad": "F.max_pool2d(torch.ones(1, 1, 5, 5), 3, padding=2)",
    "max_pad_dilated": "F.max_pool2d(torch.ones(1, 1, 9, 9), 2, padding=2, dilation=2)",
    "max_pad_kernel": "F.max_pool2d(torch.ones(1, 1, 9, 9), (3, 1), padding=(2, 0), dilation=(2, 1))",
    "max_kernel_zero": "F.max_pool2d(torch.ones(1, 1, 5, 5), 0, stride=1)",
    "avg_stride": "F.avg_pool2d(torch.ones(1, 1, 5, 5), 2, stride=(1, 0))",
    "max_kernel": "F.max_pool2d(torch.ones(1, 1, 5, 5), (1, 2, 3))",
    "max_stride": "F.max_pool2d(torch.ones(1, 1, 5, 5), 2, stride=0)",
    "max_small": "F.max_pool2d(torch.ones(1, 1, 2, 2), 3)",
    "max_dims": "F.max_pool2d(torch.ones(5, 5), 2)",
    "avg_pad": "F.avg_pool2d(torch.ones(1, 1, 5, 5), 3, padding=2)",
    "avg_divisor": "F.avg_pool2d(torch.ones(1, 1, 5, 5), 3, divisor_override=0)",
    "avg_small": "F.avg_pool2d(torch.ones(1, 1, 2, 2), 3)",
    "adaptive_dims": "F.adaptive_avg_pool2d(torch.ones(5), 2)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    assert_same_error(ERRORS[name])


@pytest.mark.parametrize("function", [
    lambda x: gv.nn.functional.max_pool2d(x, 2, 1, 1, dilation=(1, 2), ceil_mode=True),
    lambda x: gv.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: gv.nn.functional.avg_pool2d(x, 2, divisor_override=3),
    lambda x: gv.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
    lambda x: gv.nn.functional.max_pool1d(x[0], 3, 2, 1),
    lambda x: gv.nn.functional.avg_pool1d(x[0], 2),
    lambda x: gv.nn.functional.adaptive_avg_pool1d(x[0], 3),
], ids=["max", "avg", "avg_divisor", "adaptive", "max1d", "avg1d", "adaptive1d"])
def test_gradcheck_and_gradgradcheck(function):
    x = gv.tensor(np.random.default_rng(0).standard_normal((2, 2, 5, 4)), requires_grad=True)
    assert gradcheck(function, (x,))
    assert gradgradcheck(function, (x,))


@st.composite
def pools(draw):
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    kind = draw(st.sampled_from(["max", "avg", "adaptive"]))
    spans = dilation if kind == "max" else (1, 1)
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    size = tuple(d * (k - 1) + 1 + draw(st.integers(0, 5)) for k, d in zip(kernel, spans))
    return dict(kind=kind, kernel=kernel, stride=stride, dilation=dilation, padding=padding, size=size,
                ceil_mode=draw(st.booleans()), count_include_pad=draw(st.booleans()),
                divisor=draw(st.sampled_from([None, None, 1, 5])), out=(draw(st.integers(1, 4)), draw(st.integers(1, 4))),
                batch=draw(st.sampled_from([(), (2,)])), dtype=draw(st.sampled_from(["float32", "float64"])),
                integers=draw(st.booleans()))


@settings(max_examples=80, deadline=None)
@given(case=pools(), seed=st.integers(0, 2**16))
def test_any_pool_matches_pytorch(case, seed):
    rng = np.random.default_rng(seed)
    shape = case["batch"] + (2,) + case["size"]
    data = rng.standard_normal(shape)
    if case["integers"]:  # many ties, which max pooling must resolve as PyTorch does
        data = np.round(data)
    data = data.astype(case["dtype"])
    results = []
    for lib in (torch, gv):
        x = lib.tensor(data, requires_grad=True)
        F = lib.nn.functional
        if case["kind"] == "max":
            y, indices = F.max_pool2d(x, case["kernel"], case["stride"], case["padding"], case["dilation"],
                                      case["ceil_mode"], return_indices=True)
            extra = indices.numpy()
        elif case["kind"] == "avg":
            y = F.avg_pool2d(x, case["kernel"], case["stride"], case["padding"], case["ceil_mode"],
                             case["count_include_pad"], case["divisor"])
            extra = None
        else:
            y = F.adaptive_avg_pool2d(x, case["out"])
            extra = None
        weights = rng.standard_normal(tuple(y.shape)).astype(case["dtype"]) if lib is torch else results[0][3]
        (y * lib.tensor(weights)).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), extra, weights, y.grad_fn.name()))
    (y_t, g_t, e_t, _, name_t), (y_g, g_g, e_g, _, name_g) = results
    assert name_g == name_t
    tolerance = dict(rtol=1e-5, atol=1e-6) if case["dtype"] == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert y_g.shape == y_t.shape and y_g.dtype == y_t.dtype
    np.testing.assert_allclose(y_g, y_t, **tolerance)
    np.testing.assert_allclose(g_g, g_t, **tolerance)
    if e_t is not None:
        np.testing.assert_array_equal(e_g, e_t)


def test_a_cnn_with_pooling_trains_to_pytorchs_losses():
    losses = []
    for lib in (torch, gv):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
                                  lib.nn.Conv2d(4, 6, 3, padding=1), lib.nn.ReLU(), lib.nn.AvgPool2d(2),
                                  lib.nn.AdaptiveAvgPool2d(1), lib.nn.Flatten(), lib.nn.Linear(6, 3))
        optimizer = lib.optim.Adam(model.parameters(), lr=0.01)
        images, labels = lib.randn(5, 1, 8, 8), lib.tensor([0, 1, 2, 1, 0])
        run = []
        for _ in range(4):
            optimizer.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-5)


@pytest.mark.parametrize("code", [CASES["max_pool2d"], CASES["avg_pool2d_ceil_no_pad_count"], CASES["adaptive_avg_pool2d"],
                                  CASES["max_pool1d"], SECOND_ORDER["max"], SECOND_ORDER["avg"]],
                         ids=["max", "avg", "adaptive", "max1d", "max_second_order", "avg_second_order"])
def test_the_torch_backend_computes_the_same(code):
    assert_same(code, backend="torch")


@pytest.mark.parametrize("program, names", [
    (lambda x: gv.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True), {"MaxPool2DWithIndicesBackward0"}),
    (lambda x: gv.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     {"AvgPool2DBackward0"}),
    (lambda x: gv.nn.functional.avg_pool1d(x[0], 2), {"AvgPool2DBackward0"}),
    (lambda x: gv.nn.functional.adaptive_avg_pool2d(x, (3, 2)), {"AdaptiveAvgPool2DBackward0"}),
    (lambda x: gv.autograd.grad(gv.nn.functional.max_pool2d(x, 2).pow(2).sum(), (x,), create_graph=True)[0] * x,
     {"MaxPool2DWithIndicesBackwardBackward0"}),
    (lambda x: gv.autograd.grad(gv.nn.functional.avg_pool2d(x, 2).pow(2).sum(), (x,), create_graph=True)[0] * x,
     {"AvgPool2DBackwardBackward0"}),
    (lambda x: gv.autograd.grad(gv.nn.functional.adaptive_avg_pool2d(x, 3).pow(2).sum(), (x,), create_graph=True)[0]
     * x, {"AdaptiveAvgPool2DBackwardBackward0"}),
], ids=["max", "avg", "avg1d", "adaptive", "max_second", "avg_second", "adaptive_second"])
def test_the_learner_formula_gives_what_backward_sent(program, names):
    """The snapshot's formulas for the pooling nodes (``snapshot/window_formulas.py``), evaluated at every step of the
    backward pass, give the gradient each step sent (as ``tests/test_formulas.py`` checks for every op)."""
    from test_formulas import _checked_nodes

    x = gv.tensor(np.random.default_rng(4).standard_normal((2, 2, 6, 5)), requires_grad=True)
    assert names <= _checked_nodes(program(x).sum())
