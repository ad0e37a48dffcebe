"""Activation functions: softmax and log-softmax along one dimension, and the elementwise ones
that ``nn`` layers apply (leaky ReLU, GELU, SiLU, ELU/SELU/CELU, softplus, hardtanh/ReLU6,
log-sigmoid, mish, hardswish, hardsigmoid, PReLU).

Softmax and log-softmax subtract the row's maximum before exponentiating (the result is the same,
and ``exp`` cannot overflow), and save their own result: the backward formulas need only that.
The elementwise ones save their input, as PyTorch does, and compute as PyTorch's CPU kernels do;
their in-place variants (``leaky_relu_``, ``elu_``, ``celu_``) save their output instead, and the
second-order nodes a recorded backward pass makes (``GeluBackwardBackward0``, ...) are at the end.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import float_data, saved_dim, wrap_dim
from gradviz.ops.no_derivative import NotImplemented, without_derivative
from gradviz.tensor import Tensor


def _log_softmax(backend, values, axis):
    shifted = backend.sub(values, backend.amax(values, axis, keepdims=True))
    return backend.sub(shifted, backend.log(backend.sum(backend.exp(shifted), axis, keepdims=True)))


def _softmax_of(self, axis, log: bool):
    """(log_)softmax of ``self`` along ``axis``; half precision is computed in float32 and rounded once, as
    PyTorch's CPU kernels accumulate in float (in float16 throughout, most elements were an ulp off)."""
    backend = self._backend
    values = float_data(self)
    half = self.dtype is _dtype.float16
    if half:
        values = backend.astype(values, _dtype.float32)
    out = _log_softmax(backend, values, axis if self.ndim else None)
    if not log:
        out = backend.exp(out)
    return backend.astype(out, _dtype.float16) if half else out


class SoftmaxBackward0(OpFunction):
    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("_softmax_backward_data(grad, result, dim, self.scalar_type())",
                            r"y \odot (\bar{y} - \textstyle\sum_j \bar{y}_j y_j)")}

    def forward(ctx, self, dim):
        axis = ctx.axis = wrap_dim(dim, self.ndim)
        ctx.save(dim=saved_dim(dim))
        return _softmax_of(self, axis, log=False)

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        axis = ctx.axis if result.ndim else None
        weighted = backend.sum(backend.mul(grad, result), axis, keepdims=True)
        return backend.mul(result, backend.sub(grad, weighted))

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import SoftmaxBackwardDataBackward0

        return SoftmaxBackwardDataBackward0.apply(grad, ctx.saved_graph("result"), ctx.axis, ctx.saved("dim"))


class LogSoftmaxBackward0(OpFunction):
    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("_log_softmax_backward_data(grad, result, dim, self.scalar_type())",
                            r"\bar{y} - e^{y} \textstyle\sum_j \bar{y}_j")}

    def forward(ctx, self, dim):
        axis = ctx.axis = wrap_dim(dim, self.ndim)
        ctx.save(dim=saved_dim(dim))
        return _softmax_of(self, axis, log=True)

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        axis = ctx.axis if result.ndim else None
        return backend.sub(grad, backend.mul(backend.exp(result), backend.sum(grad, axis, keepdims=True)))

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import LogSoftmaxBackwardDataBackward0

        return LogSoftmaxBackwardDataBackward0.apply(grad, ctx.saved_graph("result"), ctx.axis, ctx.saved("dim"))


def _dim(dim, name: str):
    if dim is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    return dim


