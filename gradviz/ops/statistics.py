"""More reductions: ``min``, ``amax``/``amin``, ``var``/``std``, ``prod``, ``logsumexp``, and the running
ones, ``cumsum`` and ``cumprod``.

Each class is PyTorch's node, saving what PyTorch saves (``_saved_dim`` as given, negatives read back
as uint64), with the derivative of ``derivatives.yaml``: the minimum passes the gradient to the
element that won (ties share it), the variance sends ``2 (x - mean) / (n - correction)``, the
product ``result / x``, logsumexp the softmax, and a running sum the running sum of the gradient
taken from the other end.
"""
from __future__ import annotations

import warnings

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import float_data, saved_dim, wrap_dim
from gradviz.ops.arithmetic import MulBackward1
from gradviz.ops import return_types
from gradviz.ops.reduction import (MaxBackward0, MaxBackward1, _dims, _dims_or_none, _expand_back, _kept_shape,
                                   check_nonempty_reduction, select_along, values_and_indices)
from gradviz.tensor import Tensor


# -- the smallest element -------------------------------------------------------------------------------------
class MinBackward1(MaxBackward1):
    """The minimum of all elements; ties share the gradient equally (as ``max``)."""

    derivatives = {"self": ("evenly_distribute_backward(grad, self, result)", r"\bar{y}\,[x = \min x] / k")}

    def forward(ctx, self):
        if self.numel() == 0:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        ctx.save(self=self)
        ctx.save_result()
        return self._backend.amin(self._data, None)


class MinBackward0(MaxBackward0):
    """The minimum along ``dim``: the gradient goes to the index that won (as ``max(dim)``)."""

    derivatives = {"self": ("value_selecting_reduction_backward(grad, dim, indices, self.sym_sizes(), keepdim)",
                            r"\bar{y}\,[i = \arg\min]")}

    def forward(ctx, self, dim, keepdim=False):
        return select_along(ctx, self, dim, keepdim, "argmin", "amin")


def min(input, dim=None, keepdim: bool = False):
    """The smallest element; along ``dim``, ``(values, indices)``; with a tensor, ``minimum``."""
    if isinstance(dim, Tensor):
        from gradviz.ops.comparison import minimum

        return minimum(input, dim)
    if dim is None:
        return MinBackward1.apply(input)
    return values_and_indices(MinBackward0, input, dim, keepdim, "argmin", return_types.min)


# -- amax / amin: the extreme value over several dims, ties sharing the gradient ------------------------------
class AmaxBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim), "
                            "restore_reduced_dims(result, dim, keepdim) == self, dim)", r"\bar{y}\,[x = \max x] / k")}

    def forward(ctx, self, dim=(), keepdim=False):
        return _extreme(ctx, self, dim, keepdim, "amax")

    def backward(ctx, grad):
        return _share_among_winners(ctx, grad)

    def backward_graph(ctx, grad):
        return _share_among_winners_graph(ctx, grad)


class AminBackward0(AmaxBackward0):
    derivatives = {"self": ("scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim), "
                            "restore_reduced_dims(result, dim, keepdim) == self, dim)", r"\bar{y}\,[x = \min x] / k")}

    def forward(ctx, self, dim=(), keepdim=False):
        return _extreme(ctx, self, dim, keepdim, "amin")


def _extreme(ctx, self, dim, keepdim, kernel):
    given = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    check_nonempty_reduction(kernel, self, given)
    axes = _dims(given, self.ndim) if given else tuple(range(self.ndim))
    ctx.save(dim=saved_dim(given), keepdim=keepdim, self=self)
    ctx.save_result()
    ctx.axes = axes
    return getattr(self._backend, kernel)(self._data, axes if self.ndim else None, keepdims=keepdim)


def _share_among_winners(ctx, grad):
    """``(grad / count) * mask``: the gradient split evenly among the elements equal to the extreme."""
    backend = ctx.backend
    self, result = ctx.saved("self", "result")
    keepdim = ctx.saved("keepdim")
    shape = tuple(self.shape)
    mask = backend.astype(backend.eq(self, _expand_back(backend, result, shape, ctx.axes, keepdim)),
                          _dtype.from_any(grad.dtype))
    count = backend.sum(mask, ctx.axes, keepdims=True)
    return backend.mul(_expand_back(backend, backend.reshape(grad, _kept_shape_all(shape, ctx.axes)), shape,
                                    ctx.axes, True), backend.div(mask, count))


