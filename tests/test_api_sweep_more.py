"""The second batch of the API sweep against torch 2.13: inverse hyperbolic functions (values, nodes, grads, the
graph ``create_graph=True`` records), aliases and predicates, dtype queries, constants, and torch's in-place
function forms.
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402

INPUTS = {"asinh": "[0.5, -1.0, 2.0]", "acosh": "[1.5, 2.0, 4.0]", "atanh": "[0.5, -0.2, 0.9]"}


@pytest.mark.parametrize("op", ["asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh"])
def test_inverse_hyperbolic(op):
    base = op.replace("arc", "a") if op.startswith("arc") else op
    assert_same(f"x = torch.tensor({INPUTS[base]}, requires_grad=True)\n" + weighted_backward(f"x.{op}()")
                + f"print(y)\nz = torch.{op}(torch.tensor([1, 2]))\nprint(z)\n"
                f"b = x.detach().clone()\nb.{op}_()\n"
                f"w = torch.tensor({INPUTS[base]}, dtype=torch.float64, requires_grad=True)\n"
                f"g, = torch.autograd.grad(w.{op}().sum(), w, create_graph=True)\ng.sum().backward()\n")


@pytest.mark.parametrize("call", ["x.ravel()", "torch.ravel(x.t())", "x.positive()", "x.select(1, -1)",
                                  "torch.select(x, 0, 1)", "x.adjoint()", "x.mH", "x.H", "torch.adjoint(x)",
                                  "torch.atleast_3d(x)", "torch.atleast_3d(x[0])", "torch.atleast_3d(x[0, 0])",
                                  "torch.atleast_3d(x.unsqueeze(0))"])
def test_views_and_aliases(call):
    assert_same("x = torch.tensor([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0]], requires_grad=True)\n"
                + weighted_backward(call) + "print(y)\n")


@pytest.mark.parametrize("call", ["x.select(1, 3)", "x.select(2, 0)", "torch.ones(2, dtype=torch.bool).positive()",
                                  "torch.ones(2, 2, 2).H", "torch.ones(2).H", "torch.tensor([1.0, 2.0]).is_nonzero()",
                                  "torch.tensor([]).is_nonzero()"])
def test_alias_errors(call):
    assert_same_error("x = torch.ones(2, 3)\n" + call)


def test_predicates_and_comparison_aliases():
    assert_same("x = torch.tensor([-0.0, 0.0, -2.0, float('inf'), -float('inf'), float('nan')])\n"
                "a = x.signbit()\nb = torch.isposinf(x)\nc = x.isneginf()\nd = torch.isreal(x)\n"
                "e = x.greater(0)\nf = torch.less_equal(x, 0)\ng = x.not_equal(x)\nh = torch.greater_equal(x, -2)\n"
                "i = x.less(1)\n"
                "print(torch.tensor(3.0).is_nonzero(), torch.tensor([0]).is_nonzero(), x.is_signed(), "
                "torch.tensor([1], dtype=torch.uint8).is_signed(), torch.is_same_size(x, x[:3]), x.ndimension(), "
                "x.element_size(), x.itemsize, x.nbytes, x.double().nbytes, x.is_cpu, x.is_meta)\n")


def test_dtype_queries_and_constants():
    assert_same("print(torch.finfo(torch.float32), torch.finfo(torch.float64), torch.finfo(), "
                "torch.finfo(torch.float16).eps, torch.iinfo(torch.int64), torch.iinfo(torch.uint8), "
                "torch.iinfo(torch.int8).min)\n"
                "print([torch.promote_types(a, b) for a in (torch.uint8, torch.int8, torch.int32, torch.float16, "
                "torch.float32, torch.bool) for b in (torch.int8, torch.int64, torch.float64, torch.bool)])\n"
                "print([torch.can_cast(a, b) for a in (torch.float32, torch.int64, torch.bool) "
                "for b in (torch.int32, torch.float64, torch.bool)])\n"
                "print(torch.result_type(torch.ones(2, dtype=torch.int32), 2.5), "
                "torch.result_type(torch.ones(2), torch.ones(2, dtype=torch.float64)))\n"
                "print(torch.broadcast_shapes((2, 1), (3,), 1), torch.pi, torch.e, torch.inf, torch.nan, torch.newaxis)\n"
                "t = torch.tril_indices(3, 4)\nu = torch.triu_indices(4, 3, 1)\nv = torch.tril_indices(3, 3, -1)\n"
                "s = torch.scalar_tensor(3)\nprint(t, u, v, s)\n")
    assert_same_error("torch.broadcast_shapes((2, 3), (4,))")
    assert_same_error("torch.finfo(torch.int32)")
    assert_same_error("torch.iinfo(torch.float32)")


@pytest.mark.parametrize("name", ["relu_", "sigmoid_", "exp_", "tanh_", "sqrt_", "neg_", "zero_", "clamp_",
                                  "tan_"])
def test_in_place_function_forms(name):
    args = ", min=0.0, max=1.0" if name == "clamp_" else ""
    assert_same(f"x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\nb = x * 1\nr = torch.{name}(b{args})\n"
                "same = r is b\nprint(b, same)\nb.sum().backward()\n")


@pytest.mark.parametrize("name", ["asinh_", "acosh_", "atanh_", "arcsinh_"])
def test_in_place_inverse_hyperbolic_in_the_graph_has_no_derivative(name):
    setup = f"x = torch.tensor([1.5, 0.5], requires_grad=True)\nb = x * 0.5\nr = torch.{name}(b)\nprint(b, r is b)\n"
    assert_same(setup)
    assert_same_error(setup + "b.sum().backward()")


def test_detach_and_thread_counts():
    assert_same("x = torch.tensor([1.0, 2.0], requires_grad=True)\nd = torch.detach(x * 2)\n"
                "torch.set_num_threads(2)\nprint(d, torch.get_num_threads() >= 1, torch.get_num_interop_threads() >= 1)\n")
    for library in (torch, gv):
        library.set_num_threads(1)
