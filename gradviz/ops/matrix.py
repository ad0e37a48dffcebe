"""Ops on the layout of a matrix (or any tensor): ``flip``, ``roll``, ``tril``/``triu``, ``diag``,
``diagonal``, ``trace``.

Each moves or masks elements without changing them, so each gradient moves or masks the incoming
gradient the same way back: a flip flips it back, a roll rolls it back, a triangle keeps the same
triangle, a diagonal puts it back on the diagonal of zeros.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import saved_dim, wrap_dim


class FlipBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.flip(dims)", r"\mathrm{flip}(\bar{y})")}

    def forward(ctx, self, dims):
        axes = tuple(wrap_dim(d, max(self.ndim, 1)) for d in dims)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dims has duplicates, original flip dims size={len(axes)}, but unique flip dims "
                               f"size={len(set(axes))}")
        ctx.save(dims=saved_dim(tuple(dims)))
        ctx.axes, ctx.dims = axes, tuple(dims)
        return self._backend.flip(self._data, axes) if self.ndim else self._backend.copy(self._data)

    def backward(ctx, grad):
        return ctx.backend.flip(grad, ctx.axes) if grad.ndim else grad

    def backward_graph(ctx, grad):
        return flip(grad, ctx.dims)  # the dims as given: the recorded flip saves them (-1 stays -1)


class RollBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.roll(fmap(reverse_integer(shifts), [](c10::SymInt i){return -i;}), dims)",
                            r"\mathrm{roll}(\bar{y}, -s)")}

    def forward(ctx, self, shifts, dims):
        ctx.save(dims=saved_dim(dims), shifts=saved_dim(shifts))
        ctx.shifts = shifts
        axes = ctx.axes = tuple(wrap_dim(d, max(self.ndim, 1)) for d in dims) or None  # ctx keeps nothing under no_grad
        return self._backend.roll(self._data, shifts if axes else shifts[0], axes)

    def backward(ctx, grad):
        shifts = tuple(-s for s in ctx.shifts)
        return ctx.backend.roll(grad, shifts if ctx.axes else shifts[0], ctx.axes)

    def backward_graph(ctx, grad):
        shifts = tuple(-s for s in ctx.shifts)
        return roll(grad, shifts, ctx.axes if ctx.axes else ())


class TrilBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.tril(diagonal)", r"\mathrm{tril}(\bar{y})")}

    def forward(ctx, self, diagonal=0):
        _check_matrix("tril", self)
        ctx.save(diagonal=saved_dim(diagonal))
        ctx.diagonal = diagonal
        return self._backend.tril(self._data, diagonal)

    def backward(ctx, grad):
        return ctx.backend.tril(grad, ctx.diagonal)

    def backward_graph(ctx, grad):
        return tril(grad, ctx.diagonal)


class TriuBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.triu(diagonal)", r"\mathrm{triu}(\bar{y})")}

    def forward(ctx, self, diagonal=0):
        _check_matrix("triu", self)
        ctx.save(diagonal=saved_dim(diagonal))
        ctx.diagonal = diagonal
        return self._backend.triu(self._data, diagonal)

    def backward(ctx, grad):
        return ctx.backend.triu(grad, ctx.diagonal)

    def backward_graph(ctx, grad):
        return triu(grad, ctx.diagonal)


def _check_matrix(name: str, tensor) -> None:
    if tensor.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")


# -- diagonals ---------------------------------------------------------------------------------------------------
def _diagonal_positions(backend, length: int, offset: int, device):
    """Row and column indices of the ``offset`` diagonal, ``length`` long."""
    rows = backend.arange(max(-offset, 0), max(-offset, 0) + length, 1, _dtype.int64, device)
    cols = backend.arange(max(offset, 0), max(offset, 0) + length, 1, _dtype.int64, device)
    return rows, cols


def _onto_diagonal(backend, values, shape, offset, dim1, dim2):
    """Zeros of ``shape`` with ``values`` (the diagonal in the last dim) on the ``offset`` diagonal of
    dims ``dim1``, ``dim2``: the inverse of taking that diagonal."""
    ndim = len(shape)
    others = [d for d in range(ndim) if d not in (dim1, dim2)]
    order = others + [dim1, dim2]
    out = backend.full(tuple(shape[d] for d in order), 0, _dtype.from_any(values.dtype), backend.device_of(values))
    rows, cols = _diagonal_positions(backend, values.shape[-1], offset, backend.device_of(values))
    backend.assign(out, values, (Ellipsis, rows, cols))
    inverse = [0] * ndim
    for position, d in enumerate(order):
        inverse[d] = position
    return backend.permute(out, tuple(inverse))


class DiagonalBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("diagonal_backward_symint(grad, self.sym_sizes(), offset, dim1, dim2)",
                            r"\bar{y} \text{ on the diagonal}")}

    def forward(ctx, self, offset=0, dim1=0, dim2=1, view=False):
        axis1, axis2 = wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim)
        if axis1 == axis2:
            raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        ctx.save(dim1=saved_dim(dim1), dim2=saved_dim(dim2), offset=saved_dim(offset), self_sym_sizes=tuple(self.shape))
        ctx.axes = (axis1, axis2)
        ctx.offset = offset
        if view:  # ``diagonal`` is a view (diag's diagonal_copy is not)
            return self._backend.diagonal_view(self._data, offset, axis1, axis2)
        return self._backend.diagonal(self._data, offset, axis1, axis2)

    def backward(ctx, grad):
        return _onto_diagonal(ctx.backend, grad, ctx.saved("self_sym_sizes"), ctx.offset, *ctx.axes)

    def backward_graph(ctx, grad):
        """``diagonal_backward(grad, sizes, offset, dim1, dim2)``, an op of its own in PyTorch."""
        from gradviz.ops.double_backward import DiagonalBackwardBackward0

        sizes, offset, dim1, dim2 = ctx.saved("self_sym_sizes", "offset", "dim1", "dim2")
        return DiagonalBackwardBackward0.apply(grad, sizes, ctx.axes, dict(dim1=dim1, dim2=dim2, offset=offset))


class DiagonalBackward0_copy(DiagonalBackward0):  # noqa: N801 - PyTorch's name for it
    """``torch.diag`` of a matrix, which PyTorch computes with ``diagonal_copy``: the same gradient."""


class DiagEmbedBackward0(OpFunction):
    """``torch.diag`` of a vector: the vector on the diagonal of a square matrix of zeros."""

    inputs = ("self",)
    derivatives = {"self": ("grad.diagonal(offset, dim1, dim2)", r"\mathrm{diag}(\bar{y})")}

    def forward(ctx, self, offset=0):
        """A vector, or a batch of them (the last dim), on the diagonal of the last two dims."""
        ctx.save(dim1=saved_dim(-2), dim2=saved_dim(-1), offset=offset)
        size = self.shape[-1] + abs(offset)
        batch = tuple(self.shape[:-1])
        return _onto_diagonal(self._backend, self._data, batch + (size, size), offset, len(batch), len(batch) + 1)

    def backward(ctx, grad):
        return ctx.backend.diagonal(grad, ctx.saved("offset"), -2, -1)

    def backward_graph(ctx, grad):
        return grad.diagonal(ctx.saved("offset"), -2, -1)


class TraceBackward0(OpFunction):
    """The sum of the diagonal: its gradient is the incoming gradient on the diagonal, 0 elsewhere."""

    inputs = ("self",)
    derivatives = {"self": ("trace_backward_symint(grad, self.sym_sizes())", r"\bar{y}\,I")}

    def forward(ctx, self):
        if self.ndim != 2:
            raise RuntimeError("trace: expected a matrix, but got tensor with size: " + str(list(self.shape)))
        ctx.save(self_sym_sizes=tuple(self.shape))
        backend = self._backend
        result = backend.sum(backend.diagonal(self._data, 0, 0, 1), None)
        return result if self.dtype.is_floating_point else backend.astype(result, _dtype.int64)

    def backward(ctx, grad):
        backend = ctx.backend
        rows, cols = ctx.saved("self_sym_sizes")
        diagonal = backend.broadcast_to(grad, (min(rows, cols),))
        return _onto_diagonal(backend, diagonal, (rows, cols), 0, 0, 1)

    def backward_graph(ctx, grad):
        """As PyTorch's ``trace_backward``: the gradient written into a flat row of zeros at every
        ``cols + 1``-th place (``index_fill``), then viewed as the matrix."""
        from gradviz.ops.double_backward import IndexFillBackward1
        from gradviz.tensor import arange, zeros

        rows, cols = ctx.saved("self_sym_sizes")
        flat = zeros(rows * cols, dtype=grad.dtype)
        places = arange(0, rows * cols, cols + 1)
        return IndexFillBackward1.apply(flat, grad, 0, places).view(rows, cols)


# -- the functions ---------------------------------------------------------------------------------------------
from gradviz.ops.shape import check_int_tuple  # noqa: E402


def flip(input, dims):
    check_int_tuple("flip", "dims", dims)  # the method takes ``x.flip(0)`` (ops/shape.py's method forms)
    dims = tuple(dims)
    return FlipBackward0.apply(input, dims)


def fliplr(input):
    return flip(input, (1,))


def flipud(input):
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = () if dims is None else (dims,) if isinstance(dims, int) else tuple(dims)
    if dims and len(dims) != len(shifts):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return RollBackward0.apply(input, shifts, dims)


def tril(input, diagonal: int = 0):
    return TrilBackward0.apply(input, diagonal)


def triu(input, diagonal: int = 0):
    return TriuBackward0.apply(input, diagonal)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    from gradviz.ops.shape import _view_of  # a view, sharing memory and version counter

    return _view_of(DiagonalBackward0.apply(input, offset, dim1, dim2, view=True), input)


def diag(input, diagonal: int = 0):
    """A vector's diagonal matrix, or a matrix's diagonal (as a vector)."""
    if input.ndim == 1:
        return DiagEmbedBackward0.apply(input, diagonal)
    if input.ndim == 2:
        return DiagonalBackward0_copy.apply(input, diagonal, 0, 1)
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.ndim}D")


def trace(input):
    return TraceBackward0.apply(input)


# -- strided windows (unfold) and as_strided ---------------------------------------------------------
class UnfoldBackward0(OpFunction):
    """``x.unfold(dimension, size, step)``: every window of ``size`` elements, ``step`` apart, along
    ``dimension`` (a new last dim holds each window). A view: windows that overlap share elements, so
    the backward adds each window's gradient back into the elements it covers."""

    inputs = ("self",)
    derivatives = {"self": ("unfold_backward(grad, self.sym_sizes(), dimension, size, step)",
                            r"\textstyle\sum_{\text{windows covering } x_i} \bar{y}")}

    def forward(ctx, self, dimension, size, step):
        ctx.save(dimension=saved_dim(dimension), self_sym_sizes=tuple(self.shape), size=size, step=step)
        axis = ctx.axis = wrap_dim(dimension, max(self.ndim, 1))
        return self._backend.unfold(self._data, axis if self.ndim else 0, size, step)

    def backward(ctx, grad):
        sizes, size, step = ctx.saved("self_sym_sizes", "size", "step")
        return _unfold_backward(ctx.backend, grad, sizes, size, step, ctx.axis)

    def backward_graph(ctx, grad):
        """``unfold_backward(grad, self.sym_sizes(), dimension, size, step)`` as an op of its own
        (UnfoldBackwardBackward0), as PyTorch records it."""
        from gradviz.ops.double_backward import _signed

        sizes, size, step = ctx.saved("self_sym_sizes", "size", "step")
        return UnfoldBackwardBackward0.apply(grad, sizes, _signed(ctx.saved("dimension")), size, step, ctx.axis)


