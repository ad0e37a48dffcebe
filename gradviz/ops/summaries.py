"""Summaries that come in pairs or skip NaNs: ``std_mean``, ``var_mean``, ``aminmax``, ``nansum``, ``nanmean``,
``logcumsumexp``.

``std_mean``, ``var_mean`` and ``aminmax`` are one node with two outputs (``output_nr`` 0 and 1), as in
PyTorch: a gradient that reaches only one of them still runs the node once, and the input's gradient
is the sum of both outputs' formulas (``var_backward + mean_backward``; the min's and the max's
``scale_grad_by_count``). ``nanmean`` has no node of its own: PyTorch writes it ``nansum / count``.
"""
from __future__ import annotations


import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction, node_for_inputs, outputs_of
from gradviz.autograd.node import SavedTensor
from gradviz.ops import return_types
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.reduction import _dims, _dims_or_none, _expand_back, _expand_back_graph
from gradviz.ops.statistics import (_correction, _dim_tuple, _variance, _variance_backward, _variance_backward_graph)
from gradviz.tensor import Tensor


class _TwoResults(OpFunction):
    """An op with two outputs of one node (``std, mean``; ``min, max``), neither a view of the input."""

    inputs = ("self",)
    saved_outputs: dict = {}  # saved name -> which output (PyTorch's ``result0``)

    @classmethod
    def apply(cls, input, *params):
        record, node = node_for_inputs(cls, input)
        outputs = outputs_of(node, record, cls.forward(node, input, *params), input._backend)
        if record:
            node.output_meta = tuple((tuple(o.shape), o.dtype, o.device) for o in outputs)
            for name, output_nr in cls.saved_outputs.items():
                node._packed[name] = SavedTensor(outputs[output_nr], is_output=True)
        return tuple(outputs)

    def _filled(self, grads) -> list:
        """Each output's gradient, zeros where none arrived (as PyTorch materializes them)."""
        backend = self.backend
        return [backend.full(shape, 0, dtype, device) if g is None else g
                for g, (shape, dtype, device) in zip(grads, self.output_meta)]

    def _filled_tensors(self, grads) -> list:
        return [g if isinstance(g, Tensor) else Tensor._make(g, backend=self.backend) for g in self._filled(grads)]


# -- variance or standard deviation, and the mean, in one node ------------------------------------------
def _mean_back(ctx, grad):
    """``mean_backward``: the mean's gradient spread evenly over the reduced elements."""
    backend = ctx.backend
    self, keepdim = ctx.saved("self", "keepdim")
    shape = tuple(self.shape)
    count = _count(shape, ctx.axes)
    if ctx.axes is None:
        return backend.broadcast_to(backend.div(grad, count), shape)
    return _expand_back(backend, backend.div(grad, count), shape, ctx.axes, keepdim)


def _mean_back_graph(ctx, grad):
    from gradviz.ops.arithmetic import DivBackward1

    self, keepdim = ctx.saved("self", "keepdim")
    shape = tuple(self.shape)
    if ctx.axes is None:
        return DivBackward1.apply(grad.expand(shape), _count(shape, None))
    return DivBackward1.apply(_expand_back_graph(grad, shape, ctx.axes, keepdim), _count(shape, ctx.axes))


def _count(shape, axes) -> int:
    count = 1
    for axis in axes if axes is not None else range(len(shape)):
        count *= shape[axis]
    return count


def _spread_and_mean(ctx, self, dim, correction, keepdim, name: str):
    ctx.save(correction=correction, dim=saved_dim(dim) if dim is not None else None, keepdim=keepdim, self=self)
    variance = _variance(ctx, self, dim, correction, keepdim, name, stacklevel=5)
    backend = self._backend
    axes = _dims_or_none(dim, self.ndim, wrap_first=False)  # as _variance reads dim (ctx may keep nothing)
    mean = backend.div(backend.sum(self._data, axes, keepdims=keepdim), _count(tuple(self.shape), axes))
    return variance, mean


