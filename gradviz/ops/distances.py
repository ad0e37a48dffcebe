"""``cdist``: the p-norm distance between every row of one batch of vectors and every row of another
(CdistBackward0). ``dist`` (one norm of a difference) is in ``binary_math.py``; ``F.pairwise_distance``
is PyTorch's composite in ``nn/functional.py``.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import broadcast_shapes, sum_to
from gradviz.ops.binary_math import _p_norm, _p_norm_grad
from gradviz.tensor import Tensor


class CdistBackward0(OpFunction):
    """``d[..., i, j] = ‖x1[..., i, :] - x2[..., j, :]‖_p``. Row ``i`` of ``x1`` gets ``Σ_j grad_ij ∂d_ij/∂x1_i``
    (the p-norm's derivative of the difference; for p = ∞ each tie gets it whole), ``x2`` the same negated."""

    _result_name = "result"
    inputs = ("x1", "x2")
    derivatives = {"x1": ("_cdist_backward(grad.contiguous(), x1, x2, p, result)",
                          r"\sum_j \bar{d}_{ij}\,\partial\|x_i - y_j\|_p / \partial x_i"),
                   "x2": ("_cdist_backward(grad.mT().contiguous(), x2, x1, p, result.mT().contiguous())",
                          r"-\sum_i \bar{d}_{ij}\,\partial\|x_i - y_j\|_p / \partial x_i")}

    def forward(ctx, x1, x2, p=2.0):
        ctx.save(p=p, x1=x1, x2=x2)
        backend = x1._backend
        difference = _differences(backend, x1, x2)
        return backend.array(_p_norm(difference, p, axis=-1), x1.dtype, backend.device_of(x1._data))

    def backward(ctx, grad):
        backend = ctx.backend
        x1, x2, p, result = ctx.saved("x1", "x2", "p", "result")
        difference = _differences(backend, x1, x2)
        norm = np.asarray(backend.to_numpy(result))[..., None]
        local = _p_norm_grad(difference, norm, p, False) * np.asarray(backend.to_numpy(grad))[..., None]
        dtype, device = _dtype.from_any(grad.dtype), backend.device_of(grad)
        needs = ctx.needs_input_grad
        first = sum_to(backend, backend.array(local.sum(axis=-2).astype(difference.dtype), dtype, device),
                       tuple(x1.shape)) if needs[0] else None
        # x2's: the same formula with the roles swapped (as PyTorch computes it, so zeros keep their sign)
        swapped = _p_norm_grad(-difference, norm, p, False) * np.asarray(backend.to_numpy(grad))[..., None]
        second = sum_to(backend, backend.array(swapped.sum(axis=-3).astype(difference.dtype), dtype, device),
                        tuple(x2.shape)) if needs[1] else None
        return first, second


def _differences(backend, x1, x2):
    """``x1[..., i, None, :] - x2[..., None, j, :]`` as numpy, the batch dims broadcast."""
    a = np.asarray(backend.to_numpy(x1 if not isinstance(x1, Tensor) else x1._data))
    b = np.asarray(backend.to_numpy(x2 if not isinstance(x2, Tensor) else x2._data))
    return a[..., :, None, :] - b[..., None, :, :]


def cdist(x1, x2, p: float = 2.0, compute_mode=None):
    """Every pairwise p-norm distance between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M)."""
    for name, tensor in (("X1", x1), ("X2", x2)):
        if tensor.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {tensor.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, tensor in (("X1", x1), ("X2", x2)):
        if not tensor.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_dtype.SCALAR_TYPE_NAMES[tensor.dtype.name]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"X1 and X2 must have the same dtype, but got: {x1.dtype} and {x2.dtype}")
    return CdistBackward0.apply(x1, x2, float(p) if not math.isinf(p) else p)


# -- at::norm(x, p, dim, keepdim): the node F.pairwise_distance records --------------------------------------------
from gradviz.ops.reduction import LinalgVectorNormBackward0  # noqa: E402


class NormBackward1(LinalgVectorNormBackward0):
    """``norm(x, p, dim, keepdim)`` as PyTorch's C++ composites call it (``F.pairwise_distance``): the same
    p-norm and gradient as ``x.norm(p, dim)``, under the older node name."""

    derivatives = {"self": ("norm_backward(grad, self, p, result, dim, keepdim)",
                            r"\bar{y}\,x\,|x|^{p-2} / \|x\|_p^{p-1}")}

    def forward(ctx, self, p, dim, keepdim):
        out = LinalgVectorNormBackward0.forward(ctx, self, p, dim, keepdim)
        packed = getattr(ctx, "_packed", None)  # None when nothing is recorded
        if packed is not None:
            packed.pop("ord")
            ctx.save(p=p)  # PyTorch's name for the order here: ``_saved_p``
        return out

    def saved(self, *names):
        return super().saved(*("p" if name == "ord" else name for name in names))

    def saved_graph(self, *names):
        return super().saved_graph(*("p" if name == "ord" else name for name in names))


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``‖x1 - x2 + eps‖_p`` along the last dimension: PyTorch's composite (NormBackward1 over AddBackward1
    over SubBackward0)."""
    from gradviz.ops.arithmetic import AddBackward1

    dim = max(x1.ndim, x2.ndim) - 1
    shifted = AddBackward1.apply(x1 - x2, eps)
    return NormBackward1.apply(shifted, float(p), (dim if dim >= 0 else 0,), keepdim)  # (a double in torch's C++)
