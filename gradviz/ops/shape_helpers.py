"""Shape helpers learners meet after ``view`` and ``cat``: ``tensor_split``, ``split_with_sizes``, ``rot90``,
``diagflat``, ``dstack``, ``row_stack``, ``block_diag``, ``sum_to_size``, ``unravel_index``, ``torch.fill``,
``torch.range``, ``logspace``, ``byte``/``char``/``short``, ``new``, ``get_device``.

Each is recorded as PyTorch records it: ``tensor_split`` as one ``SliceBackward0`` view per piece (saving the
bounds as computed or given, negatives as uint64), ``rot90`` as ``Rot90Backward0`` (a copy, saving ``k`` and
``dims``), ``diagflat`` as ``view(-1)`` then ``DiagEmbedBackward0``, ``dstack`` as ``atleast_3d`` then ``cat``,
``block_diag`` as ``BlockDiagBackward0``, ``sum_to_size`` as ``sum(dims, keepdim=True)`` (then a view when
leading dims go), ``torch.fill`` as ``FillBackward0`` (a number) or ``FillBackward1`` (a 0-d tensor).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import _NO_RECORD, OpFunction
from gradviz.grad_mode import _state as _grad_state
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.conversion import FillBackward2, FillBackward3
from gradviz.ops.shape import (SqueezeBackward0, SqueezeBackward2, SqueezeBackward4, TBackward0, TransposeBackward0,
                               UnsqueezeBackward0)
from gradviz.tensor import Tensor


def _tensor_type_error(name: str, argument: str, position: int, value) -> TypeError:
    return TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                     f"{type(value).__name__}")


# -- tensor_split, split_with_sizes ----------------------------------------------------------------------------
def _slice_bound(value: int, size: int) -> int:
    """A slice bound as ATen's ``slice`` clamps it: a negative one counts from the end, then into [0, size]."""
    value = value + size if value < 0 else value
    return min(max(value, 0), size)


def tensor_split(input, indices_or_sections, dim: int = 0) -> tuple:
    """Pieces of ``input`` along ``dim``: ``n`` nearly equal sections (the first ``size % n`` one longer), or
    cut at the given indices. Every piece is a view (``SliceBackward0``), empty ones too."""
    from gradviz.ops.shape import slice_along

    if not isinstance(input, Tensor):
        raise _tensor_type_error("tensor_split", "input", 1, input)
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    axis = wrap_dim(dim, input.ndim)
    if isinstance(indices_or_sections, Tensor):
        given = indices_or_sections
        if given.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {given.ndim} dims")
        if given.dtype is not _dtype.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{_dtype.SCALAR_TYPE_NAMES[given.dtype.name]}")
        indices_or_sections = int(given.item()) if given.ndim == 0 else [int(v) for v in given.tolist()]
    size = input.shape[axis]
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        shortest, longer = divmod(size, sections)
        bounds, start = [], 0
        for index in range(sections):
            end = start + shortest + (1 if index < longer else 0)
            bounds.append((start, end))
            start = end
    else:
        cuts = [int(v) for v in indices_or_sections]
        bounds = list(zip([0, *cuts], [*cuts, size]))
    pieces = []
    for start, end in bounds:
        low = _slice_bound(start, size)
        high = max(_slice_bound(end, size), low)
        pieces.append(slice_along(input, axis, low, high, 1, given=(start, end)))
    return tuple(pieces)


def split_with_sizes(input, split_sizes, dim: int = 0) -> tuple:
    """``split`` with a list of sizes (``SplitWithSizesBackward0``)."""
    from gradviz.ops.pieces import split

    return split(input, list(split_sizes), dim)


