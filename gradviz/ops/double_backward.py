"""Ops that appear only in the graph of a gradient (``create_graph=True``).

Some of PyTorch's backward formulas are ops of their own: ``tanh``'s backward is
``tanh_backward(grad, result)``, so differentiating a tanh twice records a
``TanhBackwardBackward0`` node. Each class here is such an op: its forward is the first
derivative (what the first-order node computes on arrays), its backward the second.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops.indexing import IndexPutBackward0
from gradviz.ops._util import broadcast_shapes, meta, promote, saved_dim, to_input, wrap_dim
from gradviz.tensor import Tensor


def _first_derivative(ctx, name: str, grad_output, output):
    """The forward of an activation's backward op: the backend's ``tanh_backward`` or ``sigmoid_backward``."""
    ctx.save(grad_output=grad_output, output=output)
    ctx.metas = (meta(grad_output), meta(output))
    return getattr(grad_output._backend, name)(grad_output._data, output._data)


def _summed_back(ctx, grads):
    """Gradients summed back to their inputs' shapes, as ``validate_outputs`` does (the inputs of these
    nodes broadcast against each other under a batched pass: ``tests/test_higher_order_batched.py``)."""
    metas = getattr(ctx, "metas", None)
    if metas is None:
        return grads
    if any(isinstance(g, Tensor) for g in grads):
        from gradviz.ops._util import sum_to_tensor

        return tuple(None if g is None else sum_to_tensor(g, m[0]) for g, m in zip(grads, metas))
    return tuple(None if g is None else to_input(ctx.backend, g, m) for g, m in zip(grads, metas))


class TanhBackwardBackward0(OpFunction):
    """``tanh_backward(grad_output, output) = grad_output * (1 - output**2)``."""

    inputs = ("grad_output", "output")
    derivatives = {"grad_output": ("tanh_backward(grad, output)", r"\bar{z}\,(1 - y^{2})"),
                   "output": ("grad * (-2 * output * grad_output)", r"-2\,\bar{z}\,y\,\bar{y}")}

    def forward(ctx, grad_output, output):
        return _first_derivative(ctx, "tanh_backward", grad_output, output)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, output = ctx.saved("grad_output", "output")
        return (backend.tanh_backward(grad, output) if ctx.needs_input_grad[0] else None,
                backend.mul(grad, backend.mul(backend.mul(output, -2.0), grad_output)) if ctx.needs_input_grad[1]
                else None)

    def backward_graph(ctx, grad):
        grad_output, output = ctx.saved_graph("grad_output", "output")
        return (TanhBackwardBackward0.apply(grad, output) if ctx.needs_input_grad[0] else None,
                grad * (_scalar_mul(output, -2) * grad_output) if ctx.needs_input_grad[1] else None)


class SigmoidBackwardBackward0(OpFunction):
    """``sigmoid_backward(grad_output, output) = grad_output * output * (1 - output)``."""

    inputs = ("grad_output", "output")
    derivatives = {"grad_output": ("sigmoid_backward(grad, output)", r"\bar{z}\,y\,(1 - y)"),
                   "output": ("grad * grad_output * (-2 * output + 1)", r"\bar{z}\,\bar{y}\,(1 - 2y)")}

    def forward(ctx, grad_output, output):
        return _first_derivative(ctx, "sigmoid_backward", grad_output, output)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, output = ctx.saved("grad_output", "output")
        return _summed_back(ctx, (backend.sigmoid_backward(grad, output) if ctx.needs_input_grad[0] else None,
                                  backend.mul(backend.mul(grad, grad_output), backend.add(backend.mul(output, -2.0), 1.0))
                                  if ctx.needs_input_grad[1] else None))

    def backward_graph(ctx, grad):
        grad_output, output = ctx.saved_graph("grad_output", "output")
        if not ctx.needs_input_grad[1]:
            return _summed_back(ctx, (SigmoidBackwardBackward0.apply(grad, output) if ctx.needs_input_grad[0] else None,
                                      None))
        first = SigmoidBackwardBackward0.apply(grad, output) if ctx.needs_input_grad[0] else None
        factor = _scalar_add(_scalar_mul(output, -2), 1)  # C++ builds the right operand of a * b first
        return _summed_back(ctx, (first, (grad * grad_output) * factor))


class ThresholdBackwardBackward0(OpFunction):
    """``threshold_backward(grad_output, self, threshold)``: ``grad_output`` where ``self > threshold``."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("threshold_backward(grad, self, threshold)", r"\bar{z}\,[y > 0]"),
                   "self": ("zeros_like(grad)", "0")}

    def forward(ctx, grad_output, self, threshold=0):
        ctx.save(self=self, threshold=threshold)
        ctx.metas = (meta(grad_output), meta(self))
        backend = grad_output._backend
        return backend.where(backend.gt(self._data, threshold), grad_output._data, 0.0) if threshold else \
            backend.relu_backward(grad_output._data, self._data)

    def backward(ctx, grad):
        backend = ctx.backend
        self, threshold = ctx.saved("self", "threshold")
        return _summed_back(ctx, (backend.relu_backward(grad, self) if not threshold else
                                  backend.where(backend.gt(self, threshold), grad, 0.0),
                                  backend.zeros_like(grad) if ctx.needs_input_grad[1] else None))

    def backward_graph(ctx, grad):
        self, threshold = ctx.saved_graph("self", "threshold")
        zeros = Tensor._make(ctx.backend.zeros_like(grad._data), backend=ctx.backend)
        return _summed_back(ctx, (ThresholdBackwardBackward0.apply(grad, self, threshold) if ctx.needs_input_grad[0]
                                  else None, zeros if ctx.needs_input_grad[1] else None))