def _floating_input(input, dim, dtype, name: str):
    """``input`` cast to ``dtype`` if given; PyTorch's softmax kernels exist for floating point only (its
    kernel for the last dim has a name of its own)."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        last = wrap_dim(_dim(dim, name), max(input.ndim, 1)) == max(input.ndim, 1) - 1
        raise _dtype.not_implemented(f"{name}_{'lastdim_' if last else ''}kernel_impl", input.dtype)
    return input


def softmax(input, dim=None, *, dtype=None):
    return SoftmaxBackward0.apply(_floating_input(input, dim, dtype, "softmax"), _dim(dim, "softmax"))


def log_softmax(input, dim=None, *, dtype=None):
    return LogSoftmaxBackward0.apply(_floating_input(input, dim, dtype, "log_softmax"), _dim(dim, "log_softmax"))


# -- elementwise activations ---------------------------------------------------------------------------
def _floating(self, kernel: str):
    """The input's data; PyTorch's kernels for these functions exist for floating point only."""
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype.SCALAR_TYPE_NAMES[self.dtype.name]}\'')
    return self._data


class LeakyReluBackward0(OpFunction):
    """``x`` where ``x > 0``, else ``negative_slope · x``."""

    inputs = ("self",)
    derivatives = {"self": ("leaky_relu_backward(grad, self, negative_slope, false)",
                            r"\bar{y}\,([x > 0] + \alpha\,[x \le 0])")}

    def forward(ctx, self, negative_slope=0.01):
        x = _floating(self, "leaky_relu_cpu")
        ctx.save(negative_slope=negative_slope, self=self)
        backend = self._backend
        return backend.where(backend.gt(x, 0), x, backend.mul(x, negative_slope))

    def backward(ctx, grad):
        backend = ctx.backend
        x, slope = ctx.saved("self", "negative_slope")
        return _leaky_relu_backward(backend, grad, x, slope)

    def backward_graph(ctx, grad):
        return LeakyReluBackwardBackward0.apply(grad, *ctx.saved_graph("self", "negative_slope"))


def _leaky_relu_backward(backend, grad, x, slope):
    """``grad`` where ``x > 0``, ``slope · grad`` elsewhere."""
    return backend.where(backend.gt(x, 0), grad, backend.mul(grad, slope))


class LeakyReluBackwardBackward0(OpFunction):
    """``leaky_relu_backward(grad_output, self, negative_slope)``, the op a recorded backward pass of leaky_relu
    makes: linear in ``grad_output``; ``self`` only decides where the slope applies (its gradient is 0)."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("leaky_relu_backward(grad, self, negative_slope, false)",
                                   r"\bar{z}\,([x > 0] + \alpha\,[x \le 0])"),
                   "self": ("zeros_like(grad)", "0")}

    def forward(ctx, grad_output, self, negative_slope):
        ctx.save(negative_slope=negative_slope, self=self)
        return _leaky_relu_backward(grad_output._backend, grad_output._data, self._data, negative_slope)

    def backward(ctx, grad):
        backend = ctx.backend
        x, slope = ctx.saved("self", "negative_slope")
        return (_leaky_relu_backward(backend, grad, x, slope),
                backend.zeros_like(grad) if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        self, slope = ctx.saved_graph("self", "negative_slope")
        return (LeakyReluBackwardBackward0.apply(grad, self, slope) if ctx.needs_input_grad[0] else None,
                _zeros_like(ctx, grad) if ctx.needs_input_grad[1] else None)


def _zeros_like(ctx, grad):
    """PyTorch's ``zeros_like(grad)``: a zero gradient with no history."""
    return Tensor._make(ctx.backend.zeros_like(grad._data), backend=ctx.backend)


GELU_SQRT_2_OVER_PI = 0.7978845608028654  # √(2/π), PyTorch's kBeta for the tanh form
GELU_KAPPA = 0.044715
GELU_PDF_SCALE = 0.3989422804014327  # 1/√(2π): the normal density's constant


class GeluBackward0(OpFunction):
    """``x · Φ(x)``, Φ the standard normal CDF; ``approximate='tanh'`` uses
    ``Φ(x) ≈ (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2``."""

    inputs = ("self",)
    derivatives = {"self": ("gelu_backward(grad, self, approximate)", r"\bar{y}\,(\Phi(x) + x\,\varphi(x))")}

    def forward(ctx, self, approximate="none"):
        x = _floating(self, "GeluKernelImpl")
        ctx.save(approximate=approximate, self=self)
        backend = self._backend
        if approximate == "tanh":
            inner = backend.mul(backend.add(x, backend.mul(backend.mul(backend.mul(x, x), x), GELU_KAPPA)),
                                GELU_SQRT_2_OVER_PI)
            return backend.mul(backend.mul(x, 0.5), backend.add(backend.tanh(inner), 1.0))
        return backend.mul(x, backend.normal_cdf(x))

    def backward(ctx, grad):
        return _gelu_backward(ctx.backend, grad, *ctx.saved("self", "approximate"))

    def backward_graph(ctx, grad):
        return GeluBackwardBackward0.apply(grad, *ctx.saved_graph("self", "approximate"))


def _gelu_tanh_parts(backend, x):
    """``x²``, ``tanh(u)`` and ``u'`` for the tanh form, ``u = √(2/π) (x + 0.044715 x³)``."""
    square = backend.mul(x, x)
    inner = backend.mul(backend.add(x, backend.mul(backend.mul(square, x), GELU_KAPPA)), GELU_SQRT_2_OVER_PI)
    inner_derivative = backend.mul(backend.add(backend.mul(square, 3 * GELU_KAPPA), 1.0), GELU_SQRT_2_OVER_PI)
    return square, backend.tanh(inner), inner_derivative


def _gelu_density(backend, x):
    """φ(x), the standard normal density."""
    return backend.mul(backend.exp(backend.mul(backend.mul(x, x), -0.5)), GELU_PDF_SCALE)


def _gelu_backward(backend, grad, x, approximate):
    """``grad · (Φ(x) + x φ(x))``, or the tanh form's ``grad · (½(1 + t) + ½x(1 - t²)u')``."""
    if approximate == "tanh":
        _, tanh_inner, inner_derivative = _gelu_tanh_parts(backend, x)
        left_derivative = backend.mul(backend.add(tanh_inner, 1.0), 0.5)
        right_derivative = backend.mul(backend.mul(backend.mul(x, 0.5),
                                                   backend.sub(1.0, backend.mul(tanh_inner, tanh_inner))),
                                       inner_derivative)
        return backend.mul(grad, backend.add(left_derivative, right_derivative))
    return backend.mul(grad, backend.add(backend.normal_cdf(x), backend.mul(x, _gelu_density(backend, x))))


def _gelu_curvature(backend, x, approximate):
    """gelu''(x): ``φ(x)(2 - x²)``, or the tanh form's ``(1 - t²)(u' + ½x(u'' - 2t u'²))``."""
    if approximate == "tanh":
        _, tanh_inner, inner_derivative = _gelu_tanh_parts(backend, x)
        inner_second = backend.mul(x, 6 * GELU_KAPPA * GELU_SQRT_2_OVER_PI)
        bend = backend.sub(inner_second, backend.mul(backend.mul(tanh_inner, 2.0),
                                                     backend.mul(inner_derivative, inner_derivative)))
        return backend.mul(backend.sub(1.0, backend.mul(tanh_inner, tanh_inner)),
                           backend.add(inner_derivative, backend.mul(backend.mul(x, 0.5), bend)))
    return backend.mul(_gelu_density(backend, x), backend.sub(2.0, backend.mul(x, x)))


class SiluBackward0(OpFunction):
    """``x · σ(x)`` (also called swish)."""

    inputs = ("self",)
    derivatives = {"self": ("silu_backward(grad, self)", r"\bar{y}\,\sigma(x)\,(1 + x\,(1 - \sigma(x)))")}

    def forward(ctx, self):
        x = _floating(self, "silu_cpu")
        ctx.save(self=self)
        return self._backend.mul(x, self._backend.sigmoid(x))

    def backward(ctx, grad):
        backend = ctx.backend
        x = ctx.saved("self")
        sigmoid = backend.sigmoid(x)
        local = backend.mul(sigmoid, backend.add(backend.mul(x, backend.sub(1.0, sigmoid)), 1.0))
        return backend.mul(grad, local)

    def backward_graph(ctx, grad):
        """PyTorch's ``infinitely_differentiable_silu_backward``, op for op:
        ``grad * σ(x) * (1 + x * (1 - σ(x)))``."""
        from gradviz.ops.arithmetic import AddBackward1, SubBackward0

        x = ctx.saved_graph("self")
        sigmoid = x.sigmoid()
        inner = AddBackward1.apply(x * SubBackward0.apply(1.0, sigmoid), 1.0)
        return grad * sigmoid * inner


class EluBackward0(OpFunction):
    """``scale · x`` where ``x > 0``, else ``scale · alpha · (e^(input_scale·x) - 1)``: ELU (scales 1) and SELU
    (PyTorch's fixed alpha and scale, below)."""

    inputs = ("self",)
    derivatives = {"self": ("elu_backward(grad, alpha, scale, input_scale, false, self)",
                            r"\bar{y}\,([x > 0] + \alpha e^{x}\,[x \le 0])")}

    def forward(ctx, self, alpha=1.0, scale=1, input_scale=1):
        x = _floating(self, "elu_cpu")
        ctx.save(alpha=alpha, input_scale=input_scale, scale=scale, self=self)
        return _elu(self._backend, x, alpha, scale, input_scale)

    def backward(ctx, grad):
        return _elu_backward(ctx.backend, grad, *ctx.saved("self", "alpha", "scale", "input_scale"))

    def backward_graph(ctx, grad):
        return EluBackwardBackward0.apply(grad, *ctx.saved_graph("self", "alpha", "scale", "input_scale"))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class CeluBackward0(OpFunction):
    """``x`` where ``x > 0``, else ``alpha · (e^(x/alpha) - 1)``: an ELU whose negative side is scaled
    to stay continuously differentiable at 0 for any alpha."""

    inputs = ("self",)
    derivatives = {"self": ("elu_backward(grad, alpha, 1, 1.0/alpha, false, self)",
                            r"\bar{y}\,([x > 0] + e^{x/\alpha}\,[x \le 0])")}

    def forward(ctx, self, alpha=1.0):
        x = _floating(self, "elu_cpu")
        ctx.save(alpha=alpha, self=self)
        return _elu(self._backend, x, alpha, 1, 1.0 / alpha)

    def backward(ctx, grad):
        alpha = ctx.saved("alpha")
        return _elu_backward(ctx.backend, grad, ctx.saved("self"), alpha, 1, 1.0 / alpha)

    def backward_graph(ctx, grad):
        self, alpha = ctx.saved_graph("self", "alpha")
        return EluBackwardBackward0.apply(grad, self, alpha, 1, 1.0 / alpha)


def _elu(backend, x, alpha, scale=1, input_scale=1):
    """PyTorch's ELU kernel: ``x · scale`` where ``x > 0``, ``expm1(x · input_scale) · alpha · scale`` elsewhere.

    ``eᶻ - 1`` loses every digit for small z (it is 0 for z = -1e-20, and 0.1% off at -1e-5 in float32), so
    PyTorch uses ``expm1``; here it is ``tanh(z/2) · (eᶻ + 1)``, the same number to a few ulps."""
    z = x if input_scale == 1 else backend.mul(x, input_scale)
    expm1 = backend.mul(backend.tanh(backend.mul(z, 0.5)), backend.add(backend.exp(z), 1.0))
    negative = backend.mul(expm1, alpha * scale)
    return backend.where(backend.gt(x, 0), x if scale == 1 else backend.mul(x, scale), negative)


def _elu_backward(backend, grad, x, alpha, scale=1, input_scale=1):
    """``grad · scale`` where ``x > 0``, ``grad · alpha · scale · input_scale · e^(x · input_scale)`` elsewhere."""
    exponent = backend.exp(x if input_scale == 1 else backend.mul(x, input_scale))
    positive = grad if scale == 1 else backend.mul(grad, scale)
    # PyTorch's ``x <= 0 ? ... : grad · scale``: a NaN input passes ``grad · scale`` on
    return backend.where(backend.le(x, 0), backend.mul(grad, backend.mul(exponent, alpha * scale * input_scale)), positive)


def _elu_curvature(backend, x, alpha, scale=1, input_scale=1):
    """elu''(x): ``alpha · scale · input_scale² · e^(x · input_scale)`` where ``x < 0``, else 0 (0 at x = 0 too,
    as PyTorch's ``elu_double_backward`` has it)."""
    exponent = backend.exp(x if input_scale == 1 else backend.mul(x, input_scale))
    return backend.where(backend.lt(x, 0), backend.mul(exponent, alpha * scale * input_scale * input_scale), 0.0)


class SoftplusBackward0(OpFunction):
    """``log(1 + e^(beta·x)) / beta``, and ``x`` itself where ``beta · x > threshold`` (no overflow)."""

    inputs = ("self",)
    derivatives = {"self": ("softplus_backward(grad, self, beta, threshold)",
                            r"\bar{y}\,\sigma(\beta x)\ (1 \text{ where } \beta x > \text{threshold})")}

    def forward(ctx, self, beta=1, threshold=20):
        x = _floating(self, "softplus_cpu")
        ctx.save(beta=beta, self=self, threshold=threshold)
        backend = self._backend
        scaled = backend.mul(x, beta)
        soft = backend.div(backend.log1p(backend.exp(scaled)), beta)
        return backend.where(backend.gt(scaled, threshold), x, soft)

    def backward(ctx, grad):
        return _softplus_backward(ctx.backend, grad, *ctx.saved("self", "beta", "threshold"))

    def backward_graph(ctx, grad):
        return SoftplusBackwardBackward0.apply(grad, *ctx.saved_graph("self", "beta", "threshold"))


def _softplus_backward(backend, grad, x, beta, threshold):
    """``grad · σ(βx)`` (as ``grad · z / (z + 1)``, ``z = e^(βx)``), and ``grad`` where ``βx > threshold``."""
    scaled = backend.mul(x, beta)
    z = backend.exp(scaled)
    return backend.where(backend.gt(scaled, threshold), grad, backend.div(backend.mul(grad, z), backend.add(z, 1.0)))


def _softplus_curvature(backend, x, beta, threshold):
    """softplus''(x): ``β σ(βx)(1 - σ(βx))`` where ``βx < threshold``, else 0 (PyTorch's strict ``<``)."""
    scaled = backend.mul(x, beta)
    sigmoid = backend.sigmoid(scaled)
    bend = backend.mul(backend.mul(sigmoid, backend.sub(1.0, sigmoid)), beta)
    return backend.where(backend.lt(scaled, threshold), bend, 0.0)


class HardtanhBackward0(OpFunction):
    """``x`` clamped to ``[min_val, max_val]`` (ReLU6 is ``hardtanh(x, 0, 6)``); the gradient passes
    strictly inside the bounds."""

    inputs = ("self",)
    derivatives = {"self": ("hardtanh_backward(grad, self, min_val, max_val)",
                            r"\bar{y}\,[\min < x < \max]")}

    def forward(ctx, self, min_val=-1.0, max_val=1.0):
        ctx.save(max_val=max_val, min_val=min_val, self=self)
        backend = self._backend
        clamped = backend.minimum(backend.maximum(self._data, min_val), max_val)
        return clamped if self.dtype.is_floating_point else backend.astype(clamped, self.dtype)  # ints stay ints

    def backward(ctx, grad):
        backend = ctx.backend
        x, low, high = ctx.saved("self", "min_val", "max_val")
        return _hardtanh_backward(backend, grad, x, low, high)

    def backward_graph(ctx, grad):
        return HardtanhBackwardBackward0.apply(grad, *ctx.saved_graph("self", "min_val", "max_val"))


def _hardtanh_backward(backend, grad, x, low, high):
    """``grad`` where ``low < x < high``, 0 elsewhere (PyTorch's ``x <= low || x >= high ? 0 : grad``: a NaN
    input passes its gradient on)."""
    outside = backend.logical_or(backend.le(x, low), backend.ge(x, high))
    return backend.where(outside, 0.0, grad)


class HardtanhBackwardBackward0(OpFunction):
    """``hardtanh_backward(grad_output, self, min_val, max_val)``, the op a recorded backward pass of hardtanh
    (and ReLU6) makes: ``grad_output`` passes inside the bounds; ``self``'s gradient is 0."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("hardtanh_backward(grad, self, min_val, max_val)", r"\bar{z}\,[\min < x < \max]"),
                   "self": ("zeros_like(grad)", "0")}

    def forward(ctx, grad_output, self, min_val, max_val):
        ctx.save(max_val=max_val, min_val=min_val, self=self)
        return _hardtanh_backward(grad_output._backend, grad_output._data, self._data, min_val, max_val)

    def backward(ctx, grad):
        backend = ctx.backend
        x, low, high = ctx.saved("self", "min_val", "max_val")
        return (_hardtanh_backward(backend, grad, x, low, high),
                backend.zeros_like(grad) if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        self, low, high = ctx.saved_graph("self", "min_val", "max_val")
        return (HardtanhBackwardBackward0.apply(grad, self, low, high) if ctx.needs_input_grad[0] else None,
                _zeros_like(ctx, grad) if ctx.needs_input_grad[1] else None)


class LogSigmoidBackward0(OpFunction):
    """``log σ(x) = min(x, 0) - log(1 + e^-|x|)``, never overflowing; PyTorch saves ``buffer = e^-|x|``."""

    inputs = ("self",)
    derivatives = {"self": ("log_sigmoid_backward(grad, self, buffer)", r"\bar{y}\,(1 - \sigma(x))")}

    def forward(ctx, self):
        x = _floating(self, "log_sigmoid_cpu")
        backend = self._backend
        buffer = backend.exp(backend.neg(backend.abs(x)))
        ctx.save(buffer=Tensor._make(buffer, backend=backend), self=self)
        return backend.sub(backend.minimum(x, 0.0), backend.log1p(buffer))

    def backward(ctx, grad):
        return _log_sigmoid_backward(ctx.backend, grad, *ctx.saved("self", "buffer"))

    def backward_graph(ctx, grad):
        return LogSigmoidBackwardBackward0.apply(grad, *ctx.saved_graph("self", "buffer"))


def _log_sigmoid_backward(backend, grad, x, buffer):
    """``grad · (1 - σ(x))``, written with the saved ``buffer = e^-|x|`` as PyTorch's kernel does."""
    negative = backend.lt(x, 0)
    share = backend.div(buffer, backend.add(buffer, 1.0))  # σ(-|x|)
    local = backend.where(negative, backend.sub(1.0, share), share)
    return backend.mul(grad, local)


def _log_sigmoid_curvature(backend, x, buffer=None):
    """(log σ)''(x) = ``(σ(x) - 1) σ(x)``, as PyTorch's ``log_sigmoid_double_backward`` writes it."""
    z = backend.sigmoid(x)
    return backend.mul(backend.sub(z, 1.0), z)


class MishBackward0(OpFunction):
    """``x · tanh(softplus(x))``."""

    inputs = ("self",)
    derivatives = {"self": ("mish_backward(grad, self)",
                            r"\bar{y}\,(\tanh s + x\,\sigma(x)\,(1 - \tanh^{2} s)),\ s = \mathrm{softplus}(x)")}

    def forward(ctx, self):
        x = _floating(self, "mish_cpu")
        ctx.save(self=self)
        return self._backend.mul(x, self._backend.tanh(_softplus_of(self._backend, x)))

    def backward(ctx, grad):
        backend = ctx.backend
        x = ctx.saved("self")
        half = isinstance(x, np.ndarray) and x.dtype == np.float16
        if half:  # PyTorch computes a half's mish_backward in float (its opmath), then rounds
            x, grad = x.astype(np.float32), np.asarray(grad, dtype=np.float32)
        tanh_softplus = backend.tanh(_softplus_of(backend, x))
        slope = backend.mul(backend.mul(x, backend.sigmoid(x)), backend.sub(1.0, backend.mul(tanh_softplus, tanh_softplus)))
        result = backend.mul(grad, backend.add(tanh_softplus, slope))
        return result.astype(np.float16) if half else result

    def backward_graph(ctx, grad):
        """PyTorch's ``infinitely_differentiable_mish_backward``, node for node: ``s = sigmoid(x)`` first, then
        ``t = tanh(log1p(exp(x)))``, then ``grad * (t + x * s * (1 - t * t))`` (C++ builds the right operand of
        each product first). The sigmoid's node is older than the exp's, so a later backward through this
        graph runs (and sums) them in PyTorch's order."""
        from gradviz.ops.elementwise import log1p

        x = ctx.saved_graph("self")
        sigmoid = x.sigmoid()
        tanh_softplus = log1p(x.exp()).tanh()
        one = Tensor._make(ctx.backend.full((), 1, x.dtype, x.device), backend=ctx.backend)
        bend = one - tanh_softplus * tanh_softplus
        slope = x * sigmoid * bend
        return grad * (tanh_softplus + slope)


def _softplus_of(backend, x):
    """``log(1 + eˣ)`` computed without overflow: ``max(x, 0) + log(1 + e^-|x|)``."""
    return backend.add(backend.maximum(x, 0.0), backend.softplus_neg(backend.abs(x)))


class HardswishBackward0(OpFunction):
    """``x · relu6(x + 3) / 6``: 0 below -3, ``x`` above 3, a parabola between."""

    inputs = ("self",)
    derivatives = {"self": ("hardswish_backward(grad, self)", r"\bar{y}\,(x/3 + 1/2)\ \text{on}\ (-3, 3)")}

    def forward(ctx, self):
        x = _floating(self, "hardswish_cpu")
        ctx.save(self=self)
        backend = self._backend
        return backend.div(backend.mul(x, backend.minimum(backend.maximum(backend.add(x, 3.0), 0.0), 6.0)), 6.0)

    def backward(ctx, grad):
        return _hardswish_backward(ctx.backend, grad, ctx.saved("self"))

    def backward_graph(ctx, grad):
        return HardswishBackwardBackward0.apply(grad, ctx.saved_graph("self"))


def _hardswish_backward(backend, grad, x):
    middle = backend.mul(grad, backend.add(backend.div(x, 3.0), 0.5))
    return backend.where(backend.le(x, -3.0), 0.0, backend.where(backend.lt(x, 3.0), middle, grad))


def _hardswish_double_backward(backend, grad_times_grad_output, x):
    """``grad · grad_output · hardswish''(x)``: divided by 3 inside (-3, 3), 0 elsewhere (PyTorch's formula)."""
    inside = backend.logical_and(backend.gt(x, -3.0), backend.lt(x, 3.0))
    return backend.where(inside, backend.div(grad_times_grad_output, 3.0), 0.0)


class HardsigmoidBackward0(OpFunction):
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid."""

    inputs = ("self",)
    derivatives = {"self": ("hardsigmoid_backward(grad, self)", r"\bar{y}\,[-3 < x < 3] / 6")}

    def forward(ctx, self):
        x = _floating(self, "hardsigmoid_cpu")
        ctx.save(self=self)
        backend = self._backend
        return backend.div(backend.minimum(backend.maximum(backend.add(x, 3.0), 0.0), 6.0), 6.0)

    def backward(ctx, grad):
        backend = ctx.backend
        x = ctx.saved("self")
        inside = backend.logical_and(backend.gt(x, -3.0), backend.lt(x, 3.0))
        return backend.where(inside, backend.mul(grad, HARDSIGMOID_SLOPE), 0.0)

    def backward_graph(ctx, grad):
        """PyTorch's ``hardsigmoid_backward`` has no derivative formula: its result hangs from a
        ``torch::autograd::NotImplemented`` node (edges to the gradient and to x), which raises when
        a further backward reaches it."""
        return without_derivative(NotImplemented, ctx.backward(grad._data), (grad, ctx.saved_graph("self")),
                                  "hardsigmoid_backward")


HARDSIGMOID_SLOPE = 0.1666666716337204  # PyTorch's kernel multiplies by 1/6 rounded to float32, even for doubles


class PreluKernelBackward0(OpFunction):
    """``x`` where positive, ``weight · x`` elsewhere, with a learned slope per channel (``weight`` is
    viewed to broadcast along dim 1)."""

    inputs = ("self", "weight")
    derivatives = {"self": ("_prelu_kernel_backward(grad, self, weight)[0]", r"\bar{y}\,([x > 0] + a\,[x \le 0])"),
                   "weight": ("_prelu_kernel_backward(grad, self, weight)[1]", r"\bar{y}\,x\,[x \le 0]")}

    def forward(ctx, self, weight):
        ctx.save(self=self, weight=weight)
        ctx.weight_shape = tuple(weight.shape)
        backend = self._backend
        x = self._data
        return backend.where(backend.gt(x, 0), x, backend.mul(weight._data, x))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        x, weight = ctx.saved("self", "weight")
        positive = backend.gt(x, 0)
        needs = ctx.needs_input_grad
        grad_input = backend.where(positive, grad, backend.mul(weight, grad)) if needs[0] else None
        grad_weight = sum_to(backend, backend.where(positive, 0.0, backend.mul(x, grad)), ctx.weight_shape) \
            if needs[1] else None
        return grad_input, grad_weight

    def backward_graph(ctx, grad):
        """PyTorch's ``_prelu_kernel_backward(grad, self, weight)``, one node with two outputs
        (PreluKernelBackwardBackward0); the weight's gradient is then summed to the weight's shape."""
        from gradviz.ops._util import sum_to_tensor

        x, weight = ctx.saved_graph("self", "weight")
        grad_input, grad_weight = PreluKernelBackwardBackward0.apply(grad, x, weight)
        needs = ctx.needs_input_grad
        return (grad_input if needs[0] else None,
                sum_to_tensor(grad_weight, ctx.weight_shape) if needs[1] else None)


class PreluKernelBackwardBackward0(OpFunction):
    """``_prelu_kernel_backward(grad_output, self, weight)``: PReLU's two gradients, ``where(x > 0, g, a·g)``
    for the input and ``where(x > 0, 0, x·g)`` for the slope (not yet summed), as one node with two outputs."""

    inputs = ("grad_output", "self", "weight")
    derivatives = {"grad_output": ("where(self >= 0, grads[0], grads[0] * weight + grads[1] * self)",
                                   r"\bar{z}_1\,([x \ge 0] + a\,[x < 0]) + \bar{z}_2\,x\,[x < 0]"),
                   "self": ("where(self >= 0, 0, grad_output * grads[1])", r"\bar{y}\,\bar{z}_2\,[x < 0]"),
                   "weight": ("where(self >= 0, 0, grad_output * grads[0])", r"\bar{y}\,\bar{z}_1\,[x < 0]")}

    @classmethod
    def apply(cls, grad_output, self, weight):
        """One node, two outputs (the input's gradient, output 0; the slope's, output 1)."""
        from gradviz.autograd.function import node_for_inputs, outputs_of

        record, node = node_for_inputs(cls, grad_output, self, weight)
        return tuple(outputs_of(node, record, cls.forward(node, grad_output, self, weight), grad_output._backend))

    def forward(ctx, grad_output, self, weight):
        ctx.save(grad_output=grad_output, self=self, weight=weight)
        ctx.shapes = (tuple(grad_output.shape), tuple(self.shape), tuple(weight.shape))
        backend = grad_output._backend
        g, x, a = grad_output._data, self._data, weight._data
        positive = backend.gt(x, 0)
        return backend.where(positive, g, backend.mul(a, g)), backend.where(positive, 0.0, backend.mul(x, g))

    def backward(ctx, *grads):
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        g0, g1 = (grads + (None, None))[:2]
        grad_output, x, weight = ctx.saved("grad_output", "self", "weight")
        nonnegative = backend.ge(x, 0)
        needs = ctx.needs_input_grad
        results = [None, None, None]
        if needs[0]:
            if g0 is not None:
                scaled = backend.mul(g0, weight)
                results[0] = backend.where(nonnegative, g0, scaled if g1 is None else backend.add(scaled, backend.mul(g1, x)))
            else:
                results[0] = backend.where(nonnegative, 0.0, backend.mul(g1, x))
            results[0] = sum_to(backend, results[0], ctx.shapes[0])
        if needs[1]:
            results[1] = backend.where(nonnegative, 0.0, backend.mul(grad_output, g1)) if g1 is not None \
                else backend.zeros_like(x)
        if needs[2]:
            local = backend.where(nonnegative, 0.0, backend.mul(grad_output, g0)) if g0 is not None \
                else backend.zeros_like(x)
            results[2] = sum_to(backend, local, ctx.shapes[2])
        return tuple(results)

    def backward_graph(ctx, *grads):
        """PyTorch's formulas, in its order (grad_output, self, weight; a binary operator's right operand
        first), ``at::zeros({})`` a 0-d zero with no history; the slope's gradient summed to its shape."""
        from gradviz.ops._util import sum_to_tensor
        from gradviz.ops.comparison import where

        g0, g1 = (grads + (None, None))[:2]
        grad_output, x, weight = ctx.saved_graph("grad_output", "self", "weight")
        backend = ctx.backend
        nonnegative = Tensor._make(backend.ge(x._data, 0), backend=backend)

        def zero():
            return Tensor._make(backend.full((), 0, x.dtype, x.device), backend=backend)

        needs = ctx.needs_input_grad
        results = [None, None, None]
        if needs[0]:
            if g0 is not None:
                other = g0 * weight if g1 is None else _right_first(lambda: g1 * x, lambda: g0 * weight)
                results[0] = sum_to_tensor(where(nonnegative, g0, other), ctx.shapes[0])
            else:
                results[0] = sum_to_tensor(where(nonnegative, zero(), g1 * x), ctx.shapes[0])
        if needs[1]:
            results[1] = where(nonnegative, zero(), grad_output * g1) if g1 is not None else \
                Tensor._make(backend.zeros_like(x._data), backend=backend)
        if needs[2]:
            local = where(nonnegative, zero(), grad_output * g0) if g0 is not None else \
                Tensor._make(backend.zeros_like(x._data), backend=backend)
            results[2] = sum_to_tensor(local, ctx.shapes[2])
        return tuple(results)


