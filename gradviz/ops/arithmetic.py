"""Binary arithmetic: ``+ - * / **`` and their reflected forms.

Each class is PyTorch's node for that op; the formulas read like ``derivatives.yaml``. A Python
number in an op is a constant: it gets the edge ``(None, 0)`` where PyTorch wraps it in a tensor
(``x + 2``, ``x * 2``), and no edge at all where PyTorch takes a Scalar (``2 - x``, ``x ** 2``).
Gradients are summed back to each input's shape wherever broadcasting widened it.
"""
from __future__ import annotations

import math

from gradviz.autograd.function import Function
from gradviz.ops._util import backend_of, broadcast_shapes, data, promote, shape_of, sum_to
from gradviz.tensor import Tensor


def _check_broadcast(a, b) -> None:
    a_shape, b_shape = shape_of(a), shape_of(b)
    if a_shape != b_shape:
        broadcast_shapes(a_shape, b_shape)


class AddBackward0(Function):
    inputs = ("self", "other")
    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("grad * alpha", r"\alpha\,\bar{y}")}

    def forward(ctx, self, other):
        _check_broadcast(self, other)
        ctx.save(alpha=1)
        ctx.shapes = (shape_of(self), shape_of(other))
        x, y = promote(self, other)
        return backend_of(self, other).add(x, y)

    def backward(ctx, grad):
        backend = ctx.backend
        self_shape, other_shape = ctx.shapes
        return (sum_to(backend, grad, self_shape) if ctx.needs_input_grad[0] else None,
                sum_to(backend, grad, other_shape) if ctx.needs_input_grad[1] else None)


class SubBackward0(Function):
    inputs = ("self", "other")
    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("-grad * alpha", r"-\alpha\,\bar{y}")}

    def forward(ctx, self, other):
        _check_broadcast(self, other)
        ctx.save(alpha=1)
        ctx.shapes = (shape_of(self), shape_of(other))
        x, y = promote(self, other)
        return backend_of(self, other).sub(x, y)

    def backward(ctx, grad):
        backend = ctx.backend
        self_shape, other_shape = ctx.shapes
        return (sum_to(backend, grad, self_shape) if ctx.needs_input_grad[0] else None,
                sum_to(backend, backend.neg(grad), other_shape) if ctx.needs_input_grad[1] else None)


class RsubBackward1(Function):
    """``number - tensor``: PyTorch's ``rsub(self, other=number)``, one edge only."""

    inputs = ("self",)
    derivatives = {"self": ("-grad * alpha", r"-\alpha\,\bar{y}")}

    def forward(ctx, self, other):
        ctx.save(alpha=1)
        x, y = promote(self, other)
        return self._backend.sub(y, x)

    def backward(ctx, grad):
        return ctx.backend.neg(grad)


class MulBackward0(Function):
    inputs = ("self", "other")
    derivatives = {"self": ("grad * other", r"\bar{y}\cdot b"), "other": ("grad * self", r"\bar{y}\cdot a")}

    def forward(ctx, self, other):
        _check_broadcast(self, other)
        ctx.save(other=other if ctx.needs_input_grad[:1] == (True,) else None,
                 self=self if ctx.needs_input_grad[1:] == (True,) else None)
        ctx.shapes = (shape_of(self), shape_of(other))
        x, y = promote(self, other)
        return backend_of(self, other).mul(x, y)

    def backward(ctx, grad):
        backend = ctx.backend
        self_shape, other_shape = ctx.shapes
        grad_self = grad_other = None
        if ctx.needs_input_grad[0]:
            grad_self = sum_to(backend, backend.mul(grad, ctx.saved("other")), self_shape)
        if ctx.needs_input_grad[1]:
            grad_other = sum_to(backend, backend.mul(grad, ctx.saved("self")), other_shape)
        return grad_self, grad_other


class DivBackward0(Function):
    inputs = ("self", "other")
    derivatives = {"self": ("grad / other", r"\bar{y} / b"),
                   "other": ("-grad * self / (other * other)", r"-\bar{y}\,a / b^{2}")}

    def forward(ctx, self, other):
        _check_broadcast(self, other)
        ctx.save(self=self if ctx.needs_input_grad[1:] == (True,) else None, other=other)
        ctx.shapes = (shape_of(self), shape_of(other))
        x, y = promote(self, other)
        backend = backend_of(self, other)
        result = backend.div(x, y)
        if not _is_float(result):
            result = backend.astype(result, _default_float())
        return result

    def backward(ctx, grad):
        backend = ctx.backend
        self_shape, other_shape = ctx.shapes
        other = ctx.saved("other")
        grad_self = grad_other = None
        if ctx.needs_input_grad[0]:
            grad_self = sum_to(backend, backend.div(grad, other), self_shape)
        if ctx.needs_input_grad[1]:
            self = ctx.saved("self")
            grad_other = sum_to(backend, backend.neg(backend.div(backend.mul(grad, self),
                                                                 backend.mul(other, other))), other_shape)
        return grad_self, grad_other


class ReciprocalBackward0(Function):
    inputs = ("self",)
    derivatives = {"self": ("-grad * (result * result)", r"-\bar{y}\,y^{2}")}

    def forward(ctx, self):
        ctx.save_result()
        backend = self._backend
        values = self._data if _is_float(self._data) else backend.astype(self._data, _default_float())
        return backend.div(1.0, values)

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        return backend.neg(backend.mul(grad, backend.mul(result, result)))


