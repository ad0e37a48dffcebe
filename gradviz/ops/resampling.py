"""Resampling: ``F.interpolate`` (``nn.Upsample``), ``F.pixel_shuffle``/``pixel_unshuffle`` and ``F.channel_shuffle``,
one node each as PyTorch records them.

Every interpolation mode PyTorch computes separably (nearest, nearest-exact, linear, bilinear, trilinear, bicubic)
is, along each spatial dim, a weighted sum of a few input positions per output position: one (nearest), two
(linear) or four (cubic, with indices clamped to the edge). ``taps`` works out those positions and weights as
PyTorch's CPU kernels do (the same float arithmetic: source index, scale, ``floor``, the cubic convolution with
``A = -0.75``), so an output element is the same weighted sum PyTorch's is. The forward applies the dims from the
last one back (PyTorch's kernels interpolate along the width first), the products and sums in PyTorch's order. The
gradient is the transposed map: each output's gradient goes back to the positions it read, times their weights.
The double backward of an upsample is the upsample itself (the map is linear), recorded as PyTorch's
``Upsample...BackwardBackward0``. ``mode='area'`` is adaptive average pooling, as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from gradviz.autograd.function import OpFunction

_CUBIC_A = -0.75  # the cubic convolution's parameter in PyTorch's bicubic kernel
_SPATIAL_NAMES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


# -- where each output position reads, and with what weight ------------------------------------------------------
def _scale(in_size: int, out_size: int, align_corners: bool, scale, real) -> float:
    """PyTorch's ``area_pixel_compute_scale``, in the kernel's float type ``real``."""
    if align_corners:
        return real((in_size - 1) / (out_size - 1)) if out_size > 1 else real(0)
    return real(1.0 / scale) if scale is not None and scale > 0 else real(in_size) / real(out_size)


def taps(in_size: int, out_size: int, mode: str, align_corners: bool, scale, real, shortcut: bool = False) -> tuple:
    """``(indices, weights)``: for each output position along one dim the input positions it reads (an int array
    ``(taps, out_size)``) and their weights (``(taps, out_size)`` in ``real``), as PyTorch's CPU kernel computes
    them for ``mode`` (nearest, nearest-exact, linear, cubic). ``shortcut``: PyTorch's 2-d nearest kernel copies an
    output as long as the input (and halves the index of one twice as long) whatever the scale factor; its 1-d and
    3-d kernels compute the index from the scale (1 -> 2 by 1.25 reads element 0 twice)."""
    out = np.arange(out_size)
    if mode == "linear" and out_size == in_size:  # PyTorch's linear kernels copy a dim that keeps its size, whatever
        return out[None, :], np.ones((1, out_size), real)  # the scale factor (1.25 on 2 elements: a copy)
    if shortcut and mode == "nearest" and out_size in (in_size, 2 * in_size):
        return (out if out_size == in_size else out >> 1)[None, :], np.ones((1, out_size), real)
    if mode in ("nearest", "nearest-exact"):  # (PyTorch computes the scale and index in float, whatever the dtype)
        step = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(in_size) / np.float32(out_size)
        position = out.astype(np.float32) + np.float32(0.5) if mode == "nearest-exact" else out.astype(np.float32)
        index = np.minimum(np.floor(position * step).astype(np.int64), in_size - 1)
        return index[None, :], np.ones((1, out_size), real)
    step = _scale(in_size, out_size, align_corners, scale, real)
    position = out.astype(real)
    source = step * position if align_corners else step * (position + real(0.5)) - real(0.5)
    if mode == "linear":
        if not align_corners:
            source = np.maximum(source, real(0))
        low = source.astype(np.int64)  # (non-negative: truncation is floor)
        high = low + (low < in_size - 1)
        weight_high = np.clip(source - low.astype(real), real(0), real(1)).astype(real)
        return np.stack([low, high]), np.stack([real(1) - weight_high, weight_high])
    floor = np.floor(source)
    t = (source - floor).astype(real)
    a = real(_CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + real(2)) * x - (a + real(3))) * x * x + real(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - real(5) * a) * x + real(8) * a) * x - real(4) * a

    weights = np.stack([far(t + real(1)), near(t), near(real(1) - t), far(real(2) - t)]).astype(real)
    first = floor.astype(np.int64) - 1
    indices = np.clip(np.stack([first + k for k in range(4)]), 0, in_size - 1)
    return indices, weights


def _dim_mode(mode: str) -> str:
    return {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)


def _plan(in_shape: tuple, output_size: tuple, mode: str, align_corners: bool, scales: tuple, real) -> list:
    """The taps of each spatial dim, last dim first (the order the forward applies them)."""
    spatial = len(output_size)
    plan = []
    for d in reversed(range(spatial)):
        axis = len(in_shape) - spatial + d
        plan.append((axis,) + taps(in_shape[axis], output_size[d], _dim_mode(mode), bool(align_corners), scales[d], real,
                                   shortcut=spatial == 2))
    return plan


def _real(dtype):
    return np.float64 if dtype == np.float64 else np.float32


def resample(x: np.ndarray, output_size: tuple, mode: str, align_corners: bool, scales: tuple) -> np.ndarray:
    """The interpolated array: along each dim (the last first) each output is ``Σ_k x[index_k] · weight_k``, summed
    left to right as PyTorch's kernel sums (float16 computed in float32 and rounded once, as PyTorch's opmath)."""
    real = _real(x.dtype)
    out = x.astype(real) if x.dtype != real else x
    for axis, indices, weights in _plan(x.shape, output_size, mode, align_corners, scales, real):
        shape = [1] * out.ndim
        shape[axis] = -1
        total = None
        for index, weight in zip(indices, weights):
            term = np.take(out, index, axis=axis)
            if mode not in ("nearest", "nearest-exact"):
                term = term * weight.reshape(shape)
            total = term if total is None else total + term
        out = total
    return np.ascontiguousarray(out.astype(x.dtype, copy=False))


def resample_grad(grad: np.ndarray, in_shape: tuple, mode: str, align_corners: bool, scales: tuple) -> np.ndarray:
    """The gradient of ``resample``: each output's gradient back to the input positions it read, times their
    weights (the transposed map, dim by dim in reverse)."""
    real = _real(grad.dtype)
    output_size = tuple(grad.shape[len(in_shape) - len(scales):])
    plan = _plan(tuple(in_shape), output_size, mode, align_corners, scales, real)
    out = grad.astype(real) if grad.dtype != real else grad
    for axis, indices, weights in reversed(plan):
        matrix = np.zeros((out.shape[axis], in_shape[axis]), real)  # (out positions, in positions)
        np.add.at(matrix, (np.arange(out.shape[axis])[None, :].repeat(len(indices), 0), indices), weights)
        out = np.moveaxis(np.tensordot(np.moveaxis(out, axis, -1), matrix, axes=([-1], [0])), -1, axis)
    return np.ascontiguousarray(out.astype(grad.dtype, copy=False))


# -- the nodes ---------------------------------------------------------------------------------------------------
class _Upsample(OpFunction):
    """One upsample op: ``mode`` and ``spatial`` (1, 2 or 3 dims) set by each subclass."""

    inputs = ("self",)
    mode, spatial = "nearest", 1

    # (``forward`` is each subclass's own, made by ``_forwards``: under no_grad ``ctx`` is not a node of the class)

    def backward(ctx, grad):
        in_shape, _, align_corners, scales = ctx.plan
        return resample_grad(grad, in_shape, type(ctx).mode, align_corners, scales)

    def backward_graph(ctx, grad):
        in_shape, output_size, align_corners, scales = ctx.plan
        return type(ctx).double.apply(grad, in_shape, output_size, align_corners, scales)


class _UpsampleBackward(OpFunction):
    """An upsample's gradient as an op of its own (``create_graph=True``); its own gradient is the upsample."""

    inputs = ("grad_output",)
    single = _Upsample


    def backward(ctx, grad):
        _, output_size, align_corners, scales = ctx.plan
        return resample(grad, output_size, type(ctx).single.mode, align_corners, scales)

    def backward_graph(ctx, grad):
        _, output_size, align_corners, scales = ctx.plan
        return type(ctx).single.apply(grad, output_size, align_corners, scales)


