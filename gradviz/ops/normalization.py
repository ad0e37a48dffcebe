"""Layer normalization, one node as in PyTorch (NativeLayerNormBackward0).

Over the last ``len(normalized_shape)`` dims each slice is centred and scaled to unit variance,
``x̂ = (x - μ) / √(σ² + eps)`` (σ² the biased variance), then ``x̂ · weight + bias``. The node saves
what PyTorch saves: the input, weight and bias, and ``result1``/``result2``, the mean and ``1/√(σ² + eps)``
of every slice (kept with size-1 dims, so they broadcast against the input).
"""
from __future__ import annotations

import math

from gradviz.autograd.function import _NO_RECORD, OpFunction
from gradviz.autograd.node import SavedTensor
from gradviz import _dtype
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
        ctx.axes, ctx.eps = axes, eps
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

    def backward_graph(ctx, grad):
        """``native_layer_norm_backward`` as an op of its own (NativeLayerNormBackwardBackward0, three outputs,
        edges to grad_out, input, mean, rstd, weight and bias), as PyTorch records it."""
        input, mean, rstd, weight, bias = ctx.saved_graph("input", "result1", "result2", "weight", "bias")
        first = lambda go, x, w: _layer_norm_first(go, x, w, ctx.axes, ctx.eps)  # noqa: E731
        saved = dict(grad_out=grad, input=input, mean=mean, normalized_shape=ctx.saved("normalized_shape"), rstd=rstd,
                     weight=weight)
        return NativeLayerNormBackwardBackward0.apply((grad, input, mean, rstd, weight, bias), (0, 1, 4), first,
                                                      ctx.backward, ctx.needs_input_grad, saved)


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
            count = math.prod(x.shape) // x.shape[1]  # (x.size is a method on the torch backend)
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
        ctx.eps = eps
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
                count = math.prod(x.shape) // x.shape[1]  # (x.size is a method on the torch backend)
                mean_grad = backend.div(backend.sum(grad, axes, keepdims=True), count)
                projection = backend.div(backend.sum(backend.mul(grad, normalized), axes, keepdims=True), count)
                centred_grad = backend.sub(backend.sub(grad, mean_grad), backend.mul(normalized, projection))
            grad_input = backend.mul(centred_grad, scale)
        if needs[1:2] == (True,):
            grad_weight = backend.sum(backend.mul(grad, normalized), axes, keepdims=False)
        if needs[2:3] == (True,):
            grad_bias = backend.sum(grad, axes, keepdims=False)
        return grad_input, grad_weight, grad_bias

    def backward_graph(ctx, grad):
        """``native_batch_norm_backward`` as an op of its own (NativeBatchNormBackwardBackward0, three outputs,
        edges to grad_out, input, weight, save_mean and save_invstd), as PyTorch records it."""
        input, weight, mean, invstd, running_mean, running_var = ctx.saved_graph(
            "input", "weight", "result1", "result2", "running_mean", "running_var")
        training = ctx.saved("training")
        saved = dict(eps=ctx.eps, grad_out=grad, input=input, running_mean=running_mean, running_var=running_var,
                     save_invstd=invstd, save_mean=mean, train=training, weight=weight)
        first = lambda go, x, w: _batch_norm_first(go, x, w, ctx.statistics, training, ctx.eps)  # noqa: E731
        return NativeBatchNormBackwardBackward0.apply((grad, input, weight, mean, invstd), (0, 1, 2), first,
                                                      ctx.backward, ctx.needs_input_grad, saved)


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


