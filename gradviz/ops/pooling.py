"""Pooling, one node per PyTorch node: ``max_pool2d`` (MaxPool2DWithIndicesBackward0), ``avg_pool2d``
(AvgPool2DBackward0), ``adaptive_avg_pool2d`` (AdaptiveAvgPool2DBackward0), and their 1-d forms, which
PyTorch records as the 2-d op between an ``unsqueeze(-2)`` and a ``squeeze(-2)``.

Each window is read from a strided view of the padded input (``convolution._windows``, no copy):

* max pooling pads with -inf and takes the first largest element of each window (``argmax``, the element
  PyTorch's scan keeps on a tie; with NaNs, the last NaN, as its scan does), saving where it was as an index into the input's plane (``result1``); the
  backward adds each output's gradient at that index (one ``bincount``).
* average pooling pads with zeros and divides each window's sum by PyTorch's divisor: the window's size
  clipped to the padded input (``count_include_pad``), or the number of input elements it covers, or
  ``divisor_override``; the backward spreads each gradient over its window, one strided slice per kernel offset.
* adaptive average pooling averages rows ``floor(i·H/h)`` to ``ceil((i+1)·H/h)``, and columns alike: a
  matrix of window weights per dim, so the forward is ``A_h · x · A_wᵀ`` and the backward ``A_hᵀ · g · A_w``.

Their recorded backward (create_graph) is PyTorch's: MaxPool2DWithIndicesBackwardBackward0 (the gradient
of the gradient gathers at the saved indices), AvgPool2DBackwardBackward0 (average pooling again),
AdaptiveAvgPool2DBackwardBackward0 (adaptive pooling again); none sends anything to the input.
"""
from __future__ import annotations

import itertools

import numpy as np

from gradviz.autograd.function import OpFunction
from gradviz.ops.convolution import _back, _windows
from gradviz.tensor import Tensor


# -- sizes ---------------------------------------------------------------------------------------------------
def _pair(value, dims: int = 2) -> tuple:
    """How PyTorch's argument parser shows an ``int[2]`` (``int[dims]``) argument: an int repeated, a sequence
    kept, None empty."""
    if value is None:
        return ()
    return (value,) * dims if isinstance(value, int) else tuple(value)


def _two(values: tuple, default: tuple, dims: int = 2) -> tuple:
    """ATen's reading of a 2-d (or ``dims``-d) parameter: one value for every dim, none for the default."""
    if not values:
        return default
    return values * dims if len(values) == 1 else tuple(values)


