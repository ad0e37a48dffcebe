"""Ops that build one tensor from several, or from copies of one: ``cat``, ``stack``, ``repeat``.

Each input's gradient is its own piece of the output's gradient: the slice it was copied to for
``cat`` and ``stack``, the sum over its copies for ``repeat``.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import _NO_RECORD, OpFunction
from gradviz.grad_mode import _state as _grad_state
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.shape import narrow, select
from gradviz.tensor import Tensor


def _common(tensors) -> tuple:
    """The tensors' data in their promoted dtype (PyTorch's ``cat`` promotes like arithmetic)."""
    target = _dtype.result_type(tuple(tensors))
    return tuple(t._data if t.dtype is target else t._backend.astype(t._data, target) for t in tensors), target


def _pieces(ctx, grad, axis: int, sizes, squeeze: bool):
    """Cut ``grad`` along ``axis`` into each input's part, cast back to that input's dtype."""
    backend = ctx.backend
    grads, start = [], 0
    for index, (size, dtype) in enumerate(zip(sizes, ctx.dtypes)):
        if not ctx.needs_input_grad[index]:
            grads.append(None)
        elif size is None:  # a legacy empty input that cat skipped
            grads.append(backend.full((0,), 0, dtype, backend.device_of(grad)))
        else:
            key = (slice(None),) * axis + ((start if squeeze else slice(start, start + size)), Ellipsis)
            piece = backend.getitem(grad, key)
            grads.append(piece if _dtype.from_any(piece.dtype) is dtype else backend.astype(piece, dtype))
        start += 1 if squeeze else (size or 0)
    return tuple(grads)


def _cast_pieces(ctx, pieces) -> tuple:
    """Each recorded piece cast to its input's dtype (ToCopyBackward0), once all are cut, as PyTorch's
    engine casts a node's gradients (``validate_outputs``)."""
    return tuple(piece if piece is None or piece.dtype is dtype else piece.to(dtype)
                 for piece, dtype in zip(pieces, ctx.dtypes))


def _is_legacy_empty(tensor: Tensor) -> bool:
    """A 1-D tensor with no elements: ``cat`` skips it whatever the other shapes (old PyTorch behaviour)."""
    return tensor.ndim == 1 and tensor.shape[0] == 0


class _Join(OpFunction):
    """An op over a list of tensors: every tensor in the list is an input with its own edge."""

    @classmethod
    def apply(cls, *tensors, dim):
        if _grad_state.enabled:
            needs = tuple(tensor.requires_grad for tensor in tensors)
            if True in needs:
                return cls._record(tensors, {"dim": dim}, tensors, needs)
        return Tensor._make(cls.forward(_NO_RECORD, *tensors, dim=dim))


class CatBackward0(_Join):
    """The inputs laid end to end along ``dim``: each gets back its own slice of the gradient."""

    inputs = ("tensors",)
    derivatives = {"tensors": ("cat_tensors_backward(grad, to_args_sizes_symint(tensors), "
                               "to_args_scalartypes(tensors), dim)", r"\bar{y}\ \mathrm{sliced\ back\ per\ input}")}

    def forward(ctx, *tensors, dim):
        data, _ = _common(tensors)
        ctx.save(dim=saved_dim(dim))
        joined = [d for d, t in zip(data, tensors) if not _is_legacy_empty(t)] or list(data[:1])
        axis = ctx.axis = wrap_dim(dim, max(joined[0].ndim, 1))
        ctx.sizes = tuple(None if _is_legacy_empty(t) else t.shape[axis] for t in tensors)
        ctx.dtypes = tuple(t.dtype for t in tensors)
        return tensors[0]._backend.concatenate(joined, axis)

    def backward(ctx, grad):
        return _pieces(ctx, grad, ctx.axis, ctx.sizes, squeeze=False)

    def backward_graph(ctx, grad):
        """PyTorch's ``cat_tensors_backward``: each input's part is ``grad.narrow(dim, start, size)`` (zeros
        for a legacy empty input), cast to the input's dtype after (as the engine's ``validate_outputs``)."""
        pieces, start = [], 0
        for size, needed in zip(ctx.sizes, ctx.needs_input_grad):
            if size is None:
                pieces.append(Tensor._make(ctx.backend.full((0,), 0, grad.dtype, grad.device), backend=ctx.backend)
                              if needed else None)
                continue
            pieces.append(narrow(grad, ctx.axis, start, size) if needed else None)
            start += size
        return _cast_pieces(ctx, pieces)


