"""Writing by index along a dim: ``scatter`` (a tensor or a number written where ``index`` points),
``scatter_add``, ``index_add``, with their in-place forms (``zeros.scatter_(1, labels, 1)`` is the
usual one-hot encoding).

The nodes for a tensor source (ScatterBackward0, ScatterAddBackward0, IndexAddBackward0) live in
``ops/double_backward.py``, since recorded backward passes make them too; a number written
(ScatterBackward1) is here.
"""
from __future__ import annotations

import warnings

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.double_backward import IndexAddBackward0, ScatterAddBackward0, ScatterBackward0
from gradviz.ops.inplace import in_place

REDUCE_DEPRECATED = ("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future "
                     "PyTorch release. Use torch.scatter_reduce instead for more reduction options. (Triggered "
                     "internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorAdvancedIndexing.cpp:225.)")
_warned_reduce = False
from gradviz.ops.no_derivative import NotImplemented, without_derivative
from gradviz.tensor import Tensor


class ScatterBackward1(OpFunction):
    """``self.scatter(dim, index, value)``: a number written where ``index`` points; those places get no
    gradient, the others pass it through."""

    inputs = ("self",)
    derivatives = {"self": ("grad.scatter(dim, index, 0)", r"\bar{y}\,[\text{not written}]")}

    def forward(ctx, self, dim, index, value):
        ctx.save(dim=saved_dim(dim), index=index)
        axis = ctx.axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.dim = dim
        return self._backend.scatter(self._backend.copy(self._data), axis, index._data, value)

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.scatter(backend.copy(grad), ctx.axis, ctx.saved("index"), 0)

    def backward_graph(ctx, grad):
        return scatter(grad, ctx.dim, ctx.saved_graph("index"), 0)


