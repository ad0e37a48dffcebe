"""Layer normalization, one node as in PyTorch (NativeLayerNormBackward0).

Over the last ``len(normalized_shape)`` dims each slice is centred and scaled to unit variance,
``x̂ = (x - μ) / √(σ² + eps)`` (σ² the biased variance), then ``x̂ · weight + bias``. The node saves
what PyTorch saves: the input, weight and bias, and ``result1``/``result2``, the mean and ``1/√(σ² + eps)``
of every slice (kept with size-1 dims, so they broadcast against the input).
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.tensor import Tensor


class NativeLayerNormBackward0(OpFunction):
    inputs = ("input", "weight", "bias")
    derivatives = {
        "input": ("native_layer_norm_backward(grad, input, normalized_shape, result1, result2, weight, bias)",
                  r"\tfrac{1}{\sigma}\,(\hat{g} - \overline{\hat{g}} - \hat{x}\,\overline{\hat{g}\,\hat{x}}),\ "
                  r"\hat{g} = \bar{y}\,\gamma"),
        "weight": ("native_layer_norm_backward(...)[1]", r"\textstyle\sum_{\text{batch}} \bar{y}\,\hat{x}"),
        "bias": ("native_layer_norm_backward(...)[2]", r"\textstyle\sum_{\text{batch}} \bar{y}"),
    }

    def forward(ctx, input, weight, bias, normalized_shape, eps=1e-5):
        backend = input._backend
        x = input._data
        axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
        count = 1
        for size in normalized_shape:
            count *= size
        mean = backend.div(backend.sum(x, axes, keepdims=True), count)
        centred = backend.sub(x, mean)
        variance = backend.div(backend.sum(backend.mul(centred, centred), axes, keepdims=True), count)
        rstd = backend.reciprocal(backend.sqrt(backend.add(variance, eps)))
        ctx.save(bias=bias, input=input, normalized_shape=tuple(normalized_shape),
                 result1=Tensor._make(mean, backend=backend), result2=Tensor._make(rstd, backend=backend), weight=weight)
        ctx.axes = axes
        out = backend.mul(centred, rstd)
        if weight is not None:
            out = backend.mul(out, weight._data)
        if bias is not None:
            out = backend.add(out, bias._data)
        return out

    def backward(ctx, grad):
        backend = ctx.backend
        x, mean, rstd, weight = ctx.saved("input", "result1", "result2", "weight")
        axes = ctx.axes
        leading = tuple(range(len(axes) and x.ndim - len(axes)))
        normalized = backend.mul(backend.sub(x, mean), rstd)
        needs = ctx.needs_input_grad
        grad_input = grad_weight = grad_bias = None
        if needs[0]:
            scaled = backend.mul(grad, weight) if weight is not None else grad
            count = 1
            for axis in axes:
                count *= x.shape[axis]
            mean_scaled = backend.div(backend.sum(scaled, axes, keepdims=True), count)
            mean_projection = backend.div(backend.sum(backend.mul(scaled, normalized), axes, keepdims=True), count)
            grad_input = backend.mul(backend.sub(backend.sub(scaled, mean_scaled), backend.mul(normalized, mean_projection)),
                                     rstd)
        if needs[1:2] == (True,):
            grad_weight = backend.sum(backend.mul(grad, normalized), leading, keepdims=False) if leading else \
                backend.mul(grad, normalized)
        if needs[2:3] == (True,):
            grad_bias = backend.sum(grad, leading, keepdims=False) if leading else grad
        return grad_input, grad_weight, grad_bias


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalize over the last dims, ``normalized_shape``, then scale by ``weight`` and shift by ``bias``."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(normalized_shape)
    if input.ndim < count or tuple(input.shape[input.ndim - count:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and tuple(value.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(value.shape)} and normalized_shape = {list(normalized_shape)}")
    return NativeLayerNormBackward0.apply(input, weight, bias, normalized_shape, eps)
