"""Elementwise math from PyTorch's docs and the special functions: ``logaddexp``, ``logaddexp2``, ``addcdiv``,
``xlogy``, ``sinc``, ``deg2rad``/``rad2deg``, ``heaviside``, ``logit(eps)``.

Each class is PyTorch's node with the derivative of ``derivatives.yaml`` on arrays (``backward``) and
recorded with gradviz's own ops (``backward_graph``, for ``create_graph=True``). ``heaviside`` has no
derivative in PyTorch: its node is ``NotImplemented`` and backward raises PyTorch's error.
"""
from __future__ import annotations

import math

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import float_data, promote, sum_to, sum_to_tensor
from gradviz.ops.arithmetic import AddBackward1, MulBackward1, _binary_grads, _binary_operands, _graph_grads
from gradviz.ops.no_derivative import NotImplemented, without_derivative
from gradviz.tensor import Tensor

LN2 = 0.6931471805599453


def _floats(ctx, self, other):
    """Both operands (tensors) as floating point data of their promoted dtype."""
    backend, a, b = _binary_operands(ctx, self, other)
    if not _dtype.result_type((self, other)).is_floating_point:
        a, b = (backend.astype(v, _dtype.default_float) for v in (a, b))
    return backend, a, b


def _needs_tensor(name: str, *values) -> None:
    for position, value in enumerate(values):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{('input', 'other')[position]}' (position {position + 1}) must be "
                            f"Tensor, not {type(value).__name__}")