def _right_first(right, left):
    """``left() + right()`` with the right operand built first, as C++ evaluates a binary operator's operands."""
    built = right()
    return left() + built


def prelu(input, weight):
    """PReLU: the slope ``weight`` (one, or one per channel) is viewed to ``(1, C, 1, ...)`` first."""
    count = weight.numel()
    if count != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != count:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{count} and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if input.ndim > 1:
        weight = weight.reshape((1, count) + (1,) * (input.ndim - 2))
    return PreluKernelBackward0.apply(input, weight)


def logsigmoid(input):
    return LogSigmoidBackward0.apply(input)


def mish(input):
    return MishBackward0.apply(input)


def hardswish(input):
    return HardswishBackward0.apply(input)


def hardsigmoid(input):
    return HardsigmoidBackward0.apply(input)


def leaky_relu(input, negative_slope=0.01):
    return LeakyReluBackward0.apply(input, negative_slope)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return GeluBackward0.apply(input, approximate)


def silu(input):
    return SiluBackward0.apply(input)


def elu(input, alpha=1.0):
    return EluBackward0.apply(input, alpha)


def selu(input):
    return EluBackward0.apply(input, SELU_ALPHA, SELU_SCALE, 1)


def celu(input, alpha=1.0):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return CeluBackward0.apply(input, alpha)


