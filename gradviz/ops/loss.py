"""Loss functions, each one node as in PyTorch (``cross_entropy`` is two: log-softmax, then NLL).

``reduction`` is saved as PyTorch saves it, an int: 0 ``'none'``, 1 ``'mean'``, 2 ``'sum'``.
Targets and weights are constants: only the prediction (and, for MSE and BCE, the target)
gets an edge, exactly the edges PyTorch's node shows.
"""
from __future__ import annotations

import numpy as np

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.autograd.node import expose_saved, saved_input
from gradviz.grad_mode import inference_tensors as _inference_tensors
from gradviz.backends import numpy_backend
from gradviz.ops.arithmetic import AddBackward1, DivBackward1, MulBackward1
from gradviz.ops._util import broadcast_shapes, meta, promote, shape_of, to_input
from gradviz.tensor import Tensor

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
IGNORE_INDEX_SAVED = 2**64  # PyTorch shows ignore_index=-100 read back as a uint64
BCE_EPSILON = 1e-12  # PyTorch's floor under x(1 - x) in the BCE gradient


def _reduction(reduction: str) -> int:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return REDUCTIONS[reduction]


def _reduce(backend, loss, reduction: int):
    if reduction == 1:
        return backend.div(backend.sum(loss, None), max(_numel(loss), 1))
    if reduction == 2:
        return backend.sum(loss, None)
    return loss


def _unreduce(backend, grad, shape, reduction: int):
    """The incoming gradient's share for each element the loss reduced (a 0-d array for 'mean' and
    'sum': the local derivative it is multiplied by next spreads it over the elements)."""
    if reduction == 0:
        return grad
    return backend.div(grad, _numel_of(shape)) if reduction == 1 else grad


def _numel(array) -> int:
    return _numel_of(array.shape)


def _numel_of(shape) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _check_same_size(input, target, message: str) -> None:
    if input._data.shape != target._data.shape:  # the arrays' shapes: no Size objects to build
        raise ValueError(message.format(target=list(target.shape), input=list(input.shape)))


class BinaryCrossEntropyWithLogitsBackward0(OpFunction):
    """``-w [p t log σ(x) + (1 - t) log(1 - σ(x))]``, computed without ever forming ``σ(x)``."""

    inputs = ("self", "target")
    derivatives = {"self": ("grad * w * ((p t + 1 - t) sigmoid(self) - p t)", r"\bar{y}\,w\,(\sigma(x) - t)"),
                   "target": ("grad * w * (log(1 - sigmoid(self)) - p log(sigmoid(self)))",
                              r"-\bar{y}\,w\,x")}

    def forward(ctx, self, target, weight=None, pos_weight=None, reduction=1):
        if _inference_tensors or weight is not None or pos_weight is not None or not ctx.needs_input_grad:
            ctx.save(pos_weight=pos_weight, reduction=reduction, self=self, target=target, weight=weight)
        else:  # ctx.save(...) above, written out: the same entries in the same order (no weights to check)
            ctx._packed = {"pos_weight": None, "reduction": reduction, "self": saved_input(self),
                           "target": saved_input(target), "weight": None}
        backend = self._backend
        x, t = self._data, target._data
        if x.dtype is not t.dtype:  # promote's own answer for one dtype is the data as it is: no call for it
            x, t = promote(self, target)
        if backend is numpy_backend and weight is None and pos_weight is None:
            loss = numpy_backend.bce_with_logits_reduced(x, t, reduction)  # the lines below, in one call
            if loss is not None:
                return loss
        softplus_neg = backend.softplus_neg(x)  # log(1 + e^-x), with no overflow for large |x|
        one_minus_t = backend.sub(1.0, t)
        if pos_weight is not None:
            log_weight = backend.add(backend.mul(backend.sub(pos_weight._data, 1.0), t), 1.0)
            softplus_neg = backend.mul(log_weight, softplus_neg)
        loss = backend.add(backend.mul(one_minus_t, x), softplus_neg)
        if weight is not None:
            loss = backend.mul(loss, weight._data)
        return _reduce(backend, loss, reduction)

    def backward(ctx, grad):
        backend = ctx.backend
        x, t, weight, pos_weight, reduction = ctx.saved("self", "target", "weight", "pos_weight", "reduction")
        needs = ctx.needs_input_grad
        if backend is numpy_backend and weight is None and pos_weight is None and needs[0] and not needs[1]:
            grad_self = numpy_backend.bce_with_logits_grad(grad, x, t, reduction)  # the lines below, in one call
            if grad_self is not None:
                return grad_self, None
        grad = _unreduce(backend, grad, x.shape, reduction)
        sigmoid = backend.sigmoid(x)
        grad_self = grad_target = None
        if needs[0]:
            if pos_weight is None:
                local = backend.sub(sigmoid, t)
            else:
                scaled_t = backend.mul(pos_weight, t)
                local = backend.sub(backend.mul(backend.add(backend.sub(scaled_t, t), 1.0), sigmoid), scaled_t)
            grad_self = backend.mul(grad, local if weight is None else backend.mul(local, weight))
        if needs[1]:
            log_sigmoid = backend.neg(backend.softplus_neg(x))
            log_one_minus = backend.sub(log_sigmoid, x)
            scale = log_sigmoid if pos_weight is None else backend.mul(pos_weight, log_sigmoid)
            local = backend.sub(log_one_minus, scale)
            grad_target = backend.mul(grad, local if weight is None else backend.mul(local, weight))
        return grad_self, grad_target

    def backward_graph(ctx, grad):
        """PyTorch's composites, op for op. ``self``: ``binary_cross_entropy_with_logits_backward``,
        ``(sigmoid(x) - t) * grad`` (with ``pos_weight``: ``((p t + 1 - t) sigmoid(x) - p t) * grad``), times
        the weight, ``div_(n)`` for 'mean'. ``target``: ``..._target_backward``, ``-x * grad``, ``mul_(weight)``,
        ``div_(n)``; with ``pos_weight``: ``log_sigmoid(-x).sub_(log_sigmoid(x).mul_(p)).mul_(grad)`` first."""
        from gradviz.ops import inplace
        from gradviz.ops.double_backward import _scalar_add

        self, target, weight, pos_weight, reduction = ctx.saved_graph("self", "target", "weight", "pos_weight",
                                                                       "reduction")
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            if pos_weight is None:
                grad_input = self.sigmoid() - target
            else:
                scaled = pos_weight * target
                grad_input = (_scalar_add(scaled, 1) - target) * self.sigmoid() - scaled
            grad_input = grad_input * grad
            if weight is not None:
                grad_input = grad_input * weight
            if reduction == 1:
                inplace.apply_(grad_input, DivBackward1.apply, self.numel())
        if ctx.needs_input_grad[1]:
            if pos_weight is None:
                grad_target = -self * grad
            else:  # PyTorch's in-place chain (the object of ``sub_`` is made before its argument)
                from gradviz.ops.activation import logsigmoid

                grad_target = logsigmoid(-self)
                grad_target = grad_target.sub_(logsigmoid(self).mul_(pos_weight)).mul_(grad)
            grad_target = _weighted_mean_(grad_target, weight, reduction)
        return grad_input, grad_target


