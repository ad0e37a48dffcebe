"""Reading and writing by index: ``take``, ``take_along_dim``, ``put``, ``index_fill``, ``index_copy`` (and the
in-place ``put_``, ``index_fill_``, ``index_copy_``).

A read sends each gradient back to the place it was read from (``take``: summed where an index repeats);
a write sends none to the places it overwrote, and the written ``source`` gets the gradient of the places
it went to. ``take_along_dim`` has no node of its own: PyTorch writes it with ``expand`` and ``gather``
(or ``view(-1)`` and ``gather`` without a dim), so its graph shows those.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.double_backward import IndexFillBackward1, _signed
from gradviz.tensor import Tensor


def _index_array(index):
    return np.asarray(index._backend.to_numpy(index._data))


# -- take: the input read as one flat row ----------------------------------------------------------------
class TakeBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("take_backward(grad, self, index)", r"\bar{y}\ \text{summed back at each flat index}")}

    def forward(ctx, self, index):
        ctx.save(index=index, self=self)
        backend = self._backend
        flat_index = _index_array(index).reshape(-1) % max(self.numel(), 1)
        ctx.flat = flat_index
        flat = backend.reshape(self._data, (-1,))
        picked = backend.take(flat, backend.array(flat_index, _dtype.int64, backend.device_of(self._data)), 0)
        return backend.reshape(picked, tuple(index.shape))

    def backward(ctx, grad):
        backend = ctx.backend
        self = ctx.saved("self")
        out = backend.full((int(np.prod(tuple(self.shape))),), 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        key = (backend.array(ctx.flat, _dtype.int64, backend.device_of(grad)),)
        return backend.reshape(backend.index_add(out, key, backend.reshape(grad, (-1,))), tuple(self.shape))

    def backward_graph(ctx, grad):
        """PyTorch's ``take_backward``: ``zeros_like(self).put_(index, grad, accumulate=True)`` (PutBackward0)."""
        backend = ctx.backend
        self, index = ctx.saved("self", "index")
        zeros = Tensor._make(backend.full(tuple(self.shape), 0, grad.dtype, grad.device), backend=backend)
        return PutBackward0.apply(zeros, grad, Tensor._make(index, backend=backend), True)


def take(input, index):
    """``input.flatten()[index]``, shaped like ``index`` (negative indices count from the end)."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_dtype.SCALAR_TYPE_NAMES[index.dtype.name]}")
    _check_flat_range(input, index)
    return TakeBackward0.apply(input, index)


def take_along_dim(input, indices, dim=None):
    """``gather`` with ``input`` and ``indices`` broadcast against each other (PyTorch's own composition)."""
    if dim is None:
        return input.view(-1).gather(0, indices.view(-1))
    if input.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_dtype.SCALAR_TYPE_NAMES[indices.dtype.name]}")
    from gradviz.ops._util import broadcast_shapes

    axis = wrap_dim(dim, input.ndim)
    self_sizes = list(input.shape)
    self_sizes[axis] = indices.shape[axis]
    indices_shape = broadcast_shapes(tuple(self_sizes), tuple(indices.shape))
    index_sizes = list(indices.shape)
    index_sizes[axis] = input.shape[axis]
    input_shape = broadcast_shapes(tuple(index_sizes), tuple(input.shape))
    return input.expand(input_shape).gather(axis, indices.expand(indices_shape))


# -- put: values written at flat indices -----------------------------------------------------------------------
class PutBackward0(OpFunction):
    """``self`` read as one flat row with ``source``'s values written (or, with ``accumulate``, added) at ``index``."""

    inputs = ("self", "source")
    derivatives = {"self": ("accumulate ? grad : grad.put(index, zeros_like(source), false)",
                            r"\bar{y}\ \text{(0 at the overwritten places)}"),
                   "source": ("grad.take(index).reshape_as(source)", r"\bar{y}\ \text{at each flat index}")}

    def forward(ctx, self, source, index, accumulate):
        ctx.save(accumulate=accumulate, index=index, source=source if ctx.needs_input_grad[1:] == (True,) else None)
        backend = self._backend
        device = backend.device_of(self._data)
        places = backend.array(_index_array(index).reshape(-1) % max(self.numel(), 1), _dtype.int64, device)
        ctx.places = places
        flat = backend.reshape(backend.copy(self._data), (-1,))
        values = backend.reshape(backend.astype(source._data, self.dtype), (-1,))
        written = backend.index_add(flat, (places,), values) if accumulate else backend.assign(flat, values, (places,))
        return backend.reshape(written, tuple(self.shape))

    def backward(ctx, grad):
        backend = ctx.backend
        needs = ctx.needs_input_grad
        grad_self = grad_source = None
        if needs[0]:
            grad_self = grad if ctx.saved("accumulate") else backend.reshape(
                backend.assign(backend.reshape(backend.copy(grad), (-1,)), 0, (ctx.places,)), tuple(grad.shape))
        if needs[1]:
            grad_source = backend.reshape(backend.take(backend.reshape(grad, (-1,)), ctx.places, 0),
                                          tuple(ctx.saved("source").shape))
        return grad_self, grad_source

    def backward_graph(ctx, grad):
        backend = ctx.backend
        index = Tensor._make(ctx.saved("index"), backend=backend)
        needs = ctx.needs_input_grad
        grad_self = grad_source = None
        if needs[0]:
            grad_self = grad if ctx.saved("accumulate") else put(
                grad, index, Tensor._make(backend.full((index.numel(),), 0, grad.dtype, grad.device), backend=backend))
        if needs[1]:
            grad_source = take(grad, index).reshape_as(ctx.saved_graph("source"))
        return grad_self, grad_source


