"""``clamp`` with tensor bounds: PyTorch's ClampBackward0, ClampMinBackward1 and ClampMaxBackward1.

(Number bounds are ClampBackward1, ClampMinBackward0 and ClampMaxBackward0, in ``unary.py`` and
``elementwise.py``.) The three tensors broadcast together; the result has their promoted dtype and
carries NaN from the input or from a bound. The gradients are PyTorch's ``clamp_backward_min_max``:

* input: ``grad`` where ``min <= x <= max`` (``x >= min`` or ``x <= max`` with one bound),
* min: ``grad`` where ``x < min`` and ``min < max`` (``x < min`` alone),
* max: ``grad`` where ``x > max`` or ``max < min`` (``x > max`` alone),

each ``where(pred, grad, 0)``, so a tie goes to the input, a NaN anywhere gives 0, and crossed
bounds (``min > max``, where the result is ``max``) send the gradient to ``max``. A recorded backward
(``create_graph=True``) records those ``where`` calls (WhereBackward0), one per input in PyTorch's order.

Mixing a number with a tensor bound raises PyTorch's TypeError, in its function or method wording.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import broadcast_shapes, meta, shape_of, sum_to_tensor, to_input
from gradviz.tensor import Tensor


def _promoted(*tensors) -> list:
    """The tensors' data cast to their promoted dtype (None stays None)."""
    present = [t for t in tensors if t is not None]
    target = _dtype.result_type(tuple(present))
    return [None if t is None else t._data if t.dtype is target else t._backend.astype(t._data, target)
            for t in tensors]


def _clamp_forward(ctx, self, low, high):
    shape = shape_of(self)
    for bound in (low, high):
        if bound is not None:
            shape = broadcast_shapes(shape, shape_of(bound))
    ctx.metas = (meta(self), meta(low) if low is not None else None, meta(high) if high is not None else None)
    backend = self._backend
    values, low_data, high_data = _promoted(self, low, high)
    if low_data is not None:
        values = backend.maximum(values, low_data)
    if high_data is not None:
        values = backend.minimum(values, high_data)
    if tuple(values.shape) != tuple(shape):
        values = backend.copy(backend.broadcast_to(values, shape))
    return values


def _conditions(ctx, low_name="min", high_name="max"):
    """The three predicates of ``clamp_backward_min_max`` (bool arrays; None where not needed)."""
    backend = ctx.backend
    self = ctx.saved("self")
    low = ctx.saved(low_name) if low_name else None
    high = ctx.saved(high_name) if high_name else None
    needs = ctx.needs_input_grad
    if low is not None and high is not None:
        keep = backend.logical_and(backend.ge(self, low), backend.le(self, high)) if needs[0] else None
        to_low = backend.logical_and(backend.lt(self, low), backend.lt(low, high)) if needs[1] else None
        to_high = backend.logical_or(backend.gt(self, high), backend.lt(high, low)) if needs[2] else None
    elif low is not None:
        keep = backend.ge(self, low) if needs[0] else None
        to_low = backend.lt(self, low) if needs[1] else None
        to_high = None
    else:
        keep = backend.le(self, high) if needs[0] else None
        to_low = None
        to_high = backend.gt(self, high) if needs[-1] else None
    return keep, to_low, to_high


def _array_grads(ctx, grad, conditions):
    backend = ctx.backend
    return tuple(None if condition is None else to_input(backend, backend.where(condition, grad, 0), input_meta)
                 for condition, input_meta in zip(conditions, ctx.metas))


def _graph_grads(ctx, grad, conditions):
    """``where(pred, grad, zeros)`` recorded for each input in turn (WhereBackward0), then summed back to
    the input's shape and cast to its dtype as ``validate_outputs`` does."""
    from gradviz.ops.comparison import where

    grads = []
    for condition, input_meta in zip(conditions, ctx.metas):
        if condition is None:
            grads.append(None)
            continue
        zero = Tensor._make(ctx.backend.full((), 0, grad.dtype, grad.device), backend=ctx.backend)
        grads.append(where(Tensor._make(condition, backend=ctx.backend), grad, zero))
    out = []
    for g, input_meta in zip(grads, ctx.metas):
        if g is not None:
            g = sum_to_tensor(g, input_meta[0])
            if g._data.dtype != input_meta[1]:
                g = g.to(_dtype.from_any(input_meta[1]))
        out.append(g)
    return tuple(out)


class ClampBackward0(OpFunction):
    """``clamp(x, min, max)`` with tensor bounds (either may be None: its edge is then empty)."""

    inputs = ("self", "min", "max")
    derivatives = {"self": ("where((self >= min).logical_and_(self <= max), grad, 0)", r"\bar{y}\,[\min \le x \le \max]"),
                   "min": ("where((self < min).logical_and_(min < max), grad, 0)", r"\bar{y}\,[x < \min < \max]"),
                   "max": ("where((self > max).logical_or_(max < min), grad, 0)", r"\bar{y}\,[x > \max \lor \max < \min]")}

    def forward(ctx, self, min, max):
        ctx.save(max=max, min=min, self=self)
        return _clamp_forward(ctx, self, min, max)

    def backward(ctx, grad):
        return _array_grads(ctx, grad, _conditions(ctx))

    def backward_graph(ctx, grad):
        return _graph_grads(ctx, grad, _conditions(ctx))


