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
from gradviz.ops.kernels import check_binary
from gradviz.ops.no_derivative import NotImplemented, _NoDerivative, without_derivative
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
    check_binary("logaddexp_cpu", input, other, floating=True)
    return LogaddexpBackward0.apply(input, other, LogaddexpBackward0)


def logaddexp2(input, other):
    _needs_tensor("logaddexp2", input, other)
    check_binary("logaddexp2_cpu", input, other, floating=True)
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
    from gradviz.ops.comparison import check_tensor_first

    check_tensor_first("heaviside", input)
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

    if not input.dtype.is_floating_point:  # an integer or bool tensor (never requires grad): the default float
        input = input.to(_dtype.default_float)
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
    """ψ(x) = d/dx ln Γ(x), as PyTorch computes it: the reflection ψ(x) = ψ(1 - x) - π / tan(πx) below 0, the
    recurrence ψ(x) = ψ(x + 1) - 1/x up to x ≥ 10 (ψ(10) exactly), then the asymptotic series in 1/x²."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    if x == 0:
        return math.copysign(math.inf, -x)
    if x < 0:
        if x == math.trunc(x):
            return math.nan
        return _digamma(1 - x) - math.pi / math.tan(math.pi * math.fmod(x, 1.0))
    result = 0.0
    while x < 10:
        result -= 1 / x
        x += 1
    if x == 10:
        return result + 2.25175258906672110764
    series = 0.0
    if x < 1e17:
        z = 1 / (x * x)
        polynomial = 0.0
        for coefficient in (1 / 12, -691 / 32760, 1 / 132, -1 / 240, 1 / 252, -1 / 120, 1 / 12):  # B₂ₖ / 2k
            polynomial = polynomial * z + coefficient
        series = z * polynomial
    return result + math.log(x) - 0.5 / x - series


def _trigamma(x: float) -> float:
    """ψ'(x), the derivative of digamma (PyTorch's ``polygamma(1, x)``), as PyTorch computes it: the reflection
    ψ'(x) = π² / sin²(πx) - ψ'(1 - x) below ½, six steps of ψ'(x) = ψ'(x + 1) + 1/x², then four terms of the
    asymptotic series (so its values, like PyTorch's, are good to about 1e-10 near x = 0.5)."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return 0.0
    sign, result = 1.0, 0.0
    if x < 0.5:
        sign = -1.0
        sine = math.sin(math.pi * x)
        if sine == 0:
            return math.inf
        result -= (math.pi * math.pi) / (sine * sine)
        x = 1 - x
    for _ in range(6):
        result += 1 / (x * x)
        x += 1
    square = 1 / (x * x)
    result += (1 + 1 / (2 * x) + square * (1 / 6 - square * (1 / 30 - square * (1 / 42)))) / x
    return sign * result


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


# -- torch.special's extras: scaled Bessel functions, polygamma, multigammaln, ndtri, log_ndtr, erfcx, zeta,
# the regularized incomplete gamma functions. As above, each is computed in float64 one element at a time
# (series, asymptotic expansions, continued fractions written out below) and cast to the input's dtype.
SQRT_PI = math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2 * math.pi)


def _scaled_bessel(x: float, order: int) -> float:
    """``e^{-|x|} I₀(x)`` or ``e^{-|x|} I₁(x)``: the series up to |x| = 30, then the asymptotic expansion
    ``e^{-x} I_ν(x) ≈ (2πx)^{-1/2} Σ (-1)^k a_k(ν) / x^k`` (whose terms are tiny there long before they grow)."""
    if math.isnan(x):
        return x
    size = abs(x)
    if size <= 30:
        return math.exp(-size) * _bessel_series(x, order)
    mu = 4.0 * order * order
    term = total = 1.0
    for k in range(1, 60):
        term *= -(mu - (2 * k - 1) ** 2) / (k * 8.0 * size)
        total += term
        if abs(term) <= 1e-17 * abs(total):
            break
    value = total / math.sqrt(2 * math.pi * size)
    return -value if order == 1 and x < 0 else value


