"""Picking elements by a condition: ``masked_select`` (differentiable), ``nonzero``, ``argwhere`` and
``count_nonzero`` (integer answers, no gradient).
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.ops.double_backward import MaskedSelectBackward0
from gradviz.tensor import Tensor


def masked_select(input, mask):
    """The elements where ``mask`` (broadcast with ``input``) is True, as a 1-D tensor (MaskedSelectBackward0,
    the node a recorded backward of ``masked_fill`` makes too)."""
    if mask.dtype is not _dtype.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return MaskedSelectBackward0.apply(input, mask)


def _positions(input):
    """The index of every nonzero element, one row each, in row-major order (an ``(n, ndim)`` int64 array)."""
    backend = input._backend
    data = input._data if input.ndim else backend.reshape(input._data, (1,))
    found = backend.nonzero(data)
    columns = [backend.reshape(backend.astype(axis, _dtype.int64), (-1, 1)) for axis in found]
    if not input.ndim:
        count = columns[0].shape[0]
        return backend.full((count, 0), 0, _dtype.int64, backend.device_of(data))
    return backend.concatenate(columns, 1)


def nonzero(input, *, as_tuple: bool = False):
    """The indices of the nonzero elements: one row per element, or (``as_tuple``) one tensor per dim."""
    backend = input._backend
    if as_tuple:
        data = input._data if input.ndim else backend.reshape(input._data, (1,))
        return tuple(Tensor._make(backend.astype(axis, _dtype.int64), backend=backend) for axis in backend.nonzero(data))
    return Tensor._make(_positions(input), backend=backend)


def argwhere(input):
    return nonzero(input)


def count_nonzero(input, dim=None):
    backend = input._backend
    nonzero_mask = backend.astype(backend.ne(input._data, 0), _dtype.int64)
    dims = None if dim is None else tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if dims is not None:  # wrapped and checked as every reduction's dims are (a 0-d tensor takes 0 and -1)
        from gradviz.ops.reduction import _dims

        dims = _dims(dims, input.ndim)
    return Tensor._make(backend.astype(backend.sum(nonzero_mask, dims), _dtype.int64), backend=backend)
