"""Elementwise functions of one tensor: each local derivative is one line of math."""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.autograd.node import SavedTensor
from gradviz.backends.quiet import _IGNORE, _get, _reset, _set
from gradviz.ops._util import float_data
from gradviz.tensor import Tensor

_ndarray, _asarray = np.ndarray, np.asarray
_maximum = np.maximum
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_float32 = np.float32


def _scalars(grad, value):
    """The numpy scalars of a backward formula's ``grad`` and saved ``value`` when both are 0-d arrays
    of one dtype, float32 or float64 (every gradient of a scalar graph), else None.

    A formula then computes on the scalars: numpy's scalar arithmetic does the same IEEE operations
    in the same precision as its ufuncs on 0-d arrays (a Python int meets either as the array's
    dtype), at a third of the cost; ``tests/test_backward_scalars.py`` proves the bits equal.
    Callers run it with numpy's warnings off (quiet.py's ContextVar, set and reset around the one
    expression, which cannot raise in that state), as the backend's formulas run. The scalar result is
    made a 0-d array with its ``__array__()`` (np.asarray's answer, about 400 instructions cheaper)."""
    if type(grad) is _ndarray and type(value) is _ndarray and grad.shape == () and value.shape == ():
        dtype = grad.dtype
        if (dtype is _F32 or dtype is _F64) and value.dtype is dtype:
            return grad[()], value[()]
    return None


def _saved_scalar(ctx, name: str, grad):
    """For a scalar form (``Node.scalar_backward``, given ``grad`` as a numpy scalar): the numpy scalar of the
    saved 0-d array ``name`` when it unpacks plainly (a SavedTensor with no hook, not freed, not modified)
    and has ``grad``'s dtype; else None, and ``backward`` reads it with ``ctx.saved`` (its errors, the hook)."""
    packed = ctx._packed
    if packed is not None:
        entry = packed[name]
        if type(entry) is SavedTensor and entry.hooks is None and entry.data is not None \
                and entry.version_counter[0] == entry.saved_version:
            value = entry.data
            if type(value) is _ndarray and value.shape == () and value.dtype is (_F32 if type(grad) is _float32 else _F64):
                return value[()]
    return None


def scalar_grads_as_arrays(node, grad):
    """``backward``'s 0-d path for a node with a scalar form: ``scalar_backward`` on the numpy scalar of a 0-d
    gradient array, with numpy's warnings off (as the backend's formulas run); its gradients made 0-d arrays,
    or None when the form declines (a saved tensor that does not unpack plainly)."""
    token = None if _get() is _IGNORE else _set(_IGNORE)
    grads = type(node).scalar_backward(node, grad[()])  # runs no user code: no hook to unpack
    if token is not None:
        _reset(token)
    if grads is None:
        return None
    return tuple(None if g is None else g.__array__() for g in grads)


def _on_float(ufunc, tensor, quiet: bool = False):
    """``ufunc`` of a float32/float64 numpy tensor's data, as the backend's function computes it, with no
    backend call or ``float_data`` in between (the lesson's ``tanh`` of a batch); else None. A 0-d tensor's
    is called on its numpy scalar: a ufunc takes a numpy scalar by a shorter path than a 0-d array (about 60 %
    of the instructions) into the same inner loop, so the bits are the same (tests/test_scalar_forward.py);
    scalar graphs (a micrograd-style neuron's tanh) run this for every unary op. ``quiet``: numpy's
    floating-point warnings off while it runs, as the backend's function has them (exp's overflow)."""
    x = tensor._data
    if type(x) is _ndarray and ((dtype := x.dtype) is _F32 or dtype is _F64):
        if x.ndim:
            if not quiet:
                return ufunc(x)  # an array for an array of one or more dimensions
            token = _set(_IGNORE)
            try:
                return ufunc(x)
            finally:
                _reset(token)
        if not quiet:
            return ufunc(x[()]).__array__()  # np.asarray(out), for a numpy scalar: one call less
        token = _set(_IGNORE)
        out = ufunc(x[()])
        _reset(token)
        return out.__array__()
    return None


class ExpBackward0(OpFunction):
    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("grad * result", r"\bar{y}\,e^{x}")}

    def forward(ctx, self):
        out = _on_float(np.exp, self, quiet=True)
        return self._backend.exp(float_data(self)) if out is None else out

    def backward(ctx, grad):
        result = ctx.saved("result")
        scalars = _scalars(grad, result)
        if scalars is not None:
            token = None if _get() is _IGNORE else _set(_IGNORE)
            out = scalars[0] * scalars[1]
            if token is not None:
                _reset(token)
            return out.__array__()
        return ctx.backend.mul(grad, result)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: backward's scalar formula
        y = _saved_scalar(ctx, "result", grad)
        return None if y is None else (grad * y,)

    def backward_graph(ctx, grad):
        return grad * ctx.saved_graph("result")


class LogBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.div(self.conj())", r"\bar{y} / x")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.log(float_data(self))

    def backward(ctx, grad):
        self = ctx.saved("self")
        scalars = _scalars(grad, self)
        if scalars is not None:
            token = None if _get() is _IGNORE else _set(_IGNORE)
            out = scalars[0] / scalars[1]
            if token is not None:
                _reset(token)
            return out.__array__()
        return ctx.backend.div(grad, self)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: backward's scalar formula
        x = _saved_scalar(ctx, "self", grad)
        return None if x is None else (grad / x,)

    def backward_graph(ctx, grad):
        return grad / ctx.saved_graph("self")


class SinBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * self.cos().conj()", r"\bar{y}\cos x")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.sin(float_data(self))

    def backward(ctx, grad):
        return ctx.backend.mul(grad, ctx.backend.cos(ctx.saved("self")))

    def backward_graph(ctx, grad):
        return grad * ctx.saved_graph("self").cos()


class CosBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * -self.sin().conj()", r"-\bar{y}\sin x")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.cos(float_data(self))

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.mul(grad, backend.neg(backend.sin(ctx.saved("self"))))

    def backward_graph(ctx, grad):
        return grad * -ctx.saved_graph("self").sin()


class TanhBackward0(OpFunction):
    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("tanh_backward(grad, result)", r"\bar{y}\,(1 - y^{2})")}

    def forward(ctx, self):
        out = _on_float(np.tanh, self)  # tanh never warns (tanh(±inf) = ±1): nothing to silence
        return self._backend.tanh(float_data(self)) if out is None else out

    def backward(ctx, grad):
        if type(grad) is _ndarray and grad.shape == () and ((dtype := grad.dtype) is _F32 or dtype is _F64):
            grads = scalar_grads_as_arrays(ctx, grad)
            if grads is not None:
                return grads[0]
        return ctx.backend.tanh_backward(grad, ctx.saved("result"))

    def scalar_backward(ctx, grad):
        """Node.scalar_backward: a 0-d tanh (a micrograd-style neuron): the backend's tanh_backward on scalars."""
        y = _saved_scalar(ctx, "result", grad)
        return None if y is None else (grad * (1 - y * y),)

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import TanhBackwardBackward0

        return TanhBackwardBackward0.apply(grad, ctx.saved_graph("result"))


class SigmoidBackward0(OpFunction):
    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("sigmoid_backward(grad, result)", r"\bar{y}\,y\,(1 - y)")}

    def forward(ctx, self):
        return self._backend.sigmoid(float_data(self))

    def backward(ctx, grad):
        result = ctx.saved("result")
        scalars = _scalars(grad, result)
        if scalars is not None:  # the backend's sigmoid_backward on scalars
            g, y = scalars
            token = None if _get() is _IGNORE else _set(_IGNORE)
            out = g * (y * (1 - y))
            if token is not None:
                _reset(token)
            return out.__array__()
        return ctx.backend.sigmoid_backward(grad, result)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: the backend's sigmoid_backward on scalars
        y = _saved_scalar(ctx, "result", grad)
        return None if y is None else (grad * (y * (1 - y)),)

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import SigmoidBackwardBackward0

        return SigmoidBackwardBackward0.apply(grad, ctx.saved_graph("result"))


class ReluBackward0(OpFunction):
    _result_name = "result"  # saves its output (ctx.save_result(), declared once for the class)
    inputs = ("self",)
    derivatives = {"self": ("threshold_backward(grad, result, 0)", r"\bar{y}\,[y > 0]")}

    def forward(ctx, self):
        x = self._data
        if type(x) is _ndarray:
            # the backend's maximum without its silencing: numpy's maximum never warns (its loops clear the
            # floating-point status a NaN comparison sets; tests/test_forward_arrays.py holds it with NaNs
            # under ``np.seterr(all="raise")``), and with a number on one side keeps x's layout as PyTorch does.
            # 0 first: of two equal operands numpy returns the second, and PyTorch's relu (clamp_min) keeps -0.0
            out = _maximum(0, x)
            return out if x.ndim else out.__array__()
        return self._backend.maximum(x, 0)  # (torch's maximum keeps -0.0 as it is)

    def backward(ctx, grad):
        result = ctx.saved("result")
        scalars = _scalars(grad, result)
        if scalars is not None:  # the backend's relu_backward on scalars (a select: no arithmetic)
            g, y = scalars
            return g.__array__() if y != 0 else _asarray(0, g.dtype)
        return ctx.backend.relu_backward(grad, result)

    def scalar_backward(ctx, grad):  # Node.scalar_backward: the backend's relu_backward on scalars (a select)
        y = _saved_scalar(ctx, "result", grad)
        return None if y is None else ((grad if y != 0 else type(grad)(0)),)

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import ThresholdBackwardBackward0

        return ThresholdBackwardBackward0.apply(grad, ctx.saved_graph("result"), 0)


class SqrtBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad / (2 * result.conj())", r"\bar{y} / (2\sqrt{x})")}

    def forward(ctx, self):
        ctx.save_result()
        return self._backend.sqrt(float_data(self))

    def backward(ctx, grad):
        result = ctx.saved("result")
        scalars = _scalars(grad, result)
        if scalars is not None:
            g, y = scalars
            token = None if _get() is _IGNORE else _set(_IGNORE)
            out = g / (y * 2)
            if token is not None:
                _reset(token)
            return out.__array__()
        backend = ctx.backend
        return backend.div(grad, backend.mul(result, 2))

    def scalar_backward(ctx, grad):  # Node.scalar_backward: backward's scalar formula
        y = _saved_scalar(ctx, "result", grad)
        return None if y is None else (grad / (y * 2),)

    def backward_graph(ctx, grad):
        from gradviz.ops.arithmetic import MulBackward1

        return grad / MulBackward1.apply(ctx.saved_graph("result"), 2)


class AbsBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * self.sgn()", r"\bar{y}\,\mathrm{sgn}(x)")}

    def forward(ctx, self):
        ctx.save(self=self)
        return self._backend.abs(self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.mul(grad, backend.sign(ctx.saved("self")))

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import SgnBackward0

        return grad * SgnBackward0.apply(ctx.saved_graph("self"))


class ClampBackward1(OpFunction):
    """``clamp(x, min, max)`` with number bounds: the gradient passes where x is inside them."""

    inputs = ("self",)
    derivatives = {"self": ("where((self >= min).logical_and_(self <= max), grad, 0)",
                            r"\bar{y}\,[\min \le x \le \max]")}

    def forward(ctx, self, min=None, max=None):
        ctx.save(self=self, min=min, max=max)
        backend = self._backend
        values = self._data
        if min is not None:
            values = backend.maximum(values, min)
        if max is not None:
            values = backend.minimum(values, max)
        return values

    def backward(ctx, grad):
        mask = _inside(ctx)
        return ctx.backend.where(mask, grad, 0.0) if mask is not None else grad

    def backward_graph(ctx, grad):
        from gradviz.ops.comparison import where

        mask = _inside(ctx)
        return where(Tensor._make(mask, backend=ctx.backend), grad, 0) if mask is not None else grad


def _inside(ctx):
    """Where the input lies within clamp's bounds (a bool array; None when no bound is given)."""
    backend = ctx.backend
    self, low, high = ctx.saved("self", "min", "max")
    mask = backend.ge(self, low) if low is not None else None
    if high is not None:
        upper = backend.le(self, high)
        mask = upper if mask is None else backend.astype(backend.mul(mask, upper), _bool())
    return mask


def _bool():
    return _dtype.bool


def exp(input):
    return ExpBackward0.apply(input)


def log(input):
    return LogBackward0.apply(input)


def sin(input):
    return SinBackward0.apply(input)


def cos(input):
    return CosBackward0.apply(input)


def tanh(input):
    return TanhBackward0.apply(input)


def sigmoid(input):
    return SigmoidBackward0.apply(input)


def relu(input):
    dtype = input._data.dtype  # a float32/float64 numpy tensor is told apart with no call (``dtype`` is a property)
    if dtype is not _F32 and dtype is not _F64 and input.dtype is _dtype.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    return ReluBackward0.apply(input)


def sqrt(input):
    return SqrtBackward0.apply(input)


def abs(input):
    if input.dtype is _dtype.bool:
        raise _dtype.not_implemented("abs_cpu", _dtype.bool)
    return AbsBackward0.apply(input)


def clamp(input, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):  # tensor bounds (ops/clamping.py)
        from gradviz.ops.clamping import ClampBackward0, tensor_bounds

        tensor_bounds("clamp", False, (min, max), {}, min, max)
        return ClampBackward0.apply(input, min, max)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return ClampBackward1.apply(input, min=min, max=max)


# -- tan (the tensor API sweep) ------------------------------------------------------------------------------------
class TanBackward0(OpFunction):
    """``tan(x)``: saves its output; the gradient is ``grad * (1 + tan(x)^2)``."""

    _result_name = "result"
    inputs = ("self",)
    derivatives = {"self": ("grad * (1 + result.pow(2)).conj()", r"\bar{y}\,(1 + y^{2})")}

    def forward(ctx, self):
        return self._backend.tan(float_data(self))

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        return backend.mul(grad, backend.add(backend.mul(result, result), 1))

    def backward_graph(ctx, grad):
        """As C++ records it: ``grad * (result.pow(2) + 1)`` (PowBackward0, AddBackward1, MulBackward0)."""
        from gradviz.ops.arithmetic import AddBackward1

        return grad * AddBackward1.apply(ctx.saved_graph("result").pow(2), 1)


def tan(input):
    return TanBackward0.apply(input)
