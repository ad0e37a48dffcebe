"""Two-operand math from PyTorch's docs that tutorials reach for: ``fmax``/``fmin`` (NaN-ignoring),
``copysign``, ``nextafter``, ``float_power``, ``true_divide``, ``floor_divide`` (and ``//``), ``dist``.

``float_power`` and ``true_divide`` are PyTorch's composites (a float64 ``pow``; ``div``); ``floor_divide``
has no derivative in PyTorch (its node is ``NotImplemented``, as ``heaviside``'s). Numpy has these
functions under the same names; the ops run them on the promoted operands.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import broadcast_shapes, meta, promote, shape_of, to_input
from gradviz.ops.kernels import check_binary
from gradviz.ops.no_derivative import NotImplemented, without_derivative
from gradviz.tensor import Tensor


def _numpy(backend, value):
    return value if isinstance(value, (int, float, bool)) else np.asarray(backend.to_numpy(value))


def _array(backend, values, dtype, like):
    """A numpy result as the backend's array of ``dtype``, on ``like``'s device."""
    return backend.array(np.asarray(values), dtype, backend.device_of(like))


def _operands(name: str, input, other):
    """Both operands' data promoted to PyTorch's result dtype, the result dtype, and the backend;
    PyTorch's TypeError when neither is a tensor or one is not a number."""
    for value, argument, position in ((input, "input", 1), (other, "other", 2)):
        if not isinstance(value, (Tensor, int, float)):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    broadcast_shapes(shape_of(input), shape_of(other))
    tensors = tuple(v for v in (input, other) if isinstance(v, Tensor))
    numbers = tuple(v for v in (input, other) if not isinstance(v, Tensor))
    backend = tensors[0]._backend
    return backend, _dtype.result_type(tensors, numbers), promote(input, other)


def _grads(ctx, first, second):
    backend = ctx.backend
    needs = ctx.needs_input_grad
    return tuple(to_input(backend, g, m) if g is not None and need else None
                 for g, m, need in zip((first, second), ctx.metas, needs))


