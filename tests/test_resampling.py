"""Resampling against PyTorch 2.13: ``F.interpolate`` in every mode gradviz computes (nearest, nearest-exact, linear,
bilinear, bicubic, trilinear, area) with sizes, scale factors, ``align_corners`` and ``recompute_scale_factor``; the
deprecated ``upsample*`` names; ``pixel_shuffle``/``pixel_unshuffle``/``channel_shuffle``; the modules. Values,
gradients, graphs with saved values, the recorded double backward, printed modules, errors and warnings; central
differences to second order; hypothesis over sizes and scales against torch.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz as gv  # noqa: E402
from gradviz.autograd.gradcheck import gradcheck, gradgradcheck  # noqa: E402
from parity import assert_same, assert_same_error, run_both, weighted_backward  # noqa: E402


def leaf(*shape, dtype: str = "float64") -> str:
    count = int(np.prod(shape))
    return (f"x = torch.arange({count}, dtype=torch.{dtype}).reshape({list(shape)})\n"
            "x = ((0.37 * x + 0.011 * x * x) % 1.9 - 0.8).requires_grad_()\n")


CASES = {
    "nearest_1d_scale": leaf(1, 2, 5) + weighted_backward("F.interpolate(x, scale_factor=2)") + "print(y)\n",
    "nearest_1d_size": leaf(2, 2, 5) + weighted_backward("F.interpolate(x, size=7)"),
    "nearest_1d_shrink": leaf(1, 2, 7) + weighted_backward("F.interpolate(x, scale_factor=0.6)"),
    "nearest_exact_1d": leaf(1, 2, 5) + weighted_backward("F.interpolate(x, scale_factor=1.7, mode='nearest-exact')"),
    "nearest_2d": leaf(1, 2, 3, 4, dtype="float32") + weighted_backward("F.interpolate(x, scale_factor=(2, 1.5))")
    + "print(y)\n",
    "nearest_exact_2d_size": leaf(1, 2, 3, 4) + weighted_backward("F.interpolate(x, size=(5, 3), mode='nearest-exact')"),
    "nearest_3d": leaf(1, 1, 2, 3, 2) + weighted_backward("F.interpolate(x, size=(3, 5, 4))"),
    "nearest_exact_3d": leaf(1, 1, 2, 3, 2) + weighted_backward("F.interpolate(x, scale_factor=1.5, mode='nearest-exact')"),
    "linear": leaf(1, 2, 5) + weighted_backward("F.interpolate(x, scale_factor=2, mode='linear')"),
    "linear_align_corners": leaf(1, 2, 5) + weighted_backward("F.interpolate(x, size=8, mode='linear', align_corners=True)"),
    "linear_shrink_float32": leaf(2, 2, 9, dtype="float32")
    + weighted_backward("F.interpolate(x, size=4, mode='linear')") + "print(y)\n",
    "bilinear": leaf(1, 2, 3, 4) + weighted_backward("F.interpolate(x, size=(5, 7), mode='bilinear')") + "print(y)\n",
    "bilinear_recompute": leaf(1, 2, 3, 4) + weighted_backward(
        "F.interpolate(x, scale_factor=(1.5, 2), mode='bilinear', recompute_scale_factor=True)"),
    "bilinear_align_corners_shrink": leaf(2, 1, 6, 5) + weighted_backward(
        "F.interpolate(x, size=(4, 2), mode='bilinear', align_corners=True)"),
    "bilinear_float32": leaf(1, 3, 4, 4, dtype="float32") + "y = F.interpolate(x, scale_factor=1.75, mode='bilinear')\n",
    "bicubic": leaf(1, 2, 3, 4) + weighted_backward("F.interpolate(x, scale_factor=2, mode='bicubic')") + "print(y)\n",
    "bicubic_align_corners": leaf(1, 1, 5, 4) + weighted_backward(
        "F.interpolate(x, size=(7, 2), mode='bicubic', align_corners=True)"),
    "trilinear": leaf(1, 1, 2, 3, 2) + weighted_backward("F.interpolate(x, scale_factor=2, mode='trilinear')"),
    "trilinear_align_corners": leaf(1, 2, 3, 2, 2) + weighted_backward(
        "F.interpolate(x, size=(2, 4, 3), mode='trilinear', align_corners=True)"),
    "area_1d": leaf(1, 2, 7) + weighted_backward("F.interpolate(x, size=3, mode='area')"),
    "area_2d_scale": leaf(1, 2, 6, 4) + weighted_backward("F.interpolate(x, scale_factor=0.5, mode='area')"),
    "area_3d": leaf(1, 1, 4, 3, 2) + weighted_backward("F.interpolate(x, size=(2, 2, 1), mode='area')"),
    "pixel_shuffle": leaf(2, 8, 2, 3) + weighted_backward("F.pixel_shuffle(x, 2)") + "print(y)\n",
    "pixel_shuffle_unbatched": leaf(9, 2, 2) + weighted_backward("torch.pixel_shuffle(x, 3)"),
    "pixel_unshuffle": leaf(1, 2, 4, 6) + weighted_backward("F.pixel_unshuffle(x, 2)"),
    "pixel_unshuffle_batch_dims": leaf(2, 2, 1, 3, 3) + weighted_backward("torch.pixel_unshuffle(x, 3)"),
    "channel_shuffle": leaf(2, 6, 2) + weighted_backward("F.channel_shuffle(x, 3)") + "print(y)\n",
    "channel_shuffle_torch_name": leaf(1, 4, 2, 2) + weighted_backward("torch.channel_shuffle(x, 2)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    assert_same(CASES[name])


SECOND_ORDER = {
    mode: leaf(1, 2, 3, 4) + f"y = F.interpolate(x, size=(5, 6), mode='{mode}')\n"
    "go = (torch.arange(60, dtype=torch.float64).reshape(1, 2, 5, 6) * 0.1).requires_grad_()\n"
    "gx, = torch.autograd.grad(y, x, go, create_graph=True)\n(gx * gx).sum().backward()\n"
    for mode in ("nearest", "bilinear", "bicubic", "nearest-exact")
}
SECOND_ORDER["pixel_shuffle"] = leaf(1, 8, 2, 2) + "y = F.pixel_shuffle(x, 2)\n" \
    "go = (torch.arange(32, dtype=torch.float64).reshape(1, 2, 4, 4) * 0.1).requires_grad_()\n" \
    "gx, = torch.autograd.grad(y, x, go, create_graph=True)\n(gx * gx).sum().backward()\n"


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_matches_torch(name):
    assert_same(SECOND_ORDER[name])


MODULES = {
    "upsample_scale": "m = torch.nn.Upsample(scale_factor=2, mode='bilinear')\nprint(m, m.scale_factor)\n"
    + leaf(1, 2, 3, 3) + weighted_backward("m(x)"),
    "upsample_size_tuple_scale": "m = torch.nn.Upsample(size=(3, 4))\nn = torch.nn.Upsample(scale_factor=(2, 3))\n"
    "print(m, n, n.scale_factor, m.name)\n" + leaf(1, 1, 2, 2) + weighted_backward("m(x) + n(x)[..., :3, :4]"),
    "upsampling_nearest_2d": "m = torch.nn.UpsamplingNearest2d(scale_factor=2)\nprint(m)\n" + leaf(1, 1, 2, 3)
    + weighted_backward("m(x)"),
    "upsampling_bilinear_2d": "m = torch.nn.UpsamplingBilinear2d(size=4)\nprint(m)\n" + leaf(1, 1, 2, 3)
    + weighted_backward("m(x)"),
    "shuffles": "p, u, c = torch.nn.PixelShuffle(2), torch.nn.PixelUnshuffle(2), torch.nn.ChannelShuffle(2)\n"
    "print(p, u, c)\n" + leaf(1, 4, 2, 2) + weighted_backward("c(u(p(x)))"),
    "deprecated_names": leaf(1, 2, 3) + "a = F.upsample(x, scale_factor=2, mode='linear')\n"
    "b = F.upsample_nearest(x, size=4)\n" + leaf(1, 1, 2, 2).replace("x", "z")
    + "c = F.upsample_bilinear(z, scale_factor=2)\n(a.sum() + b.sum() + (c * c).sum()).backward()\n",
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_match_torch(name):
    assert_same(MODULES[name])


ERRORS = {
    "size_length": "F.interpolate(torch.randn(1, 2, 3), size=(3, 4))",
    "scale_length": "F.interpolate(torch.randn(1, 2, 3), scale_factor=(2, 2))",
    "neither": "F.interpolate(torch.randn(1, 2, 3))",
    "both": "F.interpolate(torch.randn(1, 2, 3), size=3, scale_factor=2)",
    "linear_on_4d": "F.interpolate(torch.randn(1, 2, 3, 3), scale_factor=2, mode='linear')",
    "bilinear_on_3d": "F.interpolate(torch.randn(1, 2, 3), scale_factor=2, mode='bilinear')",
    "align_corners_nearest": "F.interpolate(torch.randn(1, 2, 3), scale_factor=2, align_corners=True)",
    "recompute_with_size": "F.interpolate(torch.randn(1, 2, 3), size=4, recompute_scale_factor=True)",
    "unknown_mode": "F.interpolate(torch.randn(1, 2, 3), scale_factor=2, mode='cubic')",
    "two_dims": "F.interpolate(torch.randn(2, 3), scale_factor=2)",
    "antialias_linear": "F.interpolate(torch.randn(1, 2, 3), scale_factor=2, mode='linear', antialias=True)",
    "negative_scale": "F.interpolate(torch.randn(1, 2, 3), scale_factor=-1.0)",
    "zero_size": "F.interpolate(torch.randn(1, 2, 3, 3), size=(0, 2))",
    "pixel_shuffle_dims": "F.pixel_shuffle(torch.randn(2, 3), 2)",
    "pixel_shuffle_channels": "F.pixel_shuffle(torch.randn(1, 5, 2, 2), 2)",
    "pixel_shuffle_zero": "F.pixel_shuffle(torch.randn(1, 4, 2, 2), 0)",
    "pixel_unshuffle_height": "F.pixel_unshuffle(torch.randn(1, 1, 3, 4), 2)",
    "pixel_unshuffle_width": "F.pixel_unshuffle(torch.randn(1, 1, 4, 3), 2)",
    "channel_shuffle_groups": "F.channel_shuffle(torch.randn(1, 5, 2), 2)",
    "channel_shuffle_zero": "F.channel_shuffle(torch.randn(1, 4, 2), 0)",
    "channel_shuffle_dims": "F.channel_shuffle(torch.randn(4, 2), 2)",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(ERRORS[name])


def test_deprecated_names_warn_as_torch():
    code = "import warnings\nwith warnings.catch_warnings(record=True) as caught:\n    warnings.simplefilter('always')\n" \
           "    F.upsample(torch.randn(1, 1, 2), scale_factor=2)\n    F.upsample_nearest(torch.randn(1, 1, 2), size=3)\n" \
           "    F.upsample_bilinear(torch.randn(1, 1, 2, 2), size=3)\n" \
           "messages = [(w.category.__name__, str(w.message)) for w in caught]\n"
    (scope_t, _), (scope_g, _) = run_both(code)
    assert scope_g["messages"] == scope_t["messages"] and len(scope_t["messages"]) == 3


def test_antialias_says_it_is_not_supported():
    with pytest.raises(NotImplementedError, match="antialias"):
        gv.nn.functional.interpolate(gv.randn(1, 1, 4, 4), scale_factor=0.5, mode="bilinear", antialias=True)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_gradcheck_to_second_order(mode):
    x = gv.randn(1, 2, 3, 4, dtype=gv.float64, requires_grad=True)
    function = (lambda x: gv.nn.functional.interpolate(x, size=(5, 3), mode=mode))
    assert gradcheck(function, (x,))
    assert gradgradcheck(function, (x,))


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(["nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"]),
       sizes=st.lists(st.integers(1, 6), min_size=3, max_size=3), outs=st.lists(st.integers(1, 9), min_size=3, max_size=3),
       by_scale=st.booleans(), scale=st.floats(0.3, 3.0), align=st.booleans(), float32=st.booleans(),
       seed=st.integers(0, 2**16))
def test_hypothesis_against_torch(mode, sizes, outs, by_scale, scale, align, float32, seed):
    spatial = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}.get(mode, len(sizes) - seed % 3)
    shape = (2, 2) + tuple(sizes[:spatial])
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape).astype(np.float32 if float32 else np.float64)
    kwargs = {"mode": mode}
    if mode not in ("nearest", "nearest-exact"):
        kwargs["align_corners"] = align
    if by_scale:
        kwargs["scale_factor"] = scale
    else:
        kwargs["size"] = tuple(outs[:spatial])
    results = []
    for lib in (torch, gv):
        x = lib.tensor(data, requires_grad=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = lib.nn.functional.interpolate(x, **kwargs)
        except RuntimeError as error:  # an output size of 0
            results.append(str(error))
            continue
        weights = np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)).astype(data.dtype)
        (y * lib.tensor(weights)).sum().backward()
        results.append((type(y.grad_fn).__name__, y.detach().numpy(), x.grad.numpy()))
    if isinstance(results[0], str):
        assert results[1] == results[0]
        return
    (name_t, y_t, g_t), (name_g, y_g, g_g) = results
    tolerance = 1e-5 if float32 else 1e-12
    assert name_g == name_t
    np.testing.assert_allclose(y_g, y_t, rtol=tolerance, atol=tolerance)
    if not _torch_backward_reads_elsewhere(mode, shape[2:], y_t.shape[2:], kwargs.get("scale_factor")):
        np.testing.assert_allclose(g_g, g_t, rtol=tolerance, atol=tolerance * 10)


def _torch_backward_reads_elsewhere(mode, sizes, outs, scale) -> bool:
    """Where PyTorch's backward kernels take a shortcut their forward kernels do not, so that its gradient is not
    the derivative of its own forward; gradviz's is (test below). The 1-d and 3-d nearest backward kernels send an
    output as long as the input (or twice as long) back to ``i`` (or ``i // 2``) even when the scale factor made
    the forward read other elements (``1.25`` on 2 elements reads element 0 twice; the 2-d kernels take the
    shortcut both ways); the bicubic backward copies the gradient when no size changes, though the forward
    interpolated with the scale factor."""
    if scale is None:
        return False
    if mode == "bicubic":
        return tuple(sizes) == tuple(outs) and float(scale) != 1.0
    return mode == "nearest" and len(sizes) != 2 and any(
        out in (size, 2 * size) and float(scale) != out / size for size, out in zip(sizes, outs))


def test_nearest_gradient_is_the_forward_s_where_torch_takes_a_shortcut():
    x = gv.tensor([[[1.0, 2.0]]], dtype=gv.float64, requires_grad=True)
    y = gv.nn.functional.interpolate(x, scale_factor=1.25)  # reads element 0 twice (torch's forward does too)
    assert y.tolist() == [[[1.0, 1.0]]]
    y.backward(gv.tensor([[[1.0, 10.0]]], dtype=gv.float64))
    assert x.grad.tolist() == [[[11.0, 0.0]]]  # torch 2.13 gives [[[1., 10.]]]: its backward copies index for index
    assert gradcheck(lambda x: gv.nn.functional.interpolate(x, scale_factor=1.25), (x,))
