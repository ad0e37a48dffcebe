"""Third derivatives through the norms: ``linalg.norm``, ``vector_norm``, ``matrix_norm`` (every ord) and
``Tensor.norm``. The second backward pass is recorded too, so a third ``autograd.grad`` runs; compared with
PyTorch 2.13 running the same lines (each gradient's values and its graph node by node, depth first), and the
third derivative with central differences of the second."""
from __future__ import annotations

import math

import numpy as np
import pytest

import gradviz as gv
from orders import graph_names as _graph

INF = math.inf
X = np.random.default_rng(7).standard_normal((3, 4))

CASES = {}
for _p in (2, 3, 0.5, 1.5, -1, -2, -INF):
    CASES[f"vector_norm_{_p}"] = lambda t, x, p=_p: t.linalg.vector_norm(x, p).sin()
    CASES[f"vector_norm_{_p}_dim"] = lambda t, x, p=_p: t.linalg.vector_norm(x, p, dim=1).sin().sum()
    CASES[f"tensor_norm_{_p}_dim"] = lambda t, x, p=_p: x.norm(p, dim=-1).sin().sum()
    CASES[f"linalg_norm_{_p}_vector"] = lambda t, x, p=_p: t.linalg.norm(x[0], p).sin()
for _p in (1, INF):  # piecewise linear: the second derivative has no graph, in both
    CASES[f"vector_norm_{_p}_keepdim"] = lambda t, x, p=_p: (t.linalg.vector_norm(x, p, dim=0, keepdim=True) * x).sum()
for _ord in ("fro", "nuc", 1, -1, 2, -2, INF, -INF):
    CASES[f"matrix_norm_{_ord}"] = lambda t, x, o=_ord: t.linalg.matrix_norm(x, o).sin()
    CASES[f"matrix_norm_{_ord}_batch"] = lambda t, x, o=_ord: t.linalg.matrix_norm(x.reshape(2, 2, 3), o).sin().sum()
    CASES[f"linalg_norm_{_ord}_matrix"] = lambda t, x, o=_ord: t.linalg.norm(x, o).cos()
CASES["linalg_norm_default"] = lambda t, x: t.linalg.norm(x).sin()
CASES["tensor_norm_default"] = lambda t, x: x.norm().sin()
CASES["tensor_norm_3"] = lambda t, x: x.norm(3).sin()
CASES["tensor_norm_fro_dims"] = lambda t, x: x.norm("fro", dim=(0, 1)).sin()
CASES["tensor_norm_nuc"] = lambda t, x: x.norm("nuc").sin()
CASES["torch_norm_nuc_keepdim"] = lambda t, x: (t.norm(x, "nuc", keepdim=True) * x).sum()


def _three(t, loss, x0):
    x = t.tensor(x0, dtype=t.float64, requires_grad=True)
    g, = t.autograd.grad(loss(t, x), x, create_graph=True)
    h, = t.autograd.grad((g * g.cos()).sum(), x, create_graph=True)
    third, = t.autograd.grad((h * h).sum(), x, create_graph=True)
    return [g, h, third]


def _outcome(t, loss):
    try:
        grads = _three(t, loss, X)
    except RuntimeError as error:
        return type(error), str(error)
    return [g.detach().numpy() for g in grads], [_graph(g.grad_fn) for g in grads]


@pytest.mark.parametrize("name", sorted(CASES))
def test_third_derivatives_through_norms_match_torch(torch, name):
    ours, theirs = _outcome(gv, CASES[name]), _outcome(torch, CASES[name])
    if isinstance(theirs[0], type):  # a piecewise linear norm: both say the gradient has no graph
        assert ours == theirs
        return
    for value, expected in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(value, expected, rtol=1e-8, atol=1e-10)
    assert ours[1] == theirs[1]


def _second(loss, x0):
    x = gv.tensor(x0, dtype=gv.float64, requires_grad=True)
    g, = gv.autograd.grad(loss(gv, x), x, create_graph=True)
    h, = gv.autograd.grad((g * g.cos()).sum(), x, create_graph=True)
    return float((h * h).sum().detach())


@pytest.mark.parametrize("name", ["vector_norm_3", "vector_norm_3_dim", "linalg_norm_-2_vector", "matrix_norm_fro", "matrix_norm_nuc",
                                  "matrix_norm_2", "matrix_norm_-2_batch", "tensor_norm_nuc"])
def test_third_derivatives_through_norms_by_central_differences(name):
    loss, step = CASES[name], 1e-5
    x = gv.tensor(X, dtype=gv.float64, requires_grad=True)
    g, = gv.autograd.grad(loss(gv, x), x, create_graph=True)
    h, = gv.autograd.grad((g * g.cos()).sum(), x, create_graph=True)
    third, = gv.autograd.grad((h * h).sum(), x)
    direction = np.random.default_rng(1).standard_normal(X.shape)
    estimate = (_second(loss, X + step * direction) - _second(loss, X - step * direction)) / (2 * step)
    np.testing.assert_allclose(float((third.numpy() * direction).sum()), estimate, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("code", [
    "t.arange(8.).reshape(2, 2, 2).norm('nuc')",
    "t.arange(8.).reshape(2, 2, 2).norm('fro', dim=(0, 1, 2))",
    "t.linalg.matrix_norm(t.ones(2, 2), dim=(0,))",
    "t.arange(3.).norm('nuc')",
])
def test_matrix_norms_through_tensor_norm_raise_torchs_errors(torch, code):
    def outcome(t):
        try:
            return eval(code)
        except RuntimeError as error:
            return type(error), str(error)

    assert outcome(gv) == outcome(torch)


def test_third_derivative_through_eigh_matches_torch(torch):
    """eigh's recorded backward makes ``E = L.unsqueeze(-2) - L.unsqueeze(-1)`` right operand first, as C++
    does (svd's, under the spectral and nuclear norms, likewise): the third pass sums in PyTorch's order."""
    def eigh_loss(t, x):
        L, V = t.linalg.eigh(x[:, :3] + x[:, :3].mT)
        return (L ** 3).sum() + ((V * L.unsqueeze(-2)) @ V.mT).sin().sum()

    ours, theirs = _outcome(gv, eigh_loss), _outcome(torch, eigh_loss)
    for value, expected in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(value, expected, rtol=1e-8, atol=1e-10)
    assert ours[1] == theirs[1]