# -- log of a sum of exponentials, two at a time -------------------------------------------------------------
class LogaddexpBackward0(OpFunction):
    """``log(e^a + e^b)``, computed from the larger: ``max + log1p(e^{-|a - b|})``. Its gradient for ``a`` is
    the share ``e^a`` has in the sum, ``1 / (1 + e^{b - a})``; Logaddexp2Backward0 is the same in base 2."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad / (1 + exp(other - self))", r"\bar{y} / (1 + e^{b - a})"),
                   "other": ("grad / (1 + exp(self - other))", r"\bar{y} / (1 + e^{a - b})")}
    log_base = 1.0  # ln e

    @classmethod
    def _power(cls, backend, exponent):
        """``base ** exponent`` on arrays."""
        return backend.exp(exponent) if cls.log_base == 1.0 else backend.pow(2.0, exponent)

    @classmethod
    def _power_graph(cls, exponent):
        from gradviz.ops.arithmetic import rpow

        return exponent.exp() if cls.log_base == 1.0 else rpow(exponent, 2)

    def forward(ctx, self, other, kind):
        """``kind``: this class or Logaddexp2Backward0 (``ctx`` is no node when nothing is recorded)."""
        backend, a, b = _floats(ctx, self, other)
        ctx.save(other=other, self=self)
        larger = backend.maximum(a, b)
        rest = backend.log1p(kind._power(backend, backend.neg(backend.abs(backend.sub(a, b)))))
        if kind.log_base != 1.0:
            rest = backend.div(rest, kind.log_base)
        # equal operands (infinities too, where a - b is NaN): the log of twice the power, a + log(2)
        return backend.where(backend.eq(a, b), backend.add(a, LN2 / kind.log_base), backend.add(larger, rest))

    def backward(ctx, grad):
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        needs = ctx.needs_input_grad
        return _binary_grads(ctx, backend.div(grad, backend.add(ctx._power(backend, backend.sub(other, self)), 1))
                             if needs[0] else None,
                             backend.div(grad, backend.add(ctx._power(backend, backend.sub(self, other)), 1))
                             if needs[1] else None)

    def backward_graph(ctx, grad):
        self, other = ctx.saved_graph("self", "other")
        return _graph_grads(ctx, lambda: grad / AddBackward1.apply(ctx._power_graph(other - self), 1),
                            lambda: grad / AddBackward1.apply(ctx._power_graph(self - other), 1))


class Logaddexp2Backward0(LogaddexpBackward0):
    """``log2(2^a + 2^b)``: ``max + log2(1 + 2^{-|a - b|})``."""

    derivatives = {"self": ("grad / (1 + pow(2, other - self))", r"\bar{y} / (1 + 2^{b - a})"),
                   "other": ("grad / (1 + pow(2, self - other))", r"\bar{y} / (1 + 2^{a - b})")}
    log_base = LN2  # ln 2: log2(x) = ln(x) / ln 2, and log2(2^a + 2^a) = a + 1


def logaddexp(input, other):
    _needs_tensor("logaddexp", input, other)
    return LogaddexpBackward0.apply(input, other, LogaddexpBackward0)


def logaddexp2(input, other):
    _needs_tensor("logaddexp2", input, other)
    return Logaddexp2Backward0.apply(input, other, Logaddexp2Backward0)


# -- addcdiv: self + value * tensor1 / tensor2 (Adam's step is written with it) ------------------------------
class AddcdivBackward0(OpFunction):
    inputs = ("self", "tensor1", "tensor2")
    derivatives = {"self": ("grad", r"\bar{y}"),
                   "tensor1": ("grad * (value / tensor2).conj()", r"\bar{y}\,v / b"),
                   "tensor2": ("-grad * (value * tensor1 / (tensor2 * tensor2)).conj()", r"-\bar{y}\,v\,a / b^{2}")}

    def forward(ctx, self, tensor1, tensor2, value=1):
        if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
                "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
                "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
        needs = ctx.needs_input_grad
        ctx.save(tensor1=tensor1 if needs[2:3] == (True,) else None,
                 tensor2=tensor2 if needs[1:] != (False, False) and needs[1:] != () else None, value=value)
        ctx.shapes = tuple(tuple(t.shape) for t in (self, tensor1, tensor2))
        backend = self._backend
        quotient = backend.div(*promote(tensor1, tensor2))
        return backend.add(*promote(self, Tensor._make(backend.mul(quotient, value) if value != 1 else quotient,
                                                       backend=backend)))

    def backward(ctx, grad):
        backend = ctx.backend
        tensor1, tensor2, value = ctx.saved("tensor1", "tensor2", "value")
        needs = ctx.needs_input_grad
        raw = (grad if needs[0] else None,
               backend.mul(grad, backend.div(value, tensor2)) if needs[1] else None,
               backend.neg(backend.mul(grad, backend.div(backend.mul(tensor1, value), backend.mul(tensor2, tensor2))))
               if needs[2] else None)
        return tuple(None if g is None else sum_to(backend, g, shape) for g, shape in zip(raw, ctx.shapes))

    def backward_graph(ctx, grad):
        """``grad * (value / tensor2)`` (the Scalar divided: DivBackward0) and ``-grad * (value * tensor1 /
        (tensor2 * tensor2))``, as PyTorch's generated code records them."""
        from gradviz.ops.arithmetic import DivBackward0

        tensor1, tensor2, value = (ctx.saved_graph(name) for name in ("tensor1", "tensor2", "value"))
        needs = ctx.needs_input_grad
        raw = (grad if needs[0] else None, grad * DivBackward0.apply(value, tensor2) if needs[1] else None,
               -grad * (MulBackward1.apply(tensor1, value) / (tensor2 * tensor2)) if needs[2] else None)
        return tuple(None if g is None else sum_to_tensor(g, shape) for g, shape in zip(raw, ctx.shapes))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    return AddcdivBackward0.apply(input, tensor1, tensor2, value=value)


# -- x log y and x log(1 + y), 0 where x is 0 -------------------------------------------------------------------
# ``shift`` is 0 for xlogy and 1 for special.xlog1py (``x log(shift + y)``): the same three nodes, PyTorch's
# Xlogy... and SpecialXlog1Py... (a tensor and a tensor, a number first, a number second).
def _xlogy(backend, x, y, shift: int = 0):
    """``x * log(shift + y)``, 0 where ``x`` is 0 (unless ``y`` is NaN)."""
    product = backend.mul(x, backend.log1p(y) if shift else backend.log(y))
    return backend.where(backend.logical_and(backend.eq(x, 0), backend.eq(y, y)), 0.0, product)


def _self_grad(backend, grad, self, other, shift: int):
    """PyTorch's ``at::xlogy(grad, other).masked_fill((self == 0) & (other <= 0), 0)`` (xlog1py: ``other <= -1``):
    ``grad ln other``, but 0 where ``self`` is 0 and the log has no real value (there ``x ln y`` is 0)."""
    flat = backend.logical_and(backend.eq(self, 0), backend.le(other, -shift))
    return backend.where(flat, 0.0, _xlogy(backend, grad, other, shift))


def _recorded(shift: int):
    return xlog1py if shift else xlogy


