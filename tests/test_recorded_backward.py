"""Recorded backward forms (``create_graph=True``) of the ops whose first derivative PyTorch records as an
op of its own, compared with PyTorch 2.13 running the same lines (the gradient's graph, its saved values,
the second derivatives) and with central differences of the first derivative."""
from __future__ import annotations

import numpy as np
import pytest

import gradviz as gv

LEAVES = ("x = torch.tensor([[0.7, -1.2, 2.0], [0.4, 1.5, -0.3], [1.1, 0.2, -0.9], [-0.6, 0.8, 0.3]], "
          "dtype=torch.float64, requires_grad=True)\n"
          "w = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)\n"
          "b = torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64, requires_grad=True)\n"
          "x3 = (x * torch.tensor([[1.0], [2.0], [-1.0], [0.5]], dtype=torch.float64)).reshape(2, 3, 2)\n"
          "rm = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)\n"
          "rv = torch.tensor([2.0, 0.5, 1.5], dtype=torch.float64)\n"
          "s = torch.tensor([[0.5, 1.5, -2.0], [2.5, -0.5, 0.0]], dtype=torch.float64, requires_grad=True)\n"
          "i = torch.tensor([[0, 1, 0], [0, 0, 2]])\n")


def recorded_twice(expression: str, wrt: str) -> str:
    return (LEAVES + f"out = {expression}\n"
            f"grads = torch.autograd.grad(out, ({wrt}), create_graph=True)\n"
            "print(grads)\n"
            "total = sum(((g ** 2) * torch.arange(1.0, g.numel() + 1.0, dtype=torch.float64).reshape(g.shape)).sum()"
            " for g in grads)\n"
            "total.backward()\n")