class MseLossBackwardBackward0(OpFunction):
    """``mse_loss_backward(grad_output, self, target, reduction) = norm * (self - target) * grad_output``,
    with ``norm = 2 / n`` for ``'mean'`` and 2 otherwise."""

    inputs = ("grad_output", "self", "target")
    derivatives = {"grad_output": ("mse_loss_double_backward_grad_output(grad, grad_output, self, target, reduction)",
                                   r"\tfrac{2}{n}\,\bar{z}\,(x - t)"),
                   "self": ("mse_loss_double_backward(grad * grad_output, self, reduction)",
                            r"\tfrac{2}{n}\,\bar{z}\,\bar{y}"),
                   "target": ("-mse_loss_double_backward(grad * grad_output, target, reduction)",
                              r"-\tfrac{2}{n}\,\bar{z}\,\bar{y}")}

    def forward(ctx, grad_output, self, target, reduction=1):
        ctx.save(grad_output=grad_output, reduction=reduction, self=self, target=target)
        ctx.metas = (meta(grad_output), meta(self), meta(target))
        backend = self._backend
        x, t = promote(self, target)
        norm = 2.0 / _numel(x.shape) if reduction == 1 else 2.0
        return backend.mul(backend.mul(backend.sub(x, t), norm), grad_output._data)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, x, t, reduction = ctx.saved("grad_output", "self", "target", "reduction")
        norm = 2.0 / _numel(x.shape) if reduction == 1 else 2.0
        needs = ctx.needs_input_grad
        grad_grad_output = None
        if needs[0]:
            local = backend.mul(backend.mul(backend.sub(x, t), norm), grad)
            grad_grad_output = local if reduction == 0 else backend.sum(local, None)
        scaled = backend.mul(backend.mul(grad, grad_output), norm) if needs[1] or needs[2] else None
        return (to_input(backend, grad_grad_output, ctx.metas[0]) if needs[0] else None,
                to_input(backend, scaled, ctx.metas[1]) if needs[1] else None,
                to_input(backend, backend.neg(scaled), ctx.metas[2]) if needs[2] else None)

    def backward_graph(ctx, grad):
        """derivatives.yaml's ``mse_loss_backward`` entries, op for op: ``grad_output``: ``mse_loss_backward(grad,
        ...)`` for 'none', else ``(mse_loss_backward(ones_like(grad_output), ...) * grad).sum()``; ``self``:
        ``2 * (grad * grad_output)``, ``/= n`` for 'mean'; ``target``: the same, negated."""
        grad_output, self, target, reduction = ctx.saved_graph("grad_output", "self", "target", "reduction")
        needs = ctx.needs_input_grad
        grads = [None, None, None]
        if needs[0]:
            if reduction == 0:
                grads[0] = MseLossBackwardBackward0.apply(grad, self, target, reduction)
            else:
                ones = Tensor._make(ctx.backend.full(tuple(grad_output.shape), 1, grad_output.dtype, grad_output.device),
                                    backend=ctx.backend)
                grads[0] = (MseLossBackwardBackward0.apply(ones, self, target, reduction) * grad).sum()
        if needs[1]:
            grads[1] = _mse_loss_double_backward(grad * grad_output, self, reduction)
        if needs[2]:
            grads[2] = -_mse_loss_double_backward(grad * grad_output, target, reduction)
        return tuple(grads)


def _mse_loss_double_backward(grad, input, reduction: int):
    """PyTorch's ``mse_loss_double_backward``: ``2 * grad``, then ``/= n`` (in place) for 'mean'."""
    from gradviz.ops import inplace
    from gradviz.ops.arithmetic import DivBackward1

    grad_input = _scalar_mul(grad, 2)
    if reduction == 1:
        inplace.apply_(grad_input, DivBackward1.apply, input.numel())
    return grad_input


class SgnBackward0(OpFunction):
    """``sgn(x)``: -1, 0 or 1 (``abs``'s derivative, recorded as an op). Flat wherever it is defined,
    so its own gradient is zero (PyTorch sends a zero tensor that records nothing)."""

    inputs = ("self",)
    derivatives = {"self": ("sgn_backward(self, grad, result)", "0")}

    def forward(ctx, self):
        ctx.save(self=self)
        ctx.save_result()
        return self._backend.sign(self._data)

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        return Tensor._make(ctx.backend.zeros_like(grad._data), backend=ctx.backend)


class ScatterBackward0(OpFunction):
    """``self.scatter(dim, index, src)``: ``src``'s elements written into a copy of ``self`` where ``index``
    points along ``dim``. ``self``'s gradient is the incoming one with the written places zeroed; ``src``'s
    reads the incoming one back at ``index``. A recorded backward makes it too (``max(dim)``'s:
    ``zeros.scatter(dim, indices, grad)``, where ``self`` needs no gradient)."""

    inputs = ("self", "src")
    derivatives = {"self": ("grad.scatter(dim, index, 0)", r"\bar{z}\,[\text{not written}]"),
                   "src": ("grad.gather(dim, index)", r"\bar{z}_{\mathrm{index}}")}

    def forward(ctx, self, src, dim, index):
        return _write_along(ctx, self, src, dim, index, "scatter")

    def backward(ctx, grad):
        backend, index = ctx.backend, ctx.saved("index")
        kept = backend.scatter(backend.copy(grad), ctx.axis, index, 0) if ctx.needs_input_grad[0] else None
        return kept, _fit_source(ctx, backend.gather(grad, ctx.axis, index))

    def backward_graph(ctx, grad):
        from gradviz.ops.indexing import gather
        from gradviz.ops.scatter import scatter

        index = ctx.saved_graph("index")
        kept = scatter(grad, ctx.dim, index, 0) if ctx.needs_input_grad[0] else None
        return kept, gather(grad, ctx.dim, index)


class ScatterAddBackward0(ScatterBackward0):
    """``self.scatter_add(dim, index, src)``: ``src``'s elements added into a copy of ``self`` where ``index``
    points. ``self``'s gradient passes through; ``src``'s reads it back at ``index``. A recorded backward
    makes it too (``gather``'s: ``zeros.scatter_add(dim, index, grad)``)."""

    derivatives = {"self": ("grad", r"\bar{z}"), "src": ("grad.gather(dim, index)", r"\bar{z}_{\mathrm{index}}")}

    def forward(ctx, self, src, dim, index):
        return _write_along(ctx, self, src, dim, index, "scatter_add")

    def backward(ctx, grad):
        gathered = ctx.backend.gather(grad, ctx.axis, ctx.saved("index"))
        return (grad if ctx.needs_input_grad[0] else None), _fit_source(ctx, gathered)