def softplus(input, beta=1, threshold=20):
    return SoftplusBackward0.apply(input, beta, threshold)


def check_hardtanh(input, min_val, max_val) -> None:
    """PyTorch's checks of ``hardtanh``'s bounds and input (``relu6`` and the in-place form too)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is _dtype.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if input.dtype is _dtype.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")


def hardtanh(input, min_val=-1.0, max_val=1.0):
    check_hardtanh(input, min_val, max_val)
    return HardtanhBackward0.apply(input, min_val, max_val)


# -- in place (``inplace=True``): the ops that keep only their output, as PyTorch's in-place variants do ------
class LeakyReluBackward1(OpFunction):
    """``leaky_relu_`` (in place): the input is overwritten, so the backward reads the output, whose sign is
    the input's (for a positive slope)."""

    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("leaky_relu_backward(grad, result, negative_slope, true)",
                            r"\bar{y}\,([y > 0] + \alpha\,[y \le 0])")}

    def forward(ctx, self, negative_slope=0.01):
        x = _floating(self, "leaky_relu_cpu")
        ctx.save(negative_slope=negative_slope)
        backend = self._backend
        return backend.where(backend.gt(x, 0), x, backend.mul(x, negative_slope))

    def backward(ctx, grad):
        result, slope = ctx.saved("result", "negative_slope")
        if slope < 0:  # the output's sign no longer tells where the input was positive
            raise RuntimeError(
                "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
                "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
                "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
                "in-place leakRelu backward calculation with negative slope")
        return _leaky_relu_backward(ctx.backend, grad, result, slope)

    def backward_graph(ctx, grad):
        """``leaky_relu_backward(grad, result, negative_slope, true)``: the second-order op reads the output."""
        result, slope = ctx.saved_graph("result", "negative_slope")
        if slope < 0:
            ctx.backward(grad._data)  # raises PyTorch's error: the output's sign no longer tells the input's
        return LeakyReluBackwardBackward0.apply(grad, result, slope)


