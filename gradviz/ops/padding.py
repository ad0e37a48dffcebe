"""Padding: ``F.pad(x, pad, mode, value)`` and the ``nn`` padding layers' function.

``pad`` lists (before, after) counts for the last dim, then the one before it, and so on; a negative
count crops. Constant padding is one node (ConstantPadNdBackward0), whose backward reads the
gradient back from where the input was placed. ``reflect`` and ``replicate`` are one node each,
named by how many dims they pad (ReflectionPad2DBackward0, ReplicationPad1DBackward0 ...): every
output element reads one input element (mirrored about the edge, or the edge itself), so the
backward adds each output's gradient into the element it read. ``circular`` has no node of its
own: PyTorch copies the input into an empty tensor and then copies the wrapped strips from that
tensor into its borders, so the graph shows CopySlices over SliceBackward0s.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.tensor import Tensor


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


# -- reflect, replicate and circular padding ---------------------------------------------------------
def _source_positions(size: int, before: int, after: int, mode: str) -> list:
    """Which input position each output position reads along one dim: mirrored about the edges
    (``reflect``, the edge itself not repeated) or clamped to them (``replicate``)."""
    positions = []
    for out in range(size + before + after):
        position = out - before
        if mode == "reflect":
            if position < 0:
                position = -position
            elif position >= size:
                position = 2 * (size - 1) - position
        else:
            position = min(max(position, 0), size - 1)
        positions.append(position)
    return positions


class _IndexedPad(OpFunction):
    """``reflect``/``replicate`` padding: each output element is one input element, picked per dim."""

    inputs = ("self",)

    def forward(ctx, self, padding, mode):
        backend = self._backend
        ctx.save(padding=tuple(count if count >= 0 else count + 2**64 for count in padding), self=self)
        out = self._data
        ctx.picks = every = _all_picks(tuple(self.shape), padding, mode)
        ctx.padding, ctx.mode = tuple(padding), mode
        return _padded(backend, out, every)

    def backward(ctx, grad):
        return _read_back(ctx.backend, grad, ctx.picks)

    def backward_graph(ctx, grad):
        """PyTorch's ``reflection_padNd_backward``/``replication_padNd_backward`` as an op of its own
        (``ReflectionPad1DBackwardBackward0`` ...), with edges to ``grad`` and ``self``."""
        self = ctx.saved_graph("self")
        return _BACKWARD_NODES[type(ctx).__name__].apply(grad, self, ctx.padding, ctx.mode)


def _all_picks(shape: tuple, padding: tuple, mode: str) -> list:
    """Per padded dim (last first): ``(axis, the input position each output position reads, size)``."""
    every = []
    for position in range(len(padding) // 2):
        axis = len(shape) - 1 - position
        picks = _source_positions(shape[axis], padding[2 * position], padding[2 * position + 1], mode)
        every.append((axis, picks, shape[axis]))
    return every


def _padded(backend, data, every):
    for axis, picks, _ in every:
        data = backend.take(data, backend.array(picks, _dtype.int64, backend.device_of(data)), axis)
    return data


def _read_back(backend, grad, every):
    """Each output's gradient added into the element it read: per dim, a product with the 0/1
    matrix that says which output read which input."""
    dtype = _dtype.from_any(grad.dtype)
    device = backend.device_of(grad)
    for axis, picks, size in reversed(every):
        rows = [[1.0 if pick == column else 0.0 for column in range(size)] for pick in picks]
        reads = backend.array(rows, dtype, device) if picks else backend.full((0, size), 0, dtype, device)
        order = tuple(d for d in range(grad.ndim) if d != axis) + (axis,)
        moved = backend.matmul(backend.permute(grad, order), reads)
        back = [0] * grad.ndim
        for index, dim in enumerate(order):
            back[dim] = index
        grad = backend.permute(moved, tuple(back))
    return backend.copy(grad)


class _IndexedPadBackward(OpFunction):
    """``reflection_padNd_backward(grad_output, self, padding)`` (or replication's), recorded by a
    ``create_graph=True`` pass: the first derivative. Its own derivative pads ``grad`` again (the first-order
    node), and is zeros for ``self``."""

    inputs = ("grad_output", "self")

    def forward(ctx, grad_output, self, padding, mode):
        ctx.save(padding=tuple(count if count >= 0 else count + 2**64 for count in padding))
        ctx.padding, ctx.mode = tuple(padding), mode
        ctx.picks = _all_picks(tuple(self.shape), padding, mode)
        ctx.self_meta = (tuple(self.shape), self.dtype, self.device)
        return _read_back(grad_output._backend, grad_output._data, ctx.picks)

    def _zeros(ctx):
        return ctx.backend.full(*ctx.self_meta[:1], 0, *ctx.self_meta[1:])

    def backward(ctx, grad):
        padded = _padded(ctx.backend, grad, ctx.picks) if ctx.needs_input_grad[0] else None
        return padded, ctx._zeros() if ctx.needs_input_grad[1] else None

    def backward_graph(ctx, grad):
        padded = _NODES[ctx.mode, len(ctx.padding) // 2].apply(grad, ctx.padding, ctx.mode) \
            if ctx.needs_input_grad[0] else None
        return padded, Tensor._make(ctx._zeros(), backend=ctx.backend) if ctx.needs_input_grad[1] else None


def _pad_node(mode: str, dims: int):
    kind = "Reflection" if mode == "reflect" else "Replication"
    name = f"{kind}Pad{dims}DBackward0"
    formula = f"{mode}_pad{dims}d_backward(grad, self, padding)"
    text = r"\textstyle\sum_{\text{outputs that read } x_i} \bar{y}"
    return type(name, (_IndexedPad,), {"derivatives": {"self": (formula, text)},
                                        "__doc__": f"``F.pad(x, pad, mode={mode!r})`` over the last {dims} dim(s).",
                                        "__module__": __name__})


ReflectionPad1DBackward0 = _pad_node("reflect", 1)
ReflectionPad2DBackward0 = _pad_node("reflect", 2)
ReflectionPad3DBackward0 = _pad_node("reflect", 3)
ReplicationPad1DBackward0 = _pad_node("replicate", 1)
ReplicationPad2DBackward0 = _pad_node("replicate", 2)
ReplicationPad3DBackward0 = _pad_node("replicate", 3)


def _pad_backward_node(first: type) -> type:
    name = first.__name__.replace("Backward0", "BackwardBackward0")
    mode = "reflection" if first.__name__.startswith("Reflection") else "replication"
    dims = first.__name__[len(mode.capitalize()) + 3]
    return type(name, (_IndexedPadBackward,), {
        "derivatives": {"grad_output": (f"{mode}_pad{dims}d_symint(grad, padding)", r"\bar{z}\ \text{padded}"),
                        "self": ("zeros_like(self)", "0")},
        "__doc__": f"``{mode}_pad{dims}d_backward``, the op a recorded backward of {first.__name__} makes.",
        "__module__": __name__})


_NODES = {("reflect", 1): ReflectionPad1DBackward0, ("reflect", 2): ReflectionPad2DBackward0,
          ("reflect", 3): ReflectionPad3DBackward0, ("replicate", 1): ReplicationPad1DBackward0,
          ("replicate", 2): ReplicationPad2DBackward0, ("replicate", 3): ReplicationPad3DBackward0}
_BACKWARD_NODES = {node.__name__: _pad_backward_node(node) for node in _NODES.values()}
ReflectionPad1DBackwardBackward0 = _BACKWARD_NODES["ReflectionPad1DBackward0"]
ReflectionPad2DBackwardBackward0 = _BACKWARD_NODES["ReflectionPad2DBackward0"]
ReflectionPad3DBackwardBackward0 = _BACKWARD_NODES["ReflectionPad3DBackward0"]
ReplicationPad1DBackwardBackward0 = _BACKWARD_NODES["ReplicationPad1DBackward0"]
ReplicationPad2DBackwardBackward0 = _BACKWARD_NODES["ReplicationPad2DBackward0"]
ReplicationPad3DBackwardBackward0 = _BACKWARD_NODES["ReplicationPad3DBackward0"]

SUPPORTED = ("Supported combinations for non-constant padding:\n"
             "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
             "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
             "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _indexed_pad(input, pad: tuple, mode: str):
    dims = len(pad) // 2
    if mode == "reflect":
        for position in range(dims):
            axis = input.ndim - 1 - position
            before, after = pad[2 * position], pad[2 * position + 1]
            if before >= input.shape[axis] or after >= input.shape[axis]:
                raise RuntimeError(f"Argument #{4 + 2 * position}: Padding size should be less than the corresponding "
                                   f"input dimension, but got: padding ({before}, {after}) at dimension {axis} of "
                                   f"input {list(input.shape)}")
    shape = list(input.shape)
    for position in range(dims):
        shape[input.ndim - 1 - position] += pad[2 * position] + pad[2 * position + 1]
    for size in shape:
        if size < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {size}: {shape}")
    return _NODES[mode, dims].apply(input, pad, mode)


def _circular_pad(input, pad: tuple):
    """PyTorch's ``_pad_circular``: the input copied into an empty tensor, then each border filled
    with a copy of the strip at the other end, last dim first (corners are written twice)."""
    from gradviz.ops.shape import slice_along

    dims = len(pad) // 2
    in_shape = tuple(input.shape)
    out_shape = list(in_shape)
    for position in range(dims):
        axis = input.ndim - 1 - position
        before, after = pad[2 * position], pad[2 * position + 1]
        size = in_shape[axis]
        if before > size or after > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + min(before, 0) + min(after, 0) < 0 or size + before + after < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension.")
        out_shape[axis] = size + before + after
    out = Tensor._make(input._backend.full(tuple(out_shape), 0, input.dtype, input.device), backend=input._backend)
    out_slice, in_slice = out, input
    for position in range(dims):
        axis = input.ndim - 1 - position
        before, after = pad[2 * position], pad[2 * position + 1]
        out_slice = slice_along(out_slice, axis, max(before, 0), out_shape[axis] - max(after, 0), 1)
        in_slice = slice_along(in_slice, axis, max(-before, 0), in_shape[axis] - max(-after, 0), 1)
    out_slice.copy_(in_slice)
    for position in range(dims):
        axis = input.ndim - 1 - position
        before, after = pad[2 * position], pad[2 * position + 1]
        size = out_shape[axis]
        if before > 0:
            slice_along(out, axis, 0, before, 1).copy_(
                slice_along(out, axis, size - before - max(after, 0), size - max(after, 0), 1))
        if after > 0:
            slice_along(out, axis, size - after, size, 1).copy_(
                slice_along(out, axis, max(before, 0), max(before, 0) + after, 1))
    return out


def pad(input, pad, mode: str = "constant", value=None):
    """``input`` padded around its last dims: with ``value`` (0 by default, ``mode='constant'``), or
    by reflecting, replicating or wrapping around its own elements."""
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        return ConstantPadNdBackward0.apply(input, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    dims = len(pad) // 2
    if dims not in (1, 2, 3) or input.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                                  + SUPPORTED)
    if mode == "circular":
        return _circular_pad(input, pad)
    return _indexed_pad(input, pad, mode)
