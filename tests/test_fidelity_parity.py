"""Small fidelity fixes, each a parity test against PyTorch 2.13 running the same lines: rounding's node
for ``decimals``, the degrees-of-freedom warning under each function's name, the once-per-process
``scatter(reduce=)`` warning, recorded mixed-dtype gradients cast back, half arithmetic with a number,
``as_strided`` of a view (storage offsets) and the saved ``storage_offset``."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

R = "x = torch.tensor([1.26, -2.5, 0.5, 3.75], requires_grad=True)\n"
V = "v = torch.tensor([0.5, -1.0, 2.0, 1.5, 0.25, -0.75, 3.0, -2.5], requires_grad=True)\n"
A = ("a = torch.tensor([1.5, -2.0, 0.25], requires_grad=True)\n"
     "b = torch.tensor([[0.5], [3.0]], dtype=torch.float64, requires_grad=True)\n")

CASES = {
    "round_plain": R + "y = x.round()\nz = torch.round(x)\n",
    "round_decimals_zero": R + "y = x.round(decimals=0)\nz = torch.round(x, decimals=0)\nprint(y, z)\n",
    "round_decimals_one": R + "y = x.round(decimals=1)\nprint(y)\n",
    "round_half_decimals_zero": "h = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float16, requires_grad=True)\n"
                                "y = h.round(decimals=0)\nprint(y)\n",
    "as_strided_of_a_slice": V + weighted_backward("v[2:].as_strided((2, 2), (3, 1))") + "print(y, y.storage_offset())\n",
    "as_strided_of_a_slice_offset": V + weighted_backward("v[2:].as_strided((2, 2), (3, 1), 1)"),
    "as_strided_of_a_view_of_a_view": V + weighted_backward("v[1:][2:].as_strided((3,), (2,))"),
    "as_strided_of_a_transpose": V + weighted_backward("v.reshape(2, 4).t().as_strided((2, 2), (1, 4))"),
    "as_strided_of_an_intermediate_view": V + "w = v * 2\n" + weighted_backward("w[3:].as_strided((2, 2), (1, 2))"),
    "as_strided_no_offset_saves_none": V + weighted_backward("v.as_strided((3,), (2,))"),
    "as_strided_zero_offset_saves_zero": V + weighted_backward("v.as_strided((3,), (2,), 0)"),
    "mixed_dtypes_recorded": A + "out = (a * b + a / b - b * a + torch.maximum(a, b) + torch.atan2(a, b)).sum()\n"
                             "ga, gb = torch.autograd.grad((out * out), (a, b), create_graph=True)\n"
                             "print(ga, gb)\n(ga.sum() + gb.sum()).backward()\n",
    "mixed_dtypes_recorded_pow_sub": A + "out = ((a - b) ** 2 + a ** b.abs()).sum()\n"
                                     "ga, = torch.autograd.grad(out, a, create_graph=True)\nprint(ga)\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fidelity_matches_torch(name):
    assert_same(CASES[name])


@pytest.mark.parametrize("name", sorted(name for name in CASES if name.startswith("as_strided")))
def test_as_strided_of_views_matches_torch_on_the_torch_backend(name):
    assert_same(CASES[name], backend="torch")


@pytest.mark.parametrize("line", ["torch.tensor([1, 2]).round(decimals=0)", "torch.tensor([1, 2]).round(decimals=2)",
                                  "v[2:].as_strided((7,), (1,))", "v[2:].as_strided((2,), (1,), 7)"])
def test_fidelity_errors_match_torch(line):
    assert_same_error(V + line + "\n")


def caught(action) -> list:
    with warnings.catch_warnings(record=True) as found:
        warnings.simplefilter("always")
        action()
    return [(w.category, str(w.message)) for w in found]


@pytest.mark.parametrize("call", ["torch.tensor([1.0]).std()", "torch.tensor([1.0]).var()",
                                  "torch.tensor([[1.0, 2.0]]).std(0)", "torch.tensor([1.0, 2.0]).std(correction=2)",
                                  "torch.std_mean(torch.tensor([1.0]))", "torch.var_mean(torch.tensor([[1.0, 2.0]]), 0)",
                                  "torch.std(torch.tensor([3.0]), dim=0, keepdim=True)"])
def test_degrees_of_freedom_warning_names_the_function_called(torch, call):
    """std(), var(), std_mean(), var_mean(): each warns every call, in its own name, with torch's text."""
    expected = caught(lambda: (eval(call, {"torch": torch}), eval(call, {"torch": torch})))
    actual = caught(lambda: (eval(call, {"torch": gv}), eval(call, {"torch": gv})))
    assert len(expected) == 2 and actual == expected


