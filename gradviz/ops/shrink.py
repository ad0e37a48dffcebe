"""The activations ``nn.functional`` still lacked: ``glu``, ``softshrink``, ``hardshrink``, ``threshold``
(``threshold_`` in place) and ``rrelu`` (random slopes in training, their mean in evaluation), each one
node with PyTorch's name.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.tensor import Tensor


def _numpy(backend, data):
    return np.asarray(backend.to_numpy(data))


def _array(backend, values, like):
    return backend.array(np.asarray(values), _dtype.from_any(like.dtype), backend.device_of(like))


def _floating(input, kernel: str):
    if not isinstance(input, Tensor):
        raise TypeError(f"{kernel.split('_')[0]}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise _dtype.not_implemented(kernel, input.dtype)


# -- glu: the first half gated by the sigmoid of the second ---------------------------------------------------
def _halves(values, dim: int):
    size = values.shape[dim] // 2
    return np.take(values, range(size), axis=dim), np.take(values, range(size, 2 * size), axis=dim)


def _sigmoid(values):
    return 1 / (1 + np.exp(-values))


class GluBackward0(OpFunction):
    """``glu(x) = a · σ(b)`` where ``a, b`` are the halves of ``x`` along ``dim``: the gradient of ``a`` is
    ``σ(b)``, of ``b`` is ``a σ(b) (1 - σ(b))``."""

    inputs = ("self",)
    derivatives = {"self": ("glu_backward(grad, self, dim)",
                            r"\bar{y}\,[\sigma(b)\ ;\ a\,\sigma(b)(1 - \sigma(b))]")}

    def forward(ctx, self, dim, given_dim):
        """``dim`` wrapped; ``given_dim`` as the caller wrote it (what PyTorch saves)."""
        ctx.save(dim=saved_dim(given_dim), self=self)
        ctx.wrapped_dim = dim
        backend = self._backend
        first, second = _halves(_numpy(backend, self._data), dim)
        with np.errstate(over="ignore"):
            return _array(backend, first * _sigmoid(second), self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        dim = ctx.wrapped_dim
        first, second = _halves(_numpy(backend, self), dim)
        grad_values = _numpy(backend, grad)
        with np.errstate(over="ignore"):
            gate = _sigmoid(second)
        pieces = (grad_values * gate, grad_values * first * gate * (1 - gate))
        return _array(backend, np.concatenate(pieces, axis=dim).astype(grad_values.dtype), grad)


def glu(input, dim: int = -1):
    """``a · sigmoid(b)``, ``a`` and ``b`` the two halves of ``input`` along ``dim`` (GluBackward0)."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    wrapped = wrap_dim(dim, input.ndim)
    if input.shape[wrapped] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {wrapped} is size {input.shape[wrapped]}")
    _floating(input, "glu_cpu")
    return GluBackward0.apply(input, wrapped, dim)


# -- soft and hard shrinkage -------------------------------------------------------------------------------
def _check_lambda(input, lambd) -> None:
    largest = {"float64": "1.79769e+308", "float16": "65504", "bfloat16": "3.38953e+38"}.get(input.dtype.name,
                                                                                             "3.40282e+38")
    if lambd < 0:
        kind = _dtype.SCALAR_TYPE_NAMES[input.dtype.name]
        raise RuntimeError(f"lambda must be in range [0, {largest}] for input dtype {kind}, but found {lambd:g}")


