"""The default backend: numpy arrays on the CPU.

numpy returns scalars (``np.float32``) instead of 0-d arrays from many operations; ``_arr``
turns them back into arrays so that a 0-d tensor can still be modified in place.
"""
from __future__ import annotations

import numpy as np

name = "numpy"
ndarray = np.ndarray


def _arr(x):
    return x if type(x) is np.ndarray else np.asarray(x)


def array(data, dtype, device=None):
    return np.array(data, dtype=dtype.numpy if dtype is not None else None)


def full(shape, value, dtype, device=None):
    return np.full(tuple(shape), value, dtype=dtype.numpy)


def eye(n, m, dtype, device=None):
    return np.eye(n, m, dtype=dtype.numpy)


def arange(start, end, step, dtype, device=None):
    return np.arange(start, end, step, dtype=dtype.numpy)


def astype(x, dtype):
    return x.astype(dtype.numpy)


def to_numpy(x):
    return x


def copy(x):
    return np.array(x, copy=True)


def dtype_of(x):
    return x.dtype


def device_of(x):
    return "cpu"


def strides(x):
    """Strides in elements, as PyTorch counts them (a transposed view has reversed strides)."""
    itemsize = x.itemsize
    return tuple([stride // itemsize for stride in x.strides])


def can_view(x, shape):
    """Whether ``x`` can take ``shape`` without copying (else PyTorch's reshape copies)."""
    try:
        x.view().shape = tuple(shape)
    except AttributeError:
        return False
    return True


def add(a, b):
    return _arr(np.add(a, b))


def sub(a, b):
    return _arr(np.subtract(a, b))


def mul(a, b):
    return _arr(np.multiply(a, b))


def div(a, b):
    return _arr(np.true_divide(a, b))


def reciprocal(a):
    return _arr(np.reciprocal(a))


def neg(a):
    return _arr(np.negative(a))


def pow(a, b):
    return _arr(np.power(a, b))


def exp(a):
    return _arr(np.exp(a))


def log(a):
    return _arr(np.log(a))


def log1p(a):
    return _arr(np.log1p(a))


def sin(a):
    return _arr(np.sin(a))


def cos(a):
    return _arr(np.cos(a))


def tanh(a):
    return _arr(np.tanh(a))


def sqrt(a):
    return _arr(np.sqrt(a))


def abs(a):
    return _arr(np.abs(a))


def sign(a):
    return _arr(np.sign(a))


def sigmoid(a):
    """``1 / (1 + e^-x)``, from ``e^-|x|`` so that it never overflows."""
    exp_neg_abs = np.exp(-np.abs(a))
    return _arr(np.where(a >= 0, 1, exp_neg_abs) / (1 + exp_neg_abs))


# -- fused backward formulas: one call instead of three backend round trips ------------------
def relu_backward(grad, result):
    """``grad`` where the ReLU's output is positive, else 0 (PyTorch's threshold_backward)."""
    return _arr(grad * (result > 0))  # a multiply by the mask: np.where is ~10x slower on a random mask


def tanh_backward(grad, result):
    """``grad * (1 - y^2)`` for ``y = tanh(x)``."""
    return _arr(grad * (1 - result * result))


def sigmoid_backward(grad, result):
    """``grad * y * (1 - y)`` for ``y = sigmoid(x)``."""
    return _arr(grad * (result * (1 - result)))


def maximum(a, b):
    return _arr(np.maximum(a, b))


def minimum(a, b):
    return _arr(np.minimum(a, b))


def clip(a, low, high):
    return _arr(np.clip(a, low, high))


def where(condition, a, b):
    return _arr(np.where(condition, a, b))


def gt(a, b):
    return _arr(np.greater(a, b))


def ge(a, b):
    return _arr(np.greater_equal(a, b))


def lt(a, b):
    return _arr(np.less(a, b))


def le(a, b):
    return _arr(np.less_equal(a, b))


def eq(a, b):
    return _arr(np.equal(a, b))


def sum(a, axis, keepdims=False):
    # the ufunc's own reduce: what np.sum calls, without its Python-level argument handling
    return _arr(np.add.reduce(a, axis=axis, keepdims=keepdims))


def amax(a, axis, keepdims=False):
    return _arr(np.maximum.reduce(a, axis=axis, keepdims=keepdims))


def argmax(a, axis):
    return _arr(np.argmax(a, axis=axis))


def matmul(a, b):
    if a.ndim == 2 and b.ndim == 2:
        return np.dot(a, b)  # the same product for matrices, with less per-call overhead than matmul
    return _arr(np.matmul(a, b))


def reshape(a, shape):
    return a.reshape(shape)


def permute(a, axes):
    return a.transpose(axes)


def broadcast_to(a, shape):
    return np.broadcast_to(a, shape)


def getitem(a, index):
    return _arr(a[index])


def zeros_like(a):
    return np.zeros_like(a)


def one_hot_scatter(shape, index, axis, dtype):
    """Zeros of ``shape`` with ones where ``index`` points along ``axis`` (max/argmax backward)."""
    out = np.zeros(shape, dtype=dtype)
    np.put_along_axis(out, np.expand_dims(index, axis), 1, axis=axis)
    return out


def iadd(out, b):
    return np.add(out, b, out=out)


def isub(out, b):
    return np.subtract(out, b, out=out)


def imul(out, b):
    return np.multiply(out, b, out=out)


def idiv(out, b):
    return np.true_divide(out, b, out=out)


def fill(out, value):
    out.fill(value)
    return out


def assign(out, value, index=Ellipsis):
    out[index] = value
    return out


def ne(a, b):
    return _arr(np.not_equal(a, b))


def any(a):
    """Whether any element is true, as a Python bool."""
    return bool(np.any(a))


def take_along_axis(a, index, axis):
    return _arr(np.take_along_axis(a, index, axis=axis))