# -- the recorded backward of the two norms: their first derivatives as ops with their own nodes ---------
class _NormBackwardOp(OpFunction):
    """A norm's first derivative as one op with three outputs (the input's, weight's and bias's gradients),
    the node a ``create_graph=True`` pass records. Its forward is the first-order node's own ``backward``;
    its backward, PyTorch's dedicated double-backward formula, is the exact derivative of that first
    derivative: gradviz gets it by differentiating the first derivative written with Tensor ops (``first``,
    with the statistics recomputed from the input, so their dependence on it counts), which gives the
    same numbers up to rounding."""

    @classmethod
    def apply(cls, args, differentiable, first, first_backward, output_mask, saved):
        from gradviz.autograd.function import _NO_RECORD, NO_EDGE, gradient_edge
        from gradviz.grad_mode import _state as grad_state

        record = grad_state.enabled and any(arg is not None and arg.requires_grad for arg in args)
        node = cls() if record else _NO_RECORD
        grad = args[0]
        backend = grad._backend
        if record:
            edges = tuple(gradient_edge(arg) if arg is not None and arg.requires_grad else NO_EDGE for arg in args)
            node._next_functions = edges
            node.needs_input_grad = tuple(edge[0] is not None for edge in edges)
            if backend is not node.backend:
                node.backend = backend
            if grad_state.backward_order:
                node._order = grad_state.backward_order
            node.first, node.differentiable = first, differentiable
            node.primals = tuple(None if args[i] is None else args[i]._data for i in differentiable)
            node.input_count = len(args)
            node.save(**saved)
        arrays = first_backward(grad._data)
        outputs = []
        for output_nr, array in enumerate(arrays):
            if array is None or not output_mask[output_nr]:
                outputs.append(None)
                continue
            out = Tensor._make(array, record, node if record else None, backend)
            out._output_nr = output_nr
            outputs.append(out)
        if record:
            node._num_outputs = 3
        return tuple(outputs)

    def backward(ctx, *grads):
        from gradviz.autograd import grad as differentiate
        from gradviz.grad_mode import enable_grad

        backend = ctx.backend
        leaves = [None if array is None else Tensor._make(array, True, backend=backend) for array in ctx.primals]
        with enable_grad():
            outs = ctx.first(*leaves)
        pairs = [(out, Tensor._make(g, backend=backend)) for out, g in zip(outs, grads)
                 if out is not None and g is not None and out.requires_grad]
        wanted = [(slot, leaf) for slot, leaf in enumerate(leaves)
                  if leaf is not None and ctx.needs_input_grad[ctx.differentiable[slot]]]
        results = [None] * ctx.input_count
        if not pairs or not wanted:
            for slot, leaf in wanted:
                results[ctx.differentiable[slot]] = backend.zeros_like(leaf._data)
            return tuple(results)
        found = differentiate([out for out, _ in pairs], [leaf for _, leaf in wanted], [g for _, g in pairs],
                              allow_unused=True)
        for (slot, leaf), value in zip(wanted, found):
            results[ctx.differentiable[slot]] = backend.zeros_like(leaf._data) if value is None else value._data
        return tuple(results)


    def backward_graph(ctx, *grads):
        """A third derivative: PyTorch records the ops of its double-backward formula; gradviz has that
        formula on arrays only, so this says so unless nothing it reads needs a gradient."""
        if any(g is not None and g.requires_grad for g in grads) or ctx._any_saved_requires_grad():
            raise NotImplementedError(
                f"create_graph=True: gradviz cannot yet record the backward pass of {ctx.name()} (its derivative "
                "is computed on arrays only). Differentiate this graph once, or use ops whose backward is recorded.")
        results = ctx.backward(*(None if g is None else g._data for g in grads))
        return tuple(None if r is None else Tensor._make(r, backend=ctx.backend) for r in results)


class NativeLayerNormBackwardBackward0(_NormBackwardOp):
    """``native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias)``."""

    inputs = ("grad_out", "input", "mean", "rstd", "weight", "bias")
    derivatives = {"grad_out": ("layer_norm_double_backward(...)[0]", r"\partial^2"),
                   "input": ("layer_norm_double_backward(...)[1]", r"\partial^2"),
                   "mean": ('not_implemented("native_layer_norm_backward mean")', "-"),
                   "rstd": ('not_implemented("native_layer_norm_backward rstd")', "-"),
                   "weight": ("layer_norm_double_backward(...)[2]", r"\partial^2"),
                   "bias": ("Tensor()", "-")}