def _forwards(single) -> tuple:
    """The ``forward`` of an upsample op and of its recorded gradient, for the op class ``single``."""
    mode = single.mode

    def forward(ctx, self, output_size, align_corners, scales):
        ctx.save(**_saved(single, output_size, align_corners, scales), self_sym_sizes=tuple(self.shape))
        ctx.plan = (tuple(self.shape), tuple(output_size), bool(align_corners), tuple(scales))
        return resample(self._data, tuple(output_size), mode, bool(align_corners), tuple(scales))

    def gradient_forward(ctx, grad_output, in_shape, output_size, align_corners, scales):
        ctx.save(**_saved(single, output_size, align_corners, scales))
        ctx.plan = (tuple(in_shape), tuple(output_size), bool(align_corners), tuple(scales))
        return resample_grad(grad_output._data, tuple(in_shape), mode, bool(align_corners), tuple(scales))

    return forward, gradient_forward


def _saved(cls, output_size, align_corners, scales) -> dict:
    """What PyTorch's node saves: ``align_corners`` (interpolating modes), ``output_size`` and one scale per dim."""
    saved = {} if cls.mode in ("nearest", "nearest-exact") else {"align_corners": bool(align_corners)}
    saved["output_size"] = tuple(output_size)
    saved.update(zip(_SPATIAL_NAMES[cls.spatial], scales))
    return saved


