"""Helpers the ops share: reading operands, and undoing broadcasting in gradients."""
from __future__ import annotations

from gradviz import _dtype
from gradviz.backends import numpy_backend
from gradviz.tensor import Tensor


def data(value):
    """The backend array of a tensor, or a Python number unchanged."""
    return value._data if isinstance(value, Tensor) else value


def backend_of(*values):
    for value in values:
        if isinstance(value, Tensor):
            return value._backend
    raise TypeError("expected at least one Tensor operand")


def promote(a, b):
    """Both operands' data cast to PyTorch's result dtype (scalars stay Python numbers)."""
    a_is, b_is = isinstance(a, Tensor), isinstance(b, Tensor)
    if a_is and b_is:
        if a._data.dtype == b._data.dtype:
            return a._data, b._data
        target = _dtype.result_type((a, b))
        return _cast(a, target), _cast(b, target)
    tensor, scalar = (a, b) if a_is else (b, a)
    # the common case (``x * 0.5``, ``x ** 2`` on a float tensor): the tensor's dtype wins, no promotion table
    if (type(scalar) is float or type(scalar) is int) and (
            tensor._data.dtype.kind == "f" if tensor._backend is numpy_backend else tensor.dtype.is_floating_point):
        return (tensor._data, float(scalar)) if a_is else (float(scalar), tensor._data)
    if not isinstance(scalar, (int, float, bool)) and not hasattr(scalar, "__float__"):
        raise TypeError(f"unsupported operand type: {type(scalar).__name__}")
    target = _dtype.result_type((tensor,), (scalar,))
    tensor_data = _cast(tensor, target)
    if target.is_floating_point:
        scalar = float(scalar)
    return (tensor_data, scalar) if a_is else (scalar, tensor_data)


def _cast(tensor, target):
    if tensor.dtype is target:
        return tensor._data
    return tensor._backend.astype(tensor._data, target)


def float_data(tensor):
    """Data as floating point: ``exp`` of an int tensor is float32, as in PyTorch."""
    if tensor._data.dtype.kind == "f" if tensor._backend is numpy_backend else tensor.dtype.is_floating_point:
        return tensor._data
    return tensor._backend.astype(tensor._data, _dtype.default_float)


def sum_to(backend, grad, shape):
    """Sum ``grad`` down to ``shape``: the gradient of broadcasting is summing."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    if lead == 1 and grad.shape[1:] == shape:  # a bias's gradient (one new leading dim): the sum below, in one call
        return backend.sum(grad, (0,), keepdims=False)
    stretched = tuple(lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1)
    if lead and not stretched:  # only new leading dims, as for a bias: sum them away, no reshape
        return backend.sum(grad, tuple(range(lead)), keepdims=False)
    axes = tuple(range(lead)) + stretched
    summed = backend.sum(grad, axes, keepdims=True) if axes else grad
    return backend.reshape(summed, shape)


def sum_to_tensor(grad, shape):
    """``sum_to`` on a Tensor, recorded as PyTorch's ``at::sum_to`` records it: one ``sum(dims,
    keepdim=True)`` (SumBackward1), then a ``view`` (ViewBackward0) when leading dims were summed away."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    if not shape:  # a 0-d input: PyTorch sums everything (SumBackward0)
        return grad.sum()
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and grad.shape[lead + i] != 1)
    summed = grad.sum(dims, keepdim=True) if dims else grad
    return summed.view(shape) if lead else summed


def meta(value):
    """What a gradient for ``value`` must look like: its shape and array dtype (None for a number).

    The array's own dtype (``numpy.float32``) is kept, not gradviz's: comparing it with the
    gradient's costs nothing, and only a mismatch needs the conversion.
    """
    if isinstance(value, Tensor):
        data = value._data
        return data.shape, data.dtype
    return NUMBER_META


NUMBER_META = ((), None)


def to_input(backend, grad, input_meta):
    """A gradient summed back over broadcast dims and cast to its input's dtype."""
    return to_shape_and_dtype(backend, grad, *input_meta)


def to_shape_and_dtype(backend, grad, shape, dtype):
    """``to_input`` for a meta kept as two values (binary ops keep both inputs' in one flat tuple)."""
    if grad.shape != shape:
        grad = sum_to(backend, grad, shape)
    if dtype is not None and grad.dtype is not dtype and grad.dtype != dtype:
        grad = backend.astype(grad, _dtype.from_any(dtype))
    return grad


def shape_of(value):
    return value._data.shape if isinstance(value, Tensor) else ()


def suffix_broadcasts(a_shape, b_shape) -> bool:
    """True when the shorter shape is the end of the longer one (``(64, 16) + (16,)``, anything with
    a 0-d operand): such shapes surely broadcast, with no per-dimension loop to run."""
    if len(a_shape) >= len(b_shape):
        return a_shape[len(a_shape) - len(b_shape):] == b_shape
    return b_shape[len(b_shape) - len(a_shape):] == a_shape


def broadcast_shapes(a_shape, b_shape) -> tuple:
    """The broadcast shape, with PyTorch's error for incompatible sizes."""
    result = []
    for i in range(1, max(len(a_shape), len(b_shape)) + 1):
        a_size = a_shape[-i] if i <= len(a_shape) else 1
        b_size = b_shape[-i] if i <= len(b_shape) else 1
        if a_size != b_size and a_size != 1 and b_size != 1:
            raise RuntimeError(
                f"The size of tensor a ({a_size}) must match the size of tensor b ({b_size}) at "
                f"non-singleton dimension {max(len(a_shape), len(b_shape)) - i}")
        result.append(max(a_size, b_size) if a_size != 0 and b_size != 0 else 0)
    return tuple(reversed(result))


def wrap_dim(dim: int, ndim: int) -> int:
    from gradviz.tensor import _wrap_dim

    return _wrap_dim(dim, ndim)


def saved_dim(dim):
    """A dim as PyTorch's ``_saved_dim`` shows it: as passed, negatives read back as uint64."""
    if isinstance(dim, (tuple, list)):
        return tuple(saved_dim(d) for d in dim)
    return dim if dim is None or dim >= 0 else dim + 2**64  # None: a C++ slice end not given


def sizes_and_strides(tensor, needed: bool) -> tuple:
    """``(<name>_sym_sizes, <name>_sym_strides)`` as PyTorch saves them for mm and addmm: the
    strides only when that input needs a grad (else ``()``)."""
    data = tensor._data
    return tuple(data.shape), tensor._backend.strides(data) if needed else ()
