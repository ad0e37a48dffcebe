"""The torch backend: data lives in plain torch tensors (never requiring grad) on any device.

gradviz still records the graph and runs its own engine; torch only does the arithmetic, so a
lesson can run on a GPU. This module imports torch, so it is imported only when a tensor asks
for it (``device='cuda'`` or ``gradviz.backends.use('torch')``).
"""
from __future__ import annotations

import numpy as np
import torch

name = "torch"
ndarray = torch.Tensor

_DTYPES = {
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16,
    "int32": torch.int32, "int64": torch.int64, "float16": torch.float16,
    "float32": torch.float32, "float64": torch.float64,
}


def _t(dtype):
    return _DTYPES[dtype.name]


def array(data, dtype, device="cpu"):
    if isinstance(data, torch.Tensor):
        return data.detach().to(device=str(device), dtype=_t(dtype) if dtype is not None else None, copy=True)
    values = np.asarray(data)
    if dtype is not None:
        values = values.astype(dtype.numpy)
    return torch.as_tensor(values, device=str(device)).clone()


def full(shape, value, dtype, device="cpu"):
    return torch.full(tuple(shape), value, dtype=_t(dtype), device=str(device))


def eye(n, m, dtype, device="cpu"):
    return torch.eye(n, m, dtype=_t(dtype), device=str(device))


def arange(start, end, step, dtype, device="cpu"):
    return torch.arange(start, end, step, dtype=_t(dtype), device=str(device))


def linspace(start, end, steps, dtype, device="cpu"):
    return torch.linspace(start, end, steps, dtype=_t(dtype), device=str(device))


def astype(x, dtype):
    return x.to(_t(dtype))


def to_numpy(x):
    return x.detach().cpu().numpy()


def copy(x):
    return x.clone()


def copy_as(value, like):
    return torch.empty_like(like, dtype=value.dtype).copy_(value)


def dtype_of(x):
    return str(x.dtype).replace("torch.", "")


def device_of(x):
    return str(x.device)


def strides(x):
    return tuple(x.stride())


def can_view(x, shape):
    try:
        x.view(tuple(shape))
    except RuntimeError:
        return False
    return True


def _both_tensors(a, b):
    """torch's functions want a tensor first; a Python number takes the other operand's dtype."""
    if isinstance(a, torch.Tensor):
        return a, b
    return torch.as_tensor(a, dtype=b.dtype, device=b.device), b


def add(a, b):
    return torch.add(*_both_tensors(a, b))


def sub(a, b):
    return torch.sub(*_both_tensors(a, b))


def mul(a, b):
    return torch.mul(*_both_tensors(a, b))


def div(a, b):
    return torch.true_divide(*_both_tensors(a, b))


reciprocal = torch.reciprocal
neg, exp, log, log1p = torch.neg, torch.exp, torch.log, torch.log1p
sin, cos, tanh, sqrt, abs, sign = torch.sin, torch.cos, torch.tanh, torch.sqrt, torch.abs, torch.sign
sigmoid = torch.sigmoid


# -- fused backward formulas, as ATen names them -------------------------------------------
def relu_backward(grad, result):
    return torch.ops.aten.threshold_backward(grad, result, 0)


def tanh_backward(grad, result):
    return torch.ops.aten.tanh_backward(grad, result)


def sigmoid_backward(grad, result):
    return torch.ops.aten.sigmoid_backward(grad, result)


def softplus_neg(x):
    """``log(1 + e^-x)`` as ``max(-x, 0) + log1p(e^-|x|)``: the numpy backend's formula, op for op."""
    return torch.add(maximum(torch.neg(x), 0.0), torch.log1p(torch.exp(torch.neg(torch.abs(x)))))


def normal_cdf(x):
    """``(1 + erf(x / √2)) / 2``, as PyTorch's GELU kernel computes it."""
    return torch.mul(torch.add(torch.erf(torch.mul(x, 0.7071067811865476)), 1.0), 0.5)

gt, ge, lt, le, eq = torch.gt, torch.ge, torch.lt, torch.le, torch.eq
matmul = torch.matmul


def pow(a, b):
    return torch.pow(a, b)


def _tensor_like(value, other):
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(value, dtype=other.dtype, device=other.device)


def lerp(start, end, weight):
    return torch.lerp(start, end, weight if not isinstance(weight, torch.Tensor) else weight.to(start.dtype))


def maximum(a, b):
    return torch.maximum(a, _tensor_like(b, a))


def minimum(a, b):
    return torch.minimum(a, _tensor_like(b, a))


def clip(a, low, high):
    return torch.clamp(a, low, high)


def where(condition, a, b):
    reference = a if isinstance(a, torch.Tensor) else b
    return torch.where(condition, _tensor_like(a, reference), _tensor_like(b, reference))


def _dims(axis):
    if axis is None:
        return None
    return axis if isinstance(axis, tuple) else (axis,)