def test_scatter_reduce_deprecation_warns_once_per_process_as_torch_does():
    """TORCH_WARN_ONCE: a fresh process per library, several calls (functional, method and in place)."""
    program = ("import warnings, {lib} as torch\n"
               "with warnings.catch_warnings(record=True) as w:\n"
               "    warnings.simplefilter('always')\n"
               "    for _ in range(3):\n"
               "        torch.zeros(3).scatter(0, torch.tensor([0, 1]), torch.ones(2), reduce='add')\n"
               "        torch.scatter(torch.zeros(3), 0, torch.tensor([0, 1]), torch.ones(2), reduce='multiply')\n"
               "        torch.zeros(3).scatter_(0, torch.tensor([0, 1]), torch.ones(2), reduce='add')\n"
               "print(repr([(c.category.__name__, str(c.message)) for c in w]))\n")
    outputs = [subprocess.run([sys.executable, "-c", program.format(lib=lib)], capture_output=True, text=True,
                              check=True).stdout for lib in ("torch", "gradviz")]
    assert outputs[1] == outputs[0] and outputs[0].count("deprecated") == 1


HALF_VALUES = (np.random.default_rng(1).standard_normal(3000) * 10).astype(np.float16)
NUMBERS = [0.3, 1.1, 3.14159, -0.7, 1e-3, 2.5, 7, -3]
OPERATIONS = {"add": lambda x, c: x + c, "radd": lambda x, c: c + x, "sub": lambda x, c: x - c,
              "rsub": lambda x, c: c - x, "mul": lambda x, c: x * c, "rmul": lambda x, c: c * x,
              "div": lambda x, c: x / c, "rdiv": lambda x, c: c / x}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_half_with_a_number_rounds_as_torch_does(torch, operation):
    """torch computes mul/div of a half by a number in float (rounded once); add/sub round the number to
    half first. Every element, every number, on either side, as 1-D and as 0-d tensors, recorded or not."""
    function = OPERATIONS[operation]
    values = HALF_VALUES[HALF_VALUES != 0]
    for number in NUMBERS:
        expected = function(torch.tensor(values), number).float().numpy()
        for requires_grad in (False, True):
            ours = function(gv.tensor(values, requires_grad=requires_grad), number).detach().float().numpy()
            np.testing.assert_array_equal(ours, expected, err_msg=f"{operation} {number} {requires_grad}")
        for index in range(0, 40):
            scalar_t = function(torch.tensor(values[index]), number).item()
            scalar_g = function(gv.tensor(values[index]), number).item()
            assert scalar_g == scalar_t or (np.isnan(scalar_g) and np.isnan(scalar_t)), (operation, number, index)


def test_half_gradients_with_a_number_match_torch(torch):
    values = HALF_VALUES[:200][HALF_VALUES[:200] != 0]
    grads = []
    for library in (torch, gv):
        h = library.tensor(values, requires_grad=True)
        loss = (0.3 * h * h + (1.1 - h) / 2.5 + h * 3.3 - 0.7).sum()
        g, = library.autograd.grad(loss, h, create_graph=True)
        g2, = library.autograd.grad((g * 0.3).sum(), h)
        grads.append((g.detach().float().numpy(), g2.float().numpy()))
    for ours, theirs in zip(grads[1], grads[0]):
        np.testing.assert_array_equal(ours, theirs)


EINSUMS = [("ijp,p->ij", (1, 3, 4), (4,)), ("ijp,p->ij", (2, 1, 4), (4,)), ("ijp,p->ij", (1, 1, 4), (4,)),
           ("ijp,p->ij", (2, 3, 4), (4,)), ("ij,jk->ki", (1, 3), (3, 2)), ("ij,jk->ki", (2, 3), (3, 1)),
           ("bij,bjk->bki", (2, 1, 3), (2, 3, 4)), ("i,ijk->kj", (3,), (3, 1, 2)), ("pij,jk->kip", (1, 2, 3), (3, 1)),
           ("ab,cb->ca", (1, 3), (2, 3)), ("ab,cb->ac", (1, 3), (2, 3))]


@pytest.mark.parametrize("equation, left, right", EINSUMS)
def test_einsum_operand_order_with_size_one_dims_matches_torch(equation, left, right):
    """PyTorch's sumproduct_pair swaps its operands when every dim kept from the right one comes before
    those kept from the left one: bmm's operands, views and permutes as torch records them."""
    code = (f"a = (torch.arange(float({int(np.prod(left))})).reshape{left} * 0.5 - 1).requires_grad_()\n"
            f"b = (torch.arange(float({int(np.prod(right))})).reshape{right} * 0.25 + 0.5).requires_grad_()\n"
            + weighted_backward(f"torch.einsum('{equation}', a, b)"))
    assert_same(code)


@pytest.mark.parametrize("call", ["sum(0)", "sum(0, keepdim=True)", "sum(1)", "amax(0)", "amin(0)", "prod(0)",
                                  "mean(0)", "cumsum(1)", "cumprod(0)", "sum((0, 2))"])
def test_reductions_of_a_strided_tensor_are_laid_out_as_torch_lays_them(torch, call):
    """PyTorch allocates a reduction's result contiguous; numpy keeps the input's order. It shows in what a
    later reshape records (ViewBackward0 of a contiguous result, ReshapeAliasBackward0 of a strided one)."""
    results = []
    for library in (torch, gv):
        x = library.arange(24.0).reshape(2, 3, 4).transpose(1, 2).requires_grad_()
        y = eval(f"x.{call}", {"x": x})
        results.append((y.stride(), y.is_contiguous(), y.reshape(-1).grad_fn.name()))
    assert results[1] == results[0]