def pooled_size(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's ``pooling_output_shape``: with ``ceil_mode`` a last window may start in the right padding
    only if it starts inside the input or the left padding."""
    out = (size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _as_planes(array, dims: int = 2):
    """``(N, C, *spatial)`` from an unbatched ``(C, *spatial)`` or a batched array (a view), ``dims`` spatial dims."""
    return array[None] if array.ndim == dims + 1 else array


def _padded(planes, padding, out, kernel, stride, dilation, fill):
    """The planes padded by ``padding`` (and past the end as far as ceil_mode's last windows read) with ``fill``."""
    pads = []
    for axis in range(len(kernel)):
        reach = (out[axis] - 1) * stride[axis] + dilation[axis] * (kernel[axis] - 1) + 1
        size = planes.shape[2 + axis]
        pads.append((padding[axis], max(reach - size - padding[axis], padding[axis])))
    return np.pad(planes, ((0, 0), (0, 0)) + tuple(pads), constant_values=fill)


def _spread(columns, shape, padding, kernel, stride, dilation):
    """The adjoint of reading windows: ``columns (N, C, *out, *kernel)`` added into an array of the padded
    ``shape``'s planes at the positions each kernel offset read, then the padding cut off."""
    dims = len(kernel)
    out = columns.shape[2:2 + dims]
    reach = [(out[a] - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 for a in range(dims)]
    padded = np.zeros(tuple(shape[:2]) + tuple(max(shape[2 + a] + 2 * padding[a], reach[a]) for a in range(dims)),
                      dtype=columns.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        reached = tuple(slice(k * d, k * d + st * (o - 1) + 1, st)
                        for k, d, st, o in zip(offset, dilation, stride, out))
        padded[(slice(None), slice(None)) + reached] += columns[(Ellipsis,) + offset]
    return padded[(slice(None), slice(None)) + tuple(slice(p, p + size) for p, size in zip(padding, shape[2:]))]


# -- max pooling -------------------------------------------------------------------------------------------------
def _window_max(flat):
    """Each window's (the last axis) largest element and its position: the first on a tie (the element
    PyTorch's scan keeps); with NaNs, the last NaN, as its scan does."""
    position = np.argmax(flat, axis=-1)
    values = np.take_along_axis(flat, position[..., None], axis=-1)[..., 0]
    if flat.dtype.kind == "f" and np.isnan(values).any():
        nan = np.isnan(flat)
        last = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        position = np.where(nan.any(axis=-1), last, position)
    return values, position


def _plane_indices(coordinates, spatial):
    """Row-major indices into a plane of size ``spatial`` from one coordinate array per spatial dim."""
    indices = np.zeros(np.broadcast_shapes(*(c.shape for c in coordinates)), np.int64)
    for coordinate, size in zip(coordinates, spatial):
        indices = indices * size + coordinate
    return indices


def _along(values, axis: int, dims: int):
    """``values`` (one per output position of spatial dim ``axis``) shaped to broadcast over ``(*out)``."""
    return np.asarray(values).reshape((-1,) + (1,) * (dims - 1 - axis))


def max_pool_arrays(x, kernel, stride, padding, dilation, ceil_mode):
    """``(values, indices)`` of max pooling over the last ``len(kernel)`` dims of an unbatched or batched array."""
    dims = len(kernel)
    planes = _as_planes(x, dims)
    spatial = planes.shape[2:]
    out = tuple(pooled_size(spatial[a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode) for a in range(dims))
    fill = -np.inf if planes.dtype.kind == "f" else np.iinfo(planes.dtype).min
    windows = _windows(_padded(planes, padding, out, kernel, stride, dilation, fill), kernel, stride, dilation, out)
    values, position = _window_max(windows.reshape(windows.shape[:2 + dims] + (-1,)))
    offsets = np.unravel_index(position, kernel)
    indices = _plane_indices([_along(np.arange(out[a]) * stride[a] - padding[a], a, dims) + offsets[a] * dilation[a]
                              for a in range(dims)], spatial)
    if x.ndim == dims + 1:
        return values[0], indices[0]
    return values, indices


def _flat_targets(indices, shape, dims):
    """The saved plane indices as indices into the whole flattened ``shape`` (each plane after the one before)."""
    plane = int(np.prod(shape[-dims:]))
    planes = int(np.prod(shape[:-dims]))
    return (indices.reshape(planes, -1) + np.arange(planes).reshape(-1, 1) * plane).reshape(-1), planes * plane


def max_unpool_grad(grad, indices, shape, dims: int = 2):
    """Each gradient added at its saved index of the input's plane: an array shaped ``shape``."""
    targets, size = _flat_targets(indices, shape, dims)
    summed = np.bincount(targets, weights=grad.reshape(-1), minlength=size)
    return summed.astype(grad.dtype, copy=False).reshape(shape)


def max_unpool_arrays(values, indices, shape, dims: int):
    """``max_unpool``: each value written at its index of its plane of a zero array shaped ``shape``."""
    targets, size = _flat_targets(indices, shape, dims)
    result = np.zeros(size, values.dtype)
    result[targets] = values.reshape(-1)
    return result.reshape(shape)


def gather_planes(grad, indices, dims: int):
    """``max_pool_double_backward``: from each plane of ``grad``, the elements at ``indices`` (shaped as they are)."""
    planes = grad.reshape(indices.shape[:-dims] + (-1,)).reshape(-1, int(np.prod(grad.shape[-dims:])))
    return np.take_along_axis(planes, indices.reshape(planes.shape[0], -1), axis=1).reshape(indices.shape)


class MaxPool2DWithIndicesBackward0(OpFunction):
    """``max_pool2d_with_indices``: each output is its window's largest element; ``result1`` says which."""

    dims = 2
    inputs = ("self",)
    derivatives = {"self": ("max_pool2d_with_indices_backward(grad, self, kernel_size, stride, padding, dilation, "
                            "ceil_mode, result1)", r"\bar{y}\ \text{at each window's maximum}")}

    def forward(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, computed):
        values, indices = computed
        ctx.save(ceil_mode=ceil_mode, dilation=dilation, kernel_size=kernel_size, padding=padding, result1=indices,
                 self=self, stride=stride)
        return values

    def backward(ctx, grad):
        x, indices = ctx.saved("self", "result1")
        g = np.asarray(ctx.backend.to_numpy(grad))
        result = max_unpool_grad(g, np.asarray(ctx.backend.to_numpy(indices)), x.shape, ctx.dims)
        return _back(ctx.backend, result, g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        self, indices = ctx.saved_graph("self", "result1")
        return ctx.second_order.apply(grad, self, indices)


class MaxPool3DWithIndicesBackward0(MaxPool2DWithIndicesBackward0):
    """``max_pool3d_with_indices``: 2-d max pooling's node over three spatial dims."""

    dims = 3
    derivatives = {"self": ("max_pool3d_with_indices_backward(grad, self, kernel_size, stride, padding, dilation, "
                            "ceil_mode, result1)", r"\bar{y}\ \text{at each window's maximum}")}


class AdaptiveMaxPool2DBackward0(MaxPool2DWithIndicesBackward0):
    """``adaptive_max_pool2d``: max pooling over ``output_size`` windows that tile the input (as adaptive
    average pooling's do); ``result1`` says where each maximum was."""

    derivatives = {"self": ("adaptive_max_pool2d_backward(grad, self, result1)",
                            r"\bar{y}\ \text{at each window's maximum}")}

    def forward(ctx, self, computed):
        values, indices = computed
        ctx.save(result1=indices, self=self)
        return values


class AdaptiveMaxPool3DBackward0(AdaptiveMaxPool2DBackward0):
    """``adaptive_max_pool3d``: adaptive max pooling over three spatial dims."""

    dims = 3
    derivatives = {"self": ("adaptive_max_pool3d_backward(grad, self, result1)",
                            r"\bar{y}\ \text{at each window's maximum}")}


class MaxPool2DWithIndicesBackwardBackward0(OpFunction):
    """``max_pool2d_with_indices_backward(grad_output, self, ...)``: the gradient put back at the saved indices.
    Its own gradient gathers at the same indices (PyTorch's ``max_pool_double_backward``); the input gets zeros."""

    dims = 2
    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("max_pool_double_backward(grad, indices, 2)", r"\bar{y}\ \text{at the maxima}"),
                   "self": ("zeros_like(self)", "0")}

    def forward(ctx, grad_output, self, indices):
        ctx.save(indices=indices)
        ctx.shape = tuple(self.shape)
        ctx.primals = (grad_output._data,)  # what the snapshot's formula evaluation reads the gradients' dtype from
        # (its only saved tensor holds integers)
        g = np.asarray(grad_output._backend.to_numpy(grad_output._data))
        result = max_unpool_grad(g, np.asarray(indices._backend.to_numpy(indices._data)), tuple(self.shape), ctx.dims)
        return _back(grad_output._backend, result, g, grad_output._backend.device_of(grad_output._data))

    def backward(ctx, grad):
        indices = np.asarray(ctx.backend.to_numpy(ctx.saved("indices")))
        g = np.asarray(ctx.backend.to_numpy(grad))
        gathered = gather_planes(g, indices, ctx.dims)
        device = ctx.backend.device_of(grad)
        return (_back(ctx.backend, gathered, g, device) if ctx.needs_input_grad[0] else None,
                _back(ctx.backend, np.zeros(ctx.shape, g.dtype), g, device) if ctx.needs_input_grad[1] else None)


class MaxPool3DWithIndicesBackwardBackward0(MaxPool2DWithIndicesBackwardBackward0):
    """``max_pool3d_with_indices_backward``: as the 2-d node, over three spatial dims."""

    dims = 3
    derivatives = {"grad_output": ("max_pool_double_backward(grad, indices, 3)", r"\bar{y}\ \text{at the maxima}"),
                   "self": ("zeros_like(self)", "0")}


class AdaptiveMaxPool2DBackwardBackward0(MaxPool2DWithIndicesBackwardBackward0):
    """``adaptive_max_pool2d_backward``: the gradient put back at the saved indices, as max pooling's."""


class AdaptiveMaxPool3DBackwardBackward0(MaxPool3DWithIndicesBackwardBackward0):
    """``adaptive_max_pool3d_backward``: the gradient put back at the saved indices, as max pooling's."""


MaxPool2DWithIndicesBackward0.second_order = MaxPool2DWithIndicesBackwardBackward0
MaxPool3DWithIndicesBackward0.second_order = MaxPool3DWithIndicesBackwardBackward0
AdaptiveMaxPool2DBackward0.second_order = AdaptiveMaxPool2DBackwardBackward0
AdaptiveMaxPool3DBackward0.second_order = AdaptiveMaxPool3DBackwardBackward0


def _check_pool_input(input, dims: int = 2) -> None:
    if dims == 3:
        if input.ndim not in (4, 5):
            raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    elif input.ndim not in (3, 4) or any(size == 0 for size in input.shape[1:]):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")


def _check_3d_shape(input, kernel, stride, padding, dilation, out, fn_name, check_input_size) -> None:
    """ATen's ``pool3d_shape_check``, in its order."""
    (kt, kh, kw), (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = kernel, stride, padding, dilation
    if kt <= 0 or kw <= 0 or kh <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} kW: {kw}")
    if st <= 0 or sw <= 0 or sh <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {st} dH: {sh} dW: {sw}")
    if dt <= 0 or dw <= 0 or dh <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {dt} dilationH: {dh} "
                           f"dilationW: {dw}")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{fn_name}: Expected 4D or 5D tensor for input, but got: {list(input.shape)}")
    for i in range(input.ndim):
        if not (input.ndim == 5 and i == 0) and input.shape[i] <= 0:
            raise RuntimeError(f"{fn_name}: Expected input's non-batch dimensions to have positive length, but input "
                               f"has a shape of {list(input.shape)} and non-batch dimension {input.shape[i]} has "
                               "length zero!")
    it, ih, iw = input.shape[-3:]
    if check_input_size and (it < kt or ih < kh or iw < kw):
        raise RuntimeError(f"input image (T: {it} H: {ih} W: {iw}) smaller than kernel size (kT: {kt} kH: {kh} "
                           f"kW: {kw})")
    if kt // 2 < pt or kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {kt} kW: {kw} "
                           f"kH: {kh} padT: {pt} padW: {pw} padH: {ph}")
    if any(size < 1 for size in out):
        planes = input.shape[-4]
        raise RuntimeError(f"Given input size: ({planes}x{it}x{ih}x{iw}). Calculated output size: "
                           f"({planes}x{out[0]}x{out[1]}x{out[2]}). Output size is too small")


def _checked_output(input, kernel, stride, padding, dilation, ceil_mode, fn_name: str = "",
                    check_input_size: bool = False) -> tuple:
    """The output's size, after PyTorch's checks in its order (``pooling_output_shape`` per dim, then
    ``pool2d_shape_check`` or ``pool3d_shape_check``)."""
    out = []
    for size, k, s, p, d in zip(input.shape[-len(kernel):], kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                               f"and dilation={d}")
        out.append(pooled_size(size, k, s, p, d, ceil_mode))
    if len(kernel) == 3:
        _check_3d_shape(input, kernel, stride, padding, dilation, out, fn_name, check_input_size)
        return tuple(out)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    if kw <= 0 or kh <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sw <= 0 or sh <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} dilationW: {dw}")
    if kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pw}, padH = "
                           f"{ph}, kW = {kw}, kH = {kh}")
    if any(size < 1 for size in out):
        planes = input.shape[-3]
        raise RuntimeError(f"Given input size: ({planes}x{input.shape[-2]}x{input.shape[-1]}). Calculated output size: "
                           f"({planes}x{out[0]}x{out[1]}). Output size is too small")
    return tuple(out)


