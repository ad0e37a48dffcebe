"""More elementwise math: logs and exponentials, rounding, the error function, inverse and hyperbolic
trigonometry, one-sided clamps, remainders, ``lerp``, ``addcmul``, ``hypot``, NaN tests.

Each class is PyTorch's node for the op, with the derivative of ``derivatives.yaml`` on arrays
(``backward``) and on Tensors (``backward_graph``, so that ``create_graph=True`` records it). The
rounding functions are flat almost everywhere: their gradient is zero, as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import float_data, promote
from gradviz.ops.arithmetic import AddBackward1, MulBackward1, _binary_grads, _binary_operands, _graph_grads
from gradviz.tensor import Tensor

LN2, LN10 = 0.6931471805599453, 2.3025850929940456  # the constants of derivatives.yaml, as written there
TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)


def _needed_grads(ctx, first, second):
    """``_binary_grads`` of the formulas ``needs_input_grad`` asks for (each a thunk, run only then)."""
    needs = ctx.needs_input_grad
    return _binary_grads(ctx, first() if needs[0] else None, second() if needs[1] else None)


# -- logs and exponentials ----------------------------------------------------------------------------
class Log1PBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("log1p_backward(grad, self)", r"\bar{y} / (1 + x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.log1p(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.div(grad, ctx.backend.add(ctx.saved("self"), 1))

    def backward_graph(ctx, grad):
        return grad / AddBackward1.apply(ctx.saved_graph("self"), 1)


class Expm1Backward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * (result.conj() + 1)", r"\bar{y}\,(y + 1)")}

    def forward(ctx, self):
        ctx.save_result()
        return self._backend.expm1(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.mul(grad, ctx.backend.add(ctx.saved("result"), 1))

    def backward_graph(ctx, grad):
        return grad * AddBackward1.apply(ctx.saved_graph("result"), 1)


class Log2Backward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad / (self.conj() * 0.6931471805599453)", r"\bar{y} / (x \ln 2)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.log2(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.div(grad, ctx.backend.mul(ctx.saved("self"), LN2))

    def backward_graph(ctx, grad):
        return grad / MulBackward1.apply(ctx.saved_graph("self"), LN2)


class Log10Backward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad / (self.conj() * 2.3025850929940456)", r"\bar{y} / (x \ln 10)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.log10(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.div(grad, ctx.backend.mul(ctx.saved("self"), LN10))

    def backward_graph(ctx, grad):
        return grad / MulBackward1.apply(ctx.saved_graph("self"), LN10)


class RsqrtBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("-0.5 * grad * result.pow(3).conj()", r"-\tfrac{1}{2}\,\bar{y}\,y^{3}")}

    def forward(ctx, self):
        ctx.save_result()
        backend = self._backend
        return backend.reciprocal(backend.sqrt(float_data(self)))

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        return backend.mul(backend.mul(grad, -0.5), backend.mul(backend.mul(result, result), result))

    def backward_graph(ctx, grad):
        return MulBackward1.apply(grad, -0.5) * ctx.saved_graph("result").pow(3)


class ErfBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad", r"\bar{y}\,\tfrac{2}{\sqrt{\pi}}\,e^{-x^{2}}")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.erf(float_data(self))

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        return backend.mul(backend.mul(backend.exp(backend.neg(backend.mul(self, self))), TWO_OVER_ROOT_PI), grad)

    def backward_graph(ctx, grad):
        return MulBackward1.apply((-(ctx.saved_graph("self").pow(2))).exp(), TWO_OVER_ROOT_PI) * grad


# -- inverse and hyperbolic trigonometry ------------------------------------------------------------------
class AsinBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * (-self * self + 1).rsqrt().conj()", r"\bar{y} / \sqrt{1 - x^{2}}")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.asin(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.div(grad, _root_one_minus_square(ctx.backend, ctx.saved("self")))

    def backward_graph(ctx, grad):
        self = ctx.saved_graph("self")
        return grad * AddBackward1.apply(-self * self, 1).rsqrt()


class AcosBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * -((-self * self + 1).rsqrt()).conj()", r"-\bar{y} / \sqrt{1 - x^{2}}")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.acos(float_data(self))

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.neg(backend.div(grad, _root_one_minus_square(backend, ctx.saved("self"))))

    def backward_graph(ctx, grad):
        self = ctx.saved_graph("self")
        return grad * -(AddBackward1.apply(-self * self, 1).rsqrt())


def _root_one_minus_square(backend, x):
    return backend.sqrt(backend.sub(1, backend.mul(x, x)))


class AtanBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad / (self * self + 1).conj()", r"\bar{y} / (1 + x^{2})")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.atan(float_data(self))

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        return backend.div(grad, backend.add(backend.mul(self, self), 1))

    def backward_graph(ctx, grad):
        self = ctx.saved_graph("self")
        return grad / AddBackward1.apply(self * self, 1)


class SinhBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * self.cosh().conj()", r"\bar{y}\cosh x")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.sinh(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.mul(grad, ctx.backend.cosh(ctx.saved("self")))

    def backward_graph(ctx, grad):
        return grad * ctx.saved_graph("self").cosh()


class CoshBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * self.sinh().conj()", r"\bar{y}\sinh x")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.cosh(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.mul(grad, ctx.backend.sinh(ctx.saved("self")))

    def backward_graph(ctx, grad):
        return grad * ctx.saved_graph("self").sinh()


class Atan2Backward0(OpFunction):
    """``atan2(y, x)``, the angle of the point (x, y): ``d/dy = x / (x² + y²)``, ``d/dx = -y / (x² + y²)``."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad * other / (self * self + other * other)", r"\bar{y}\,b / (a^{2} + b^{2})"),
                   "other": ("grad * -self / (self * self + other * other)", r"-\bar{y}\,a / (a^{2} + b^{2})")}

    def forward(ctx, self, other):
        _check_tensor("atan2", other)
        backend, a, b = _binary_operands(ctx, self, other)
        ctx.save(other=other, self=self)
        if not _dtype.result_type((self, other)).is_floating_point:
            a, b = (backend.astype(v, _dtype.default_float) for v in (a, b))
        return backend.atan2(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        squares = backend.add(backend.mul(self, self), backend.mul(other, other))
        recip = backend.where(backend.eq(squares, 0), 0.0, backend.reciprocal(squares))  # 0 at the origin
        scale = backend.mul(grad, recip)
        return _needed_grads(ctx, lambda: backend.mul(scale, other), lambda: backend.mul(scale, backend.neg(self)))

    def backward_graph(ctx, grad):
        self, other = ctx.saved_graph("self", "other")
        recip = (self * self + other * other).reciprocal()
        recip = recip.masked_fill(Tensor._make(ctx.backend.isinf(recip._data), backend=ctx.backend), 0)
        return _graph_grads(ctx, lambda: grad * other * recip, lambda: grad * -self * recip)


def _check_tensor(name: str, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(value).__name__}")


# -- rounding: flat almost everywhere, so the gradient is zero (frac passes it unchanged) -------------------
class _Rounding(OpFunction):
    """A rounding function (its forward is ``_rounded`` with its kernel's name)."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", "0")}

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        return Tensor._make(grad._backend.zeros_like(grad._data), backend=grad._backend)  # a constant: no graph


def _rounded(tensor, kernel: str, *params):
    """Integer (and bool) tensors come back unchanged, as a copy; floats are rounded."""
    if not tensor.dtype.is_floating_point:
        return tensor._backend.copy(tensor._data)
    return getattr(tensor._backend, kernel)(tensor._data, *params)


class FloorBackward0(_Rounding):
    def forward(ctx, self):
        return _rounded(self, "floor")


class CeilBackward0(_Rounding):
    def forward(ctx, self):
        return _rounded(self, "ceil")


class TruncBackward0(_Rounding):
    def forward(ctx, self):
        return _rounded(self, "trunc")


class RoundBackward0(_Rounding):
    def forward(ctx, self):
        return _rounded(self, "round")


class RoundBackward1(_Rounding):
    """``round(x, decimals=d)``: rounded at the ``d``-th digit after the point."""

    def forward(ctx, self, decimals):
        return _rounded(self, "round", decimals)


class SignBackward0(_Rounding):
    def forward(ctx, self):
        if self.dtype is _dtype.bool:
            return self._backend.copy(self._data)
        return self._backend.sign(self._data)


class _SlopeOne(OpFunction):
    """A sawtooth (``frac``, a remainder by a number): slope 1 between the jumps, so the gradient
    passes unchanged (its forward is the subclass's)."""

    inputs = ("self",)
    derivatives = {"self": ("grad", r"\bar{y}")}

    def backward(ctx, grad):
        return grad

    def backward_graph(ctx, grad):
        return grad


class FracBackward0(_SlopeOne):
    def forward(ctx, self):
        backend = self._backend
        return backend.sub(self._data, backend.trunc(self._data))


# -- one-sided clamps ---------------------------------------------------------------------------------------
class ClampMinBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("where(self >= min, grad, at::scalar_tensor(0., grad.options()))", r"\bar{y}\,[x \ge \min]")}

    def forward(ctx, self, min):
        ctx.save(min=min, self=self)
        return self._backend.maximum(self._data, min)

    def backward(ctx, grad):
        return ctx.backend.where(_kept(ctx, "min", "ge"), grad, 0.0)

    def backward_graph(ctx, grad):
        return _where_kept(ctx, _kept(ctx, "min", "ge"), grad)


class ClampMaxBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("where(self <= max, grad, at::scalar_tensor(0., grad.options()))", r"\bar{y}\,[x \le \max]")}

    def forward(ctx, self, max):
        ctx.save(max=max, self=self)
        return self._backend.minimum(self._data, max)

    def backward(ctx, grad):
        return ctx.backend.where(_kept(ctx, "max", "le"), grad, 0.0)

    def backward_graph(ctx, grad):
        return _where_kept(ctx, _kept(ctx, "max", "le"), grad)