# -- rot90 ------------------------------------------------------------------------------------------------------
class Rot90Backward0(OpFunction):
    """``rot90(x, k, dims)``: a quarter turn ``k`` times, from ``dims[0]`` towards ``dims[1]``; its gradient is
    the gradient turned back (``grad.rot90(-k, dims)``)."""

    inputs = ("self",)
    derivatives = {"self": ("grad.rot90(-k, dims)", r"\mathrm{rot90}(\bar{y}, -k)")}

    def forward(ctx, self, k, dims):
        ctx.save(dims=saved_dim(tuple(dims)), k=saved_dim(k))
        ctx.turn = (k, tuple(dims))
        backend = self._backend
        axes = tuple(wrap_dim(d, self.ndim) for d in dims)
        turned = np.rot90(np.asarray(backend.to_numpy(self._data)), k % 4, axes)
        return backend.array(np.ascontiguousarray(turned), self.dtype, backend.device_of(self._data))

    def backward(ctx, grad):
        backend = ctx.backend
        k, dims = ctx.turn
        axes = tuple(wrap_dim(d, grad.ndim) for d in dims)
        turned = np.rot90(np.asarray(backend.to_numpy(grad)), (-k) % 4, axes)
        return backend.array(np.ascontiguousarray(turned), _dtype.from_any(grad.dtype), backend.device_of(grad))

    def backward_graph(ctx, grad):
        k, dims = ctx.turn
        return rot90(grad, -k, dims)


def rot90(input, k: int = 1, dims=(0, 1)):
    """``input`` turned by ``k`` quarter turns in the plane of ``dims`` (a copy, as PyTorch's)."""
    if not isinstance(input, Tensor):
        raise _tensor_type_error("rot90", "input", 1, input)
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = (wrap_dim(d, input.ndim) for d in dims)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    return Rot90Backward0.apply(input, k, tuple(dims))


# -- diagflat, dstack, row_stack -------------------------------------------------------------------------------------
def diagflat(input, offset: int = 0):
    """A matrix with ``input``'s elements (flattened) on diagonal ``offset``: ``view(-1)``, then ``diag_embed``."""
    from gradviz.ops.shape import diag_embed

    if not isinstance(input, Tensor):
        raise _tensor_type_error("diagflat", "input", 1, input)
    return diag_embed(input.contiguous().view(-1), offset)


def dstack(tensors):
    """Stacked along the third dim: ``cat(atleast_3d(tensors), 2)``."""
    from gradviz.ops.combine import cat
    from gradviz.ops.torch_functions import atleast_3d

    return cat(list(atleast_3d(*tensors)), 2)


def row_stack(tensors):
    """``vstack``'s alias."""
    from gradviz.ops.composites import vstack

    return vstack(tensors)


# -- block_diag ---------------------------------------------------------------------------------------------------
class BlockDiagBackward0(OpFunction):
    """``block_diag(A, B, ...)``: each input (a number: 1×1, a vector: one row) on the diagonal of a zero matrix;
    each gets back its own block of the gradient."""

    inputs = ("tensors",)
    derivatives = {"tensors": ("block_diag_backward(grad, to_args_sizes(tensors), to_args_scalartypes(tensors))",
                               r"\bar{y}\ \mathrm{block\ by\ block}")}

    @classmethod
    def apply(cls, *tensors, dtype):
        """Every tensor in the list is an input with its own edge (as ``cat``'s)."""
        if _grad_state.enabled:
            needs = tuple(tensor.requires_grad for tensor in tensors)
            if True in needs:
                return cls._record(tensors, {"dtype": dtype}, tensors, needs)
        return Tensor._make(cls.forward(_NO_RECORD, *tensors, dtype=dtype))

    def forward(ctx, *tensors, dtype):
        backend = tensors[0]._backend
        blocks = [np.asarray(backend.to_numpy(t._data)).reshape(_block_shape(t)) for t in tensors]
        ctx.blocks = tuple((tuple(t.shape), block.shape, t.dtype) for t, block in zip(tensors, blocks))
        rows, columns = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
        out = np.zeros((rows, columns), dtype=np.dtype(dtype.numpy))
        row = column = 0
        for block in blocks:
            out[row:row + block.shape[0], column:column + block.shape[1]] = block
            row, column = row + block.shape[0], column + block.shape[1]
        return backend.array(out, dtype, backend.device_of(tensors[0]._data))

    def backward(ctx, grad):
        backend = ctx.backend
        values = np.asarray(backend.to_numpy(grad))
        grads, row, column = [], 0, 0
        for (shape, (height, width), dtype), needed in zip(ctx.blocks, ctx.needs_input_grad):
            block = values[row:row + height, column:column + width].reshape(shape)
            grads.append(backend.array(np.array(block), dtype, backend.device_of(grad)) if needed else None)
            row, column = row + height, column + width
        return tuple(grads)


def _block_shape(tensor) -> tuple:
    return (1, 1) if tensor.ndim == 0 else (1, tensor.shape[0]) if tensor.ndim == 1 else tuple(tensor.shape)