_COUNT = {2: "two", 3: "three"}


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, dims: int = 2):
    """``max_pool2d_with_indices`` / ``max_pool3d_with_indices``: (output, indices)."""
    shown = [_pair(v, dims) for v in (kernel_size, stride, padding, dilation)]
    kernel = _two(shown[0], None, dims)
    if kernel is None or len(shown[0]) not in (1, dims):
        raise RuntimeError(f"max_pool{dims}d: kernel_size must either be a single int, or a tuple of {_COUNT[dims]} "
                           "ints")
    stride_, padding_, dilation_ = (_two(shown[1], kernel, dims), _two(shown[2], None, dims),
                                    _two(shown[3], None, dims))
    _check_pool_input(input, dims)
    _checked_output(input, kernel, stride_, padding_, dilation_, ceil_mode,
                    "max_pool3d_with_indices_out_cpu_template()")
    x = np.asarray(input._backend.to_numpy(input._data))
    values, indices = max_pool_arrays(x, kernel, stride_, padding_, dilation_, ceil_mode)
    device = input._backend.device_of(input._data)
    index_tensor = Tensor._make(_back(input._backend, indices, indices, device), backend=input._backend)
    values = _back(input._backend, values, x, device)
    node = MaxPool3DWithIndicesBackward0 if dims == 3 else MaxPool2DWithIndicesBackward0
    output = node.apply(input, *shown, bool(ceil_mode), (values, index_tensor))
    return output, index_tensor


