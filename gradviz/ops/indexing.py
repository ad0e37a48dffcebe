"""Indexing: reading (``x[i]``, ``x[mask]``), writing (``x[i] = v``), and the gather/select ops.

``x[key]`` follows PyTorch's own parser (``python_variable_indexing.cpp``): integers, slices,
``None`` and ``...`` become views (SelectBackward0, SliceBackward0, UnsqueezeBackward0,
AliasBackward0); index tensors, lists and boolean masks then pick elements in one copy
(IndexBackward0). ``x[key] = value`` takes the same views and writes through them: ``copy_`` or
``fill_`` on the view (recorded on the base as CopySlices, see ``ops/inplace.py``), or
``index_put_`` for index tensors (IndexPutBackward0).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction, SavedTensors
from gradviz.ops import inplace
from gradviz.ops import shape as shape_ops
from gradviz.ops._util import broadcast_shapes, meta, saved_dim, sum_to_tensor, to_input, wrap_dim
from gradviz.tensor import Tensor

INT64_MAX = 2**63 - 1  # Python's slice end when none is given, as PyTorch reads it
SEQUENCE_AS_TUPLE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; "
    "use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
    "x[torch.tensor(seq)], which will result either in an error or a different result (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/python_variable_indexing.cpp:349.)"
)
INVALID_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                 "(got {})")


# -- reading the key, as PyTorch does ------------------------------------------------------------------
def _is_integer(value) -> bool:
    """A Python or numpy integer (not a bool, not a tensor): an index that selects."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_sequence(value) -> bool:
    return isinstance(value, (list, tuple, range, np.ndarray, str))