class StackBackward0(_Join):
    """The inputs stacked along a new ``dim``: each gets back its own slice of the gradient."""

    inputs = ("tensors",)
    derivatives = {"tensors": ("stack_tensors_backward(grad, dim, to_args_scalartypes(tensors))",
                               r"\bar{y}\ \mathrm{unstacked\ per\ input}")}

    def forward(ctx, *tensors, dim):
        data, _ = _common(tensors)
        ctx.save(dim=saved_dim(dim))
        axis = ctx.axis = wrap_dim(dim, tensors[0].ndim + 1)
        ctx.dim = dim
        ctx.dtypes = tuple(t.dtype for t in tensors)
        return tensors[0]._backend.stack(list(data), axis)

    def backward(ctx, grad):
        return _pieces(ctx, grad, ctx.axis, (1,) * len(ctx.dtypes), squeeze=True)

    def backward_graph(ctx, grad):
        """PyTorch's ``stack_tensors_backward``: each input's part is ``grad.select(dim, i)``, cast to the
        input's dtype after."""
        return _cast_pieces(ctx, [select(grad, ctx.axis, index, given_dim=ctx.dim) if needed else None
                                  for index, needed in enumerate(ctx.needs_input_grad)])


class RepeatBackward0(OpFunction):
    """The input tiled ``repeats`` times along each dimension: each element's gradient sums its copies."""

    inputs = ("self",)
    derivatives = {"self": ("repeat_backward(grad, repeats, self.sym_sizes())",
                            r"\textstyle\sum_{\mathrm{copies}} \bar{y}")}

    def forward(ctx, self, repeats):
        ctx.save(repeats=tuple(repeats), self_sym_sizes=tuple(self.shape))
        return self._backend.tile(self._data, tuple(repeats))

    def backward(ctx, grad):
        backend = ctx.backend
        repeats, shape = ctx.saved("repeats", "self_sym_sizes")
        lead = len(repeats) - len(shape)
        sizes = (1,) * lead + tuple(shape)
        split = []
        for count, size in zip(repeats, sizes):
            split.extend((count, size))
        summed = backend.sum(backend.reshape(grad, tuple(split)), tuple(range(0, len(split), 2)), keepdims=False)
        return backend.reshape(summed, tuple(shape))

    def backward_graph(ctx, grad):
        """PyTorch's ``repeat_backward``: the added leading dims summed one by one (``sum(0)``), then one
        reshape that splits each repeated dim in (repeat, size) and one sum over the repeats."""
        repeats, shape = ctx.saved("repeats", "self_sym_sizes")
        if 0 in repeats:
            return OpFunction.backward_graph(ctx, grad)
        lead = len(repeats) - len(shape)
        for _ in range(lead):
            grad = grad.sum(0)
        split, repeated = [], []
        for repeat, size in zip(repeats[lead:], shape):
            if repeat != 1:
                split.append(repeat)
                repeated.append(len(split) - 1)
            split.append(size)
        return grad.reshape(tuple(split)).sum(tuple(repeated)) if repeated else grad


def _with_dim(function_name: str, tensors) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{function_name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for index, item in enumerate(tensors):
        if not isinstance(item, Tensor):
            raise TypeError(f"expected Tensor as element {index} in argument 0, but got {type(item).__name__}")
    return list(tensors)


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dimension (``torch.cat``, also ``concat`` and ``concatenate``)."""
    tensors = _with_dim("cat", tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    joined = [t for t in tensors if not _is_legacy_empty(t)] or tensors[:1]
    first = joined[0]
    axis = wrap_dim(dim, max(first.ndim, 1))
    for number, other in enumerate(tensors):
        if _is_legacy_empty(other):
            continue
        if other.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {other.ndim}")
        for d in range(first.ndim):
            if d != axis and other.shape[d] != first.shape[d]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. Expected size "
                                   f"{first.shape[d]} but got size {other.shape[d]} for tensor number {number} in "
                                   "the list.")
    return CatBackward0.apply(*tensors, dim=dim)


def stack(tensors, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dimension."""
    tensors = _with_dim("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for entry, other in enumerate(tensors[1:], 1):
        if tuple(other.shape) != tuple(tensors[0].shape):
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(other.shape)} at entry {entry}")
    wrap_dim(dim, tensors[0].ndim + 1)
    return StackBackward0.apply(*tensors, dim=dim)


def repeat(input: Tensor, *repeats) -> Tensor:
    """Tile ``input``: ``x.repeat(2, 1)`` stacks two copies of the rows."""
    repeats = tuple(repeats[0]) if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)) else repeats
    if len(repeats) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    return RepeatBackward0.apply(input, tuple(int(r) for r in repeats))