class SoftshrinkBackward0(OpFunction):
    """``x - λ`` above ``λ``, ``x + λ`` below ``-λ``, 0 between: the gradient passes outside ``[-λ, λ]``."""

    inputs = ("self",)
    derivatives = {"self": ("softshrink_backward(grad, self, lambd)", r"\bar{y}\,[|x| > \lambda]")}

    def forward(ctx, self, lambd=0.5):
        ctx.save(lambd=lambd, self=self)
        backend = self._backend
        x = _numpy(backend, self._data)
        values = np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0)).astype(x.dtype)  # -0. stays
        return _array(backend, np.where(np.isnan(x), x, values), self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        self, lambd = ctx.saved("self", "lambd")
        x, grad_values = _numpy(backend, self), _numpy(backend, grad)
        return _array(backend, np.where((x >= -lambd) & (x <= lambd), 0, grad_values).astype(grad_values.dtype), grad)


class HardshrinkBackward0(SoftshrinkBackward0):
    """``x`` outside ``[-λ, λ]``, 0 inside; the gradient passes where ``x`` did."""

    derivatives = {"self": ("hardshrink_backward(grad, self, lambd)", r"\bar{y}\,[|x| > \lambda]")}

    def forward(ctx, self, lambd=0.5):
        ctx.save(lambd=lambd, self=self)
        backend = self._backend
        x = _numpy(backend, self._data)
        return _array(backend, np.where((x >= -lambd) & (x <= lambd), 0, x).astype(x.dtype), self._data)


def softshrink(input, lambd: float = 0.5):
    _floating(input, "softshrink_check")
    _check_lambda(input, lambd)
    return SoftshrinkBackward0.apply(input, lambd)


def hardshrink(input, lambd: float = 0.5):
    _floating(input, "hardshrink_cpu")
    return HardshrinkBackward0.apply(input, lambd)


# -- threshold ---------------------------------------------------------------------------------------------
class ThresholdBackward0(OpFunction):
    """``x`` above the threshold, ``value`` elsewhere: the gradient passes where ``x > threshold``."""

    inputs = ("self",)
    derivatives = {"self": ("threshold_backward(grad, self, threshold)", r"\bar{y}\,[x > t]")}

    def forward(ctx, self, threshold, value):
        ctx.save(self=self, threshold=threshold)
        return _threshold(self, threshold, value)

    def backward(ctx, grad):
        self, threshold = ctx.saved("self", "threshold")
        return _threshold_backward(ctx.backend, grad, self, threshold)


class ThresholdBackward1(ThresholdBackward0):
    """``threshold_`` (in place): the same derivative, read from a copy of the input kept before it was
    overwritten (as PyTorch keeps one)."""


def _threshold(self, threshold, value):
    backend = self._backend
    x = _numpy(backend, self._data)
    return _array(backend, np.where(x > threshold, x, np.asarray(value).astype(x.dtype)), self._data)


def _threshold_backward(backend, grad, x, threshold):
    grad_values = _numpy(backend, grad)
    return _array(backend, np.where(_numpy(backend, x) <= threshold, 0, grad_values).astype(grad_values.dtype), grad)


def threshold(input, threshold, value, inplace: bool = False):
    """``input`` where it is above ``threshold``, ``value`` elsewhere (ThresholdBackward0; in place 1)."""
    if inplace:
        from gradviz.ops.inplace import apply_

        return apply_(input, ThresholdBackward1.apply, threshold, value)
    return ThresholdBackward0.apply(input, threshold, value)


# -- rrelu: a leaky ReLU with a random slope per negative element in training ------------------------------
class RreluWithNoiseBackward0(OpFunction):
    """``x`` where positive, ``r·x`` elsewhere. In training each element at or below 0 draws its slope
    ``r`` from U(lower, upper) (the ``noise``; 1 for the others) and the gradient is ``grad · noise``; in
    evaluation ``r`` is the mean slope ``(lower + upper) / 2``."""

    inputs = ("self",)
    derivatives = {"self": ("rrelu_with_noise_backward(grad, self, noise, lower, upper, training, false)",
                            r"\bar{y}\,([x > 0] + r\,[x \le 0])")}

    def forward(ctx, self, lower, upper, training, generator, in_place=False):
        """``in_place``: recorded as RreluWithNoiseBackward1, which saves the output, not the input."""
        backend = self._backend
        x = _numpy(backend, self._data)
        if training:
            from gradviz import random as _random

            negative = x <= 0
            generator = generator if generator is not None else _random.default_generator
            draws = _random.unit_uniform(generator, int(negative.sum()), np.float64) * (upper - lower) + lower
            noise = np.ones_like(x)
            noise[negative] = draws.astype(x.dtype)
            values = np.where(negative, x * noise, x)
            ctx.save(noise=Tensor._make(_array(backend, noise, self._data), backend=backend))
        else:
            slope = x.dtype.type((lower + upper) / 2)
            values = np.where(x > 0, x, x * slope)
            ctx.save(noise=Tensor._make(_array(backend, np.zeros_like(x), self._data), backend=backend))  # unused
        if not in_place:
            ctx.save(self=self)
        ctx.save(lower=lower, upper=upper, training=training)
        return _array(backend, values.astype(x.dtype), self._data)

    in_place = False

    def backward(ctx, grad):
        backend = ctx.backend
        self, noise, lower, upper, training = ctx.saved("result" if ctx.in_place else "self", "noise", "lower", "upper",
                                                        "training")
        grad_values = _numpy(backend, grad)
        if training and upper != lower:
            return _array(backend, (grad_values * _numpy(backend, noise)).astype(grad_values.dtype), grad)
        slope = grad_values.dtype.type((lower + upper) / 2)
        return _array(backend, np.where(_numpy(backend, self) > 0, grad_values, grad_values * slope), grad)


class RreluWithNoiseBackward1(RreluWithNoiseBackward0):
    """``rrelu_`` (in place): the input is overwritten, so the backward reads the output (whose sign is the
    input's: the slopes are positive)."""

    _result_name = "result"
    derivatives = {"self": ("rrelu_with_noise_backward(grad, result, noise, lower, upper, training, true)",
                            r"\bar{y}\,([y > 0] + r\,[y \le 0])")}
    in_place = True


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False,
          generator=None):
    """The randomized leaky ReLU (RreluWithNoiseBackward0); ``inplace=True`` writes it into ``input``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _floating(input, "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu")
    if inplace:
        from gradviz.ops.inplace import apply_

        return apply_(input, RreluWithNoiseBackward1.apply, lower, upper, training, generator, True)
    return RreluWithNoiseBackward0.apply(input, lower, upper, training, generator)