class UnfoldBackwardBackward0(OpFunction):
    """``unfold_backward(grad_in, input_sizes, dim, size, step)``: each window's gradient added back into the
    elements it covers (the first derivative of ``unfold``). Its own derivative unfolds again."""

    inputs = ("grad_in",)
    derivatives = {"grad_in": ("grad.unfold(dim, size, step)", r"\mathrm{unfold}(\bar{z})")}

    def forward(ctx, grad_in, input_sizes, dim, size, step, axis):
        ctx.save(dim=saved_dim(dim), size=size, step=step)
        ctx.dim, ctx.axis = dim, axis
        return _unfold_backward(grad_in._backend, grad_in._data, tuple(input_sizes), size, step, axis)

    def backward(ctx, grad):
        size, step = ctx.saved("size", "step")
        return ctx.backend.unfold(grad, ctx.axis if grad.ndim else 0, size, step)

    def backward_graph(ctx, grad):
        size, step = ctx.saved("size", "step")
        return unfold(grad, ctx.dim, size, step)


def _unfold_backward(backend, grad, sizes, size, step, axis):
    """``unfold``'s gradient: per window ``w`` and offset ``k``, the element ``w * step + k``: one product with
    the 0/1 matrix of those pairs, after moving the window dims last."""
    dtype = _dtype.from_any(grad.dtype)
    if not sizes:  # a 0-d input: its one window holds it once
        return backend.reshape(grad, ())
    length, count = sizes[axis], grad.shape[axis]
    rows = [[1.0 if window * step + offset == element else 0.0 for element in range(length)]
            for window in range(count) for offset in range(size)]
    covers = backend.array(rows, dtype, backend.device_of(grad)) if rows else backend.full(
        (0, length), 0, dtype, backend.device_of(grad))
    order = tuple(d for d in range(grad.ndim - 1) if d != axis) + (axis, grad.ndim - 1)
    moved = backend.permute(grad, order)
    flat = backend.reshape(moved, tuple(moved.shape[:-2]) + (count * size,))
    summed = backend.matmul(flat, covers)
    back = list(range(len(sizes) - 1))
    back.insert(axis, len(sizes) - 1)
    return backend.permute(summed, tuple(back)) if len(sizes) > 1 else summed


