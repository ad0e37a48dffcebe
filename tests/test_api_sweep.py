"""The tensor API sweep, item by item, against torch 2.13 itself: tan, every dim form of the reductions on a
0-d tensor, ``torch.rsub`` with ``alpha``, the random draws (``bernoulli()``, ``exponential_``, ``poisson``,
``multinomial``) with torch's numbers after ``manual_seed``, and ``nn.Module.to``/``float``/``double``/...
"""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import gradviz as gv  # noqa: E402
from parity import assert_same, assert_same_error, weighted_backward  # noqa: E402


# -- tan ------------------------------------------------------------------------------------------------------------
def test_tan_values_node_and_grad():
    assert_same("x = torch.tensor([0.5, -1.0, 1.3], requires_grad=True)\n" + weighted_backward("x.tan()")
                + "print(y)\nz = torch.tan(torch.tensor([1, 2]))\nprint(z)\n")


def test_tan_in_place_and_second_order_graph():
    assert_same("x = torch.tensor([0.5, -1.0], requires_grad=True)\nb = x * 1\nb.tan_()\nprint(b)\n"
                "y = x.tan()\ng, = torch.autograd.grad(y.sum(), x, create_graph=True)\nprint(g)\n"
                "g.sum().backward()\n")


def test_tan_in_place_on_a_leaf_is_refused():
    assert_same_error("x = torch.tensor([0.5], requires_grad=True)\nx.tan_()")


# -- reductions on a 0-d tensor: dim 0 and -1 reduce over nothing ---------------------------------------------------
ZERO_D_CALLS = ["s.sum(0)", "s.sum(-1)", "s.sum((0,))", "s.sum([-1])", "s.sum(0, keepdim=True)", "s.sum(())",
                "s.mean(-1)", "s.mean((0,), keepdim=True)", "s.norm(dim=0)", "s.norm(p=1, dim=-1)",
                "s.norm(dim=(0,), keepdim=True)", "torch.count_nonzero(s, 0)", "s.count_nonzero((-1,))",
                "s.nanmean(0)", "s.nansum(-1)", "s.logsumexp(0)", "s.amax(-1)", "s.prod(0)"]


@pytest.mark.parametrize("call", ZERO_D_CALLS)
def test_zero_d_reductions_take_dim_0_and_minus_1(call):
    assert_same("s = torch.tensor(1.5, requires_grad=True)\ny = " + call + "\nprint(y)\n"
                "if y.requires_grad: y.backward()\n")


@pytest.mark.parametrize("call", ["s.sum(1)", "s.sum([0, -1])", "s.mean((0, 0))", "s.norm(dim=(0, -1))",
                                  "s.sum(-2)", "torch.count_nonzero(s, 1)"])
def test_zero_d_reductions_refuse_what_torch_refuses(call):
    assert_same_error("s = torch.tensor(1.5, requires_grad=True)\ny = " + call)


@pytest.mark.parametrize("call", ["x.sum((0, 0))", "x.sum([1, -1])", "x.mean((0, -2))", "x.norm(dim=(1, 1))",
                                  "torch.count_nonzero(x, (0, 0))"])
def test_a_dim_given_twice_is_refused(call):
    assert_same_error("x = torch.ones(2, 3, requires_grad=True)\ny = " + call)


# -- torch.rsub with alpha ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", ["torch.rsub(x, 2.0)", "torch.rsub(x, 2.0, alpha=3)", "torch.rsub(x, w)",
                                  "torch.rsub(x, w, alpha=2)", "torch.rsub(w, x, alpha=-0.5)",
                                  "torch.rsub(x, b, alpha=2)"])
def test_rsub_with_alpha(call):
    assert_same("x = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)\n"
                "w = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)\n"
                "b = torch.tensor([3.0, 4.0, 5.0])\n" + weighted_backward(call) + "print(y)\n")


def test_rsub_integral_alpha_errors():
    assert_same_error("torch.rsub(torch.tensor([1, 2]), torch.tensor([3, 4]), alpha=2.5)")
    assert_same("y = torch.rsub(torch.tensor([1, 2]), torch.tensor([3, 4]), alpha=2)\nprint(y)\n")