def _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    """``max_pool2d_with_indices``: (output, indices)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``F.max_pool2d``: the largest element of each ``kernel_size`` window (MaxPool2DWithIndicesBackward0)."""
    output, indices = _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (output, indices) if return_indices else output


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``F.max_pool2d_with_indices``: ``max_pool2d``'s output and where each maximum was."""
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``F.max_pool3d``: the largest element of each ``kernel_size`` box (MaxPool3DWithIndicesBackward0)."""
    output, indices = _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, 3)
    return (output, indices) if return_indices else output


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``F.max_pool3d_with_indices``: ``max_pool3d``'s output and where each maximum was."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, 3)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``F.max_pool1d_with_indices``: ``max_pool1d``'s output and where each maximum was."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _single(value, name: str, op: str) -> tuple:
    value = (value,) if isinstance(value, int) else tuple(value)
    if len(value) != 1:
        raise RuntimeError(f"{op}() argument '{name}' should contain one int (got {len(value)})")
    return value


def _check_1d_input(input, op: str) -> None:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}() Expected 2D or 3D input tensor, but got {list(input.shape)}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``F.max_pool1d``: PyTorch's 2-d max pooling of ``input.unsqueeze(-2)`` with a ``(1, k)`` window, then
    ``squeeze(-2)`` (UnsqueezeBackward0, MaxPool2DWithIndicesBackward0, SqueezeBackward1)."""
    from gradviz.ops.shape import squeeze, unsqueeze

    kernel = _single(kernel_size, "kernel_size", "max_pool1d")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _single(stride, "stride", "max_pool1d")
    padding, dilation = _single(padding, "padding", "max_pool1d"), _single(dilation, "dilation", "max_pool1d")
    _check_1d_input(input, "max_pool1d")
    output, indices = _max_pool2d(unsqueeze(input, -2), (1, kernel[0]), (1, stride[0]), (0, padding[0]),
                                  (1, dilation[0]), ceil_mode)
    output = squeeze(output, -2)
    return (output, indices.squeeze(-2)) if return_indices else output


# -- average pooling ---------------------------------------------------------------------------------------------
def _divisors(size, out, kernel, stride, padding, count_include_pad):
    """Per output position along one dim: the window's extent within the padded input, and within the input."""
    start = np.arange(out) * stride - padding
    end = np.minimum(start + kernel, size + padding)
    pool = end - start
    inside = np.minimum(end, size) - np.maximum(start, 0)
    return pool if count_include_pad else inside


