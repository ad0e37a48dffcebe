"""Constant padding (``F.pad(x, pad, value=v)``), one node as in PyTorch (ConstantPadNdBackward0).

``pad`` lists (before, after) counts for the last dim, then the one before it, and so on; a negative
count crops. The backward reads the gradient back from where the input was placed.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction


def padded_regions(shape: tuple, pad: tuple) -> tuple:
    """The padded shape, and the slices that hold the same elements in the output and in the input."""
    out_shape, out_key, in_key = list(shape), [slice(None)] * len(shape), [slice(None)] * len(shape)
    for position in range(len(pad) // 2):
        axis = len(shape) - 1 - position
        before, after = pad[2 * position], pad[2 * position + 1]
        size = shape[axis] + before + after
        if size < 0:  # PyTorch crops with narrow() first, and that is the error it raises
            raise RuntimeError("narrow(): length must be non-negative.")
        out_shape[axis] = size
        start, stop = max(-before, 0), max(shape[axis] - max(-after, 0), max(-before, 0))  # what negative pads keep
        in_key[axis] = slice(start, stop)
        out_key[axis] = slice(max(before, 0), max(before, 0) + stop - start)
    return tuple(out_shape), tuple(out_key), tuple(in_key)


class ConstantPadNdBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("constant_pad_nd_backward(grad, pad)", r"\bar{y}\ \text{with the padding cut off}")}

    def forward(ctx, self, pad, value=0):
        backend = self._backend
        out_shape, out_key, in_key = padded_regions(tuple(self.shape), tuple(pad))
        ctx.save(pad=tuple(count if count >= 0 else count + 2**64 for count in pad))  # as PyTorch reads it back
        ctx.keys = (out_key, in_key, tuple(self.shape))
        out = backend.full(out_shape, value, self.dtype, self.device)
        return backend.assign(out, backend.getitem(self._data, in_key), out_key)

    def backward(ctx, grad):
        backend = ctx.backend
        out_key, in_key, shape = ctx.keys
        result = backend.full(shape, 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return backend.assign(result, backend.getitem(grad, out_key), in_key)

    def backward_graph(ctx, grad):
        """Cutting the padding off is padding by minus the same counts: PyTorch records another
        ConstantPadNdBackward0."""
        negated = tuple(-_signed(count) for count in ctx.saved("pad"))
        return ConstantPadNdBackward0.apply(grad, negated, 0)


def _signed(count: int) -> int:
    return count - 2**64 if count >= 2**63 else count


def pad(input, pad, mode: str = "constant", value=None):
    """``input`` with ``value`` (0 by default) added around its last dims; PyTorch's ``mode='constant'``."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode != "constant":
        raise NotImplementedError(f"gradviz's pad implements mode='constant' only, not mode={mode!r}")
    return ConstantPadNdBackward0.apply(input, tuple(pad), 0 if value is None else value)