def _check_index(name: str, index) -> None:
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def scatter(input, dim: int, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src``'s elements (or a number) written where ``index`` points along ``dim``;
    ``reduce='add'`` or ``'multiply'`` combines them with what is there instead (PyTorch records no
    derivative for those: a NotImplemented node)."""
    _check_index("scatter", index)
    if reduce is not None:
        return _scatter_reduce_old(input, dim, index, value if src is None else src, reduce)
    source = value if src is None else src
    if isinstance(source, Tensor):
        return ScatterBackward0.apply(input, source, dim, index)
    return ScatterBackward1.apply(input, dim, index, source)


def scatter_add(input, dim: int, index, src):
    """A copy of ``input`` with ``src``'s elements added where ``index`` points along ``dim``."""
    _check_index("scatter_add", index)
    return ScatterAddBackward0.apply(input, src, dim, index)


def index_add(input, dim: int, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source``'s slices added at ``index`` along ``dim``."""
    return IndexAddBackward0.apply(input, source, dim, index, alpha)


# -- scatter_reduce, and scatter's reduce= ----------------------------------------------------------
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduceBackward0(OpFunction):
    """``self.scatter_reduce(dim, index, src, reduce, include_self=True)``: ``src``'s elements reduced
    (summed, multiplied, averaged, max or min) into a copy of ``self`` where ``index`` points.

    The gradients, as PyTorch's ``scatter_reduce_backward`` computes them: sum passes ``grad`` to
    ``self`` and reads it back at ``index`` for ``src``; mean divides both by the count reduced into
    each place; prod multiplies by the product of the others (zeros handled apart); amax/amin share
    the gradient evenly among the elements equal to the result. With ``include_self=False`` the places
    written get no gradient for ``self``.
    """

    inputs = ("self", "src")
    derivatives = {"self": ("scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)",
                            r"\bar{z}\,\partial z / \partial x"),
                   "src": ("scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)",
                           r"\bar{z}_{\mathrm{index}}\,\partial z / \partial s")}

    def forward(ctx, self, src, dim, index, reduce, include_self):
        ctx.save(dim=saved_dim(dim), include_self=include_self, index=index, reduce=reduce, self=self, src=src)
        ctx.save_result()
        axis = ctx.axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.src_shape = tuple(src.shape)
        backend = self._backend
        source = src._data if src.dtype is self.dtype else backend.astype(src._data, self.dtype)
        return backend.scatter_reduce(backend.copy(self._data), axis, index._data, source, reduce, include_self)

    def backward(ctx, grad):
        from gradviz.ops.double_backward import _fit_source

        backend = ctx.backend
        self, src, index, result = ctx.saved("self", "src", "index", "result")
        reduce, include_self = ctx.saved("reduce", "include_self")
        axis = ctx.axis
        src = backend.getitem(src, tuple(slice(0, size) for size in index.shape))  # the part index reads
        dtype = _dtype.from_any(grad.dtype)

        def scatter_add(base, values):
            return backend.scatter_reduce(backend.copy(base), axis, index, values, "sum", True)

        if reduce == "sum":
            grad_self, grad_src = grad, backend.gather(grad, axis, index)
        elif reduce == "mean":
            counts = backend.full(tuple(grad.shape), 1 if include_self else 0, dtype, backend.device_of(grad))
            counts = scatter_add(counts, backend.full(tuple(index.shape), 1, dtype, backend.device_of(grad)))
            counts = backend.where(backend.eq(counts, 0), 1.0, counts)
            grad_self = backend.div(grad, counts)
            grad_src = backend.div(backend.gather(grad, axis, index), backend.gather(counts, axis, index))
        elif reduce == "prod":
            masked_self = backend.where(backend.eq(self, 0), 1.0, self)
            masked_result = backend.scatter_reduce(backend.copy(masked_self), axis, index, src, reduce, include_self)
            grad_self = backend.div(backend.mul(grad, masked_result), masked_self)
            src_zero = backend.eq(src, 0)
            zeros_per_place = scatter_add(backend.full(tuple(self.shape), 0, dtype, backend.device_of(grad)),
                                          backend.astype(src_zero, dtype))
            single_zero = backend.logical_and(src_zero, backend.eq(backend.gather(zeros_per_place, axis, index), 1))
            masked_src = backend.where(single_zero, 1.0, src)
            masked_src_result = backend.scatter_reduce(backend.copy(self), axis, index, masked_src, reduce, include_self)
            grad_src = backend.where(
                single_zero, backend.gather(backend.mul(grad, masked_src_result), axis, index),
                backend.div(backend.gather(backend.mul(grad, result), axis, index), backend.where(src_zero, 1.0, src)))
        else:  # amax, amin: shared evenly among the elements equal to the result
            value = backend.gather(result, axis, index)
            self_is_result = backend.astype(backend.eq(self, result), dtype)
            src_is_result = backend.astype(backend.eq(src, value), dtype)
            shares = scatter_add(self_is_result, src_is_result)
            distributed = backend.div(grad, shares)
            grad_self = backend.mul(self_is_result, distributed)
            grad_src = backend.mul(src_is_result, backend.gather(distributed, axis, index))
        if not include_self:
            grad_self = backend.scatter(backend.copy(grad_self), axis, index, 0)
        needs = ctx.needs_input_grad
        return (grad_self if needs[0] else None), (_fit_source(ctx, grad_src) if needs[1] else None)

    def backward_graph(ctx, grad):
        """PyTorch's ``scatter_reduce_backward`` recorded op by op (the operands of a C++ binary operator
        or call built right first). Not recorded: an index smaller than ``src``, and prod with more than one
        zero of ``src`` reduced into one place (PyTorch's DelayedError)."""
        from gradviz.ops.comparison import where
        from gradviz.ops.double_backward import _signed

        self, src, index, result = ctx.saved_graph("self", "src", "index", "result")
        reduce, include_self = ctx.saved("reduce", "include_self")
        if tuple(index.shape) != tuple(src.shape):
            return OpFunction.backward_graph(ctx, grad)
        dim = _signed(ctx.saved("dim"))
        backend = ctx.backend

        def constant(array):
            return Tensor._make(array, backend=backend)

        if reduce == "sum":
            grad_self, grad_src = grad, grad.gather(dim, index)
        elif reduce == "mean":
            counts = constant(backend.full(tuple(grad.shape), 1 if include_self else 0, grad.dtype, grad.device))
            counts = counts.scatter_add(dim, index, constant(backend.full(tuple(src.shape), 1, src.dtype, src.device)))
            counts.masked_fill_(counts == 0, 1)
            grad_self = grad / counts
            grad_src = grad.gather(dim, index) / counts.gather(dim, index)
        elif reduce == "prod":
            masked_self = self.masked_fill(self == 0, 1)
            masked_self_result = masked_self.scatter_reduce(dim, index, src, reduce, include_self=include_self)
            grad_self = (grad * masked_self_result) / masked_self
            src_zero = src == 0
            zeros = constant(backend.full(tuple(self.shape), 0, self.dtype, self.device))
            src_num_zeros = zeros.scatter_add(dim, index, src_zero.to(self.dtype)).gather(dim, index)
            if bool((src_num_zeros > 1).any()):
                return OpFunction.backward_graph(ctx, grad)
            src_single_zero = src_zero & (src_num_zeros == 1)
            masked_src = src.masked_fill(src_single_zero, 1)
            masked_src_result = self.scatter_reduce(dim, index, masked_src, reduce, include_self=include_self)
            otherwise = src.masked_fill(src_zero, 1)
            otherwise = (grad * result).gather(dim, index) / otherwise
            grad_src = where(src_single_zero, (grad * masked_src_result).gather(dim, index), otherwise)
        else:  # amax, amin
            value = result.gather(dim, index)
            self_is_result = (self == result).to(self.dtype)
            src_is_result = (src == value).to(self.dtype)
            grad_distributed = grad / self_is_result.scatter_add(dim, index, src_is_result)
            grad_self = (self == result) * grad_distributed
            grad_src = (src == value) * grad_distributed.gather(dim, index)
        if not include_self:
            grad_self = grad_self.scatter(dim, index, 0)
        needs = ctx.needs_input_grad
        return (grad_self if needs[0] else None), (grad_src if needs[1] else None)


def _reduce_into(self, values, dim, index, reduce):
    """``scatter(..., reduce=)``'s value: ``values`` added or multiplied into a copy of ``self``."""
    backend = self._backend
    return backend.scatter_reduce(backend.copy(self._data), wrap_dim(dim, max(self.ndim, 1)), index._data, values,
                                  "sum" if reduce == "add" else "prod", True)


def _scatter_reduce_old(input, dim, index, source, reduce):
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(source, Tensor):
        global _warned_reduce
        if not _warned_reduce:  # TORCH_WARN_ONCE: once per process
            _warned_reduce = True
            warnings.warn(REDUCE_DEPRECATED, UserWarning, stacklevel=3)
        values = source._data if source.dtype is input.dtype else input._backend.astype(source._data, input.dtype)
        return without_derivative(NotImplemented, _reduce_into(input, values, dim, index, reduce), (input, source),
                                  "scatter")
    values = input._backend.full(tuple(index.shape), source, input.dtype, input.device)
    return without_derivative(NotImplemented, _reduce_into(input, values, dim, index, reduce), (input,), "scatter")


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """A copy of ``input`` with ``src``'s elements reduced into it where ``index`` points along ``dim``."""
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _check_index("scatter", index)  # PyTorch's check, and its message, are scatter's
    return ScatterReduceBackward0.apply(input, src, dim, index, reduce, include_self)


scatter_reduce_ = in_place(scatter_reduce, "scatter_reduce_")
scatter_ = in_place(scatter, "scatter_")
scatter_add_ = in_place(scatter_add, "scatter_add_")
index_add_ = in_place(index_add, "index_add_")
