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


class NativeBatchNormBackward0(OpFunction):
    """Batch normalization over every dim but the channels (dim 1): in training each channel is normalized
    with the batch's mean and ``1/√(σ² + eps)`` (saved as ``result1``/``result2``), and the running
    statistics move toward them; in eval the running statistics normalize and nothing moves."""

    inputs = ("input", "weight", "bias")
    derivatives = {
        "input": ("batchnorm_double_backward / native_batch_norm_backward(grad, input, weight, running_mean, "
                  "running_var, result1, result2, training, eps)",
                  r"\gamma\,\tfrac{1}{\sigma}\,(\bar{y} - \overline{\bar{y}} - \hat{x}\,\overline{\bar{y}\,\hat{x}})"),
        "weight": ("native_batch_norm_backward(...)[1]", r"\textstyle\sum_{\text{batch}} \bar{y}\,\hat{x}"),
        "bias": ("native_batch_norm_backward(...)[2]", r"\textstyle\sum_{\text{batch}} \bar{y}"),
    }

    def forward(ctx, input, weight, bias, running_mean, running_var, training, momentum, eps):
        backend = input._backend
        x = input._data
        axes = (0,) + tuple(range(2, x.ndim))
        channel_shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        if training:
            count = x.size // x.shape[1]
            mean = backend.div(backend.sum(x, axes, keepdims=False), count)
            centred = backend.sub(x, backend.reshape(mean, channel_shape))
            variance = backend.div(backend.sum(backend.mul(centred, centred), axes, keepdims=False), count)
            invstd = backend.reciprocal(backend.sqrt(backend.add(variance, eps)))
            if running_mean is not None:  # moved in place by the kernel itself: no version bump, as in PyTorch
                _move_toward(backend, running_mean._data, mean, momentum)
                _move_toward(backend, running_var._data, backend.mul(variance, count / max(count - 1, 1)), momentum)
            saved_mean, saved_invstd = mean, invstd
        else:
            mean, invstd = running_mean._data, backend.reciprocal(backend.sqrt(backend.add(running_var._data, eps)))
            centred = backend.sub(x, backend.reshape(mean, channel_shape))
            empty = backend.full((0,), 0.0, input.dtype, input.device)
            saved_mean, saved_invstd = empty, empty
        ctx.save(eps=eps, input=input, result1=Tensor._make(saved_mean, backend=backend),
                 result2=Tensor._make(saved_invstd, backend=backend), running_mean=running_mean,
                 running_var=running_var, training=training, weight=weight)
        ctx.statistics = (mean, invstd, axes, channel_shape)
        out = backend.mul(centred, backend.reshape(invstd, channel_shape))
        if weight is not None:
            out = backend.mul(out, backend.reshape(weight._data, channel_shape))
        if bias is not None:
            out = backend.add(out, backend.reshape(bias._data, channel_shape))
        return out

    def backward(ctx, grad):
        backend = ctx.backend
        x, weight, training = ctx.saved("input", "weight", "training")
        mean, invstd, axes, channel_shape = ctx.statistics
        invstd_per_channel = backend.reshape(invstd, channel_shape)
        normalized = backend.mul(backend.sub(x, backend.reshape(mean, channel_shape)), invstd_per_channel)
        needs = ctx.needs_input_grad
        grad_input = grad_weight = grad_bias = None
        if needs[0]:
            scale = invstd_per_channel if weight is None else \
                backend.mul(invstd_per_channel, backend.reshape(weight, channel_shape))
            centred_grad = grad
            if training:  # the batch's statistics depend on x too: remove the gradient's mean and projection
                count = x.size // x.shape[1]
                mean_grad = backend.div(backend.sum(grad, axes, keepdims=True), count)
                projection = backend.div(backend.sum(backend.mul(grad, normalized), axes, keepdims=True), count)
                centred_grad = backend.sub(backend.sub(grad, mean_grad), backend.mul(normalized, projection))
            grad_input = backend.mul(centred_grad, scale)
        if needs[1:2] == (True,):
            grad_weight = backend.sum(backend.mul(grad, normalized), axes, keepdims=False)
        if needs[2:3] == (True,):
            grad_bias = backend.sum(grad, axes, keepdims=False)
        return grad_input, grad_weight, grad_bias


def _move_toward(backend, running, value, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * value``, written into ``running``'s memory."""
    backend.assign(running, backend.add(backend.mul(running, 1 - momentum), backend.mul(value, momentum)))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Normalize each channel (dim 1) over the batch (and any dims after the channels)."""
    if training:
        size = list(input.shape)
        values_per_channel = size[0]
        for extent in size[2:]:
            values_per_channel *= extent
        if values_per_channel == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    channels = input.shape[1] if input.ndim > 1 else 0
    for name, value in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                        ("bias", bias)):
        if value is not None and value.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {value.numel()}")
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    return NativeBatchNormBackward0.apply(input, weight, bias, running_mean, running_var, training, momentum, eps)