class ClampMinBackward1(OpFunction):
    """``clamp_min(x, min)`` with a tensor bound."""

    inputs = ("self", "min")
    derivatives = {"self": ("where(self >= min, grad, 0)", r"\bar{y}\,[x \ge \min]"),
                   "min": ("where(self < min, grad, 0)", r"\bar{y}\,[x < \min]")}

    def forward(ctx, self, min):
        ctx.save(min=min, self=self)
        values = _clamp_forward(ctx, self, min, None)
        if ctx.needs_input_grad:  # (nothing was noted when nothing is recorded: no_grad, forward AD's primal)
            ctx.metas = ctx.metas[:2]
        return values

    def backward(ctx, grad):
        return _array_grads(ctx, grad, _conditions(ctx, high_name=None)[:2])

    def backward_graph(ctx, grad):
        return _graph_grads(ctx, grad, _conditions(ctx, high_name=None)[:2])


class ClampMaxBackward1(OpFunction):
    """``clamp_max(x, max)`` with a tensor bound."""

    inputs = ("self", "max")
    derivatives = {"self": ("where(self <= max, grad, 0)", r"\bar{y}\,[x \le \max]"),
                   "max": ("where(self > max, grad, 0)", r"\bar{y}\,[x > \max]")}

    def forward(ctx, self, max):
        ctx.save(max=max, self=self)
        values = _clamp_forward(ctx, self, None, max)
        if ctx.needs_input_grad:  # (nothing was noted when nothing is recorded)
            ctx.metas = (ctx.metas[0], ctx.metas[2])
        return values

    def backward(ctx, grad):
        keep, _, to_high = _conditions(ctx, low_name=None)
        return _array_grads(ctx, grad, (keep, to_high))

    def backward_graph(ctx, grad):
        keep, _, to_high = _conditions(ctx, low_name=None)
        return _graph_grads(ctx, grad, (keep, to_high))


# -- the calls, with PyTorch's TypeError for a number and a tensor mixed ----------------------------------------
_SIGNATURES = ("(Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)",
               "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)")
_METHOD_SIGNATURES = ("(Tensor min = None, Tensor max = None)", "(Number min = None, Number max = None)")


def _type_name(value) -> str:
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _mixed_bounds_error(name, method, positional, keywords) -> TypeError:
    """PyTorch's python_arg_parser message for ``clamp``/``clip`` with a number and a tensor bound."""
    given = [_type_name(value) for value in positional]
    given += [f"{key}={_type_name(value)}" for key, value in sorted(keywords.items())]
    if not method:
        got = ", ".join(["Tensor"] + given)
        lines = "".join(f" * {signature}\n" for signature in _SIGNATURES)
        return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                         f"but expected one of:\n{lines}")
    got = ", ".join(given) + (", " if keywords else "")
    if keywords:
        why = "didn't match because some of the keywords were incorrect: " + ", ".join(sorted(keywords))
    else:
        why = ("didn't match because some of the arguments have invalid types: ("
               + ", ".join(f"!{_type_name(value)}!" for value in positional) + ")")
    lines = "".join(f" * {signature}\n      {why}\n" for signature in _METHOD_SIGNATURES)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{lines}")


def tensor_bounds(name, method, positional, keywords, low, high) -> bool:
    """Whether the bounds are tensors (raising PyTorch's error when a number and a tensor are mixed)."""
    low_tensor, high_tensor = isinstance(low, Tensor), isinstance(high, Tensor)
    if low_tensor or high_tensor:
        if (low is not None and not low_tensor) or (high is not None and not high_tensor):
            raise _mixed_bounds_error(name, method, positional, keywords)
        return True
    return False


def clamp_tensors(input, min, max):
    return ClampBackward0.apply(input, min, max)


def clamp_min_tensor(input, min):
    return ClampMinBackward1.apply(input, min)


def clamp_max_tensor(input, max):
    return ClampMaxBackward1.apply(input, max)


def _bounds(name, method, input, args, kwargs):
    """``(min, max)`` from a call's arguments, checked as PyTorch's parser checks them."""
    if len(args) > 2 or any(key not in ("min", "max") for key in kwargs):
        given = ", ".join(sorted(key for key in kwargs if key not in ("min", "max")))
        raise TypeError(f"{name}() takes at most 3 arguments" if len(args) > 2
                        else f"{name}() got an unexpected keyword argument '{given}'")
    low = args[0] if args else kwargs.get("min")
    high = args[1] if len(args) > 1 else kwargs.get("max")
    tensor_bounds(name, method, args, kwargs, low, high)
    return low, high


def _caller(name: str, method: bool):
    def clamp(input, *args, **kwargs):
        from gradviz.ops.unary import clamp as clamp_numbers

        low, high = _bounds(name, method, input, args, kwargs)
        if isinstance(low, Tensor) or isinstance(high, Tensor):
            return ClampBackward0.apply(input, low, high)
        return clamp_numbers(input, low, high)

    clamp.__name__ = name
    clamp.__doc__ = ("Each element of ``input`` limited to ``[min, max]``; bounds are numbers (ClampBackward1) or "
                     "tensors that broadcast with it (ClampBackward0).")
    return clamp


clamp, clip = _caller("clamp", False), _caller("clip", False)
clamp_method, clip_method = _caller("clamp", True), _caller("clip", True)