NORMS = {
    "layer_norm_affine": ("(F.layer_norm(x, (3,), w, b) ** 3).sum()", "x, w, b"),
    "layer_norm_weight_only": ("(F.layer_norm(x, (3,), w) ** 3 * x).sum()", "x, w"),
    "layer_norm_plain": ("(F.layer_norm(x, (3,)) ** 3).sum()", "x,"),
    "layer_norm_two_dims": ("(F.layer_norm(x, (4, 3)).sin()).sum()", "x,"),
    "batch_norm_train_affine": ("(F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=True) ** 3).sum()",
                                "x, w, b"),
    "batch_norm_train_plain": ("(F.batch_norm(x, None, None, training=True) ** 3).sum()", "x,"),
    "batch_norm_train_3d": ("(F.batch_norm(x3, None, None, w[:3], None, training=True).exp()).sum()", "x, w"),
    "batch_norm_eval_affine": ("(F.batch_norm(x, rm, rv, w, b) ** 3).sum()", "x, w, b"),
    "batch_norm_eval_plain": ("(F.batch_norm(x, rm, rv) ** 3).sum()", "x,"),
    "batch_norm_weight_leaf_only": ("(F.batch_norm(x.detach(), None, None, w, b, training=True) ** 3).sum()", "w,"),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_norms_recorded_backward_matches_torch(torch, name):
    """NativeLayerNormBackwardBackward0 / NativeBatchNormBackwardBackward0: the gradient's graph (names,
    edges, saved values), its values, and every leaf's second-order ``.grad``."""
    from parity import assert_same

    assert_same(recorded_twice(*NORMS[name]))


def _norm_functions():
    F = gv.nn.functional
    w = gv.tensor([0.5, -1.5, 2.0], dtype=gv.float64)
    b = gv.tensor([0.1, 0.2, -0.3], dtype=gv.float64)
    rm, rv = gv.tensor([0.3, -0.2, 0.1], dtype=gv.float64), gv.tensor([2.0, 0.5, 1.5], dtype=gv.float64)
    return {
        "layer_norm": lambda x: (F.layer_norm(x, (3,), w * x[0], b) ** 3).sum(),
        "layer_norm_plain": lambda x: (F.layer_norm(x, (3,)) ** 3 * x).sum(),
        "batch_norm_train": lambda x: (F.batch_norm(x, None, None, w * x[1], b, training=True) ** 3).sum(),
        "batch_norm_eval": lambda x: (F.batch_norm(x, rm, rv, w * x[2], b) ** 3).sum(),
    }


@pytest.mark.parametrize("name", ["layer_norm", "layer_norm_plain", "batch_norm_train", "batch_norm_eval"])
def test_norms_second_derivatives_by_central_differences(name):
    """Each Hessian row (the weight depends on the input too, so every double-backward output counts)."""
    function = _norm_functions()[name]
    point = np.array([[0.7, -1.2, 2.0], [0.4, 1.5, -0.3], [1.1, 0.2, -0.9]])

    def gradient_at(values):
        x = gv.tensor(values, dtype=gv.float64, requires_grad=True)
        g, = gv.autograd.grad(function(x), x)
        return g.numpy()

    x = gv.tensor(point, dtype=gv.float64, requires_grad=True)
    g, = gv.autograd.grad(function(x), x, create_graph=True)
    step = 1e-6
    flat = g.reshape(-1)
    for row in range(point.size):
        hessian_row, = gv.autograd.grad(flat[row], x, retain_graph=True)
        numeric = np.zeros(point.size)
        for col in range(point.size):
            shift = np.zeros(point.size)
            shift[col] = step
            shift = shift.reshape(point.shape)
            numeric[col] = (gradient_at(point + shift) - gradient_at(point - shift)).reshape(-1)[row] / (2 * step)
        np.testing.assert_allclose(hessian_row.numpy().reshape(-1), numeric, rtol=1e-5, atol=1e-6)


def test_norms_third_order_says_it_is_not_recorded():
    """The double backward of the norms is computed on arrays: a third derivative says so by name."""
    x = gv.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    g, = gv.autograd.grad((gv.nn.functional.layer_norm(x, (3,)) ** 3).sum(), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="NativeLayerNormBackwardBackward0"):
        gv.autograd.grad((g ** 2).sum(), x, create_graph=True)


def third_order(expression: str, wrt: str) -> str:
    """Two recorded gradients, the second through the first's second-order nodes, then a backward through it."""
    weighted = ("sum(((g ** 2) * torch.arange(1.0, g.numel() + 1.0, dtype=torch.float64).reshape(g.shape)).sum() "
                "for g in {})")
    return (LEAVES + f"out = {expression}\n"
            f"g1 = torch.autograd.grad(out, {wrt}, create_graph=True)\n"
            f"g2 = torch.autograd.grad({weighted.format('g1')}, {wrt}, create_graph=True)\n"
            "print(g1, g2)\nsum((g ** 2).sum() for g in g2).backward()\n")


P = "p = (x.reshape(1, 3, 4) * 0.5).sin()\n"
OPS = {
    "logcumsumexp": ("(x.logcumsumexp(1) * x).sum()", "x"),
    "logcumsumexp_dim0_negative": ("(x.logcumsumexp(-2) * torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)"
                                   " * x).sum()", "x"),
    "reflect_1d": ("(F.pad(x.reshape(1, 3, 4), (2, 1), mode='reflect') ** 3).sum()", "x"),
    "reflect_2d": ("(F.pad(x.reshape(1, 1, 4, 3), (1, 2, 2, 1), mode='reflect') ** 3).sum()", "x"),
    "reflect_3d": ("(F.pad(x.reshape(1, 1, 2, 2, 3), (1, 1, 1, 0, 0, 1), mode='reflect') ** 3).sum()", "x"),
    "replicate_1d": ("(F.pad(x.reshape(3, 4), (3, 1), mode='replicate') ** 3).sum()", "x"),
    "replicate_2d": ("(F.pad(x.reshape(1, 4, 3), (2, 0, 1, 2), mode='replicate') ** 3).sum()", "x"),
    "replicate_3d": ("(F.pad(x.reshape(1, 2, 2, 3), (1, 2, 0, 1, 1, 1), mode='replicate') ** 3).sum()", "x"),
    "flip_negative_dims": ("(x.flip((-1, 0)).cumsum(-1) ** 3).sum()", "x"),
    "cumprod_negative_dim": ("(x.cumprod(-1) ** 2).sum()", "x"),
    "cumprod_negative_dim_zero": ("((x * torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)).cumprod(-1) ** 2).sum()",
                                  "x"),
    "prod_negative_dim_zero": ("((x * torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)).prod(-1) ** 2).sum()", "x"),
    **{f"scatter_reduce_{reduce}_{include}": (
        f"(x.scatter_reduce(0, i, s * 1.5, '{reduce}', include_self={include}) ** 2 * x).sum()", "(x, s)")
       for reduce in ("sum", "prod", "mean", "amax", "amin") for include in (True, False)},
    "scatter_reduce_amax_ties": ("(x.detach().clone().requires_grad_().scatter_reduce(1, torch.tensor([[0, 0], [1, 1]]), "
                                 "torch.tensor([[2.0, 2.0], [1.5, -1.0]], dtype=torch.float64) * s[:, :2], 'amax') ** 2"
                                 " * x).sum()", "(s,)"),
    "unfold_overlapping": ("(x.unfold(1, 2, 1) ** 3).sum()", "x"),
    "unfold_negative_dim_with_rest": ("(x.unfold(-2, 2, 3).sin() * 2).sum()", "x"),
    "unfold_twice": ("(x.unfold(1, 2, 1).unfold(0, 3, 1) ** 3).sum()", "x"),
    "as_strided_overlapping": ("(x.as_strided((3, 3), (1, 1), 0) ** 3).sum()", "x"),
    "as_strided_overlapping_offset": ("(x.as_strided((2, 3, 2), (3, 1, 1), 2) ** 3).sum()", "x"),
    "as_strided_expanded_stride": ("(x.as_strided((3, 2), (0, 1), 1) ** 3).sum()", "x"),
    "as_strided_of_an_overlapping_view": ("((x * 1).as_strided((3, 3), (1, 1)).as_strided((2, 2), (2, 1), 1) ** 3).sum()",
                                          "x"),
    "as_strided_of_an_expanded_view": ("((x * 1)[:1].expand(3, 3).as_strided((2, 3), (1, 2)) ** 3).sum()", "x"),
    "index_fill_tensor_value": ("(x.index_fill(1, torch.tensor([0, 2, 0]), (s * s).sum()) ** 3).sum()", "(x, s)"),
    "index_fill_tensor_value_input_only": ("(x.index_fill(-1, torch.tensor([1]), s.detach()[0, 0]) ** 3).sum()", "x"),
    "det_batched": ("torch.linalg.det((x[:3, :3] * 1).reshape(1, 3, 3).expand(2, 3, 3) * torch.tensor([[[1.0]], [[2.0]]], "
                    "dtype=torch.float64)).sum()", "x"),
    "det_batched_squared": ("(torch.linalg.det(torch.stack([x[:3, :3], x[1:, :3] * 2])) ** 2).sum()", "x"),
    "slogdet_batched": ("torch.linalg.slogdet(torch.stack([x[:3, :3], x[1:, :3].t()]))[1].sum()", "x"),
    "slogdet_batched_weighted": ("(torch.linalg.slogdet(torch.stack([x[:3, :3], x[1:, :3]]))[1] * "
                                 "torch.tensor([2.0, -1.0], dtype=torch.float64)).sum()", "x"),
    "circular_1d": ("(F.pad(x.reshape(1, 3, 4), (2, 1), mode='circular') ** 3).sum()", "x"),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_recorded_backward_matches_torch(torch, name):
    from parity import assert_same

    assert_same(recorded_twice(*OPS[name]))


@pytest.mark.parametrize("name", sorted(OPS))
def test_recorded_backward_differentiated_again_matches_torch(torch, name):
    from parity import assert_same

    assert_same(third_order(*OPS[name]))


def _point():
    return np.array([[0.7, -1.2, 2.0, 0.1], [0.4, 1.5, -0.3, -0.8], [1.1, 0.2, -0.9, 0.6]])


SECOND = {
    "logcumsumexp": lambda x: (x.logcumsumexp(1) * x.sin()).sum(),
    "logcumsumexp_mixed_signs": lambda x: (x.logcumsumexp(0) * gv.tensor([1.0, -2.0, 3.0, -0.5],
                                                                        dtype=gv.float64) * x).sum(),
    "reflect": lambda x: (gv.nn.functional.pad(x.reshape(1, 3, 4), (2, 1), mode="reflect") ** 3).sum(),
    "replicate_2d": lambda x: (gv.nn.functional.pad(x.reshape(1, 3, 4), (1, 2, 2, 1), mode="replicate").sin()
                               * x.sum()).sum(),
    "unfold": lambda x: (x.unfold(1, 2, 1) ** 3 * x[:, :1].unsqueeze(-1)).sum(),
    "as_strided_overlapping": lambda x: (x.as_strided((3, 3), (1, 1), 1) ** 3).sum() * x.sum(),
    "det_batched": lambda x: (gv.linalg.det(gv.stack([x[:, :3], x[:, 1:] * x[0, 0]])) ** 2).sum(),
    "slogdet_batched": lambda x: gv.linalg.slogdet(gv.stack([x[:, :3], x[:, 1:] * x[0, 0]]))[1].sum(),
    **{f"scatter_reduce_{reduce}": (lambda reduce: lambda x: (x.scatter_reduce(
        0, gv.tensor([[0, 1, 0, 2], [0, 0, 1, 2]]), x[1:] * 1.3 + 0.2, reduce, include_self=reduce != "mean") ** 2
        * x).sum())(reduce) for reduce in ("sum", "prod", "mean", "amax", "amin")},
}


def hessian_rows_against_central_differences(function, point, rtol=1e-5, atol=1e-6):
    def gradient_at(values):
        x = gv.tensor(values, dtype=gv.float64, requires_grad=True)
        g, = gv.autograd.grad(function(x), x)
        return g.numpy().reshape(-1)

    x = gv.tensor(point, dtype=gv.float64, requires_grad=True)
    g, = gv.autograd.grad(function(x), x, create_graph=True)
    flat = g.reshape(-1)
    step = 1e-6
    columns = []
    for col in range(point.size):
        shift = np.zeros(point.size)
        shift[col] = step
        shift = shift.reshape(point.shape)
        columns.append((gradient_at(point + shift) - gradient_at(point - shift)) / (2 * step))
    numeric = np.stack(columns, axis=1)  # numeric[row, col] = d g_row / d x_col
    for row in range(point.size):
        hessian_row, = gv.autograd.grad(flat[row], x, retain_graph=True)
        np.testing.assert_allclose(hessian_row.numpy().reshape(-1), numeric[row], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivatives_by_central_differences(name):
    hessian_rows_against_central_differences(SECOND[name], _point())


STEPPED = {
    "layer_norm": "(F.layer_norm(x, (3,), w, b) ** 3).sum()",
    "batch_norm": "(F.batch_norm(x, None, None, w, b, training=True) ** 3).sum()",
    "logcumsumexp": "(x.logcumsumexp(1) * x).sum()",
    "scatter_reduce_prod": "(x.scatter_reduce(0, i, s * 1.5, 'prod') ** 2 * x).sum()",
    "reflect": "(F.pad(x.reshape(1, 3, 4), (2, 1), mode='reflect') ** 3).sum()",
    "as_strided_overlapping": "(x.as_strided((3, 3), (1, 1), 0) ** 3).sum()",
}


@pytest.mark.parametrize("name", sorted(STEPPED))
def test_second_backward_through_recorded_forms_steps_in_torch_order(torch, name):
    """The gradient's graph stepped (``backward_steps``) in the order torch's engine runs it, and the
    stepped second backward gives torch's values."""
    from orders import torch_order
    from parity import run

    code = LEAVES + f"g = torch.autograd.grad({STEPPED[name]}, x, create_graph=True)[0]\n" \
                    "total = (g * g * torch.arange(1.0, g.numel() + 1.0, dtype=torch.float64).reshape(g.shape)).sum()\n"
    (scope_t, _), (scope_g, _) = run(code, torch), run(code, gv)
    expected, = torch.autograd.grad(scope_t["total"], scope_t["x"], retain_graph=True)
    assert [step.name for step in gv.autograd.backward_steps(scope_g["total"])] == torch_order(scope_t["total"])
    np.testing.assert_allclose(scope_g["x"].grad.numpy(), expected.numpy(), rtol=1e-9, atol=1e-12)