class EluBackward1(OpFunction):
    """``elu_`` and ``selu_`` (in place): the backward reads the output; where it is not positive,
    the slope is ``input_scale · (y + alpha · scale)``."""

    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("elu_backward(grad, alpha, scale, input_scale, true, result)",
                            r"\bar{y}\,([y > 0] + (y + \alpha)\,[y \le 0])")}

    def forward(ctx, self, alpha=1.0, scale=1, input_scale=1):
        x = _floating(self, "elu_cpu")
        ctx.save(alpha=alpha, input_scale=input_scale, scale=scale)
        return _elu(self._backend, x, alpha, scale, input_scale)

    def backward(ctx, grad):
        result, alpha, scale, input_scale = ctx.saved("result", "alpha", "scale", "input_scale")
        return _elu_backward_from_result(ctx.backend, grad, result, alpha, scale, input_scale)

    def backward_graph(ctx, grad):
        return EluBackwardBackward0.apply(grad, *ctx.saved_graph("result", "alpha", "scale", "input_scale"), True)


class CeluBackward1(OpFunction):
    """``celu_`` (in place): ELU with ``input_scale = 1/alpha``, read from the output."""

    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("elu_backward(grad, alpha, 1, 1.0/alpha, true, result)",
                            r"\bar{y}\,([y > 0] + (y/\alpha + 1)\,[y \le 0])")}

    def forward(ctx, self, alpha=1.0):
        x = _floating(self, "elu_cpu")
        ctx.save(alpha=alpha)
        return _elu(self._backend, x, alpha, 1, 1.0 / alpha)

    def backward(ctx, grad):
        result, alpha = ctx.saved("result", "alpha")
        return _elu_backward_from_result(ctx.backend, grad, result, alpha, 1, 1.0 / alpha)

    def backward_graph(ctx, grad):
        result, alpha = ctx.saved_graph("result", "alpha")
        return EluBackwardBackward0.apply(grad, result, alpha, 1, 1.0 / alpha, True)