class XlogyBackward0(OpFunction):
    inputs = ("self", "other")
    derivatives = {"self": ("at::xlogy(grad, other).masked_fill((self == 0.) & (other <= 0.), 0.)",
                            r"\bar{y}\,\ln b\ (0 \text{ where } a = 0,\ b \le 0)"),
                   "other": ("grad * self / other", r"\bar{y}\,a / b")}
    shift = 0

    def forward(ctx, self, other, shift):
        backend, a, b = _floats(ctx, self, other)
        ctx.save(other=other, self=self)
        return _xlogy(backend, a, b, shift)

    def backward(ctx, grad):
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        needs = ctx.needs_input_grad
        return _binary_grads(ctx, _self_grad(backend, grad, self, other, ctx.shift) if needs[0] else None,
                             backend.div(backend.mul(grad, self), backend.add(other, ctx.shift) if ctx.shift else other)
                             if needs[1] else None)

    def backward_graph(ctx, grad):
        self, other = ctx.saved_graph("self", "other")
        backend = ctx.backend
        flat = Tensor._make(backend.logical_and(backend.eq(self._data, 0), backend.le(other._data, -ctx.shift)),
                            backend=backend)
        shifted = (lambda: AddBackward1.apply(other, 1)) if ctx.shift else (lambda: other)
        return _graph_grads(ctx, lambda: _recorded(ctx.shift)(grad, other).masked_fill(flat, 0),
                            lambda: grad * self / shifted())


class XlogyBackward1(OpFunction):
    """``xlogy(number, tensor)``: the number is a Scalar to PyTorch, the only edge is ``other``'s."""

    inputs = ("other",)
    derivatives = {"other": ("grad * self / other", r"\bar{y}\,a / b")}
    shift = 0

    def forward(ctx, other, self, shift):
        ctx.save(other=other, self=self)
        data = float_data(other)
        return _xlogy(other._backend, _number_like(other._backend, self, data), data, shift)

    def backward(ctx, grad):
        backend = ctx.backend
        other, self = ctx.saved("other", "self")
        return backend.div(backend.mul(grad, self), backend.add(other, ctx.shift) if ctx.shift else other)

    def backward_graph(ctx, grad):
        other = ctx.saved_graph("other")
        return MulBackward1.apply(grad, ctx.saved("self")) / (AddBackward1.apply(other, 1) if ctx.shift else other)


class XlogyBackward2(OpFunction):
    """``xlogy(tensor, number)``: the only edge is ``self``'s."""

    inputs = ("self",)
    derivatives = {"self": ("other > 0. ? at::xlogy(grad, other) : at::xlogy(grad, other).masked_fill(self == 0., 0.)",
                            r"\bar{y}\,\ln b")}
    shift = 0

    def forward(ctx, self, other, shift):
        ctx.save(other=other, self=self)
        data = float_data(self)
        return _xlogy(self._backend, data, _number_like(self._backend, other, data), shift)

    def backward(ctx, grad):
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        return _self_grad(backend, grad, self, _number_like(backend, other, grad), ctx.shift)

    def backward_graph(ctx, grad):
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        out = _recorded(ctx.shift)(grad, other)
        if not other > -ctx.shift:
            out = out.masked_fill(Tensor._make(backend.eq(self, 0), backend=backend), 0)
        return out


class SpecialXlog1PyBackward0(XlogyBackward0):
    derivatives = {"self": ("at::xlog1py(grad, other).masked_fill((self == 0.) & (other <= -1.), 0.)",
                            r"\bar{y}\,\ln(1 + b)\ (0 \text{ where } a = 0,\ b \le -1)"),
                   "other": ("grad * self / (other + 1)", r"\bar{y}\,a / (1 + b)")}
    shift = 1


class SpecialXlog1PyBackward1(XlogyBackward1):
    derivatives = {"other": ("grad * self / (other + 1)", r"\bar{y}\,a / (1 + b)")}
    shift = 1


class SpecialXlog1PyBackward2(XlogyBackward2):
    derivatives = {"self": ("other.toDouble() > -1. ? at::xlog1py(grad, other) : "
                            "at::xlog1py(grad, other).masked_fill(self == 0., 0.)", r"\bar{y}\,\ln(1 + b)")}
    shift = 1