def _kept(ctx, bound: str, relation: str):
    """Where the saved input was on the kept side of the saved bound (a bool array)."""
    self, value = ctx.saved("self", bound)
    return getattr(ctx.backend, relation)(self, value)


def _where_kept(ctx, mask, grad):
    """``where(mask, grad, 0)`` recorded (WhereBackward0), as PyTorch's formula writes it."""
    from gradviz.ops.comparison import where

    return where(Tensor._make(mask, backend=ctx.backend), grad, 0.0)


# -- remainders -------------------------------------------------------------------------------------------------
class RemainderBackward0(_SlopeOne):
    """``x % c`` for a number ``c``: a sawtooth of slope 1."""

    def forward(ctx, self, other):
        return self._backend.remainder(*promote(self, other))


class FmodBackward0(RemainderBackward0):
    """``fmod(x, c)`` for a number ``c``: the remainder with the sign of ``x``, slope 1."""

    def forward(ctx, self, other):
        return self._backend.fmod(*promote(self, other))


class RemainderBackward1(OpFunction):
    """``a % b`` for tensors: ``a - floor(a / b) * b``, so ``d/db = -floor(a / b)``."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("-grad * self.div(other, rounding_mode=\"floor\")",
                                                         r"-\bar{y}\,\lfloor a / b \rfloor")}
    rounding = "floor"

    def forward(ctx, self, other):
        backend, a, b = _binary_operands(ctx, self, other)
        ctx.save(other=other, self=self)
        return backend.remainder(a, b)

    def backward(ctx, grad):
        backend = ctx.backend
        self, other = ctx.saved("self", "other")
        quotient = getattr(backend, ctx.rounding)(backend.div(self, other))
        return _needed_grads(ctx, lambda: grad, lambda: backend.mul(backend.neg(grad), quotient))

    def backward_graph(ctx, grad):
        self, other = ctx.saved_graph("self", "other")

        def other_grad():  # -grad * self.div(other, rounding_mode=...): C++ builds the right operand first
            quotient = DivBackward2.apply(self, other, ctx.rounding)
            return -grad * quotient

        return _graph_grads(ctx, lambda: grad, other_grad)



class FmodBackward1(RemainderBackward1):
    """``fmod(a, b)`` for tensors: ``a - trunc(a / b) * b``, so ``d/db = -trunc(a / b)``."""

    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("-grad * self.div(other, rounding_mode=\"trunc\")",
                                                         r"-\bar{y}\,\mathrm{trunc}(a / b)")}
    rounding = "trunc"

    def forward(ctx, self, other):
        backend, a, b = _binary_operands(ctx, self, other)
        ctx.save(other=other, self=self)
        return backend.fmod(a, b)


class DivBackward2(OpFunction):
    """``a.div(b, rounding_mode='floor' or 'trunc')``: a step function of both, so both gradients are 0.
    Only a recorded backward of ``remainder`` and ``fmod`` by a tensor makes it here."""

    inputs = ("self", "other")
    derivatives = {"self": ("zeros_like(grad)", "0"), "other": ("zeros_like(grad)", "0")}
    wrapped_numbers = ("other",)  # ``x.div(2, rounding_mode=...)`` saves the number as tensor(2)

    def forward(ctx, self, other, rounding_mode):
        backend, a, b = _binary_operands(ctx, self, other)
        # as PyTorch's generated code: self is kept only for other's derivative (it shows None otherwise)
        ctx.save(other=other, rounding_mode=rounding_mode, self=self if ctx.needs_input_grad[1:] == (True,) else None)
        return rounded_quotient(backend, a, b, rounding_mode)

    def backward(ctx, grad):
        return _needed_grads(ctx, lambda: ctx.backend.zeros_like(grad), lambda: ctx.backend.zeros_like(grad))

    def backward_graph(ctx, grad):
        """PyTorch's ``zeros_like(grad)``: zeros with no history."""
        from gradviz.ops.activation import _zeros_like

        return _graph_grads(ctx, lambda: _zeros_like(ctx, grad), lambda: _zeros_like(ctx, grad))