for _name in ("pos_weight", "reduction", "weight"):
    expose_saved(_name)  # BinaryCrossEntropyWithLogitsBackward0 writes these straight into _packed: their _saved_<name>


def _weighted_mean_(grad_target, weight, reduction: int):
    """The end of PyTorch's BCE target gradients, in place as it writes them: ``mul_(weight)``, then
    ``div_(n)`` for 'mean'."""
    from gradviz.ops import inplace

    if weight is not None:
        grad_target.mul_(weight)
    if reduction == 1:
        inplace.apply_(grad_target, DivBackward1.apply, grad_target.numel())
    return grad_target


class BinaryCrossEntropyBackward0(OpFunction):
    """``-w [t log x + (1 - t) log(1 - x)]`` on probabilities, each log clamped at -100 as PyTorch does."""

    inputs = ("self", "target")
    derivatives = {"self": ("grad * w * (self - target) / max((1 - self) * self, EPSILON)",
                            r"\bar{y}\,w\,\frac{x - t}{x(1 - x)}"),
                   "target": ("grad * w * (log(1 - self) - log(self))", r"\bar{y}\,w\,\ln\frac{1 - x}{x}")}

    def forward(ctx, self, target, weight=None, reduction=1):
        backend = self._backend
        x, t = promote(self, target)
        if backend.any(backend.lt(x, 0.0)) or backend.any(backend.gt(x, 1.0)):
            raise RuntimeError("all elements of input should be between 0 and 1")
        if backend.any(backend.lt(t, 0.0)) or backend.any(backend.gt(t, 1.0)):
            raise RuntimeError("all elements of target should be between 0 and 1")
        ctx.save(reduction=reduction, self=self, target=target, weight=weight)
        log_x = backend.maximum(backend.log(x), -100.0)
        log_1mx = backend.maximum(backend.log(backend.sub(backend.full((), 1.0, _dtype.from_any(x.dtype), self.device), x)),
                                  -100.0)
        loss = backend.neg(backend.add(backend.mul(t, log_x),
                                       backend.mul(backend.sub(backend.full((), 1.0, _dtype.from_any(t.dtype), self.device), t),
                                                   log_1mx)))
        if weight is not None:
            loss = backend.mul(loss, weight._data)
        return _reduce(backend, loss, reduction)

    def backward(ctx, grad):
        backend = ctx.backend
        x, t, weight, reduction = ctx.saved("self", "target", "weight", "reduction")
        grad = _unreduce(backend, grad, x.shape, reduction)
        grad_self = grad_target = None
        one = backend.full((), 1.0, _dtype.from_any(x.dtype), backend.device_of(x))
        if ctx.needs_input_grad[0]:
            denominator = backend.maximum(backend.mul(backend.sub(one, x), x), BCE_EPSILON)
            grad_self = backend.div(backend.mul(grad, backend.sub(x, t)), denominator)
            if weight is not None:
                grad_self = backend.mul(grad_self, weight)
        if ctx.needs_input_grad[1]:
            grad_target = backend.mul(grad, backend.sub(backend.log(backend.sub(one, x)), backend.log(x)))
            if weight is not None:
                grad_target = backend.mul(grad_target, weight)
        return grad_self, grad_target

    def backward_graph(ctx, grad):
        """``self``: ``binary_cross_entropy_backward`` recorded as its own op (BinaryCrossEntropyBackwardBackward0);
        ``target``: PyTorch's ``binary_cross_entropy_target_backward``, ``logit(x).neg_().mul_(grad)``, then
        ``.mul_(weight)`` and ``.div_(n)`` for 'mean', in place as PyTorch writes it."""
        from gradviz.ops.double_backward import BinaryCrossEntropyBackwardBackward0

        self, target, weight, reduction = ctx.saved_graph("self", "target", "weight", "reduction")
        grad_self = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_self = BinaryCrossEntropyBackwardBackward0.apply(grad, self, target, weight, reduction)
        if ctx.needs_input_grad[1]:
            grad_target = _weighted_mean_(LogitBackward0.apply(self).neg_().mul_(grad), weight, reduction)
        return grad_self, grad_target