def avg_geometry(shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """The output's size and each output position's divisor, for an input of ``shape``."""
    dims = len(kernel)
    out = tuple(pooled_size(shape[-dims + a], kernel[a], stride[a], padding[a], 1, ceil_mode) for a in range(dims))
    if divisor_override:
        return out, np.full(out, float(divisor_override))
    divisor = np.ones((), np.float64)
    for a in range(dims):  # the product of the window's extents along each dim
        divisor = np.multiply.outer(divisor, _divisors(shape[-dims + a], out[a], kernel[a], stride[a], padding[a],
                                                       count_include_pad))
    return out, divisor


def avg_pool_arrays(x, kernel, stride, padding, out, divisor):
    dims = len(kernel)
    planes = _as_planes(x, dims)
    windows = _windows(_padded(planes, padding, out, kernel, stride, (1,) * dims, 0), kernel, stride, (1,) * dims,
                       out)
    result = (windows.sum(axis=tuple(range(-dims, 0))) / divisor).astype(x.dtype, copy=False)
    return result[0] if x.ndim == dims + 1 else result


def avg_pool_grad(grad, shape, kernel, stride, padding, divisor):
    dims = len(kernel)
    planes = _as_planes(grad, dims)
    share = (planes / divisor).astype(grad.dtype, copy=False)
    columns = np.broadcast_to(share[(Ellipsis,) + (None,) * dims], share.shape + tuple(kernel))
    full = (tuple(shape) if len(shape) == dims + 2 else (1,) + tuple(shape))
    result = _spread(columns, full, padding, kernel, stride, (1,) * dims)
    return np.ascontiguousarray(result[0] if len(shape) == dims + 1 else result)


class AvgPool2DBackward0(OpFunction):
    """``avg_pool2d``: each output is its window's sum over PyTorch's divisor."""

    inputs = ("self",)
    derivatives = {"self": ("avg_pool2d_backward(grad, self, kernel_size, stride, padding, ceil_mode, "
                            "count_include_pad, divisor_override)", r"\bar{y} / \text{window size, over each window}")}

    def forward(ctx, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, computed):
        values, geometry = computed
        ctx.save(ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override,
                 kernel_size=kernel_size, padding=padding, self=self, stride=stride)
        ctx.geometry = geometry
        return values

    def backward(ctx, grad):
        x = ctx.saved("self")
        g = np.asarray(ctx.backend.to_numpy(grad))
        return _back(ctx.backend, avg_pool_grad(g, x.shape, *ctx.geometry), g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        self = ctx.saved_graph("self")
        shown = ctx.saved("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
        return ctx.second_order.apply(grad, self, *shown, ctx.geometry)


class AvgPool3DBackward0(AvgPool2DBackward0):
    """``avg_pool3d``: 2-d average pooling's node over three spatial dims."""

    derivatives = {"self": ("avg_pool3d_backward(grad, self, kernel_size, stride, padding, ceil_mode, "
                            "count_include_pad, divisor_override)", r"\bar{y} / \text{window size, over each window}")}


class AvgPool2DBackwardBackward0(OpFunction):
    """``avg_pool2d_backward(grad_output, self, ...)``: each gradient spread over its window. Its own gradient is
    average pooling again; the input gets zeros."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                                   "divisor_override)", r"\text{avg\_pool2d}(\bar{y})"),
                   "self": ("zeros_like(self)", "0")}

    def forward(ctx, grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                geometry):
        ctx.save(ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override,
                 kernel_size=kernel_size, padding=padding, stride=stride)
        ctx.geometry, ctx.shape = geometry, tuple(self.shape)
        g = np.asarray(grad_output._backend.to_numpy(grad_output._data))
        return _back(grad_output._backend, avg_pool_grad(g, tuple(self.shape), *geometry), g,
                     grad_output._backend.device_of(grad_output._data))

    def backward(ctx, grad):
        g = np.asarray(ctx.backend.to_numpy(grad))
        kernel, stride, padding, divisor = ctx.geometry
        device = ctx.backend.device_of(grad)
        return (_back(ctx.backend, avg_pool_arrays(g, kernel, stride, padding, divisor.shape, divisor), g, device)
                if ctx.needs_input_grad[0] else None,
                _back(ctx.backend, np.zeros(ctx.shape, g.dtype), g, device) if ctx.needs_input_grad[1] else None)


class AvgPool3DBackwardBackward0(AvgPool2DBackwardBackward0):
    """``avg_pool3d_backward``: as the 2-d node, over three spatial dims."""

    derivatives = {"grad_output": ("avg_pool3d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, "
                                   "divisor_override)", r"\text{avg\_pool3d}(\bar{y})"),
                   "self": ("zeros_like(self)", "0")}


AvgPool2DBackward0.second_order = AvgPool2DBackwardBackward0
AvgPool3DBackward0.second_order = AvgPool3DBackwardBackward0


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, dims: int = 2):
    shown = [_pair(v, dims) for v in (kernel_size, stride, padding)]
    kernel = _two(shown[0], None, dims)
    if kernel is None or len(shown[0]) not in (1, dims):
        raise RuntimeError("avg_pool2d: kernel_size must either be a single int, or a tuple of two ints" if dims == 2
                           else "avg_pool3d: kernel_size must be a single int, or a tuple of three ints")
    stride_, padding_ = _two(shown[1], kernel, dims), _two(shown[2], None, dims)
    if dims == 3:  # (the 3-d op checks the input's dims before the divisor, the 2-d one after)
        _check_pool_input(input, 3)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if dims == 2:
        _check_pool_input(input)
    _checked_output(input, kernel, stride_, padding_, (1,) * dims, ceil_mode, "avg_pool3d()", True)
    out, divisor = avg_geometry(tuple(input.shape), kernel, stride_, padding_, ceil_mode, count_include_pad,
                                divisor_override)
    x = np.asarray(input._backend.to_numpy(input._data))
    values = _back(input._backend, avg_pool_arrays(x, kernel, stride_, padding_, out, divisor), x,
                   input._backend.device_of(input._data))
    node = AvgPool3DBackward0 if dims == 3 else AvgPool2DBackward0
    return node.apply(input, *shown, bool(ceil_mode), bool(count_include_pad), divisor_override,
                      (values, (kernel, stride_, padding_, divisor)))


def _avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """``F.avg_pool2d``: the mean of each ``kernel_size`` window (AvgPool2DBackward0)."""
    return _avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """``F.avg_pool3d``: the mean of each ``kernel_size`` box (AvgPool3DBackward0)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """``F.avg_pool1d``: PyTorch's 2-d average pooling of ``input.unsqueeze(-2)``, then ``squeeze(-2)``."""
    from gradviz.ops.shape import squeeze, unsqueeze

    kernel = _single(kernel_size, "kernel_size", "avg_pool1d")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _single(stride, "stride", "avg_pool1d")
    padding = _single(padding, "padding", "avg_pool1d")
    _check_1d_input(input, "avg_pool1d")
    return squeeze(_avg_pool2d(unsqueeze(input, -2), (1, kernel[0]), (1, stride[0]), (0, padding[0]), ceil_mode,
                               count_include_pad, None), -2)


# -- adaptive pooling ----------------------------------------------------------------------------------------------
def _adaptive_bounds(size: int, out: int):
    """Where each of ``out`` adaptive windows over ``size`` positions starts and ends: ``floor(i·size/out)`` to
    ``ceil((i+1)·size/out)``."""
    index = np.arange(out)
    return (index * size) // out, -((-(index + 1) * size) // out)


def _window_matrix(size: int, out: int, dtype) -> np.ndarray:
    """``(out, size)``: row ``i`` averages positions ``floor(i·size/out)`` to ``ceil((i+1)·size/out)``."""
    matrix = np.zeros((out, size), dtype=dtype)
    for i, (start, end) in enumerate(zip(*_adaptive_bounds(size, out))):
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def _along_each(array, matrices):
    """``array`` with its last ``len(matrices)`` dims each multiplied by its matrix (``A_d · x · A_hᵀ · A_wᵀ``)."""
    dims = len(matrices)
    for axis, matrix in enumerate(matrices[:-1]):  # the leading spatial dims, each moved next to the last
        moved = np.swapaxes(array, axis - dims, -2)
        array = np.swapaxes(np.matmul(matrix, moved), axis - dims, -2)
    return np.matmul(array, matrices[-1].T)


def adaptive_avg_arrays(x, out):
    dims = len(out)
    return _along_each(x, [_window_matrix(x.shape[-dims + a], out[a], x.dtype) for a in range(dims)])


def adaptive_avg_grad(grad, shape, dims: int = 2):
    matrices = [_window_matrix(shape[-dims + a], grad.shape[-dims + a], grad.dtype).T for a in range(dims)]
    return np.ascontiguousarray(_along_each(grad, matrices))


def adaptive_max_arrays(x, out):
    """``(values, indices)`` of adaptive max pooling of the last ``len(out)`` dims: each window's positions read
    at once, the shorter windows repeating their last position (a repeat never changes which element PyTorch's
    scan keeps)."""
    dims = len(out)
    planes = _as_planes(x, dims)
    spatial = planes.shape[2:]
    if 0 in out:  # no window: empty outputs
        shape = x.shape[:-dims] + tuple(out)
        return np.empty(shape, x.dtype), np.empty(shape, np.int64)
    positions = []
    for size, o in zip(spatial, out):
        starts, ends = _adaptive_bounds(size, o)
        longest = int((ends - starts).max())
        positions.append(np.minimum(starts[:, None] + np.arange(longest), ends[:, None] - 1))
    read = []
    for a, position in enumerate(positions):
        shape = [1] * (2 * dims)
        shape[a], shape[dims + a] = position.shape
        read.append(position.reshape(shape))
    windows = planes[(slice(None), slice(None)) + tuple(read)]  # (N, C, *out, *longest)
    values, flat = _window_max(windows.reshape(windows.shape[:2 + dims] + (-1,)))
    offsets = np.unravel_index(flat, tuple(p.shape[1] for p in positions))
    indices = _plane_indices([positions[a][_along(np.arange(out[a]), a, dims), offsets[a]] for a in range(dims)],
                             spatial)
    if x.ndim == dims + 1:
        return values[0], indices[0]
    return values, indices


class AdaptiveAvgPool2DBackward0(OpFunction):
    """``_adaptive_avg_pool2d``: the input's last two dims averaged down to ``output_size`` windows."""

    dims = 2
    inputs = ("self",)
    derivatives = {"self": ("_adaptive_avg_pool2d_backward(grad, self)", r"\bar{y} / \text{window size, over each "
                                                                       r"window}")}

    def forward(ctx, self, output_size):
        ctx.save(self=self)
        x = np.asarray(self._backend.to_numpy(self._data))
        return _back(self._backend, adaptive_avg_arrays(x, output_size), x, self._backend.device_of(self._data))

    def backward(ctx, grad):
        x = ctx.saved("self")
        g = np.asarray(ctx.backend.to_numpy(grad))
        return _back(ctx.backend, adaptive_avg_grad(g, x.shape, ctx.dims), g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        return ctx.second_order.apply(grad, ctx.saved_graph("self"))


class AdaptiveAvgPool3DBackward0(AdaptiveAvgPool2DBackward0):
    """``_adaptive_avg_pool3d``: the input's last three dims averaged down to ``output_size`` windows."""

    dims = 3
    derivatives = {"self": ("_adaptive_avg_pool3d_backward(grad, self)", r"\bar{y} / \text{window size, over each "
                                                                       r"window}")}


class AdaptiveAvgPool2DBackwardBackward0(OpFunction):
    """``_adaptive_avg_pool2d_backward(grad_output, self)``; its own gradient is adaptive pooling again."""

    dims = 2
    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("_adaptive_avg_pool2d(grad, {grad_output.sym_size(-2), grad_output.sym_size(-1)})",
                                   r"\text{adaptive\_avg\_pool2d}(\bar{y})"),
                   "self": ("zeros_like(self)", "0")}

    def forward(ctx, grad_output, self):
        ctx.save(**{f"grad_output_sym_argsize_minus_{k}": grad_output.shape[-k] for k in range(1, ctx.dims + 1)})
        ctx.shape = tuple(self.shape)
        g = np.asarray(grad_output._backend.to_numpy(grad_output._data))
        return _back(grad_output._backend, adaptive_avg_grad(g, tuple(self.shape), ctx.dims), g,
                     grad_output._backend.device_of(grad_output._data))

    def backward(ctx, grad):
        g = np.asarray(ctx.backend.to_numpy(grad))
        out = ctx.saved(*(f"grad_output_sym_argsize_minus_{k}" for k in range(ctx.dims, 0, -1)))
        device = ctx.backend.device_of(grad)
        return (_back(ctx.backend, adaptive_avg_arrays(g, tuple(out)), g, device) if ctx.needs_input_grad[0] else None,
                _back(ctx.backend, np.zeros(ctx.shape, g.dtype), g, device) if ctx.needs_input_grad[1] else None)


class AdaptiveAvgPool3DBackwardBackward0(AdaptiveAvgPool2DBackwardBackward0):
    """``_adaptive_avg_pool3d_backward(grad_output, self)``; its own gradient is adaptive pooling again."""

    dims = 3
    derivatives = {"grad_output": ("_adaptive_avg_pool3d(grad, {grad_output.sym_size(-3), grad_output.sym_size(-2), "
                                   "grad_output.sym_size(-1)})", r"\text{adaptive\_avg\_pool3d}(\bar{y})"),
                   "self": ("zeros_like(self)", "0")}


AdaptiveAvgPool2DBackward0.second_order = AdaptiveAvgPool2DBackwardBackward0
AdaptiveAvgPool3DBackward0.second_order = AdaptiveAvgPool3DBackwardBackward0


def _check_adaptive_input(input, name: str, dims: int, colon: str = "") -> None:
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got{colon} {list(input.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {dim} being empty")


def _adaptive_avg_pool(input, output_size):
    """ATen's ``adaptive_avg_pool2d``/``3d``: an all-ones output is ``mean`` over the spatial dims, keepdim
    (MeanBackward1)."""
    dims = len(output_size)
    if any(size < 0 for size in output_size):
        shown = ", ".join(str(size) for size in output_size[:2]) + "".join(f",{size}" for size in output_size[2:])
        raise RuntimeError(f"adaptive_avg_pool{dims}d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{shown}}}")
    if all(size == 1 for size in output_size):  # (before ATen checks the input's dims)
        from gradviz.ops.reduction import mean

        return mean(input, tuple(range(-1, -dims - 1, -1)), keepdim=True)
    _check_adaptive_input(input, f"adaptive_avg_pool{dims}d", dims)
    node = AdaptiveAvgPool3DBackward0 if dims == 3 else AdaptiveAvgPool2DBackward0
    return node.apply(input, tuple(output_size))


def _adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg_pool(input, output_size)


def _adaptive_sizes(input, output_size, dims: int, message: str) -> tuple:
    """``output_size`` as ``dims`` ints (an int repeated; None keeps that dim's size)."""
    sizes = (output_size,) * dims if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != dims:
        raise RuntimeError(message)
    return tuple(input.shape[-dims + i] if size is None else size for i, size in enumerate(sizes))


def adaptive_avg_pool2d(input, output_size):
    """``F.adaptive_avg_pool2d``: ``output_size`` windows (None keeps that dim's size) averaged
    (AdaptiveAvgPool2DBackward0)."""
    return _adaptive_avg_pool(input, _adaptive_sizes(input, output_size, 2, "adaptive_avg_pool2d: output_size must be 2"))


def adaptive_avg_pool3d(input, output_size):
    """``F.adaptive_avg_pool3d``: ``output_size`` boxes (None keeps that dim's size) averaged
    (AdaptiveAvgPool3DBackward0)."""
    return _adaptive_avg_pool(input, _adaptive_sizes(input, output_size, 3, "adaptive_avg_pool3d: output_size must be 3"))


def adaptive_avg_pool1d(input, output_size):
    """``F.adaptive_avg_pool1d``: PyTorch's 2-d adaptive pooling of ``input.unsqueeze(-2)`` to ``(1, size)``,
    then ``squeeze(-2)``."""
    from gradviz.ops.shape import squeeze, unsqueeze

    size = _single(output_size, "output_size", "adaptive_avg_pool1d")
    _check_1d_input(input, "adaptive_avg_pool1d")
    return squeeze(_adaptive_avg_pool2d(unsqueeze(input, -2), (1, size[0])), -2)


def _adaptive_max_pool(input, output_size, dims: int):
    """``adaptive_max_pool2d``/``3d``: (output, indices)."""
    name = f"adaptive_max_pool{dims}d"
    _check_adaptive_input(input, name, dims, ":")
    if isinstance(output_size, int):
        output_size = (output_size,) * dims
    output_size = tuple(input.shape[-dims + i] if size is None else size for i, size in enumerate(output_size))
    if len(output_size) != dims:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {dims}")
    shape = tuple(input.shape[:-dims]) + output_size
    if any(size < 0 for size in output_size):
        negative = next(size for size in output_size if size < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative}: {list(shape)}")
    x = np.asarray(input._backend.to_numpy(input._data))
    values, indices = adaptive_max_arrays(x, output_size)
    device = input._backend.device_of(input._data)
    index_tensor = Tensor._make(_back(input._backend, indices, indices, device), backend=input._backend)
    node = AdaptiveMaxPool3DBackward0 if dims == 3 else AdaptiveMaxPool2DBackward0
    return node.apply(input, (_back(input._backend, values, x, device), index_tensor)), index_tensor


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """``F.adaptive_max_pool2d``: the largest element of each of ``output_size`` windows that tile the input
    (AdaptiveMaxPool2DBackward0)."""
    output, indices = _adaptive_max_pool(input, output_size, 2)
    return (output, indices) if return_indices else output


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """``F.adaptive_max_pool3d``: the largest element of each of ``output_size`` boxes that tile the input
    (AdaptiveMaxPool3DBackward0)."""
    output, indices = _adaptive_max_pool(input, output_size, 3)
    return (output, indices) if return_indices else output


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``F.adaptive_max_pool2d_with_indices``: the output and where each maximum was."""
    return _adaptive_max_pool(input, output_size, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``F.adaptive_max_pool3d_with_indices``: the output and where each maximum was."""
    return _adaptive_max_pool(input, output_size, 3)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``torch.adaptive_max_pool1d``: PyTorch's 2-d adaptive max pooling of ``input.unsqueeze(-2)`` to
    ``(1, size)``; both the output and the indices squeezed back."""
    from gradviz.ops.shape import squeeze, unsqueeze

    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for adaptive_max_pool1d)")
    size = _single(output_size, "output_size", "adaptive_max_pool1d")
    output, indices = _adaptive_max_pool(unsqueeze(input, -2), (1, size[0]), 2)
    return squeeze(output, -2), indices.squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """``F.adaptive_max_pool1d``: the largest element of each of ``output_size`` windows."""
    output, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return (output, indices) if return_indices else output


# -- max unpooling -------------------------------------------------------------------------------------------------
class MaxUnpool2DBackward0(OpFunction):
    """``max_unpool2d``: each input element written at its index of a zero plane of ``output_size``. Its
    gradient reads the gradient back at the same indices (PyTorch's ``max_pool_double_backward``)."""

    dims = 2
    inputs = ("self",)
    derivatives = {"self": ("max_pool_double_backward(grad, indices, 2)", r"\bar{y}\ \text{at the indices}")}

    def forward(ctx, self, indices, shape):
        ctx.save(indices=indices)
        x = np.asarray(self._backend.to_numpy(self._data))
        result = max_unpool_arrays(x, np.asarray(indices._backend.to_numpy(indices._data)), shape, ctx.dims)
        return _back(self._backend, result, x, self._backend.device_of(self._data))

    def backward(ctx, grad):
        indices = np.asarray(ctx.backend.to_numpy(ctx.saved("indices")))
        g = np.asarray(ctx.backend.to_numpy(grad))
        return _back(ctx.backend, gather_planes(g, indices, ctx.dims), g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        """``max_pool_double_backward`` as ATen writes it: ``grad.contiguous().view(planes..., -1)``, a gather
        along the last dim at the indices viewed alike, then a view to the indices' shape."""
        from gradviz.ops.indexing import gather
        from gradviz.ops.shape import view

        indices = ctx.saved_graph("indices")
        size = tuple(indices.shape[:indices.ndim - ctx.dims]) + (-1,)
        return view(gather(view(grad.contiguous(), *size), -1, view(indices, *size)), *indices.shape)


class MaxUnpool3DBackward0(MaxUnpool2DBackward0):
    """``max_unpool3d``: as the 2-d node, over three spatial dims."""

    dims = 3
    derivatives = {"self": ("max_pool_double_backward(grad, indices, 3)", r"\bar{y}\ \text{at the indices}")}


def _unpool_output_size(input, kernel, stride, padding, output_size) -> list:
    """``F._unpool_output_size``: the size max pooling came from, or ``output_size`` checked against it."""
    dims = len(kernel)
    default = [(input.shape[-dims + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(dims)]
    if output_size is None:
        result = default
    else:
        if len(output_size) == dims + 2:
            output_size = output_size[2:]
        if len(output_size) != dims:
            raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
        result = output_size
    for d in range(dims):
        if result[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={result[d]}")
    return result


def _max_unpool(input, indices, output_size, dims: int):
    """ATen's ``max_unpool2d``/``max_unpool3d`` with its checks in its order: (output)."""
    from gradviz._dtype import SCALAR_TYPE_NAMES

    index_dtype = str(np.dtype(indices._backend.to_numpy(indices._data).dtype))
    if index_dtype != "int64":
        raise RuntimeError("elements in indices should be type int64" + (
            f" but got: {SCALAR_TYPE_NAMES.get(index_dtype, index_dtype)}" if dims == 2 else ""))
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Input to max_unpooling{dims}d should be a {dims + 1}d or {dims + 2}d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            where = "max_unpooling2d_forward_out_cpu(): " if dims == 2 else "max_unpooling3d(): "
            raise RuntimeError(f"{where}Expected input to have non-zero size for non-batch dimensions, but got "
                               f"{list(input.shape)} with dimension {i} being empty.")
    shape = tuple(input.shape[:-dims]) + tuple(output_size)
    index_array = np.asarray(indices._backend.to_numpy(indices._data))
    wrong = (index_array < 0) | (index_array >= int(np.prod(output_size)))
    if wrong.any():
        raise RuntimeError(f"Found an invalid max index: {index_array[wrong].reshape(-1)[0]} (output volumes are of "
                           f"size {'x'.join(str(size) for size in output_size)})")
    node = MaxUnpool3DBackward0 if dims == 3 else MaxUnpool2DBackward0
    return node.apply(input, indices, shape)


def _unpool_arguments(kernel_size, stride, padding, dims: int) -> tuple:
    kernel = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    stride = kernel if stride is None else (stride,) * dims if isinstance(stride, int) else tuple(stride)
    padding = (padding,) * dims if isinstance(padding, int) else tuple(padding)
    return kernel, stride, padding


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``F.max_unpool1d``: PyTorch's ``max_unpool2d`` of ``input.unsqueeze(-1)`` to ``(size, 1)``, then
    ``squeeze(-1)``."""
    from gradviz.ops.shape import squeeze, unsqueeze

    kernel, stride, padding = _unpool_arguments(kernel_size, stride, padding, 1)
    size = list(_unpool_output_size(input, kernel, stride, padding, output_size)) + [1]
    return squeeze(_max_unpool(unsqueeze(input, -1), indices.unsqueeze(-1), size, 2), -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``F.max_unpool2d``: max pooling undone, each value put back where ``indices`` says, zeros elsewhere
    (MaxUnpool2DBackward0)."""
    kernel, stride, padding = _unpool_arguments(kernel_size, stride, padding, 2)
    return _max_unpool(input, indices, _unpool_output_size(input, kernel, stride, padding, output_size), 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """``F.max_unpool3d``: 3-d max pooling undone (MaxUnpool3DBackward0)."""
    kernel, stride, padding = _unpool_arguments(kernel_size, stride, padding, 3)
    return _max_unpool(input, indices, _unpool_output_size(input, kernel, stride, padding, output_size), 3)


# -- power-average pooling and local response normalization: PyTorch's compositions ------------------------------
def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, dims: int):
    """``F.lp_pool{1,2,3}d`` as PyTorch composes it: ``(sign(a)·relu(|a|)·window)^(1/p)`` of the average
    pooling ``a`` of ``input^p`` (PowBackward0, AvgPool*, SignBackward0, AbsBackward0, ReluBackward0,
    MulBackward0, PowBackward0); an infinite ``p`` is max pooling of ``|input|``."""
    from gradviz.ops.unary import relu

    max_pool = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[dims]
    avg_pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[dims]
    window = kernel_size if dims == 1 else int(np.prod(_pair(kernel_size, dims)))
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``F.lp_pool1d``: the ``norm_type``-norm of each window."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``F.lp_pool2d``: the ``norm_type``-norm of each window."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``F.lp_pool3d``: the ``norm_type``-norm of each box."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """``F.local_response_norm`` as PyTorch composes it: ``input / (k + alpha·mean of input² over size
    neighbouring channels)^beta``, the mean an average pooling over the zero-padded channels (2-d for a 3-d
    input, 3-d over a view for more dims)."""
    from gradviz.ops.padding import pad

    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = pad(div.view(sizes[0], 1, sizes[1], sizes[2], -1), (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div