def rounded_quotient(backend, a, b, rounding_mode: str):
    """``a / b`` rounded as PyTorch's ``div_floor``/``div_trunc`` kernels round it: integers divided
    exactly (a division by 0 raises, as PyTorch's does), floats floored as Python's ``//`` (numpy's
    ``floor_divide`` is that algorithm) or truncated after a true division."""
    a_values = a if isinstance(a, (int, float)) else np.asarray(backend.to_numpy(a))
    b_values = b if isinstance(b, (int, float)) else np.asarray(backend.to_numpy(b))
    dtype = (b_values if isinstance(a_values, (int, float)) else a_values).dtype  # (promoted already)
    integral = dtype.kind in "iub"
    if integral and np.any(np.asarray(b_values) == 0):
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(all="ignore"):
        quotient = np.floor_divide(a_values, b_values)
        if rounding_mode == "trunc":
            if integral:  # toward zero: one more where the floor went below a quotient with a remainder
                quotient = quotient + ((np.remainder(a_values, b_values) != 0) & ((a_values < 0) != (b_values < 0)))
            else:
                quotient = np.trunc(np.true_divide(a_values, b_values))
    like = b if isinstance(a, (int, float)) else a
    return backend.array(np.asarray(quotient, dtype=dtype), _dtype.from_any(dtype), backend.device_of(like))