def _write_along(ctx, self, src, dim, index, kernel: str):
    """The forward of scatter and scatter_add: ``src`` written (or added) into a copy of ``self`` at ``index``."""
    ctx.save(dim=saved_dim(dim), index=index)
    axis = wrap_dim(dim, max(self.ndim, 1))
    ctx.dim, ctx.axis, ctx.src_shape = dim, axis, tuple(src.shape)
    return getattr(self._backend, kernel)(self._backend.copy(self._data), axis, index._data, src._data)


def _fit_source(ctx, gathered):
    """The source's gradient is read at ``index``, which may be smaller than the source: PyTorch's engine
    then sums it to the source's shape where it can, and otherwise says the gradient is invalid."""
    from gradviz.ops._util import sum_to

    shape = getattr(ctx, "src_shape", tuple(gathered.shape))
    if tuple(gathered.shape) == shape:
        return gathered
    lead = len(shape) - gathered.ndim
    if lead < 0 or any(size not in (1, target) for size, target in zip(gathered.shape, shape[lead:])):
        raise RuntimeError(f"Function {type(ctx).__name__} returned an invalid gradient at index 1 - got "
                           f"{list(gathered.shape)} but expected shape compatible with {list(shape)}")
    return sum_to(ctx.backend, ctx.backend.broadcast_to(gathered, shape), shape)


class IndexAddBackward0(OpFunction):
    """``self.index_add(dim, index, source, alpha=1)``: ``alpha * source``'s slices added into a copy of
    ``self`` at ``index`` along ``dim``. A recorded backward makes it too (``index_select``'s:
    ``zeros.index_add_(dim, index, grad)``)."""

    inputs = ("self", "source")
    derivatives = {"self": ("grad", r"\bar{z}"),
                   "source": ("maybe_multiply(grad.index_select(dim, index).expand_as(source), alpha)",
                              r"\bar{z}_{\mathrm{index}}")}

    def forward(ctx, self, source, dim, index, alpha=1):
        ctx.save(alpha=alpha, dim=saved_dim(dim), index=index, source=source, source_dim=source.ndim)
        axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.axis = axis
        backend = self._backend
        values = source._data if alpha == 1 else backend.mul(source._data, alpha)
        return backend.index_add(backend.copy(self._data), (slice(None),) * axis + (index._data,), values)

    def backward(ctx, grad):
        backend, alpha = ctx.backend, ctx.saved("alpha")
        taken = backend.take(grad, ctx.saved("index"), ctx.axis)
        return (grad if ctx.needs_input_grad[0] else None), (taken if alpha == 1 else backend.mul(taken, alpha))

    def backward_graph(ctx, grad):
        """``self``: ``grad``; ``source``: ``maybe_multiply(grad.index_select(dim, index).expand_as(source),
        alpha)`` (the multiply only when alpha is not 1)."""
        from gradviz.ops.indexing import index_select
        from gradviz.ops.shape import expand

        source = ctx.saved_graph("source")
        if source.ndim == 0:  # PyTorch squeezes the index first
            return OpFunction.backward_graph(ctx, grad)
        picked = expand(index_select(grad, _signed(ctx.saved("dim")), ctx.saved_graph("index")), tuple(source.shape))
        alpha = ctx.saved("alpha")
        return (grad if ctx.needs_input_grad[0] else None), (picked if alpha == 1 else picked * alpha)


class IndexPutImplBackward0(IndexPutBackward0):
    """``zeros._index_put_impl_(indices, grad, accumulate=True)``: ``grad`` added into zeros of ``x``'s size
    where ``x[indices]`` read (the recorded backward of advanced indexing, PyTorch's ``index_backward``).
    ``self`` is always those zeros, which need no gradient; ``values``' gradient is ``grad[indices]``."""


class MaskedSelectBackward0(OpFunction):
    """``self.masked_select(mask)``: the elements where ``mask`` (broadcast with ``self``) holds, in order,
    as a 1-D tensor. A user's ``masked_select`` (``ops/selection.py``) and ``masked_fill``'s recorded
    backward (for its value) make it."""

    inputs = ("self",)
    derivatives = {"self": ("masked_select_backward(grad, self, mask)", r"\bar{z}\ \mathrm{where}\ m,\ 0\ \mathrm{elsewhere}")}

    def forward(ctx, self, mask):
        ctx.save(mask=mask, self=self)
        backend = self._backend
        shape = ctx.shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        ctx.self_shape = tuple(self.shape)
        return backend.getitem(backend.broadcast_to(self._data, shape), backend.broadcast_to(mask._data, shape))

    def backward(ctx, grad):
        from gradviz import _dtype
        from gradviz.ops._util import sum_to

        backend = ctx.backend
        mask = backend.broadcast_to(ctx.saved("mask"), ctx.shape)
        out = backend.full(ctx.shape, 0, _dtype.from_any(grad.dtype), backend.device_of(grad))
        return sum_to(backend, backend.assign(out, grad, mask), ctx.self_shape)

    def backward_graph(ctx, grad):
        """PyTorch's ``masked_select_backward``: zeros of the broadcast size, ``masked_scatter_(mask, grad)``
        into them in place (MaskedScatterBackward0), summed back to ``self``'s size."""
        from gradviz.ops import inplace
        from gradviz.ops._util import sum_to_tensor

        mask = ctx.saved_graph("mask")
        zeros = Tensor._make(ctx.backend.full(ctx.shape, 0, grad.dtype, grad.device), backend=ctx.backend)
        return sum_to_tensor(inplace.apply_(zeros, _masked_scatter, mask, grad), ctx.self_shape)


def _masked_scatter(self, mask, source):
    return MaskedScatterBackward0.apply(self, source, mask)