def _as_tuple(key) -> tuple:
    """The key as a tuple of indices; a short list holding slices, lists or tensors counts as one."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, Tensor) or not _is_sequence(key) or len(key) >= 32:
        return (key,)
    if any(isinstance(item, (Tensor, slice)) or _is_sequence(item) or item is Ellipsis or item is None
           for item in key):
        warnings.warn(SEQUENCE_AS_TUPLE_WARNING, UserWarning, stacklevel=4)
        return tuple(key)
    return (key,)


def _index_tensor(sequence) -> Tensor:
    """A list used as an index becomes a tensor: bool for a mask, else int64."""
    from gradviz.tensor import _infer_dtype, tensor

    dtype = _infer_dtype(sequence)
    return tensor(sequence, dtype=dtype if dtype is _dtype.bool else _dtype.int64)


def _specified_dims(items: tuple) -> int:
    """How many dimensions of the tensor the key indexes (a mask indexes as many as it has)."""
    count = 0
    for item in items:
        if isinstance(item, Tensor):
            count += item.ndim if item.dtype in (_dtype.bool, _dtype.uint8) else 1
        elif item is not None and item is not Ellipsis and not isinstance(item, (bool, np.bool_)):
            count += 1
    return count


def _select(input: Tensor, dim: int, index: int, real_dim: int) -> Tensor:
    if input.ndim == 0:
        if index == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size 0")
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {real_dim} with size {size}")
    return shape_ops.select(input, dim, index % size, given=index)


def _slice(input: Tensor, dim: int, key: slice, optimize: bool) -> Tensor:
    """``key`` along ``dim``; a slice covering everything is skipped inside a tuple, as in PyTorch."""
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    step = 1 if key.step is None else int(key.step)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    given_start = 0 if key.start is None else int(key.start)
    given_end = INT64_MAX if key.stop is None else int(key.stop)
    size = input.shape[dim]
    if optimize and given_start == 0 and given_end >= size and step == 1:
        return input
    start, end, _ = slice(given_start, given_end, step).indices(size)
    return shape_ops.slice_along(input, dim, start, max(end, start), step, given=(given_start, given_end))


def _bool_index(value: bool, like: Tensor) -> Tensor:
    """A Python bool as an index: ``[0]`` keeps the new dimension, ``[]`` empties it."""
    backend = like._backend
    return Tensor._make(backend.full((1 if value else 0,), 0, _dtype.int64, like.device), backend=backend)


def apply_slicing(input: Tensor, items: tuple, optimize: bool = True):
    """Apply the basic part of a key as views; return them and the index tensors left for later
    (``None`` where a dimension is not indexed by a tensor)."""
    specified = _specified_dims(items)
    if specified > input.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.ndim}")
    result, dim, indices = input, 0, []

    def record(index: Tensor, dim: int) -> int:
        indices.extend([None] * (dim + 1 - len(indices)))
        indices[dim] = index
        return dim + (index.ndim if index.dtype in (_dtype.bool, _dtype.uint8) else 1)

    for position, item in enumerate(items):
        if _is_integer(item):
            result = _select(result, dim, int(item), position)
        elif isinstance(item, slice):
            result = _slice(result, dim, item, optimize)
            dim += 1
        elif item is Ellipsis:
            dim += input.ndim - specified
        elif item is None:
            result = shape_ops.unsqueeze(result, dim)
            dim += 1
        elif isinstance(item, (bool, np.bool_)):
            result = shape_ops.unsqueeze(result, dim)
            dim = record(_bool_index(bool(item), result), dim)
        else:
            if not isinstance(item, Tensor):
                if not _is_sequence(item):
                    if not hasattr(item, "__index__"):
                        raise IndexError(INVALID_INDEX.format(type(item).__name__))
                    result = _select(result, dim, item.__index__(), position)
                    continue
                item = _index_tensor(item)
            if item.ndim == 0 and item.dtype is not _dtype.bool and item.dtype is not _dtype.uint8:
                result = _select(result, dim, int(item.item()), position)
            elif item.ndim == 0:
                result = shape_ops.unsqueeze(result, dim)
                dim = record(_bool_index(bool(item.item()), result), dim)
            else:
                dim = record(item, dim)
    return result, indices


def _numpy_key(input: Tensor, indices: list) -> tuple:
    """The backend key for index tensors (``:`` where there is none), checked as PyTorch checks it."""
    key, dim, position = [], 0, 0
    for index in indices:
        if index is None:
            key.append(slice(None))
            dim += 1
            continue
        if index.dtype in (_dtype.bool, _dtype.uint8):
            for offset, size in enumerate(index.shape):
                if dim + offset >= input.ndim or input.shape[dim + offset] != size:
                    raise IndexError(f"The shape of the mask {list(index.shape)} at index {offset} does not match the "
                                     f"shape of the indexed tensor {list(input.shape[dim:])} at index {dim + offset}")
            key.append(index._data if index.dtype is _dtype.bool else index._backend.astype(index._data, _dtype.bool))
            dim += index.ndim
        elif index.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        else:
            size = input.shape[dim]
            values = index._backend.to_numpy(index._data)
            bad = values[(values >= size) | (values < -size)]
            if bad.size:
                raise IndexError(f"index {int(bad.flat[0])} is out of bounds for dimension {position} with size {size}")
            key.append(index._data)
            dim += 1
        position += 1
    return tuple(key)


# -- reading ---------------------------------------------------------------------------------------------
class IndexBackward0(OpFunction):
    """Indexing with tensors, lists or masks (advanced indexing): a copy of the picked elements."""

    inputs = ("self",)
    derivatives = {"self": ("index_backward(grad.new_zeros(self.sym_sizes()), indices, grad)",
                            r"\bar{y}\ \mathrm{at\ the\ indices}")}

    def forward(ctx, self, indices):
        key = _numpy_key(self, indices)
        ctx.save(indices=SavedTensors.of(indices), self_sym_sizes=tuple(self.shape))
        ctx.key = key
        # numpy may lay a mixed index's result out column-first; PyTorch's is always row-major
        return self._backend.contiguous(self._backend.getitem(self._data, key))

    def backward(ctx, grad):
        backend = ctx.backend
        shape, _ = ctx.saved("self_sym_sizes", "indices")  # unpacking checks the indices were not changed
        out = backend.full(shape, 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return backend.index_add(out, ctx.key, grad)

    def backward_graph(ctx, grad):
        """PyTorch's ``index_backward``: ``zeros(self_sizes)._index_put_impl_(indices, grad, accumulate=True)``."""
        from gradviz.ops.double_backward import IndexPutImplBackward0

        zeros = Tensor._make(ctx.backend.full(ctx.saved("self_sym_sizes"), 0, grad.dtype, grad.device),
                             backend=ctx.backend)
        return IndexPutImplBackward0.apply(zeros, grad, _saved_indices(ctx), accumulate=True)


