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
def _pair(value) -> tuple:
    """How PyTorch's argument parser shows an ``int[2]`` argument: an int repeated, a sequence kept, None empty."""
    if value is None:
        return ()
    return (value, value) if isinstance(value, int) else tuple(value)


def _two(values: tuple, default: tuple) -> tuple:
    """ATen's reading of a 2-d parameter: one value for both dims, none for the default."""
    if not values:
        return default
    return (values[0], values[0]) if len(values) == 1 else tuple(values)


def pooled_size(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """PyTorch's ``pooling_output_shape``: with ``ceil_mode`` a last window may start in the right padding
    only if it starts inside the input or the left padding."""
    out = (size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _as_planes(array):
    """``(N, C, H, W)`` from a 3-d ``(C, H, W)`` or a 4-d array (a view)."""
    return array[None] if array.ndim == 3 else array


def _padded(planes, padding, out, kernel, stride, dilation, fill):
    """The planes padded by ``padding`` (and past the end as far as ceil_mode's last windows read) with ``fill``."""
    pads = []
    for axis in range(2):
        reach = (out[axis] - 1) * stride[axis] + dilation[axis] * (kernel[axis] - 1) + 1
        size = planes.shape[2 + axis]
        pads.append((padding[axis], max(reach - size - padding[axis], padding[axis])))
    return np.pad(planes, ((0, 0), (0, 0)) + tuple(pads), constant_values=fill)


def _spread(columns, shape, padding, kernel, stride, dilation):
    """The adjoint of reading windows: ``columns (N, C, oh, ow, kh, kw)`` added into an array of the padded
    ``shape``'s planes at the positions each kernel offset read, then the padding cut off."""
    out = columns.shape[2:4]
    reach = [(out[a] - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 for a in range(2)]
    padded = np.zeros(tuple(shape[:2]) + tuple(max(shape[2 + a] + 2 * padding[a], reach[a]) for a in range(2)),
                      dtype=columns.dtype)
    for offset in itertools.product(range(kernel[0]), range(kernel[1])):
        reached = tuple(slice(k * d, k * d + st * (o - 1) + 1, st)
                        for k, d, st, o in zip(offset, dilation, stride, out))
        padded[(slice(None), slice(None)) + reached] += columns[(Ellipsis,) + offset]
    return padded[:, :, padding[0]:padding[0] + shape[2], padding[1]:padding[1] + shape[3]]


# -- max pooling -------------------------------------------------------------------------------------------------
def max_pool_arrays(x, kernel, stride, padding, dilation, ceil_mode):
    """``(values, indices)`` of 2-d max pooling over the last two dims of a 3-d or 4-d array."""
    planes = _as_planes(x)
    out = tuple(pooled_size(planes.shape[2 + a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode)
                for a in range(2))
    fill = -np.inf if planes.dtype.kind == "f" else np.iinfo(planes.dtype).min
    windows = _windows(_padded(planes, padding, out, kernel, stride, dilation, fill), kernel, stride, dilation, out)
    flat = windows.reshape(windows.shape[:4] + (-1,))
    position = np.argmax(flat, axis=-1)
    values = np.take_along_axis(flat, position[..., None], axis=-1)[..., 0]
    if planes.dtype.kind == "f" and np.isnan(values).any():  # PyTorch's scan keeps a window's last NaN
        nan = np.isnan(flat)
        last = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        position = np.where(nan.any(axis=-1), last, position)
    rows = np.arange(out[0]).reshape(-1, 1) * stride[0] - padding[0] + (position // kernel[1]) * dilation[0]
    cols = np.arange(out[1]) * stride[1] - padding[1] + (position % kernel[1]) * dilation[1]
    indices = (rows * planes.shape[3] + cols).astype(np.int64)
    if x.ndim == 3:
        return values[0], indices[0]
    return values, indices


def max_unpool_grad(grad, indices, shape):
    """Each gradient added at its saved index of the input's plane: an array shaped ``shape``."""
    plane = shape[-2] * shape[-1]
    planes = int(np.prod(shape[:-2]))
    flat_grad = grad.reshape(planes, -1)
    targets = (indices.reshape(planes, -1) + np.arange(planes).reshape(-1, 1) * plane).reshape(-1)
    summed = np.bincount(targets, weights=flat_grad.reshape(-1), minlength=planes * plane)
    return summed.astype(grad.dtype, copy=False).reshape(shape)


class MaxPool2DWithIndicesBackward0(OpFunction):
    """``max_pool2d_with_indices``: each output is its window's largest element; ``result1`` says which."""

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
        result = max_unpool_grad(g, np.asarray(ctx.backend.to_numpy(indices)), x.shape)
        return _back(ctx.backend, result, g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        self, indices = ctx.saved_graph("self", "result1")
        return MaxPool2DWithIndicesBackwardBackward0.apply(grad, self, indices)


class MaxPool2DWithIndicesBackwardBackward0(OpFunction):
    """``max_pool2d_with_indices_backward(grad_output, self, ...)``: the gradient put back at the saved indices.
    Its own gradient gathers at the same indices (PyTorch's ``max_pool_double_backward``); the input gets zeros."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("max_pool_double_backward(grad, indices, 2)", r"\bar{y}\ \text{at the maxima}"),
                   "self": ("zeros_like(self)", "0")}

    def forward(ctx, grad_output, self, indices):
        ctx.save(indices=indices)
        ctx.shape = tuple(self.shape)
        ctx.primals = (grad_output._data,)  # what the snapshot's formula evaluation reads the gradients' dtype from
        # (its only saved tensor holds integers)
        g = np.asarray(grad_output._backend.to_numpy(grad_output._data))
        result = max_unpool_grad(g, np.asarray(indices._backend.to_numpy(indices._data)), tuple(self.shape))
        return _back(grad_output._backend, result, g, grad_output._backend.device_of(grad_output._data))

    def backward(ctx, grad):
        indices = np.asarray(ctx.backend.to_numpy(ctx.saved("indices")))
        g = np.asarray(ctx.backend.to_numpy(grad))
        planes = g.reshape((-1, ctx.shape[-2] * ctx.shape[-1]))
        gathered = np.take_along_axis(planes, indices.reshape(planes.shape[0], -1), axis=1).reshape(indices.shape)
        device = ctx.backend.device_of(grad)
        return (_back(ctx.backend, gathered, g, device) if ctx.needs_input_grad[0] else None,
                _back(ctx.backend, np.zeros(ctx.shape, g.dtype), g, device) if ctx.needs_input_grad[1] else None)


def _check_pool_input(input) -> None:
    if input.ndim not in (3, 4) or any(size == 0 for size in input.shape[1:]):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")


def _checked_output(input, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    """The output's size, after PyTorch's checks in its order (``pooling_output_shape`` per dim, then
    ``pool2d_shape_check``)."""
    out = []
    for size, k, s, p, d in zip(input.shape[-2:], kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                               f"and dilation={d}")
        out.append(pooled_size(size, k, s, p, d, ceil_mode))
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


def _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    """``max_pool2d_with_indices``: (output, indices)."""
    shown = [_pair(v) for v in (kernel_size, stride, padding, dilation)]
    kernel = _two(shown[0], None)
    if kernel is None or len(shown[0]) not in (1, 2):
        raise RuntimeError("max_pool2d: kernel_size must either be a single int, or a tuple of two ints")
    stride_, padding_, dilation_ = _two(shown[1], kernel), _two(shown[2], None), _two(shown[3], None)
    _check_pool_input(input)
    _checked_output(input, kernel, stride_, padding_, dilation_, ceil_mode)
    x = np.asarray(input._backend.to_numpy(input._data))
    values, indices = max_pool_arrays(x, kernel, stride_, padding_, dilation_, ceil_mode)
    device = input._backend.device_of(input._data)
    index_tensor = Tensor._make(_back(input._backend, indices, indices, device), backend=input._backend)
    values = _back(input._backend, values, x, device)
    output = MaxPool2DWithIndicesBackward0.apply(input, *shown, bool(ceil_mode), (values, index_tensor))
    return output, index_tensor


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``F.max_pool2d``: the largest element of each ``kernel_size`` window (MaxPool2DWithIndicesBackward0)."""
    output, indices = _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (output, indices) if return_indices else output


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``F.max_pool2d_with_indices``: ``max_pool2d``'s output and where each maximum was."""
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


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
    out = tuple(pooled_size(shape[-2 + a], kernel[a], stride[a], padding[a], 1, ceil_mode) for a in range(2))
    if divisor_override:
        divisor = np.full(out, float(divisor_override))
    else:
        rows = _divisors(shape[-2], out[0], kernel[0], stride[0], padding[0], count_include_pad)
        cols = _divisors(shape[-1], out[1], kernel[1], stride[1], padding[1], count_include_pad)
        divisor = np.outer(rows, cols).astype(np.float64)
    return out, divisor


def avg_pool_arrays(x, kernel, stride, padding, out, divisor):
    planes = _as_planes(x)
    windows = _windows(_padded(planes, padding, out, kernel, stride, (1, 1), 0), kernel, stride, (1, 1), out)
    result = (windows.sum(axis=(-2, -1)) / divisor).astype(x.dtype, copy=False)
    return result[0] if x.ndim == 3 else result


def avg_pool_grad(grad, shape, kernel, stride, padding, divisor):
    planes = _as_planes(grad)
    share = (planes / divisor).astype(grad.dtype, copy=False)
    columns = np.broadcast_to(share[..., None, None], share.shape + tuple(kernel))
    full = (tuple(shape) if len(shape) == 4 else (1,) + tuple(shape))
    result = _spread(columns, full, padding, kernel, stride, (1, 1))
    return np.ascontiguousarray(result[0] if len(shape) == 3 else result)


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
        return AvgPool2DBackwardBackward0.apply(grad, self, *shown, ctx.geometry)


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


def _avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    shown = [_pair(v) for v in (kernel_size, stride, padding)]
    kernel = _two(shown[0], None)
    if kernel is None or len(shown[0]) not in (1, 2):
        raise RuntimeError("avg_pool2d: kernel_size must either be a single int, or a tuple of two ints")
    stride_, padding_ = _two(shown[1], kernel), _two(shown[2], None)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool_input(input)
    _checked_output(input, kernel, stride_, padding_, (1, 1), ceil_mode)
    out, divisor = avg_geometry(tuple(input.shape), kernel, stride_, padding_, ceil_mode, count_include_pad, divisor_override)
    x = np.asarray(input._backend.to_numpy(input._data))
    values = _back(input._backend, avg_pool_arrays(x, kernel, stride_, padding_, out, divisor), x,
                   input._backend.device_of(input._data))
    return AvgPool2DBackward0.apply(input, *shown, bool(ceil_mode), bool(count_include_pad), divisor_override,
                                    (values, (kernel, stride_, padding_, divisor)))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """``F.avg_pool2d``: the mean of each ``kernel_size`` window (AvgPool2DBackward0)."""
    return _avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


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


# -- adaptive average pooling -------------------------------------------------------------------------------------
def _window_matrix(size: int, out: int, dtype) -> np.ndarray:
    """``(out, size)``: row ``i`` averages positions ``floor(i·size/out)`` to ``ceil((i+1)·size/out)``."""
    matrix = np.zeros((out, size), dtype=dtype)
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def adaptive_avg_arrays(x, out):
    rows, cols = _window_matrix(x.shape[-2], out[0], x.dtype), _window_matrix(x.shape[-1], out[1], x.dtype)
    return np.matmul(np.matmul(rows, x), cols.T)


def adaptive_avg_grad(grad, shape):
    rows, cols = _window_matrix(shape[-2], grad.shape[-2], grad.dtype), _window_matrix(shape[-1], grad.shape[-1],
                                                                                        grad.dtype)
    return np.matmul(np.matmul(rows.T, grad), cols)


class AdaptiveAvgPool2DBackward0(OpFunction):
    """``_adaptive_avg_pool2d``: the input's last two dims averaged down to ``output_size`` windows."""

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
        return _back(ctx.backend, adaptive_avg_grad(g, x.shape), g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        return AdaptiveAvgPool2DBackwardBackward0.apply(grad, ctx.saved_graph("self"))


class AdaptiveAvgPool2DBackwardBackward0(OpFunction):
    """``_adaptive_avg_pool2d_backward(grad_output, self)``; its own gradient is adaptive pooling again."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("_adaptive_avg_pool2d(grad, {grad_output.sym_size(-2), grad_output.sym_size(-1)})",
                                   r"\text{adaptive\_avg\_pool2d}(\bar{y})"),
                   "self": ("zeros_like(self)", "0")}

    def forward(ctx, grad_output, self):
        ctx.save(grad_output_sym_argsize_minus_1=grad_output.shape[-1],
                 grad_output_sym_argsize_minus_2=grad_output.shape[-2])
        ctx.shape = tuple(self.shape)
        g = np.asarray(grad_output._backend.to_numpy(grad_output._data))
        return _back(grad_output._backend, adaptive_avg_grad(g, tuple(self.shape)), g,
                     grad_output._backend.device_of(grad_output._data))

    def backward(ctx, grad):
        g = np.asarray(ctx.backend.to_numpy(grad))
        out = ctx.saved("grad_output_sym_argsize_minus_2", "grad_output_sym_argsize_minus_1")
        device = ctx.backend.device_of(grad)
        return (_back(ctx.backend, adaptive_avg_arrays(g, tuple(out)), g, device) if ctx.needs_input_grad[0] else None,
                _back(ctx.backend, np.zeros(ctx.shape, g.dtype), g, device) if ctx.needs_input_grad[1] else None)


def _adaptive_avg_pool2d(input, output_size):
    """ATen's ``adaptive_avg_pool2d``: a 1x1 output is ``mean((-1, -2), keepdim=True)`` (MeanBackward1)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with dimension {dim} being empty")
    if tuple(output_size) == (1, 1):
        from gradviz.ops.reduction import mean

        return mean(input, (-1, -2), keepdim=True)
    return AdaptiveAvgPool2DBackward0.apply(input, tuple(output_size))


def adaptive_avg_pool2d(input, output_size):
    """``F.adaptive_avg_pool2d``: ``output_size`` windows (None keeps that dim's size) averaged
    (AdaptiveAvgPool2DBackward0)."""
    sizes = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    sizes = tuple(input.shape[-2 + i] if size is None else size for i, size in enumerate(sizes))
    return _adaptive_avg_pool2d(input, sizes)


def adaptive_avg_pool1d(input, output_size):
    """``F.adaptive_avg_pool1d``: PyTorch's 2-d adaptive pooling of ``input.unsqueeze(-2)`` to ``(1, size)``,
    then ``squeeze(-2)``."""
    from gradviz.ops.shape import squeeze, unsqueeze

    size = _single(output_size, "output_size", "adaptive_avg_pool1d")
    _check_1d_input(input, "adaptive_avg_pool1d")
    return squeeze(_adaptive_avg_pool2d(unsqueeze(input, -2), (1, size[0])), -2)