def unfold(input, dimension: int, size: int, step: int):
    """The windows of ``size`` elements every ``step`` along ``dimension``, as a view with one more dim."""
    from gradviz.ops.shape import _view_of

    axis = wrap_dim(dimension, max(input.ndim, 1))
    length = input.shape[axis] if input.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return _view_of(UnfoldBackward0.apply(input, dimension, size, step), input)


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s memory with any ``size`` and ``stride`` (in elements), from ``storage_offset``:
    PyTorch's AsStridedBackward0, whose backward adds the gradient back where each element was read."""
    from gradviz.ops.inplace import AsStridedBackward0
    from gradviz.ops.shape import _view_of

    size, stride = tuple(size), tuple(stride)
    memory = input._base  # a view reads its base's storage; not given, the offset is the view's own
    offset = (input.storage_offset() if memory is not None else 0) if storage_offset is None else storage_offset
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = 0 if 0 in size else offset + 1 + sum((s - 1) * st for s, st in zip(size, stride))
    storage = (memory if memory is not None else input).numel()
    if needed > storage:
        itemsize = input.dtype.itemsize
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of bounds for "
                           f"storage of size {storage * itemsize}")
    return _view_of(AsStridedBackward0.apply(input, size, stride, offset, memory=memory, saved_offset=storage_offset),
                    input)