def _i0e(x: float) -> float:
    return _scaled_bessel(x, 0)


def _i1e(x: float) -> float:
    return _scaled_bessel(x, 1)


# (2k)! / B_2k for k = 1 .. 12: the Euler-Maclaurin corrections of the Hurwitz zeta sum
_ZETA_EULER_MACLAURIN = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                         -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                         1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta(s: float, q: float) -> float:
    """The Hurwitz zeta function ``Σ_k (k + q)^{-s}``: the first terms summed (at least 9, until ``k + q > 9``),
    the tail by the Euler-Maclaurin formula. ``s = 1`` is inf, ``s < 1`` NaN, as in PyTorch."""
    if math.isnan(s) or math.isnan(q):
        return math.nan
    if s == 1:
        return math.inf
    if s < 1:
        return math.nan
    if q <= 0:
        if q == math.floor(q):
            return math.inf
        if s != math.floor(s):
            return math.nan  # q^-s has no real value
    total = q ** -s
    a, i, b = q, 0, 0.0
    while i < 9 or a <= 9:
        i += 1
        a += 1.0
        b = a ** -s
        total += b
        if abs(b / total) < 1.1102230246251565e-16:
            return total
    w = a
    total += b * w / (s - 1) - 0.5 * b
    factor, k = 1.0, 0.0
    for constant in _ZETA_EULER_MACLAURIN:
        factor *= s + k
        b /= w
        term = factor * b / constant
        total += term
        if abs(term / total) < 1.1102230246251565e-16:
            break
        k += 1.0
        factor *= s + k
        b /= w
        k += 1.0
    return total


