"""Ops that compare or choose between two tensors: ``maximum``, ``minimum``, ``where``, ``> < ==``.

Comparisons return bool tensors and record nothing (a bool has no gradient). ``maximum``,
``minimum`` and ``where`` pass each element's gradient to the operand that element came from.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import backend_of, broadcast_shapes, meta, promote, shape_of, sum_to_tensor, to_input
from gradviz.tensor import Tensor


def _grads(ctx, grad_self, grad_other):
    backend = ctx.backend
    self_meta, other_meta = ctx.metas
    return (to_input(backend, grad_self(), self_meta) if ctx.needs_input_grad[0] else None,
            to_input(backend, grad_other(), other_meta) if ctx.needs_input_grad[1] else None)


def _graph_grads(ctx, grad_self, grad_other):
    """The recorded form of ``_grads`` (``create_graph=True``): each formula in PyTorch's order (the
    second input's, then the first's, as its generated code runs them for ``where``, ``maximum`` and
    ``minimum``), then summed back to its input's shape as ``validate_outputs`` does."""
    needs = ctx.needs_input_grad
    raw_other = grad_other() if needs[1] else None
    raw = (grad_self() if needs[0] else None, raw_other)
    grads = tuple(None if g is None else sum_to_tensor(g, shape) for g, (shape, _) in zip(raw, ctx.metas))
    # -- recorded mixed dtypes: each gradient cast back to its input's dtype (ToCopyBackward0)
    return tuple(g if g is None or dtype is None or g.dtype is dtype else g.to(dtype)
                 for g, (_, dtype) in zip(grads, ctx.metas))


def _mask(ctx, array) -> Tensor:
    """A bool array as a Tensor outside the graph (a condition or mask a recorded formula reads)."""
    return Tensor._make(array, backend=ctx.backend)


def _zero_where(backend, mask, grad):
    return backend.where(mask, 0, grad)  # masked_fill_(mask, 0): +0. (grad * 0 would be -0. or nan)


def _pick_forward(ctx, self, other, pick):
    """Forward of maximum/minimum (``ctx`` may be the no-record stand-in, so ``pick`` is passed)."""
    broadcast_shapes(shape_of(self), shape_of(other))
    ctx.save(other=other, self=self)
    ctx.metas = (meta(self), meta(other))
    x, y = promote(self, other)
    return getattr(self._backend, pick)(x, y)


def _pick_backward(ctx, grad, pick):
    """Each element's gradient goes to the operand it came from; a tie splits it in half."""
    backend = ctx.backend
    self, other = ctx.saved("self", "other")
    shared = backend.where(backend.eq(self, other), backend.div(grad, 2), grad)
    loses_self, loses_other = ((backend.lt(self, other), backend.gt(self, other)) if pick == "maximum"
                               else (backend.gt(self, other), backend.lt(self, other)))
    return _grads(ctx, lambda: _zero_where(backend, loses_self, shared),
                  lambda: _zero_where(backend, loses_other, shared))


def _pick_backward_graph(ctx, grad, pick):
    """``where(self == other, grad / 2, grad).masked_fill_(loses, 0)`` for each input, recorded
    (``grad / 2`` divides by a C++ Scalar: DivBackward1)."""
    from gradviz.ops.arithmetic import DivBackward1

    backend = ctx.backend
    self, other = ctx.saved("self", "other")
    tie = _mask(ctx, backend.eq(self, other))
    loses_self, loses_other = ((backend.lt(self, other), backend.gt(self, other)) if pick == "maximum"
                               else (backend.gt(self, other), backend.lt(self, other)))
    return _graph_grads(ctx, lambda: where(tie, DivBackward1.apply(grad, 2), grad).masked_fill_(_mask(ctx, loses_self), 0),
                        lambda: where(tie, DivBackward1.apply(grad, 2), grad).masked_fill_(_mask(ctx, loses_other), 0))


class MaximumBackward0(OpFunction):
    """Elementwise larger of two tensors; a tie splits the gradient in half, as in PyTorch."""

    inputs = ("self", "other")
    derivatives = {"self": ("at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)",
                            r"\bar{y}\,[a > b] + \tfrac{1}{2}\bar{y}\,[a = b]"),
                   "other": ("at::where(self == other, grad / 2, grad).masked_fill_(self > other, 0)",
                             r"\bar{y}\,[b > a] + \tfrac{1}{2}\bar{y}\,[a = b]")}

    def forward(ctx, self, other):
        return _pick_forward(ctx, self, other, "maximum")

    def backward(ctx, grad):
        return _pick_backward(ctx, grad, "maximum")

    def backward_graph(ctx, grad):
        return _pick_backward_graph(ctx, grad, "maximum")