class MaskedScatterBackward0(OpFunction):
    """``self.masked_scatter(mask, source)``: ``source``'s first elements, in order, written where ``mask``
    holds. Only a recorded backward makes it here (``masked_select``'s, into zeros)."""

    inputs = ("self", "source")
    derivatives = {"self": ("grad.masked_fill(mask, 0)", r"\bar{z}\,[\lnot m]"),
                   "source": ("masked_scatter_backward(grad, mask, source.sizes())", r"\bar{z}\ \mathrm{where}\ m")}

    def forward(ctx, self, source, mask):
        ctx.save(mask=mask, source_sym_sizes=tuple(source.shape))
        ctx.metas = (meta(self), meta(source))
        backend = self._backend
        shape = broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        picked = backend.broadcast_to(mask._data, shape)
        count = int(backend.to_numpy(picked).sum())
        out = backend.copy(backend.broadcast_to(self._data, shape))
        return backend.assign(out, backend.reshape(source._data, (-1,))[:count], picked)

    def backward(ctx, grad):
        backend = ctx.backend
        mask, sizes = ctx.saved("mask", "source_sym_sizes")
        mask = backend.broadcast_to(mask, grad.shape)
        grad_self = to_input(backend, backend.where(mask, 0, grad), ctx.metas[0]) \
            if ctx.needs_input_grad[0] else None
        grad_source = None
        if ctx.needs_input_grad[1]:
            picked = backend.getitem(grad, mask)
            missing = _numel(sizes) - picked.shape[0]
            if missing:
                picked = backend.concatenate([picked, backend.full((missing,), 0, _dtype_of(grad), backend.device_of(grad))], 0)
            grad_source = backend.reshape(picked, sizes)
        return grad_self, grad_source

    def backward_graph(ctx, grad):
        """``self``: ``grad.masked_fill(mask, 0)``; ``source``: ``masked_scatter_backward(grad, mask, sizes)``,
        an op of its own in PyTorch (MaskedScatterBackwardBackward0)."""
        from gradviz.ops._util import sum_to_tensor

        mask, sizes = ctx.saved_graph("mask"), ctx.saved("source_sym_sizes")
        grad_self = sum_to_tensor(grad.masked_fill(mask, 0), ctx.metas[0][0]) if ctx.needs_input_grad[0] else None
        grad_source = None
        if ctx.needs_input_grad[1]:  # PyTorch's masked_scatter_backward, an op of its own
            grad_source = MaskedScatterBackwardBackward0.apply(grad, mask, sizes)
        return grad_self, grad_source


class MaskedScatterBackwardBackward0(OpFunction):
    """``masked_scatter_backward(grad_output, mask, sizes)``: the elements of ``grad_output`` where ``mask``
    holds, in order, zeros appended up to ``prod(sizes)``, shaped as ``sizes`` (the source's gradient of a
    masked_scatter, recorded). Its own gradient: ``zeros_like(grad_output).masked_scatter(mask, grad)``."""

    inputs = ("grad_output",)
    derivatives = {"grad_output": ("zeros_like(grad_output).masked_scatter(mask, grad)", r"\bar{z}\ \mathrm{where}\ m")}

    def forward(ctx, grad_output, mask, sizes):
        ctx.save(mask=mask)
        ctx.shape, ctx.dtype, ctx.device = tuple(grad_output.shape), grad_output.dtype, grad_output.device
        backend = grad_output._backend
        grad = grad_output._data
        picked = backend.getitem(grad, backend.broadcast_to(mask._data, grad.shape))
        missing = _numel(sizes) - picked.shape[0]
        if missing:
            picked = backend.concatenate([picked, backend.full((missing,), 0, _dtype_of(grad), backend.device_of(grad))], 0)
        return backend.reshape(picked, tuple(sizes))

    def backward(ctx, grad):
        backend = ctx.backend
        mask = backend.broadcast_to(ctx.saved("mask"), ctx.shape)
        count = int(backend.to_numpy(mask).sum())
        out = backend.full(ctx.shape, 0, ctx.dtype, ctx.device)
        return backend.assign(out, backend.reshape(grad, (-1,))[:count], mask)

    def backward_graph(ctx, grad):
        zeros = Tensor._make(ctx.backend.full(ctx.shape, 0, ctx.dtype, ctx.device), backend=ctx.backend)
        return _masked_scatter(zeros, ctx.saved_graph("mask"), grad)


def _dtype_of(array):
    from gradviz import _dtype

    return _dtype.from_any(array.dtype)


