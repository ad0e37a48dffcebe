"""Tensor methods and torch functions that tutorials use and the other op modules lacked: ``torch.rsub`` with
``alpha`` (tensor or number ``other``), ``tan``, the random draws ``bernoulli``/``exponential_``/``poisson``/
``multinomial`` as methods.

``torch.rsub(input, other, alpha=a)`` is ``other - a * input``. With a tensor ``other`` PyTorch records
``RsubBackward0`` (edges ``self``, ``other``); with a number, ``RsubBackward1`` saving ``alpha``.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.ops import arithmetic
from gradviz.ops._util import promote
from gradviz.tensor import Tensor


class RsubBackward0(OpFunction):
    """``torch.rsub(input, other_tensor, alpha)``: ``other - alpha * input``."""

    inputs = ("self", "other")
    derivatives = {"self": ("-grad * alpha", r"-\alpha\,\bar{y}"), "other": ("grad", r"\bar{y}")}

    def forward(ctx, self, other, alpha=1):
        ctx.save(alpha=alpha)
        ctx.shapes = (tuple(self.shape), tuple(other.shape))
        x, y = promote(self, other)
        backend = self._backend
        return backend.sub(y, x if alpha == 1 else backend.mul(x, alpha))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend, alpha = ctx.backend, ctx.saved("alpha")
        needs = ctx.needs_input_grad
        scaled = backend.neg(grad) if alpha == 1 else backend.mul(backend.neg(grad), alpha)
        return (sum_to(backend, scaled, ctx.shapes[0]) if needs[0] else None,
                sum_to(backend, grad, ctx.shapes[1]) if needs[1] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        alpha = ctx.saved("alpha")
        needs = ctx.needs_input_grad
        scaled = (-grad if alpha == 1 else (-grad) * alpha) if needs[0] else None
        return (sum_to_tensor(scaled, ctx.shapes[0]) if needs[0] else None,
                sum_to_tensor(grad, ctx.shapes[1]) if needs[1] else None)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (what Python's ``2 - x`` calls, with ``alpha=1``)."""
    if alpha == 1 and not isinstance(other, Tensor):
        return arithmetic.rsub(input, other)
    if not isinstance(input, Tensor):
        arithmetic.rsub(input, other)  # PyTorch's TypeError for a number first
    _check_alpha(input, other, alpha)
    if isinstance(other, Tensor):
        return RsubBackward0.apply(input, other, alpha=alpha)
    return _ScaledRsub.apply(input, other, alpha)


def _check_alpha(input, other, alpha) -> None:
    integral = not input.dtype.is_floating_point and (not isinstance(other, Tensor) or not other.dtype.is_floating_point)
    if integral and not isinstance(other, float) and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


class _ScaledRsub(arithmetic.RsubBackward1):
    """``torch.rsub(input, number, alpha)``: PyTorch's ``RsubBackward1`` with its ``alpha`` saved."""

    def forward(ctx, self, other, alpha):
        ctx.save(alpha=alpha)
        x, y = promote(self, other)
        backend = self._backend
        return backend.sub(backend.full((), y, arithmetic._dtype_of(x), self.device), backend.mul(x, alpha))

    def backward(ctx, grad):
        return ctx.backend.mul(ctx.backend.neg(grad), ctx.saved("alpha"))

    def backward_graph(ctx, grad):
        return (-grad) * ctx.saved("alpha")


_ScaledRsub.__name__ = _ScaledRsub.__qualname__ = "RsubBackward1"


# -- the Tensor methods ---------------------------------------------------------------------------------------------
def _rsub_method(self, other, *, alpha=1):
    return rsub(self, other, alpha=alpha)


def tensor_methods() -> dict:
    from gradviz.ops import sampling
    from gradviz.ops.inplace import in_place
    from gradviz.ops.unary import tan

    return {"tan": tan, "tan_": in_place(tan, "tan_"), "bernoulli": sampling.bernoulli_method,
            "exponential_": sampling.exponential_, "multinomial": sampling.multinomial,
            "half": lambda self: self.to(_float16())}


def _float16():
    from gradviz import _dtype

    return _dtype.float16