class MinimumBackward0(MaximumBackward0):
    """Elementwise smaller of two tensors; a tie splits the gradient in half."""

    derivatives = {"self": ("at::where(self == other, grad / 2, grad).masked_fill_(self > other, 0)",
                            r"\bar{y}\,[a < b] + \tfrac{1}{2}\bar{y}\,[a = b]"),
                   "other": ("at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)",
                             r"\bar{y}\,[b < a] + \tfrac{1}{2}\bar{y}\,[a = b]")}

    def forward(ctx, self, other):
        return _pick_forward(ctx, self, other, "minimum")

    def backward(ctx, grad):
        return _pick_backward(ctx, grad, "minimum")

    def backward_graph(ctx, grad):
        return _pick_backward_graph(ctx, grad, "minimum")


class WhereBackward0(OpFunction):
    """``where(condition, self, other)``: the condition picks which input each element's gradient reaches."""

    inputs = ("self", "other")
    derivatives = {"self": ("where(condition, grad, 0)", r"\bar{y}\,[c]"),
                   "other": ("where(condition, 0, grad)", r"\bar{y}\,[\lnot c]")}

    def forward(ctx, self, other, condition):
        shape = broadcast_shapes(broadcast_shapes(shape_of(condition), shape_of(self)), shape_of(other))
        ctx.save(condition=condition)
        ctx.metas = (meta(self), meta(other))
        backend = backend_of(self, other)
        x, y = _where_operands(self, other)
        result = backend.where(condition._data, x, y)
        # a fresh array the size of the broadcast shape (a broadcast view could not be written in place)
        return result if tuple(result.shape) == shape else backend.copy(backend.broadcast_to(result, shape))

    def backward(ctx, grad):
        backend = ctx.backend
        condition = ctx.saved("condition")
        zeros = backend.zeros_like(grad)  # PyTorch's zeros_like: +0. (grad * 0 would be -0. or nan)
        return _grads(ctx, lambda: backend.where(condition, grad, zeros),
                      lambda: backend.where(condition, zeros, grad))

    def backward_graph(ctx, grad):
        condition = _mask(ctx, ctx.saved("condition"))
        return _graph_grads(ctx, lambda: where(condition, grad, 0), lambda: where(condition, 0, grad))


def _where_operands(self, other):
    """``where`` promotes like a binary op, but a number next to a tensor keeps the tensor's dtype."""
    if isinstance(self, Tensor) and isinstance(other, Tensor):
        return promote(self, other)
    tensor = self if isinstance(self, Tensor) else other
    return promote(self, other) if not tensor.dtype.is_floating_point else (
        (self._data, float(other)) if tensor is self else (float(self), other._data))


def maximum(input, other):
    check_tensor_first("maximum", input)
    return MaximumBackward0.apply(input, other)


def minimum(input, other):
    check_tensor_first("minimum", input)
    return MinimumBackward0.apply(input, other)


_NO_VALUES = object()  # ``where(condition)`` alone


def where(condition, input=_NO_VALUES, other=_NO_VALUES):
    """``input`` where ``condition`` holds, ``other`` elsewhere; alone, the indices where it holds."""
    if input is _NO_VALUES and other is _NO_VALUES:
        backend = condition._backend
        return tuple(Tensor._make(backend.astype(index, _dtype.int64), backend=backend)
                     for index in backend.nonzero(condition._data))
    if condition.dtype is not _dtype.bool:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype.SCALAR_TYPE_NAMES[condition.dtype.name]}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers: a tensor of their common kind (int64, or the default float), outside the graph
        kind = max(_dtype.scalar_category(input), _dtype.scalar_category(other))
        target = {_dtype.BOOL: _dtype.bool, _dtype.INT: _dtype.int64, _dtype.FLOAT: _dtype.default_float}[kind]
        backend = condition._backend
        input = Tensor._make(backend.full((), input, target, condition.device), backend=backend)
    return WhereBackward0.apply(input, other, condition)


def tensor_where(input, condition, other):
    """``x.where(condition, y)``: the method form of ``where(condition, x, y)``."""
    return where(condition, input, other)


