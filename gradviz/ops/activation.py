"""Softmax and log-softmax along one dimension.

Both subtract the row's maximum before exponentiating (the result is the same, and ``exp``
cannot overflow). Both save their own result: the backward formulas need only that.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.ops._util import float_data, saved_dim, wrap_dim


def _log_softmax(backend, values, axis):
    shifted = backend.sub(values, backend.amax(values, axis, keepdims=True))
    return backend.sub(shifted, backend.log(backend.sum(backend.exp(shifted), axis, keepdims=True)))


class SoftmaxBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("_softmax_backward_data(grad, result, dim, self.scalar_type())",
                            r"y \odot (\bar{y} - \textstyle\sum_j \bar{y}_j y_j)")}

    def forward(ctx, self, dim):
        axis = ctx.axis = wrap_dim(dim, self.ndim)
        ctx.save(dim=saved_dim(dim))
        ctx.save_result()
        backend = self._backend
        return backend.exp(_log_softmax(backend, float_data(self), axis if self.ndim else None))

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
    inputs = ("self",)
    derivatives = {"self": ("_log_softmax_backward_data(grad, result, dim, self.scalar_type())",
                            r"\bar{y} - e^{y} \textstyle\sum_j \bar{y}_j")}

    def forward(ctx, self, dim):
        axis = ctx.axis = wrap_dim(dim, self.ndim)
        ctx.save(dim=saved_dim(dim))
        ctx.save_result()
        return _log_softmax(self._backend, float_data(self), axis if self.ndim else None)

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


def softmax(input, dim=None, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return SoftmaxBackward0.apply(input, _dim(dim, "softmax"))


def log_softmax(input, dim=None, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return LogSoftmaxBackward0.apply(input, _dim(dim, "log_softmax"))
