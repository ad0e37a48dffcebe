"""``F.unfold`` (im2col, Im2ColBackward0) and ``F.fold`` (col2im, Col2ImBackward0), each other's gradient.

``unfold`` reads every ``kernel_size`` block of the zero-padded input (``convolution._windows``, a strided view)
and lays each block out as a column: ``(N, C·kh·kw, L)`` for ``L`` block positions. ``fold`` is its adjoint: each
column added back into the block it came from (``pooling._spread``), the padding cut off, so overlapping blocks
sum. With create_graph each records the other, as PyTorch does.
"""
from __future__ import annotations

import numpy as np

from gradviz.autograd.function import OpFunction
from gradviz.ops.convolution import _back, _windows
from gradviz.ops.pooling import _spread
from gradviz.tensor import Tensor


def _blocks(size, kernel, dilation, padding, stride) -> tuple:
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, d, p, st in zip(size, kernel, dilation, padding,
                                                                                   stride))


def im2col_arrays(x, kernel, dilation, padding, stride):
    """``(N, C, H, W)`` (or ``(C, H, W)``) to ``(N, C·kh·kw, L)``: each block a column."""
    planes = x[None] if x.ndim == 3 else x
    out = _blocks(planes.shape[2:], kernel, dilation, padding, stride)
    padded = np.pad(planes, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    windows = _windows(padded, kernel, stride, dilation, out)  # (N, C, oh, ow, kh, kw)
    columns = windows.transpose(0, 1, 4, 5, 2, 3).reshape(planes.shape[0], -1, out[0] * out[1])
    return columns[0] if x.ndim == 3 else columns


def col2im_arrays(columns, output_size, kernel, dilation, padding, stride):
    """``(N, C·kh·kw, L)`` (or unbatched) to ``(N, C, *output_size)``: each column added into its block."""
    batched = columns[None] if columns.ndim == 2 else columns
    out = _blocks(output_size, kernel, dilation, padding, stride)
    planes = batched.shape[1] // (kernel[0] * kernel[1])
    blocks = batched.reshape((batched.shape[0], planes) + tuple(kernel) + out).transpose(0, 1, 4, 5, 2, 3)
    result = np.ascontiguousarray(_spread(blocks, (batched.shape[0], planes) + tuple(output_size), padding, kernel,
                                          stride, dilation))
    return result[0] if columns.ndim == 2 else result


def _array(tensor):
    return np.asarray(tensor._backend.to_numpy(tensor._data))


class Im2ColBackward0(OpFunction):
    """``im2col``: every block of the input as a column; the gradient folds the columns back (col2im)."""

    inputs = ("self",)
    derivatives = {"self": ("col2im(grad, {self.sym_size(-2), self.sym_size(-1)}, kernel_size, dilation, padding, "
                            "stride)", r"\text{fold}(\bar{y})")}

    def forward(ctx, self, kernel_size, dilation, padding, stride):
        ctx.save(dilation=dilation, kernel_size=kernel_size, padding=padding, self_sym_argsize_minus_1=self.shape[-1],
                 self_sym_argsize_minus_2=self.shape[-2], stride=stride)
        x = _array(self)
        return _back(self._backend, im2col_arrays(x, kernel_size, dilation, padding, stride), x,
                     self._backend.device_of(self._data))

    def backward(ctx, grad):
        g = np.asarray(ctx.backend.to_numpy(grad))
        size = ctx.saved("self_sym_argsize_minus_2", "self_sym_argsize_minus_1")
        kernel, dilation, padding, stride = ctx.saved("kernel_size", "dilation", "padding", "stride")
        return _back(ctx.backend, col2im_arrays(g, tuple(size), kernel, dilation, padding, stride), g,
                     ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        size = ctx.saved("self_sym_argsize_minus_2", "self_sym_argsize_minus_1")
        return Col2ImBackward0.apply(grad, tuple(size), *ctx.saved("kernel_size", "dilation", "padding", "stride"))


class Col2ImBackward0(OpFunction):
    """``col2im``: each column added into its block of the output; the gradient reads the blocks (im2col)."""

    inputs = ("self",)
    derivatives = {"self": ("im2col(grad, kernel_size, dilation, padding, stride)", r"\text{unfold}(\bar{y})")}

    def forward(ctx, self, output_size, kernel_size, dilation, padding, stride):
        ctx.save(dilation=dilation, kernel_size=kernel_size, padding=padding, stride=stride)
        x = _array(self)
        return _back(self._backend, col2im_arrays(x, output_size, kernel_size, dilation, padding, stride), x,
                     self._backend.device_of(self._data))

    def backward(ctx, grad):
        g = np.asarray(ctx.backend.to_numpy(grad))
        kernel, dilation, padding, stride = ctx.saved("kernel_size", "dilation", "padding", "stride")
        return _back(ctx.backend, im2col_arrays(g, kernel, dilation, padding, stride), g, ctx.backend.device_of(grad))

    def backward_graph(ctx, grad):
        return Im2ColBackward0.apply(grad, *ctx.saved("kernel_size", "dilation", "padding", "stride"))


def _pair(value) -> tuple:
    return (value, value) if isinstance(value, int) else tuple(value)


def _check_parameters(kernel, dilation, padding, stride, stride_first: bool) -> None:
    """ATen's checks of the four parameters (``col2im`` checks the stride second, ``im2col`` last)."""
    checks = [
        (kernel, lambda h, w: h > 0 and w > 0, "kernel size should be greater than zero, but got kernel_height: {} "
                                               "kernel_width: {}"),
        (dilation, lambda h, w: h > 0 and w > 0, "dilation should be greater than zero, but got dilation_height: {} "
                                                 "dilation_width: {}"),
        (padding, lambda h, w: h >= 0 and w >= 0, "padding should be non-negative, but got pad_height: {} pad_width: {}"),
    ]
    stride_check = (stride, lambda h, w: h > 0 and w > 0, "stride should be greater than zero, but got "
                                                          "stride_height: {} stride_width: {}")
    checks.insert(1, stride_check) if stride_first else checks.append(stride_check)
    for values, valid, message in checks:
        if not valid(*values):
            raise RuntimeError(message.format(*values))


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``F.unfold``: every ``kernel_size`` block of a 3-d or 4-d input as a column (Im2ColBackward0)."""
    kernel, dilation, padding, stride = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    _check_parameters(kernel, dilation, padding, stride, stride_first=False)
    shape = tuple(input.shape)
    if len(shape) < 3:  # ATen reads size(2) before it checks the dims
        raise IndexError(f"Dimension out of range (expected to be in range of [{-len(shape)}, {len(shape) - 1}], but "
                         "got 2)")
    valid = shape[1] != 0 and shape[2] != 0
    if not ((len(shape) == 3 and shape[0] and valid) or (len(shape) == 4 and valid and shape[3] != 0)):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(shape)}")
    out = _blocks(shape[-2:], kernel, dilation, padding, stride)
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(f"Given input with spatial size ({shape[-2]}, {shape[-1]}), kernel_size=({kernel[0]}, "
                           f"{kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), "
                           f"calculated shape of the array of sliding blocks as ({out[0]}, {out[1]}), but its "
                           "components must be at least one.")
    return Im2ColBackward0.apply(input, kernel, dilation, padding, stride)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``F.fold``: each column of a 2-d or 3-d input added into its block of an ``output_size`` image
    (Col2ImBackward0)."""
    size, kernel, dilation, padding, stride = (_pair(v) for v in (output_size, kernel_size, dilation, padding, stride))
    _check_parameters(kernel, dilation, padding, stride, stride_first=True)
    shape = tuple(input.shape)
    if not ((len(shape) == 2 and shape[0] != 0 and shape[1] != 0) or (len(shape) == 3 and shape[1] != 0
                                                                       and shape[2] != 0)):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(shape)}")
    batched = shape if len(shape) == 3 else (1,) + shape  # ATen checks an unbatched input as a batch of one
    if batched[1] % (kernel[0] * kernel[1]) != 0:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={batched[1]} and kernel_size=({kernel[0]}, {kernel[1]}).")
    blocks = _blocks(size, kernel, dilation, padding, stride)
    given = (f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), dilation=("
             f"{dilation[0]}, {dilation[1]}), padding=({padding[0]}, {padding[1]}), stride=({stride[0]}, {stride[1]}), ")
    if batched[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"{given}expected size of input's dimension 2 to match the calculated number of sliding "
                           f"blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)="
                           f"{batched[2]}.")
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"{given}calculated shape of the array of sliding blocks as ({blocks[0]}, {blocks[1]}), "
                           "which is too small (non-positive)")
    if size[0] < 1 or size[1] < 1:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: output_size=({size[0]}, {size[1]}).")
    return Col2ImBackward0.apply(input, size, kernel, dilation, padding, stride)