def _polygamma(n: int, x: float) -> float:
    """``ψ⁽ⁿ⁾(x)``: digamma and trigamma for n = 0, 1; beyond, ``(-1)^{n+1} n! ζ(n + 1, x)`` as PyTorch writes it."""
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _trigamma(x)
    return (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * _zeta(n + 1.0, x)


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def _ndtri(p: float) -> float:
    """The x with Φ(x) = p: a rational first guess (Acklam's), then Newton steps on Φ, computed through erfc so
    that tiny p keep their relative precision; above ½ the mirror image of ``1 - p`` (exact there)."""
    if math.isnan(p) or p < 0 or p > 1:
        return math.nan
    if p == 0:
        return -math.inf
    if p == 1:
        return math.inf
    if p > 0.5:
        return -_ndtri(1.0 - p)
    if p > 0.02425:
        q = p - 0.5
        r = q * q
        x = (((((-3.969683028665376e+01 * r + 2.209460984245205e+02) * r - 2.759285104469687e+02) * r
               + 1.383577518672690e+02) * r - 3.066479806614716e+01) * r + 2.506628277459239e+00) * q / (
            ((((-5.447609879822406e+01 * r + 1.615858368580409e+02) * r - 1.556989798598866e+02) * r
              + 6.680131188771972e+01) * r - 1.328068155288572e+01) * r + 1)
    else:
        q = math.sqrt(-2 * math.log(p))
        x = (((((-7.784894002430293e-03 * q - 3.223964580411365e-01) * q - 2.400758277161838e+00) * q
               - 2.549732539343734e+00) * q + 4.374664141464968e+00) * q + 2.938163982698783e+00) / (
            (((7.784695709041462e-03 * q + 3.224671290700398e-01) * q + 2.445134137142996e+00) * q
             + 3.754408661907416e+00) * q + 1)
    for _ in range(4):
        density = math.exp(-0.5 * x * x) / SQRT_2PI
        if density == 0:
            break
        step = (_normal_cdf(x) - p) / density
        x -= step / (1 + 0.5 * x * step)  # Halley's correction: Φ'' = -x φ
        if abs(step) <= 1e-16 * abs(x):
            break
    return x


def _square_split(x: float) -> tuple:
    """``x²`` as ``hi + lo`` exactly (Dekker's product), so ``exp(x²)`` loses nothing to the rounding of ``x²``."""
    split = 134217729.0 * x
    high = split - (split - x)
    low = x - high
    square = x * x
    return square, ((high * high - square) + 2 * high * low) + low * low


def _erfcx(x: float) -> float:
    """``e^{x²} erfc(x)``: directly below x = 3 (with x² split exactly), by the continued fraction
    ``1 / (√π (x + ½ / (x + 1 / (x + 3/2 / (x + ...)))))`` above; for negative x, ``2 e^{x²} - erfcx(-x)``."""
    if math.isnan(x):
        return x
    if x < 0:
        high, low = _square_split(x)
        if high > 709.0:  # e^{x²} overflows
            return math.inf
        return 2 * math.exp(high) * (1 + low) - _erfcx(-x)
    if x < 3:
        high, low = _square_split(x)
        return math.exp(high) * (1 + low) * math.erfc(x)
    if x > 1e8:
        return 1 / (SQRT_PI * x)
    tail = x
    for k in range(120 if x < 6 else 50, 0, -1):
        tail = x + (k / 2) / tail
    return 1 / (SQRT_PI * tail)


def _log_ndtr(x: float) -> float:
    """``ln Φ(x)``, as PyTorch computes it: through erfcx below -1 (where Φ underflows), else ``log1p(-erfc/2)``."""
    t = x * math.sqrt(0.5)
    if x < -1:
        return math.log(_erfcx(-t) / 2) - t * t
    return math.log1p(-math.erfc(t) / 2)


def _gamma_prefactor(a: float, x: float) -> float:
    return math.exp(a * math.log(x) - x - math.lgamma(a))


def _gamma_series(a: float, x: float) -> float:
    """The regularized lower incomplete gamma P(a, x) by its power series (for x < a + 1)."""
    term = total = 1.0 / a
    n = a
    for _ in range(10000):
        n += 1
        term *= x / n
        total += term
        if abs(term) < abs(total) * 1e-17:
            break
    return total * _gamma_prefactor(a, x)


def _gamma_fraction(a: float, x: float) -> float:
    """The regularized upper incomplete gamma Q(a, x) by its continued fraction (modified Lentz; x ≥ a + 1)."""
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return _gamma_prefactor(a, x) * h


def _gammainc(a: float, x: float, upper: bool) -> float:
    """P(a, x) (``upper``: Q(a, x) = 1 - P): NaN for negative arguments, PyTorch's values at the edges."""
    if math.isnan(a) or math.isnan(x) or a < 0 or x < 0:
        return math.nan
    if a == 0:
        if x > 0:
            return 0.0 if upper else 1.0
        return math.nan
    if x == 0:
        return 1.0 if upper else 0.0
    if math.isinf(a):
        return math.nan if math.isinf(x) else (1.0 if upper else 0.0)
    if math.isinf(x):
        return 0.0 if upper else 1.0
    if x < a + 1:
        lower = _gamma_series(a, x)
        return 1 - lower if upper else lower
    tail = _gamma_fraction(a, x)
    return tail if upper else 1 - tail


def _saved_tensor(ctx, name):
    return Tensor._make(ctx.saved(name), backend=ctx.backend)


class SpecialI0EBackward0(OpFunction):
    """``e^{-|x|} I₀(x)``: its derivative is ``i1e(x) - sgn(x) i0e(x)``."""

    inputs = ("self",)
    derivatives = {"self": ("grad * (at::special_i1e(self) - self.sgn() * result)",
                            r"\bar{y}\,(\mathrm{i1e}(x) - \mathrm{sgn}(x)\,y)")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        return _elementwise(_i0e, self)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        i1e = _elementwise(_i1e, Tensor._make(self, backend=backend))
        return backend.mul(grad, backend.sub(i1e, backend.mul(backend.sign(self), result)))


def _tiny_safe(backend, self):
    """PyTorch's guard at 0 (where the formulas divide by x): ``|x| > eps`` and ``x`` with eps put at the rest."""
    eps = _EPSILON.get(_dtype.from_any(self.dtype).name, 2.0 ** -52)
    not_tiny = backend.gt(backend.abs(self), eps)
    return not_tiny, backend.where(not_tiny, self, eps)


_EPSILON = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


class SpecialI1Backward0(OpFunction):
    """The modified Bessel function I₁: its derivative is ``I₀(x) - I₁(x) / x`` (½ at 0)."""

    inputs = ("self",)
    derivatives = {"self": ("i1_backward(grad, self, result)", r"\bar{y}\,(I_0(x) - y / x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        return _elementwise(_i1, self)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        not_tiny, safe = _tiny_safe(backend, self)
        local = backend.sub(_elementwise(_i0, Tensor._make(safe, backend=backend)), backend.div(result, safe))
        return backend.mul(grad, backend.where(not_tiny, local, 0.5))


class SpecialI1EBackward0(OpFunction):
    """``e^{-|x|} I₁(x)``: its derivative is ``i0e(x) - y (sgn(x) + 1/x)`` (½ at 0)."""

    inputs = ("self",)
    derivatives = {"self": ("i1e_backward(grad, self, result)", r"\bar{y}\,(\mathrm{i0e}(x) - y\,(\mathrm{sgn}(x) + 1/x))")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        return _elementwise(_i1e, self)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        not_tiny, safe = _tiny_safe(backend, self)
        i0e = _elementwise(_i0e, Tensor._make(safe, backend=backend))
        local = backend.sub(i0e, backend.mul(result, backend.add(backend.sign(safe), backend.div(1.0, safe))))
        return backend.mul(grad, backend.where(not_tiny, local, 0.5))


class PolygammaBackward0(OpFunction):
    """``ψ⁽ⁿ⁾(x)``: its derivative is ``ψ⁽ⁿ⁺¹⁾(x)``."""

    inputs = ("self",)
    derivatives = {"self": ("grad * polygamma(n + 1, self)", r"\bar{y}\,\psi^{(n+1)}(x)")}

    def forward(ctx, self, n):
        ctx.save(n=n, self=self)
        return _elementwise(lambda v: _polygamma(n, v), self)

    def backward(ctx, grad):
        n = ctx.saved("n")
        return ctx.backend.mul(grad, _elementwise(lambda v: _polygamma(n + 1, v), _saved_tensor(ctx, "self")))


def _multigammaln(p: int):
    offsets = [-p * 0.5 + 0.5 + 0.5 * j for j in range(p)]  # PyTorch's arange(-p/2 + 1/2, 1/2, 1/2)
    constant = p * (p - 1) * math.log(math.pi) / 4

    def value(x: float) -> float:
        return sum(math.lgamma(x + offset) if x + offset > 0 or x + offset != math.floor(x + offset) else math.inf
                   for offset in offsets) + constant

    def derivative(x: float) -> float:
        return sum(_digamma(x + offset) for offset in offsets)

    return value, derivative


class MvlgammaBackward0(OpFunction):
    """The multivariate log-gamma ``ln Γ_p(x) = p(p-1)/4 ln π + Σ_j ln Γ(x - j/2)``: its derivative is ``Σ_j ψ(x - j/2)``."""

    inputs = ("self",)
    derivatives = {"self": ("mvlgamma_backward(grad, self, p)", r"\bar{y}\,\sum_{j<p} \psi(x - j/2)")}

    def forward(ctx, self, p):
        ctx.save(p=p, self=self)
        return _elementwise(_multigammaln(p)[0], self)

    def backward(ctx, grad):
        derivative = _multigammaln(ctx.saved("p"))[1]
        return ctx.backend.mul(grad, _elementwise(derivative, _saved_tensor(ctx, "self")))


class SpecialNdtriBackward0(OpFunction):
    """The normal quantile ``Φ⁻¹(p)``: its derivative is ``√(2π) e^{y²/2}``."""

    inputs = ("self",)
    derivatives = {"self": ("grad * std::sqrt(2 * M_PI) * (result.square() / 2).exp()", r"\bar{y}\,\sqrt{2\pi}\,e^{y^2/2}")}

    def forward(ctx, self):
        ctx.save_result()
        return _elementwise(_ndtri, self)

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        return backend.mul(backend.mul(grad, SQRT_2PI), backend.exp(backend.div(backend.mul(result, result), 2)))


class SpecialLogNdtrBackward0(OpFunction):
    """``ln Φ(x)``: its derivative is ``φ(x) / Φ(x) = e^{-(y + x²/2)} / √(2π)``."""

    inputs = ("self",)
    derivatives = {"self": ("grad / std::sqrt(2 * M_PI) * (result + self.pow(2) / 2).neg().exp()",
                            r"\bar{y}\,e^{-(y + x^2/2)} / \sqrt{2\pi}")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        return _elementwise(_log_ndtr, self)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        exponent = backend.neg(backend.add(result, backend.div(backend.mul(self, self), 2)))
        return backend.mul(backend.div(grad, SQRT_2PI), backend.exp(exponent))


class SpecialErfcxBackward0(OpFunction):
    """The scaled complementary error function ``e^{x²} erfc(x)``: its derivative is ``2 x y - 2/√π``."""

    inputs = ("self",)
    derivatives = {"self": ("(2.0 * self * result - 2.0 / sqrt(M_PI)) * grad", r"\bar{y}\,(2 x y - 2/\sqrt{\pi})")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        return _elementwise(_erfcx, self)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        return backend.mul(backend.sub(backend.mul(backend.mul(self, result), 2.0), 2.0 / SQRT_PI), grad)


def _elementwise_pair(function, backend, a, b):
    """``function`` of each pair of (broadcast) elements, in float64, cast back to ``a``'s float dtype."""
    import numpy as np

    left = np.asarray(backend.to_numpy(a), dtype=np.float64)
    right = np.asarray(backend.to_numpy(b), dtype=np.float64)
    left, right = np.broadcast_arrays(left, right)
    out = np.array([function(u, v) for u, v in zip(left.reshape(-1).tolist(), right.reshape(-1).tolist())],
                   dtype=np.float64).reshape(left.shape)
    return backend.array(out, _dtype.from_any(a.dtype), backend.device_of(a))


def _not_implemented(name: str):
    raise NotImplementedError(f"the derivative for '{name}' is not implemented.")


def _zeta_other_grad(backend, grad, s, q):
    """``∂ζ(s, q)/∂q = -s ζ(s + 1, q)``."""
    shifted = _elementwise_pair(_zeta, backend, backend.add(s, 1.0), q)
    return backend.mul(backend.mul(grad, backend.neg(s)), shifted)


class SpecialZetaBackward0(OpFunction):
    """The Hurwitz zeta function ``ζ(s, q) = Σ_k (k + q)^{-s}``: ``∂ζ/∂q = -s ζ(s + 1, q)``; PyTorch has no
    derivative in ``s`` (backward raises its error). ``s`` and ``q`` are saved only when ``q`` needs a gradient."""

    inputs = ("self", "other")
    derivatives = {"self": ("not_implemented(\"zeta\")", r"\text{not implemented}"),
                   "other": ("grad * -self * special_zeta(self + 1., other)", r"-\bar{y}\,s\,\zeta(s + 1, q)")}

    def forward(ctx, self, other):
        backend, a, b = _floats(ctx, self, other)
        if ctx.needs_input_grad[1:] == (True,):
            ctx.save(other=other, self=self)
        else:
            ctx.save(other=None, self=None)
        return _elementwise_pair(_zeta, backend, a, b)

    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            _not_implemented("zeta")
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        return _binary_grads(ctx, None, _zeta_other_grad(backend, grad, self, other))


class SpecialZetaBackward1(OpFunction):
    """``zeta(number, tensor)``: the only edge is ``q``'s, ``∂ζ/∂q = -s ζ(s + 1, q)``."""

    inputs = ("other",)
    derivatives = {"other": ("grad * -self * special_zeta(self + 1., other)", r"-\bar{y}\,s\,\zeta(s + 1, q)")}

    def forward(ctx, other, self):
        ctx.save(other=other, self=self)
        data = float_data(other)
        return _elementwise_pair(_zeta, other._backend, _number_like(other._backend, self, data), data)

    def backward(ctx, grad):
        backend = ctx.backend
        other, self = ctx.saved("other", "self")
        return _zeta_other_grad(backend, grad, _number_like(backend, self, grad), other)


class SpecialZetaBackward2(_NoDerivative):
    """``zeta(tensor, number)``: the only edge is ``s``'s, which has no derivative (so, like the other nodes
    without one, it stays out of the op registry)."""

    aten_name = "zeta"
    inputs = ("self",)
    derivatives = {"self": ("not_implemented(\"zeta\")", r"\text{not implemented}")}

    def forward(ctx, self, other):
        data = float_data(self)
        return _elementwise_pair(_zeta, self._backend, data, _number_like(self._backend, other, data))


class IgammaBackward0(OpFunction):
    """The regularized lower incomplete gamma ``P(a, x)``: no derivative in ``a`` (PyTorch's error), and
    ``∂P/∂x = x^{a-1} e^{-x} / Γ(a)``."""

    inputs = ("self", "other")
    derivatives = {"self": ("not_implemented(\"igamma: input\")", r"\text{not implemented}"),
                   "other": ("grad * exp((self - 1) * log(other) - other - lgamma(self))",
                             r"\bar{y}\,x^{a-1} e^{-x} / \Gamma(a)")}
    upper = False

    def forward(ctx, self, other, upper):
        backend, a, b = _floats(ctx, self, other)
        if ctx.needs_input_grad[1:] == (True,):  # saved only for the one gradient PyTorch has
            ctx.save(other=other, self=self)
        else:
            ctx.save(other=None, self=None)
        return _elementwise_pair(lambda u, v: _gammainc(u, v, upper), backend, a, b)

    def backward(ctx, grad):
        if ctx.needs_input_grad[0]:
            _not_implemented("igammac: input" if ctx.upper else "igamma: input")
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        lgamma = _elementwise(math.lgamma, Tensor._make(self, backend=backend))
        exponent = backend.sub(backend.sub(backend.mul(backend.sub(self, 1), backend.log(other)), other), lgamma)
        local = backend.exp(exponent)
        return _binary_grads(ctx, None, backend.mul(grad, backend.neg(local) if ctx.upper else local))


class IgammacBackward0(IgammaBackward0):
    """The regularized upper incomplete gamma ``Q(a, x) = 1 - P(a, x)``: ``∂Q/∂x = -x^{a-1} e^{-x} / Γ(a)``."""

    derivatives = {"self": ("not_implemented(\"igammac: input\")", r"\text{not implemented}"),
                   "other": ("-grad * exp((self - 1) * log(other) - other - lgamma(self))",
                             r"-\bar{y}\,x^{a-1} e^{-x} / \Gamma(a)")}
    upper = True


# -- their functions -----------------------------------------------------------------------------------------
def i0e(input):
    return SpecialI0EBackward0.apply(input)


def i1(input):
    return SpecialI1Backward0.apply(input)


def i1e(input):
    return SpecialI1EBackward0.apply(input)


def polygamma(n, input):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"special_polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return PolygammaBackward0.apply(input, n)


def multigammaln(input, p: int):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return MvlgammaBackward0.apply(input, p)


def ndtri(input):
    return SpecialNdtriBackward0.apply(input)


def log_ndtr(input):
    return SpecialLogNdtrBackward0.apply(input)


def erfcx(input):
    return SpecialErfcxBackward0.apply(input)


def zeta(input, other):
    """The Hurwitz zeta function ``Σ_k (k + other)^{-input}`` (``other = 1``: Riemann's)."""
    if not isinstance(input, Tensor):
        return SpecialZetaBackward1.apply(other, input)
    if not isinstance(other, Tensor):
        return SpecialZetaBackward2.apply(input, other)
    return SpecialZetaBackward0.apply(input, other)


def gammainc(input, other):
    """The regularized lower incomplete gamma function ``P(input, other)``."""
    _needs_tensor("special_gammainc", input, other)
    return IgammaBackward0.apply(input, other, False)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P(input, other)``."""
    _needs_tensor("special_gammaincc", input, other)
    return IgammacBackward0.apply(input, other, True)
