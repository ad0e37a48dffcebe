"""Order statistics: ``kthvalue``, ``median``, ``nanmedian``, ``mode`` and the running ``cummax``/``cummin``.

Each picks input elements, so its gradient goes back to the place each picked element came from
(``value_selecting_reduction_backward`` along a dim, ``cummaxmin_backward`` for the running ones);
``median()`` of all elements shares the gradient among the elements equal to it, as ``max()`` does.
Which of several equal elements is picked is decided by the algorithm PyTorch's CPU kernel runs
(``stl_order``), so the indices, and so the gradients, land where torch puts them.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops import return_types, stl_order
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.reduction import MaxBackward0, MaxBackward1
from gradviz.tensor import Tensor


def _isnan(value) -> bool:
    return value != value


def _less(a, b) -> bool:
    return a < b


def _less_or_nan(a, b) -> bool:
    """``a < b``, NaN counting as the largest (nanmedian's comparator)."""
    return a < b or (_isnan(b) and not _isnan(a))


def _greater_or_nan(a, b) -> bool:
    """PyTorch's ``gt_or_nan`` for kthvalue."""
    return (_isnan(a) and not _isnan(b)) or a > b


# -- one row at a time, as the CPU kernels go ------------------------------------------------------
def _rows(input, dim: int):
    """The input as numpy rows along ``dim`` (a 0-d input is one row of one), and the axis."""
    data = np.asarray(input._backend.to_numpy(input._data))
    if data.ndim == 0:
        wrap_dim(dim, 1)
        return data.reshape(1, 1), 0, ()
    axis = wrap_dim(dim, data.ndim)
    moved = np.moveaxis(data, axis, -1)
    return moved.reshape(int(np.prod(moved.shape[:-1])), data.shape[axis]), axis, moved.shape[:-1]


def _reshaped(input, values, indices, axis, outer_shape, keepdim: bool):
    """The per-row results as arrays of the reduced shape (``keepdim`` keeps the dim as 1)."""
    values = np.asarray(values, dtype=np.asarray(input._backend.to_numpy(input._data)).dtype).reshape(outer_shape)
    indices = np.asarray(indices, dtype=np.int64).reshape(outer_shape)
    if keepdim and input.ndim:
        values, indices = np.expand_dims(values, axis), np.expand_dims(indices, axis)
    backend = input._backend
    device = backend.device_of(input._data)
    return backend.array(values, input.dtype, device), backend.array(indices, _dtype.int64, device)


def _kth_of_row(row, k: int):
    values, indices = [v for v in row.tolist()], list(range(len(row)))
    stl_order.quick_select(values, indices, k - 1, _greater_or_nan)
    return values[k - 1], indices[k - 1]


def _median_of_row(row, ignore_nan: bool):
    """PyTorch's median_with_indices_impl: ``nth_element`` with ties broken by index, so the answer is the
    element at rank ``nth`` of a stable sort (NaNs last); for median a NaN, if any, wins at once."""
    values = row.tolist()
    nans = [position for position, value in enumerate(values) if _isnan(value)]
    if nans and not ignore_nan:
        return values[nans[0]], nans[0]
    if len(nans) == len(values):  # nanmedian of NaNs only: NaNs tie without an index order
        order = list(range(len(values)))
        stl_order.nth_element(order, 0, lambda i, j: _less_or_nan(values[i], values[j]))
        return values[order[0]], order[0]
    nth = (len(values) - len(nans) - 1) // 2
    position = int(np.argsort(row, kind="stable")[nth])
    return values[position], position


def _mode_of_row(row):
    pairs = list(zip(row.tolist(), range(len(row))))
    stl_order.std_sort(pairs, lambda a, b: a[0] < b[0])
    mode, mode_index, count, best = 0, 0, 0, 0
    for i, (value, index) in enumerate(pairs):
        count += 1
        if i == len(pairs) - 1 or value != pairs[i + 1][0]:
            if count > best:
                mode, mode_index, best = value, index, count
            count = 0
    return mode, mode_index


def _per_row(input, dim, keepdim, pick, name: str):
    rows, axis, outer = _rows(input, dim)
    if rows.shape[1] == 0:  # even when there are no rows either: torch checks the dim alone
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    picked = [pick(row) for row in rows]
    return _reshaped(input, [p[0] for p in picked], [p[1] for p in picked], axis, outer, keepdim)


class _PickAlongDim(MaxBackward0):
    """A value picked along ``dim``, its index saved: the gradient goes back to that index."""

    derivatives = {"self": ("value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), keepdim)",
                            r"\bar{y}\ \text{at the picked index}")}

    def forward(ctx, self, dim, keepdim, values, indices):
        axis = wrap_dim(dim, max(self.ndim, 1))
        backend = self._backend
        ctx.save(dim=saved_dim(dim), indices=Tensor._make(indices, backend=backend), keepdim=keepdim,
                 self_sym_sizes=tuple(self.shape))
        ctx.axis, ctx.dim = axis, dim
        ctx.indices = backend.reshape(indices, tuple(s for i, s in enumerate(self.shape) if i != axis)) \
            if keepdim and self.ndim else indices
        return values

    def backward(ctx, grad):
        if not ctx.saved("self_sym_sizes"):
            return grad
        return MaxBackward0.backward(ctx, grad)


class KthvalueBackward0(_PickAlongDim):
    pass


class MedianBackward1(_PickAlongDim):
    pass


class NanmedianBackward1(_PickAlongDim):
    pass


class ModeBackward0(_PickAlongDim):
    pass


def _picked(node, result_type, input, dim, keepdim, values, indices):
    out = node.apply(input, dim, keepdim, values, indices)
    return result_type(out, Tensor._make(indices, backend=input._backend))


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest element along ``dim`` and its index."""
    if input.dtype is _dtype.bool:
        raise _dtype.not_implemented("kthvalue_cpu", _dtype.bool)
    rows, axis, outer = _rows(input, dim)
    if not 1 <= k <= rows.shape[1]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    picked = [_kth_of_row(row, k) for row in rows]
    values, indices = _reshaped(input, [p[0] for p in picked], [p[1] for p in picked], axis, outer, keepdim)
    return _picked(KthvalueBackward0, return_types.kthvalue, input, dim, keepdim, values, indices)


# -- the median of all elements: ties share the gradient --------------------------------------------
class MedianBackward0(MaxBackward1):
    """The median of all elements (NaN if any is NaN); elements equal to it share the gradient."""

    derivatives = {"self": ("evenly_distribute_backward(grad, self, result)", r"\bar{y}\,[x = m] / k")}

    def forward(ctx, self, ignore_nan=False):
        ctx.save(self=self)
        ctx.save_result()
        flat = np.asarray(self._backend.to_numpy(self._data)).reshape(-1)
        values = flat.tolist()
        if not values:
            return self._backend.array(float("nan") if self.dtype.is_floating_point else 0, self.dtype,
                                       self._backend.device_of(self._data))
        nans = sum(1 for value in values if _isnan(value))
        if nans and not ignore_nan:
            median = float("nan")
        else:
            nth = int((len(values) - (nans if ignore_nan else 0) - 1) / 2)
            stl_order.nth_element(values, nth, _less_or_nan)
            median = values[nth]
        return self._backend.array(median, self.dtype, self._backend.device_of(self._data))

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        mask = _equal_or_both_nan(backend, self, result)
        mask = backend.astype(mask, _dtype.from_any(grad.dtype))
        return backend.mul(backend.div(mask, backend.sum(mask, None)), grad)

    def backward_graph(ctx, grad):
        from gradviz.ops.indexing import masked_fill

        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        mask = Tensor._make(_equal_or_both_nan(backend, self, result), backend=backend)
        zeros = Tensor._make(backend.full(tuple(self.shape), 0, grad.dtype, grad.device), backend=backend)
        return masked_fill(zeros, mask, grad / mask.sum())


class NanmedianBackward0(MedianBackward0):
    """The median of the elements that are not NaN."""


def _equal_or_both_nan(backend, self, result):
    """PyTorch's evenly_distribute_backward mask: ``self == result``, or both NaN when the result is."""
    if bool(np.isnan(np.asarray(backend.to_numpy(result))).any()):
        return backend.isnan(self)
    return backend.eq(self, result)


def median(input, dim=None, keepdim: bool = False):
    """The lower median of all elements, or ``(values, indices)`` along ``dim``."""
    if input.dtype is _dtype.bool:
        raise _dtype.not_implemented("median_cpu" if dim is None else "median_out", _dtype.bool)
    if dim is None:
        return MedianBackward0.apply(input)
    values, indices = _per_row(input, dim, keepdim, lambda row: _median_of_row(row, False), "median")
    return _picked(MedianBackward1, return_types.median, input, dim, keepdim, values, indices)


def nanmedian(input, dim=None, keepdim: bool = False):
    """``median`` ignoring NaNs (NaN only where every element is)."""
    if dim is None:
        return NanmedianBackward0.apply(input, True)
    # (torch's nanmedian shares median's checks, so its error names median())
    values, indices = _per_row(input, dim, keepdim, lambda row: _median_of_row(row, True), "median")
    return _picked(NanmedianBackward1, return_types.nanmedian, input, dim, keepdim, values, indices)


def mode(input, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and an index of it."""
    rows, axis, outer = _rows(input, dim)
    if rows.shape[1] == 0:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    picked = [_mode_of_row(row) for row in rows]
    values, indices = _reshaped(input, [p[0] for p in picked], [p[1] for p in picked], axis, outer, keepdim)
    return _picked(ModeBackward0, return_types.mode, input, dim, keepdim, values, indices)


# -- running maximum and minimum ----------------------------------------------------------------------
class CummaxBackward0(OpFunction):
    """The running maximum along ``dim``: each output's gradient goes back to the element it copied."""

    inputs = ("self",)
    derivatives = {"self": ("cummaxmin_backward(grad, self, indices, dim)", r"\bar{y}\ \text{summed at each running index}")}

    def forward(ctx, self, dim, indices, values):
        ctx.save(dim=saved_dim(dim), indices=Tensor._make(indices, backend=self._backend), self=self)
        ctx.axis = wrap_dim(dim, max(self.ndim, 1))
        return values

    def backward(ctx, grad):
        backend = ctx.backend
        self, indices = ctx.saved("self", "indices")
        if not self.shape:
            return grad
        out = backend.full(tuple(self.shape), 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return backend.scatter_add(out, ctx.axis, indices, grad)

    def backward_graph(ctx, grad):
        """``zeros_like(self).scatter_add(dim, indices, grad)`` recorded (ScatterAddBackward0)."""
        from gradviz.ops.scatter import scatter_add

        self = ctx.saved("self")
        if not self.shape:
            return grad
        zeros = Tensor._make(ctx.backend.full(tuple(self.shape), 0, grad.dtype, grad.device), backend=ctx.backend)
        return scatter_add(zeros, ctx.axis, ctx.saved_graph("indices"), grad)


class CumminBackward0(CummaxBackward0):
    """The running minimum along ``dim``."""


def _running(input, dim, better, node, result_type):
    rows, axis, outer = _rows(input, dim)
    values = np.empty_like(rows)
    indices = np.zeros(rows.shape, dtype=np.int64)
    for r, row in enumerate(rows):
        best, where = None, 0
        for i, value in enumerate(row.tolist()):
            # PyTorch's cummax_cummin_helper: a NaN takes over and stays (a later NaN moves the index)
            if best is None or _isnan(value) or (not _isnan(best) and better(value, best)):
                best, where = value, i
            values[r, i], indices[r, i] = best, where
    shape = tuple(input.shape)
    backend = input._backend
    device = backend.device_of(input._data)
    if shape:
        values = np.moveaxis(values.reshape(outer + (rows.shape[1],)), -1, axis)
        indices = np.moveaxis(indices.reshape(outer + (rows.shape[1],)), -1, axis)
    else:
        values, indices = values.reshape(()), indices.reshape(())
    values = backend.array(np.array(values, order="C"), input.dtype, device)
    indices = backend.array(np.array(indices, order="C"), _dtype.int64, device)
    out = node.apply(input, dim, indices, values)
    return result_type(out, Tensor._make(indices, backend=backend))


def cummax(input, dim: int):
    return _running(input, dim, lambda a, b: a >= b, CummaxBackward0, return_types.cummax)


def cummin(input, dim: int):
    return _running(input, dim, lambda a, b: a <= b, CumminBackward0, return_types.cummin)