def _saved_indices(ctx) -> list:
    """The index tensors a node saved (``None`` where a dim is not indexed), for a recorded backward."""
    return list(ctx._unpack_saved("indices"))


def getitem(input: Tensor, key) -> Tensor:
    """``input[key]`` as PyTorch records it."""
    if key is None:
        return shape_ops.unsqueeze(input, 0)
    if key is Ellipsis:
        return shape_ops.alias(input)
    if _is_integer(key):
        return _select(input, 0, int(key), 0)
    if isinstance(key, slice):
        return _slice(input, 0, key, optimize=False)
    sliced, indices = apply_slicing(input, _as_tuple(key))
    if not any(index is not None for index in indices):
        return shape_ops.alias(sliced) if sliced is input else sliced
    return IndexBackward0.apply(sliced, indices)


# -- writing ---------------------------------------------------------------------------------------------
def _value_tensor(target: Tensor, value) -> Tensor:
    """What ``target[key] = value`` writes: a tensor, or a number as a 0-d tensor of target's dtype."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (numbers.Integral, float, np.bool_)):
        backend = target._backend
        number = int(value) if isinstance(value, (numbers.Integral, np.bool_)) else value
        return Tensor._make(backend.full((), number, target.dtype, target.device), backend=backend)
    from gradviz.autograd.node import _type_string

    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    raise TypeError(f"can't assign a {name} to a {_type_string(target)}")


def _without_leading_ones(shape) -> tuple:
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def copy_to(destination: Tensor, source: Tensor) -> None:
    """Write ``source`` into the view ``destination``: ``copy_``, or ``fill_`` for a 0-d source."""
    if tuple(destination.shape) == tuple(source.shape):
        destination.copy_(source)
        return
    if source.ndim == 0 and source.device.type == "cpu":
        destination.fill_(source)
        return
    source = shape_ops.view(source, _without_leading_ones(source.shape))
    if tuple(source.shape) != tuple(destination.shape):
        source = shape_ops.expand(source, tuple(destination.shape))
    destination.copy_(source)


def setitem(input: Tensor, key, value) -> None:
    """``input[key] = value`` as PyTorch runs it: write through the views the key names."""
    value = _value_tensor(input, value)
    if key is False:
        return
    if key is Ellipsis:
        copy_to(input, value)
    elif key is None or key is True:
        copy_to(shape_ops.unsqueeze(input, 0), value)
    elif _is_integer(key):
        copy_to(_select(input, 0, int(key), 0), value)
    elif isinstance(key, slice):
        copy_to(_slice(input, 0, key, optimize=True), value)
    else:
        sliced, indices = apply_slicing(input, _as_tuple(key))
        if not any(index is not None for index in indices):
            copy_to(sliced, value)
            return
        stripped = _without_leading_ones(value.shape)
        index_put_(sliced, indices, shape_ops.view(value, stripped) if stripped != tuple(value.shape) else value)


class IndexPutBackward0(OpFunction):
    """``x[indices] = values`` (or ``+=`` with ``accumulate``): the written elements take ``values``' gradient."""

    inputs = ("self", "values")
    derivatives = {"self": ("accumulate ? grad : grad.index_put(indices, zeros_like(values), false)",
                            r"\bar{y}\ \mathrm{where\ not\ overwritten},\ 0\ \mathrm{elsewhere}"),
                   "values": ("grad.index(indices)", r"\bar{y}\ \mathrm{at\ the\ indices}")}

    def forward(ctx, self, values, indices, accumulate=False):
        key = _numpy_key(self, indices)
        ctx.save(accumulate=accumulate, indices=SavedTensors.of(indices))
        ctx.key, ctx.metas = key, (meta(self), meta(values))
        backend = self._backend
        out = backend.copy(self._data)
        picked = tuple(backend.getitem(out, key).shape)
        if not _broadcasts_to(tuple(values.shape), picked):
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                               f"indexing result of shape {list(picked)}")
        data = values._data if values.dtype is self.dtype else backend.astype(values._data, self.dtype)
        return backend.index_add(out, key, data) if accumulate else backend.assign(out, data, key)

    def backward(ctx, grad):
        backend = ctx.backend
        accumulate, _ = ctx.saved("accumulate", "indices")
        grad_self = grad_values = None
        if ctx.needs_input_grad[0]:
            grad_self = grad if accumulate else backend.assign(backend.copy(grad), 0, ctx.key)
        if ctx.needs_input_grad[1]:
            grad_values = to_input(backend, backend.getitem(grad, ctx.key), ctx.metas[1])
        return grad_self, grad_values

    def backward_graph(ctx, grad):
        """``self``: ``grad`` with the written elements zeroed by an ``index_put`` (IndexPutBackward0), or
        ``grad`` itself when accumulating; ``values``: ``grad[indices]`` (IndexBackward0), summed back over
        any broadcasting."""
        accumulate = ctx.saved("accumulate")
        indices = _saved_indices(ctx)
        grad_self = grad_values = None
        values_shape, values_dtype = ctx.metas[1]
        if ctx.needs_input_grad[0]:
            backend = ctx.backend
            zeros = Tensor._make(backend.full(values_shape, 0, _dtype.from_any(values_dtype), grad.device),
                                 backend=backend)
            grad_self = grad if accumulate else index_put(grad, indices, zeros)
        if ctx.needs_input_grad[1]:
            grad_values = sum_to_tensor(IndexBackward0.apply(grad, indices), values_shape)
        return grad_self, grad_values


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(size in (1, wanted) for size, wanted in zip(shape[::-1], target[::-1]))


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` written (or added) at ``indices``."""
    return IndexPutBackward0.apply(input, values, list(indices), accumulate=accumulate)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    return inplace.apply_(input, index_put, list(indices), values, accumulate=accumulate)


# -- masked_fill, index_select, gather ---------------------------------------------------------------------------
def _check_mask(mask: Tensor, value) -> None:
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.CPP_NAMES[mask.dtype.name]}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")


class MaskedFillBackward0(OpFunction):
    """``x.masked_fill(mask, number)``: the filled elements get no gradient."""

    inputs = ("self",)
    derivatives = {"self": ("grad.masked_fill(mask, 0)", r"\bar{y}\,[\lnot m]")}

    def forward(ctx, self, mask, value):
        ctx.save(mask=mask)
        ctx.shape = tuple(self.shape)
        backend = self._backend
        shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        return backend.where(backend.broadcast_to(mask._data, shape), backend.full((), value, self.dtype, self.device),
                             backend.broadcast_to(self._data, shape))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        return sum_to(backend, backend.where(ctx.saved("mask"), 0, grad), ctx.shape)

    def backward_graph(ctx, grad):
        return sum_to_tensor(grad.masked_fill(ctx.saved_graph("mask"), 0), ctx.shape)


class MaskedFillBackward1(OpFunction):
    """``x.masked_fill(mask, value)`` with a 0-d tensor value: the filled elements' gradient goes to it."""

    inputs = ("self", "value")
    derivatives = {"self": ("grad.masked_fill(mask, 0)", r"\bar{y}\,[\lnot m]"),
                   "value": ("masked_fill_backward(grad, mask)", r"\textstyle\sum \bar{y}\,[m]")}

    def forward(ctx, self, value, mask):
        ctx.save(mask=mask)
        ctx.metas = (meta(self), meta(value))
        backend = self._backend
        shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        fill = value._data if value.dtype is self.dtype else backend.astype(value._data, self.dtype)
        return backend.where(backend.broadcast_to(mask._data, shape), fill, backend.broadcast_to(self._data, shape))

    def backward(ctx, grad):
        backend = ctx.backend
        mask = ctx.saved("mask")
        zeros = backend.zeros_like(grad)  # masked_fill_(mask, 0): +0., never -0. or nan
        return (to_input(backend, backend.where(mask, zeros, grad), ctx.metas[0]) if ctx.needs_input_grad[0] else None,
                to_input(backend, backend.sum(backend.where(mask, grad, zeros), None), ctx.metas[1])
                if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        """``self``: ``grad.masked_fill(mask, 0)``; the value: PyTorch's ``masked_fill_backward``,
        ``grad.masked_select(mask).sum()`` (MaskedSelectBackward0, SumBackward0)."""
        from gradviz.ops.double_backward import MaskedSelectBackward0

        mask = ctx.saved_graph("mask")
        grad_self = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_self = sum_to_tensor(grad.masked_fill(mask, 0), ctx.metas[0][0])
        if ctx.needs_input_grad[1]:
            grad_value = MaskedSelectBackward0.apply(grad, mask).sum()
            value_dtype = _dtype.from_any(ctx.metas[1][1])
            grad_value = grad_value if grad_value.dtype is value_dtype else grad_value.to(value_dtype)
        return grad_self, grad_value


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` is true, ``input`` elsewhere."""
    _check_mask(mask, value)
    broadcast_shapes(tuple(mask.shape), tuple(input.shape))
    if isinstance(value, Tensor):
        return MaskedFillBackward1.apply(input, value, mask)
    return MaskedFillBackward0.apply(input, mask, value)


def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    _check_mask(mask, value)
    return inplace.apply_(input, masked_fill, mask, value)


class IndexSelectBackward0(OpFunction):
    """``x.index_select(dim, index)``: whole slices along ``dim``, in the order (and as often) ``index`` names."""

    inputs = ("self",)
    derivatives = {"self": ("index_select_backward_symint(grad, self.sym_sizes(), dim, index)",
                            r"\textstyle\sum_{\mathrm{picks}} \bar{y}")}

    def forward(ctx, self, dim, index):
        axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), index=index, self_sym_sizes=tuple(self.shape))
        ctx.axis, ctx.dim = axis, dim
        return self._backend.take(self._data, index._data, axis)

    def backward(ctx, grad):
        backend = ctx.backend
        out = backend.full(ctx.saved("self_sym_sizes"), 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return backend.index_add(out, (slice(None),) * ctx.axis + (ctx.saved("index"),), grad)

    def backward_graph(ctx, grad):
        """PyTorch's ``index_select_backward``: ``zeros(self_sizes).index_add_(dim, index, grad)``."""
        from gradviz.ops.double_backward import IndexAddBackward0

        zeros = Tensor._make(ctx.backend.full(ctx.saved("self_sym_sizes"), 0, grad.dtype, grad.device),
                             backend=ctx.backend)
        return IndexAddBackward0.apply(zeros, grad, ctx.dim, ctx.saved_graph("index"))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    size = input.shape[wrap_dim(dim, max(input.ndim, 1))] if input.ndim else 1
    values = index._backend.to_numpy(index._data)
    if values.size and (values.max() >= size or values.min() < 0):
        raise IndexError("index out of range in self")
    return IndexSelectBackward0.apply(input, dim, index)