def block_diag(*tensors):
    """A block-diagonal matrix of the inputs (their common dtype)."""
    for index, tensor in enumerate(tensors):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"expected Tensor as element {index} in argument 0, but got {type(tensor).__name__}")
        if tensor.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {index} has "
                               f"{tensor.ndim} dimensions")
    if not tensors:
        from gradviz.tensor import full

        return full((1, 0), 0, dtype=_dtype.default_float)
    dtype = _dtype.result_type(tensors, ())
    return BlockDiagBackward0.apply(*tensors, dtype=dtype)


# -- sum_to_size -----------------------------------------------------------------------------------------------------
def sum_to_size(self, *size):
    """``self`` summed down to ``size`` (which must expand to ``self``'s shape): ATen's ``sum_to``, a
    ``sum(dims, keepdim=True)``, then a view when leading dims go; ``self`` itself when the sizes agree."""
    from gradviz.ops.reduction import sum as _sum

    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    shape = tuple(self.shape)
    leading = len(shape) - len(size)
    expandable = leading >= 0 and all(wanted in (1, have) for wanted, have in zip(size, shape[leading:]))
    if not expandable:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = list(range(leading)) + [leading + i for i, wanted in enumerate(size) if wanted == 1 and shape[leading + i] != 1]
    result = _sum(self, dims, keepdim=True) if dims else self
    return result.view(size) if leading > 0 else result


# -- unravel_index ------------------------------------------------------------------------------------------------
def unravel_index(indices, shape):
    """The coordinates in ``shape`` of each flat index (a tuple, one int64 tensor per dim). As PyTorch computes
    them, a flat index outside the shape wraps around (floor division and remainder)."""
    from gradviz.tensor import tensor as _tensor

    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices.dtype.is_floating_point or indices.dtype is _dtype.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype!r}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    flat = np.asarray(indices._backend.to_numpy(indices._data)).astype(np.int64)
    coordinates, stride = [], 1
    for size in reversed(shape):
        coordinates.append(np.floor_divide(flat, stride) % size if size else np.zeros_like(flat))
        stride *= size
    return tuple(_tensor(c, dtype=_dtype.int64) for c in reversed(coordinates))


# -- torch.fill: fill's out-of-place form ----------------------------------------------------------------------
class FillBackward0(FillBackward2):
    """``torch.fill(x, number)``: every element the number; ``x``'s old values get gradient 0."""


class FillBackward1(FillBackward3):
    """``torch.fill(x, value)`` with a 0-d tensor: each element's gradient goes to ``value``."""


def fill(input, value):
    if not isinstance(input, Tensor):
        raise _tensor_type_error("fill", "input", 1, input)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               "dimensions.")
        return FillBackward1.apply(input, value)
    return FillBackward0.apply(input, value)


# -- torch.range, logspace ---------------------------------------------------------------------------------------
RANGE_WARNING = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                 "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                 "[start, end).")


def deprecated_range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False):
    """``[start, start + step, ..., end]``, the end included (deprecated in PyTorch, with its warning);
    the default float dtype unless ``dtype`` says otherwise."""
    from gradviz.tensor import tensor as _tensor

    warnings.warn(RANGE_WARNING, UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    target = dtype or _dtype.default_float
    values = start + np.arange(count, dtype=np.float64) * step
    result = _tensor(values.astype(np.dtype(target.numpy)), dtype=target, device=device)
    return result.requires_grad_(requires_grad) if requires_grad else result


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad: bool = False):
    """``base ** linspace(start, end, steps)``, each power computed as PyTorch's kernel does: from the start for
    the first half, from the end for the second (so both ends are exact)."""
    from gradviz.tensor import tensor as _tensor

    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    target = dtype or _dtype.default_float
    index = np.arange(steps, dtype=np.float64)
    if steps > 1:
        step = (float(end) - float(start)) / (steps - 1)
        halfway = steps // 2
        exponents = np.where(index < halfway, start + step * index, end - step * (steps - index - 1))
    else:
        exponents = np.full(steps, float(start))
    compute = np.dtype(target.numpy) if target.is_floating_point else np.float64
    powers = np.power(np.asarray(base, dtype=compute), exponents.astype(compute))
    result = _tensor(powers.astype(np.dtype(target.numpy)), dtype=target, device=device)
    return result.requires_grad_(requires_grad) if requires_grad else result


