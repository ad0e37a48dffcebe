"""Tangents with torch's own graph: when the primal requires grad, PyTorch computes a tangent with differentiable
ops (its ``derivatives.yaml`` ``result:`` formulas), so the tangent has a grad_fn graph and can be backpropagated.
gradviz's written rules for ``log``, ``pow`` with a number, ``div``, ``mul`` with a number, ``softmax`` and
``log_softmax`` (``logsumexp_jvp`` with its in-place ``*=``), beside ``sum``/``mean`` with dims, must build the same
graph: node names and edges in order, the tangent's values, and what a backward through the tangent gives (or
raises). torch keeps a number's zero tangent as a ZeroTensor, which cannot be read as an array, so saved values
are compared by ``tests/test_forward_ad.py`` where no ZeroTensor is involved."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from parity import mask, raised, run_both  # noqa: E402


pytestmark = pytest.mark.usefixtures("no_dual_level_left")


HEAD = ("fwAD = torch.autograd.forward_ad\n"
        "x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])\n"
        "v = torch.tensor([[1.0, 0.5, -2.0], [0.0, 1.0, 0.25]])\n"
        "xr = x.clone().requires_grad_()\n")

GRAPHED = {
    "log": "(d + 2).log()", "log_leaf": "fwAD.make_dual(xr.abs() + 1, v).log()", "pow_two": "d ** 2",
    "pow_float": "(d + 2) ** 1.5", "pow_three": "d.pow(3)", "pow_zero": "d ** 0", "square": "d.square()",
    "pow_negative": "(d + 2) ** -1", "div": "d / (x + 3)", "div_by_dual": "x / (d + 3)",
    "div_both": "d / (d + 3)", "div_number": "d / 4", "div_int": "d / 3", "number_div": "torch.div(2.5, d + 3)",
    "mul_number": "d * 3", "mul_float": "d * 0.5", "number_mul": "torch.mul(2.5, d)", "softmax": "d.softmax(1)",
    "softmax_dim0": "torch.softmax(d, 0)", "log_softmax": "F.log_softmax(d, dim=1)",
    "log_softmax_dim0": "d.log_softmax(0)", "sum_dim": "d.sum(0)", "sum_dims": "d.sum((0, 1))",
    "mean_dim": "d.mean(1)", "mean_keepdim": "d.mean(1, keepdim=True)",
    "chain": "(d ** 2 / (x + 3)).log_softmax(1) * 2",
}


def _program(expression: str) -> str:
    return (HEAD + "with fwAD.dual_level():\n"
            "    d = fwAD.make_dual(xr, v)\n"
            f"    out = {expression}\n"
            "    p, t = fwAD.unpack_dual(out)\n")


def _assert_same_graph(node_t, node_g, path="t.grad_fn"):
    """Names and edges (their order, which are None, input numbers) of two graphs, walked together."""
    stack, seen = [(node_t, node_g, path)], set()
    while stack:
        node_t, node_g, path = stack.pop()
        if node_t is None or node_g is None:
            assert node_t is None and node_g is None, f"{path}: {node_g!r} where torch has {node_t!r}"
            continue
        assert node_g.name() == node_t.name(), f"{path}: {node_g.name()} != {node_t.name()}"
        if id(node_t) in seen:
            continue
        seen.add(id(node_t))
        edges_t, edges_g = node_t.next_functions, node_g.next_functions
        assert len(edges_g) == len(edges_t), f"{path} {node_t.name()}: {len(edges_g)} edges != {len(edges_t)}"
        for i, ((next_t, nr_t), (next_g, nr_g)) in enumerate(zip(edges_t, edges_g)):
            assert nr_g == nr_t, f"{path}[{i}] input_nr"
            stack.append((next_t, next_g, f"{path}[{i}]"))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", sorted(GRAPHED))
def test_tangent_graph_matches_torch(name, backend):
    code = _program(GRAPHED[name])
    (scope_t, _), (scope_g, _) = run_both(code, backend)
    t_t, t_g = scope_t["t"], scope_g["t"]
    assert t_g.requires_grad == t_t.requires_grad
    assert str(t_g.dtype) == str(t_t.dtype) and tuple(t_g.shape) == tuple(t_t.shape)
    np.testing.assert_allclose(t_g.detach().cpu().numpy(), t_t.detach().numpy(), rtol=2e-6, atol=1e-7)
    _assert_same_graph(t_t.grad_fn, t_g.grad_fn)
    # a backward through the tangent: the same gradient, or the same error (softmax's in-place ``*=`` modified
    # the saved exp)
    backward = code + "(t * torch.arange(1.0, t.numel() + 1.0).reshape(t.shape)).sum().backward()\ng = xr.grad\n"
    import gradviz
    import torch

    from gradviz import backends

    error_t = raised(backward, torch)
    with backends.using(backend):
        error_g = raised(backward, gradviz)
    if error_t is not None or error_g is not None:
        assert type(error_g) is type(error_t) and mask(str(error_g)) == mask(str(error_t)), (error_g, error_t)
        return
    (scope_t, _), (scope_g, _) = run_both(backward, backend)
    if scope_t["g"] is None:
        assert scope_g["g"] is None
    else:
        expected = scope_t["g"]  # a number's zero tangent times anything is torch's ZeroTensor: its values are zeros
        expected = torch.zeros_like(expected) if expected._is_zerotensor() else expected
        np.testing.assert_allclose(scope_g["g"].cpu().numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