def _elu_backward_from_result(backend, grad, result, alpha, scale, input_scale):
    positive = grad if scale == 1 else backend.mul(grad, scale)
    slope = backend.add(result, alpha * scale)
    if input_scale != 1:
        slope = backend.mul(slope, input_scale)
    return backend.where(backend.gt(result, 0), positive, backend.mul(grad, slope))


def leaky_relu_(input, negative_slope=0.01):
    """``leaky_relu`` written into ``input`` (LeakyReluBackward1)."""
    from gradviz.ops.inplace import apply_

    return apply_(input, LeakyReluBackward1.apply, negative_slope)


def elu_(input, alpha=1.0, scale=1, input_scale=1):
    """``elu`` (or ``selu``: its alpha and scale) written into ``input`` (EluBackward1)."""
    from gradviz.ops.inplace import apply_

    return apply_(input, EluBackward1.apply, alpha, scale, input_scale)


def celu_(input, alpha=1.0):
    """``celu`` written into ``input`` (CeluBackward1)."""
    from gradviz.ops.inplace import apply_

    return apply_(input, CeluBackward1.apply, alpha)


def apply_in_place(function, *args):
    """``function(input, *args)`` written into ``input``, recorded as that op (``silu_``, ``hardtanh_``:
    PyTorch's in-place node is the out-of-place one, saving a copy of the old input)."""
    from gradviz.ops.inplace import apply_

    return apply_(args[0], function, *args[1:])