def equal(input, other) -> bool:
    """True when both tensors have the same shape and the same values."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return input._backend.array_equal(*promote(input, other))


def check_same_dtype(input, other) -> None:
    """``isclose`` and ``allclose`` compare tensors of one dtype only (PyTorch: ``Float did not match Double``)."""
    if input.dtype is not other.dtype:
        names = _dtype.SCALAR_TYPE_NAMES
        raise RuntimeError(f"{names[input.dtype.name]} did not match {names[other.dtype.name]}")


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """True when ``|input - other| <= atol + rtol * |other|`` everywhere (shapes broadcast)."""
    check_same_dtype(input, other)
    broadcast_shapes(tuple(input.shape), tuple(other.shape))
    return input._backend.allclose(input._data, other._data, rtol, atol, equal_nan)


# the overloads PyTorch lists when a number comes first in ``eq``, ``lt``..., ``fmod``
_OVERLOADS = " * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, Number other, *, Tensor out = None)\n"


def _outside_graph(name: str, doc: str, operands=promote, check=None, overloads=None, tensor_first=False):
    """An elementwise function of two operands whose result records no graph (bools, masks). With
    ``tensor_first``, a number as ``input`` raises PyTorch's TypeError (``overloads``: its list of them)."""

    def function(input, other):
        if tensor_first and not isinstance(input, Tensor):
            check_tensor_first(name, input, other, overloads)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{name}() expects a Tensor")
        if check is not None:
            check(name, input, other)
        broadcast_shapes(shape_of(input), shape_of(other))
        backend = backend_of(input, other)
        return Tensor._make(getattr(backend, name)(*operands(input, other)), backend=backend)

    function.__name__ = name
    function.__doc__ = doc
    return function


gt, lt, ge, le, eq, ne = (_outside_graph(name, f"Elementwise ``{name}``: a bool tensor, outside the graph.",
                                         overloads=_OVERLOADS, tensor_first=True)
                          for name in ("gt", "lt", "ge", "le", "eq", "ne"))


# -- logical and bitwise ops on masks: bool (or int) tensors, outside the graph --------------------------
def logical_not(input):
    """True where ``input`` is zero (False), as a bool tensor."""
    backend = input._backend
    return Tensor._make(backend.eq(input._data, 0), backend=backend)


def _truths(input, other) -> tuple:
    """Each operand as a truth value: non-zero is True."""
    return tuple(value._backend.ne(value._data, 0) if isinstance(value, Tensor) else bool(value)
                 for value in (input, other))


logical_and, logical_or, logical_xor = (
    _outside_graph(f"logical_{kind}", f"Elementwise ``{kind}`` of the truth of two tensors: a bool tensor.", _truths,
                   tensor_first=True)
    for kind in ("and", "or", "xor"))


def bitwise_not(input):
    """Logical not of a bool tensor, bitwise not of an integer one."""
    if input.dtype.is_floating_point:
        raise _dtype.not_implemented("bitwise_not_cpu", input.dtype)
    backend = input._backend
    return Tensor._make(backend.bitwise_not(input._data), backend=backend)


def invert(input):
    """``~mask``: ``bitwise_not``, with Python's operator's own error for a float tensor."""
    if input.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(input)


def _no_floats(name: str, input, other) -> None:
    """The bitwise kernels exist for bool and integers only (PyTorch names the operands' common dtype)."""
    from gradviz.ops.kernels import common_dtype

    common = common_dtype(input, other)
    if common.is_floating_point:
        raise _dtype.not_implemented(f"{name}_cpu", common)


bitwise_and, bitwise_or, bitwise_xor = (
    _outside_graph(f"bitwise_{kind}", f"``{kind}`` of bool or integer tensors (what ``&``, ``|``, ``^`` run).",
                   check=_no_floats)
    for kind in ("and", "or", "xor"))


# -- a Python number where PyTorch's function wants a tensor first (``torch.maximum(2.5, x)``) -----------------


def check_tensor_first(name: str, input, other=None, overloads: str | None = None) -> None:
    """PyTorch's TypeError for a number as ``input``: the plain "must be Tensor" message, or, for a function
    with a Number overload for ``other`` (``eq``, ``fmod``...), its list of overloads."""
    if isinstance(input, Tensor):
        return
    if overloads is None:
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    got = ", ".join("Tensor" if isinstance(value, Tensor) else type(value).__name__ for value in (input, other))
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                    f"{overloads}")