class BinaryCrossEntropyBackwardBackward0(OpFunction):
    """``binary_cross_entropy_backward(grad_output, self, target, weight, reduction)
    = grad_output * w * (x - t) / max(x (1 - x), 1e-12)``, divided by n for ``'mean'``."""

    inputs = ("grad_output", "self", "target")
    derivatives = {"grad_output": ("binary_cross_entropy_double_backward_grad_output(grad, self, target, weight, "
                                   "reduction)", r"\bar{z}\,w\,\frac{x - t}{x(1 - x)}"),
                   "self": ("binary_cross_entropy_double_backward(grad_output, grad, self, target, weight, reduction)",
                            r"\bar{z}\,\bar{y}\,w\,\frac{x^2 - 2xt + t}{x^2 (1 - x)^2}"),
                   "target": ("binary_cross_entropy_double_backward_target(grad, grad_output, self, target, weight, "
                              "reduction)", r"-\bar{z}\,\bar{y}\,w\,\frac{1}{x(1 - x)}")}

    def forward(ctx, grad_output, self, target, weight, reduction):
        from gradviz.ops.loss import BCE_EPSILON

        ctx.save(grad_output=grad_output, reduction=reduction, self=self, target=target, weight=weight)
        ctx.metas = (meta(grad_output), meta(self), meta(target))
        backend = self._backend
        x, t = promote(self, target)
        local = backend.div(backend.sub(x, t), backend.maximum(backend.mul(backend.sub(1.0, x), x), BCE_EPSILON))
        return backend.mul(_bce_scaled(backend, local, weight, reduction, x), grad_output._data)

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, x, t, weight, reduction = ctx.saved("grad_output", "self", "target", "weight", "reduction")
        needs = ctx.needs_input_grad
        eps = 1e-12  # PyTorch's in the second derivatives: x + eps and 1 - x + eps
        below = backend.mul(backend.add(x, eps), backend.add(backend.sub(1.0, x), eps))
        result = [None, None, None]
        if needs[0]:
            local = backend.mul(_bce_weighted(backend, backend.div(backend.sub(x, t), below), weight), grad)
            total = backend.sum(local, None)
            result[0] = to_input(backend, local if reduction == 0 else total if reduction == 2
                                 else backend.div(total, _numel(x.shape)), ctx.metas[0])
        scaled = backend.mul(grad, grad_output)
        if needs[1]:
            top = backend.add(backend.sub(backend.mul(x, x), backend.mul(backend.mul(x, t), 2.0)), t)
            result[1] = to_input(backend, _bce_scaled(backend, backend.mul(backend.div(top, backend.mul(below, below)),
                                                                             scaled), weight, reduction, x), ctx.metas[1])
        if needs[2]:
            result[2] = to_input(backend, _bce_scaled(backend, backend.neg(backend.div(scaled, below)), weight,
                                                      reduction, x), ctx.metas[2])
        return tuple(result)

    def backward_graph(ctx, grad):
        """PyTorch's three composites, op for op, in the order of the op's inputs (grad_output, self, target), with
        C++'s scalar operators: ``x + eps`` is ``add(x, eps)``, ``1 - x`` is ``empty_like(x).fill_(1).sub_(x)``,
        ``2 * x`` is ``x.mul(2)``, and the right operand of a binary operator is built first."""
        from gradviz.grad_mode import no_grad
        from gradviz.ops import inplace
        from gradviz.ops.arithmetic import DivBackward1
        from gradviz.ops._util import sum_to_tensor

        grad_output, x, t, weight, reduction = ctx.saved_graph("grad_output", "self", "target", "weight", "reduction")
        needs = ctx.needs_input_grad
        eps = 1e-12
        grads = [None, None, None]
        if needs[0]:  # binary_cross_entropy_double_backward_grad_output
            spread = _scalar_add(_one_minus(x), eps)
            spread = _scalar_add(x, eps) * spread
            local = (x - t) / spread
            local.mul_(grad)
            grads[0] = sum_to_tensor(_bce_double_scaled(local, weight, reduction, x), tuple(grad_output.shape))
        if needs[1]:  # binary_cross_entropy_double_backward
            x_plus_eps, one_minus_x_plus_eps = _scalar_add(x, eps), _scalar_add(_one_minus(x), eps)
            below = one_minus_x_plus_eps.pow(2)
            below = x_plus_eps.pow(2) * below
            top = _scalar_mul(x, 2) * t
            top = (x * x - top) + t
            local = top / below
            local.mul_(grad * grad_output)
            grads[1] = _bce_double_scaled(local, weight, reduction, x)
        if needs[2]:  # binary_cross_entropy_double_backward_target
            local = -grad * grad_output
            if weight is not None:
                local.mul_(weight)
            spread = _one_minus(x).mul_(x)
            with no_grad():
                spread.clamp_(min=eps)
            local.div_(spread)
            if reduction == 1:
                inplace.apply_(local, DivBackward1.apply, t.numel())
            grads[2] = local
        return tuple(grads)


def _one_minus(tensor):
    """``1 - tensor`` as ATen's C++ operator computes it: ``empty_like(tensor).fill_(1).sub_(tensor)``."""
    ones = Tensor._make(tensor._backend.full(tuple(tensor.shape), 1, tensor.dtype, tensor.device), backend=tensor._backend)
    return ones.sub_(tensor)


def _bce_double_scaled(local, weight, reduction: int, x):
    """``*= weight`` in place, then ``/ n`` (DivBackward1) for 'mean': the end of two of BCE's second derivatives."""
    from gradviz.ops.arithmetic import DivBackward1

    if weight is not None:
        local.mul_(weight)
    return DivBackward1.apply(local, x.numel()) if reduction == 1 else local


def _bce_weighted(backend, values, weight):
    return values if weight is None else backend.mul(values, weight if not isinstance(weight, Tensor) else weight._data)


def _bce_scaled(backend, values, weight, reduction, x):
    """``values`` times the weight, divided by the element count for ``'mean'``."""
    values = _bce_weighted(backend, values, weight)
    return backend.div(values, _numel(x.shape)) if reduction == 1 else values


class SelectBackwardBackward0(OpFunction):
    """``select_backward(grad_output, sizes, dim, index)``: zeros of the input's size, with
    ``grad_output`` at ``index`` along ``dim`` (the backward of ``x[i]``, as an op)."""

    inputs = ("grad_output",)
    derivatives = {"grad_output": ("grad.select_symint(dim, index)", r"\bar{z}_{i}")}

    def forward(ctx, grad_output, sizes, dim, index, saved_index, saved_dim_value=None):
        """``dim``, ``index``: wrapped; ``saved_index``, ``saved_dim_value``: as SelectBackward0 saved them."""
        ctx.save(dim=dim if saved_dim_value is None else saved_dim_value, index=saved_index)
        key = ctx.key = (slice(None),) * dim + (index,)
        return _scatter(grad_output, sizes, key)

    def backward(ctx, grad):
        return ctx.backend.getitem(grad, ctx.key + (Ellipsis,))

    def backward_graph(ctx, grad):
        """``grad.select(dim, index)`` with the dim and index as given (SelectBackward0 saves them so)."""
        from gradviz.ops.shape import select

        dim, index = ctx.saved("dim", "index")
        return select(grad, len(ctx.key) - 1, ctx.key[-1], given=_signed(index), given_dim=_signed(dim))