def _share_among_winners_graph(ctx, grad):
    """PyTorch's ``scale_grad_by_count(restore_reduced_dims(grad), mask, dim)``: ``(grad / count) * mask``."""
    backend = ctx.backend
    self, result = ctx.saved("self", "result")
    keepdim = ctx.saved("keepdim")
    kept = _kept_shape_all(tuple(self.shape), ctx.axes)
    restored = grad if keepdim else grad.reshape(kept)
    mask = backend.eq(self, backend.reshape(result, kept))
    count = Tensor._make(backend.astype(backend.sum(backend.astype(mask, _dtype.int64), ctx.axes, keepdims=True),
                                        _dtype.int64), backend=backend)
    return (restored / count) * Tensor._make(mask, backend=backend)


def _kept_shape_all(shape, axes) -> tuple:
    return tuple(1 if i in axes else size for i, size in enumerate(shape))


def amax(input, dim=(), keepdim: bool = False):
    return AmaxBackward0.apply(input, dim, keepdim)


def amin(input, dim=(), keepdim: bool = False):
    return AminBackward0.apply(input, dim, keepdim)


# -- variance and standard deviation ----------------------------------------------------------------------------
def _correction(dim, unbiased, correction):
    """What PyTorch saves as ``correction``: None for a plain ``x.var()``, else the number used."""
    if correction is not None:
        return correction
    if unbiased is None:
        return None if dim is None else 1
    return 1 if unbiased else 0


DOF_WARNING = ("{}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input "
               "numel divided by output numel). (Triggered internally at /__w/pytorch/pytorch/aten/src/ATen/native/"
               "ReduceOps.cpp:1861.)")


def _variance(ctx, self, dim, correction, keepdim, name: str = "var", stacklevel: int = 4):
    """``sum((x - mean)^2) / (n - correction)`` over ``dim`` (all elements when None). With no degrees of
    freedom left PyTorch warns (every call) under the name of the function called: ``name``."""
    if not self.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    backend = self._backend
    axes = _dims_or_none(dim, self.ndim, wrap_first=False)
    count = 1
    for axis in axes if axes is not None else range(self.ndim):
        count *= self.shape[axis]
    dof = count - (1 if correction is None else correction)
    if dof <= 0:
        warnings.warn(DOF_WARNING.format(name), UserWarning, stacklevel=stacklevel)
    data = self._data
    mean = backend.div(backend.sum(data, axes, keepdims=True), count)
    centred = backend.sub(data, mean)
    ctx.axes, ctx.dof = axes, dof
    squares = backend.sum(backend.mul(centred, centred), axes, keepdims=keepdim)
    return backend.div(squares, dof) if dof > 0 else backend.div(squares, 0.0)


class VarBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("var_backward(grad, self, dim, correction, keepdim)",
                            r"\bar{y}\,2 (x - \bar{x}) / (n - c)")}

    def forward(ctx, self, dim, correction, keepdim):
        ctx.save(correction=correction, dim=saved_dim(dim) if dim is not None else None, keepdim=keepdim, self=self)
        return _variance(ctx, self, dim, correction, keepdim)

    def backward(ctx, grad):
        return _variance_backward(ctx, grad)

    def backward_graph(ctx, grad):
        return _variance_backward_graph(ctx, grad)


class StdBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("std_backward(result, grad, self, dim, correction, keepdim)",
                            r"\bar{y}\,(x - \bar{x}) / ((n - c)\,\sigma)")}

    def forward(ctx, self, dim, correction, keepdim):
        ctx.save(correction=correction, dim=saved_dim(dim) if dim is not None else None, keepdim=keepdim, self=self)
        ctx.save_result()
        return self._backend.sqrt(_variance(ctx, self, dim, correction, keepdim, "std"))

    def backward(ctx, grad):
        backend = ctx.backend
        result = ctx.saved("result")
        # d std = d var / (2 std); 0 where the deviation is 0, as PyTorch's masked_fill_ makes it
        grad = backend.where(backend.eq(result, 0), 0.0, backend.div(grad, backend.mul(result, 2)))
        return _variance_backward(ctx, grad)

    def backward_graph(ctx, grad):
        result = ctx.saved_graph("result")
        grad = (grad / MulBackward1.apply(result, 2)).masked_fill_(
            Tensor._make(ctx.backend.eq(result._data, 0), backend=ctx.backend), 0)
        return _variance_backward_graph(ctx, grad)