def sum(a, axis, keepdims=False):
    dims = _dims(axis)
    return torch.sum(a) if dims is None and not keepdims else torch.sum(a, dim=dims or tuple(range(a.ndim)), keepdim=keepdims)


def amax(a, axis, keepdims=False):
    dims = _dims(axis)
    return torch.amax(a, dim=dims if dims is not None else tuple(range(a.ndim)), keepdim=keepdims)


def argmax(a, axis):
    return torch.argmax(a, dim=axis)


def reshape(a, shape):
    return a.reshape(shape)


def permute(a, axes):
    return a.permute(*axes)


def broadcast_to(a, shape):
    return torch.broadcast_to(a, tuple(shape))


def expand(a, shape):
    return a.expand(tuple(shape))


def getitem(a, index):
    return a[index]


def zeros_like(a):
    return torch.zeros_like(a)


def one_hot_scatter(shape, index, axis, dtype):
    out = torch.zeros(tuple(shape), dtype=dtype, device=index.device)
    return out.scatter_(axis, index.unsqueeze(axis), 1)


def iadd(out, b):
    return out.add_(b)


def isub(out, b):
    return out.sub_(b)


def imul(out, b):
    return out.mul_(b)


def idiv(out, b):
    return out.div_(b)


def fill(out, value):
    return out.fill_(value)


def assign(out, value, index=Ellipsis):
    out[index] = value if not isinstance(value, np.ndarray) else torch.as_tensor(value, device=out.device)
    return out


ne = torch.ne


def any(a):
    return bool(torch.any(a))


def take_along_axis(a, index, axis):
    return torch.take_along_dim(a, index, dim=axis)


# -- views and memory ---------------------------------------------------------------------------
def is_contiguous(x):
    return x.is_contiguous()


def contiguous(x):
    return x.contiguous()


def overlaps_itself(x):
    return True in [stride == 0 and size > 1 for stride, size in zip(x.stride(), x.shape)]


def geometry(x, base):
    return tuple(x.shape), tuple(x.stride()), x.storage_offset() - base.storage_offset()


def strided_indices(sizes, strides, offset, like=None):
    device = like.device if like is not None else "cpu"
    positions = torch.full(tuple(sizes), offset, dtype=torch.int64, device=device)
    for axis, (size, stride) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[axis] = size
        positions = positions + torch.arange(size, dtype=torch.int64, device=device).reshape(shape) * stride
    return positions


def as_strided(x, sizes, strides, offset):
    return x.as_strided(tuple(sizes), tuple(strides), x.storage_offset() + offset)


def _index_tuple(key):
    key = key if isinstance(key, tuple) else (key,)
    return tuple(torch.as_tensor(k) if isinstance(k, np.ndarray) else k for k in key)


def index_add(out, key, values):
    key = _index_tuple(key)
    if all(isinstance(k, torch.Tensor) for k in key):
        return out.index_put_(key, values, accumulate=True)
    # slices among the indices: numpy's semantics through a view of positions
    positions = torch.arange(out.numel(), device=out.device).reshape(out.shape)[key]
    out.view(-1).index_put_((positions.reshape(-1),), torch.broadcast_to(values, positions.shape).reshape(-1),
                            accumulate=True)
    return out


def concatenate(arrays, axis):
    return torch.cat(arrays, dim=axis)


def stack(arrays, axis):
    return torch.stack(arrays, dim=axis)


def tile(a, reps):
    return torch.tile(a, tuple(reps))


def argmin(a, axis):
    return torch.argmin(a, dim=axis)


def amin(a, axis, keepdims=False):
    dims = _dims(axis)
    return torch.amin(a, dim=dims if dims is not None else tuple(range(a.ndim)), keepdim=keepdims)


def all_along(a, axis, keepdims=False):
    return torch.all(a) if axis is None and not keepdims else torch.all(a, dim=axis, keepdim=keepdims)


def any_along(a, axis, keepdims=False):
    return torch.any(a) if axis is None and not keepdims else torch.any(a, dim=axis, keepdim=keepdims)


def take(a, index, axis):
    return torch.index_select(a, axis, index)


def gather(a, axis, index):
    return torch.gather(a, axis, index)


def scatter_add(out, axis, index, values):
    return out.scatter_add_(axis, index, values)


def nonzero(a):
    return torch.nonzero(a, as_tuple=True)


def array_equal(a, b):
    return a.shape == b.shape and bool(torch.equal(a, b.to(a.dtype)))


def allclose(a, b, rtol, atol, equal_nan):
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


# -- masks: logical and bitwise ops ---------------------------------------------------------------------
logical_and, logical_or, logical_xor = torch.logical_and, torch.logical_or, torch.logical_xor
bitwise_and, bitwise_or, bitwise_xor, bitwise_not = torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor, torch.bitwise_not