def put(input, index, source, accumulate: bool = False):
    """A copy of ``input`` with ``source``'s values at the flat ``index`` (added there with ``accumulate``)."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_dtype.SCALAR_TYPE_NAMES[index.dtype.name]}")
    if source.dtype is not input.dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_dtype.SCALAR_TYPE_NAMES[input.dtype.name]} and source.dtype = "
                           f"{_dtype.SCALAR_TYPE_NAMES[source.dtype.name]}")
    if source.numel() != index.numel():
        raise IndexError("put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    _check_flat_range(input, index)
    return PutBackward0.apply(input, source, index, accumulate)


def _check_flat_range(input, index) -> None:
    count = input.numel()
    values = _index_array(index)
    bad = values[(values >= count) | (values < -count)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {int(bad.flat[0])} on a tensor of {count} elements.")


# -- index_fill: a number written at some places along a dim -------------------------------------------------
def _check_index(name: str, index) -> None:
    if index.dtype is not _dtype.int64:
        raise IndexError(f"{name}(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")


class IndexFillBackward0(OpFunction):
    """``self.index_fill(dim, index, number)``: the filled places get no gradient, the rest pass it through."""

    inputs = ("self",)
    derivatives = {"self": ("grad.index_fill(dim, index, 0)", r"\bar{y}\ \text{with 0 at the filled places}")}

    def forward(ctx, self, dim, index, value):
        ctx.save(dim=saved_dim(dim), index=index)
        key = ctx.key = (slice(None),) * wrap_dim(dim, max(self.ndim, 1)) + (_index_array(index),)
        backend = self._backend
        return backend.assign(backend.copy(self._data), value, key if self.ndim else ...)

    def backward(ctx, grad):
        return ctx.backend.assign(ctx.backend.copy(grad), 0, ctx.key if grad.ndim else ...)

    def backward_graph(ctx, grad):
        dim, index = ctx.saved("dim", "index")
        return index_fill(grad, _signed(dim), Tensor._make(index, backend=ctx.backend), 0)


def index_fill(input, dim: int, index, value):
    """A copy of ``input`` with ``value`` (a number or a 0-d tensor) at ``index`` along ``dim``."""
    _check_index("index_fill_", index)
    size = input.shape[wrap_dim(dim, max(input.ndim, 1))] if input.ndim else 1
    values = _index_array(index)
    bad = values[(values >= size) | (values < -size)]
    if bad.size:
        raise IndexError(f"index {int(bad.flat[0])} is out of bounds for dimension {wrap_dim(dim, max(input.ndim, 1))} "
                         f"with size {size}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        return IndexFillBackward1.apply(input, value, dim, index)
    return IndexFillBackward0.apply(input, dim, index, value)


# -- index_copy: rows of a source written at some places along a dim --------------------------------------------
class IndexCopyBackward0(OpFunction):
    inputs = ("self", "source")
    derivatives = {"self": ("grad.index_fill(dim, index, 0)", r"\bar{y}\ \text{with 0 at the copied places}"),
                   "source": ("source_dim > 0 ? grad.index_select(dim, index).expand_as(source) : "
                              "grad.index_select(dim, index.squeeze(0))", r"\bar{y}\ \text{at the copied places}")}

    def forward(ctx, self, source, dim, index):
        axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), index=index, source=source if ctx.needs_input_grad[1:] == (True,) else None,
                 source_dim=source.ndim)
        ctx.axis = axis
        places = _index_array(index).reshape(-1)
        ctx.places = places
        backend = self._backend
        out = backend.copy(self._data)
        if not self.ndim:
            return backend.assign(out, backend.astype(source._data, self.dtype))
        target = (slice(None),) * axis + (places,)
        data = source._data if source.ndim == self.ndim else backend.reshape(
            source._data, tuple(1 if i == axis else s for i, s in enumerate(self.shape)))
        return backend.assign(out, backend.astype(data, self.dtype), target)

    def backward(ctx, grad):
        backend = ctx.backend
        needs = ctx.needs_input_grad
        if not grad.ndim:
            return (backend.mul(grad, 0) if needs[0] else None), (grad if needs[1] else None)
        key = (slice(None),) * ctx.axis + (ctx.places,)
        grad_self = backend.assign(backend.copy(grad), 0, key) if needs[0] else None
        grad_source = None
        if needs[1]:
            source = ctx.saved("source")
            grad_source = backend.reshape(backend.getitem(grad, key), tuple(source.shape))
        return grad_self, grad_source

    def backward_graph(ctx, grad):
        from gradviz.ops.indexing import index_select

        dim, index = ctx.saved("dim", "index")
        index = Tensor._make(index, backend=ctx.backend)
        needs = ctx.needs_input_grad
        grad_self = index_fill(grad, _signed(dim), index, 0) if needs[0] else None
        grad_source = None
        if needs[1]:
            source = ctx.saved_graph("source")
            picked = index_select(grad, _signed(dim), index)
            grad_source = picked.expand_as(source) if source.ndim else picked.reshape(())
        return grad_self, grad_source


def index_copy(input, dim: int, index, source):
    """A copy of ``input`` with ``source``'s slices written at ``index`` along ``dim``."""
    if index.dtype is not _dtype.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{_dtype.SCALAR_TYPE_NAMES[index.dtype.name]}")
    if index.ndim > 1:
        raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got 2)".replace("2", str(index.ndim)))
    if source.dtype is not input.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_dtype.SCALAR_TYPE_NAMES[input.dtype.name]} and (source) "
                           f"{_dtype.SCALAR_TYPE_NAMES[source.dtype.name]}")
    return IndexCopyBackward0.apply(input, source, dim, index)