def _node_name(mode: str, spatial: int) -> str:
    base = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear", "bilinear": "Bilinear",
            "trilinear": "Trilinear", "bicubic": "Bicubic"}[mode]
    return f"Upsample{base}{spatial}D"


UPSAMPLE_OPS = {}  # (mode, spatial dims) -> the op class
for _mode, _dims in (("nearest", (1, 2, 3)), ("nearest-exact", (1, 2, 3)), ("linear", (1,)), ("bilinear", (2,)),
                     ("bicubic", (2,)), ("trilinear", (3,))):
    for _spatial in _dims:
        _name = _node_name(_mode, _spatial)
        _kernel = f"upsample_{_mode.replace('-', '_')}{_spatial}d"  # PyTorch's kernel (upsample_bilinear2d, ...)
        _options = ("align_corners, " if _mode not in ("nearest", "nearest-exact") else "") + \
            ", ".join(_SPATIAL_NAMES[_spatial])
        _single = type(f"{_name}Backward0", (_Upsample,), {
            "mode": _mode, "spatial": _spatial, "__module__": __name__,
            "__doc__": f"``F.interpolate(mode='{_mode}')`` on {_spatial} spatial dim(s).",
            "derivatives": {"self": (f"{_kernel}_backward(grad, output_size, self.sizes(), {_options})",
                                     r"\textstyle\sum_{\text{outputs reading } x} w\,\bar{y}")}})
        _single.double = type(f"{_name}BackwardBackward0", (_UpsampleBackward,), {
            "single": _single, "__module__": __name__, "__doc__": f"The recorded gradient of {_single.__name__}.",
            "derivatives": {"grad_output": (f"{_kernel}(grad, output_size, {_options})", r"\mathrm{upsample}(\bar{y})")}})
        _single.forward, _single.double.forward = _forwards(_single)
        UPSAMPLE_OPS[(_mode, _spatial)] = _single
        globals()[_single.__name__] = _single
        globals()[_single.double.__name__] = _single.double


# -- F.interpolate ------------------------------------------------------------------------------------------------
def _as_tuple(value, count: int):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * count


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False):
    """Resample the spatial dims (all after batch and channels) to ``size`` or by ``scale_factor``."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    spatial = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != spatial:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please "
                                 "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 "...,oK) format.")
        output_size = _as_tuple(size, max(spatial, 0))
        scale_factors = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)) and len(scale_factor) != spatial:
            raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                             f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        output_size = None
        scale_factors = _as_tuple(scale_factor, max(spatial, 0))
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = tuple(math.floor(float(input.shape[i + 2]) * float(scale_factors[i])) for i in range(spatial))
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if antialias:
        raise NotImplementedError("gradviz cannot yet interpolate with antialias=True (PyTorch's "
                                  f"Upsample{'Bilinear' if mode == 'bilinear' else 'Bicubic'}2DAaBackward0): "
                                  "use antialias=False")
    supported = {("nearest", 1), ("nearest", 2), ("nearest", 3), ("nearest-exact", 1), ("nearest-exact", 2),
                 ("nearest-exact", 3), ("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3), ("area", 1),
                 ("area", 2), ("area", 3)}
    if (mode, spatial) not in supported:
        wanted = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}.get(mode)
        if wanted is not None and input.dim() in (3, 4, 5):
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {wanted}D input")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the "
                                  "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if output_size is None:
        output_size = tuple(math.floor(float(input.shape[i + 2]) * float(scale_factors[i])) for i in range(spatial))
    _check_sizes(input, output_size)
    if mode == "area":
        from gradviz.ops import pooling

        pool = {1: pooling.adaptive_avg_pool1d, 2: pooling.adaptive_avg_pool2d, 3: pooling.adaptive_avg_pool3d}[spatial]
        return pool(input, output_size)
    scales = tuple(None if scale_factors is None else float(s) for s in (scale_factors or (None,) * spatial))
    return UPSAMPLE_OPS[(mode, spatial)].apply(input, output_size, align_corners, scales)


def _check_sizes(input, output_size) -> None:
    """PyTorch's check that every spatial size, in and out, is positive (its message names them D, H, W)."""
    names = ("D", "H", "W")[3 - len(output_size):]
    in_sizes = tuple(input.shape[2:])
    if any(size <= 0 for size in in_sizes + tuple(output_size)):
        shown_in = ", ".join(f"{name}: {size}" for name, size in zip(names, in_sizes))
        shown_out = ", ".join(f"{name}: {size}" for name, size in zip(names, output_size))
        joined = " and " if len(names) == 1 else " "  # (PyTorch's 2-d and 3-d messages have no "and")
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({shown_in}){joined}output "
                           f"({shown_out})")


