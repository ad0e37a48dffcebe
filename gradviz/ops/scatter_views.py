"""Writing into a copy through a view: ``select_scatter``, ``slice_scatter``, ``diagonal_scatter`` and
``masked_scatter`` (one node each, as PyTorch records them), ``renorm`` (RenormBackward0), ``fill_diagonal_`` (an
in-place fill of the diagonal through an ``as_strided`` view, which PyTorch's graph shows as CopySlices), and two
method spellings tutorials use: ``x.addmm(a, b)`` and ``torch.pinverse``.

The scatters are the functional form of ``out = x.clone(); out[view] = src``: the input's gradient is the
output's with the written part zeroed, the source's is the output's gradient read through the same view.
"""
from __future__ import annotations

import numpy as np

from gradviz.autograd.function import OpFunction
from gradviz.ops.shape import saved_dim, select, slice_along
from gradviz.tensor import zeros_like


def _normalized(dim: int, ndim: int) -> int:
    return dim + ndim if dim < 0 else dim


def _select_index(shape: tuple, dim: int, index: int) -> tuple:
    return (slice(None),) * dim + (index,)


def _slice_index(shape: tuple, dim: int, start, end, step: int) -> tuple:
    return (slice(None),) * dim + (slice(start, end, step),)


class _ScatterInto(OpFunction):
    """``out = self.clone(); out[where] = src`` for a view ``where`` each subclass describes: ``_put`` writes into
    it and ``_take`` reads it (arrays), ``_read`` reads it from a Tensor (recorded, for a double backward)."""

    inputs = ("self", "src")

    def forward(ctx, self, src, *view, shown=None):
        # ``shown``: the arguments as given, which PyTorch saves (a negative index shows as an unsigned 64-bit one)
        ctx.save(**dict(zip(type(ctx).options, (value if value is None else saved_dim(value)
                                                for value in (shown or view)))))
        ctx.view, ctx.shown = view, shown or view
        out = self._backend.copy(self._data)
        type(ctx)._put(out, src._data, *view)
        return out

    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_self = grad_src = None
        if needs[0]:
            grad_self = ctx.backend.copy(grad)
            type(ctx)._put(grad_self, 0, *ctx.view)
        if needs[1]:
            grad_src = np.array(type(ctx)._take(grad, *ctx.view))
        return grad_self, grad_src

    def backward_graph(ctx, grad):
        needs = ctx.needs_input_grad
        # (PyTorch's generated code makes the source's gradient first, then the input's)
        cls = type(ctx)
        grad_src = cls._read(grad, ctx.view, ctx.shown) if needs[1] else None
        grad_self = cls.apply(grad, zeros_like(cls._read(grad, ctx.view, ctx.shown)), *ctx.view, shown=ctx.shown) \
            if needs[0] else None
        return grad_self, grad_src


class SelectScatterBackward0(_ScatterInto):
    options = ("dim", "index")
    derivatives = {"self": ("select_scatter(grad, zeros_like(src), dim, index)", r"\bar{y}\ \text{with the row} = 0"),
                   "src": ("grad.select(dim, index)", r"\bar{y}[\text{row}]")}

    @staticmethod
    def _put(array, value, dim, index):
        array[_select_index(array.shape, dim, index)] = value

    @staticmethod
    def _take(array, dim, index):
        return array[_select_index(array.shape, dim, index)]

    @staticmethod
    def _read(tensor, view, shown):
        return select(tensor, *view, given=shown[1], given_dim=shown[0])


class SliceScatterBackward0(_ScatterInto):
    options = ("dim", "start", "end", "step")
    derivatives = {"self": ("slice_scatter(grad, zeros_like(src), dim, start, end, step)",
                            r"\bar{y}\ \text{with the slice} = 0"),
                   "src": ("grad.slice(dim, start, end, step)", r"\bar{y}[\text{slice}]")}

    @staticmethod
    def _put(array, value, dim, start, end, step):
        array[_slice_index(array.shape, dim, start, end, step)] = value

    @staticmethod
    def _take(array, dim, start, end, step):
        return array[_slice_index(array.shape, dim, start, end, step)]

    @staticmethod
    def _read(tensor, view, shown):
        return slice_along(tensor, *view, given=shown[1:3], given_dim=shown[0])


class DiagonalScatterBackward0(_ScatterInto):
    options = ("offset", "dim1", "dim2")
    derivatives = {"self": ("diagonal_scatter(grad, zeros_like(src), offset, dim1, dim2)",
                            r"\bar{y}\ \text{with the diagonal} = 0"),
                   "src": ("grad.diagonal(offset, dim1, dim2)", r"\operatorname{diag}(\bar{y})")}

    @staticmethod
    def _put(array, value, offset, dim1, dim2):
        moved = np.moveaxis(array, (dim1, dim2), (-2, -1))  # (a writable view; numpy's diagonal is read-only)
        count = np.diagonal(moved, offset, -2, -1).shape[-1]
        rows = np.arange(count) + max(-offset, 0)
        moved[..., rows, rows + offset] = value

    @staticmethod
    def _take(array, offset, dim1, dim2):
        return np.diagonal(array, offset, dim1, dim2)

    @staticmethod
    def _read(tensor, view, shown):
        return tensor.diagonal(*shown)