# -- fmax, fmin: the larger (smaller) of two, and the number where the other is NaN ----------------------------
class FmaxBackward0(OpFunction):
    """``fmax(a, b)``: the larger, ignoring a NaN. A tie, and a NaN ``b``, send the whole gradient to ``a``
    (``maximum`` splits a tie in half)."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad.masked_fill((self >= other).logical_or_(other.isnan()).logical_not_(), 0)",
                            r"\bar{y}\,[a \ge b \lor b = \text{NaN}]"),
                   "other": ("grad.masked_fill((self >= other).logical_or_(other.isnan()), 0)",
                             r"\bar{y}\,[\lnot(a \ge b \lor b = \text{NaN})]")}
    pick = staticmethod(np.fmax)
    keeps_self = staticmethod(np.greater_equal)
    name_of_function = "fmax"

    def forward(ctx, self, other, kind):
        """``kind``: this class or FminBackward0 (``ctx`` is no node when nothing is recorded)."""
        backend, dtype, (a, b) = _operands(kind.name_of_function, self, other)
        ctx.save(other=other, self=self)
        ctx.metas = (meta(self), meta(other))
        return _array(backend, kind.pick(_numpy(backend, a), _numpy(backend, b)), dtype, self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        self, other = (_numpy(backend, v) for v in ctx.saved("self", "other"))
        to_self = np.logical_or(ctx.keeps_self(self, other), np.isnan(other))
        grad_values = _numpy(backend, grad)
        pieces = (np.where(to_self, grad_values, 0).astype(grad_values.dtype),
                  np.where(to_self, 0, grad_values).astype(grad_values.dtype))
        return _grads(ctx, *(_array(backend, p, _dtype.from_any(grad.dtype), grad) for p in pieces))


class FminBackward0(FmaxBackward0):
    """``fmin(a, b)``: the smaller, ignoring a NaN; a tie and a NaN ``b`` send the gradient to ``a``."""

    derivatives = {"self": ("grad.masked_fill((self <= other).logical_or_(other.isnan()).logical_not_(), 0)",
                            r"\bar{y}\,[a \le b \lor b = \text{NaN}]"),
                   "other": ("grad.masked_fill((self <= other).logical_or_(other.isnan()), 0)",
                             r"\bar{y}\,[\lnot(a \le b \lor b = \text{NaN})]")}
    pick = staticmethod(np.fmin)
    keeps_self = staticmethod(np.less_equal)
    name_of_function = "fmin"


def _check_tensors(name: str, input, other) -> None:
    for value, argument, position in ((input, "input", 1), (other, "other", 2)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


def fmax(input, other):
    _check_tensors("fmax", input, other)
    return FmaxBackward0.apply(input, other, FmaxBackward0)


def fmin(input, other):
    _check_tensors("fmin", input, other)
    return FminBackward0.apply(input, other, FminBackward0)


# -- copysign: |a| with b's sign -----------------------------------------------------------------------------
def _float_result(dtype):
    return dtype if dtype.is_floating_point else _dtype.default_float


def _copysign_self_grad(ctx, grad):
    """``grad · result / self``, 0 where ``self`` is 0 (PyTorch's copysign_tensor_self_backward)."""
    backend = ctx.backend
    self, result = (_numpy(backend, v) for v in ctx.saved("self", "result"))
    with np.errstate(all="ignore"):
        ratio = np.where(self == 0, 0, result / np.where(self == 0, 1, self))
    values = _numpy(backend, grad) * ratio.astype(result.dtype)
    return _array(backend, values, _dtype.from_any(grad.dtype), grad)


class CopysignBackward0(OpFunction):
    """``copysign(a, b)``: ``|a|`` with the sign of ``b``. Its gradient for ``a`` is ±1 (the sign it kept or
    flipped, 0 at ``a = 0``); ``b`` only chooses a sign, so its gradient is 0."""

    _result_name = "result"
    inputs = ("self", "other")
    derivatives = {"self": ("copysign_tensor_self_backward(grad, self, result)",
                            r"\bar{y}\,y / a\ (0 \text{ where } a = 0)"),
                   "other": ("zeros_like(other)", "0")}

    def forward(ctx, self, other):
        backend, dtype, (a, b) = _operands("copysign", self, other)
        ctx.save(self=self)
        ctx.metas = (meta(self), meta(other))
        dtype = _float_result(dtype)
        values = np.copysign(np.asarray(_numpy(backend, a), dtype=np.dtype(dtype.numpy)),
                             np.asarray(_numpy(backend, b), dtype=np.dtype(dtype.numpy)))
        return _array(backend, values, dtype, self._data)

    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        first = _copysign_self_grad(ctx, grad) if needs[0] else None
        second = ctx.backend.zeros_like(grad) if needs[1] else None
        return _grads(ctx, first, second)


class CopysignBackward1(OpFunction):
    """``copysign(a, number)``: ``|a|`` with the number's sign; the gradient for ``a`` as above."""

    _result_name = "result"
    inputs = ("self",)
    derivatives = {"self": ("copysign_tensor_self_backward(grad, self, result)",
                            r"\bar{y}\,y / a\ (0 \text{ where } a = 0)")}

    def forward(ctx, self, other):
        backend, dtype, (a, _) = _operands("copysign", self, other)
        ctx.save(self=self)
        dtype = _float_result(dtype)
        values = np.copysign(np.asarray(_numpy(backend, a), dtype=np.dtype(dtype.numpy)), float(other))
        return _array(backend, values, dtype, self._data)

    def backward(ctx, grad):
        return _copysign_self_grad(ctx, grad)


def copysign(input, other):
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}), but expected one of:\n * (Tensor input, Tensor other, *, Tensor out = "
                        "None)\n * (Tensor input, Number other, *, Tensor out = None)\n")
    if isinstance(other, Tensor):
        return CopysignBackward0.apply(input, other)
    _operands("copysign", input, other)
    return CopysignBackward1.apply(input, other)