class VarMeanBackward0(_TwoResults):
    derivatives = {"self": ("var_mean_backward(grads[0], grads[1], self, dim, correction, keepdim)",
                            r"\bar{v}\,2 (x - \bar{x}) / (n - c) + \bar{m} / n")}

    def forward(ctx, self, dim, correction, keepdim):
        return _spread_and_mean(ctx, self, dim, correction, keepdim, "var_mean")

    def backward(ctx, *grads):
        var_grad, mean_grad = ctx._filled(grads)
        return ctx.backend.add(_variance_backward(ctx, var_grad), _mean_back(ctx, mean_grad))

    def backward_graph(ctx, *grads):
        var_grad, mean_grad = ctx._filled_tensors(grads)
        return _variance_backward_graph(ctx, var_grad) + _mean_back_graph(ctx, mean_grad)


class StdMeanBackward0(_TwoResults):
    derivatives = {"self": ("std_mean_backward(grads[0], grads[1], self, result0, dim, correction, keepdim)",
                            r"\bar{s}\,(x - \bar{x}) / ((n - c)\,\sigma) + \bar{m} / n")}
    saved_outputs = {"result0": 0}

    def forward(ctx, self, dim, correction, keepdim):
        variance, mean = _spread_and_mean(ctx, self, dim, correction, keepdim, "std_mean")
        return self._backend.sqrt(variance), mean

    def backward(ctx, *grads):
        backend = ctx.backend
        std_grad, mean_grad = ctx._filled(grads)
        result = ctx.saved("result0")
        # d std = d var / (2 std); 0 where the deviation is 0, as PyTorch's std_backward makes it
        var_grad = backend.where(backend.eq(result, 0), 0.0, backend.div(std_grad, backend.mul(result, 2)))
        return backend.add(_variance_backward(ctx, var_grad), _mean_back(ctx, mean_grad))

    def backward_graph(ctx, *grads):
        from gradviz.ops.arithmetic import MulBackward1

        std_grad, mean_grad = ctx._filled_tensors(grads)
        result = ctx.saved_graph("result0")
        var_grad = (std_grad / MulBackward1.apply(result, 2)).masked_fill_(
            Tensor._make(ctx.backend.eq(result._data, 0), backend=ctx.backend), 0)
        return _variance_backward_graph(ctx, var_grad) + _mean_back_graph(ctx, mean_grad)