class SliceBackwardBackward0(OpFunction):
    """``slice_backward(grad_output, sizes, dim, start, end, step)``: zeros of the input's size, with
    ``grad_output`` in the slice (the backward of ``x[a:b]``, as an op)."""

    inputs = ("grad_output",)
    derivatives = {"grad_output": ("grad.slice_symint(dim, start, end, step)", r"\bar{z}_{a:b}")}

    def forward(ctx, grad_output, sizes, key, saved):
        ctx.save(**saved)
        ctx.key = key
        return _scatter(grad_output, sizes, key)

    def backward(ctx, grad):
        return ctx.backend.getitem(grad, ctx.key)

    def backward_graph(ctx, grad):
        """``grad.slice(dim, start, end, step)`` with the bounds as given (SliceBackward0 saves them so)."""
        from gradviz.ops.shape import slice_along

        dim, start, end, step = ctx.saved("dim", "start", "end", "step")
        bounds = ctx.key[-1]
        return slice_along(grad, len(ctx.key) - 1, bounds.start, bounds.stop, bounds.step,
                           given=(_signed(start), _signed(end)), given_dim=_signed(dim))


class DiagonalBackwardBackward0(OpFunction):
    """``diagonal_backward(grad_output, sizes, offset, dim1, dim2)``: zeros of the input's size with
    ``grad_output`` on the diagonal (the backward of ``x.diagonal()``, as an op)."""

    inputs = ("grad_output",)
    derivatives = {"grad_output": ("grad.diagonal(offset, dim1, dim2)", r"\mathrm{diag}(\bar{z})")}

    def forward(ctx, grad_output, sizes, axes, saved):
        """``axes``: the two dims wrapped; ``saved``: offset, dim1, dim2 as DiagonalBackward0 saved them."""
        from gradviz.ops.matrix import _onto_diagonal

        ctx.save(**saved)
        ctx.axes = axes
        return _onto_diagonal(grad_output._backend, grad_output._data, sizes, _signed(saved["offset"]), *axes)

    def backward(ctx, grad):
        return ctx.backend.diagonal(grad, _signed(ctx.saved("offset")), *ctx.axes)

    def backward_graph(ctx, grad):
        """``grad.diagonal(offset, dim1, dim2)`` with the dims as given."""
        from gradviz.ops.matrix import diagonal

        offset, dim1, dim2 = ctx.saved("offset", "dim1", "dim2")
        return diagonal(grad, _signed(offset), _signed(dim1), _signed(dim2))


class IndexFillBackward1(OpFunction):
    """``self.index_fill(dim, index, value)`` with a 0-dim tensor ``value``: a copy of ``self`` with
    ``value`` at ``index`` along ``dim``. PyTorch's ``trace`` backward builds its gradient so."""

    inputs = ("self", "value")
    derivatives = {"self": ("grad.index_fill(dim, index, 0)", r"\bar{z}\ \text{with 0 at the filled places}"),
                   "value": ("grad.index_select(dim, std::get<0>(at::_unique(index, false))).sum()",
                             r"\textstyle\sum \bar{z}\ \text{at the filled places}")}

    def forward(ctx, self, value, dim, index):
        ctx.save(dim=saved_dim(dim), index=index)
        key = ctx.key = (slice(None),) * wrap_dim(dim, max(self.ndim, 1)) + (index._data,)
        backend = self._backend
        return backend.assign(backend.copy(self._data), backend.astype(value._data, self.dtype), key)

    def backward(ctx, grad):
        backend = ctx.backend
        filled = backend.assign(backend.copy(grad), 0, ctx.key) if ctx.needs_input_grad[0] else None
        if not ctx.needs_input_grad[1]:
            return filled, None
        unique = ctx.key[:-1] + (sorted(set(ctx.key[-1].tolist())),)
        return filled, backend.sum(backend.getitem(grad, unique), None)

    def backward_graph(ctx, grad):
        """The input's: ``grad.index_fill(dim, index, 0)`` (IndexFillBackward0, by a number), made first; the
        value's: ``grad.index_select(dim, unique(index)).sum()``."""
        from gradviz.ops.indexing import index_select

        dim, index = ctx.saved("dim", "index")
        filled = grad.index_fill(_signed(dim), ctx.saved_graph("index"), 0) if ctx.needs_input_grad[0] else None
        if not ctx.needs_input_grad[1]:
            return filled, None
        unique = Tensor._make(ctx.backend.array(sorted(set(index.tolist())), _dtype.int64), backend=ctx.backend)
        return filled, index_select(grad, _signed(dim), unique).sum()


def _signed(saved: int) -> int:
    """A dim, index or bound as given, from its saved form (negatives read back as uint64)."""
    return saved - 2**64 if saved >= 2**63 else saved


def _scatter(grad_output, sizes, key):
    backend = grad_output._backend
    out = backend.full(tuple(sizes), 0, grad_output.dtype, grad_output.device)
    return backend.assign(out, grad_output._data, key)


def _save_softmax_data(ctx, grad_output, output, axis: int, saved_dim):
    """What a (log-)softmax backward op keeps, as PyTorch names it; returns the backend to compute with."""
    ctx.save(dim=saved_dim, grad_output=grad_output, output=output)
    ctx.axis = axis
    return output._backend