class LogitBackward0(OpFunction):
    """``logit(x) = log(x / (1 - x))``, the inverse of sigmoid (in the gradient BCE sends its target)."""

    inputs = ("self",)
    derivatives = {"self": ("logit_backward(grad, self, eps)", r"\frac{\bar{y}}{x (1 - x)}")}

    def forward(ctx, self, eps=None):
        ctx.save(eps=eps, self=self)
        backend = self._backend
        data = self._data if eps is None else backend.clip(self._data, eps, 1.0 - eps)  # logit(eps) clamps first
        return backend.log(backend.div(data, backend.sub(1.0, data)))

    def backward(ctx, grad):
        backend = ctx.backend
        x = ctx.saved("self")
        local = backend.div(grad, backend.mul(x, backend.sub(1.0, x)))
        eps = ctx.saved("eps")
        if eps is not None:  # clamped places are flat, as PyTorch's logit_backward makes them
            return backend.where(backend.logical_or(backend.lt(x, eps), backend.gt(x, 1.0 - eps)), 0.0, local)
        # PyTorch's logit_backward kernel: grad * inf at the ends (so -0.0 gives +inf), NaN outside [0, 1]
        ends = backend.logical_or(backend.eq(x, 0.0), backend.eq(x, 1.0))
        local = backend.where(ends, backend.mul(grad, float("inf")), local)
        outside = backend.logical_or(backend.lt(x, 0.0), backend.gt(x, 1.0))  # no logit there: NaN, as PyTorch
        return backend.where(outside, backend.full((), float("nan"), _dtype.from_any(local.dtype), backend.device_of(x)),
                             local)

    def backward_graph(ctx, grad):
        """PyTorch's ``infinitely_differentiable_logit_backward``: ``where(0 <= x <= 1, grad / (x * (1 - x)), NaN)``."""
        from gradviz.ops.comparison import where
        from gradviz.ops.double_backward import _one_minus

        x = ctx.saved_graph("self")
        backend = ctx.backend
        eps = ctx.saved("eps")  # with eps, 0 outside [eps, 1 - eps] instead of NaN outside [0, 1]
        low, high, fill = (0.0, 1.0, float("nan")) if eps is None else (eps, 1.0 - eps, 0.0)
        nan = Tensor._make(backend.full((), fill, x.dtype, x.device), backend=backend)
        spread = _one_minus(x)
        local = grad / (x * spread)
        inside = Tensor._make(backend.logical_and(backend.ge(x._data, low), backend.le(x._data, high)), backend=backend)
        return where(inside, local, nan)