def select_scatter(input, src, dim: int, index: int):
    """A copy of ``input`` whose ``select(dim, index)`` is ``src``."""
    given_dim, dim = dim, _normalized(dim, input.dim())
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension "
                         f"{dim}")
    _check_src_shape(input.select(dim, index), src, "select_scatter")
    return SelectScatterBackward0.apply(input, src, dim, index + size if index < 0 else index, shown=(given_dim, index))


def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1):
    """A copy of ``input`` whose slice ``[start:end:step]`` along ``dim`` is ``src``."""
    given_dim, dim = dim, _normalized(dim, input.dim())
    size = input.shape[dim]
    first, last, _ = slice(start, end, step).indices(size)
    _check_src_shape(input[_slice_index(tuple(input.shape), dim, start, end, step)], src, "slice_scatter")
    return SliceScatterBackward0.apply(input, src, dim, first, max(first, last), step,
                                       shown=(given_dim, start, end, step))


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """A copy of ``input`` whose ``diagonal(offset, dim1, dim2)`` is ``src``."""
    shown = (offset, dim1, dim2)
    dim1, dim2 = _normalized(dim1, input.dim()), _normalized(dim2, input.dim())
    _check_src_shape(input.diagonal(offset, dim1, dim2), src, "diagonal_scatter")
    return DiagonalScatterBackward0.apply(input, src, offset, dim1, dim2, shown=shown)


def _check_src_shape(view, src, name: str) -> None:
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")


# -- masked_scatter --------------------------------------------------------------------------------------------------
class MaskedScatterBackward0(OpFunction):
    """``out = self.clone(); out[mask] = source.flatten()[:mask.sum()]`` (the mask broadcast to ``self``)."""

    inputs = ("self", "source")
    derivatives = {"self": ("grad.masked_fill(mask, 0)", r"\bar{y}\ \text{where not mask}"),
                   "source": ("masked_scatter_backward(grad, mask, source.sizes())",
                              r"\bar{y}[\text{mask}]\ \text{(then zeros)}")}

    def forward(ctx, self, source, mask=None):
        mask_data = np.broadcast_to(mask._data, self._data.shape)
        ctx.save(mask=mask, source_sym_sizes=tuple(source.shape))
        ctx.mask = mask_data
        out = self._backend.copy(self._data)
        count = int(mask_data.sum())
        out[mask_data] = source._data.reshape(-1)[:count]
        return out

    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        grad_self = grad_source = None
        if needs[0]:
            grad_self = np.where(ctx.mask, np.zeros((), grad.dtype), grad)
        if needs[1]:
            shape = ctx.saved("source_sym_sizes")
            flat = np.zeros(int(np.prod(shape)), grad.dtype)
            picked = grad[ctx.mask]
            flat[:picked.size] = picked
            grad_source = flat.reshape(shape)
        return grad_self, grad_source


def masked_scatter(input, mask, source):
    """``input`` with the places where ``mask`` is True filled, in order, from ``source``'s elements."""
    if mask.dtype.name != "bool":
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_aten_name(mask.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"  # (no space: PyTorch's)
                           f"{_aten_name(input.dtype)} and {_aten_name(source.dtype)}")
    np.broadcast_shapes(tuple(mask.shape), tuple(input.shape))
    if int(np.broadcast_to(mask._data, tuple(input.shape)).sum()) > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return MaskedScatterBackward0.apply(input, source, mask=mask)


def masked_scatter_(input, mask, source):
    """``masked_scatter`` in place (``MaskedScatterBackward0`` as the tensor's new node)."""
    from gradviz.ops.inplace import apply_

    return apply_(input, masked_scatter, mask, source)


def _aten_name(dtype) -> str:
    from gradviz._dtype import SCALAR_TYPE_NAMES

    return SCALAR_TYPE_NAMES.get(dtype.name, dtype.name)