# -- more elementwise math, scans and orderings (the tensor API tutorials use) ------------------------
log2, log10, expm1, floor, ceil, trunc, erf = torch.log2, torch.log10, torch.expm1, torch.floor, torch.ceil, torch.trunc, torch.erf
asin, acos, atan, sinh, cosh = torch.asin, torch.acos, torch.atan, torch.sinh, torch.cosh
isnan, isinf, isfinite = torch.isnan, torch.isinf, torch.isfinite


def round(a, decimals=0):
    return torch.round(a, decimals=decimals)


def atan2(a, b):
    return torch.atan2(*_both_tensors(a, b))


def remainder(a, b):
    return torch.remainder(a, b) if isinstance(a, torch.Tensor) else torch.remainder(*_both_tensors(a, b))


def fmod(a, b):
    return torch.fmod(a, b)


def nan_to_num(a, nan, posinf, neginf):
    return torch.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


def prod(a, axis, keepdims=False):
    if axis is None:
        return torch.prod(a) if not keepdims else torch.prod(a).reshape((1,) * a.ndim)
    return torch.prod(a, dim=axis, keepdim=keepdims)


def cumsum(a, axis):
    return torch.cumsum(a, dim=axis)


def cumprod(a, axis):
    return torch.cumprod(a, dim=axis)


def flip(a, axes):
    return torch.flip(a, tuple(axes))


def roll(a, shifts, axes):
    return torch.roll(a, shifts, axes) if axes is not None else torch.roll(a, shifts)


def tril(a, diagonal):
    return torch.tril(a, diagonal)


def triu(a, diagonal):
    return torch.triu(a, diagonal)


def diagonal(a, offset, axis1, axis2):
    return torch.diagonal(a, offset, axis1, axis2).clone()


def argsort(a, axis, descending):
    return torch.sort(a, dim=axis, descending=descending, stable=True).indices


def scatter(out, axis, index, values):
    return out.scatter_(axis, index, values)


# -- products, linear algebra, scatter_reduce, padding modes, strided windows ------------------
def cross(a, b, axis):
    return torch.linalg.cross(a, b, dim=axis)


def lu_factor(a):
    lu, pivots, info = torch.linalg.lu_factor_ex(a)
    return lu, pivots, info


def inv(a):
    return torch.linalg.inv(a)


def solve(a, b):
    return torch.linalg.solve(a, b)


def cholesky(a):
    factor, info = torch.linalg.cholesky_ex(a)
    failed = torch.nonzero(info.reshape(-1))
    if failed.numel() == 0:
        return factor, None
    index = int(failed[0, 0])
    return None, (index, int(info.reshape(-1)[index]))


def scatter_reduce(out, axis, index, src, reduce, include_self):
    return out.scatter_reduce_(axis, index, src, reduce, include_self=include_self)


def unfold(a, axis, size, step):
    return a.unfold(axis, size, step)


def solve_triangular(a, b, upper):
    return torch.linalg.solve_triangular(a, b, upper=upper)
def diagonal_view(a, offset, axis1, axis2):
    """The diagonal as a view sharing ``a``'s memory (PyTorch's own ``diagonal``)."""
    return torch.diagonal(a, offset, axis1, axis2)


# -- decompositions: SVD, symmetric eigendecomposition, QR ---------------------------------------
def svd(a, full_matrices):
    return tuple(torch.linalg.svd(a, full_matrices=full_matrices))


def eigh(a, upper):
    return tuple(torch.linalg.eigh(a, UPLO="U" if upper else "L"))


def qr(a, complete):
    return tuple(torch.linalg.qr(a, mode="complete" if complete else "reduced"))


# -- a leaf's first .grad: AccumulateGrad's layout contract ---------------------------------------------------
def copy_for_grad(value, like, steal: bool = True):
    """A copy of ``value`` laid out as PyTorch's AccumulateGrad lays out a leaf's first ``.grad`` (see the numpy
    backend's ``grad_layout``): the gradient's own strides where they obey the leaf's layout contract and
    ``steal`` (no ``create_graph``), else the leaf's strides (contiguous for a leaf that is not dense)."""
    from gradviz.backends.numpy_backend import non_overlapping_and_dense

    own, wanted = tuple(value.stride()), tuple(like.stride())
    if not value.dim() or value.shape != like.shape:
        return copy_as(value, like)
    if not non_overlapping_and_dense(tuple(like.shape), wanted):
        if steal and value.is_contiguous() and 0 not in own:
            return torch.empty_strided(value.shape, own, dtype=value.dtype, device=value.device).copy_(value)
        return value.clone(memory_format=torch.contiguous_format)
    if steal and all((s == w) if size != 1 else s != 0 for size, s, w in zip(value.shape, own, wanted)):
        return torch.empty_strided(value.shape, own, dtype=value.dtype, device=value.device).copy_(value)
    return torch.empty_strided(value.shape, wanted, dtype=value.dtype, device=value.device).copy_(value)


# -- tan (the tensor API sweep) --------------------------------------------------------------------------------------
tan = torch.tan
asinh, acosh, atanh = torch.asinh, torch.acosh, torch.atanh