class MseLossBackward0(OpFunction):
    inputs = ("self", "target")
    derivatives = {"self": ("mse_loss_backward(grad, self, target, reduction)", r"\tfrac{2}{n}\,\bar{y}\,(x - t)"),
                   "target": ("mse_loss_backward(grad, target, self, reduction)", r"-\tfrac{2}{n}\,\bar{y}\,(x - t)")}

    def forward(ctx, self, target, reduction=1):
        shape = broadcast_shapes(shape_of(self), shape_of(target))
        ctx.save(reduction=reduction, self=self, target=target)
        ctx.metas = (meta(self), meta(target))
        ctx.shape = shape
        backend = self._backend if isinstance(self, Tensor) else target._backend
        x, t = promote(self, target)
        difference = backend.sub(x, t)
        return _reduce(backend, backend.mul(difference, difference), reduction)

    def backward(ctx, grad):
        backend = ctx.backend
        x, t, reduction = ctx.saved("self", "target", "reduction")
        local = backend.mul(backend.sub(x, t), 2.0)
        grad = backend.mul(_unreduce(backend, grad, ctx.shape, reduction), local)
        self_meta, target_meta = ctx.metas
        return (to_input(backend, grad, self_meta) if ctx.needs_input_grad[0] else None,
                to_input(backend, backend.neg(grad), target_meta) if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor
        from gradviz.ops.double_backward import MseLossBackwardBackward0

        self, target, reduction = ctx.saved_graph("self", "target", "reduction")
        needs = ctx.needs_input_grad
        grad_self = MseLossBackwardBackward0.apply(grad, self, target, reduction) if needs[0] else None
        # derivatives.yaml: target: mse_loss_backward(grad, target, self, reduction): the roles swap
        grad_target = MseLossBackwardBackward0.apply(grad, target, self, reduction) if needs[1] else None
        return tuple(None if g is None else sum_to_tensor(g, m[0]) for g, m in zip((grad_self, grad_target), ctx.metas))


class NllLossBackward0(OpFunction):
    """Negative log-likelihood of class indices: ``-w[t] · x[t]``, averaged over the total weight."""

    inputs = ("self",)
    derivatives = {"self": ("nll_loss_backward(grad, self, target, weight, reduction, ignore_index, total_weight)",
                            r"-\bar{y}\,w_t\,[j = t] / W")}

    def forward(ctx, self, target, weight=None, reduction=1, ignore_index=-100):
        backend = self._backend
        picked, kept_weights, total = _nll_terms(backend, self._data, target._data,
                                                 None if weight is None else weight._data, ignore_index)
        # PyTorch computes the total weight only for 'mean' and 'sum' (it saves 0 for 'none')
        total_weight = Tensor._make(total if reduction else backend.mul(total, 0), backend=backend)
        ctx.save(ignore_index=ignore_index if ignore_index >= 0 else ignore_index + IGNORE_INDEX_SAVED,
                 reduction=reduction, self=self, target=target, total_weight=total_weight, weight=weight)
        ctx.ignore = ignore_index
        loss = backend.neg(backend.mul(picked, kept_weights))
        if reduction == 1:
            return backend.div(backend.sum(loss, None), total)
        if reduction == 2:
            return backend.sum(loss, None)
        return loss

    def backward(ctx, grad):
        x, target, weight, reduction, total = ctx.saved("self", "target", "weight", "reduction", "total_weight")
        return nll_loss_backward(ctx.backend, grad, x, target, weight, reduction, ctx.ignore, total)

    def backward_graph(ctx, grad):
        from gradviz.ops.double_backward import NllLossBackwardBackward0

        self, target, weight, reduction, total = ctx.saved_graph("self", "target", "weight", "reduction",
                                                                  "total_weight")
        return NllLossBackwardBackward0.apply(grad, self, target, weight, reduction, ctx.ignore, total)


def nll_loss_backward(backend, grad, x, target, weight, reduction: int, ignore_index: int, total):
    """PyTorch's ``nll_loss_backward`` on arrays: ``-w[t] * grad`` (over the total weight for 'mean')
    at each row's target class, zeros elsewhere."""
    _, kept_weights, _ = _nll_terms(backend, x, target, weight, ignore_index)
    scale = backend.neg(kept_weights)
    if reduction == 1:
        scale = backend.div(scale, total)
    scale = backend.mul(scale, grad)
    return _scatter_classes(backend, x, target, scale, ignore_index)


def _class_axis(x) -> int:
    return 0 if x.ndim == 1 else 1


def _nll_terms(backend, x, target, weight, ignore_index):
    """The picked log-probabilities, each target's weight (0 where ignored), and their sum."""
    axis = _class_axis(x)
    kept = backend.ne(target, ignore_index)
    safe_target = backend.where(kept, target, backend.mul(target, 0))
    index = backend.reshape(safe_target, tuple(1 if i == axis else s for i, s in enumerate(x.shape))) \
        if x.ndim > 1 else backend.reshape(safe_target, (1,))
    picked = backend.take_along_axis(x, index, axis)
    picked = backend.reshape(picked, tuple(target.shape))
    dtype = _dtype.from_any(x.dtype)
    weights = backend.astype(kept, dtype)
    if weight is not None:
        weights = backend.mul(weights, backend.getitem(weight, safe_target))
    return picked, weights, backend.sum(weights, None)


def _scatter_classes(backend, x, target, values, ignore_index):
    """Zeros shaped like ``x`` with ``values`` placed at each row's target class."""
    axis = _class_axis(x)
    kept = backend.ne(target, ignore_index)
    safe_target = backend.where(kept, target, backend.mul(target, 0))
    picked = backend.one_hot_scatter(tuple(x.shape), safe_target, axis, x.dtype)
    expanded = backend.reshape(values, tuple(1 if i == axis else s for i, s in enumerate(x.shape)))
    # written into zeros, as PyTorch does: 0 * a negative value would leave -0.0 in the other classes
    return backend.where(backend.ne(picked, 0), backend.mul(picked, expanded), 0.0)


class SmoothL1LossBackward0(OpFunction):
    """``½ d² / beta`` where ``|d| < beta``, else ``|d| - ½ beta``, with ``d = x - t``: quadratic near 0,
    linear (like L1) further out."""

    inputs = ("self", "target")
    derivatives = {"self": ("smooth_l1_loss_backward(grad, self, target, reduction, beta)",
                            r"\bar{y}\,\mathrm{clamp}((x - t) / \beta, -1, 1)"),
                   "target": ("smooth_l1_loss_backward(grad, self, target, reduction, beta) * -1",
                              r"-\bar{y}\,\mathrm{clamp}((x - t) / \beta, -1, 1)")}

    def forward(ctx, self, target, reduction=1, beta=1.0):
        if beta < 0:
            raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
        ctx.save(beta=beta, reduction=reduction, self=self, target=target)
        backend = self._backend
        x, t = promote(self, target)
        distance = backend.abs(backend.sub(x, t))
        quadratic = backend.div(backend.mul(backend.mul(distance, distance), 0.5), beta)
        loss = backend.where(backend.lt(distance, beta), quadratic, backend.sub(distance, 0.5 * beta))
        return _reduce(backend, loss, reduction)

    def backward(ctx, grad):
        backend = ctx.backend
        x, t, reduction, beta = ctx.saved("self", "target", "reduction", "beta")
        slope = _smooth_l1_slope(backend, backend.sub(x, t), beta)
        return _both_ways(ctx, backend.mul(_unreduce(backend, grad, x.shape, reduction), slope))

    def backward_graph(ctx, grad):
        return _distance_loss_backward_graph(ctx, grad, SmoothL1LossBackwardBackward0, "beta")


class HuberLossBackward0(OpFunction):
    """``½ d²`` where ``|d| < delta``, else ``delta (|d| - ½ delta)``, with ``d = x - t`` (smooth L1 times delta)."""

    inputs = ("self", "target")
    derivatives = {"self": ("huber_loss_backward(grad, self, target, reduction, delta)",
                            r"\bar{y}\,\mathrm{clamp}(x - t, -\delta, \delta)"),
                   "target": ("huber_loss_backward(grad * -1, self, target, reduction, delta)",
                              r"-\bar{y}\,\mathrm{clamp}(x - t, -\delta, \delta)")}

    def forward(ctx, self, target, reduction=1, delta=1.0):
        if delta <= 0:
            raise RuntimeError("huber_loss does not support non-positive values for delta.")
        ctx.save(delta=delta, reduction=reduction, self=self, target=target)
        backend = self._backend
        x, t = promote(self, target)
        distance = backend.abs(backend.sub(x, t))
        quadratic = backend.mul(backend.mul(distance, distance), 0.5)
        loss = backend.where(backend.lt(distance, delta), quadratic,
                             backend.mul(backend.sub(distance, 0.5 * delta), delta))
        return _reduce(backend, loss, reduction)

    def backward(ctx, grad):
        backend = ctx.backend
        x, t, reduction, delta = ctx.saved("self", "target", "reduction", "delta")
        slope = _huber_slope(backend, backend.sub(x, t), delta)
        return _both_ways(ctx, backend.mul(_unreduce(backend, grad, x.shape, reduction), slope))

    def backward_graph(ctx, grad):
        return _distance_loss_backward_graph(ctx, grad, HuberLossBackwardBackward0, "delta")


def _smooth_l1_slope(backend, difference, beta):
    """smooth L1's derivative in ``d = x - t``: ``d / beta`` clamped to [-1, 1]."""
    return backend.where(backend.le(difference, -beta), -1.0,
                         backend.where(backend.ge(difference, beta), 1.0, backend.div(difference, beta)))


def _smooth_l1_curvature(backend, grad, difference, beta):
    """``grad`` times smooth L1's second derivative (``1 / beta`` where ``|d| < beta``, 0 elsewhere)."""
    return backend.div(_inside(backend, grad, difference, beta), beta)


def _inside(backend, grad, difference, bound):
    """``grad · [|d| < bound]``, the mask in ``grad``'s dtype (PyTorch's ``grad * (d < bound)``)."""
    mask = backend.astype(backend.lt(backend.abs(difference), bound), _dtype.from_any(grad.dtype))
    return backend.mul(grad, mask)


def _huber_slope(backend, difference, delta):
    """Huber's derivative in ``d = x - t``: ``d`` clamped to [-delta, delta]."""
    return backend.where(backend.le(difference, -delta), -delta,
                         backend.where(backend.ge(difference, delta), delta, difference))


def _huber_curvature(backend, grad, difference, delta):
    """``grad`` times Huber's second derivative (1 where ``|d| < delta``, 0 elsewhere)."""
    return _inside(backend, grad, difference, delta)


def _distance_loss_backward_graph(ctx, grad, double_class, setting: str):
    """A loss of ``x - t``, recorded as PyTorch records it: the input's gradient is the loss's backward op
    (``..._backward(grad, self, target)``), the target's the same op with the two swapped."""
    x, t, reduction, value = ctx.saved_graph("self", "target", "reduction", setting)
    needs = ctx.needs_input_grad
    return (double_class.apply(grad, x, t, reduction, value) if needs[0] else None,
            double_class.apply(grad, t, x, reduction, value) if needs[1] else None)


class _DistanceLossBackwardBackward(OpFunction):
    """``loss_backward(grad_output, self, target, reduction, setting)`` of a loss of ``d = x - t`` (Huber,
    smooth L1), the op a recorded backward pass makes: ``grad_output`` (spread for 'mean') times the
    loss's slope in ``d``. Its gradients: for ``grad_output``, the slope again (summed when the loss
    was reduced); for ``self``, ``grad · grad_output`` times the loss's curvature; for ``target``, minus that."""

    inputs = ("grad_output", "self", "target")
    setting: str      # the saved name of delta or beta
    slope: staticmethod       # (backend, d, setting) -> the loss's derivative in d
    curvature: staticmethod   # (backend, grad, d, setting) -> grad times its second derivative

    @classmethod
    def _run(cls, ctx, grad_output, self, target, reduction, value):
        ctx.save(**{cls.setting: value}, grad_output=grad_output, reduction=reduction, self=self, target=target)
        backend = grad_output._backend
        x, t = promote(self, target)
        slope = cls.slope(backend, backend.sub(x, t), value)
        return backend.mul(_unreduce(backend, grad_output._data, x.shape, reduction), slope)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, x, t, reduction, value = ctx.saved("grad_output", "self", "target", "reduction", ctx.setting)
        difference = backend.sub(x, t)
        needs = ctx.needs_input_grad
        grad_grad_output = None
        if needs[0]:
            spread = backend.mul(ctx.slope(backend, difference, value), 1.0 / _numel(x) if reduction == 1 else 1.0)
            grad_grad_output = backend.mul(spread, grad) if reduction == 0 else backend.sum(backend.mul(spread, grad), None)
        if not (needs[1] or needs[2]):
            return grad_grad_output, None, None
        local = ctx.curvature(backend, backend.mul(grad, grad_output), difference, value)
        local = backend.div(local, _numel(x)) if reduction == 1 else local
        return grad_grad_output, local if needs[1] else None, backend.neg(local) if needs[2] else None

    def backward_graph(ctx, grad):
        """As PyTorch: for ``grad_output``, ``loss_backward(grad, ...)`` again (with reduction, PyTorch's
        ``(loss_backward(ones_like(grad_output), ...) * grad).sum()``); for ``self`` and ``target`` (each
        computed on its own), ``±loss_double_backward(grad * grad_output, self, target, ...)``."""
        grad_output, x, t = ctx.saved_graph("grad_output", "self", "target")
        reduction, value = ctx.saved("reduction", ctx.setting)
        needs = ctx.needs_input_grad
        cls = type(ctx)
        first = None
        if needs[0]:
            if reduction == 0:
                first = cls.apply(grad, x, t, reduction, value)
            else:
                ones = Tensor._make(ctx.backend.full(tuple(grad_output.shape), 1, grad_output.dtype, grad_output.device),
                                   backend=ctx.backend)
                first = (cls.apply(ones, x, t, reduction, value) * grad).sum()
        second = _distance_double_backward(ctx, grad * grad_output, x, t, reduction, value) if needs[1] else None
        third = -_distance_double_backward(ctx, grad * grad_output, x, t, reduction, value) if needs[2] else None
        return first, second, third


def _distance_double_backward(ctx, grad, x, t, reduction, value):
    """PyTorch's ``huber_loss_double_backward`` / ``smooth_l1_loss_double_backward``: ``grad * (|x - t| < v)``
    (smooth L1: ``/ beta``, and zeros with no history for ``beta = 0``), then ``/= numel`` for 'mean'."""
    from gradviz.ops import inplace

    smooth = ctx.setting == "beta"
    if smooth and value == 0:
        return Tensor._make(ctx.backend.full(tuple(grad.shape), 0, grad.dtype, grad.device), backend=ctx.backend)
    distance = (x - t).abs()
    inside = Tensor._make(ctx.backend.lt(distance._data, value), backend=ctx.backend)
    if smooth:
        inside = inside.to(grad.dtype)  # type_as(grad): a cast of a tensor with no history records nothing
    local = grad * inside
    if smooth:
        local = DivBackward1.apply(local, value)
    if reduction == 1:
        local = inplace.apply_(local, DivBackward1.apply, _numel(x._data))
    return local


class HuberLossBackwardBackward0(_DistanceLossBackwardBackward):
    setting = "delta"
    derivatives = {"grad_output": ("huber_loss_double_backward_grad_output(grad, grad_output, self, target, reduction, "
                                   "delta)", r"\bar{z}\,\mathrm{clamp}(x - t, -\delta, \delta)"),
                   "self": ("huber_loss_double_backward(grad * grad_output, self, target, reduction, delta)",
                            r"\bar{z}\,\bar{y}\,[|x - t| < \delta]"),
                   "target": ("-huber_loss_double_backward(grad * grad_output, self, target, reduction, delta)",
                              r"-\bar{z}\,\bar{y}\,[|x - t| < \delta]")}
    slope, curvature = staticmethod(_huber_slope), staticmethod(_huber_curvature)

    def forward(ctx, grad_output, self, target, reduction, delta):
        return HuberLossBackwardBackward0._run(ctx, grad_output, self, target, reduction, delta)


class SmoothL1LossBackwardBackward0(_DistanceLossBackwardBackward):
    setting = "beta"
    derivatives = {"grad_output": ("smooth_l1_loss_double_backward_grad_output(grad, grad_output, self, target, "
                                   "reduction, beta)", r"\bar{z}\,\mathrm{clamp}((x - t) / \beta, -1, 1)"),
                   "self": ("smooth_l1_loss_double_backward(grad * grad_output, self, target, reduction, beta)",
                            r"\bar{z}\,\bar{y}\,[|x - t| < \beta] / \beta"),
                   "target": ("-smooth_l1_loss_double_backward(grad * grad_output, self, target, reduction, beta)",
                              r"-\bar{z}\,\bar{y}\,[|x - t| < \beta] / \beta")}
    slope, curvature = staticmethod(_smooth_l1_slope), staticmethod(_smooth_l1_curvature)

    def forward(ctx, grad_output, self, target, reduction, beta):
        return SmoothL1LossBackwardBackward0._run(ctx, grad_output, self, target, reduction, beta)


def _both_ways(ctx, grad_self):
    """A loss of ``x - t``: the target's gradient is minus the input's (each only where needed)."""
    needs = ctx.needs_input_grad
    return (grad_self if needs[0] else None,
            ctx.backend.neg(grad_self) if needs[1] else None)


# -- the functions gradviz.nn.functional exports ---------------------------------------------------------
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    if input._data.shape != target._data.shape:  # (_check_same_size's test, written out: one call less per loss)
        _check_same_size(input, target, "Target size (torch.Size({target})) must be the same as input size "
                                        "(torch.Size({input}))")
    # the parameters passed by position: forward's own order (no keyword dict to build and unpack per call);
    # "mean" told at once (_reduction's answer, with no call)
    return BinaryCrossEntropyWithLogitsBackward0.apply(input, target, weight, pos_weight,
                                                       1 if reduction == "mean" else _reduction(reduction))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
    _check_same_size(input, target, "Using a target size (torch.Size({target})) that is different to the input "
                                    "size (torch.Size({input})) is deprecated. Please ensure they have the same size.")
    if weight is not None:  # PyTorch expands the weight to the target's size, and saves it so
        from gradviz.ops.shape import expand

        weight = expand(weight, broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    return BinaryCrossEntropyBackward0.apply(input, target, weight=weight, reduction=_reduction(reduction))


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    input, target = _broadcast_pair(input, target, stacklevel=3)
    return MseLossBackward0.apply(input, target, reduction=_reduction(reduction))


def _broadcast_pair(input, target, stacklevel: int):
    """PyTorch's regression losses on mismatched sizes: warn, then broadcast both (the graph shows the
    ExpandBackward0 of each that grew). ``stacklevel`` points the warning at the caller's line."""
    if tuple(target.shape) == tuple(input.shape):
        return input, target
    import warnings

    from gradviz.ops.shape import expand

    warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                  "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                  "same size.", UserWarning, stacklevel=stacklevel)
    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    input = input if tuple(input.shape) == shape else expand(input, shape)
    target = target if tuple(target.shape) == shape else expand(target, shape)
    return input, target


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean"):
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and target.ndim != 0 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    _check_class_targets(target, input.shape[_class_axis(input)], ignore_index)
    return NllLossBackward0.apply(input, target, weight=weight, reduction=_reduction(reduction),
                                  ignore_index=ignore_index)


def _check_class_targets(target, classes: int, ignore_index: int) -> None:
    """PyTorch's errors for class-index targets: an integer dtype of its two (float labels are a learner's
    usual slip), each index a class or ``ignore_index`` (else numpy's IndexError would name an axis)."""
    if target.dtype is not _dtype.int64 and target.dtype is not _dtype.uint8:
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_dtype.SCALAR_TYPE_NAMES[target.dtype.name]}")
    indices = np.asarray(target._backend.to_numpy(target._data)).reshape(-1)
    outside = (indices != ignore_index) & ((indices < 0) | (indices >= classes))
    if outside.any():
        raise IndexError(f"Target {indices[outside][0]} is out of bounds.")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """PyTorch's composite, node for node: class indices give ``nll_loss(log_softmax(input))``;
    with ``label_smoothing`` the smoothed term is added; probability targets (a float tensor shaped
    like ``input``) give ``-(log_softmax(input) * target).sum()``, divided by the batch size."""
    from gradviz.ops.activation import log_softmax

    _reduction(reduction)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    class_dim = _class_axis(input)
    log_probabilities = log_softmax(input, class_dim)
    if tuple(input.shape) == tuple(target.shape):
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probabilities(log_probabilities, target, weight, reduction, label_smoothing)
    loss = nll_loss(log_probabilities, target, weight=weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:
        return loss
    return _with_label_smoothing(loss, log_probabilities, target, weight, reduction, ignore_index, label_smoothing)


def _weight_along_classes(weight, log_probabilities):
    """``weight`` viewed to broadcast along the class dimension (shape ``(1, C)`` for a batch)."""
    if log_probabilities.ndim == 1:
        return weight
    shape = [1] * log_probabilities.ndim
    shape[1] = weight.shape[0]
    return weight.view(tuple(shape))


def _cross_entropy_probabilities(log_probabilities, target, weight, reduction: str, label_smoothing: float):
    class_dim = _class_axis(log_probabilities)
    classes = log_probabilities.shape[class_dim]
    if label_smoothing > 0.0:
        target = AddBackward1.apply(MulBackward1.apply(target, 1 - label_smoothing), label_smoothing / classes)
    product = log_probabilities * target
    if weight is not None:
        product = product * _weight_along_classes(weight, log_probabilities)
    if reduction == "none":
        return -product.sum(class_dim)
    if reduction == "sum":
        return -product.sum()
    return DivBackward1.apply(-product.sum(), log_probabilities.numel() // classes)


def _with_label_smoothing(loss, log_probabilities, target, weight, reduction: str, ignore_index: int,
                          label_smoothing: float):
    """``(1 - e) * nll + e / C * smooth``, where ``smooth`` is minus the sum of the log-probabilities
    over the classes (weighted), zero where the target is ignored, reduced like the loss."""
    class_dim = _class_axis(log_probabilities)
    classes = log_probabilities.shape[class_dim]
    if weight is not None:
        smooth = -(log_probabilities * _weight_along_classes(weight, log_probabilities)).sum(class_dim)
    else:
        smooth = -log_probabilities.sum(class_dim)
    smooth.masked_fill_(target.eq(ignore_index), 0.0)
    if reduction == "mean":
        if weight is not None:
            backend = log_probabilities._backend
            _, _, total = _nll_terms(backend, log_probabilities._data, target._data, weight._data, ignore_index)
            denominator = Tensor._make(total, backend=backend)
        else:
            denominator = target.ne(ignore_index).sum()
        smooth = smooth.sum() / denominator
    elif reduction == "sum":
        smooth = smooth.sum()
    return MulBackward1.apply(loss, 1 - label_smoothing) + MulBackward1.apply(smooth, label_smoothing / classes)


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """PyTorch's composite: ``(input - target).abs()``, then ``mean()`` or ``sum()`` (no node of its own)."""
    input, target = _broadcast_pair(input, target, stacklevel=3)
    return _l1(input, target, reduction, weight)


def _l1(input, target, reduction: str, weight=None):
    _reduction(reduction)
    errors = (input - target).abs()
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        errors = errors * weight
        if reduction == "mean":
            return errors.sum() / weight.sum()
    return errors.mean() if reduction == "mean" else errors.sum() if reduction == "sum" else errors


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
    """One node (SmoothL1LossBackward0); with ``beta=0`` it is exactly the L1 loss, as PyTorch computes it."""
    input, target = _broadcast_pair(input, target, stacklevel=3)
    if beta == 0.0:
        return _l1(input, target, reduction)
    return SmoothL1LossBackward0.apply(input, target, _reduction(reduction), beta)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    """One node (HuberLossBackward0); a ``weight`` multiplies the unreduced loss, which is then reduced."""
    input, target = _broadcast_pair(input, target, stacklevel=3)
    if weight is None:
        return HuberLossBackward0.apply(input, target, _reduction(reduction), delta)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = HuberLossBackward0.apply(input, target, 0, delta) * weight
    if reduction not in REDUCTIONS:
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    return weighted.mean() if reduction == "mean" else weighted.sum() if reduction == "sum" else weighted


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
    """PyTorch's composite, node for node: ``target · (log target - input)``, written as
    ``xlogy(target, target) - target * input`` (or ``exp(target) * (target - input)`` for a log target),
    then reduced; ``'batchmean'`` sums and divides by the batch size (the mathematical KL divergence)."""
    import warnings

    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    inner = "sum" if reduction == "batchmean" else reduction
    _reduction(inner)
    if log_target:
        pointwise = target.exp() * (target - input)
    else:
        pointwise = _xlogy_self(target) - target * input
    loss = pointwise.mean() if inner == "mean" else pointwise.sum() if inner == "sum" else pointwise
    if reduction == "batchmean" and input.ndim != 0:
        loss = loss / input.shape[0]
    return loss


def _xlogy_self(target):
    """``target · log(target)``, 0 where the target is 0 (PyTorch's ``xlogy(target, target)``).

    A target that needs no gradient (the usual case) gives a constant, as in PyTorch's graph; one that
    does is recorded with ``where``/``log``/``mul`` (PyTorch records one XlogyBackward0 node there)."""
    from gradviz.grad_mode import no_grad
    from gradviz.ops.comparison import where

    def compute():
        return where(target == 0, 0.0, target * target.log())

    if not target.requires_grad:
        with no_grad():
            return compute()
    return compute()