# -- lerp, addcmul, hypot ---------------------------------------------------------------------------------------
class LerpBackward0(OpFunction):
    """``start + weight * (end - start)`` with a number ``weight``."""

    inputs = ("self", "end")
    derivatives = {"self": ("grad * (1 - weight.toDouble())", r"\bar{y}\,(1 - w)"),
                   "end": ("grad * weight", r"\bar{y}\,w")}

    def forward(ctx, self, end, weight):
        backend, start, stop = _binary_operands(ctx, self, end)
        ctx.save(weight=weight)
        return backend.lerp(start, stop, weight)

    def backward(ctx, grad):
        backend, weight = ctx.backend, ctx.saved("weight")
        return _needed_grads(ctx, lambda: backend.mul(grad, 1 - weight), lambda: backend.mul(grad, weight))

    def backward_graph(ctx, grad):
        weight = ctx.saved("weight")
        return _graph_grads(ctx, lambda: MulBackward1.apply(grad, 1 - weight), lambda: MulBackward1.apply(grad, weight))


class AddcmulBackward0(OpFunction):
    """``self + value * tensor1 * tensor2`` (Adam's update is written with it)."""

    inputs = ("self", "tensor1", "tensor2")
    derivatives = {"self": ("grad", r"\bar{y}"), "tensor1": ("grad * (tensor2 * value).conj()", r"\bar{y}\,v\,b"),
                   "tensor2": ("grad * (tensor1 * value).conj()", r"\bar{y}\,v\,a")}

    def forward(ctx, self, tensor1, tensor2, value=1):
        needs = ctx.needs_input_grad
        ctx.save(tensor1=tensor1 if needs[2:3] == (True,) else None,
                 tensor2=tensor2 if needs[1:2] == (True,) else None, value=value)
        ctx.shapes = tuple(tuple(t.shape) for t in (self, tensor1, tensor2))
        backend = self._backend
        product = backend.mul(*promote(tensor1, tensor2))
        return backend.add(*promote(self, Tensor._make(backend.mul(product, value) if value != 1 else product,
                                                       backend=backend)))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        tensor1, tensor2, value = ctx.saved("tensor1", "tensor2", "value")
        needs = ctx.needs_input_grad
        raw = (grad if needs[0] else None,
               backend.mul(grad, backend.mul(tensor2, value)) if needs[1] else None,
               backend.mul(grad, backend.mul(tensor1, value)) if needs[2] else None)
        return tuple(None if g is None else sum_to(backend, g, shape) for g, shape in zip(raw, ctx.shapes))

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        tensor1, tensor2, value = (ctx.saved_graph(name) for name in ("tensor1", "tensor2", "value"))
        needs = ctx.needs_input_grad
        raw = (grad if needs[0] else None, grad * MulBackward1.apply(tensor2, value) if needs[1] else None,
               grad * MulBackward1.apply(tensor1, value) if needs[2] else None)
        return tuple(None if g is None else sum_to_tensor(g, shape) for g, shape in zip(raw, ctx.shapes))