class NegBackward0(Function):
    inputs = ("self",)
    derivatives = {"self": ("grad.neg()", r"-\bar{y}")}

    def forward(ctx, self):
        return self._backend.neg(self._data)

    def backward(ctx, grad):
        return ctx.backend.neg(grad)


class PowBackward0(Function):
    """``tensor ** number``."""

    inputs = ("self",)
    derivatives = {"self": ("grad * exponent * self.pow(exponent - 1)", r"\bar{y}\,n\,x^{n-1}")}

    def forward(ctx, self, exponent):
        ctx.save(self=self, exponent=exponent)
        x, n = promote(self, exponent)
        return self._backend.pow(x, n)

    def backward(ctx, grad):
        backend = ctx.backend
        self, exponent = ctx.saved("self", "exponent")
        if exponent == 0:
            return backend.mul(grad, 0.0)
        return backend.mul(grad, backend.mul(backend.pow(self, exponent - 1), float(exponent)))


class PowBackward1(Function):
    """``tensor ** tensor``."""

    inputs = ("self", "exponent")
    derivatives = {"self": ("grad * exponent * self.pow(exponent - 1)", r"\bar{y}\,b\,a^{b-1}"),
                   "exponent": ("grad * result * self.log()", r"\bar{y}\,y\,\ln a")}

    def forward(ctx, self, exponent):
        _check_broadcast(self, exponent)
        ctx.save(self=self, exponent=exponent)
        ctx.save_result()
        ctx.shapes = (shape_of(self), shape_of(exponent))
        x, n = promote(self, exponent)
        return self._backend.pow(x, n)

    def backward(ctx, grad):
        backend = ctx.backend
        self, exponent = ctx.saved("self", "exponent")
        self_shape, exponent_shape = ctx.shapes
        grad_self = grad_exponent = None
        if ctx.needs_input_grad[0]:
            local = backend.mul(exponent, backend.pow(self, backend.sub(exponent, 1)))
            grad_self = sum_to(backend, backend.mul(grad, local), self_shape)
        if ctx.needs_input_grad[1]:
            result = ctx.saved("result")
            # d(a**b)/db = a**b * ln(a); PyTorch takes the term as 0 where a == 0 and b >= 0
            log_self = backend.where(backend.eq(self, 0), 0.0, backend.log(self))
            grad_exponent = sum_to(backend, backend.mul(grad, backend.mul(result, log_self)), exponent_shape)
        return grad_self, grad_exponent


class PowBackward2(Function):
    """``number ** tensor``: the base is a Scalar to PyTorch, so the only edge is the exponent's."""

    inputs = ("exponent",)
    derivatives = {"exponent": ("grad * result * log(self)", r"\bar{y}\,y\,\ln c")}

    def forward(ctx, exponent, base):
        ctx.save(self=base, exponent=exponent)
        ctx.save_result()
        n, c = promote(exponent, base)
        return exponent._backend.pow(c, n)

    def backward(ctx, grad):
        backend = ctx.backend
        base = ctx.saved("self")
        result = ctx.saved("result")
        return backend.mul(grad, backend.mul(result, math.log(base) if base > 0 else float("nan")))


# -- the functions tensors call ---------------------------------------------------------------------
def _is_float(array) -> bool:
    return "float" in str(array.dtype)


def _default_float():
    from gradviz import _dtype

    return _dtype.default_float


def _as_number(value):
    return value.item() if hasattr(value, "item") and not isinstance(value, Tensor) else value


def add(input, other, *, alpha=1):
    if alpha != 1:
        other = mul(other, alpha)
    if not isinstance(input, Tensor):
        input, other = other, input
    return AddBackward0.apply(input, other)


def sub(input, other, *, alpha=1):
    if alpha != 1:
        other = mul(other, alpha)
    if not isinstance(input, Tensor):
        return rsub(other, input)
    return SubBackward0.apply(input, other)


def rsub(input, other):
    """``other - input`` where ``other`` is a number (what Python's ``2 - x`` calls)."""
    if isinstance(other, Tensor):
        return SubBackward0.apply(other, input)
    return RsubBackward1.apply(input, other)


def mul(input, other):
    if not isinstance(input, Tensor):
        input, other = other, input
    return MulBackward0.apply(input, other)


def div(input, other):
    if not isinstance(input, Tensor):
        return rdiv(other, input)
    return DivBackward0.apply(input, other)


def rdiv(input, other):
    """``other / input`` for a number ``other``: PyTorch computes ``reciprocal(input) * other``."""
    return MulBackward0.apply(ReciprocalBackward0.apply(input), other)


def reciprocal(input):
    return ReciprocalBackward0.apply(input)


def neg(input):
    return NegBackward0.apply(input)


def pow(input, exponent):
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        return PowBackward1.apply(input, exponent)
    if isinstance(input, Tensor):
        return PowBackward0.apply(input, _as_number(exponent))
    return PowBackward2.apply(exponent, input)


def rpow(input, base):
    """``base ** input`` for a number ``base``."""
    return PowBackward2.apply(input, base)