class NativeBatchNormBackwardBackward0(_NormBackwardOp):
    """``native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
    save_invstd, train, eps)``."""

    inputs = ("grad_out", "input", "weight", "save_mean", "save_invstd")
    derivatives = {"grad_out": ("batchnorm_double_backward(...)[0]", r"\partial^2"),
                   "input": ("batchnorm_double_backward(...)[1]", r"\partial^2"),
                   "weight": ("batchnorm_double_backward(...)[2]", r"\partial^2"),
                   "save_mean": ('not_implemented("native_batch_norm_backward save_mean")', "-"),
                   "save_invstd": ('not_implemented("native_batch_norm_backward save_invstd")', "-")}


def _layer_norm_first(grad_out, input, weight, axes, eps):
    """Layer norm's three gradients written with Tensor ops (mean and rstd recomputed from ``input``)."""
    leading = tuple(range(input.ndim - len(axes)))
    mean = input.mean(axes, keepdim=True)
    centred = input - mean
    rstd = ((centred * centred).mean(axes, keepdim=True) + eps).rsqrt()
    normalized = centred * rstd
    scaled = grad_out if weight is None else grad_out * weight
    grad_input = (scaled - scaled.mean(axes, keepdim=True)
                  - normalized * (scaled * normalized).mean(axes, keepdim=True)) * rstd
    product = grad_out * normalized
    grad_weight = None if weight is None else (product.sum(leading) if leading else product)
    return grad_input, grad_weight, grad_out.sum(leading) if leading else grad_out


def _batch_norm_first(grad_out, input, weight, statistics, training, eps):
    """Batch norm's three gradients written with Tensor ops (in training the batch's statistics recomputed
    from ``input``; in eval the running ones, constants)."""
    mean, invstd, axes, channel_shape = statistics
    if training:
        batch_mean = input.mean(axes, keepdim=True)
        centred = input - batch_mean
        invstd_t = ((centred * centred).mean(axes, keepdim=True) + eps).rsqrt()
    else:
        backend = input._backend
        centred = input - Tensor._make(backend.reshape(mean, channel_shape), backend=backend)
        invstd_t = Tensor._make(backend.reshape(invstd, channel_shape), backend=backend)
    normalized = centred * invstd_t
    scale = invstd_t if weight is None else invstd_t * weight.reshape(channel_shape)
    centred_grad = grad_out
    if training:
        centred_grad = grad_out - grad_out.mean(axes, keepdim=True) \
            - normalized * (grad_out * normalized).mean(axes, keepdim=True)
    grad_weight = None if weight is None else (grad_out * normalized).sum(axes)
    return centred_grad * scale, grad_weight, grad_out.sum(axes)