# -- second order: the ops a recorded backward pass of gelu, elu, softplus, log-sigmoid and hardswish makes --
class _ActivationBackwardBackward(OpFunction):
    """``f_backward(grad_output, x, *parameters) = grad_output · f'(x)``: its gradient for ``grad_output`` is
    ``grad · f'(x)`` (the first-order formula again), for ``x`` it is ``grad · grad_output · f''(x)``."""

    parameters: tuple = ()  # the saved names of the function's settings, in call order
    first: staticmethod   # (backend, grad, x, *parameters) -> grad · f'(x)
    second: staticmethod  # (backend, x, *parameters) -> f''(x)

    @classmethod
    def _run(cls, ctx, grad_output, self, *parameters):
        """The forward of each subclass (``ctx`` may be the no-op one, so the class is named explicitly)."""
        ctx.save(grad_output=grad_output, **{cls.inputs[1]: self}, **dict(zip(cls.parameters, parameters)))
        return cls.first(grad_output._backend, grad_output._data, self._data, *parameters)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, x = ctx.saved("grad_output", ctx.inputs[1])
        parameters = [ctx.saved(name) for name in ctx.parameters]
        needs = ctx.needs_input_grad
        return (ctx.first(backend, grad, x, *parameters) if needs[0] else None,
                backend.mul(backend.mul(grad, grad_output), ctx.second(backend, x, *parameters)) if needs[1] else None)


class GeluBackwardBackward0(_ActivationBackwardBackward):
    inputs = ("grad_output", "self")
    parameters = ("approximate",)
    derivatives = {"grad_output": ("gelu_backward(grad, self, approximate)", r"\bar{z}\,(\Phi(x) + x\,\varphi(x))"),
                   "self": ("gelu_double_backward(grad, grad_output, self, approximate)",
                            r"\bar{z}\,\bar{y}\,\varphi(x)\,(2 - x^{2})")}
    first, second = staticmethod(_gelu_backward), staticmethod(_gelu_curvature)

    def forward(ctx, grad_output, self, approximate):
        return GeluBackwardBackward0._run(ctx, grad_output, self, approximate)

    def backward_graph(ctx, grad):
        """As PyTorch: ``gelu_backward`` again for ``grad_output``; for ``self`` its composite
        ``gelu_double_backward(grad, grad_output, self, approximate)``, op by op (C++ Scalar operators are
        ops of their own; a binary operator's right operand is built first)."""
        grad_output, x = ctx.saved_graph("grad_output", "self")
        approximate = ctx.saved("approximate")
        needs = ctx.needs_input_grad
        first = GeluBackwardBackward0.apply(grad, x, approximate) if needs[0] else None
        if not needs[1]:
            return first, None
        return first, (_gelu_double_backward_tanh if approximate == "tanh" else _gelu_double_backward)(grad, grad_output, x)


M_2_SQRTPI, M_SQRT1_2, M_SQRT2 = 1.12837916709551257390, 0.70710678118654752440, 1.41421356237309504880  # <cmath>


def _gelu_double_backward(ggI, gO, x):
    """``ggI * gO * (2·pdf − x²·pdf)``, ``pdf = kBeta · exp(−x²/2)``, ``kBeta = 1/√(2π)``."""
    from gradviz.ops.arithmetic import MulBackward1

    input_sq = x * x
    pdf = MulBackward1.apply(MulBackward1.apply(input_sq, -0.5).exp(), M_2_SQRTPI * M_SQRT1_2 * 0.5)
    right = input_sq * pdf
    dgrad_dinput = MulBackward1.apply(pdf, 2) - right
    return ggI * gO * dgrad_dinput


def _gelu_double_backward_tanh(ggI, gO, x):
    """The tanh approximation's second derivative, in PyTorch's pieces: ``f = x/2``, ``g = 1 − tanh²(inner)``,
    ``h = kBeta·(1 + 3κx²)`` and their derivatives."""
    from gradviz.ops.arithmetic import AddBackward1, DivBackward0, MulBackward1
    from gradviz.ops.double_backward import _one_minus

    beta, kappa = M_SQRT2 * M_2_SQRTPI * 0.5, GELU_KAPPA  # the double constants PyTorch's C++ computes
    inner = MulBackward1.apply(x + MulBackward1.apply(x.pow(3), kappa), beta)
    tanh_inner = inner.tanh()
    sech_inner = DivBackward0.apply(_wrapped_number(x, 1.0), inner.cosh())  # ``1 / cosh``: a wrapped number's div
    f = MulBackward1.apply(x, 0.5)
    g = _one_minus(tanh_inner * tanh_inner)
    h = MulBackward1.apply(AddBackward1.apply(MulBackward1.apply(x, 3 * kappa) * x, 1), beta)
    f_prime_gh = MulBackward1.apply(g, 0.5) * h
    right = -sech_inner * tanh_inner
    g_prime = MulBackward1.apply(sech_inner, 2) * right * h
    g_prime_fh = f * h * g_prime
    h_prime = MulBackward1.apply(MulBackward1.apply(x, 6 * kappa), beta)
    f_g_h_prime = f * g * h_prime
    total = MulBackward1.apply(f_prime_gh, 2) + g_prime_fh + f_g_h_prime
    return ggI * gO * total


def _wrapped_number(like, value) -> Tensor:
    """A Python number as ATen wraps it for a Tensor operator: a 0-d tensor with no history."""
    return Tensor._make(like._backend.full((), value, like.dtype, like.device), backend=like._backend)


