"""Copies: ``clone``, ``to(dtype/device)``, and the recorded forms of ``fill_`` and ``copy_``."""
from __future__ import annotations

from gradviz import _dtype, backends
from gradviz.autograd.function import Function
from gradviz.tensor import Tensor


class CloneBackward0(Function):
    inputs = ("self",)
    derivatives = {"self": ("grad", r"\bar{y}")}

    def forward(ctx, self):
        return self._backend.copy(self._data)

    def backward(ctx, grad):
        return grad


class ToCopyBackward0(Function):
    """A copy to another dtype or device; the gradient goes back to the original's."""

    inputs = ("self",)
    derivatives = {"self": ("_to_copy_backward(grad, self.options())", r"\bar{y}")}

    def forward(ctx, self, device, dtype):
        ctx.source = (self._backend, self.dtype, self.device)
        target = backends.for_device(device)
        values = self._data
        if target is not self._backend:
            values = target.array(self._backend.to_numpy(values), None, device)
        if _dtype.from_any(target.dtype_of(values)) is not dtype:
            values = target.astype(values, dtype)
        return values if values is not self._data else target.copy(values)

    def backward(ctx, grad):
        backend, dtype, device = ctx.source
        if backend is not ctx.backend or _device(ctx.backend, grad) != str(device):
            grad = backend.array(_to_numpy(grad), None, device)
        return backend.astype(grad, dtype)

    @classmethod
    def apply(cls, tensor, device, dtype):
        out = super().apply(tensor, device, dtype)
        out._backend = backends.for_device(device)
        return out


def _device(backend, array):
    return backend.device_of(array)


def _to_numpy(array):
    return array.detach().cpu().numpy() if hasattr(array, "detach") else array


class FillBackward0(Function):
    """``fill_`` on a tensor in the graph: the old values no longer matter (zero gradient)."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", r"0")}

    def forward(ctx, self, value):
        return self._backend.full(self._data.shape, value, self.dtype, self.device)

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)


class CopyBackwards(Function):
    """``dst.copy_(src)``: the destination's old values get no gradient, the source gets it all."""

    inputs = ("self", "src")
    derivatives = {"self": ("zeros_like(grad)", r"0"), "src": ("grad", r"\bar{y}")}

    def forward(ctx, self, src):
        ctx.src_shape = tuple(src.shape)
        values = src._data if src._backend is self._backend else self._backend.array(
            src._backend.to_numpy(src._data), None, self.device)
        return self._backend.copy(self._backend.broadcast_to(self._backend.astype(values, self.dtype), self._data.shape))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        return (backend.zeros_like(grad) if ctx.needs_input_grad[0] else None,
                sum_to(backend, grad, ctx.src_shape) if ctx.needs_input_grad[1] else None)


def clone(input: Tensor) -> Tensor:
    return CloneBackward0.apply(input)


def to_copy(input: Tensor, device, dtype) -> Tensor:
    return ToCopyBackward0.apply(input, device, dtype)


def fill(input: Tensor, value) -> Tensor:
    return FillBackward0.apply(input, value._data.item() if isinstance(value, Tensor) else value)


def copy_into(destination: Tensor, source: Tensor) -> Tensor:
    return CopyBackwards.apply(destination, source)
