"""Searching and counting, with integer (or boolean) answers and so no gradient: ``searchsorted``, ``bucketize``,
``histc``, ``bincount``, ``unique``, ``unique_consecutive``, ``isin``.

The dtypes are PyTorch's (int64 positions, int32 with ``out_int32``; ``bincount`` int64, or the weights'
float dtype; ``histc`` the input's), and so are the errors. ``unique`` of a tensor that requires grad
records PyTorch's nodes without a derivative (``no_derivative.py``).
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.ops._util import wrap_dim
from gradviz.ops.no_derivative import Unique2Backward0, UniqueConsecutiveBackward0, UniqueDimBackward0, without_derivative
from gradviz.tensor import Tensor


def _numpy(tensor):
    return np.asarray(tensor._backend.to_numpy(tensor._data))


def _made_like(like, array, dtype):
    """A Tensor of ``array`` on ``like``'s backend and device."""
    backend = like._backend
    return Tensor._make(backend.array(np.array(array, order="C"), dtype, backend.device_of(like._data)), backend=backend)


# -- where values would go in a sorted sequence -------------------------------------------------------------
def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side=None, sorter=None):
    """For each value, the index where inserting it keeps ``sorted_sequence`` sorted (the first such index,
    or with ``right``/``side='right'`` the last); a sequence of several dims is searched row by row."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    boundaries = _numpy(sorted_sequence)
    scalar = not isinstance(input, Tensor)
    values = np.asarray(input) if scalar else _numpy(input)
    if not scalar and boundaries.ndim > 1 and (boundaries.ndim != values.ndim
                                                 or boundaries.shape[:-1] != values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           "of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(boundaries.shape)} and input value tensor {list(values.shape)}")
    if sorter is not None:
        order = _numpy(sorter)
        if order.shape != boundaries.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(boundaries.shape)}and got sorter tensor {list(order.shape)}")
        boundaries = np.take_along_axis(boundaries, order, -1)
    where = "right" if right else "left"
    if boundaries.ndim <= 1:
        found = np.searchsorted(boundaries, values, side=where)
    else:
        rows = boundaries.reshape(-1, boundaries.shape[-1])
        queries = values.reshape(rows.shape[0], -1)
        found = np.stack([np.searchsorted(row, query, side=where) for row, query in zip(rows, queries)]
                         ).reshape(values.shape)
    return _made_like(sorted_sequence, np.asarray(found), _dtype.int32 if out_int32 else _dtype.int64)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """The bucket of each value: ``searchsorted(boundaries, input)`` with 1-D ``boundaries``."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- counting ------------------------------------------------------------------------------------------------
def histc(input, bins: int = 100, min=0, max=0):  # noqa: A002 - PyTorch's argument names
    """Counts in ``bins`` equal bins between ``min`` and ``max`` (the data's range when both are 0); values
    outside are ignored, the last bin includes ``max``."""
    if not input.dtype.is_floating_point:
        raise _dtype.not_implemented("histogram_cpu", input.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    data = _numpy(input).reshape(-1)
    low, high = float(min), float(max)
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    if low == high and data.size:
        low, high = float(data.min()), float(data.max())
    if low == high:
        low, high = low - 1, high + 1
    # PyTorch's histogram kernel works in the data's own type (a half's arithmetic in float) from the outer
    # bin edges as that type: pos = (x - left) * bins / (right - left), truncated
    work = np.dtype(np.float32) if data.dtype == np.float16 else data.dtype
    left, right = work.type(data.dtype.type(low)), work.type(data.dtype.type(high))
    values = data.astype(work, copy=False)
    kept = values[(values >= left) & (values <= right)]
    places = ((kept - left) * work.type(bins) / (right - left)).astype(np.int64)
    places[places == bins] = bins - 1
    counts = np.bincount(places, minlength=bins).astype(data.dtype)
    return _made_like(input, counts, input.dtype)


def bincount(input, weights=None, minlength: int = 0):
    """How often each value 0, 1, 2 ... occurs in a 1-D tensor of non-negative integers (summed weights)."""
    if input.dtype.is_floating_point or input.dtype is _dtype.bool:
        raise _dtype.not_implemented("bincount_cpu", input.dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    values = _numpy(input)
    if values.ndim != 1 or (values.size and values.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _made_like(input, np.bincount(values, minlength=minlength).astype(np.int64), _dtype.int64)
    if weights.ndim != 1 or weights.shape[0] != values.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = weights.dtype if weights.dtype.is_floating_point else _dtype.float64
    summed = np.bincount(values, weights=_numpy(weights).astype(np.float64), minlength=minlength)
    return _made_like(input, summed.astype(dtype.numpy), dtype)


# -- distinct values -----------------------------------------------------------------------------------------
def _results(input, node, values, inverse, counts, return_inverse, return_counts):
    out = without_derivative(node, input._backend.array(np.array(values, order="C"), input.dtype,
                                                        input._backend.device_of(input._data)), (input,))
    extra = []
    if return_inverse:
        extra.append(_made_like(input, inverse.astype(np.int64), _dtype.int64))
    if return_counts:
        extra.append(_made_like(input, counts.astype(np.int64), _dtype.int64))
    return (out, *extra) if extra else out


def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim=None):
    """The distinct values (sorted; PyTorch's CPU kernel sorts them even with ``sorted=False``), or the
    distinct slices along ``dim``; NaNs are each distinct."""
    data = _numpy(input)
    if dim is None:
        values, inverse, counts = np.unique(data.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        return _results(input, Unique2Backward0, values, inverse.reshape(data.shape), counts,
                        return_inverse, return_counts)
    axis = wrap_dim(dim, max(input.ndim, 1))
    values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, axis=axis)
    return _results(input, UniqueDimBackward0, values, inverse.reshape(-1), counts,
                    return_inverse, return_counts)


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """Each run of equal consecutive values (or slices along ``dim``) kept once."""
    data = _numpy(input)
    if dim is None:
        flat = data.reshape(-1)
        starts = np.ones(flat.shape, dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse = (np.cumsum(starts) - 1).reshape(data.shape)
    else:
        axis = wrap_dim(dim, max(input.ndim, 1))
        moved = np.moveaxis(data, axis, 0)
        starts = np.ones(moved.shape[0], dtype=bool)
        if moved.shape[0] > 1:
            starts[1:] = (moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1).any(axis=1)
        values = np.moveaxis(moved[starts], 0, axis)
        inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), starts.size))
    return _results(input, UniqueConsecutiveBackward0, values, inverse, counts,
                    return_inverse, return_counts)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """True where an element of ``elements`` is among ``test_elements`` (either may be a number)."""
    like = elements if isinstance(elements, Tensor) else test_elements
    left = _numpy(elements) if isinstance(elements, Tensor) else np.asarray(elements)
    right = _numpy(test_elements) if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    return _made_like(like, np.isin(left, right, invert=invert), _dtype.bool)
