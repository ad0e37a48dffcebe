"""Losses a course meets after MSE and cross-entropy: ``margin_ranking_loss``, ``hinge_embedding_loss``,
``soft_margin_loss``, ``poisson_nll_loss``, ``gaussian_nll_loss``, ``triplet_margin_loss``.

All but ``soft_margin_loss`` are PyTorch's composites (ATen's, or ``torch.nn.functional``'s Python for
``gaussian_nll_loss``), written with the same ops in the same order so the graph shows PyTorch's nodes;
``soft_margin_loss`` is one node, ``SoftMarginLossBackward0``, as in PyTorch (its target may not require grad).
The reduction is ATen's ``apply_loss_reduction``: ``mean()`` (MeanBackward0) or ``sum()`` (SumBackward0).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops.loss import REDUCTIONS, _reduction
from gradviz.tensor import Tensor


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    """``size_average``/``reduce`` (deprecated) override ``reduction``, with PyTorch's warning."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    chosen = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{chosen}' instead.",
                  UserWarning, stacklevel=3)
    return chosen


def _reduced(loss, reduction: int):
    """ATen's ``apply_loss_reduction``."""
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


# -- margin_ranking_loss, hinge_embedding_loss --------------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """``max(0, -target · (input1 - input2) + margin)``: ``target = 1`` wants ``input1`` ranked higher."""
    reduction = _reduction(_legacy_reduction(size_average, reduce, reduction))
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: "
                           f"{input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    output = _plus_number(-target * (input1 - input2), margin).clamp_min_(0)
    return _reduced(output, reduction)


def _plus_number(tensor, number):
    """``tensor + number`` as C++ writes it (a Scalar: AddBackward1)."""
    from gradviz.ops.arithmetic import AddBackward1

    return AddBackward1.apply(tensor, number) if tensor.requires_grad else tensor + number


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
    """``input`` where ``target = 1``, ``max(0, margin - input)`` where ``target = -1`` (ATen's ``where``s)."""
    from gradviz.ops.comparison import where
    from gradviz.tensor import full_like, zeros_like

    reduction = _reduction(_legacy_reduction(size_average, reduce, reduction))
    zeros = zeros_like(input)
    # C++'s ``margin - self`` fills a tensor with the number and subtracts (SubBackward0, no edge for the number)
    margin_clamp = (full_like(input, margin) - input).clamp_min_(0)
    output_margin = where(target != 1, margin_clamp, zeros)
    output_self = where(target != -1, input, zeros)
    return _reduced(output_margin + output_self, reduction)


# -- soft_margin_loss -------------------------------------------------------------------------------------------
class SoftMarginLossBackward0(OpFunction):
    """``log(1 + exp(-target · input))``, reduced, in one node; ``∂/∂input = -target · σ(-target · input)``."""

    inputs = ("self",)
    derivatives = {"self": ("soft_margin_loss_backward(grad, self, target, reduction)",
                            r"-t\,\bar{y}\,\sigma(-t x)")}

    def forward(ctx, self, target, reduction):
        ctx.save(reduction=reduction, self=self, target=target)
        backend = self._backend
        x, t = (np.asarray(backend.to_numpy(v._data)) for v in (self, target))
        with np.errstate(all="ignore"):
            loss = np.log1p(np.exp(-x * t)).astype(x.dtype)
        if reduction == 1:
            loss = np.asarray(loss.sum(dtype=x.dtype) / max(loss.size, 1), dtype=x.dtype)
        elif reduction == 2:
            loss = np.asarray(loss.sum(dtype=x.dtype), dtype=x.dtype)
        return backend.array(loss, self.dtype, backend.device_of(self._data))

    def backward(ctx, grad):
        backend = ctx.backend
        self, target, reduction = ctx.saved("self", "target", "reduction")
        x, t = (np.asarray(backend.to_numpy(v)) for v in (self, target))
        g = np.asarray(backend.to_numpy(grad))
        with np.errstate(all="ignore"):
            z = np.exp(-t * x)
            values = -t * z / (1 + z) * g
        if reduction == 1:
            values = values / max(x.size, 1)
        return backend.array(np.asarray(values, dtype=x.dtype), _dtype.from_any(grad.dtype), backend.device_of(grad))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """The two-class logistic loss ``log(1 + exp(-target · input))`` (targets ±1)."""
    from gradviz.ops._util import broadcast_shapes

    reduction = _reduction(_legacy_reduction(size_average, reduce, reduction))
    if target.requires_grad:
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. "
                           "This input cannot have requires_grad True.")
    broadcast_shapes(tuple(input.shape), tuple(target.shape))
    if tuple(target.shape) != tuple(input.shape):
        target = target.expand(tuple(input.shape))
    return SoftMarginLossBackward0.apply(input, target, reduction)


# -- poisson_nll_loss, gaussian_nll_loss ------------------------------------------------------------------------------
def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                     reduce=None, reduction: str = "mean"):
    """The negative log likelihood of ``target ~ Poisson(exp(input))`` (or ``Poisson(input)``), optionally with
    Stirling's term for ``log(target!)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * _plus_number(input, eps).log()
    if full:
        stirling = target * target.log() - target + _times_number(_times_number(target, 2 * math.pi).log(), 0.5)
        loss += stirling.masked_fill(target <= 1, 0)
    return _reduced(loss, REDUCTIONS[reduction])


def _times_number(tensor, number: float):
    """``tensor * number`` (or ``number * tensor``) as C++ writes it: MulBackward1."""
    from gradviz.ops.arithmetic import MulBackward1

    return MulBackward1.apply(tensor, number) if tensor.requires_grad else tensor * number


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
    """The negative log likelihood of ``target ~ N(input, var)``: ``0.5 · (log var + (input - target)² / var)``
    (``var`` clamped below at ``eps`` outside the graph; one dim short, or one size-1 dim, broadcasts)."""
    from gradviz.grad_mode import no_grad
    from gradviz.ops.reduction import any as tensor_any
    from gradviz.tensor import ones_like

    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif bool(tensor_any(var < 0)):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape)[:-1] == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


# -- triplet_margin_loss ----------------------------------------------------------------------------------------------
def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the p-norm distance ``d``
    (``swap``: the smaller of ``d(a, n)`` and ``d(p, n)``)."""
    from gradviz.ops.comparison import minimum
    from gradviz.ops.distances import pairwise_distance

    reduction = _reduction(_legacy_reduction(size_average, reduce, reduction))
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs")
    p = float(p)  # a C++ double: saved as 2.0, not 2
    distance_positive = pairwise_distance(anchor, positive, p, eps)
    distance_negative = pairwise_distance(anchor, negative, p, eps)
    if swap:
        distance_negative = minimum(distance_negative, pairwise_distance(positive, negative, p, eps))
    output = (_plus_number(distance_positive, margin) - distance_negative).clamp_min(0)
    return _reduced(output, reduction)



def tensor_methods() -> dict:
    """``x.hardshrink(lambd)`` and ``x.prelu(weight)``: the activations PyTorch also has as Tensor methods."""
    from gradviz.ops.activation import prelu
    from gradviz.ops.shrink import hardshrink

    return {"hardshrink": hardshrink, "prelu": prelu}