class LogSoftmaxBackwardDataBackward0(OpFunction):
    """``_log_softmax_backward_data(grad_output, output, dim) = grad_output - exp(output) * sum(grad_output)``."""

    inputs = ("grad_output", "output")
    derivatives = {"grad_output": ("grad - (grad * output.exp()).sum(dim, true)", r"\bar{z} - \textstyle\sum \bar{z}\,e^{y}"),
                   "output": ("-grad * output.exp() * grad_output.sum(dim, true)",
                              r"-\bar{z}\,e^{y} \textstyle\sum \bar{y}")}

    def forward(ctx, grad_output, output, axis, saved_dim):
        backend = _save_softmax_data(ctx, grad_output, output, axis, saved_dim)
        total = backend.sum(grad_output._data, axis, keepdims=True)
        return backend.sub(grad_output._data, backend.mul(backend.exp(output._data), total))

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, output = ctx.saved("grad_output", "output")
        exp_output = backend.exp(output)
        return (backend.sub(grad, backend.sum(backend.mul(grad, exp_output), ctx.axis, keepdims=True))
                if ctx.needs_input_grad[0] else None,
                backend.neg(backend.mul(backend.mul(grad, exp_output), backend.sum(grad_output, ctx.axis, keepdims=True)))
                if ctx.needs_input_grad[1] else None)

    def backward_graph(ctx, grad):
        """``grad_output``: ``grad - (grad * output.exp()).sum(dim, true)``; ``output``:
        ``-grad_output.sum(dim, true) * output.exp() * grad`` (C++ builds the right operand first)."""
        grad_output, output = ctx.saved_graph("grad_output", "output")
        dim = _signed(ctx.saved("dim"))
        grad_grad_output = grad_output_input = None
        if ctx.needs_input_grad[0]:
            exp_output = output.exp()
            grad_grad_output = grad - (grad * exp_output).sum(dim, keepdim=True)
        if ctx.needs_input_grad[1]:
            exp_output = output.exp()
            grad_output_input = (-grad_output.sum(dim, keepdim=True) * exp_output) * grad
        return grad_grad_output, grad_output_input


class SoftmaxBackwardDataBackward0(OpFunction):
    """``_softmax_backward_data(grad_output, output, dim) = output * (grad_output - sum(grad_output * output))``."""

    inputs = ("grad_output", "output")
    derivatives = {"grad_output": ("_softmax_backward_data(grad, output, dim)", r"y \odot (\bar{z} - \textstyle\sum \bar{z} y)"),
                   "output": ("grad * grad_output - grad * S - grad_output * sum(grad * output)",
                              r"\bar{z}\,\bar{y} - \bar{z} S - \bar{y} \textstyle\sum \bar{z} y")}

    def forward(ctx, grad_output, output, axis, saved_dim):
        backend = _save_softmax_data(ctx, grad_output, output, axis, saved_dim)
        weighted = backend.sum(backend.mul(grad_output._data, output._data), axis, keepdims=True)
        return backend.mul(output._data, backend.sub(grad_output._data, weighted))

    def backward(ctx, grad):
        backend = ctx.backend
        grad_output, output = ctx.saved("grad_output", "output")
        axis = ctx.axis
        grad_weighted = backend.sum(backend.mul(grad, output), axis, keepdims=True)
        grad_grad_output = backend.mul(output, backend.sub(grad, grad_weighted)) if ctx.needs_input_grad[0] else None
        grad_output_weighted = backend.sum(backend.mul(grad_output, output), axis, keepdims=True)
        grad_output_input = backend.sub(backend.sub(backend.mul(grad, grad_output), backend.mul(grad, grad_output_weighted)),
                                        backend.mul(grad_output, grad_weighted)) if ctx.needs_input_grad[1] else None
        return grad_grad_output, grad_output_input

    def backward_graph(ctx, grad):
        """``grad_output``: ``_softmax_backward_data(grad, output, dim)`` (this op again); ``output``: PyTorch's
        ``softmax_double_backward``, ``gO * grad - (output * gO).sum(dim, true) * grad - gO * (output *
        grad).sum(dim, true)``, its operands built right first as C++ builds them."""
        grad_output, output = ctx.saved_graph("grad_output", "output")
        dim = _signed(ctx.saved("dim"))
        grad_grad_output = grad_output_input = None
        if ctx.needs_input_grad[0]:
            grad_grad_output = SoftmaxBackwardDataBackward0.apply(grad, output, ctx.axis, ctx.saved("dim"))
        if ctx.needs_input_grad[1]:
            last = grad_output * (output * grad).sum(dim, keepdim=True)
            middle = (output * grad_output).sum(dim, keepdim=True) * grad
            grad_output_input = (grad_output * grad - middle) - last
        return grad_grad_output, grad_output_input


class NllLossBackwardBackward0(OpFunction):
    """``nll_loss_backward(grad_output, self, target, ...)``: ``-w[t] * grad_output`` at each target class.
    Linear in ``grad_output`` and constant in ``self`` (whose gradient is zero)."""

    inputs = ("grad_output", "self")
    derivatives = {"grad_output": ("nll_loss(grad, target, weight, reduction, ignore_index)", r"-\bar{z}_{t}\,w_t / W"),
                   "self": ("zeros_like(grad)", "0")}

    def forward(ctx, grad_output, self, target, weight, reduction, ignore_index, total):
        from gradviz.ops.loss import IGNORE_INDEX_SAVED, nll_loss_backward

        ctx.save(ignore_index=ignore_index if ignore_index >= 0 else ignore_index + IGNORE_INDEX_SAVED,
                 reduction=reduction, target=target, weight=weight)
        ctx.ignore, ctx.total = ignore_index, total
        return nll_loss_backward(self._backend, grad_output._data, self._data, target._data,
                                 None if weight is None else weight._data, reduction, ignore_index, total._data)

    def backward(ctx, grad):
        from gradviz.ops.loss import _nll_terms

        backend = ctx.backend
        target, weight, reduction = ctx.saved("target", "weight", "reduction")
        picked, kept_weights, _ = _nll_terms(backend, grad, target, weight, ctx.ignore)
        local = backend.neg(backend.mul(picked, kept_weights))
        if reduction == 1:
            local = backend.div(backend.sum(local, None), ctx.total._data)
        elif reduction == 2:
            local = backend.sum(local, None)
        return local if ctx.needs_input_grad[0] else None, backend.zeros_like(grad) if ctx.needs_input_grad[1] else None

    def backward_graph(ctx, grad):
        """``grad_output``: ``nll_loss(grad, target, weight, reduction, ignore_index)`` (NllLossBackward0);
        ``self``: zeros, with no graph."""
        from gradviz.ops.loss import NllLossBackward0

        target, weight, reduction = ctx.saved_graph("target", "weight", "reduction")
        grad_grad_output = NllLossBackward0.apply(grad, target, weight=weight, reduction=reduction,
                                                  ignore_index=ctx.ignore) if ctx.needs_input_grad[0] else None
        zeros = Tensor._make(ctx.backend.zeros_like(grad._data), backend=ctx.backend) if ctx.needs_input_grad[1] else None
        return grad_grad_output, zeros


