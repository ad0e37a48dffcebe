"""Copies: ``clone``, ``to(dtype/device)``, and the recorded forms of ``fill_`` and ``copy_``."""
from __future__ import annotations

from gradviz import _dtype, backends
from gradviz.autograd.function import _NO_RECORD, OpFunction
from gradviz.tensor import Tensor


class CloneBackward0(OpFunction):
    """A copy; ``contiguous=True`` lays it out row-major (what ``contiguous()`` and ``reshape`` make)."""

    inputs = ("self",)
    derivatives = {"self": ("grad", r"\bar{y}")}

    def forward(ctx, self, contiguous=False):
        copy = self._backend.copy(self._data)
        return self._backend.contiguous(copy) if contiguous else copy

    def backward(ctx, grad):
        return grad

    def backward_graph(ctx, grad):
        return grad


class ToCopyBackward0(OpFunction):
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

    def backward_graph(ctx, grad):
        """``grad.to(self.options())``: a ToCopyBackward0 of its own when the dtype or device differs."""
        _, dtype, device = ctx.source
        return grad.to(device=device, dtype=dtype)

    @classmethod
    def apply(cls, tensor, device, dtype):
        out = super().apply(tensor, device, dtype)
        out._backend = backends.for_device(device)
        return out


def _device(backend, array):
    return backend.device_of(array)


def _to_numpy(array):
    return array.detach().cpu().numpy() if hasattr(array, "detach") else array


class FillBackward2(OpFunction):
    """``fill_(number)`` on a tensor in the graph: the old values no longer matter (zero gradient)."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", r"0")}

    def forward(ctx, self, value):
        return self._backend.full(self._data.shape, value, self.dtype, self.device)

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        return _zeros_like(ctx, grad)


def _zeros_like(ctx, grad: Tensor) -> Tensor:
    """``zeros_like(grad)`` in a recorded backward: a constant, with no graph (as in PyTorch)."""
    return Tensor._make(ctx.backend.zeros_like(grad._data), backend=ctx.backend)


class FillBackward3(OpFunction):
    """``fill_(value)`` with a 0-d tensor (what ``x[i] = 5`` runs): every element's gradient goes to it."""

    inputs = ("self", "value")
    derivatives = {"self": ("zeros_like(grad)", r"0"), "value": ("grad.sum()", r"\textstyle\sum \bar{y}")}

    def forward(ctx, self, value):
        ctx.value_dtype = value.dtype
        data = value._data if value._backend is self._backend else self._backend.array(
            value._backend.to_numpy(value._data), None, self.device)
        return self._backend.copy(self._backend.broadcast_to(self._backend.astype(data, self.dtype), self._data.shape))

    def backward(ctx, grad):
        backend = ctx.backend
        grad_value = backend.sum(grad, None) if ctx.needs_input_grad[1] else None
        if grad_value is not None and _dtype.from_any(grad_value.dtype) is not ctx.value_dtype:
            grad_value = backend.astype(grad_value, ctx.value_dtype)
        return (backend.zeros_like(grad) if ctx.needs_input_grad[0] else None), grad_value

    def backward_graph(ctx, grad):
        grad_value = None
        if ctx.needs_input_grad[1]:
            grad_value = grad.sum()
            grad_value = grad_value if grad_value.dtype is ctx.value_dtype else grad_value.to(ctx.value_dtype)
        return (_zeros_like(ctx, grad) if ctx.needs_input_grad[0] else None), grad_value


class ZeroBackward0(OpFunction):
    """``zero_()`` on a tensor in the graph: zero gradient for the old values."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", r"0")}

    def forward(ctx, self):
        return self._backend.full(self._data.shape, 0, self.dtype, self.device)

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        return _zeros_like(ctx, grad)


class CopyBackwards(OpFunction):
    """``dst.copy_(src)``: the destination's old values get no gradient, the source gets it all."""

    inputs = ("self", "src")
    derivatives = {"self": ("zeros_like(grad)", r"0"), "src": ("grad", r"\bar{y}")}
    qualified_name = "torch::autograd::CopyBackwards"

    def name(self) -> str:
        return self.qualified_name

    def forward(ctx, self, src):
        check_copy_shapes(self, src)
        ctx.src_shape = tuple(src.shape)
        ctx.src_dtype = src.dtype
        values = src._data if src._backend is self._backend else self._backend.array(
            src._backend.to_numpy(src._data), None, self.device)
        return self._backend.copy(self._backend.broadcast_to(self._backend.astype(values, self.dtype), self._data.shape))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        grad_src = None
        if ctx.needs_input_grad[1]:
            grad_src = sum_to(backend, grad, ctx.src_shape)
            if _dtype.from_any(grad_src.dtype) is not ctx.src_dtype:
                grad_src = backend.astype(grad_src, ctx.src_dtype)
        return (backend.zeros_like(grad) if ctx.needs_input_grad[0] else None), grad_src

    def backward_graph(ctx, grad):
        """As PyTorch's CopyBackwards: zeros (no graph) for ``self``; for ``src``, ``grad`` cast to its
        dtype (``grad.to``) and summed back over any broadcasting."""
        from gradviz.ops._util import sum_to_tensor

        grad_self = _zeros_like(ctx, grad) if ctx.needs_input_grad[0] else None
        grad_src = None
        if ctx.needs_input_grad[1]:
            grad_src = sum_to_tensor(grad if grad.dtype is ctx.src_dtype else grad.to(ctx.src_dtype), ctx.src_shape)
        return grad_self, grad_src


def check_copy_shapes(destination: Tensor, source: Tensor) -> None:
    """``source`` must broadcast to ``destination``'s shape, with PyTorch's messages when it does not."""
    from gradviz.ops._util import broadcast_shapes

    if destination._data.shape != source._data.shape:
        shape = broadcast_shapes(tuple(destination.shape), tuple(source.shape))
        if shape != tuple(destination.shape):
            raise RuntimeError(f"output with shape {list(destination.shape)} doesn't match the broadcast shape "
                               f"{list(shape)}")


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory (laid out like ``input``; row-major with ``torch.contiguous_format``)."""
    return CloneBackward0.apply(input, contiguous=memory_format is CONTIGUOUS_FORMAT)


class _MemoryFormat:
    """PyTorch's ``torch.contiguous_format`` / ``torch.preserve_format`` markers."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


CONTIGUOUS_FORMAT, PRESERVE_FORMAT = _MemoryFormat("contiguous_format"), _MemoryFormat("preserve_format")


def to_copy(input: Tensor, device, dtype) -> Tensor:
    """A copy on ``device`` in ``dtype``; an integer or bool copy has no gradient, so it records nothing
    (PyTorch gives outputs of such dtypes no history)."""
    if not dtype.is_floating_point:
        return Tensor._make(ToCopyBackward0.forward(_NO_RECORD, input, device, dtype))
    return ToCopyBackward0.apply(input, device, dtype)


def fill(input: Tensor, value) -> Tensor:
    """The out-of-place form of ``fill_``: FillBackward3 for a tensor value, FillBackward2 for a number."""
    if isinstance(value, Tensor):
        return FillBackward3.apply(input, value)
    return FillBackward2.apply(input, value)


def zero(input: Tensor) -> Tensor:
    return ZeroBackward0.apply(input)


def copy_into(destination: Tensor, source: Tensor) -> Tensor:
    return CopyBackwards.apply(destination, source)