class GatherBackward0(OpFunction):
    """``x.gather(dim, index)``: along ``dim``, each output element is the input element ``index`` names."""

    inputs = ("self",)
    derivatives = {"self": ("gather_backward(grad, self, dim, index, sparse_grad)",
                            r"\textstyle\sum_{\mathrm{picks}} \bar{y}")}

    def forward(ctx, self, dim, index):
        axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.save(dim=saved_dim(dim), index=index, self=self, sparse_grad=False)
        ctx.axis, ctx.dim = axis, dim
        return self._backend.gather(self._data, axis, index._data)

    def backward(ctx, grad):
        backend = ctx.backend
        self, index = ctx.saved("self", "index")
        out = backend.full(self.shape, 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return backend.scatter_add(out, ctx.axis, index, grad)

    def backward_graph(ctx, grad):
        """PyTorch's ``gather_backward``: ``zeros_like(self).scatter_add(dim, index, grad)``."""
        from gradviz.ops.double_backward import ScatterAddBackward0

        self = ctx.saved("self")
        zeros = Tensor._make(ctx.backend.full(self.shape, 0, grad.dtype, grad.device), backend=ctx.backend)
        return ScatterAddBackward0.apply(zeros, grad, ctx.dim, ctx.saved_graph("index"))


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if index.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    axis = wrap_dim(dim, max(input.ndim, 1))
    values = index._backend.to_numpy(index._data)
    size = input.shape[axis]
    bad = values[(values >= size) | (values < 0)]
    if bad.size:
        raise RuntimeError(f"index {int(bad.flat[0])} is out of bounds for dimension {axis} with size {size}")
    return GatherBackward0.apply(input, dim, index)