# -- random draws: torch's numbers after manual_seed ------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 1234])
@pytest.mark.parametrize("size", [1, 3, 15, 16, 17, 64, 100])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exponential_is_torchs_stream(seed, size, dtype):
    assert_same(f"torch.manual_seed({seed})\na = torch.empty({size}, dtype=torch.{dtype}).exponential_()\n"
                f"b = torch.zeros({size}, dtype=torch.{dtype}).exponential_(2.5)\nprint(a[:3], b[-2:])\n"
                "c = torch.rand(2)\n")


def test_exponential_records_its_node_and_refuses_what_torch_refuses():
    assert_same("torch.manual_seed(0)\nx = torch.tensor([0.5, 0.2], requires_grad=True)\nb = x * 1\n"
                "b.exponential_(3.0)\nprint(b)\n(b * x).sum().backward()\n")
    for code in ("torch.empty(3).exponential_(0)", "torch.empty(3).exponential_(-1.0)",
                 "torch.zeros(3, dtype=torch.long).exponential_()",
                 "x = torch.tensor([0.5], requires_grad=True)\nx.exponential_()"):
        assert_same_error(code)


@pytest.mark.parametrize("seed", [0, 3, 99])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_poisson_is_torchs_stream(seed, dtype):
    """Rates below 10 multiply uniforms; from 10 on, Hoermann's rejection loop (a varying number of draws)."""
    assert_same(f"torch.manual_seed({seed})\nr = torch.tensor([[0.0, 0.3, 1.0, 4.5], [9.9, 10.0, 37.5, 250.0]], "
                f"dtype=torch.{dtype}, requires_grad=True)\ny = torch.poisson(r)\nprint(y)\n(y * r).sum().backward()\n"
                "after = torch.rand(3)\n")


def test_poisson_errors():
    assert_same_error("torch.poisson(torch.tensor([-1.0]))")
    assert_same_error("torch.poisson(torch.tensor([1]))")


@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("call", ["torch.multinomial(p, 1)", "torch.multinomial(p, 1, replacement=True)",
                                  "torch.multinomial(p, 3)", "torch.multinomial(p, 4)",
                                  "torch.multinomial(p, 7, replacement=True)", "q.multinomial(2)",
                                  "q.multinomial(10, True)", "torch.multinomial(q.double(), 3)"])
def test_multinomial_is_torchs_stream(seed, call):
    assert_same(f"torch.manual_seed({seed})\np = torch.tensor([0.1, 2.0, 0.0, 0.7])\n"
                "q = torch.tensor([[0.2, 0.3, 0.5], [1.0, 1.0, 1.0]])\ny = " + call + "\nprint(y)\nafter = torch.rand(2)\n")


@pytest.mark.parametrize("call", ["torch.multinomial(torch.tensor([0.2, 0.3]), 3)",
                                  "torch.multinomial(torch.tensor([-0.2, 0.3]), 1)",
                                  "torch.multinomial(torch.tensor([-0.2, 0.3]), 2, True)",
                                  "torch.multinomial(torch.tensor(1.0), 1)",
                                  "torch.multinomial(torch.tensor([0.0, 0.0]), 1)",
                                  "torch.multinomial(torch.tensor([0.0, 0.0]), 2, True)",
                                  "torch.multinomial(torch.tensor([1, 2]), 1)",
                                  "torch.multinomial(torch.tensor([0.2, 0.3]), 0)",
                                  "torch.multinomial(torch.ones(2, 2, 2), 1)"])
def test_multinomial_errors(call):
    assert_same_error(call)


@pytest.mark.parametrize("seed", [0, 7])
def test_bernoulli_method(seed):
    assert_same(f"torch.manual_seed({seed})\np = torch.tensor([0.1, 0.5, 0.9, 1.0, 0.0], requires_grad=True)\n"
                "y = p.bernoulli()\nprint(y)\n(y * p).sum().backward()\nz = p.detach().bernoulli(0.3)\nprint(z)\n"
                "w = torch.tensor([[0.25, 0.75]], dtype=torch.float64).bernoulli()\n")


def test_bernoulli_method_checks_its_probabilities():
    assert_same_error("torch.tensor([0.5, 2.0]).bernoulli()")
    assert_same_error("torch.tensor([-0.5]).bernoulli()")


# -- nn.Module.to and friends -------------------------------------------------------------------------------------------
MODULE_SETUP = ("torch.manual_seed(0)\nm = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))\n"
                "m.register_buffer('steps', torch.tensor([1, 2]))\nm.register_buffer('scale', torch.tensor([0.5]))\n"
                "w = m[0].weight\n")