def _number_like(backend, number, like):
    """A Python number as a 0-d array of ``like``'s dtype (so ``float32`` data stays ``float32``)."""
    return backend.full((), number, _dtype.from_any(like.dtype), backend.device_of(like))


def _x_log(nodes, input, other):
    both, number_first, number_second = nodes
    if not isinstance(input, Tensor):
        return number_first.apply(other, input, number_first.shift)
    if not isinstance(other, Tensor):
        return number_second.apply(input, other, number_second.shift)
    return both.apply(input, other, both.shift)


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (entropy terms ``p log p`` without NaNs)."""
    return _x_log((XlogyBackward0, XlogyBackward1, XlogyBackward2), input, other)


def xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input`` is 0 (``torch.special.xlog1py``)."""
    return _x_log((SpecialXlog1PyBackward0, SpecialXlog1PyBackward1, SpecialXlog1PyBackward2), input, other)


# -- sinc, angles --------------------------------------------------------------------------------------------
class SincBackward0(OpFunction):
    """``sin(πx) / (πx)``, 1 at 0; its derivative ``(cos(πx) πx - sin(πx)) / (π x²)``, 0 at 0."""

    inputs = ("self",)
    derivatives = {"self": ("sinc_backward(grad, self)", r"\bar{y}\,\frac{\pi x \cos \pi x - \sin \pi x}{\pi x^{2}}")}

    def forward(ctx, self):
        ctx.save(self=self)
        backend = self._backend
        data = float_data(self)
        half = self.dtype is _dtype.float16
        if half:  # PyTorch's kernel computes a half in float (sinc(1.) is -0., not the 3e-4 of half arithmetic)
            data = backend.astype(data, _dtype.float32)
        angle = backend.mul(data, math.pi)
        zero = backend.eq(data, 0)
        safe = backend.where(zero, 1.0, angle)
        out = backend.where(zero, 1.0, backend.div(backend.sin(safe), safe))
        return backend.astype(out, self.dtype) if half else out

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        angle = backend.mul(self, math.pi)
        squared = backend.mul(backend.mul(self, self), math.pi)
        zero = backend.eq(squared, 0)  # PyTorch's test: pi x^2 == 0 (so also where x^2 underflows)
        numerator = backend.sub(backend.mul(angle, backend.cos(angle)), backend.sin(angle))
        out = backend.div(backend.mul(grad, numerator), backend.where(zero, 1.0, squared))  # C++: grad * (...) / ...
        return backend.where(zero, 0.0, out)

    def backward_graph(ctx, grad):
        """PyTorch's ``sinc_backward``: ``where(x == 0, 0, grad * ((πx cos(πx) - sin(πx)) / (π x²)))``, each
        ``πx`` its own MulBackward1, as its C++ writes them."""
        from gradviz.ops.comparison import where

        self = ctx.saved_graph("self")
        pi = math.pi
        numerator = MulBackward1.apply(self, pi) * MulBackward1.apply(self, pi).cos() - MulBackward1.apply(self, pi).sin()
        squared = MulBackward1.apply(self * self, pi)
        out = grad * (numerator / squared)
        return where(Tensor._make(ctx.backend.eq(squared._data, 0), backend=ctx.backend), 0, out)


def sinc(input):
    return SincBackward0.apply(input)


class Deg2RadBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("deg2rad_backward(grad)", r"\bar{y}\,\pi / 180")}
    factor = math.pi / 180

    def forward(ctx, self, factor):
        return self._backend.mul(float_data(self), factor)

    def backward(ctx, grad):
        return ctx.backend.mul(grad, type(ctx).factor)

    def backward_graph(ctx, grad):
        return MulBackward1.apply(grad, type(ctx).factor)


class Rad2DegBackward0(Deg2RadBackward0):
    derivatives = {"self": ("rad2deg_backward(grad)", r"\bar{y}\,180 / \pi")}
    factor = 180 / math.pi


def deg2rad(input):
    return _angle(Deg2RadBackward0, input)


def rad2deg(input):
    return _angle(Rad2DegBackward0, input)


def _angle(node, input):
    return node.apply(input, node.factor)


# -- heaviside: a step, with no derivative in PyTorch -----------------------------------------------------------
def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero. PyTorch defines no derivative: the node is ``NotImplemented``."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    backend = input._backend
    a, b = input._data, values._data
    step = backend.astype(backend.gt(a, 0), input.dtype)
    out = backend.where(backend.eq(a, 0), b, step)
    out = backend.astype(backend.where(backend.isnan(a), a, out) if input.dtype.is_floating_point else out, input.dtype)
    return without_derivative(NotImplemented, out, (input, values), "heaviside")


