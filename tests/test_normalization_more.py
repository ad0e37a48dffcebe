"""Group, instance and RMS normalization against PyTorch 2.13: ``F.group_norm`` (one NativeGroupNormBackward0
node with PyTorch's saved values), ``F.instance_norm`` and ``F.rms_norm`` (PyTorch's composites, node for
node), their ``torch.*`` names, the modules (GroupNorm, InstanceNorm1d/2d/3d with running statistics,
RMSNorm, BatchNorm3d): values, grads, graphs, printed modules, buffers and their versions, errors and
warnings; central differences for group norm; hypothesis over shapes and groups.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

import gradviz as gv  # noqa: E402
from gradviz.autograd.gradcheck import gradcheck  # noqa: E402
from parity import assert_same, assert_same_error, run_both, weighted_backward  # noqa: E402


def leaf(*shape, dtype: str = "float64", name: str = "x") -> str:
    count = int(np.prod(shape))
    # uneven values: an evenly spaced row would have a mean that cancels to rounding noise, printed as it falls
    return (f"{name} = torch.arange({count}, dtype=torch.{dtype}).reshape({list(shape)})\n"
            f"{name} = ((0.37 * {name} + 0.011 * {name} * {name}) % 1.9 - 0.8).requires_grad_()\n")


AFFINE = "w = torch.linspace(0.5, 1.5, 6, dtype=torch.float64).requires_grad_()\n" \
         "b = torch.linspace(-0.3, 0.4, 6, dtype=torch.float64).requires_grad_()\n"

CASES = {
    "group_norm": leaf(2, 6, 5) + AFFINE + weighted_backward("F.group_norm(x, 3, w, b)") + "print(y)\n",
    "group_norm_plain": leaf(3, 6, 2, 2) + weighted_backward("F.group_norm(x, 2, eps=0.1)"),
    "group_norm_weight_only": leaf(2, 6) + AFFINE + weighted_backward("F.group_norm(x, 6, w)"),
    # float32: the forward (a gradient of a normalization in float32 is a difference of rounded terms, so it
    # agrees with torch's to about float32's epsilon times the terms, not to the tests' tolerance)
    "group_norm_float32": leaf(2, 6, 4, dtype="float32") + "y = torch.group_norm(x, 2)\nprint(y)\n",
    "group_norm_one_group_5d": leaf(2, 2, 2, 3, 2) + weighted_backward("F.group_norm(x, 1)"),
    "group_norm_bias_grad_only": leaf(2, 6, 3).replace(".requires_grad_()", "") + AFFINE
    + weighted_backward("F.group_norm(x, 3, w, b)"),
    "instance_norm": leaf(2, 3, 5) + weighted_backward("F.instance_norm(x)") + "print(y)\n",
    "instance_norm_affine": leaf(2, 6, 4) + AFFINE + weighted_backward("F.instance_norm(x, weight=w, bias=b)"),
    "instance_norm_running": leaf(2, 3, 4, 2) + "rm = torch.zeros(3, dtype=torch.float64)\n"
    "rv = torch.ones(3, dtype=torch.float64)\n" + weighted_backward("F.instance_norm(x, rm, rv, momentum=0.3)")
    + "print(rm, rv, rm._version, rv._version)\n",
    "instance_norm_eval": leaf(2, 3, 4) + "rm = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64)\n"
    "rv = torch.tensor([1.5, 0.5, 2.0], dtype=torch.float64)\n"
    + weighted_backward("F.instance_norm(x, rm, rv, use_input_stats=False)") + "print(rm._version)\n",
    "instance_norm_not_contiguous": leaf(2, 5, 3) + weighted_backward("F.instance_norm(x.transpose(1, 2))"),
    "instance_norm_torch_name": leaf(2, 3, 5) + weighted_backward(
        "torch.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False)"),
    "rms_norm": leaf(2, 4, 3) + "w = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("F.rms_norm(x, (3,), w)") + "print(y)\n",
    "rms_norm_two_dims_eps": leaf(2, 4, 3, dtype="float32") + weighted_backward("F.rms_norm(x, [4, 3], eps=1e-3)"),
    "rms_norm_default_eps_float32": "x = torch.tensor([[1e-4, 2e-4, -1e-4], [1.0, 2.0, 3.0]], requires_grad=True)\n"
    + weighted_backward("torch.rms_norm(x, [3])") + "print(y)\n",
    "rms_norm_half": "x = torch.tensor([[1e-3, 2e-3, -1e-3], [1.0, 2.0, 3.0]], dtype=torch.half, requires_grad=True)\n"
    "w = torch.tensor([0.5, 1.0, 2.0], dtype=torch.half, requires_grad=True)\n"
    "y = F.rms_norm(x, (3,), w)\ny.float().sum().backward()\nprint(y)\n",
    "rms_norm_weight_of_another_dtype": leaf(2, 3, dtype="float32")
    + "w = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)\n"
    + weighted_backward("F.rms_norm(x, (3,), w)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    assert_same(CASES[name])


MODULES = {
    "group_norm_module": "torch.manual_seed(0)\nm = torch.nn.GroupNorm(2, 4, dtype=torch.float64)\nprint(m)\n" + leaf(3, 4, 5, dtype="float64")
    + "y = m(x)\n(y * y).sum().backward()\nw, b = m.weight, m.bias\nprint(y)\n",
    "group_norm_module_no_affine": "m = torch.nn.GroupNorm(4, 4, eps=1e-3, affine=False)\nprint(m, list(m.parameters()))\n"
    + leaf(2, 4, 3, dtype="float64") + "y = m(x)\ny.sum().backward()\n",
    "group_norm_module_no_bias": "m = torch.nn.GroupNorm(1, 2, bias=False, dtype=torch.float64)\nprint(m, m.bias)\n"
    + leaf(2, 2, 3, dtype="float64") + "y = m(x)\n(y * y).sum().backward()\nw = m.weight\n",
    "instance_norm_1d_tracking": "m = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True, dtype=torch.float64)\nprint(m)\n"
    + leaf(2, 3, 5, dtype="float64") + "y = m(x)\n(y * y).sum().backward()\n"
    "print(m.running_mean, m.running_var, m.num_batches_tracked, m.running_mean._version)\n"
    "m.eval()\nz = m(x)\nprint(z)\nw, b = m.weight, m.bias\nprint(sorted(m.state_dict()))\n",
    "instance_norm_2d_unbatched": "m = torch.nn.InstanceNorm2d(2)\nprint(m)\n" + leaf(2, 3, 4, dtype="float64")
    + "y = m(x)\n(y * y).sum().backward()\nprint(y)\n",
    "instance_norm_3d": "m = torch.nn.InstanceNorm3d(2, affine=True, dtype=torch.float64)\n" + leaf(1, 2, 2, 2, 3, dtype="float64")
    + "y = m(x)\n(y * y).sum().backward()\nw = m.weight\n",
    "instance_norm_momentum_none": "m = torch.nn.InstanceNorm1d(2, momentum=None, track_running_stats=True, dtype=torch.float64)\n"
    + leaf(2, 2, 4, dtype="float64") + "y = m(x)\ny = m(x * 2)\nprint(m.running_mean, m.running_var)\n",
    "rms_norm_module": "m = torch.nn.RMSNorm([2, 3], eps=1e-6, dtype=torch.float64)\nprint(m)\n" + leaf(4, 2, 3, dtype="float64")
    + "y = m(x)\n(y * y).sum().backward()\nw = m.weight\nprint(y)\n",
    "rms_norm_module_plain": "m = torch.nn.RMSNorm(3, elementwise_affine=False)\nprint(m, m.weight)\n"
    + leaf(4, 3, dtype="float64") + "y = m(x)\ny.sum().backward()\n",
    "batch_norm_3d": "m = torch.nn.BatchNorm3d(2, dtype=torch.float64)\nprint(m)\n" + leaf(2, 2, 2, 2, 3, dtype="float64")
    + "y = m(x)\n(y * y).sum().backward()\nprint(m.running_mean, m.num_batches_tracked)\nw = m.weight\n",
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_match_torch(name):
    assert_same(MODULES[name])


ERRORS = {
    "groups_do_not_divide": leaf(2, 4, 3) + "F.group_norm(x, 3)",
    "zero_groups": leaf(2, 4, 3) + "F.group_norm(x, 0)",
    "one_dim": "F.group_norm(torch.randn(3), 1)",
    "one_value_per_group": "F.group_norm(torch.randn(1, 2, 1), 2)",
    "weight_shape": leaf(2, 4, 3) + "F.group_norm(x, 2, torch.ones(2, 2, dtype=torch.float64))",
    "bias_shape": leaf(2, 4, 3) + "F.group_norm(x, 2, torch.ones(4, dtype=torch.float64), torch.ones(3))",
    "bias_shape_without_weight": leaf(2, 4, 3) + "F.group_norm(x, 2, None, torch.ones(5, dtype=torch.float64))",
    "mixed_dtype": leaf(2, 4, 3) + "F.group_norm(x, 2, torch.ones(4))",
    "module_groups": "torch.nn.GroupNorm(3, 4)",
    "instance_one_position": "F.instance_norm(torch.randn(2, 3, 1))",
    "instance_one_running_stat": "F.instance_norm(torch.randn(2, 3, 4), torch.zeros(3), None)",
    "instance_eval_without_stats": "F.instance_norm(torch.randn(2, 3, 4), use_input_stats=False)",
    "instance_running_size": "F.instance_norm(torch.randn(2, 4, 3), torch.zeros(3), torch.ones(3))",
    "instance_module_dims": "torch.nn.InstanceNorm1d(4)(torch.randn(2, 4, 3, 3))",
    "instance_module_affine_channels": "torch.nn.InstanceNorm2d(4, affine=True)(torch.randn(2, 3, 3, 3))",
    "rms_shape": "F.rms_norm(torch.randn(2, 4, 3), (4,))",
    "rms_two_dims_shape": "F.rms_norm(torch.randn(2, 4, 3), (2, 3))",
    "rms_weight_shape": "F.rms_norm(torch.randn(2, 4, 3), (3,), torch.ones(4))",
    "batch_norm_3d_dims": "torch.nn.BatchNorm3d(2)(torch.randn(2, 2, 3))",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    assert_same_error(ERRORS[name])


def test_instance_norm_warns_of_unused_num_features_as_torch():
    code = "import warnings\nwith warnings.catch_warnings(record=True) as caught:\n    warnings.simplefilter('always')\n" \
           "    y = torch.nn.InstanceNorm1d(4)(torch.randn(2, 3, 5))\nmessages = [str(w.message) for w in caught]\n"
    (scope_t, _), (scope_g, _) = run_both(code)
    assert scope_g["messages"] == scope_t["messages"] and len(scope_t["messages"]) == 1


def test_rms_norm_warns_once_of_a_weight_of_another_dtype():
    from gradviz.ops import normalization

    normalization._MISMATCH_WARNED[0] = False
    x, w = gv.randn(2, 3), gv.ones(3, dtype=gv.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gv.nn.functional.rms_norm(x, (3,), w)
        gv.nn.functional.rms_norm(x, (3,), w)
    assert [str(w.message) for w in caught] == [
        "Mismatch dtype between input and weight: input dtype = float, weight dtype = double, Cannot dispatch to fused "
        "implementation."]  # torch's own message adds where in its C++ it was triggered


@pytest.mark.parametrize("weighted", [False, True])
def test_group_norm_gradcheck(weighted):
    x = gv.randn(2, 6, 3, dtype=gv.float64, requires_grad=True)
    args = (x, gv.randn(6, dtype=gv.float64, requires_grad=True), gv.randn(6, dtype=gv.float64, requires_grad=True)) \
        if weighted else (x,)
    assert gradcheck(lambda x, *wb: gv.nn.functional.group_norm(x, 3, *wb), args)


def test_instance_and_rms_norm_gradcheck():
    x = gv.randn(2, 3, 4, dtype=gv.float64, requires_grad=True)
    w = gv.randn(4, dtype=gv.float64, requires_grad=True)
    assert gradcheck(lambda x: gv.nn.functional.instance_norm(x), (x,))
    assert gradcheck(lambda x, w: gv.nn.functional.rms_norm(x, (4,), w), (x, w))


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 3), groups=st.integers(1, 3), per_group=st.integers(1, 3),
       spatial=st.lists(st.integers(1, 3), min_size=0, max_size=2), affine=st.booleans(), seed=st.integers(0, 2**16))
def test_group_norm_hypothesis(batch, groups, per_group, spatial, affine, seed):
    shape = [batch, groups * per_group] + spatial
    if batch * per_group * int(np.prod(spatial)) == 1 and groups * per_group // groups * int(np.prod(spatial)) == 1:
        return  # one value per group: an error, tested above
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape)
    grad_out = rng.standard_normal(shape)
    results = []
    for lib in (torch, gv):
        x = lib.tensor(data, requires_grad=True)
        wb = [lib.tensor(rng_values, requires_grad=True) for rng_values in
              (np.linspace(0.5, 1.5, shape[1]), np.linspace(-1, 1, shape[1]))] if affine else []
        try:
            y = lib.nn.functional.group_norm(x, groups, *wb)
        except ValueError as error:
            results.append(str(error))
            continue
        y.backward(lib.tensor(grad_out))
        results.append([t.detach().numpy() if lib is torch else t.detach().numpy() for t in [y, x.grad] + [p.grad for p in wb]])
    if isinstance(results[0], str):
        assert results[1] == results[0]
        return
    for expected, actual in zip(*results):
        np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12)


AFFINE_4 = "w = torch.linspace(0.5, 1.5, 4, dtype=torch.float64).requires_grad_()\n" \
           "b = torch.linspace(-0.3, 0.4, 4, dtype=torch.float64).requires_grad_()\n"
SECOND_ORDER = {
    "group_norm_create_graph": leaf(2, 4, 3) + AFFINE_4 + leaf(2, 4, 3, name="go")
    + "y = F.group_norm(x, 2, w, b)\ngx, gw, gb = torch.autograd.grad(y, (x, w, b), go, create_graph=True)\n"
    "((gx * gx).sum() + (gw * gw).sum() + (gb * gb).sum()).backward()\n",
    "group_norm_create_graph_plain": leaf(2, 6, 2, 2) + leaf(2, 6, 2, 2, name="go")
    + "y = F.group_norm(x, 3)\ngx, = torch.autograd.grad(y, x, go, create_graph=True)\n(gx * gx).sum().backward()\n",
    "group_norm_create_graph_weight_only": leaf(2, 4, 3) + AFFINE_4 + leaf(2, 4, 3, name="go")
    + "y = F.group_norm(x, 2, w, b)\ngw, = torch.autograd.grad(y, w, go, create_graph=True)\n(gw * gw).sum().backward()\n",
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order_matches_torch(name):
    assert_same(SECOND_ORDER[name])


def test_group_norm_gradgradcheck():
    from gradviz.autograd.gradcheck import gradgradcheck

    x = gv.randn(2, 4, 3, dtype=gv.float64, requires_grad=True)
    w = gv.randn(4, dtype=gv.float64, requires_grad=True)
    b = gv.randn(4, dtype=gv.float64, requires_grad=True)
    assert gradgradcheck(lambda x, w, b: gv.nn.functional.group_norm(x, 2, w, b), (x, w, b))
    assert gradgradcheck(lambda x: gv.nn.functional.group_norm(x, 1), (x,))


def test_group_norm_third_derivative_says_it_is_not_recorded():
    x = gv.randn(2, 4, 3, dtype=gv.float64, requires_grad=True)
    y = gv.nn.functional.group_norm(x, 2)
    gx, = gv.autograd.grad((y * y).sum(), x, create_graph=True)  # the first derivative, recorded
    gv.autograd.grad((gx * gx).sum(), x, retain_graph=True)  # the second: computed
    with pytest.raises(NotImplementedError, match="third derivative"):  # the second, recorded for a third
        gv.autograd.grad((gx * gx).sum(), x, create_graph=True)