# -- renorm -----------------------------------------------------------------------------------------------------------
class RenormBackward0(OpFunction):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm`` (by
    ``maxnorm / (norm + 1e-7)``, PyTorch's factor); the others kept."""

    inputs = ("self",)
    derivatives = {"self": ("renorm_backward(grad, self, p, dim, maxnorm)",
                            r"s\,\bar{y} + x\,\tfrac{\partial s}{\partial \lVert x \rVert}\,"
                            r"\textstyle\sum (\bar{y}\,x)\,\tfrac{\partial \lVert x \rVert}{\partial x}")}

    def forward(ctx, self, p, dim, maxnorm, given_dim=None):
        ctx.save(dim=saved_dim(dim if given_dim is None else given_dim), maxnorm=maxnorm, p=p, self=self)
        ctx.axes = tuple(axis for axis in range(self.dim()) if axis != dim)
        x = self._data
        scale = _renorm_scale(_slice_norms(x, p, ctx.axes), maxnorm, x.dtype)
        return np.asarray(x * scale)

    def backward(ctx, grad):
        x, p, maxnorm = ctx.saved("self", "p", "maxnorm")
        return renorm_grad(grad, x, p, ctx.axes, maxnorm)


def renorm_grad(grad, x, p, axes: tuple, maxnorm):
    """``renorm``'s gradient: ``s·ȳ`` plus, on each clamped slice, ``x``'s share of the change of the scale
    ``s = maxnorm / (norm + 1e-7)`` (``ds/dnorm = -maxnorm / (norm + 1e-7)²``, ``dnorm/dx = sign(x) |x|^(p-1) /
    norm^(p-1)`` for the slice's ``p``-norm, times ``Σ ȳ·x`` over the slice)."""
    wide = np.float64 if x.dtype != np.float32 else np.float32
    xw, gw = x.astype(wide), grad.astype(wide)
    norms = _slice_norms(xw, p, axes)
    over = norms > maxnorm
    scale = np.where(over, maxnorm / (norms + 1e-7), 1.0).astype(wide)
    dscale = np.where(over, -maxnorm / (norms + 1e-7) ** 2, 0.0).astype(wide)
    with np.errstate(divide="ignore", invalid="ignore"):
        dnorm = np.where(norms > 0, np.sign(xw) * np.abs(xw) ** (p - 1) / norms ** (p - 1), 0.0)
    projection = (gw * xw).sum(axis=axes, keepdims=True)
    return np.asarray((scale * gw + projection * dscale * dnorm).astype(x.dtype))


def _slice_norms(x, p, axes):
    with np.errstate(over="ignore"):
        return (np.abs(x) ** p).sum(axis=axes, keepdims=True) ** (1.0 / p) if p != 2 else \
            np.sqrt((x * x).sum(axis=axes, keepdims=True))


def _renorm_scale(norms, maxnorm, dtype):
    return np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).astype(dtype)


def renorm(input, p, dim: int, maxnorm):
    """Every slice along ``dim`` with a ``p``-norm above ``maxnorm`` rescaled to norm ``maxnorm``."""
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")  # (a C++ Scalar's printing)
    return RenormBackward0.apply(input, p, _normalized(dim, input.dim()), maxnorm, given_dim=dim)


def renorm_(input, p, dim: int, maxnorm):
    from gradviz.ops.inplace import apply_

    return apply_(input, renorm, p, dim, maxnorm)


# -- fill_diagonal_, x.addmm, torch.pinverse --------------------------------------------------------------------------------
def fill_diagonal_(input, fill_value, wrap: bool = False):
    """Fill the main diagonal in place (every dim's index equal), through an ``as_strided`` view as PyTorch's
    kernel does; ``wrap``: a tall matrix's diagonal starts again below every ``width + 1`` rows."""
    ndim = input.dim()
    if ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = input.shape[0], input.shape[1]
    if ndim > 2 and any(size != height for size in input.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    offset = input.storage_offset()
    step = sum(input.stride())
    size = min(height, width)
    input.as_strided((size,), (step,), offset).fill_(fill_value)
    if wrap and ndim == 2 and height > width + 1:
        count = (input.numel() + width) // (width + 1) - size
        input.as_strided((count,), (step,), offset + input.stride(0) * (width + 1)).fill_(fill_value)
    return input


def addmm_method(input, mat1, mat2, *, beta=1, alpha=1):
    """``x.addmm(mat1, mat2)``: ``beta * x + alpha * (mat1 @ mat2)``."""
    from gradviz.ops.linalg import addmm

    return addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def addmm_(input, mat1, mat2, *, beta=1, alpha=1):
    from gradviz.ops.inplace import apply_

    return apply_(input, addmm_method, mat1, mat2, beta=beta, alpha=alpha)


def pinverse(input, rcond: float = 1e-15):
    """The pseudo-inverse (``torch.linalg.pinv`` with ``rtol=rcond``)."""
    from gradviz.ops.decompositions import pinv

    return pinv(input, rtol=rcond)


def tensor_methods() -> dict:
    return {"select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
            "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_, "renorm": renorm,
            "renorm_": renorm_, "fill_diagonal_": fill_diagonal_, "addmm": addmm_method, "addmm_": addmm_,
            "pinverse": pinverse}


def torch_functions() -> dict:
    return {"select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
            "masked_scatter": masked_scatter, "renorm": renorm, "pinverse": pinverse}
