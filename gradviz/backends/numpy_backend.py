"""The default backend: numpy arrays on the CPU.

numpy returns scalars (``np.float32``) instead of 0-d arrays from many operations; ``_arr``
turns them back into arrays so that a 0-d tensor can still be modified in place.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz import _float_kernels
from gradviz.backends import numpy_ranges
from gradviz.backends.quiet import _IGNORE, _get, _reset, _set, silent

name = "numpy"
ndarray = np.ndarray


def _arr(x):
    return x if type(x) is np.ndarray else np.asarray(x)


@silent
def array(data, dtype, device=None):
    return np.array(data, dtype=dtype.numpy if dtype is not None else None)


def full(shape, value, dtype, device=None):
    return np.full(tuple(shape), value, dtype=dtype.numpy)


def eye(n, m, dtype, device=None):
    return np.eye(n, m, dtype=dtype.numpy)


def arange(start, end, step, dtype, device=None):
    return numpy_ranges.arange(start, end, step, dtype.numpy)


def linspace(start, end, steps, dtype, device=None):
    return numpy_ranges.linspace(start, end, steps, dtype.numpy)


@silent
def astype(x, dtype):
    return x.astype(dtype.numpy)


def to_numpy(x):
    return x


def copy(x):
    return np.array(x, copy=True)


def copy_as(value, like):
    """A copy of ``value`` laid out in memory like ``like`` (how PyTorch stores a leaf's ``.grad``)."""
    if value.strides == like.strides:  # already laid out alike: the plain copy keeps it (the common case)
        return np.array(value, copy=True)
    out = np.empty_like(like, dtype=value.dtype)
    out[...] = value
    return out


def dtype_of(x):
    return x.dtype


def device_of(x):
    return "cpu"


def strides(x):
    """Strides in elements, as PyTorch counts them (a transposed view has reversed strides)."""
    itemsize = x.itemsize
    strides = x.strides
    if len(strides) == 2:  # a matrix (what mm and addmm save), with no list to build
        return (strides[0] // itemsize, strides[1] // itemsize)
    return tuple([stride // itemsize for stride in strides])


def can_view(x, shape):
    """Whether ``x`` can take ``shape`` without copying (else PyTorch's reshape copies)."""
    try:
        x.view().shape = tuple(shape)
    except AttributeError:
        return False
    return True


def _layout_like_torch(*operands):
    """An output laid out as PyTorch's TensorIterator lays it out, or None when that is row-major.

    PyTorch orders the result's dimensions by the operands' strides, the first operand that tells
    two dimensions apart deciding (a broadcast dimension tells nothing); numpy would often choose
    row-major instead. The layout decides what ``contiguous()`` and ``view`` see later.
    """
    arrays = [op for op in operands if type(op) is np.ndarray and op.ndim > 1]
    if all(op.flags.c_contiguous for op in arrays):
        return None
    shape = np.broadcast_shapes(*[op.shape for op in operands if type(op) is np.ndarray])
    ndim = len(shape)
    strides = []
    for op in arrays:
        lead = ndim - op.ndim
        strides.append([0] * lead + [0 if size == 1 and shape[lead + i] != 1 else stride
                                     for i, (size, stride) in enumerate(zip(op.shape, op.strides))])

    def should_swap(dim0, dim1) -> int:
        for op_strides in strides:
            stride0, stride1 = op_strides[dim0], op_strides[dim1]
            if stride0 == 0 or stride1 == 0:
                continue
            if stride0 != stride1:
                return -1 if stride0 < stride1 else 1
            if shape[dim0] > shape[dim1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # innermost first
    for i in range(1, ndim):  # PyTorch's insertion sort, which keeps ambiguous pairs in place
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):
        return None
    outer_first = perm[::-1]
    memory = np.empty([shape[d] for d in outer_first], dtype=np.result_type(*operands))
    return memory.transpose(np.argsort(outer_first))


_HALF = np.dtype(np.float16)


def _elementwise(ufunc, name: str, opmath_scalar: bool = False):
    """A binary ufunc whose result is laid out as PyTorch lays it out (see ``_layout_like_torch``), with
    numpy's floating-point warnings off while it runs (``1 / 0``, ``inf - inf``: PyTorch says nothing;
    ``quiet.py``'s ContextVar set, written out here: one frame less on the hottest path). Inside a pass
    that is silenced as a whole (a plain ``backward()``), they are off already: one read instead of a
    set and a reset (about a fifth of the cost)."""

    def apply(a, b):
        token = None if _get() is _IGNORE else _set(_IGNORE)
        try:
            # numpy agrees with PyTorch unless two matrices (or larger) are laid out differently: with a
            # number or a vector on one side, numpy keeps the other side's layout, as PyTorch does
            if (type(a) is not ndarray or type(b) is not ndarray or a.ndim < 2 or b.ndim < 2
                    or (a.strides == b.strides and a.shape == b.shape) or (a.flags.c_contiguous and b.flags.c_contiguous)):
                if opmath_scalar and type(b) is float and type(a) is ndarray and a.dtype is _HALF:
                    # PyTorch's mul and div compute a half with a number in float (its opmath), numpy rounds the
                    # number to half first: 2.5 * pi is 7.8555 in torch, 7.85 in numpy. Its add and sub round the
                    # number to half first, as numpy does (h + 0.3 is h + half(0.3))
                    return np.asarray(ufunc(a, np.float32(b)).astype(_HALF))
                result = ufunc(a, b)
                return result if type(result) is ndarray else np.asarray(result)  # _arr, inlined: every op runs this
            out = _layout_like_torch(a, b)
            return _arr(ufunc(a, b) if out is None else ufunc(a, b, out=out))
        finally:
            if token is not None:
                _reset(token)

    apply.__name__ = name
    return apply


add = _elementwise(np.add, "add")
sub = _elementwise(np.subtract, "sub")
mul = _elementwise(np.multiply, "mul", opmath_scalar=True)
div = _elementwise(np.true_divide, "div", opmath_scalar=True)


@silent
def pow(a, b):
    """``a ** b``; a number exponent as PyTorch's CPU kernel computes it (``x ** 3`` is ``x * x * x``)."""
    if type(b) is float or type(b) is int:
        if a.dtype.kind == "f":
            special = _FLOAT_POWERS.get(b)
            if special is not None:
                return _arr(special(a))
        elif b == 0:
            return np.ones_like(a)
    return _arr(np.power(a, b))


def _unary(ufunc, name: str, quiet: bool = False):
    """An elementwise function of one array, always returning an array (``_arr`` written out: numpy
    hands back a scalar for a 0-d input, and these run for every op of a scalar graph). ``quiet``:
    numpy's floating-point warnings off while it runs (``log(0)``: PyTorch says nothing)."""

    def apply(a):
        result = ufunc(a)
        return result if type(result) is ndarray else np.asarray(result)

    def quiet_apply(a):
        token = _set(_IGNORE)
        try:
            result = ufunc(a)
        finally:
            _reset(token)
        return result if type(result) is ndarray else np.asarray(result)

    if quiet:
        apply = quiet_apply

    apply.__name__ = name
    return apply


reciprocal = _unary(np.reciprocal, "reciprocal", quiet=True)
neg = _unary(np.negative, "neg")
exp = _unary(np.exp, "exp", quiet=True)
log = _unary(np.log, "log", quiet=True)
log1p = _unary(np.log1p, "log1p", quiet=True)
sin = _unary(np.sin, "sin", quiet=True)
cos = _unary(np.cos, "cos", quiet=True)
tanh = _unary(np.tanh, "tanh")  # never warns (tanh(±inf) = ±1): no silencing to pay for
sqrt = _unary(np.sqrt, "sqrt", quiet=True)
abs = _unary(np.abs, "abs")


def sign(a):
    """-1, 0 or 1; 0 for NaN, as PyTorch's ``sign`` (numpy's gives NaN)."""
    result = np.sign(a)
    if result.dtype.kind == "f" and result.ndim == 0:
        return np.asarray(0.0 if result != result else result, dtype=result.dtype)
    if result.dtype.kind == "f":
        np.copyto(result, 0, where=result != result)
    return result if type(result) is ndarray else np.asarray(result)


# PyTorch's pow_tensor_scalar kernel: these exponents are computed without pow(), so exactly so here
_FLOAT_POWERS = {
    0: np.ones_like, 1: np.copy, 2: lambda x: x * x, 3: lambda x: x * x * x, -2: lambda x: 1 / (x * x),
    0.5: np.sqrt, -0.5: lambda x: 1 / np.sqrt(x), -1: lambda x: 1 / x,
}


def sigmoid(a):
    """``1 / (1 + e^-x)``, from ``e^-|x|`` so that it never overflows (nor warns: no silencing needed)."""
    exp_neg_abs = np.exp(-np.abs(a))
    return _arr(np.where(a >= 0, 1, exp_neg_abs) / (1 + exp_neg_abs))


# -- fused backward formulas: one call instead of three backend round trips ------------------
_SAME_WIDTH_UINT = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


@silent
def relu_backward(grad, result):
    """``grad`` where the ReLU's output is positive, else 0 (PyTorch's threshold_backward)."""
    # ReLU's output is >= 0 or NaN, so ``result != 0`` is PyTorch's ``not result <= 0`` (a NaN passes its
    # gradient on). A select, as PyTorch's kernel: a multiply by the mask made NaN of an infinite gradient
    # masked and +0.0 of a -0.0 passed on (PyTorch: 0 and -0.0)
    bits = _SAME_WIDTH_UINT.get(grad.dtype) if type(grad) is ndarray and grad.size >= 1024 else None
    if bits is not None and type(result) is ndarray and result.shape == grad.shape:
        # np.where's loop branches on every element, and a ReLU's mask is as unpredictable as its input
        # (about 7 ns an element on a 1024 x 256 activation); the same select done on the bits, without a
        # branch: all ones where the gradient passes, 0 where it is masked, and'ed with the gradient's
        # bits (the gradient itself there, +0.0 here, NaN payloads and -0.0 kept), ten times faster
        mask = (result != 0).astype(bits)
        np.negative(mask, out=mask)
        return np.bitwise_and(grad.view(bits), mask).view(grad.dtype)
    out = np.where(result != 0, grad, 0)
    return out if type(out) is ndarray else np.asarray(out)  # _arr, written out


@silent
def tanh_backward(grad, result):
    """``grad * (1 - y^2)`` for ``y = tanh(x)``."""
    if result.dtype == np.float16:  # PyTorch computes a half's formula in float (its opmath), then rounds
        wide = np.asarray(result, dtype=np.float32)
        return _arr((np.asarray(grad, dtype=np.float32) * (1 - wide * wide)).astype(np.float16))
    out = grad * (1 - result * result)
    return out if type(out) is ndarray else np.asarray(out)  # _arr, written out


@silent
def sigmoid_backward(grad, result):
    """``grad * y * (1 - y)`` for ``y = sigmoid(x)``."""
    if result.dtype == np.float16:  # PyTorch computes a half's formula in float (its opmath), then rounds
        wide = np.asarray(result, dtype=np.float32)
        return _arr((np.asarray(grad, dtype=np.float32) * (wide * (1 - wide))).astype(np.float16))
    return _arr(grad * (result * (1 - result)))


@silent
def softplus_neg(x):
    """``log(1 + e^-x)`` as ``max(-x, 0) + log1p(e^-|x|)``: no overflow for large ``|x|``."""
    return _arr(np.maximum(np.negative(x), 0.0) + np.log1p(np.exp(np.negative(np.abs(x)))))


_erf_each = np.frompyfunc(math.erf, 1, 1)  # math.erf element by element (numpy has no erf)


@silent
def normal_cdf(x):
    """``(1 + erf(x / √2)) / 2`` (numpy has no erf: the C library's, one element at a time, in double)."""
    scaled = np.multiply(x, np.sqrt(0.5, dtype=x.dtype))
    each = np.asarray(_erf_each(scaled.astype(np.float64)), dtype=np.float64)  # 0-d: a float comes back
    return _arr(((each + 1.0) * 0.5).astype(x.dtype))


maximum = _elementwise(np.maximum, "maximum")
minimum = _elementwise(np.minimum, "minimum")


def clip(a, low, high):
    return _arr(np.clip(a, low, high))


def where(condition, a, b):
    out = _layout_like_torch(condition, a, b)
    if out is None:
        return _arr(np.where(condition, a, b))
    out[...] = np.where(condition, a, b)
    return out


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


@silent
def sum(a, axis, keepdims=False):
    # the ufunc's own reduce: what np.sum calls, without its Python-level argument handling; laid out
    # contiguous as PyTorch allocates it (``_contiguous``, inlined: every backward of a broadcast runs this)
    result = np.add.reduce(a, axis=axis, keepdims=keepdims)
    if type(result) is not ndarray:
        return np.asarray(result)
    return result if result.ndim < 2 else np.ascontiguousarray(result)


def sum_leading(a):
    """``sum(a, (0,))``, a bias's gradient summed over the batch (AddBackward0's ``sum_to``), without the ``silent``
    wrapper's call: inside a silenced pass (the plain backward) one read of numpy's state, else one set. The same
    reduction, the same result and layout as ``sum``'s."""
    token = None if _get() is _IGNORE else _set(_IGNORE)
    try:
        result = np.add.reduce(a, 0)
    finally:
        if token is not None:
            _reset(token)
    if type(result) is not ndarray:
        return np.asarray(result)
    return result if result.ndim < 2 else np.ascontiguousarray(result)


def amax(a, axis, keepdims=False):
    return _contiguous(np.maximum.reduce(a, axis=axis, keepdims=keepdims))


def _contiguous(result):
    """A reduction's result laid out as PyTorch allocates it: contiguous (numpy keeps the input's order, so
    the sum of a transposed batch was strided, and a later reshape of it an alias where torch makes a view)."""
    if type(result) is not ndarray:
        return np.asarray(result)
    if result.ndim < 2:  # a fresh array of one dim or none is contiguous: no flags object to make
        return result
    return np.ascontiguousarray(result)  # the array itself when it already is (cheaper than reading its flags)


def argmax(a, axis):
    return _arr(np.argmax(a, axis=axis))


def matmul(a, b):
    """``a @ b``, with numpy's floating-point warnings off (``np.dot`` warns of an overflow too; PyTorch says
    nothing): quiet.py's ContextVar set, written out as in ``_elementwise`` (one frame less than ``silent``)."""
    token = None if _get() is _IGNORE else _set(_IGNORE)
    try:
        if a.ndim == 2 and b.ndim == 2:
            # the same product for matrices, with less per-call overhead than matmul; the method is np.dot
            # (the same C function) without np.dot's Python-level dispatch
            return a.dot(b)
        return _arr(np.matmul(a, b))
    finally:
        if token is not None:
            _reset(token)


def mm(a, b):
    """``matmul`` of two matrices (what MmBackward0 and AddmmBackward0 multiply: their dimensions are checked
    before), without matmul's dimension tests."""
    token = None if _get() is _IGNORE else _set(_IGNORE)
    try:
        return a.dot(b)
    finally:
        if token is not None:
            _reset(token)


def mm_grads(grad, mat2, mat1):
    """MmBackward0's two products, ``grad @ mat2.T`` and ``mat1.T @ grad`` (None where the saved matrix is None:
    that input needs no gradient), for 2-D arrays: what ``matmul`` of a ``permute``d matrix computes, under one
    silencing (a plain backward pass has silenced numpy already: then one read, no set)."""
    token = None if _get() is _IGNORE else _set(_IGNORE)
    try:
        return (None if mat2 is None else np.dot(grad, mat2.T)), (None if mat1 is None else np.dot(mat1.T, grad))
    finally:
        if token is not None:
            _reset(token)


def reshape(a, shape):
    """``a`` in ``shape``: a view where the layout allows one, with the strides PyTorch gives it. A
    dimension of size 1 may take any stride; numpy and PyTorch choose differently, and the choice
    shows in ``stride()`` and in what mm saves (``_saved_mat2_sym_strides``)."""
    out = a.reshape(shape)
    if out.ndim > 1 and 1 in out.shape and out.size and a.ndim:
        wanted = _view_strides(a.shape, strides(a), out.shape)
        if wanted is not None and wanted != strides(out):
            itemsize = a.itemsize
            out = np.lib.stride_tricks.as_strided(out, out.shape, [stride * itemsize for stride in wanted],
                                                  writeable=a.flags.writeable)
    return out


def _view_strides(old_shape, old_strides, new_shape):
    """The strides of a view of ``old_shape``/``old_strides`` as ``new_shape``, worked out as PyTorch's
    ``computeStride`` does (chunk by chunk of dimensions that are contiguous with each other, from the
    last), or None where no view exists. Only for tensors with elements."""
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1
                             and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = view_numel = 1
    return tuple(new_strides) if view_d == -1 else None


def permute(a, axes):
    return a.transpose(axes)


def broadcast_to(a, shape):
    return np.broadcast_to(a, shape)


def expand(a, shape):
    """A writable view of ``a`` broadcast to ``shape`` (repeated elements share memory, as in PyTorch)."""
    shape = tuple(shape)
    lead = len(shape) - a.ndim
    strides = (0,) * lead + tuple(0 if size != 1 and old == 1 else stride
                                  for size, old, stride in zip(shape[lead:], a.shape, a.strides))
    return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)


def getitem(a, index):
    return _arr(a[index])


def zeros_like(a):
    return np.zeros_like(a)


def one_hot_scatter(shape, index, axis, dtype):
    """Zeros of ``shape`` with ones where ``index`` points along ``axis`` (max/argmax backward)."""
    out = np.zeros(shape, dtype=dtype)
    np.put_along_axis(out, np.expand_dims(index, axis), 1, axis=axis)
    return out


@silent
def iadd(out, b):
    return np.add(out, b, out=out)


@silent
def isub(out, b):
    return np.subtract(out, b, out=out)


@silent
def imul(out, b):
    return np.multiply(out, b, out=out)


@silent
def idiv(out, b):
    return np.true_divide(out, b, out=out)


@silent
def fill(out, value):
    out.fill(value)
    return out


@silent
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


# -- views and memory ---------------------------------------------------------------------------
def is_contiguous(x):
    return x.flags.c_contiguous


def contiguous(x):
    # np.ascontiguousarray makes a 0-d array 1-d; a 0-d array is always contiguous
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def overlaps_itself(x):
    """Whether two elements of ``x`` share memory (an expanded view): PyTorch refuses to write there."""
    if 0 not in x.strides:  # the common case, answered in C
        return False
    return True in [stride == 0 and size > 1 for stride, size in zip(x.strides, x.shape)]


def geometry(x, base):
    """``(sizes, strides, offset)`` of the view ``x`` in elements of ``base``'s memory."""
    itemsize = x.itemsize
    offset = (x.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // itemsize
    return tuple(x.shape), tuple(stride // itemsize for stride in x.strides), offset


def strided_indices(sizes, strides, offset, like=None):
    """The memory position of every element of a strided view, as an int64 array of ``sizes``."""
    positions = np.full(tuple(sizes), offset, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[axis] = size
        positions = positions + np.arange(size, dtype=np.int64).reshape(shape) * stride
    return positions


def as_strided(x, sizes, strides, offset):
    """A view of the memory that ``x`` (a base: its first element first in memory) reads, with ``sizes``
    and ``strides`` in elements from ``offset``: PyTorch's ``as_strided``."""
    itemsize = x.itemsize
    extent = 1 if all(x.shape) else 0
    for size, stride in zip(x.shape, x.strides):
        extent += (size - 1) * stride // itemsize if extent else 0
    memory = np.lib.stride_tricks.as_strided(x, (extent,), (itemsize,), writeable=x.flags.writeable)
    return np.lib.stride_tricks.as_strided(memory[offset:], tuple(sizes), tuple(stride * itemsize for stride in strides),
                                           writeable=x.flags.writeable)


@silent
def index_add(out, key, values):
    """``out[key] += values``, adding repeated indices as many times as they occur."""
    np.add.at(out, key, values)
    return out


def concatenate(arrays, axis):
    return np.concatenate(arrays, axis=axis)


def stack(arrays, axis):
    return np.stack(arrays, axis=axis)


def tile(a, reps):
    return np.tile(a, reps)


def argmin(a, axis):
    return _arr(np.argmin(a, axis=axis))


def amin(a, axis, keepdims=False):
    return _contiguous(np.minimum.reduce(a, axis=axis, keepdims=keepdims))


def all_along(a, axis, keepdims=False):
    return _arr(np.all(a, axis=axis, keepdims=keepdims))


def any_along(a, axis, keepdims=False):
    return _arr(np.any(a, axis=axis, keepdims=keepdims))


def take(a, index, axis):
    return _arr(np.take(a, index, axis=axis))


def gather(a, axis, index):
    """``out[i][j] = a[i][index[i][j]]`` along ``axis`` (``index`` may be smaller than ``a`` elsewhere)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return _arr(a[tuple(grid)])


@silent
def scatter_add(out, axis, index, values):
    """``out[..., index[i], ...] += values[i]`` along ``axis`` (the backward of gather)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    np.add.at(out, tuple(grid), values)
    return out


def nonzero(a):
    return tuple(np.nonzero(a))


def array_equal(a, b):
    return bool(np.array_equal(a, b))


def allclose(a, b, rtol, atol, equal_nan):
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


# -- masks: logical and bitwise ops ---------------------------------------------------------------------
logical_and, logical_or, logical_xor = np.logical_and, np.logical_or, np.logical_xor
bitwise_and, bitwise_or, bitwise_xor, bitwise_not = np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.bitwise_not


# -- more elementwise math, scans and orderings (the tensor API tutorials use) ------------------------
@silent
def log2(a):
    return _arr(np.log2(a))


@silent
def log10(a):
    return _arr(np.log10(a))


@silent
def expm1(a):
    return _arr(np.expm1(a))


def floor(a):
    return _arr(np.floor(a))


def ceil(a):
    return _arr(np.ceil(a))


def trunc(a):
    return _arr(np.trunc(a))


def round(a, decimals=0):
    """Halves to even, as PyTorch's ``round`` (``nearbyint``); with ``decimals``, scaled first."""
    return _arr(np.round(a, decimals))


_erf = np.frompyfunc(math.erf, 1, 1)


@silent
def erf(a):
    """The error function, in double precision element by element (numpy has no ``erf``)."""
    return np.asarray(_erf(a.astype(np.float64)), dtype=np.float64).astype(a.dtype)  # 0-d: a float comes back


@silent
def asin(a):
    return _arr(np.arcsin(a))


@silent
def acos(a):
    return _arr(np.arccos(a))


def atan(a):
    return _arr(np.arctan(a))


@silent
def atan2(a, b):
    return _arr(np.arctan2(a, b))


@silent
def sinh(a):
    return _arr(np.sinh(a))


@silent
def cosh(a):
    return _arr(np.cosh(a))


@silent
def remainder(a, b):
    """The remainder with the divisor's sign (Python's ``%``), as PyTorch computes it: ``fmod``, then
    moved by ``b`` when the signs differ (so ``-0.7 % 0.7`` is ``-0.``, as in PyTorch)."""
    if np.issubdtype(np.result_type(a, b), np.integer):
        return _arr(np.mod(a, b))
    kept = np.fmod(a, b)
    return _arr(np.where((kept != 0) & ((np.asarray(b) < 0) != (kept < 0)), kept + b, kept))


@silent
def fmod(a, b):
    """The remainder with the dividend's sign (C's ``fmod``)."""
    return _arr(np.fmod(a, b))


def isnan(a):
    return _arr(np.isnan(a))


def isinf(a):
    return _arr(np.isinf(a))


def isfinite(a):
    return _arr(np.isfinite(a))


@silent
def nan_to_num(a, nan, posinf, neginf):
    return _arr(np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf))


@silent
def prod(a, axis, keepdims=False):
    return _contiguous(np.multiply.reduce(a, axis=axis, keepdims=keepdims))


@silent
def cumsum(a, axis):
    """Accumulated in double for smaller floats, then rounded, as PyTorch's CPU kernel does."""
    if a.dtype.kind == "f" and a.itemsize < 8:
        return _contiguous(np.cumsum(a, axis=axis, dtype=np.float64).astype(a.dtype))
    return _contiguous(np.cumsum(a, axis=axis))


@silent
def cumprod(a, axis):
    if a.dtype.kind == "f" and a.itemsize < 8:
        return _contiguous(np.cumprod(a, axis=axis, dtype=np.float64).astype(a.dtype))
    return _contiguous(np.cumprod(a, axis=axis))


def flip(a, axes):
    return np.ascontiguousarray(np.flip(a, axes))


def roll(a, shifts, axes):
    return _arr(np.roll(a, shifts, axes))


def tril(a, diagonal):
    return _arr(np.tril(a, diagonal))


def triu(a, diagonal):
    return _arr(np.triu(a, diagonal))


def diagonal(a, offset, axis1, axis2):
    """A read-only view of the diagonal (numpy's), copied so that it can be written like any result."""
    return np.array(np.diagonal(a, offset, axis1, axis2))


def argsort(a, axis, descending):
    """Indices that sort ``a`` along ``axis``, equal values in their original order (NaN counts as largest).

    Descending: sort the reversed array ascending, read that order backwards and map the positions
    back, which keeps equal values in their original order too.
    """
    if not descending:
        return _arr(np.argsort(a, axis=axis, kind="stable"))
    order = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return _arr(a.shape[axis] - 1 - order)


def scatter(out, axis, index, values):
    """``out[..., index[i], ...] = values[i]`` along ``axis`` (values may be a number)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    out[tuple(grid)] = values if np.ndim(values) == 0 else values[tuple(slice(0, size) for size in index.shape)]
    return out


# -- products, linear algebra, scatter_reduce, padding modes, strided windows ------------------
def cross(a, b, axis):
    """``a × b`` along ``axis``: component i is ``a[i+1] b[i+2] - a[i+2] b[i+1]``, with the first product
    fused into the subtraction (one rounding) where PyTorch's kernels fuse multiply-adds: the cross
    product of a vector with itself is then not exactly 0 in PyTorch, and so not here."""
    if a.dtype in (np.float32, np.float64) and a.dtype == b.dtype and _float_kernels.KERNELS.fused:
        fma = _float_kernels.fma64 if a.dtype == np.float64 else _float_kernels.fma32
        following, after = np.roll(a, -1, axis), np.roll(a, -2, axis)
        return _arr(fma(following, np.roll(b, -2, axis), -(after * np.roll(b, -1, axis))).astype(a.dtype, copy=False))
    return _arr(np.cross(a, b, axis=axis))


@silent
def lerp(start, end, weight):
    """PyTorch's lerp kernel: ``start + w (end - start)`` where ``|w| < 0.5``, else ``end - (end - start)(1 - w)``
    (each form exact at its own end), the product fused into the sum where PyTorch's kernels fuse multiply-adds
    (its vectorized form: ``fma(w or w - 1, end - start, start or end)``). ``weight``: a number or an array."""
    difference = end - start
    small = np.abs(weight) < 0.5
    if start.dtype in (np.float32, np.float64) and end.dtype == start.dtype and _float_kernels.KERNELS.fused:
        fma = _float_kernels.fma64 if start.dtype == np.float64 else _float_kernels.fma32
        return _arr(fma(np.where(small, weight, weight - 1), difference, np.where(small, start, end))
                    .astype(start.dtype, copy=False))
    return _arr(np.where(small, start + weight * difference, end - difference * (1 - weight)).astype(start.dtype,
                                                                                                   copy=False))


def _column_major(x):
    """``x`` laid out column by column in each matrix, as LAPACK writes its results: strides (1, m)
    for an m-row matrix, counted as PyTorch counts them (a dim of size 1 too)."""
    *batch, rows, columns = x.shape
    memory = np.empty(x.size, dtype=x.dtype)
    itemsize = x.itemsize
    strides = [itemsize, rows * itemsize]
    step = rows * columns * itemsize
    for size in reversed(batch):
        strides.insert(0, step)
        step *= size
    out = np.lib.stride_tricks.as_strided(memory, x.shape, tuple(strides))
    out[...] = x
    return out


def lu_factor(a):
    """LAPACK's ``getrf`` for each matrix of a batch: ``(LU, pivots, info)``, the row swaps as
    1-based int32 pivots and ``info`` the 1-based index of the first zero pivot (0 when none)."""
    lu = np.array(a, copy=True)
    n = lu.shape[-1]
    batch = lu.shape[:-2]
    pivots = np.zeros(batch + (n,), dtype=np.int32)
    info = np.zeros(batch, dtype=np.int32)
    for index in np.ndindex(*batch):
        m = lu[index]
        for k in range(n):
            row = k + int(np.argmax(np.abs(m[k:, k])))
            pivots[index + (k,)] = row + 1
            if m[row, k] == 0:
                if info[index] == 0:
                    info[index] = k + 1
                continue
            if row != k:
                m[[k, row]] = m[[row, k]]
            m[k + 1:, k] /= m[k, k]
            m[k + 1:, k + 1:] -= np.multiply.outer(m[k + 1:, k], m[k, k + 1:])
    return _column_major(lu), pivots, info


def inv(a):
    return _column_major(np.linalg.inv(a))


def solve(a, b):
    return _column_major(np.linalg.solve(a, b))


def cholesky(a):
    """``(L, failure)``: the lower Cholesky factor of each matrix, or ``(None, (batch index, order))`` for
    the first matrix whose leading minor of that order is not positive-definite, as LAPACK's ``potrf`` says."""
    try:
        return _column_major(np.linalg.cholesky(a)), None
    except np.linalg.LinAlgError:
        pass
    for index, matrix in enumerate(a.reshape((-1,) + a.shape[-2:])):
        for order in range(1, a.shape[-1] + 1):
            try:
                np.linalg.cholesky(matrix[:order, :order])
            except np.linalg.LinAlgError:
                return None, (index, order)
    return None, (0, a.shape[-1])


def scatter_reduce(out, axis, index, src, reduce, include_self):
    """``out`` (a copy) with ``src`` reduced into it where ``index`` points along ``axis``
    (``reduce``: sum, prod, mean, amax or amin); ``include_self=False`` leaves the old values out."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    key = tuple(grid)
    values = src[tuple(slice(0, size) for size in index.shape)]
    if not include_self:
        out[key] = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.fmax, "amin": np.fmin}[reduce]
    if reduce in ("amax", "amin"):  # a NaN wins, as in PyTorch
        ufunc = np.maximum if reduce == "amax" else np.minimum
    ufunc.at(out, key, values)
    if reduce == "mean":
        counts = np.full(out.shape, 1 if include_self else 0, dtype=np.int64)
        np.add.at(counts, key, 1)
        divided = out / np.maximum(counts, 1) if out.dtype.kind == "f" else out // np.maximum(counts, 1)
        out = divided.astype(out.dtype)
    return out


def unfold(a, axis, size, step):
    """Windows of ``size`` every ``step`` along ``axis``, the window last: a view, as PyTorch's ``unfold``."""
    count = (a.shape[axis] - size) // step + 1 if a.ndim else 1
    if a.ndim == 0:
        return np.lib.stride_tricks.as_strided(a, (size,), (0,), writeable=a.flags.writeable)
    shape = a.shape[:axis] + (count,) + a.shape[axis + 1:] + (size,)
    strides = a.strides[:axis] + (a.strides[axis] * step,) + a.strides[axis + 1:] + (a.strides[axis],)
    return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)


def solve_triangular(a, b, upper):
    """``X`` with ``A X = B`` for triangular ``A`` (only its ``upper`` or lower triangle is read), by
    substitution: a zero on the diagonal gives inf or NaN, as LAPACK's ``trsm`` does, not an error."""
    n = a.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    x = np.zeros(batch + b.shape[-2:], dtype=np.result_type(a, b))
    b = np.broadcast_to(b, batch + b.shape[-2:])
    rows = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(all="ignore"):
        for i in rows:
            done = slice(i + 1, n) if upper else slice(0, i)
            known = np.matmul(a[..., i:i + 1, done], x[..., done, :])
            x[..., i:i + 1, :] = (b[..., i:i + 1, :] - known) / a[..., i:i + 1, i:i + 1]
    return _column_major(x)
def diagonal_view(a, offset, axis1, axis2):
    """The diagonal as a writable view (PyTorch's ``diagonal`` shares memory; numpy's is read-only): the
    other dims first, then the diagonal, whose stride is the sum of the two dims' strides."""
    rows, cols = a.shape[axis1], a.shape[axis2]
    first_row, first_col = max(0, -offset), max(0, offset)
    length = max(0, min(rows - first_row, cols - first_col))
    start = [slice(None)] * a.ndim  # a view that begins at the diagonal's first element
    start[axis1], start[axis2] = slice(min(first_row, rows), None), slice(min(first_col, cols), None)
    rest = [d for d in range(a.ndim) if d not in (axis1, axis2)]
    shape = tuple(a.shape[d] for d in rest) + (length,)
    strides = tuple(a.strides[d] for d in rest) + (a.strides[axis1] + a.strides[axis2],)
    return np.lib.stride_tricks.as_strided(a[tuple(start)], shape, strides, writeable=a.flags.writeable)


# -- decompositions: SVD, symmetric eigendecomposition, QR ---------------------------------------
def svd(a, full_matrices):
    """LAPACK's ``gesdd`` (numpy's driver and PyTorch's CPU default): ``(U, S, Vh)``, the vectors laid out
    as LAPACK writes them."""
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return _column_major(u), s, _column_major(vh)


def eigh(a, upper):
    values, vectors = np.linalg.eigh(a, UPLO="U" if upper else "L")
    return values, _column_major(vectors)


def qr(a, complete):
    q, r = np.linalg.qr(a, mode="complete" if complete else "reduced")
    return _column_major(q), _column_major(r)


# -- binary_cross_entropy_with_logits' forward in one call (the loss of the raw-tensor lesson step) ----------
_FLOAT_32_64 = (np.dtype(np.float32), np.dtype(np.float64))


def bce_with_logits_reduced(x, t, reduction):
    """``(1 - t) x + log(1 + e^-x)`` summed (``reduction`` 2) or averaged (1), for two float32 or float64
    arrays of one shape (not 0-d) and dtype: the numpy operations that ``softplus_neg``, ``sub``, ``mul``, ``add``,
    ``sum`` and ``div`` would run, in the same order (the same bits), with numpy's warnings off (quiet.py's
    ContextVar, set here as in ``_elementwise``), in place where the intermediate arrays allow. ``None`` for any
    other operands: the caller then takes those functions. Each numpy call on the lesson's 64 logits costs
    several times its arithmetic, so the same values are reached in fewer calls where that changes no bit:
    ``-|x|`` is one ``copysign`` (``negative(abs(x))``: the same bits, a NaN's payload included), and the mean
    divides the sum as a numpy scalar (the same float division as ``np.true_divide``'s)."""
    dtype = x.dtype
    if (dtype is not t.dtype or (dtype is not _FLOAT_32_64[0] and dtype is not _FLOAT_32_64[1])
            or reduction not in (1, 2) or not x.ndim or x.shape != t.shape):
        return None
    token = None if _get() is _IGNORE else _set(_IGNORE)
    try:
        softplus = np.negative(x)
        np.maximum(softplus, 0.0, out=softplus)
        tail = np.copysign(x, -1.0)  # -|x|
        np.exp(tail, out=tail)
        np.log1p(tail, out=tail)
        np.add(softplus, tail, out=softplus)  # log(1 + e^-x), with no overflow for large |x|
        loss = np.subtract(1.0, t)
        np.multiply(loss, x, out=loss)
        np.add(loss, softplus, out=loss)
        total = np.add.reduce(loss, axis=None)  # a numpy scalar of the arrays' dtype
        return (total if reduction == 2 else total / max(loss.size, 1)).__array__()
    finally:
        if token is not None:
            _reset(token)


def bce_with_logits_grad(grad, x, t, reduction):
    """The gradient of ``bce_with_logits_reduced`` for ``x`` (its node's backward without weights, the target
    needing none): ``grad / n`` for 'mean', ``sigmoid(x)`` as ``sigmoid`` computes it, ``- t``, ``grad *``: the
    numpy operations that ``div``, ``sigmoid``, ``sub`` and ``mul`` would run, in the same order (the same
    bits), under one silencing, in place where the intermediate arrays allow. ``None`` for any other operands
    (a gradient that is not 0-d, operands that are not row-major): the caller then takes those functions."""
    if (x.dtype is not t.dtype or x.dtype not in _FLOAT_32_64 or type(grad) is not ndarray or grad.shape != ()
            or grad.dtype is not x.dtype or x.shape != t.shape or not x.ndim or reduction not in (1, 2)
            or not (x.flags.c_contiguous and t.flags.c_contiguous)):
        return None
    token = None if _get() is _IGNORE else _set(_IGNORE)
    try:
        # the 0-d gradient as its numpy scalar: ``grad / n`` for 'mean' (each element's share) is then numpy's
        # scalar division, the same IEEE division in the same dtype as the 0-d ufunc, at a fraction of its cost
        grad = grad[()]
        if reduction == 1:
            grad = grad / x.size
        exp_neg_abs = np.abs(x)
        np.negative(exp_neg_abs, out=exp_neg_abs)
        np.exp(exp_neg_abs, out=exp_neg_abs)  # e^-|x|: sigmoid's, never overflows
        local = np.where(x >= 0, 1, exp_neg_abs)
        np.add(1, exp_neg_abs, out=exp_neg_abs)
        np.true_divide(local, exp_neg_abs, out=local)  # sigmoid(x)
        np.subtract(local, t, out=local)
        return np.multiply(grad, local, out=local)
    finally:
        if token is not None:
            _reset(token)


# -- a leaf's first .grad: AccumulateGrad's layout contract ---------------------------------------------------
def non_overlapping_and_dense(shape, element_strides) -> bool:
    """PyTorch's ``is_non_overlapping_and_dense``: the dims of size > 1, ordered by stride, tile memory."""
    expected = 1
    for size, stride in sorted((pair for pair in zip(shape, element_strides) if pair[0] != 1), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def grad_layout(value, like):
    """The layout PyTorch's AccumulateGrad gives a leaf's first ``.grad`` (``utils::obeys_layout_contract``):
    a gradient that matches the leaf's strides on every dim of size > 1 (and has no 0 stride on a size-1
    dim) is kept as it is, its size-1 dims' strides too (PyTorch steals it); any other is copied into the
    leaf's strides (``new_empty_strided``). For a leaf that is not dense, a contiguous gradient is kept and
    any other copied contiguous. Returns the element strides to copy into, ``()`` for a contiguous copy, or
    None for the leaf's own layout (``copy_as``)."""
    if not value.ndim or value.shape != like.shape:
        return None
    value_strides, like_strides = strides(value), strides(like)
    if not non_overlapping_and_dense(like.shape, like_strides):
        return value_strides if value.flags.c_contiguous and 0 not in value_strides else ()
    if value_strides == like_strides:
        return None
    for size, own, wanted in zip(value.shape, value_strides, like_strides):
        if (own != wanted) if size != 1 else own == 0:
            return None  # copied into the leaf's layout
    return value_strides


def copy_for_grad(value, like, steal: bool = True):
    """A copy of ``value`` laid out as ``grad_layout`` says (``steal=False``, as under ``create_graph``,
    where PyTorch always copies: the leaf's layout, or contiguous for a leaf that is not dense). The leaf's
    layout is its strides exactly, a size-1 dim's too (``new_empty_strided(variable.sizes(), variable.strides())``)."""
    like_strides = like.strides
    if value.strides == like_strides:  # the common case: laid out alike already, and the copy keeps it
        out = value.copy(order="K")  # np.array(value, copy=True), without its argument handling
        if out.strides == like_strides:
            return out
    if like.flags.c_contiguous:  # the usual leaf, row-major (numpy's flags, like PyTorch, ignore size-1 dims)
        out = np.array(value, copy=True, order="C")
        # a row-major gradient obeys the contract (kept, size-1 strides too); any other takes the leaf's strides
        kept = steal and value.flags.c_contiguous and 0 not in value.strides
        wanted = strides(value if kept else like)
        if strides(out) == wanted:
            return out
        return np.ndarray(out.shape, out.dtype, out, 0, tuple(stride * out.itemsize for stride in wanted))
    like_strides = strides(like)
    dense = non_overlapping_and_dense(like.shape, like_strides)
    layout = grad_layout(value, like) if steal else (None if dense else ())
    if layout is None:  # the leaf's strides
        out = copy_as(value, like)
        layout = like_strides if dense and value.shape == like.shape else ()
    elif layout:  # the gradient's own layout: its memory order kept
        out = np.array(value, copy=True, order="K")
    else:
        out = np.array(value, copy=True, order="C")
    if layout and layout != strides(out):  # only size-1 dims differ from the copy's
        out = np.lib.stride_tricks.as_strided(out, out.shape, tuple(stride * out.itemsize for stride in layout))
    return out


# -- tan (the tensor API sweep) --------------------------------------------------------------------------------------
@silent
def tan(a):
    return _arr(np.tan(a))


@silent
def asinh(a):
    return _arr(np.arcsinh(a))


@silent
def acosh(a):
    return _arr(np.arccosh(a))


@silent
def atanh(a):
    return _arr(np.arctanh(a))
