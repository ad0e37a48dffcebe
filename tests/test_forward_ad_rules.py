"""Forward AD against torch 2.13, for what the written rules and torch's ZeroTensor decide:

* the tangents of ``abs``, ``sqrt``, ``reciprocal``, ``rsqrt``, ``mse_loss`` (every reduction, either input dual),
  ``cross_entropy``/``nll_loss`` and ``c - x``: values, and, when the primal or the tangent requires grad, the
  tangent's graph node by node (and a backward through it);
* sums and products recorded when the *tangent* has a graph (a tangent that requires grad: ``AddBackward0(tangent,
  None)`` for ``d + 1`` ...);
* a missing tangent is torch's ZeroTensor: ``x * d`` with an infinite primal gives no NaN, ``xf / d`` keeps
  torch's signed zero; ``unpack_dual`` of a tensor that is not dual gives None;
* the sampling ops on dual tensors (``bernoulli``, ``normal``): a zero tangent or torch's error;
* the double-vjp fallback records a graph (with the right values) when the primal or the tangent requires grad.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from parity import mask, raised, run_both  # noqa: E402
from test_forward_ad_graphs import _assert_same_graph  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_dual_level_left")

HEAD = ("fwAD = torch.autograd.forward_ad\n"
        "inf = float('inf')\n"
        "x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])\n"
        "v = torch.tensor([[1.0, 0.5, -2.0], [0.0, 1.0, 0.25]])\n"
        "tgt = torch.tensor([[0.0, 1.0, 0.5], [1.0, -1.0, 0.0]])\n"
        "cls = torch.tensor([2, 0])\n"
        "xf = torch.tensor([3.0, 1.0, -2.0])\n"
        "xi = torch.tensor([inf, 1.0, -2.0])\n"
        "w = torch.tensor([1.0, 2.0, 3.0])\n")

# expression on the dual ``d`` -> which primal and tangent make ``d``
RULES = {
    "abs": "d.abs()", "abs_then_sqrt": "(d.abs() + 1).sqrt()", "sqrt": "d.sqrt()", "reciprocal": "d.reciprocal()",
    "rsqrt": "(d.abs() + 1).rsqrt()", "mse": "F.mse_loss(d, tgt)", "mse_sum": "F.mse_loss(d, tgt, reduction='sum')",
    "mse_none": "F.mse_loss(d, tgt, reduction='none')", "mse_target_dual": "F.mse_loss(tgt, d)",
    "mse_both_dual": "F.mse_loss(d, d * 2)", "cross_entropy": "F.cross_entropy(d, cls)",
    "cross_entropy_none": "F.cross_entropy(d, cls, reduction='none')", "nll": "F.nll_loss(d.log_softmax(1), cls)",
    "nll_sum": "F.nll_loss(d, cls, reduction='sum')", "rsub": "1 - d", "rsub_function": "torch.rsub(d, 2.0)",
    "linear_mse": "F.mse_loss(d @ torch.ones(3, 2), tgt[:, :2])",
    "log1p": "d.abs().log1p()", "expm1": "d.expm1()", "sinh": "d.sinh()", "cosh": "d.cosh()", "atan": "d.atan()",
    "asin": "(d * 0.3).asin()", "acos": "(d * 0.3).acos()", "erf": "d.erf()", "erfinv": "(d * 0.3).erfinv()",
    "log2": "(d.abs() + 1).log2()", "log10": "(d.abs() + 1).log10()", "exp2": "d.exp2()",
    "leaky_relu": "F.leaky_relu(d, 0.1)", "elu": "F.elu(d, alpha=0.5)", "gelu": "F.gelu(d)",
    "gelu_tanh": "F.gelu(d, approximate='tanh')", "softplus": "F.softplus(d, beta=2.0)", "hardtanh": "F.hardtanh(d, -0.8, 1.0)",
    "relu6": "F.relu6(d * 4)", "logsumexp": "d.logsumexp(1)", "logsumexp_keepdim": "d.logsumexp(0, keepdim=True)",
}
SOURCES = {"primal_rg": ("xr", "v"), "tangent_rg": ("x", "vr"), "plain": ("x", "v")}


def _program(expression: str, primal: str, tangent: str) -> str:
    return (HEAD + "xr = x.clone().requires_grad_()\nvr = v.clone().requires_grad_()\n"
            "with fwAD.dual_level():\n"
            f"    d = fwAD.make_dual({primal}, {tangent})\n"
            f"    out = {expression}\n"
            "    p, t = fwAD.unpack_dual(out)\n")


def _compare_tangents(code: str, backend: str = "numpy", graph: bool = True):
    (scope_t, _), (scope_g, _) = run_both(code, backend)
    t_t, t_g = scope_t["t"], scope_g["t"]
    assert (t_g is None) == (t_t is None)
    if t_t is None:
        return scope_t, scope_g
    assert t_g.requires_grad == t_t.requires_grad
    assert str(t_g.dtype) == str(t_t.dtype) and tuple(t_g.shape) == tuple(t_t.shape)
    np.testing.assert_allclose(t_g.detach().cpu().numpy(), t_t.detach().numpy(), rtol=2e-6, atol=1e-7)
    ours, theirs = t_g.detach().cpu().numpy(), t_t.detach().numpy()
    numbers = ~np.isnan(theirs)
    assert np.array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers])), "signed zeros"
    if graph:
        _assert_same_graph(t_t.grad_fn, t_g.grad_fn)
    return scope_t, scope_g


def _backward_agrees(code: str, leaf: str, backend: str = "numpy") -> None:
    import gradviz
    import torch

    from gradviz import backends

    backward = code + f"(t * torch.arange(1.0, t.numel() + 1.0).reshape(t.shape)).sum().backward()\ng = {leaf}.grad\n"
    error_t = raised(backward, torch)
    with backends.using(backend):
        error_g = raised(backward, gradviz)
    if error_t is not None or error_g is not None:
        assert type(error_g) is type(error_t) and mask(str(error_g)) == mask(str(error_t)), (error_g, error_t)
        return
    (scope_t, _), (scope_g, _) = run_both(backward, backend)
    expected = scope_t["g"]
    if expected is None:
        assert scope_g["g"] is None
        return
    expected = torch.zeros_like(expected) if expected._is_zerotensor() else expected
    np.testing.assert_allclose(scope_g["g"].detach().cpu().numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("name", sorted(RULES))
def test_written_rules_match_torch(name, source):
    primal, tangent = SOURCES[source]
    code = _program(RULES[name], primal, tangent)
    _compare_tangents(code)
    if source != "plain":
        _backward_agrees(code, "xr" if primal == "xr" else "vr")


@pytest.mark.parametrize("name", ["abs", "abs_then_sqrt", "mse", "cross_entropy", "rsub"])
def test_written_rules_on_the_torch_backend(name):
    _compare_tangents(_program(RULES[name], "xr", "vr"), backend="torch")


# a tangent with a graph of its own: torch records the sum (or product) with a None edge for the missing tangent
TANGENT_GRAPH = {
    "add_number": "d + 1", "number_add": "1 + d", "sub_number": "d - 1", "add_tensor": "d + xf", "tensor_add": "xf + d",
    "sub_tensor": "d - xf", "tensor_sub": "xf - d", "add_alpha": "torch.add(xf, d, alpha=2)",
    "sub_alpha": "torch.sub(d, xf, alpha=3)", "mul_number": "d * 2", "div_number": "d / 2", "neg": "-d",
    "mul_tensor": "d * xf", "div_tensor": "xf / d", "chain": "((d + 1) * 3 - xf) / 2",
}


@pytest.mark.parametrize("name", sorted(TANGENT_GRAPH))
def test_tangent_that_requires_grad_gets_torch_graph(name):
    code = (HEAD + "wr = w.clone().requires_grad_()\nwith fwAD.dual_level():\n    d = fwAD.make_dual(xf, wr)\n"
            f"    out = {TANGENT_GRAPH[name]}\n    p, t = fwAD.unpack_dual(out)\n")
    _compare_tangents(code)
    _backward_agrees(code, "wr")


# torch's ZeroTensor: the tangent of an input without one
ZEROS = {
    "tensor_mul_inf": ("xi", "xf * d"), "mul_tensor_inf": ("xi", "d * xf"), "mul_number_inf": ("xi", "d * 2.0"),
    "number_mul_inf": ("xi", "torch.mul(2.0, d)"), "div_signed_zero": ("xi", "xf / d"), "dot_inf": ("xi", "torch.dot(xf, d)"),
    "mm_inf": ("xi", "xf.unsqueeze(0).mm(d.unsqueeze(1))"), "div_number": ("xf", "inf / d"),
    "mul_by_inf": ("xf", "d * inf"), "add_tensor": ("xf", "d + xi"), "sub_inf": ("xf", "xi - d"),
    "atan2": ("xf", "torch.atan2(d, xi)"), "where": ("xf", "torch.where(xf > 0, d, xi)"),
    "maximum": ("xf", "torch.maximum(d, xi)"),
}
FALLBACK_OPS = {"atan2"}  # no written rule: the values are torch's, the graph is the double-vjp one


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name", sorted(ZEROS))
def test_missing_tangent_is_torch_zero_tensor(name, requires_grad):
    primal, expression = ZEROS[name]
    if requires_grad:
        primal = f"{primal}.clone().requires_grad_()"
    code = (HEAD + f"with fwAD.dual_level():\n    d = fwAD.make_dual({primal}, w)\n    out = {expression}\n"
            "    p, t = fwAD.unpack_dual(out)\n")
    _compare_tangents(code, graph=name not in FALLBACK_OPS)


def test_unpack_of_non_dual_tensors():
    code = (HEAD + "with fwAD.dual_level():\n    d = fwAD.make_dual(xf, w)\n"
            "    plain = fwAD.unpack_dual(xf).tangent\n    t = fwAD.unpack_dual(d * 0).tangent\n"
            "    const = fwAD.unpack_dual(torch.ones(3) * 2).tangent\n")
    scope_t, scope_g = _compare_tangents(code)
    assert scope_t["plain"] is None and scope_g["plain"] is None
    assert scope_t["const"] is None and scope_g["const"] is None


# sampling on dual tensors
SAMPLING = {
    "bernoulli": "torch.bernoulli(d)", "bernoulli_inplace": "d.clone().bernoulli_()",
    "normal_mean": "torch.normal(d, 1.0)", "normal_std": "torch.normal(0.0, d)", "normal_both": "torch.normal(d, d)",
    "normal_tensor_std": "torch.normal(d, p0)", "normal_inplace": "d.clone().normal_()",
    "uniform_inplace": "d.clone().uniform_()", "rand_like": "torch.rand_like(d)", "randn_like": "torch.randn_like(d)",
    "dropout": "F.dropout(d, 0.5)", "dropout_eval": "F.dropout(d, 0.5, training=False)",
}


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name", sorted(SAMPLING))
def test_sampling_on_duals_matches_torch(name, requires_grad):
    primal = "p0.clone().requires_grad_()" if requires_grad else "p0"
    code = ("fwAD = torch.autograd.forward_ad\np0 = torch.tensor([0.25, 0.5, 0.75])\n"
            "torch.manual_seed(0)\nwith fwAD.dual_level():\n"
            f"    d = fwAD.make_dual({primal}, torch.tensor([1.0, 2.0, 3.0]))\n"
            f"    out = {SAMPLING[name]}\n    p, t = fwAD.unpack_dual(out)\n    p = p.detach()\n")
    scope_t, scope_g = run_both(code)
    (scope_t, _), (scope_g, _) = scope_t, scope_g
    np.testing.assert_allclose(scope_g["p"].numpy(), scope_t["p"].numpy(), rtol=1e-6)
    t_t, t_g = scope_t["t"], scope_g["t"]
    assert (t_g is None) == (t_t is None), (t_g, t_t)
    if t_t is not None:
        np.testing.assert_allclose(t_g.detach().numpy(), t_t.detach().numpy())
        assert str(t_g.dtype) == str(t_t.dtype)


def test_bernoulli_with_p_on_a_dual_raises_torch_error():
    from parity import assert_same_error

    assert_same_error("fwAD = torch.autograd.forward_ad\nwith fwAD.dual_level():\n"
                      "    d = fwAD.make_dual(torch.tensor([0.25, 0.5]), torch.ones(2))\n    torch.bernoulli(d, 0.5)\n")


# the double-vjp fallback (ops without a written rule): a recorded graph with torch's values
FALLBACK = {"tanh_grad": "torch.tanh(d).pow(2)", "erf": "torch.erf(d)", "atan": "d.atan()", "sinh": "d.sinh()",
"softplus": "F.softplus(d)", "gelu": "F.gelu(d)",
            "elu": "F.elu(d)", "layer_norm": "F.layer_norm(d, (3,))", "log1p": "(d.abs()).log1p()", "prod": "d.prod(1)", "cumsum_exp": "d.exp().cumsum(1)"}


# ops whose backward is not recorded (one backward pass per output element): right values, no graph
UNRECORDED = {"layer_norm"}


@pytest.mark.parametrize("source", ["primal_rg", "tangent_rg", "plain"])
@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_fallback_tangent_records_a_graph(name, source):
    primal, tangent = SOURCES[source]
    code = _program(FALLBACK[name], primal, tangent)
    (scope_t, _), (scope_g, _) = run_both(code)
    t_t, t_g = scope_t["t"], scope_g["t"]
    assert t_g.requires_grad == t_t.requires_grad or name in UNRECORDED
    assert str(t_g.dtype) == str(t_t.dtype) and tuple(t_g.shape) == tuple(t_t.shape)
    np.testing.assert_allclose(t_g.detach().numpy(), t_t.detach().numpy(), rtol=1e-5, atol=1e-6)
    if source != "plain" and name in UNRECORDED:
        return
    if source != "plain":
        _backward_agrees(code, "xr" if primal == "xr" else "vr")
