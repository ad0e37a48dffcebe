"""Tensor methods and torch functions that tutorials use and the other op modules lacked: ``torch.rsub`` with
``alpha`` (tensor or number ``other``), ``tan``, the random draws ``bernoulli``/``exponential_``/``poisson``/
``multinomial`` as methods.

``torch.rsub(input, other, alpha=a)`` is ``other - a * input``. With a tensor ``other`` PyTorch records
``RsubBackward0`` (edges ``self``, ``other``); with a number, ``RsubBackward1`` saving ``alpha``.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.ops import arithmetic
from gradviz.ops._util import promote
from gradviz.tensor import Tensor


class RsubBackward0(OpFunction):
    """``torch.rsub(input, other_tensor, alpha)``: ``other - alpha * input``."""

    inputs = ("self", "other")
    derivatives = {"self": ("-grad * alpha", r"-\alpha\,\bar{y}"), "other": ("grad", r"\bar{y}")}

    def forward(ctx, self, other, alpha=1):
        arithmetic.check_sub(self, other)
        ctx.save(alpha=alpha)
        ctx.shapes = (tuple(self.shape), tuple(other.shape))
        x, y = promote(self, other)
        backend = self._backend
        return backend.sub(y, x if alpha == 1 else backend.mul(x, alpha))

    def backward(ctx, grad):
        from gradviz.ops._util import sum_to

        backend, alpha = ctx.backend, ctx.saved("alpha")
        needs = ctx.needs_input_grad
        scaled = backend.neg(grad) if alpha == 1 else backend.mul(backend.neg(grad), alpha)
        return (sum_to(backend, scaled, ctx.shapes[0]) if needs[0] else None,
                sum_to(backend, grad, ctx.shapes[1]) if needs[1] else None)

    def backward_graph(ctx, grad):
        from gradviz.ops._util import sum_to_tensor

        alpha = ctx.saved("alpha")
        needs = ctx.needs_input_grad
        scaled = (-grad if alpha == 1 else (-grad) * alpha) if needs[0] else None
        return (sum_to_tensor(scaled, ctx.shapes[0]) if needs[0] else None,
                sum_to_tensor(grad, ctx.shapes[1]) if needs[1] else None)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (what Python's ``2 - x`` calls, with ``alpha=1``)."""
    if alpha == 1 and not isinstance(other, Tensor):
        return arithmetic.rsub(input, other)
    if not isinstance(input, Tensor):
        arithmetic.rsub(input, other)  # PyTorch's TypeError for a number first
    _check_alpha(input, other, alpha)
    if isinstance(other, Tensor):
        return RsubBackward0.apply(input, other, alpha=alpha)
    return _ScaledRsub.apply(input, other, alpha)


def _check_alpha(input, other, alpha) -> None:
    integral = not input.dtype.is_floating_point and (not isinstance(other, Tensor) or not other.dtype.is_floating_point)
    if integral and not isinstance(other, float) and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


class _ScaledRsub(arithmetic.RsubBackward1):
    """``torch.rsub(input, number, alpha)``: PyTorch's ``RsubBackward1`` with its ``alpha`` saved."""

    def forward(ctx, self, other, alpha):
        arithmetic.check_sub(self, other)
        ctx.save(alpha=alpha)
        x, y = promote(self, other)
        backend = self._backend
        return backend.sub(backend.full((), y, arithmetic._dtype_of(x), self.device), backend.mul(x, alpha))

    def backward(ctx, grad):
        return ctx.backend.mul(ctx.backend.neg(grad), ctx.saved("alpha"))

    def backward_graph(ctx, grad):
        return (-grad) * ctx.saved("alpha")


_ScaledRsub.__name__ = _ScaledRsub.__qualname__ = "RsubBackward1"


# -- the Tensor methods ---------------------------------------------------------------------------------------------
def _rsub_method(self, other, *, alpha=1):
    return rsub(self, other, alpha=alpha)


def tensor_methods() -> dict:
    from gradviz.ops import sampling
    from gradviz.ops.inplace import in_place
    from gradviz.ops.unary import tan

    return {"tan": tan, "tan_": in_place(tan, "tan_"), "bernoulli": sampling.bernoulli_method,
            "exponential_": sampling.exponential_, "multinomial": sampling.multinomial,
            "cauchy_": sampling.cauchy_, "geometric_": sampling.geometric_, "log_normal_": sampling.log_normal_,
            "random_": sampling.random_,
            "half": lambda self: self.to(_float16())}


def _float16():
    from gradviz import _dtype

    return _dtype.float16


# -- the inverse hyperbolic functions ---------------------------------------------------------------------------------
class AsinhBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * (self.pow(2) + 1).rsqrt().conj()", r"\bar{y} / \sqrt{x^{2} + 1}")}

    def forward(ctx, self):
        from gradviz.ops._util import float_data

        ctx.save(self=self)
        return self._backend.asinh(float_data(self))

    def backward(ctx, grad):
        backend, x = ctx.backend, ctx.saved("self")
        return backend.div(grad, backend.sqrt(backend.add(backend.mul(x, x), 1)))

    def backward_graph(ctx, grad):
        """As C++ records it: PowBackward0, AddBackward1, RsqrtBackward0, MulBackward0."""
        return grad * arithmetic.AddBackward1.apply(ctx.saved_graph("self").pow(2), 1).rsqrt()


class AcoshBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * (self.pow(2) - 1).rsqrt().conj()", r"\bar{y} / \sqrt{x^{2} - 1}")}

    def forward(ctx, self):
        from gradviz.ops._util import float_data

        ctx.save(self=self)
        return self._backend.acosh(float_data(self))

    def backward(ctx, grad):
        backend, x = ctx.backend, ctx.saved("self")
        return backend.div(grad, backend.sqrt(backend.sub(backend.mul(x, x), 1)))

    def backward_graph(ctx, grad):
        """As C++ records it: ``(self * self - 1).rsqrt()``: MulBackward0, SubBackward1, RsqrtBackward0, MulBackward0."""
        self = ctx.saved_graph("self")
        return grad * arithmetic.SubBackward1.apply(self * self, 1).rsqrt()


class AtanhBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad * 1 / (1 - self.pow(2)).conj()", r"\bar{y} / (1 - x^{2})")}

    def forward(ctx, self):
        from gradviz.ops._util import float_data

        ctx.save(self=self)
        return self._backend.atanh(float_data(self))

    def backward(ctx, grad):
        backend, x = ctx.backend, ctx.saved("self")
        return backend.div(grad, backend.sub(1, backend.mul(x, x)))

    def backward_graph(ctx, grad):
        """As C++ records it: ``grad / (1 - self.pow(2))``: PowBackward0, SubBackward0 (1 wrapped), DivBackward0."""
        return grad / arithmetic.sub(1.0, ctx.saved_graph("self").pow(2))


def asinh(input):
    return AsinhBackward0.apply(input)


def acosh(input):
    return AcoshBackward0.apply(input)


def atanh(input):
    return AtanhBackward0.apply(input)


# -- small aliases, predicates and views ------------------------------------------------------------------------------
def ravel(input):
    """``contiguous().view(-1)``, as PyTorch writes it: a view where the memory allows (ViewBackward0), else a
    copy first (CloneBackward0, then ViewBackward0)."""
    return input.contiguous().view(-1)


def positive(input):
    """The tensor itself (PyTorch returns ``self``; booleans are refused)."""
    from gradviz import _dtype

    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def select(input, dim: int, index: int):
    """``input[..., index, ...]`` at ``dim`` (SelectBackward0)."""
    from gradviz.tensor import _wrap_dim

    axis = _wrap_dim(dim, input.ndim)
    size = input.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension "
                         f"{dim}")
    return input[(slice(None),) * axis + (index,)]


def adjoint(input):
    """The conjugate transpose of the last two dims: for a real tensor, ``transpose(-2, -1)``."""
    return input.transpose(-2, -1)


def signbit(input):
    from gradviz import _dtype

    backend = input._backend
    data = backend.to_numpy(input._data)
    import numpy as np

    return Tensor._make(backend.array(np.signbit(data), _dtype.bool, input.device), backend=backend)


def isposinf(input):
    import math

    return input == math.inf


def isneginf(input):
    import math

    return input == -math.inf


def isreal(input):
    """Every element of a real tensor is real."""
    from gradviz.tensor import ones_like

    from gradviz import _dtype

    return ones_like(input, dtype=_dtype.bool)


def is_nonzero(input) -> bool:
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input) -> bool:
    from gradviz import _dtype

    return input.dtype not in (_dtype.bool, _dtype.uint8)


def sweep_methods() -> dict:
    """The aliases, predicates and hyperbolic functions as Tensor methods (with in-place forms where torch has them)."""
    from gradviz.ops import comparison
    from gradviz.ops.inplace import in_place

    methods = {
        "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh, "atanh": atanh, "arctanh": atanh,
        "ravel": ravel, "positive": positive, "select": select, "adjoint": adjoint, "signbit": signbit,
        "isposinf": isposinf, "isneginf": isneginf, "isreal": isreal, "is_nonzero": is_nonzero,
        "is_same_size": is_same_size, "is_signed": is_signed, "greater": comparison.gt, "greater_equal": comparison.ge,
        "less": comparison.lt, "less_equal": comparison.le, "not_equal": comparison.ne,
        "ndimension": lambda self: self.ndim,
        "element_size": lambda self: self.itemsize,
    }
    for name in ("asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh"):
        node = _IN_PLACE_NODES[name.replace("arc", "a")]
        methods[f"{name}_"] = in_place(node.apply, f"{name}_")
    return methods


def _in_place_hyperbolic():
    """``x.asinh_()`` on a tensor in the graph: PyTorch records ``AsinhBackward1``, whose backward raises
    "the derivative for 'inplace version of asinh' is not implemented." (same for acosh_, atanh_)."""
    from gradviz.ops.no_derivative import _NoDerivative

    from gradviz.ops._util import float_data

    def forward_of(name):
        def forward(ctx, self):  # saves nothing: there is no backward to use it
            return getattr(self._backend, name)(float_data(self))

        return forward

    nodes = {}
    for name in ("asinh", "acosh", "atanh"):
        nodes[name] = type(f"{name.capitalize()}Backward1", (_NoDerivative,), {
            "inputs": ("self",), "aten_name": f"inplace version of {name}", "forward": forward_of(name),
            "__doc__": f"``x.{name}_()`` in the graph: no derivative in PyTorch."})
    return nodes


_IN_PLACE_NODES = _in_place_hyperbolic()


SWEEP_PROPERTIES = {
    "is_cpu": lambda self: self.device.type == "cpu",
    "is_meta": lambda self: False,
    "itemsize": lambda self: self._data.dtype.itemsize,
    "nbytes": lambda self: self._data.dtype.itemsize * self.numel(),
    "mH": lambda self: self.transpose(-2, -1),
    "H": lambda self: self.transpose(-2, -1) if self.ndim == 2 else self if self.ndim == 0 else _H_error(self),
}


def _H_error(self):
    tail = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.{tail}")