@pytest.mark.parametrize("call", ["m.to(torch.float64)", "m.to('cpu')", "m.to(dtype=torch.float64)",
                                  "m.to('cpu', torch.float64)", "m.to(torch.zeros(1, dtype=torch.float64))",
                                  "m.double()", "m.float()", "m.half()", "m.cpu()", "m.to(torch.device('cpu'))",
                                  "m.double().float()", "m.type(torch.float64)"])
def test_module_to_converts_in_place_keeping_the_parameter_objects(call):
    scope_t, scope_g = assert_same(
        MODULE_SETUP + "(m(torch.ones(1, 3)).sum()).backward()\nr = " + call + "\nsame = r is m and m[0].weight is w\n"
        "params = [p for p in m.parameters()]\ngrads = [p.grad for p in m.parameters()]\nbufs = list(m.buffers())\n"
        "print(m, same, [p.dtype for p in m.parameters()], [b.dtype for b in m.buffers()])\n")
    assert scope_g["same"] is scope_t["same"] is True


def test_module_to_refuses_an_integer_dtype():
    assert_same_error(MODULE_SETUP + "m.to(torch.int64)")


def test_module_double_then_forward_and_optimizer_step():
    assert_same(MODULE_SETUP + "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nm.double()\n"
                "y = m(torch.ones(4, 3, dtype=torch.float64)).sum()\ny.backward()\nopt.step()\n"
                "params = list(m.parameters())\nprint(y, params[0])\n")


def test_get_submodule_parameter_buffer():
    scope_t, scope_g = assert_same(
        MODULE_SETUP + "a = m.get_parameter('0.weight')\nb = m.get_buffer('scale')\nprint(m.get_submodule('2'), "
        "m.get_submodule('') is m)\n")
    for code in ("m.get_submodule('5')", "m.get_submodule('0.weight')", "m.get_parameter('0.nothing')",
                 "m.get_parameter('scale')", "m.get_buffer('0.weight')"):
        assert_same_error(MODULE_SETUP + code)


def test_random_draws_with_a_generator_argument():
    for library in (torch, gv):
        generator = library.Generator().manual_seed(3)
        library.manual_seed(0)
        got = (library.empty(5).exponential_(generator=generator), library.poisson(library.full((3,), 4.0),
               generator), library.multinomial(library.ones(6), 3, generator=generator), library.rand(2))
        if library is torch:
            expected = [t.numpy() for t in got]
        else:
            for e, g in zip(expected, got):
                np.testing.assert_array_equal(g.numpy(), e)


@pytest.mark.parametrize("seed", [0, 42])
@pytest.mark.parametrize("size", [1, 5, 16, 33, 100])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cauchy_geometric_log_normal_are_torchs_stream(seed, size, dtype):
    assert_same(f"torch.manual_seed({seed})\na = torch.empty({size}, dtype=torch.{dtype}).cauchy_()\n"
                f"b = torch.empty({size}, dtype=torch.{dtype}).cauchy_(-1.5, 0.25)\n"
                f"c = torch.empty({size}, dtype=torch.{dtype}).geometric_(0.3)\n"
                f"d = torch.zeros({size}, dtype=torch.{dtype}).log_normal_()\n"
                f"e = torch.zeros({size}, dtype=torch.{dtype}).log_normal_(0.5, 0.1)\n"
                f"f = torch.zeros({size}, dtype=torch.long).geometric_(0.9)\nafter = torch.rand(3)\nprint(a[:2], c[:3])\n")


def test_cauchy_geometric_log_normal_nodes_and_errors():
    assert_same("torch.manual_seed(1)\nx = torch.tensor([0.5, 0.2], requires_grad=True)\na = (x * 1).cauchy_()\n"
                "b = (x * 1).geometric_(0.5)\nc = (x * 1).log_normal_()\n((a + b + c) * x).sum().backward()\n")
    for code in ("torch.empty(3).cauchy_(0, 0)", "torch.empty(3).cauchy_(0, -1.5)", "torch.empty(3).geometric_(0)",
                 "torch.empty(3).geometric_(1)", "torch.empty(3).log_normal_(1, 0)",
                 "torch.zeros(3, dtype=torch.long).log_normal_()",
                 "torch.tensor([1.0], requires_grad=True).geometric_(0.5)"):
        assert_same_error(code)
