"""``split``, ``chunk`` and ``unbind``: one node with several outputs, each a view of the input.

PyTorch records one node for the whole call (``SplitBackward0``, ``SplitWithSizesBackward0``,
``UnbindBackward0``); the pieces are its outputs ``0, 1, ...`` (``output_nr``), so a gradient
that reaches only some pieces still runs the node once, with zeros for the others. Backward
joins the pieces' gradients again: ``cat`` for a split, ``stack`` for an unbind.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction, node_for_inputs
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.shape import _view_of
from gradviz.tensor import Tensor


class _Pieces(OpFunction):
    """An op whose outputs are several views of its one input."""

    inputs = ("self",)

    @classmethod
    def apply(cls, input, *params):
        record, node = node_for_inputs(cls, input)
        arrays = cls.forward(node, input, *params)
        pieces = []
        for output_nr, array in enumerate(arrays):
            piece = _view_of(Tensor._make(array, record, node if record else None, input._backend), input)
            piece._output_nr = output_nr
            pieces.append(piece)
        if record:
            node._num_outputs = len(pieces)
            node.piece_shapes = tuple(tuple(p.shape) for p in pieces)
        return tuple(pieces)

    def _filled(self, grads) -> list:
        """The pieces' gradients, zeros where none arrived (PyTorch's split_backward does the same)."""
        backend = self.backend
        return [backend.full(shape, 0, self.dtype, self.device) if g is None else g
                for g, shape in zip(grads, self.piece_shapes)]

    def _filled_tensors(self, grads) -> list:
        return [g if isinstance(g, Tensor) else Tensor._make(g, backend=self.backend) for g in self._filled(grads)]


class _Split(_Pieces):
    def forward(ctx, self, sizes, dim):
        ctx.dim, ctx.dtype, ctx.device = dim, self.dtype, self.device
        bounds, start = [], 0
        for size in sizes:
            bounds.append((start, start + size))
            start += size
        key = (slice(None),) * dim
        return [self._backend.getitem(self._data, key + (slice(lo, hi), Ellipsis)) for lo, hi in bounds]

    def backward(ctx, *grads):
        return ctx.backend.concatenate(ctx._filled(grads), ctx.dim)

    def backward_graph(ctx, *grads):
        from gradviz.ops.combine import cat

        return cat(ctx._filled_tensors(grads), ctx.dim)


class SplitBackward0(_Split):
    derivatives = {"self": ("split_backward(grads, split_size, dim, self.sym_sizes())", r"[\bar{y}_1, \bar{y}_2, \dots]")}

    def forward(ctx, self, split_size, dim, given_dim):
        ctx.save(dim=saved_dim(given_dim), self_sym_sizes=tuple(self.shape), split_size=split_size)
        length = self.shape[dim]
        sizes = [min(split_size, length - start) for start in range(0, length, split_size)] if length else [0]
        return _Split.forward(ctx, self, sizes, dim)


class SplitWithSizesBackward0(_Split):
    derivatives = {"self": ("split_with_sizes_backward(grads, split_sizes, dim, self.sym_sizes())",
                            r"[\bar{y}_1, \bar{y}_2, \dots]")}

    def forward(ctx, self, split_sizes, dim, given_dim):
        ctx.save(dim=saved_dim(given_dim), self_sym_sizes=tuple(self.shape), split_sizes=tuple(split_sizes))
        return _Split.forward(ctx, self, split_sizes, dim)


class UnbindBackward0(_Pieces):
    derivatives = {"self": ("unbind_backward(grads, dim)", r"\mathrm{stack}(\bar{y}_1, \bar{y}_2, \dots)")}

    def forward(ctx, self, dim, given_dim):
        ctx.save(dim=saved_dim(given_dim))
        ctx.dim, ctx.dtype, ctx.device = dim, self.dtype, self.device
        key = (slice(None),) * dim
        return [self._backend.getitem(self._data, key + (i, Ellipsis)) for i in range(self.shape[dim])]

    def backward(ctx, *grads):
        return ctx.backend.stack(ctx._filled(grads), ctx.dim)

    def backward_graph(ctx, *grads):
        from gradviz.ops.combine import stack

        return stack(ctx._filled_tensors(grads), ctx.dim)


def split(tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or pieces of the given sizes."""
    axis = wrap_dim(dim, max(tensor.ndim, 1))
    if isinstance(split_size_or_sections, int):
        if split_size_or_sections <= 0 and tensor.shape[axis]:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of "
                               f"{tensor.shape[axis]}")
        return SplitBackward0.apply(tensor, split_size_or_sections, axis, dim)
    sizes = [int(s) for s in split_size_or_sections]
    if sum(sizes) != tensor.shape[axis]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {tensor.shape[axis]} (input tensor's "
                           f"size at dimension {axis}), but got split_sizes={sizes}")
    return SplitWithSizesBackward0.apply(tensor, sizes, axis, dim)


def chunk(input, chunks: int, dim: int = 0) -> tuple:
    """``chunks`` pieces of equal size (the last may be smaller): a split of size ceil(n / chunks)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    axis = wrap_dim(dim, max(input.ndim, 1))
    length = input.shape[axis]
    return split(input, max(-(-length // chunks), 1) if length else 0, dim)


def unbind(input, dim: int = 0) -> tuple:
    """Every slice along ``dim``, that dimension removed."""
    return UnbindBackward0.apply(input, wrap_dim(dim, max(input.ndim, 1)), dim)