def _variance_backward(ctx, grad):
    """``2 / (n - correction) * grad * (x - mean)``, the gradient put back along the reduced dims first."""
    backend = ctx.backend
    self, keepdim = ctx.saved("self", "keepdim")
    axes = ctx.axes
    shape = tuple(self.shape)
    mean = backend.div(backend.sum(self, axes, keepdims=True), _count(shape, axes))
    if axes is not None:
        grad = _expand_back(backend, grad, shape, axes, keepdim)
    return backend.mul(backend.mul(grad, 2.0 / ctx.dof if ctx.dof > 0 else float("inf")), backend.sub(self, mean))


def _variance_backward_graph(ctx, grad):
    """PyTorch's ``var_backward`` recorded: ``(2 / dof) * grad * (self - self.mean(dim, True))``. The C++
    compiler builds the right operand of that last ``*`` first, so ``self - mean`` comes before ``(2 / dof)
    * grad`` here too (their order decides the second backward's step order)."""
    self, keepdim = ctx.saved_graph("self"), ctx.saved("keepdim")
    if ctx.axes is None:
        centred = self - self.mean()
        return MulBackward1.apply(grad, 2.0 / ctx.dof) * centred
    if not keepdim and self.ndim > 1:
        for axis in ctx.axes:
            grad = grad.unsqueeze(axis)
    centred = self - self.mean(ctx.axes, keepdim=True)
    return MulBackward1.apply(grad, 2.0 / ctx.dof) * centred


def _count(shape, axes) -> int:
    count = 1
    for axis in axes if axes is not None else range(len(shape)):
        count *= shape[axis]
    return count


def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return _spread_of(VarBackward0, input, dim, unbiased, keepdim, correction)


def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return _spread_of(StdBackward0, input, dim, unbiased, keepdim, correction)