# -- group normalization: one node, as PyTorch records it (NativeGroupNormBackward0) ----------------------------
class NativeGroupNormBackward0(OpFunction):
    """Group normalization: the channels (dim 1) of each sample are split into ``group`` groups, and each
    group (its channels and every spatial position) is centred and scaled to unit variance with its own
    statistics, ``x̂ = (x - μ) / √(σ² + eps)``; then each channel is scaled by ``weight`` and shifted by
    ``bias``. The node saves what PyTorch saves: the input, weight, ``N``, ``C``, ``HxW``, ``group``,
    ``eps`` and ``result1``/``result2``, the mean and ``1/√(σ² + eps)`` of every group, shaped ``(N, group)``."""

    inputs = ("input", "weight", "bias")
    derivatives = {
        "input": ("native_group_norm_backward(grad, input, result1, result2, weight, N, C, HxW, group)",
                  r"\tfrac{1}{\sigma}\,(\hat{g} - \overline{\hat{g}} - \hat{x}\,\overline{\hat{g}\,\hat{x}}),\ "
                  r"\hat{g} = \bar{y}\,\gamma"),
        "weight": ("native_group_norm_backward(...)[1]", r"\textstyle\sum_{\text{batch, space}} \bar{y}\,\hat{x}"),
        "bias": ("native_group_norm_backward(...)[2]", r"\textstyle\sum_{\text{batch, space}} \bar{y}"),
    }

    def forward(ctx, input, weight, bias, N, C, HxW, group, eps):
        backend = input._backend
        x = input._data
        grouped = backend.reshape(x, (N, group, -1)) if N * C else backend.reshape(x, (N, group, (C // group) * HxW))
        count = grouped.shape[2]
        mean = backend.div(backend.sum(grouped, (2,), keepdims=True), max(count, 1))
        centred = backend.sub(grouped, mean)
        variance = backend.div(backend.sum(backend.mul(centred, centred), (2,), keepdims=True), max(count, 1))
        rstd = backend.reciprocal(backend.sqrt(backend.add(variance, eps)))
        # the statistics are the node's outputs 1 and 2 in PyTorch (``_saved_result1.grad_fn`` is the node itself):
        # saved as outputs, which hold their node weakly
        statistics = {}
        if ctx is not _NO_RECORD:
            ctx._num_outputs = 3  # (the statistics' gradients arrive when a double-backward graph reads them)
            for output_nr, name, value in ((1, "result1", mean), (2, "result2", rstd)):
                output = Tensor._make(backend.reshape(value, (N, group)), True, ctx, backend)
                output._output_nr = output_nr
                statistics[name] = SavedTensor(output, is_output=True)
        ctx.save(C=C, HxW=HxW, N=N, eps=eps, group=group, input=input, **statistics, weight=weight)
        ctx.shapes = (N, C, HxW, group)
        out = backend.reshape(backend.mul(centred, rstd), x.shape)
        channel_shape = (1, C) + (1,) * (x.ndim - 2)
        if weight is not None:
            out = backend.mul(out, backend.reshape(weight._data, channel_shape))
        if bias is not None:
            out = backend.add(out, backend.reshape(bias._data, channel_shape))
        return out

    def backward(ctx, grad, grad_mean=None, grad_rstd=None):
        backend = ctx.backend
        x, mean, rstd, weight = ctx.saved("input", "result1", "result2", "weight")
        N, C, HxW, group = ctx.shapes
        statistics_only = grad is None  # only the statistics' gradients arrived (through a double-backward graph)
        if statistics_only:
            grad = backend.zeros_like(x)
        per_group = C // group
        # (N, group, channels of a group, positions): the statistics broadcast over the last two
        blocks = (N, group, per_group, HxW)
        x4 = backend.reshape(x, blocks)
        grad4 = backend.reshape(grad, blocks)
        mean4 = backend.reshape(mean, (N, group, 1, 1))
        rstd4 = backend.reshape(rstd, (N, group, 1, 1))
        normalized = backend.mul(backend.sub(x4, mean4), rstd4)
        needs = ctx.needs_input_grad
        if statistics_only:  # they depend on the input alone
            needs = needs[:1]
        grad_input = grad_weight = grad_bias = None
        if needs[0]:
            scaled = grad4 if weight is None else backend.mul(grad4, backend.reshape(weight, (1, group, per_group, 1)))
            count = max(per_group * HxW, 1)
            mean_scaled = backend.div(backend.sum(scaled, (2, 3), keepdims=True), count)
            mean_projection = backend.div(backend.sum(backend.mul(scaled, normalized), (2, 3), keepdims=True), count)
            grad_input = backend.mul(backend.sub(backend.sub(scaled, mean_scaled), backend.mul(normalized, mean_projection)),
                                     rstd4)
            # the statistics' own gradients: dμ/dx = 1/M, d(1/σ)/dx = -(x - μ)/(σ³ M) over a group of M values
            if grad_mean is not None:
                grad_input = backend.add(grad_input, backend.div(backend.reshape(grad_mean, (N, group, 1, 1)), count))
            if grad_rstd is not None:
                scale = backend.div(backend.mul(backend.reshape(grad_rstd, (N, group, 1, 1)), backend.mul(rstd4, rstd4)),
                                    -count)
                grad_input = backend.add(grad_input, backend.mul(normalized, scale))
            grad_input = backend.reshape(grad_input, x.shape)
        if needs[1:2] == (True,):
            grad_weight = backend.reshape(backend.sum(backend.mul(grad4, normalized), (0, 3), keepdims=False), (C,))
        if needs[2:3] == (True,):
            grad_bias = backend.reshape(backend.sum(grad4, (0, 3), keepdims=False), (C,))
        return grad_input, grad_weight, grad_bias

    def backward_graph(ctx, grad, grad_mean=None, grad_rstd=None):
        """The first derivative recorded (``create_graph=True``) as PyTorch records it: its composite
        ``infinitely_differentiable_native_group_norm_backward``, op for op and in PyTorch's order of
        creation (the order of a later backward's steps follows it). With ``D = C / group`` channels per
        group and ``s = 1 / (D·HxW)``, on ``(N, group, D, HxW)`` views: ``ds = Σ dY·X``, ``db = Σ dY`` over
        the positions, then ``dX = (rstd·γ)·dY + c2·X + c3`` with ``c2 = (Σ_D db·γ·μ - Σ_D ds·γ)·rstd³·s``
        and ``c3 = -c2·μ - Σ_D db·γ·rstd·s``; ``dγ = Σ_N (ds - db·μ)·rstd``, ``dβ = Σ_N db``."""
        if grad_mean is not None or grad_rstd is not None or grad is None:
            raise NotImplementedError(
                "create_graph=True: gradviz cannot yet record the backward pass of NativeGroupNormBackward0 when "
                "gradients arrive for its mean and rstd (a third derivative). Differentiate this graph twice at most.")
        from gradviz.ops.arithmetic import _scalar_mul

        input, mean, rstd, weight = ctx.saved_graph("input", "result1", "result2", "weight")
        mean._output_nr, rstd._output_nr = 1, 2  # the node's outputs 1 and 2 (saved_graph names the node only)
        N, C, HxW, group = ctx.shapes
        per_group = C // group
        s = 1.0 / (per_group * HxW)
        x = input.reshape(N, group, per_group, HxW)
        mean_t, rstd_t = mean.reshape(N, group, 1, 1), rstd.reshape(N, group, 1, 1)
        dy = grad.reshape(N, group, per_group, HxW)
        ds = (dy * x).sum(3).unsqueeze_(-1)
        db = dy.sum(3).unsqueeze_(-1)
        needs = ctx.needs_input_grad
        grad_input = grad_weight = grad_bias = None
        if needs[0]:
            gamma = weight.reshape(1, group, per_group, 1) if weight is not None else None
            rstd_cubed = rstd_t * rstd_t * rstd_t
            c1 = rstd_t * gamma if gamma is not None else rstd_t
            ds_gamma = (ds * gamma if gamma is not None else ds).sum(2).unsqueeze_(-2)
            db_gamma = (db * gamma if gamma is not None else db).sum(2).unsqueeze_(-2)
            c2 = _scalar_mul((db_gamma * mean_t - ds_gamma) * rstd_cubed, s)
            shift = _scalar_mul(db_gamma * rstd_t, s)  # (PyTorch makes the right-hand operands first here)
            c3 = -c2 * mean_t - shift
            scaled_x = c2 * x
            grad_input = (c1 * dy + scaled_x + c3).reshape(input.shape)
        if needs[1:2] == (True,) and weight is not None:
            grad_weight = ((ds - db * mean_t) * rstd_t).sum(0).reshape(weight.shape)
        if needs[2:3] == (True,):
            grad_bias = db.sum(0).reshape(C)
        return grad_input, grad_weight, grad_bias


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalize each sample's channels in ``num_groups`` groups, then scale by ``weight`` and shift by
    ``bias`` per channel (``F.group_norm``)."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    shape = list(input.shape)
    values_per_group = shape[0] * shape[1] // num_groups  # (0 groups: Python's ZeroDivisionError, as in PyTorch)
    for extent in shape[2:]:
        values_per_group *= extent
    if values_per_group == 1:  # PyTorch checks the batch it would normalize, [N * C // G, G, *spatial]
        checked = [shape[0] * shape[1] // num_groups, num_groups] + shape[2:]
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {checked}")
    return _group_norm(input, weight, bias, num_groups, eps)


def _group_norm(input, weight, bias, group: int, eps: float):
    """``torch.group_norm``'s checks (PyTorch's messages, the bias's one included: it shows the weight's shape,
    or ``[0]`` without a weight), then the node."""
    N, C = input.shape[0], input.shape[1]
    if C % group:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of shape "
                           f"{list(input.shape)} and num_groups={group}")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and (value.dim() != 1 or value.numel() != C):
            shown = list(weight.shape) if weight is not None else [0]
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {shown} and input of shape {list(input.shape)}")
    if any(value is not None and value.dtype != input.dtype for value in (weight, bias)):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    HxW = 1
    for extent in input.shape[2:]:
        HxW *= extent
    return NativeGroupNormBackward0.apply(input, weight, bias, N, C, HxW, group, eps)


# -- instance and RMS normalization: PyTorch's composites, op for op ---------------------------------------------
def _repeated(value, times: int):
    """``value.repeat(times)`` (RepeatBackward0 when it requires grad), None stays None."""
    return None if value is None else value.repeat(times)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Normalize each channel of each sample over its spatial positions (``F.instance_norm``). PyTorch
    computes it as batch normalization of the input viewed as one sample of ``N·C`` channels, with weight,
    bias and running statistics repeated ``N`` times; the running statistics then take the mean of the
    repeated ones' update (one ``copy_``, one version bump each)."""
    if use_input_stats:
        spatial = 1
        for extent in list(input.shape)[2:]:
            spatial *= extent
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    return _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


def _instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float, eps: float):
    """``torch.instance_norm``: the checks and the composite, after ``F.instance_norm``'s own check."""
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    batch, channels = input.shape[0], input.shape[1]
    shape = [1, batch * channels] + list(input.shape)[2:]
    statistics = [_repeated(running_mean, batch), _repeated(running_var, batch)]
    out = batch_norm(input.contiguous().view(shape), statistics[0], statistics[1], _repeated(weight, batch),
                     _repeated(bias, batch), use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:  # the batch's update of the repeated statistics, averaged
        from gradviz.grad_mode import no_grad

        with no_grad():  # (PyTorch copies into an alias of each: no node, one version bump)
            for running, repeated in zip((running_mean, running_var), statistics):
                running.copy_(repeated.view(batch, channels).mean(0))
    return out.view(input.shape)


_REDUCED_FLOATS = (_dtype.float16,)  # computed in float32 by PyTorch (gradviz has no bfloat16)
_MISMATCH_WARNED = [False]  # PyTorch warns once per process about a weight of another dtype than rms_norm's input


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the last dims (``normalized_shape``), then scale by ``weight``
    (``F.rms_norm``), as PyTorch's CPU composite records it: ``x * (x.pow(2).mean(dims, keepdim=True) +
    eps).rsqrt()``, times ``weight``, with ``dims`` from the last backwards; half inputs are
    computed in float32 and cast back (ToCopyBackward0 at each end). ``eps`` defaults to float32's (or the
    input's own, for float64) machine epsilon."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(normalized_shape)
    if input.ndim < count or tuple(input.shape[input.ndim - count:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*{', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(normalized_shape)}")
    if weight is not None and weight.dtype != input.dtype and not _MISMATCH_WARNED[0]:
        import warnings

        _MISMATCH_WARNED[0] = True
        warnings.warn(f"Mismatch dtype between input and weight: input dtype = {_dtype.CPP_NAMES[input.dtype.name]}, weight "
                      f"dtype = {_dtype.CPP_NAMES[weight.dtype.name]}, Cannot dispatch to fused implementation.", UserWarning,
                      stacklevel=2)
    compute = _dtype.float32 if input.dtype in _REDUCED_FLOATS else input.dtype
    if eps is None:
        from gradviz.ops.torch_functions import finfo

        eps = float(finfo(compute).eps)
    x = input.to(compute)
    dims = [input.ndim - 1 - i for i in range(count)]
    from gradviz.ops.arithmetic import AddBackward1  # add(Scalar), as the C++ composite calls it

    result = x * AddBackward1.apply(x.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    if weight is not None:
        result = result * weight
    return result.type_as(input)