class EluBackwardBackward0(_ActivationBackwardBackward):
    inputs = ("grad_output", "self_or_result")
    parameters = ("alpha", "scale", "input_scale")
    derivatives = {"grad_output": ("elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)",
                                   r"\bar{z}\,([x > 0] + \alpha e^{x}\,[x \le 0])"),
                   "self_or_result": ("elu_double_backward(grad, grad_output, alpha, scale, input_scale, is_result, "
                                      "self_or_result)", r"\bar{z}\,\bar{y}\,\alpha e^{x}\,[x < 0]")}
    first, second = staticmethod(_elu_backward), staticmethod(_elu_curvature)

    def forward(ctx, grad_output, self, alpha, scale=1, input_scale=1, is_result=False):
        """``is_result``: ``self`` is the output of an in-place elu (EluBackward1, CeluBackward1)."""
        ctx.save(is_result=is_result)
        if not is_result:
            return EluBackwardBackward0._run(ctx, grad_output, self, alpha, scale, input_scale)
        ctx.save(alpha=alpha, grad_output=grad_output, input_scale=input_scale, scale=scale, self_or_result=self)
        return _elu_backward_from_result(grad_output._backend, grad_output._data, self._data, alpha, scale, input_scale)

    def backward(ctx, grad):
        if not ctx.saved("is_result"):
            return _ActivationBackwardBackward.backward(ctx, grad)
        backend = ctx.backend
        grad_output, result, alpha, scale, input_scale = ctx.saved("grad_output", "self_or_result", "alpha", "scale",
                                                                   "input_scale")
        needs = ctx.needs_input_grad
        negative = backend.astype(backend.lt(result, 0), _dtype.from_any(grad.dtype))
        return (_elu_backward_from_result(backend, grad, result, alpha, scale, input_scale) if needs[0] else None,
                backend.mul(backend.mul(backend.mul(grad, grad_output), input_scale), negative) if needs[1] else None)

    def backward_graph(ctx, grad):
        """As PyTorch: ``elu_backward`` again for ``grad_output``; for ``self_or_result``, its
        ``elu_double_backward``: ``elu_backward(grad * grad_output * input_scale, ...) * [x < 0]``
        (from the input), or ``grad * grad_output * input_scale * [y < 0]`` (from the output)."""
        from gradviz.ops.arithmetic import MulBackward1

        grad_output, x = ctx.saved_graph("grad_output", "self_or_result")
        alpha, scale, input_scale, is_result = ctx.saved("alpha", "scale", "input_scale", "is_result")
        needs = ctx.needs_input_grad
        first = EluBackwardBackward0.apply(grad, x, alpha, scale, input_scale, is_result) if needs[0] else None
        if not needs[1]:
            return first, None
        scaled = MulBackward1.apply(grad * grad_output, input_scale)
        if not is_result:
            scaled = EluBackwardBackward0.apply(scaled, x, alpha, scale, input_scale)
        negative = ctx.backend.astype(ctx.backend.lt(x._data, 0), grad.dtype)
        return first, scaled * Tensor._make(negative, backend=ctx.backend)


class SoftplusBackwardBackward0(_ActivationBackwardBackward):
    inputs = ("grad_output", "self")
    parameters = ("beta", "threshold")
    derivatives = {"grad_output": ("softplus_backward(grad, self, beta, threshold)", r"\bar{z}\,\sigma(\beta x)"),
                   "self": ("softplus_double_backward(grad * grad_output, self, beta, threshold)",
                            r"\bar{z}\,\bar{y}\,\beta\,\sigma(\beta x)(1 - \sigma(\beta x))")}
    first, second = staticmethod(_softplus_backward), staticmethod(_softplus_curvature)

    def forward(ctx, grad_output, self, beta, threshold):
        return SoftplusBackwardBackward0._run(ctx, grad_output, self, beta, threshold)

    def backward_graph(ctx, grad):
        """As PyTorch: ``softplus_backward`` again for ``grad_output``; for ``self`` its composite
        ``softplus_double_backward(grad * grad_output, self, beta, threshold)``, that is
        ``sigmoid_backward(g, (beta·x).sigmoid()) * [beta·x < threshold] * beta``."""
        from gradviz.ops.arithmetic import MulBackward1
        from gradviz.ops.double_backward import SigmoidBackwardBackward0

        grad_output, x, beta, threshold = ctx.saved_graph("grad_output", "self", "beta", "threshold")
        needs = ctx.needs_input_grad
        first = SoftplusBackwardBackward0.apply(grad, x, beta, threshold) if needs[0] else None
        if not needs[1]:
            return first, None
        scaled_grad = grad * grad_output
        scaled_x = MulBackward1.apply(x, beta)
        slope = SigmoidBackwardBackward0.apply(scaled_grad, scaled_x.sigmoid())
        below = ctx.backend.astype(ctx.backend.lt(scaled_x._data, threshold), grad.dtype)
        return first, MulBackward1.apply(slope * Tensor._make(below, backend=ctx.backend), beta)


class LogSigmoidBackwardBackward0(_ActivationBackwardBackward):
    inputs = ("grad_output", "self")
    parameters = ("buffer",)
    derivatives = {"grad_output": ("log_sigmoid_backward(grad, self, buffer)", r"\bar{z}\,(1 - \sigma(x))"),
                   "self": ("log_sigmoid_double_backward(grad * grad_output, self)",
                            r"\bar{z}\,\bar{y}\,(\sigma(x) - 1)\,\sigma(x)")}
    first, second = staticmethod(_log_sigmoid_backward), staticmethod(_log_sigmoid_curvature)

    def forward(ctx, grad_output, self, buffer):
        ctx.save(buffer=buffer, grad_output=grad_output, self=self)
        return _log_sigmoid_backward(grad_output._backend, grad_output._data, self._data, buffer._data)

    def backward_graph(ctx, grad):
        """As PyTorch: ``log_sigmoid_backward`` again for ``grad_output``; for ``self``,
        ``log_sigmoid_double_backward(grad * grad_output, self)`` = ``g * (z - 1) * z``, ``z = sigmoid(self)``."""
        from gradviz.ops.arithmetic import SubBackward1

        grad_output, x, buffer = ctx.saved_graph("grad_output", "self", "buffer")
        needs = ctx.needs_input_grad
        first = LogSigmoidBackwardBackward0.apply(grad, x, buffer) if needs[0] else None
        if not needs[1]:
            return first, None
        scaled_grad = grad * grad_output
        z = x.sigmoid()
        return first, scaled_grad * SubBackward1.apply(z, 1) * z


class HardswishBackwardBackward0(_ActivationBackwardBackward):
    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("hardswish_backward(grad, self)", r"\bar{z}\,(x/3 + 1/2)\ \text{on}\ (-3, 3)"),
                   "self": ("at::where(at::logical_and(-3.0 < self, self < 3.0), grad * grad_output / 3.0, "
                            "at::zeros({}, self.options()))", r"\bar{z}\,\bar{y}\,[-3 < x < 3] / 3")}
    first = staticmethod(_hardswish_backward)

    def forward(ctx, grad_output, self):
        return HardswishBackwardBackward0._run(ctx, grad_output, self)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, x = ctx.saved("grad_output", "self")
        needs = ctx.needs_input_grad
        return (_hardswish_backward(backend, grad, x) if needs[0] else None,
                _hardswish_double_backward(backend, backend.mul(grad, grad_output), x) if needs[1] else None)

    def backward_graph(ctx, grad):
        """As PyTorch: ``hardswish_backward`` again for ``grad_output``; for ``self``,
        ``where(-3 < self < 3, grad * grad_output / 3, zeros({}))``."""
        from gradviz.ops.arithmetic import DivBackward1
        from gradviz.ops.comparison import where

        grad_output, x = ctx.saved_graph("grad_output", "self")
        needs = ctx.needs_input_grad
        first = HardswishBackwardBackward0.apply(grad, x) if needs[0] else None
        if not needs[1]:
            return first, None
        backend = ctx.backend
        inside = backend.logical_and(backend.gt(x._data, -3.0), backend.lt(x._data, 3.0))
        zero = Tensor._make(backend.full((), 0, x.dtype, x.device), backend=backend)
        return first, where(Tensor._make(inside, backend=backend), DivBackward1.apply(grad * grad_output, 3.0), zero)