# -- nextafter: the next float after a, towards b -------------------------------------------------------------
class NextafterBackward0(OpFunction):
    """``nextafter(a, b)``: the float next to ``a`` in the direction of ``b``. PyTorch passes the gradient
    straight to ``a`` (the step is one ulp) and sends ``b`` zeros."""

    inputs = ("self", "other")
    derivatives = {"self": ("grad", r"\bar{y}"), "other": ("zeros_like(other)", "0")}

    def forward(ctx, self, other):
        backend, dtype, (a, b) = _operands("nextafter", self, other)
        ctx.save(other=other, self=self)  # PyTorch saves both, though its formula reads neither
        ctx.metas = (meta(self), meta(other))
        return _array(backend, np.nextafter(_numpy(backend, a), _numpy(backend, b)), dtype, self._data)

    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        return _grads(ctx, grad if needs[0] else None, ctx.backend.zeros_like(grad) if needs[1] else None)


def nextafter(input, other):
    _check_tensors("nextafter", input, other)
    check_binary("nextafter_cpu", input, other, floating=True)
    return NextafterBackward0.apply(input, other)


# -- float_power, true_divide: PyTorch's composites ----------------------------------------------------------
def float_power(input, exponent):
    """``pow`` in float64: each tensor operand cast first (ToCopyBackward0 unless already float64), then
    PowBackward0 (a number exponent), PowBackward1 (a tensor exponent) or PowBackward2 (a number base)."""
    from gradviz.ops.arithmetic import pow as _pow

    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"float_power(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")

    def wide(value):
        if isinstance(value, Tensor):
            return value if value.dtype is _dtype.float64 else value.to(_dtype.float64)
        return float(value)

    return _pow(wide(input), wide(exponent))


def true_divide(input, other, *, out=None):
    """``div``: PyTorch's alias."""
    from gradviz.ops.arithmetic import div

    return div(input, other) if out is None else div(input, other, out=out)


def floor_divide(input, other):
    """``floor(a / b)`` rounded as Python rounds ``//`` (numpy's ``floor_divide`` is the same algorithm).
    PyTorch defines no derivative: the node is ``NotImplemented``; an integer division by 0 raises."""
    check_binary("div_floor_cpu", input, other, boolean=False)
    backend, dtype, (a, b) = _operands("floor_divide", input, other)
    a_values, b_values = _numpy(backend, a), _numpy(backend, b)
    if not dtype.is_floating_point and np.any(np.asarray(b_values) == 0):
        raise RuntimeError("ZeroDivisionError")
    target = np.dtype(dtype.numpy)
    with np.errstate(all="ignore"):
        values = np.floor_divide(np.asarray(a_values, dtype=target), np.asarray(b_values, dtype=target))
    like = input if isinstance(input, Tensor) else other
    data = _array(backend, values, dtype, like._data)
    return without_derivative(NotImplemented, data, tuple(v for v in (input, other) if isinstance(v, Tensor)),
                              "floor_divide")


def rfloor_divide(self, other):
    """``number // tensor``."""
    return floor_divide(other, self)


# -- dist: the p-norm of a - b ---------------------------------------------------------------------------------
def _p_norm(values, p: float, axis=None):
    """``‖values‖_p`` along ``axis`` (all of them by default): p = 0 counts the nonzero elements, ±inf takes
    the largest (smallest) magnitude."""
    magnitude = np.abs(values)
    if p == 0:
        return np.sum(magnitude != 0, axis=axis).astype(values.dtype)
    if p == math.inf:
        return np.max(magnitude, axis=axis, initial=0)
    if p == -math.inf:
        return np.min(magnitude, axis=axis)
    if p == 1:
        return np.sum(magnitude, axis=axis)
    if p == 2:
        return np.sqrt(np.sum(magnitude * magnitude, axis=axis))
    return np.sum(magnitude ** p, axis=axis) ** (1 / p)


