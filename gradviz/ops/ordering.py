"""Ordering along a dim: ``sort``, ``argsort``, ``msort``, ``topk``.

The values are the input's elements moved to new places, so each gradient goes back to the place
its element came from (PyTorch's ``value_selecting_reduction_backward``: zeros, with the gradient
scattered to ``indices``). The indices are integers and carry no gradient.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops import return_types
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.tensor import Tensor


class SortBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), true)",
                            r"\bar{y} \text{ back to where each element came from}")}

    def forward(ctx, self, dim, indices):
        ctx.save(dim=saved_dim(dim), indices=Tensor._make(indices, backend=self._backend),
                 self_sym_sizes=tuple(self.shape))
        axis = ctx.axis = wrap_dim(dim, max(self.ndim, 1))
        backend = self._backend
        return backend.take_along_axis(self._data, indices, axis) if self.ndim else backend.copy(self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        shape = ctx.saved("self_sym_sizes")
        if not shape:
            return grad
        out = backend.full(shape, 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return backend.scatter_add(out, ctx.axis, ctx.saved("indices"), grad)

    def backward_graph(ctx, grad):
        """``zeros.scatter(dim, indices, grad)`` recorded (ScatterBackward0), as PyTorch's formula writes it."""
        from gradviz.ops.double_backward import ScatterBackward0

        backend = ctx.backend
        shape = ctx.saved("self_sym_sizes")
        if not shape:
            return grad
        zeros = Tensor._make(backend.full(shape, 0, grad.dtype, grad.device), backend=backend)
        return ScatterBackward0.apply(zeros, grad, ctx.axis, ctx.saved_graph("indices"))


class SortBackward1(SortBackward0):
    """``sort(..., stable=...)``: PyTorch's other overload, the same derivative."""


class TopkBackward0(SortBackward0):
    """The ``k`` largest (or smallest) along ``dim``: the gradient goes back to those ``k`` places."""


def _order(input, dim: int, descending: bool):
    backend = input._backend
    axis = wrap_dim(dim, max(input.ndim, 1))
    if not input.ndim:
        return backend.full((), 0, _dtype.int64, backend.device_of(input._data))
    return backend.astype(backend.argsort(input._data, axis, descending), _dtype.int64)


def sort(input, dim: int = -1, descending: bool = False, *, stable=None):
    """``(values, indices)`` along ``dim``; equal values keep their order."""
    if isinstance(dim, bool):  # sort(stable, dim, descending): PyTorch's other overload
        raise TypeError("gradviz's sort takes dim first: sort(dim=-1, descending=False, stable=None)")
    indices = _order(input, dim, descending)
    node = SortBackward1 if stable is not None else SortBackward0
    values = node.apply(input, dim, indices)
    return return_types.sort(values, Tensor._make(indices, backend=input._backend))


def argsort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):
    return Tensor._make(_order(input, dim, descending), backend=input._backend)


def msort(input):
    return sort(input, 0).values


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim`` and their indices."""
    if input.dtype is _dtype.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    size = input.shape[wrap_dim(dim, max(input.ndim, 1))] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    backend = input._backend
    axis = wrap_dim(dim, max(input.ndim, 1))
    order = _order(input, dim, largest)
    indices = backend.getitem(order, (slice(None),) * axis + (slice(0, k),)) if input.ndim else order
    values = TopkBackward0.apply(input, dim, indices)
    return return_types.topk(values, Tensor._make(indices, backend=backend))