class HypotBackward0(OpFunction):
    """``√(a² + b²)``: ``d/da = a / result``, ``d/db = b / result``."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad * self / result", r"\bar{y}\,a / y"), "other": ("grad * other / result", r"\bar{y}\,b / y")}

    def forward(ctx, self, other):
        _check_tensor("hypot", other)
        backend, a, b = _binary_operands(ctx, self, other)
        ctx.save(other=other, self=self)
        ctx.save_result()
        return backend.sqrt(backend.add(backend.mul(a, a), backend.mul(b, b)))

    def backward(ctx, grad):
        backend = ctx.backend
        # unpacked in PyTorch's order (other, result, self), so an in-place change is reported
        # for the same tensor PyTorch names first
        other, result, self = ctx.saved("other", "result", "self")
        scale = backend.div(grad, result)
        return _needed_grads(ctx, lambda: backend.mul(scale, self), lambda: backend.mul(scale, other))

    def backward_graph(ctx, grad):
        other, result, self = ctx.saved_graph("other", "result", "self")
        return _graph_grads(ctx, lambda: grad * self / result, lambda: grad * other / result)


# -- NaN and infinity ---------------------------------------------------------------------------------------
class NanToNumBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * at::isfinite(self)", r"\bar{y}\,[x \text{ finite}]")}

    def forward(ctx, self, nan=0.0, posinf=None, neginf=None):
        ctx.save(self=self)
        if not self.dtype.is_floating_point:
            return self._backend.copy(self._data)
        # no posinf / neginf: the dtype's largest and smallest finite values (the backend's default)
        return self._backend.nan_to_num(self._data, nan if nan is not None else 0.0, posinf, neginf)

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.mul(grad, backend.isfinite(ctx.saved("self")))

    def backward_graph(ctx, grad):
        backend = ctx.backend
        return grad * Tensor._make(backend.isfinite(ctx.saved("self")), backend=backend)


def _test(name: str):
    def test(input):
        return Tensor._make(getattr(input._backend, name)(input._data), backend=input._backend)

    test.__name__ = name
    test.__doc__ = f"``{name}`` of every element: a bool tensor, never part of a graph."
    return test


isnan, isinf, isfinite = _test("isnan"), _test("isinf"), _test("isfinite")


# -- the functions --------------------------------------------------------------------------------------------
def log1p(input):
    return Log1PBackward0.apply(input)


def expm1(input):
    return Expm1Backward0.apply(input)


def log2(input):
    return Log2Backward0.apply(input)


def log10(input):
    return Log10Backward0.apply(input)


def rsqrt(input):
    return RsqrtBackward0.apply(input)


def erf(input):
    return ErfBackward0.apply(input)


def asin(input):
    return AsinBackward0.apply(input)


def acos(input):
    return AcosBackward0.apply(input)


def atan(input):
    return AtanBackward0.apply(input)


def sinh(input):
    return SinhBackward0.apply(input)


def cosh(input):
    return CoshBackward0.apply(input)


from gradviz.ops.comparison import _OVERLOADS, check_tensor_first  # noqa: E402
from gradviz.ops.kernels import check_binary  # noqa: E402  (a number first: PyTorch's error)


def atan2(input, other):
    check_tensor_first("atan2", input)
    return Atan2Backward0.apply(input, other)


def _no_bool(input, kernel: str) -> None:
    """PyTorch's rounding kernels have no loop for bool (numpy would give the bools back)."""
    if input.dtype is _dtype.bool:
        raise _dtype.not_implemented(kernel, _dtype.bool)


