"""Convolution against PyTorch 2.13: ``F.conv1d``/``conv2d``/``conv3d``, the transposed ones, ``torch.convolution``,
``nn.Conv1d``/``Conv2d``/``ConvTranspose1d``/``ConvTranspose2d`` and ``torch.nn.grad``: values, grads, the
ConvolutionBackward0 node with its saved attributes and edges, the ConvolutionBackwardBackward0 graph a
create_graph pass records, printed modules, seeded initialisation, errors; central differences to first and
second order; hypothesis over shapes, strides, paddings, dilations and groups; a small CNN trained in both.
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


def leaf(name: str, *shape, dtype: str = "float64") -> str:
    count = int(np.prod(shape))
    return (f"{name} = ((torch.arange({count}, dtype=torch.{dtype}).reshape({list(shape)}) * 0.37 + {len(name)}) % 1.9"
            " - 0.8).requires_grad_()\n")


CASES = {
    "conv2d_bias": leaf("x", 2, 3, 5, 6) + leaf("w", 4, 3, 3, 3) + leaf("b", 4)
    + weighted_backward("F.conv2d(x, w, b)") + "print(y)\n",
    "conv2d_stride_padding_dilation": leaf("x", 2, 4, 7, 6) + leaf("w", 6, 2, 3, 2)
    + weighted_backward("F.conv2d(x, w, None, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)"),
    "conv2d_float32": leaf("x", 2, 3, 6, 6, dtype="float32") + leaf("w", 5, 3, 2, 3, dtype="float32")
    + leaf("b", 5, dtype="float32") + weighted_backward("F.conv2d(x, w, b, stride=2, padding=1)"),
    "conv2d_depthwise": leaf("x", 1, 4, 5, 5) + leaf("w", 8, 1, 3, 3)
    + weighted_backward("F.conv2d(x, w, padding=1, groups=4)"),
    "conv2d_unbatched": leaf("x", 3, 5, 5) + leaf("w", 2, 3, 3, 3) + leaf("b", 2)
    + weighted_backward("F.conv2d(x, w, b)"),
    "conv2d_same_odd": leaf("x", 1, 2, 5, 4) + leaf("w", 3, 2, 3, 3)
    + weighted_backward("F.conv2d(x, w, padding='same', dilation=2)"),
    "conv2d_same_even": leaf("x", 1, 2, 5, 4) + leaf("w", 3, 2, 2, 4)
    + weighted_backward("F.conv2d(x, w, padding='same')"),
    "conv2d_valid": leaf("x", 1, 2, 5, 4) + leaf("w", 3, 2, 2, 2) + weighted_backward("torch.conv2d(x, w, padding='valid')"),
    "conv2d_input_only": leaf("x", 1, 2, 4, 4) + "w = torch.ones(3, 2, 2, 2, dtype=torch.float64)\n"
    + weighted_backward("F.conv2d(x, w)"),
    "conv2d_weight_only": "x = torch.ones(1, 2, 4, 4, dtype=torch.float64)\n" + leaf("w", 3, 2, 2, 2) + leaf("b", 3)
    + weighted_backward("F.conv2d(x, w, b)"),
    "conv1d": leaf("x", 2, 3, 9) + leaf("w", 4, 3, 3) + leaf("b", 4)
    + weighted_backward("F.conv1d(x, w, b, stride=2, padding=1, dilation=2)"),
    "conv1d_unbatched_groups": leaf("x", 4, 7) + leaf("w", 2, 2, 2) + weighted_backward("torch.conv1d(x, w, groups=2)"),
    "conv1d_same_even": leaf("x", 2, 2, 6) + leaf("w", 2, 2, 4) + weighted_backward("F.conv1d(x, w, padding='same')"),
    "conv3d": leaf("x", 1, 2, 4, 4, 3) + leaf("w", 2, 2, 2, 3, 2) + leaf("b", 2)
    + weighted_backward("F.conv3d(x, w, b, padding=(1, 0, 1))"),
    "convolution": leaf("x", 1, 2, 5, 5) + leaf("w", 2, 2, 3, 3)
    + weighted_backward("torch.convolution(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)"),
    "conv_transpose2d": leaf("x", 2, 4, 3, 4) + leaf("w", 4, 3, 3, 2) + leaf("b", 6)
    + weighted_backward("F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=1)"),
    "conv_transpose2d_dilated": leaf("x", 1, 2, 3, 3) + leaf("w", 2, 2, 2, 3)
    + weighted_backward("F.conv_transpose2d(x, w, stride=(1, 2), padding=(0, 1), dilation=2)"),
    "conv_transpose1d_unbatched": leaf("x", 3, 4) + leaf("w", 3, 2, 3) + leaf("b", 2)
    + weighted_backward("F.conv_transpose1d(x, w, b, stride=3, output_padding=2)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_convolutions_match_pytorch(name):
    assert_same(CASES[name])


MODULES = {
    "conv2d": "torch.manual_seed(0)\nm = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)\nprint(m)\n"
    "x = torch.randn(2, 3, 7, 7)\ny = m(x)\ny.pow(2).mean().backward()\nw, b = m.weight, m.bias\n",
    "conv2d_options": "torch.manual_seed(1)\nm = torch.nn.Conv2d(4, 6, (2, 3), dilation=(2, 1), groups=2, bias=False,"
    " padding='same')\nprint(m)\nx = torch.randn(4, 5, 6)\ny = m(x)\ny.sum().backward()\nw = m.weight\n",
    "conv1d": "torch.manual_seed(2)\nm = torch.nn.Conv1d(2, 3, 4, stride=2, padding=3)\nprint(m, m.weight.shape)\n"
    "x = torch.randn(3, 2, 11)\ny = m(x)\ny.pow(2).sum().backward()\nw, b = m.weight, m.bias\n",
    "conv2d_double": "torch.manual_seed(3)\nm = torch.nn.Conv2d(2, 2, 3, padding='valid').double()\nprint(m)\n"
    "x = torch.randn(1, 2, 4, 5, dtype=torch.float64)\ny = m(x)\ny.sum().backward()\nw, b = m.weight, m.bias\n",
    "conv_transpose2d": "torch.manual_seed(4)\nm = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, "
    "output_padding=1)\nprint(m)\nx = torch.randn(2, 3, 4, 4)\ny = m(x)\ny.pow(2).sum().backward()\n"
    "z = m(x, output_size=[8, 8])\nw, b = m.weight, m.bias\n",
    "conv3d_and_transposed": "torch.manual_seed(7)\nm = torch.nn.Conv3d(2, 3, (2, 3, 2), padding=1, stride=(1, 2, 1))\n"
    "t = torch.nn.ConvTranspose3d(3, 2, 2, stride=2)\nprint(m, t)\nx = torch.randn(1, 2, 3, 4, 3)\ny = t(m(x))\n"
    "y.pow(2).sum().backward()\nw, b, tw, tb = m.weight, m.bias, t.weight, t.bias\n",
    "conv_transpose1d": "torch.manual_seed(5)\nm = torch.nn.ConvTranspose1d(2, 4, 2, groups=2, bias=False, dilation=2)\n"
    "print(m)\nx = torch.randn(2, 2, 5)\ny = m(x)\ny.sum().backward()\nw = m.weight\n",
}
for _mode in ("reflect", "replicate", "circular"):
    MODULES[f"padding_mode_{_mode}"] = (
        f"torch.manual_seed(6)\nm = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode={_mode!r})\nprint(m)\n"
        "x = torch.randn(1, 2, 5, 5, dtype=torch.float64).requires_grad_()\ny = m.double()(x)\ny.pow(2).sum().backward()\n"
        f"m1 = torch.nn.Conv1d(2, 2, 2, padding='same', padding_mode={_mode!r}).double()\nprint(m1)\n"
        "z = m1(x[0, :, 0])\nz.sum().backward()\n")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_conv_modules_print_initialise_and_run_as_pytorch(name):
    assert_same(MODULES[name])


def test_seeded_initialisation_draws_pytorchs_numbers():
    for seed, args in ((0, (2, 8, 3)), (7, (6, 4, (2, 5))), (9, (4, 4, 3))):
        torch.manual_seed(seed)
        gv.manual_seed(seed)
        for theirs, ours in ((torch.nn.Conv2d(*args), gv.nn.Conv2d(*args)),
                             (torch.nn.Conv1d(args[0], args[1], 3, groups=2), gv.nn.Conv1d(args[0], args[1], 3, groups=2)),
                             (torch.nn.ConvTranspose2d(*args), gv.nn.ConvTranspose2d(*args))):
            for name in ("weight", "bias"):
                assert np.array_equal(getattr(theirs, name).detach().numpy(), getattr(ours, name).detach().numpy())


SECOND_ORDER = {
    "conv2d": leaf("x", 2, 2, 5, 4) + leaf("w", 4, 1, 3, 2) + leaf("b", 4)
    + "y = F.conv2d(x, w, b, stride=(1, 2), padding=1, dilation=(2, 1), groups=2)\n"
    "gx, gw, gb = torch.autograd.grad((y * y).sum(), (x, w, b), create_graph=True)\n"
    "(gx.pow(2).sum() + (gw * gw).sum() + gb.sum() * 3).backward()\n",
    "conv1d_input_only": leaf("x", 1, 2, 6) + leaf("w", 3, 2, 3)
    + "y = F.conv1d(x, w, padding=2)\ngx, = torch.autograd.grad(y.sin().sum(), (x,), create_graph=True)\n"
    "gx.pow(2).sum().backward()\n",
    "conv_transpose2d": leaf("x", 1, 2, 3, 3) + leaf("w", 2, 3, 2, 2) + leaf("b", 3)
    + "y = F.conv_transpose2d(x, w, b, stride=2)\n"
    "gx, gw = torch.autograd.grad(y.pow(3).sum(), (x, w), create_graph=True)\n(gx.sum() * gw.sum()).backward()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_create_graph_records_convolution_backward_backward_as_pytorch(name):
    assert_same(SECOND_ORDER[name])


GRAD_FUNCTIONS = {
    "conv2d_input": leaf("w", 4, 3, 3, 3) + leaf("go", 2, 4, 4, 4)
    + "gi = torch.nn.grad.conv2d_input((2, 3, 7, 7), w, go, stride=2, padding=1)\n(gi * gi).sum().backward()\n",
    "conv2d_weight": leaf("x", 2, 4, 6, 6) + leaf("go", 2, 2, 3, 3)
    + "gw = torch.nn.grad.conv2d_weight(x, (2, 2, 2, 2), go, stride=2, dilation=1, groups=2)\ngw.sum().backward()\n",
    "conv1d_input_no_grad": "torch.manual_seed(0)\nw = torch.randn(3, 2, 2)\ngo = torch.randn(1, 3, 4)\n"
    "gi = torch.nn.grad.conv1d_input((1, 2, 5), w, go)\n",
    "conv1d_weight": leaf("x", 1, 2, 5) + "go = torch.ones(1, 3, 2, dtype=torch.float64)\n"
    "gw = torch.nn.grad.conv1d_weight(x, [3, 2, 2], go, stride=2, padding=0)\ngw.pow(2).sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(GRAD_FUNCTIONS))
def test_torch_nn_grad_functions_match_pytorch(name):
    assert_same(GRAD_FUNCTIONS[name])


def test_the_tutorials_custom_conv_function_gives_pytorchs_gradients():
    """The shape of PyTorch's "Fusing Convolution and Batch Norm" tutorial: a Function whose backward calls
    ``torch.nn.grad.conv2d_input`` / ``conv2d_weight``."""
    results = []
    for lib in (torch, gv):
        class Conv2D(lib.autograd.Function):
            @staticmethod
            def forward(ctx, X, weight):
                ctx.save_for_backward(X, weight)
                return lib.nn.functional.conv2d(X, weight)

            @staticmethod
            def backward(ctx, grad_out):
                X, weight = ctx.saved_tensors
                return (lib.nn.grad.conv2d_input(X.shape, weight, grad_out),
                        lib.nn.grad.conv2d_weight(X, weight.shape, grad_out))

        data = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
        X = lib.tensor(data, requires_grad=True)
        weight = lib.tensor(data[0, :, :3, :3][None].repeat(4, 0) * 0.5, requires_grad=True)
        Conv2D.apply(X, weight).pow(2).sum().backward()
        results.append((X.grad.numpy().copy(), weight.grad.numpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12, atol=1e-12)


ERRORS = {
    "channels": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 2, 3, 3))",
    "groups_channels": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3), groups=2)",
    "groups_divide": "F.conv2d(torch.ones(2, 6, 5, 5), torch.ones(5, 3, 3, 3), groups=2)",
    "groups_too_many": "F.conv2d(torch.ones(2, 6, 5, 5), torch.ones(2, 1, 3, 3), groups=6)",
    "kernel_too_big": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 7, 6), padding=(1, 0))",
    "input_dims": "F.conv2d(torch.ones(5, 5), torch.ones(4, 3, 3, 3))",
    "input_dims_1d": "F.conv1d(torch.ones(1, 2, 5, 5), torch.ones(4, 2, 3))",
    "weight_dims": "F.conv2d(torch.ones(1, 3, 5, 5), torch.ones(4, 3, 3))",
    "bias_size": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3), torch.ones(3))",
    "padding_string": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3), padding='foo')",
    "same_strided": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3), stride=2, padding='same')",
    "stride": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3), stride=0)",
    "negative_padding": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3), padding=-1)",
    "dtypes": "F.conv2d(torch.ones(2, 3, 5, 5), torch.ones(4, 3, 3, 3, dtype=torch.float64))",
    "stride_length": "F.conv2d(torch.ones(1, 3, 5, 5), torch.ones(4, 3, 3, 3), stride=(1, 1, 1))",
    "dilation_zero": "F.conv2d(torch.ones(1, 3, 5, 5), torch.ones(4, 3, 3, 3), dilation=0)",
    "bias_dtype": "F.conv2d(torch.ones(1, 3, 5, 5), torch.ones(4, 3, 3, 3), torch.ones(4, dtype=torch.float64))",
    "transposed_too_small": "F.conv_transpose2d(torch.ones(1, 3, 2, 2), torch.ones(3, 3, 3, 3), padding=3)",
    "transposed_channels": "F.conv_transpose2d(torch.ones(1, 3, 4, 4), torch.ones(2, 3, 3, 3))",
    "transposed_bias": "F.conv_transpose2d(torch.ones(1, 2, 4, 4), torch.ones(2, 3, 3, 3), torch.ones(2))",
    "module_groups": "torch.nn.Conv2d(3, 4, 3, groups=2)",
    "module_groups_zero": "torch.nn.Conv2d(3, 4, 3, groups=0)",
    "module_out_groups": "torch.nn.Conv2d(4, 3, 3, groups=2)",
    "module_padding_string": "torch.nn.Conv2d(4, 3, 3, padding='full')",
    "module_same_strided": "torch.nn.Conv1d(4, 3, 3, padding='same', stride=2)",
    "module_padding_mode": "torch.nn.ConvTranspose2d(4, 3, 3, padding_mode='reflect')",
    "module_output_size": "torch.nn.ConvTranspose2d(1, 1, 3, stride=2)(torch.ones(1, 1, 3, 3), output_size=(9, 9))",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    assert_same_error(ERRORS[name])


def test_padding_mode_message_names_the_valid_modes():
    with pytest.raises(ValueError, match="padding_mode must be one of .* but got padding_mode='wrap'"):
        gv.nn.Conv2d(1, 1, 3, padding_mode="wrap")


# -- central differences ------------------------------------------------------------------------------------
def _leaves(rng, *shapes):
    return [gv.tensor(rng.standard_normal(shape), requires_grad=True) for shape in shapes]


@pytest.mark.parametrize("transposed", [False, True])
def test_gradcheck_and_gradgradcheck(transposed):
    rng = np.random.default_rng(1)
    if transposed:
        x, w, b = _leaves(rng, (1, 2, 3, 2), (2, 2, 2, 2), (4,))

        def function(x, w, b):
            return gv.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2)
    else:
        x, w, b = _leaves(rng, (2, 2, 4, 3), (2, 1, 2, 2), (2,))

        def function(x, w, b):
            return gv.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    assert gradcheck(function, (x, w, b))
    assert gradgradcheck(function, (x, w, b))


def test_gradcheck_conv1d_unbatched_same():
    x, w = _leaves(np.random.default_rng(2), (2, 5), (3, 2, 2))
    assert gradcheck(lambda x, w: gv.nn.functional.conv1d(x, w, padding="same"), (x, w))
    assert gradgradcheck(lambda x, w: gv.nn.functional.conv1d(x, w, padding="same"), (x, w))


# -- hypothesis over the parameters ----------------------------------------------------------------------------
@st.composite
def convolutions(draw):
    dims = draw(st.sampled_from([1, 2]))
    groups = draw(st.integers(1, 3))
    in_group, out_group = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    transposed = draw(st.booleans())
    padding = tuple(draw(st.integers(0, 2)) for _ in range(dims))
    if transposed:
        output_padding = tuple(draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation))
        size = tuple(draw(st.integers(1, 4)) for _ in range(dims))
        spans = [(s - 1) * st_ - 2 * p + d * (k - 1) + op + 1
                 for s, st_, p, d, k, op in zip(size, stride, padding, dilation, kernel, output_padding)]
        if any(span <= 0 for span in spans):
            padding = (0,) * dims
        weight = (groups * in_group, out_group) + kernel
        channels = groups * in_group
    else:
        output_padding = (0,) * dims
        size = tuple(d * (k - 1) + 1 - 2 * p + draw(st.integers(0, 4)) for d, k, p in zip(dilation, kernel, padding))
        size = tuple(max(s, 1) for s in size)
        padding = tuple(min(p, 2) if s + 2 * p >= d * (k - 1) + 1 else (d * (k - 1) + 1 - s + 1) // 2
                        for s, p, d, k in zip(size, padding, dilation, kernel))
        weight = (groups * out_group, in_group) + kernel
        channels = groups * in_group
    batch = draw(st.integers(1, 2))
    bias = draw(st.booleans())
    dtype = draw(st.sampled_from(["float32", "float64"]))
    return dict(input=(batch, channels) + size, weight=weight, bias=bias, stride=stride, padding=padding,
                dilation=dilation, transposed=transposed, output_padding=output_padding, groups=groups, dtype=dtype)


@settings(max_examples=60, deadline=None)
@given(case=convolutions(), seed=st.integers(0, 2**16))
def test_any_convolution_matches_pytorch(case, seed):
    rng = np.random.default_rng(seed)
    dtype = case["dtype"]
    arrays = [rng.standard_normal(case["input"]).astype(dtype), rng.standard_normal(case["weight"]).astype(dtype)]
    out_channels = case["weight"][1] * case["groups"] if case["transposed"] else case["weight"][0]
    arrays.append(rng.standard_normal(out_channels).astype(dtype) if case["bias"] else None)
    args = (case["stride"], case["padding"], case["dilation"], case["transposed"], case["output_padding"],
            case["groups"])
    results = []
    for lib in (torch, gv):
        leaves = [None if a is None else lib.tensor(a, requires_grad=True) for a in arrays]
        y = lib.convolution(*leaves, *args)
        weights = lib.tensor(rng.standard_normal(tuple(y.shape)).astype(dtype)) if lib is torch else \
            gv.tensor(results[0][-1])
        (y * weights).sum().backward()
        results.append([y.detach().numpy()] + [None if t is None else t.grad.numpy() for t in leaves]
                       + [weights.numpy()])
        assert y.grad_fn.name() == "ConvolutionBackward0"
    tolerance = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    for theirs, ours in zip(results[0][:-1], results[1][:-1]):
        if theirs is None:
            assert ours is None
        else:
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs, **tolerance)


# -- a small CNN trained in both libraries --------------------------------------------------------------------
def _train(lib, steps: int = 4) -> list:
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.ReLU(), lib.nn.Conv2d(4, 8, 3, stride=2),
                              lib.nn.Tanh(), lib.nn.Flatten(), lib.nn.Linear(8 * 3 * 3, 3))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = lib.randn(6, 1, 8, 8)
    labels = lib.tensor([0, 1, 2, 0, 1, 2])
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_a_small_cnn_trains_to_pytorchs_losses():
    theirs, ours = _train(torch), _train(gv)
    np.testing.assert_allclose(ours, theirs, rtol=2e-5)
    assert ours[-1] < ours[0]


def test_the_widgets_snapshot_draws_a_cnns_graph():
    """``graph_of`` (what ``gradviz.show`` draws) walks a CNN's graph as it walks PyTorch's."""
    from test_snapshot import both, picture

    def program(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3), lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(8, 1))
        x = lib.randn(2, 1, 4, 4)
        loss = model(x).pow(2).mean()
        return loss, model, {"x": x, "loss": loss}

    mine, theirs = both(torch, program)
    assert "ConvolutionBackward0" in {node.name for node in mine.nodes}
    mine_picture, theirs_picture = picture(mine), picture(theirs)
    for ours, their in zip(mine_picture["nodes"], theirs_picture["nodes"]):
        if ours["module"] != their["module"]:  # torch infers a parameterless node's module less deep
            assert their["module"] is None or ours["module"].startswith(str(their["module"]))
            ours["module"] = their["module"]
    assert mine_picture == theirs_picture
    from gradviz.render import compute_layout

    compute_layout(mine)


@pytest.mark.parametrize("code", [CASES["conv2d_bias"], CASES["conv_transpose2d"], CASES["conv1d_unbatched_groups"],
                                  SECOND_ORDER["conv2d"], GRAD_FUNCTIONS["conv2d_weight"]],
                         ids=["conv2d", "transposed", "conv1d", "second_order", "nn_grad"])
def test_the_torch_backend_computes_the_same(code):
    assert_same(code, backend="torch")


@pytest.mark.parametrize("program", [
    lambda x, w, b: gv.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
    lambda x, w, b: gv.nn.functional.conv_transpose2d(x, w, None, stride=2, output_padding=1, groups=2),
    lambda x, w, b: gv.nn.functional.conv1d(x[0, :, 0], w[:, :, 0], b, padding="same", groups=2),
], ids=["conv2d", "conv_transpose2d", "conv1d_same"])
def test_the_learner_formula_gives_what_backward_sent(program):
    """The snapshot's formula for ConvolutionBackward0 (``snapshot/window_formulas.py``), evaluated at every step of
    the backward pass, gives the gradient each step sent (as ``tests/test_formulas.py`` checks for every op)."""
    from test_formulas import _checked_nodes

    rng = np.random.default_rng(3)
    x, w, b = _leaves(rng, (2, 4, 5, 5), (4, 2, 3, 2), (4,))
    assert "ConvolutionBackward0" in _checked_nodes(program(x, w, b))
    y = gv.nn.functional.conv2d(x, w, b, padding=1, groups=2)
    gx, = gv.autograd.grad((y * y).sum(), (x,), create_graph=True)
    assert "ConvolutionBackwardBackward0" in _checked_nodes((gx * x).sum())


def test_the_one_file_export_of_a_cnn_holds_its_nodes_and_steps():
    """``gv.to_html`` (the widget's state, with the backward trace and its formulas) of a CNN with pooling."""
    gv.manual_seed(0)
    model = gv.nn.Sequential(gv.nn.Conv2d(1, 2, 3, padding=1), gv.nn.ReLU(), gv.nn.MaxPool2d(2), gv.nn.AvgPool2d(2),
                             gv.nn.Flatten(), gv.nn.Linear(2, 1))
    loss = model(gv.randn(2, 1, 4, 4)).pow(2).mean()
    html = gv.to_html(loss, model=model)
    for name in ("ConvolutionBackward0", "MaxPool2DWithIndicesBackward0", "AvgPool2DBackward0"):
        assert name in html