def _p_norm_grad(difference, norm, p: float, split_ties: bool):
    """``∂‖d‖_p / ∂d``: 0 for p = 0, ``sign(d)`` for p = 1, ``d |d|^(p-2) / ‖d‖^(p-1)`` (0 where the norm is 0)
    for others; for ±inf ``sign(d)`` where ``|d|`` is the norm (shared among the ties when ``split_ties``, as
    ``norm``'s backward does; ``cdist``'s gives each tie the whole)."""
    with np.errstate(all="ignore"):
        if p == 0:
            return np.zeros_like(difference)
        if p == 1:
            return np.sign(difference)
        if math.isinf(p):
            hit = (np.abs(difference) == norm).astype(difference.dtype)
            if split_ties:
                hit = hit / np.sum(hit, axis=-1, keepdims=True)
            return np.sign(difference) * hit
        if p == 2:
            return np.where(norm == 0, 0, difference / norm)
        scaled = np.sign(difference) * np.abs(difference) ** (p - 1) / norm ** (p - 1)
        return np.where((norm == 0) | (difference == 0), 0, scaled)  # below p = 1, |0|^(p-1) is inf: PyTorch's 0


class DistBackward0(OpFunction):
    """``dist(a, b, p) = ‖a - b‖_p`` over all elements (broadcast): its gradient for ``a`` is the norm's,
    ``∂‖d‖/∂d``, and for ``b`` the same negated."""

    _result_name = "result"
    inputs = ("self", "other")
    derivatives = {"self": ("norm_backward(grad, self - other, p, result)", r"\bar{y}\,\partial\|a - b\|_p / \partial a"),
                   "other": ("-norm_backward(grad, self - other, p, result).sum_to_size(other.sizes())",
                             r"-\bar{y}\,\partial\|a - b\|_p / \partial a")}

    def forward(ctx, self, other, p=2):
        backend, dtype, (a, b) = _operands("dist", self, other)
        if not dtype.is_floating_point:
            raise RuntimeError("norm(): input dtype should be either floating point or complex. Got "
                               f"{_dtype.SCALAR_TYPE_NAMES[dtype.name]} instead.")
        ctx.save(other=other, p=p, self=self)
        ctx.metas = (meta(self), meta(other))
        difference = _numpy(backend, a) - _numpy(backend, b)
        return _array(backend, _p_norm(difference, p), dtype, self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        self, other, p, result = ctx.saved("self", "other", "p", "result")
        difference = _numpy(backend, self) - _numpy(backend, other)
        local = _p_norm_grad(difference.reshape(-1), _numpy(backend, result), p, True).reshape(difference.shape)
        first = (_numpy(backend, grad) * local).astype(difference.dtype)
        dtype = _dtype.from_any(grad.dtype)
        needs = ctx.needs_input_grad
        return _grads(ctx, _array(backend, first, dtype, grad) if needs[0] else None,
                      _array(backend, -first, dtype, grad) if needs[1] else None)


def dist(input, other, p=2):
    _check_tensors("dist", input, other)
    from gradviz.ops.arithmetic import check_sub

    check_sub(input, other)  # ``dist`` is ``norm(input - other)``: subtraction's refusal of bools comes first
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"dist(): argument 'p' (position 3) must be Number, not {type(p).__name__}")
    return DistBackward0.apply(input, other, p)


def div_rounded(input, other, rounding_mode: str, out=None):
    """``torch.div(a, b, rounding_mode='floor' or 'trunc')``: integer dtypes stay integers; a float
    result records DivBackward2, whose gradients are 0 (a number ``b`` is saved as ``tensor(b)``)."""
    from gradviz.ops.elementwise import DivBackward2

    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    check_binary(f"div_{rounding_mode}_cpu", input, other, boolean=False)
    _operands("div", input, other)  # torch's TypeError for what is not a tensor or a number; broadcasting
    if not isinstance(input, Tensor):
        from gradviz.ops.arithmetic import _wrapped

        input = _wrapped(input)
    result = DivBackward2.apply(input, other, rounding_mode)
    if out is not None:
        from gradviz.ops.arithmetic import write_out

        return write_out("div", result, out)
    return result