def _spread_of(node, input, dim, unbiased, keepdim, correction):
    """``var`` or ``std`` with PyTorch's overloads: ``var(unbiased)`` takes a bool first."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return node.apply(input, _dim_tuple(dim), _correction(dim, unbiased, correction), keepdim)


def _dim_tuple(dim):
    return None if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)


# -- product ----------------------------------------------------------------------------------------------------
def _others_product(backend, data, axis):
    """The product of all the other elements along ``axis`` (exact with zeros: no division)."""
    ones = backend.full(_kept_shape(data.shape, axis), 1, _dtype.from_any(data.dtype), backend.device_of(data))
    before = backend.cumprod(backend.concatenate([ones, _drop_last(backend, data, axis)], axis), axis)
    after = backend.flip(backend.cumprod(backend.flip(backend.concatenate(
        [_drop_first(backend, data, axis), ones], axis), (axis,)), axis), (axis,))
    return backend.mul(before, after)


def _drop_last(backend, data, axis):
    return backend.getitem(data, (slice(None),) * axis + (slice(None, -1),))


def _drop_first(backend, data, axis):
    return backend.getitem(data, (slice(None),) * axis + (slice(1, None),))


class ProdBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("prod_backward(grad, self.to(grad.scalar_type()), result)", r"\bar{y}\,\prod_{j \ne i} x_j")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        result = self._backend.prod(self._data, None)
        return result if self.dtype.is_floating_point else self._backend.astype(result, _dtype.int64)

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        if self.ndim == 0:
            return grad
        if self.size == 0:  # the empty product: no element to send a gradient to
            return backend.zeros_like(self)
        flat = backend.reshape(self, (-1,))
        return backend.mul(backend.reshape(_others_product(backend, flat, 0), tuple(self.shape)), grad)

    def backward_graph(ctx, grad):
        self = ctx.saved_graph("self")
        if self.ndim == 0:
            return grad
        if self.numel() == 0:
            return Tensor._make(ctx.backend.zeros_like(self._data), backend=ctx.backend)
        if ctx.backend.any(ctx.backend.eq(self._data, 0)):  # PyTorch's zero-safe formula, recorded
            from gradviz.ops.double_backward import prod_safe_zeros_backward_graph

            return prod_safe_zeros_backward_graph(grad, self.contiguous().view(-1), 0).view_as(self)
        return grad * (ctx.saved_graph("result") / self)


class ProdBackward1(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("prod_backward(grad, self.to(grad.scalar_type()), result, dim, keepdim)",
                            r"\bar{y}\,\prod_{j \ne i} x_j")}

    def forward(ctx, self, dim, keepdim=False):
        axis = wrap_dim(dim, builtins_max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), keepdim=keepdim, self=self)
        ctx.save_result()
        ctx.axis = axis
        result = self._backend.prod(self._data, axis if self.ndim else None, keepdims=keepdim and self.ndim > 0)
        return result if self.dtype.is_floating_point else self._backend.astype(result, _dtype.int64)

    def backward(ctx, grad):
        backend = ctx.backend
        self, keepdim = ctx.saved("self", "keepdim")
        if self.ndim == 0:
            return grad
        grad = _expand_back(backend, grad, tuple(self.shape), (ctx.axis,), keepdim)
        return backend.mul(_others_product(backend, self, ctx.axis), grad)

    def backward_graph(ctx, grad):
        self, keepdim = ctx.saved_graph("self"), ctx.saved("keepdim")
        if self.ndim == 0:
            return grad
        result = ctx.saved_graph("result")
        if not keepdim:  # both unsqueezed first, as PyTorch's prod_backward does (whichever branch follows)
            grad, result = grad.unsqueeze(ctx.axis), result.unsqueeze(ctx.axis)
        if ctx.backend.any(ctx.backend.eq(self._data, 0)):  # PyTorch's zero-safe formula, recorded
            from gradviz.ops.double_backward import prod_safe_zeros_backward_graph

            return prod_safe_zeros_backward_graph(grad, self, ctx.axis)
        return grad * (result / self)


def builtins_max(a, b):
    return a if a > b else b


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return ProdBackward0.apply(input)
    return ProdBackward1.apply(input, dim, keepdim=keepdim)


# -- logsumexp ----------------------------------------------------------------------------------------------------
class LogsumexpBackward0(OpFunction):
    """``log(sum(exp(x)))`` along ``dim``, computed from the largest element so that it never overflows."""

    inputs = ("self",)
    derivatives = {"self": ("logsumexp_backward(grad, self, result, dim, keepdim)", r"\bar{y}\,e^{x - y}")}

    def forward(ctx, self, dim, keepdim=False):
        given = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        axes = _dims_or_none(given, self.ndim)
        ctx.save(dim=saved_dim(given), keepdim=keepdim, self=self)
        ctx.save_result()
        ctx.axes = axes
        backend = self._backend
        data = float_data(self)
        # an empty reduction: exp sums to 0, its log is -inf (no largest element to shift by)
        top = backend.amax(data, axes, keepdims=True) if self.numel() else backend.sum(data, axes, keepdims=True)
        top = backend.where(backend.isinf(top), 0.0, top)  # all -inf (or an inf): no shift
        summed = backend.sum(backend.exp(backend.sub(data, top)), axes, keepdims=True)
        result = backend.add(backend.log(summed), top)
        return result if keepdim or axes is None else backend.reshape(result, tuple(
            size for i, size in enumerate(self.shape) if i not in axes))

    def backward(ctx, grad):
        backend = ctx.backend
        self, result, keepdim = ctx.saved("self", "result", "keepdim")
        if ctx.axes is None:
            return backend.mul(grad, backend.exp(backend.sub(self, result)))
        shape = tuple(self.shape)
        grad = _expand_back(backend, grad, shape, ctx.axes, keepdim)
        result = _expand_back(backend, result, shape, ctx.axes, keepdim)
        return backend.mul(grad, backend.exp(backend.sub(self, result)))

    def backward_graph(ctx, grad):
        self, result, keepdim = ctx.saved_graph("self"), ctx.saved_graph("result"), ctx.saved("keepdim")
        if not keepdim and ctx.axes is not None:
            for axis in ctx.axes:
                grad, result = grad.unsqueeze(axis), result.unsqueeze(axis)
        return grad * (self - result).exp()


_NO_DIM = object()  # logsumexp's dim has no default: torch's argument parser says so in its own words


def logsumexp(input, dim=_NO_DIM, keepdim: bool = False):
    if dim is _NO_DIM:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    if isinstance(dim, (tuple, list)) and not dim and not keepdim and input.numel() and input.ndim:  # out= shape check
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape [{', '.join(['1'] * input.ndim)}]")
    return LogsumexpBackward0.apply(input, dim, keepdim=keepdim)


# -- running sums and products -------------------------------------------------------------------------------------
class CumsumBackward0(OpFunction):
    """The running sum: each input element reaches every later output, so its gradient is the sum
    of the gradients from its position to the end."""

    inputs = ("self",)
    derivatives = {"self": ("cumsum_backward(grad.to(self.scalar_type()), dim)", r"\sum_{j \ge i} \bar{y}_j")}

    def forward(ctx, self, dim):
        axis = wrap_dim(dim, builtins_max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim))
        ctx.axis = axis
        data = self._data if self.dtype.is_floating_point else self._backend.astype(self._data, _dtype.int64)
        return self._backend.cumsum(data, axis) if self.ndim else self._backend.copy(data)

    def backward(ctx, grad):
        backend = ctx.backend
        if grad.ndim == 0 or grad.shape[ctx.axis] <= 1:
            return grad
        return backend.flip(backend.cumsum(backend.flip(grad, (ctx.axis,)), ctx.axis), (ctx.axis,))

    def backward_graph(ctx, grad):
        if grad.ndim == 0 or grad.numel() <= 1 or grad.shape[ctx.axis] == 1:
            return grad
        from gradviz.ops.matrix import flip

        from gradviz.ops.double_backward import _signed

        dim = _signed(ctx.saved("dim"))  # as given: the recorded flips and cumsum save it (-1 stays -1)
        return flip(cumsum(flip(grad, (dim,)), dim), (dim,))


class CumprodBackward0(OpFunction):
    """The running product: output ``j`` is ``x_0 ... x_j``, so ``x_i`` reaches every output from ``i`` on."""

    inputs = ("self",)
    derivatives = {"self": ("cumprod_backward(grad.to(self.scalar_type()), self, dim, result)",
                            r"\sum_{j \ge i} \bar{y}_j \prod_{k \le j, k \ne i} x_k")}

    def forward(ctx, self, dim):
        axis = wrap_dim(dim, builtins_max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), self=self)
        ctx.save_result()
        ctx.axis = axis
        data = self._data if self.dtype.is_floating_point else self._backend.astype(self._data, _dtype.int64)
        return self._backend.cumprod(data, axis) if self.ndim else self._backend.copy(data)

    def backward(ctx, grad):
        """For each ``i``: the running product with ``x_i`` replaced by 1, weighted by the gradient from ``i`` on."""
        backend = ctx.backend
        self = ctx.saved("self")
        if self.ndim == 0:
            return grad
        axis = ctx.axis
        pieces = []
        for i in range(self.shape[axis]):
            at_i = (slice(None),) * axis + (slice(i, i + 1),)
            without = backend.copy(self)
            backend.assign(without, 1, at_i)
            running = backend.mul(backend.cumprod(without, axis), grad)
            pieces.append(backend.sum(backend.getitem(running, (slice(None),) * axis + (slice(i, None),)),
                                      axis, keepdims=True))
        return backend.concatenate(pieces, axis)

    def backward_graph(ctx, grad):
        """PyTorch's ``cumprod_backward`` recorded (``ops/double_backward.py``)."""
        from gradviz.ops.double_backward import cumprod_backward_graph

        self = ctx.saved_graph("self")
        if self.ndim == 0:
            return grad
        return cumprod_backward_graph(grad, self, ctx.axis, ctx.saved_graph("result"))


def cumsum(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return CumsumBackward0.apply(input, dim)


def cumprod(input, dim, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return CumprodBackward0.apply(input, dim)