# -- logit with eps ------------------------------------------------------------------------------------------
def logit(input, eps=None):
    """``log(p / (1 - p))``, ``p`` first clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    from gradviz.ops.loss import LogitBackward0

    return LogitBackward0.apply(input, eps)


# -- special functions: erfc, erfinv, lgamma, digamma, entr ---------------------------------------------------
# Computed in float64 one element at a time (``math``'s erfc and lgamma; digamma, its derivative and erfinv
# by the series and iterations below), then cast to the input's dtype: tutorial sizes, not a math library.
def _elementwise(function, tensor):
    """``function`` of each element of ``tensor`` (as floating point), in the tensor's float dtype."""
    import numpy as np

    backend = tensor._backend
    data = float_data(tensor)
    values = np.asarray(backend.to_numpy(data), dtype=np.float64)
    out = np.array([function(v) for v in values.reshape(-1).tolist()], dtype=np.float64).reshape(values.shape)
    return backend.array(out, _dtype.from_any(data.dtype), backend.device_of(data))


def _digamma(x: float) -> float:
    """ψ(x) = d/dx ln Γ(x): the recurrence ψ(x) = ψ(x + 1) - 1/x up to x ≥ 6, then the asymptotic series."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    if x == 0:
        return math.copysign(math.inf, -x)
    if x < 0:
        if x == round(x):
            return math.nan
        return _digamma(1 - x) - math.pi / math.tan(math.pi * x)
    result = 0.0
    while x < 6:
        result -= 1 / x
        x += 1
    inverse_square = 1 / (x * x)
    series = inverse_square * (1 / 12 - inverse_square * (1 / 120 - inverse_square * (
        1 / 252 - inverse_square * (1 / 240 - inverse_square * (1 / 132)))))
    return result + math.log(x) - 0.5 / x - series


def _trigamma(x: float) -> float:
    """ψ'(x), the derivative of digamma (PyTorch's ``polygamma(1, x)``)."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return 0.0
    if x <= 0 and x == round(x):
        return math.inf
    if x < 0:
        return -_trigamma(1 - x) + (math.pi / math.sin(math.pi * x)) ** 2
    result = 0.0
    while x < 6:
        result += 1 / (x * x)
        x += 1
    inverse = 1 / x
    square = inverse * inverse
    series = inverse + square / 2 + inverse * square * (1 / 6 - square * (1 / 30 - square * (
        1 / 42 - square * (1 / 30 - square * 5 / 66))))
    return result + series