def _pair(node, name, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    return node.apply(input, _dim_tuple(dim), _correction(dim, unbiased, correction), keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` from one pass, one node."""
    return _pair(VarMeanBackward0, "var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` from one pass, one node."""
    return _pair(StdMeanBackward0, "std_mean", input, dim, unbiased, keepdim, correction)


# -- the smallest and the largest at once -----------------------------------------------------------------
class AminmaxBackward0(_TwoResults):
    derivatives = {"self": ("scale_grad_by_count(restore_reduced_dims(grads[0], dim, keepdim), min == self, dim) + "
                            "scale_grad_by_count(restore_reduced_dims(grads[1], dim, keepdim), max == self, dim)",
                            r"\bar{m}\,[x = \min] / k + \bar{M}\,[x = \max] / k'")}
    saved_outputs = {"min": 0, "max": 1}

    def forward(ctx, self, dim, keepdim):
        backend = self._backend
        if dim is None:
            if self.numel() == 0:
                raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation "
                                   "has no identity.")
            axes = tuple(range(self.ndim))
        else:
            axis = wrap_dim(dim, max(self.ndim, 1))
            if self.ndim and self.shape[axis] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {axis} to have non-zero size.")
            axes = (axis,) if self.ndim else ()
        ctx.save(dim=None if dim is None else saved_dim(dim), keepdim=keepdim, self=self)
        ctx.axes = axes
        kept = keepdim and dim is not None
        low = backend.amin(self._data, axes if self.ndim else None, keepdims=kept)
        high = backend.amax(self._data, axes if self.ndim else None, keepdims=kept)
        return low, high

    def _share(ctx, grad, extreme):
        """``scale_grad_by_count``: the gradient split evenly among the elements equal to the extreme."""
        backend = ctx.backend
        self, keepdim = ctx.saved("self", "keepdim")
        shape = tuple(self.shape)
        kept = tuple(1 if i in ctx.axes else size for i, size in enumerate(shape))
        mask = backend.astype(backend.eq(self, backend.reshape(extreme, kept)), _dtype.from_any(grad.dtype))
        count = backend.sum(mask, ctx.axes, keepdims=True) if ctx.axes else backend.add(backend.mul(mask, 0), 1)
        return backend.mul(backend.broadcast_to(backend.reshape(grad, kept), shape), backend.div(mask, count))

    def backward(ctx, *grads):
        low_grad, high_grad = ctx._filled(grads)
        low, high = ctx.saved("min", "max")
        return ctx.backend.add(ctx._share(low_grad, low), ctx._share(high_grad, high))

    def backward_graph(ctx, *grads):
        """``(grad / count) * mask`` for each, recorded: the masks and counts are constants."""
        backend = ctx.backend
        self = ctx.saved("self")
        shape = tuple(self.shape)
        kept = tuple(1 if i in ctx.axes else size for i, size in enumerate(shape))
        total = None
        for grad, extreme in zip(ctx._filled_tensors(grads), ctx.saved("min", "max")):
            mask = backend.eq(self, backend.reshape(extreme, kept))
            count = backend.sum(backend.astype(mask, _dtype.int64), ctx.axes, keepdims=True) if ctx.axes else \
                backend.full(kept, 1, _dtype.int64, backend.device_of(self))
            part = (grad.reshape(kept) / Tensor._make(count, backend=backend)) * Tensor._make(mask, backend=backend)
            total = part if total is None else total + part
        return total


def aminmax(input, *, dim=None, keepdim: bool = False):
    """``(min, max)`` over all elements or along ``dim``; equal extremes share the gradient."""
    low, high = AminmaxBackward0.apply(input, dim, keepdim)
    return return_types.aminmax(low, high)


# -- sums and means that skip NaNs ----------------------------------------------------------------------------
class NansumBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("nansum_backward(grad.to(self.scalar_type()), self, dim, keepdim)",
                            r"\bar{y}\,[x \ne \mathrm{NaN}]")}

    def forward(ctx, self, dim, keepdim):
        backend = self._backend
        axes = _dims_or_none(dim, self.ndim, wrap_first=False)  # ``()`` is every dim (kept as 1s with keepdim)
        ctx.save(dim=None if dim is None else saved_dim(tuple(dim)), keepdim=keepdim, self=self)
        ctx.axes = axes
        data = self._data
        if self.dtype.is_floating_point:
            data = backend.where(backend.isnan(data), 0.0, data)
        else:
            data = backend.astype(data, _dtype.int64)
        return backend.sum(data, axes, keepdims=keepdim and axes is not None)

    def backward(ctx, grad):
        backend = ctx.backend
        self, keepdim = ctx.saved("self", "keepdim")
        shape = tuple(self.shape)
        spread = backend.broadcast_to(grad, shape) if ctx.axes is None else _expand_back(backend, grad, shape,
                                                                                          ctx.axes, keepdim)
        return backend.where(backend.isnan(self), 0.0, spread)

    def backward_graph(ctx, grad):
        """PyTorch's ``nansum_backward``: ``grad`` put back over the reduced dims, times ``self.isnan().logical_not()``."""
        backend = ctx.backend
        self, keepdim = ctx.saved("self", "keepdim")
        shape = tuple(self.shape)
        spread = grad if ctx.axes is None else _expand_back_graph(grad, shape, ctx.axes, keepdim)
        kept = Tensor._make(backend.eq(self, self), backend=backend)  # not NaN
        return spread * kept


def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """The sum, NaNs counted as zero."""
    if dtype is not None:
        input = input.to(dtype)
    return NansumBackward0.apply(input, _dim_tuple(dim), keepdim)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """The mean of the elements that are not NaN: ``nansum / count``, as PyTorch writes it."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_dtype.SCALAR_TYPE_NAMES[input.dtype.name]}")
    present = input.isnan().logical_not()
    count = present.sum() if dim is None else present.sum(dim, keepdim=keepdim)
    return nansum(input, dim, keepdim).div(count)


# -- the running logsumexp ------------------------------------------------------------------------------------
class LogcumsumexpBackward0(OpFunction):
    """``y_j = log(sum_{i <= j} exp(x_i))`` along ``dim``: ``x_i`` reaches every ``y_j`` with ``j >= i``,
    with weight ``exp(x_i - y_j)`` (at most 1, since ``y_j >= x_i``)."""

    inputs = ("self",)
    derivatives = {"self": ("logcumsumexp_backward(grad, self, result, dim)", r"\sum_{j \ge i} \bar{y}_j\,e^{x_i - y_j}")}

    def forward(ctx, self, dim):
        axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), self=self)
        ctx.save_result()
        ctx.axis = axis
        if not self.dtype.is_floating_point:
            raise _dtype.not_implemented("logcumsumexp_out_cpu", self.dtype)
        data = np.asarray(self._backend.to_numpy(self._data))
        result = np.logaddexp.accumulate(data, axis=axis) if self.ndim else data.copy()
        return self._backend.array(result, self.dtype, self._backend.device_of(self._data))

    def backward(ctx, grad):
        """PyTorch's ``logcumsumexp_backward``: the positive and the negative parts of the gradient, each
        summed in log space by a logcumsumexp run from the end (so large values never overflow)."""
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        if not self.shape:
            return grad
        x, z, g = (np.asarray(backend.to_numpy(a)) for a in (self, result, grad))
        lowest = np.finfo(g.dtype).min
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_abs = np.log(np.abs(g))
            parts = [_reverse_logcumsumexp(np.where(side, log_abs, lowest).astype(g.dtype) - z, ctx.axis) + x
                     for side in (g > 0, g < 0)]
            out = (np.exp(parts[0]) - np.exp(parts[1])).astype(g.dtype)
        return backend.array(np.array(out, order="C"), _dtype.from_any(grad.dtype), backend.device_of(grad))

    def backward_graph(ctx, grad):
        """The same formula recorded op by op as PyTorch's ``logcumsumexp_backward`` makes it: ``|grad|.log()``
        split by sign with ``where`` (the dtype's lowest number elsewhere), each part minus ``result`` summed
        from the end (flip, logcumsumexp, flip), plus ``self``, ``exp``; the positive part minus the negative."""
        from gradviz.ops.comparison import where
        from gradviz.ops.double_backward import _signed
        from gradviz.ops.matrix import flip

        self, result = ctx.saved_graph("self", "result")
        if grad.ndim == 0 or grad.numel() == 0:
            return grad
        dim = _signed(ctx.saved("dim"))
        backend = ctx.backend
        lowest = Tensor._make(backend.full((), np.finfo(grad.dtype.numpy).min, grad.dtype, grad.device),
                              backend=backend)

        def reverse_logcumsumexp(values):
            return flip(logcumsumexp(flip(values, (dim,)), dim), (dim,))

        log_abs_grad = grad.abs().log()
        positive = where(grad > 0, log_abs_grad, lowest)
        negative = where(grad < 0, log_abs_grad, lowest)
        output_positive = (reverse_logcumsumexp(positive - result) + self).exp()
        output_negative = (reverse_logcumsumexp(negative - result) + self).exp()
        return output_positive - output_negative


def _reverse_logcumsumexp(values, axis):
    return np.flip(np.logaddexp.accumulate(np.flip(values, axis), axis=axis), axis)


def logcumsumexp(input, dim: int):
    return LogcumsumexpBackward0.apply(input, dim)