def floor(input):
    _no_bool(input, "floor_vml_cpu")
    return FloorBackward0.apply(input)


def ceil(input):
    _no_bool(input, "ceil_vml_cpu")
    return CeilBackward0.apply(input)


def trunc(input):
    _no_bool(input, "trunc_vml_cpu")
    return TruncBackward0.apply(input)


def round(input, *, decimals=None):
    """``round(x)`` is RoundBackward0; any ``decimals``, 0 included, is PyTorch's other overload (RoundBackward1)."""
    if decimals is not None:
        if not input.dtype.is_floating_point:
            kernel = "round_vml_cpu" if decimals == 0 else "round_cpu"
            raise _dtype.not_implemented(kernel, input.dtype)
        return RoundBackward1.apply(input, decimals)
    _no_bool(input, "round_vml_cpu")
    return RoundBackward0.apply(input)


def sign(input):
    return SignBackward0.apply(input)


def frac(input):
    if not input.dtype.is_floating_point:
        raise _dtype.not_implemented("frac_cpu", input.dtype)
    return FracBackward0.apply(input)


def clamp_min(input, min):
    if isinstance(min, Tensor):  # PyTorch's ClampMinBackward1 (ops/clamping.py)
        from gradviz.ops.clamping import ClampMinBackward1

        return ClampMinBackward1.apply(input, min)
    return ClampMinBackward0.apply(input, min)


def clamp_max(input, max):
    if isinstance(max, Tensor):  # PyTorch's ClampMaxBackward1 (ops/clamping.py)
        from gradviz.ops.clamping import ClampMaxBackward1

        return ClampMaxBackward1.apply(input, max)
    return ClampMaxBackward0.apply(input, max)