def _numel(shape) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _scalar_mul(tensor, number):
    """``number * tensor`` as PyTorch's C++ writes it (a Scalar): MulBackward1."""
    from gradviz.ops.arithmetic import MulBackward1

    return MulBackward1.apply(tensor, number)


def _scalar_add(tensor, number):
    """``tensor + number`` as PyTorch's C++ writes it (a Scalar): AddBackward1."""
    from gradviz.ops.arithmetic import AddBackward1

    return AddBackward1.apply(tensor, number)


# -- the recorded forms of cumprod's and prod's backward (PyTorch's FunctionsManual, step by step) ----
def _constant(like: Tensor, shape, value) -> Tensor:
    """A tensor of ``value`` with no history, in ``like``'s dtype and backend (PyTorch's ``at::ones``/``zeros``)."""
    backend = like._backend
    return Tensor._make(backend.full(tuple(shape), value, like.dtype, like.device), backend=backend)


def _slice(tensor: Tensor, dim: int, start: int, end=None) -> Tensor:
    """``tensor.slice(dim, start, end)`` as C++ calls it (an end not given is saved as None)."""
    from gradviz.ops.shape import slice_along

    size = tensor.shape[dim]
    stop = size if end is None else min(end, size)
    return slice_along(tensor, dim, min(start, size), stop, 1, given=(start, end))


def cumprod_backward_graph(grad: Tensor, input: Tensor, dim: int, output: Tensor) -> Tensor:
    """PyTorch's ``cumprod_backward`` with grad mode on: ``reversed_cumsum(output * grad) / input`` when no
    element is 0, else its O(n²) form (each slice's omitted products, copied into a zero gradient)."""
    from gradviz.ops.combine import cat
    from gradviz.ops.matrix import flip
    from gradviz.ops.shape import select
    from gradviz.ops.statistics import cumprod, cumsum, prod

    if input.numel() <= 1:
        return grad
    size = input.shape[dim]
    if size == 1:
        return grad
    weighted = output * grad
    if not input._backend.any(input._backend.eq(input._data, 0)):
        return flip(cumsum(flip(weighted, (dim,)), dim), (dim,)).div(input)
    ones_size = list(input.shape)
    ones_size[dim] = 1
    ones = _constant(grad, ones_size, 1)
    grad_input = _constant(grad, input.shape, 0)
    for k in range(size):
        if k == 0:
            omitted = cat([ones, cumprod(_slice(input, dim, k + 1), dim)], dim)
        elif k == size - 1:
            omitted = prod(_slice(input, dim, 0, k), dim, True)
        else:
            until_k = prod(_slice(input, dim, 0, k), dim, True)
            from_k_plus_1 = cumprod(_slice(input, dim, k + 1), dim)
            omitted = cat([until_k, until_k.expand_as(from_k_plus_1) * from_k_plus_1], dim)
        view = select(grad_input, dim, k)
        view.copy_((_slice(grad, dim, k) * omitted).sum(dim))
    return grad_input


def prod_safe_zeros_backward_graph(grad: Tensor, input: Tensor, dim: int) -> Tensor:
    """PyTorch's ``prod_safe_zeros_backward``: the product of everything before each element (a cumprod of
    ``[1, x_0, ...]``) times the product of everything after it (the same, reversed)."""
    from gradviz.ops.combine import cat
    from gradviz.ops.matrix import flip
    from gradviz.ops.shape import narrow
    from gradviz.ops.statistics import cumprod

    if input.numel() == 0:
        return grad.expand_as(input)
    if input.shape[dim] == 1:  # nothing else to multiply by: the gradient as it came
        return grad
    ones_size = list(input.shape)
    ones_size[dim] = 1
    ones = _constant(grad, ones_size, 1)
    size = input.shape[dim]
    exclusive_normal = cumprod(cat([ones, narrow(input, dim, 0, size - 1)], dim), dim)
    narrow_reverse = flip(narrow(input, dim, 1, size - 1), (dim,))
    exclusive_reverse = flip(cumprod(cat([ones, narrow_reverse], dim), dim), (dim,))
    return grad * (exclusive_normal * exclusive_reverse)


class EmbeddingDenseBackwardBackward0(OpFunction):
    """``embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)``, the op a
    recorded backward of ``embedding`` makes: each gradient row added into the table row it was read from.
    Its own gradient is PyTorch's ``embedding_dense_double_backward``: the rows of ``grad`` read back at the
    indices (``index_select``), 0 at the padding row, viewed to the indices' shape plus one dim (it does not
    scale by frequency, as PyTorch's does not)."""

    inputs = ("grad_output",)
    derivatives = {"grad_output": ("embedding_dense_double_backward_symint(grad, indices, padding_idx)",
                                   r"\bar{z}_{i_k}")}

    def forward(ctx, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
        from gradviz.ops.embedding import NO_PADDING, dense_backward

        ctx.save(indices=indices, padding_idx=padding_idx if padding_idx >= 0 else NO_PADDING)
        ctx.padding = padding_idx
        return dense_backward(grad_output._backend, grad_output._data, indices._data, num_weights, padding_idx,
                              scale_grad_by_freq)

    def backward(ctx, grad):
        backend = ctx.backend
        indices = ctx.saved("indices")
        flat = backend.reshape(indices, (-1,))
        picked = backend.take(grad, flat, 0)
        if ctx.padding >= 0:
            picked = backend.where(backend.reshape(backend.eq(flat, ctx.padding), (-1, 1)), 0, picked)
        return backend.reshape(picked, tuple(indices.shape) + (grad.shape[-1],))

    def backward_graph(ctx, grad):
        indices = ctx.saved_graph("indices")
        picked = grad.index_select(0, indices.reshape(-1))
        if ctx.padding >= 0:
            picked.masked_fill_((indices == ctx.padding).reshape(-1, 1), 0)
        return picked.view(tuple(indices.shape) + (-1,))