# -- pixel and channel shuffles -----------------------------------------------------------------------------------
def _pixel_shuffle(x: np.ndarray, factor: int) -> np.ndarray:
    *batch, channels, height, width = x.shape
    out_channels = channels // (factor * factor)
    blocks = x.reshape(*batch, out_channels, factor, factor, height, width)
    lead = len(batch)
    order = tuple(range(lead)) + (lead, lead + 3, lead + 1, lead + 4, lead + 2)
    return np.ascontiguousarray(blocks.transpose(order)).reshape(*batch, out_channels, height * factor, width * factor)


def _pixel_unshuffle(x: np.ndarray, factor: int) -> np.ndarray:
    *batch, channels, height, width = x.shape
    blocks = x.reshape(*batch, channels, height // factor, factor, width // factor, factor)
    lead = len(batch)
    order = tuple(range(lead)) + (lead, lead + 2, lead + 4, lead + 1, lead + 3)
    return np.ascontiguousarray(blocks.transpose(order)).reshape(*batch, channels * factor * factor, height // factor,
                                                                 width // factor)


class PixelShuffleBackward0(OpFunction):
    """``(*, C·r², H, W) -> (*, C, H·r, W·r)``: each group of ``r²`` channels becomes an ``r x r`` block of pixels."""

    inputs = ("self",)
    derivatives = {"self": ("pixel_unshuffle(grad, upscale_factor)", r"\mathrm{pixel\_unshuffle}(\bar{y})")}

    def forward(ctx, self, upscale_factor):
        ctx.save(upscale_factor=upscale_factor)
        return _pixel_shuffle(self._data, upscale_factor)

    def backward(ctx, grad):
        return _pixel_unshuffle(grad, ctx.saved("upscale_factor"))

    def backward_graph(ctx, grad):
        return PixelUnshuffleBackward0.apply(grad, ctx.saved("upscale_factor"))


class PixelUnshuffleBackward0(OpFunction):
    """``(*, C, H·r, W·r) -> (*, C·r², H, W)``: each ``r x r`` block of pixels becomes ``r²`` channels."""

    inputs = ("self",)
    derivatives = {"self": ("pixel_shuffle(grad, downscale_factor)", r"\mathrm{pixel\_shuffle}(\bar{y})")}

    def forward(ctx, self, downscale_factor):
        ctx.save(downscale_factor=downscale_factor)
        return _pixel_unshuffle(self._data, downscale_factor)

    def backward(ctx, grad):
        return _pixel_shuffle(grad, ctx.saved("downscale_factor"))

    def backward_graph(ctx, grad):
        return PixelShuffleBackward0.apply(grad, ctx.saved("downscale_factor"))


def _check_shuffle(input, factor: int, name: str, what: str) -> None:
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input, upscale_factor: int):
    """Rearrange ``(*, C·r², H, W)`` into ``(*, C, H·r, W·r)`` (sub-pixel convolution's last step)."""
    _check_shuffle(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    channels = input.shape[-3]
    if channels % (upscale_factor * upscale_factor):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={channels} is not divisible by "
                           f"{upscale_factor * upscale_factor}")
    return PixelShuffleBackward0.apply(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor: int):
    """Rearrange ``(*, C, H·r, W·r)`` into ``(*, C·r², H, W)``, the inverse of ``pixel_shuffle``."""
    _check_shuffle(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    for name, size in (("height", input.shape[-2]), ("width", input.shape[-1])):
        if size % downscale_factor:
            dim = -2 if name == "height" else -1
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but input.size"
                               f"({dim})={size} is not divisible by {downscale_factor}")
    return PixelUnshuffleBackward0.apply(input, downscale_factor)


def _channel_shuffle(x: np.ndarray, groups: int) -> np.ndarray:
    batch, channels = x.shape[0], x.shape[1]
    grouped = x.reshape((batch, groups, channels // groups) + x.shape[2:])
    return np.ascontiguousarray(np.swapaxes(grouped, 1, 2)).reshape(x.shape)


class ChannelShuffleBackward0(OpFunction):
    """The channels, in ``groups`` groups, interleaved: channel ``g·k + i`` moves to ``i·groups + g``."""

    inputs = ("self",)
    derivatives = {"self": ("channel_shuffle(grad, grad.size(1) / groups)", r"\mathrm{unshuffle}(\bar{y})")}

    def forward(ctx, self, groups):
        ctx.save(groups=groups)
        return _channel_shuffle(self._data, groups)

    def backward(ctx, grad):
        return _channel_shuffle(grad, grad.shape[1] // ctx.saved("groups"))

    def backward_graph(ctx, grad):
        return ChannelShuffleBackward0.apply(grad, grad.shape[1] // ctx.saved("groups"))


def channel_shuffle(input, groups: int):
    """Interleave the channels of ``groups`` groups (ShuffleNet's channel shuffle)."""
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    channels = input.shape[1]
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           "groups.")
    return ChannelShuffleBackward0.apply(input, groups)