def remainder(input, other):
    if isinstance(other, (Tensor, int, float)):
        check_binary("remainder_cpu", input, other, boolean=False, divides=True)
    if not isinstance(input, Tensor):  # ``remainder(2.5, x)``: PyTorch's Scalar overload has no derivative
        return _number_remainder(input, other)
    if isinstance(other, Tensor):
        return RemainderBackward1.apply(input, other)
    return RemainderBackward0.apply(input, other)


def fmod(input, other):
    check_tensor_first("fmod", input, other, _OVERLOADS)
    if isinstance(other, (Tensor, int, float)):
        check_binary("fmod_cpu", input, other, boolean=False, divides=True)
    if isinstance(other, Tensor):
        return FmodBackward1.apply(input, other)
    return FmodBackward0.apply(input, other)


def _number_remainder(number, other):
    """``remainder(number, tensor)``: the node is PyTorch's
    ``NotImplemented`` with one edge, to ``other``."""
    from gradviz.grad_mode import no_grad
    from gradviz.ops.no_derivative import NotImplemented, without_derivative

    with no_grad():
        data = RemainderBackward1.apply(number, other)._data
    return without_derivative(NotImplemented, data, (other,), "remainder")


def lerp(input, end, weight):
    if isinstance(end, Tensor) and end.dtype is not input.dtype:
        names = _dtype.CPP_NAMES
        raise RuntimeError(f"expected dtype {names[input.dtype.name]} for `end` but got dtype {names[end.dtype.name]}")
    if not input.dtype.is_floating_point:
        raise _dtype.not_implemented("lerp_kernel_scalar", input.dtype)
    if isinstance(weight, Tensor):
        if weight.dtype is not input.dtype:
            names = _dtype.CPP_NAMES
            raise RuntimeError(f"expected dtype {names[input.dtype.name]} for `weight` but got dtype "
                               f"{names[weight.dtype.name]}")
        from gradviz.ops.statistics_more import LerpBackward1

        return LerpBackward1.apply(input, end, weight)
    return LerpBackward0.apply(input, end, weight)


def addcmul(input, tensor1, tensor2, *, value=1):
    return AddcmulBackward0.apply(input, tensor1, tensor2, value=value)


def hypot(input, other):
    check_tensor_first("hypot", input)
    if isinstance(other, Tensor):
        check_binary("hypot_cpu", input, other, floating=True)
    return HypotBackward0.apply(input, other)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    return NanToNumBackward0.apply(input, nan, posinf, neginf)


class Exp2Backward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * result.conj() * M_LN2", r"\bar{y}\,2^{x} \ln 2")}

    def forward(ctx, self):
        ctx.save_result()
        return self._backend.pow(2.0, float_data(self))

    def backward(ctx, grad):
        return ctx.backend.mul(ctx.backend.mul(grad, ctx.saved("result")), LN2)

    def backward_graph(ctx, grad):
        return MulBackward1.apply(grad * ctx.saved_graph("result"), LN2)


def exp2(input):
    return Exp2Backward0.apply(input)


def sgn(input):
    """The sign, as ``sign`` computes it for real numbers, recorded as PyTorch's SgnBackward0."""
    from gradviz.ops.double_backward import SgnBackward0

    if input.dtype is _dtype.bool:  # numpy's sign has no bool loop; PyTorch gives the bools back
        return input.clone()
    return SgnBackward0.apply(input)


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (a bool tensor); NaNs equal only with ``equal_nan``."""
    from gradviz.ops.comparison import check_same_dtype

    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    check_same_dtype(input, other)
    backend = input._backend
    a, b = promote(input, other)
    if input.dtype is _dtype.bool:  # bools are close when equal
        return Tensor._make(backend.eq(a, b), backend=backend)
    close = backend.le(backend.abs(backend.sub(a, b)), backend.add(backend.mul(backend.abs(b), rtol), atol))
    close = backend.logical_or(close, backend.eq(a, b))  # equal infinities are close
    if equal_nan:
        close = backend.logical_or(close, backend.logical_and(backend.isnan(a), backend.isnan(b)))
    return Tensor._make(close, backend=backend)