# -- cartesian_prod, combinations, vander, linalg.vander: PyTorch's composites, node for node -------------------------
def _check_vector(tensor) -> None:
    if tensor.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(tensor.shape)}")


def cartesian_prod(*tensors):
    """Every tuple of one element from each vector, as rows: ``meshgrid(indexing='ij')``, each grid flattened
    (a copy: UnsafeViewBackward0 over CloneBackward0), stacked as columns. One vector comes back as it is."""
    from gradviz.ops.combine import stack
    from gradviz.ops.composites import meshgrid

    for tensor in tensors:
        _check_vector(tensor)
    if len(tensors) == 1:
        return tensors[0]
    return stack([grid.flatten() for grid in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-``r`` subsequences of a vector, in order, as rows: each of ``r`` grids of ``input``
    ``masked_select``-ed where its indices increase (or do not decrease, ``with_replacement``), then stacked."""
    from gradviz.ops.combine import stack
    from gradviz.ops.composites import meshgrid
    from gradviz.ops.selection import masked_select
    from gradviz.tensor import full

    if not isinstance(input, Tensor):
        raise _tensor_type_error("combinations", "input", 1, input)
    _check_vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return full((0,), 0, dtype=input.dtype)
    count = input.shape[0]
    indices = np.meshgrid(*([np.arange(count)] * r), indexing="ij")
    mask = np.ones((count,) * r, dtype=bool)
    for earlier, later in zip(indices, indices[1:]):
        mask &= (earlier <= later) if with_replacement else (earlier < later)
    selected = Tensor._make(input._backend.array(mask, _dtype.bool, input._backend.device_of(input._data)),
                            backend=input._backend)
    return stack([masked_select(grid, selected) for grid in meshgrid(*([input] * r), indexing="ij")], 1)


def vander(x, N=None, increasing: bool = False):
    """The Vandermonde matrix of a vector, powers falling (``increasing``: rising), as ATen builds it: a column of
    ones filled in, ``x`` copied into the other columns, their ``cumprod`` copied back, then ``flip``."""
    from gradviz.ops.shape import slice_along
    from gradviz.ops.statistics import cumprod
    from gradviz.tensor import empty

    if not isinstance(x, Tensor):
        raise _tensor_type_error("vander", "x", 1, x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    columns = x.shape[0] if N is None else N
    if columns < 0:
        raise RuntimeError("N must be non-negative.")
    from gradviz.ops.torch_functions import promote_types

    dtype = promote_types(x.dtype, _dtype.int64)
    result = empty((x.shape[0], columns), dtype=dtype)

    def rest():  # ATen's ``result.slice(1, 1)``: a slice with no end given (saved as None)
        return slice_along(result, 1, 1, columns, 1, given=(1, None))

    if columns > 0:
        result.select(1, 0).fill_(1)
        if columns > 1:
            rest().copy_(x.unsqueeze(1))
            rest().copy_(cumprod(rest(), 1))
    return result if increasing else result.flip(1)


def linalg_vander(x, *, N=None):
    """``torch.linalg.vander``: powers rising along a new last dim, ``x``'s batch dims kept: a ``cumprod`` of
    ``x`` expanded, after a column of ones (``cat``)."""
    from gradviz.ops.combine import cat
    from gradviz.ops.statistics import cumprod

    if not isinstance(x, Tensor):
        raise _tensor_type_error("linalg_vander", "x", 1, x)
    if x.dtype is _dtype.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    x_ = x.unsqueeze(-1) if x.ndim == 0 else x
    shape = list(x_.shape)
    columns = shape[-1] if N is None else N
    if columns <= 1:
        raise RuntimeError("N must be greater than 1.")
    result = cumprod(x_.unsqueeze(-1).expand([*shape, columns - 1]), -1)
    ones = result.new_ones([*shape, 1])
    return cat([ones, result], -1)


# -- squeeze_, unsqueeze_, t_, transpose_: a tensor's shape changed in place ---------------------------------------
class UnsqueezeBackward1(UnsqueezeBackward0):
    """``x.unsqueeze_(dim)``."""


class TBackward1(TBackward0):
    """``x.t_()``."""


class TransposeBackward1(TransposeBackward0):
    """``x.transpose_(dim0, dim1)``."""


class SqueezeBackward3(SqueezeBackward0):
    """``x.squeeze_()``."""


class SqueezeBackward5(SqueezeBackward2):
    """``x.squeeze_(dims)`` with a tuple of dims."""


class _SqueezeDimInPlace(SqueezeBackward4):
    """``x.squeeze_(dim)``: PyTorch's SqueezeBackward4, saving the dim as given (negatives as uint64)."""

    def forward(ctx, self, dim, given):
        ctx.save(dim=saved_dim(given), self_sym_sizes=tuple(self.shape))
        shape = tuple(size for i, size in enumerate(self.shape) if not (i == dim and size == 1))
        return self._backend.reshape(self._data, shape)


_SqueezeDimInPlace.__name__ = _SqueezeDimInPlace.__qualname__ = "SqueezeBackward4"


def _restrided(self: Tensor, node_class, *args, **params) -> Tensor:
    """``self`` given the sizes and strides of ``node_class``'s view of it, in place: the same memory, the
    version counter moved on, and (when recorded) the view op's node as its grad_fn, over the old one. A view
    stays a view of its base, with no CopySlices: its memory did not change."""
    from gradviz.ops.inplace import _set_history, check_in_place

    recorded = _grad_state.enabled and self.requires_grad
    if recorded:
        check_in_place(self)
    result = node_class.apply(self, *args, **params)
    self._data = result._data
    self._vc[0] += 1
    if self._base is not None:
        self._attr_version = self._vc[0]  # its new grad_fn is this op's node, not a regenerated AsStrided one
    if recorded:
        _set_history(self, result._grad_fn, 0)
    return self


def unsqueeze_(self, dim: int) -> Tensor:
    return _restrided(self, UnsqueezeBackward1, wrap_dim(dim, self.ndim + 1), given=dim)


def squeeze_(self, dim=None) -> Tensor:
    if dim is None:
        return _restrided(self, SqueezeBackward3)
    if isinstance(dim, (tuple, list)):
        dims = tuple(wrap_dim(d, max(self.ndim, 1)) for d in dim)
        return _restrided(self, SqueezeBackward5, dims, given=tuple(dim))
    return _restrided(self, _SqueezeDimInPlace, wrap_dim(dim, max(self.ndim, 1)), dim)


def t_(self) -> Tensor:
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return _restrided(self, TBackward1)


def transpose_(self, dim0: int, dim1: int) -> Tensor:
    given = (dim0, dim1)
    return _restrided(self, TransposeBackward1, wrap_dim(dim0, self.ndim), wrap_dim(dim1, self.ndim), given=given)


# -- conversions and the legacy constructor as methods ------------------------------------------------------------
def _to(dtype_name: str):
    def method(self, memory_format=None):
        return self.to(getattr(_dtype, dtype_name))

    method.__name__ = {"uint8": "byte", "int8": "char", "int16": "short"}[dtype_name]
    method.__doc__ = f"``self.to(torch.{dtype_name})``."
    return method


def new(self, *args, **keywords):
    """PyTorch's legacy ``x.new(...)``: ``torch.Tensor(...)`` in ``x``'s dtype and device (sizes, or data)."""
    from gradviz.legacy import construct

    return construct(self.dtype, args, keywords)


def get_device(self) -> int:
    """The device index: -1 on the CPU."""
    if not isinstance(self, Tensor):
        raise _tensor_type_error("get_device", "input", 1, self)
    device = self.device
    return -1 if device.type == "cpu" else (device.index or 0)


def tensor_methods() -> dict:
    return {"tensor_split": tensor_split, "split_with_sizes": split_with_sizes, "rot90": rot90,
            "diagflat": diagflat, "sum_to_size": sum_to_size, "byte": _to("uint8"), "char": _to("int8"),
            "short": _to("int16"), "new": new, "get_device": get_device, "unsqueeze_": unsqueeze_,
            "squeeze_": squeeze_, "t_": t_, "transpose_": transpose_}


def torch_functions() -> dict:
    return {"tensor_split": tensor_split, "split_with_sizes": split_with_sizes, "rot90": rot90, "diagflat": diagflat,
            "dstack": dstack, "row_stack": row_stack, "cartesian_prod": cartesian_prod, "combinations": combinations,
            "vander": vander, "block_diag": block_diag, "unravel_index": unravel_index,
            "fill": fill, "range": deprecated_range, "logspace": logspace, "get_device": get_device}