def _erfinv(y: float) -> float:
    """The x with erf(x) = y, by Newton steps: on erf near 0, on erfc(|x|) = 1 - |y| near ±1 (where 1 - |y|
    is exact, so the tail keeps its relative precision)."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    slope = 2 / math.sqrt(math.pi)
    if abs(y) < 0.9:
        x = y * (math.sqrt(math.pi) / 2) * (1 + math.pi * y * y / 12)
        for _ in range(50):
            step = (math.erf(x) - y) / (slope * math.exp(-x * x))
            x -= step
            if abs(step) <= 1e-16 * abs(x):
                break
        return x
    tail = 1 - abs(y)
    t = math.sqrt(-math.log(tail * math.sqrt(math.pi) * math.sqrt(-math.log(tail))))  # erfc(t) ~ e^{-t²}/(t√π)
    for _ in range(100):
        step = (math.erfc(t) - tail) / (-slope * math.exp(-t * t))
        t -= step
        if abs(step) <= 1e-16 * t:
            break
    return math.copysign(t, y)


def _lgamma(x: float) -> float:
    """ln |Γ(x)|: +inf at the poles (0, -1, -2 ...) and at ±inf, NaN for NaN."""
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    return math.lgamma(x)


class ErfcBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("-2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad", r"-\bar{y}\,\tfrac{2}{\sqrt{\pi}}\,e^{-x^{2}}")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _elementwise(math.erfc, self)

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        return backend.mul(backend.mul(backend.exp(backend.neg(backend.mul(self, self))), -2 / math.sqrt(math.pi)), grad)

    def backward_graph(ctx, grad):
        return MulBackward1.apply((-(ctx.saved_graph("self").pow(2))).exp(), -2 / math.sqrt(math.pi)) * grad


class ErfinvBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("0.5 * sqrt(M_PI) * exp(self.erfinv().pow(2)) * grad",
                            r"\bar{y}\,\tfrac{\sqrt{\pi}}{2}\,e^{\mathrm{erfinv}(x)^{2}}")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _elementwise(_erfinv, self)

    def backward(ctx, grad):
        backend = ctx.backend
        inverse = _elementwise(_erfinv, Tensor._make(ctx.saved("self"), backend=backend))
        return backend.mul(backend.mul(backend.exp(backend.mul(inverse, inverse)), 0.5 * math.sqrt(math.pi)), grad)

    def backward_graph(ctx, grad):
        return MulBackward1.apply(erfinv(ctx.saved_graph("self")).pow(2).exp(), 0.5 * math.sqrt(math.pi)) * grad


class LgammaBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * digamma(self)", r"\bar{y}\,\psi(x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _elementwise(_lgamma, self)

    def backward(ctx, grad):
        return ctx.backend.mul(grad, _elementwise(_digamma, Tensor._make(ctx.saved("self"), backend=ctx.backend)))

    def backward_graph(ctx, grad):
        return grad * digamma(ctx.saved_graph("self"))


class DigammaBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * polygamma(1, self)", r"\bar{y}\,\psi'(x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _elementwise(_digamma, self)

    def backward(ctx, grad):
        return ctx.backend.mul(grad, _elementwise(_trigamma, Tensor._make(ctx.saved("self"), backend=ctx.backend)))


class SpecialEntrBackward0(OpFunction):
    """The entropy term ``-x ln x`` (0 at 0, -inf below 0)."""

    inputs = ("self",)
    derivatives = {"self": ("grad * (-(1 + self.log()))", r"-\bar{y}\,(1 + \ln x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _elementwise(lambda v: math.nan if math.isnan(v) else -math.inf if v < 0 else 0.0 if v == 0 else
                            -v * math.log(v) if not math.isinf(v) else -math.inf, self)

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.mul(grad, backend.neg(backend.add(backend.log(ctx.saved("self")), 1)))

    def backward_graph(ctx, grad):
        return grad * -(AddBackward1.apply(ctx.saved_graph("self").log(), 1))


def _bessel_series(x: float, order: int) -> float:
    """The modified Bessel function I₀ or I₁: ``Σ (x/2)^(2k+order) / (k! (k+order)!)``, summed until the terms stop
    mattering (they grow until k ≈ |x|/2, then fall fast; the series converges for every x)."""
    if math.isnan(x):
        return x
    if math.isinf(x):
        return math.inf if order == 0 or x > 0 else -math.inf
    half = x / 2
    term = 1.0 if order == 0 else half
    total, k = term, 0
    while True:
        k += 1
        term *= half * half / (k * (k + order))
        total += term
        if math.isinf(total) or (k > abs(half) and abs(term) <= 1e-17 * abs(total)):
            return total


def _i0(x: float) -> float:
    return _bessel_series(x, 0)


def _i1(x: float) -> float:
    return _bessel_series(x, 1)


class I0Backward0(OpFunction):
    """The modified Bessel function of the first kind, order 0; its derivative is I₁."""

    inputs = ("self",)
    derivatives = {"self": ("grad * at::special_i1(self)", r"\bar{y}\,I_1(x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return _elementwise(_i0, self)

    def backward(ctx, grad):
        return ctx.backend.mul(grad, _elementwise(_i1, Tensor._make(ctx.saved("self"), backend=ctx.backend)))


def i0(input):
    return I0Backward0.apply(input)


def erfc(input):
    return ErfcBackward0.apply(input)


def erfinv(input):
    return ErfinvBackward0.apply(input)


def lgamma(input):
    return LgammaBackward0.apply(input)


def digamma(input):
    return DigammaBackward0.apply(input)


def entr(input):
    return SpecialEntrBackward0.apply(input)


def ndtr(input):
    """The standard normal CDF, as PyTorch composes it: ``(1 + erf(x / √2)) * 0.5``."""
    from gradviz.ops.elementwise import erf

    return MulBackward1.apply(AddBackward1.apply(erf(MulBackward1.apply(input, math.sqrt(0.5))), 1), 0.5)
