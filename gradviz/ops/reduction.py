"""Reductions: ``sum``, ``mean``, ``max``, whole or along ``dim`` (with ``keepdim``).

The gradient of a reduction spreads the incoming gradient back over the reduced elements:
equally for sum (and divided by their count for mean), and only to the maximum for max.
"""
from __future__ import annotations

import builtins
import math

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops import return_types
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.tensor import Tensor


def _dims(dim, ndim: int, wrap_first: bool = True) -> tuple:
    """The reduced dims, wrapped and sorted. A 0-d tensor takes dim 0 or -1 (as a 1-element tensor
    would) and reduces over nothing; a dim given twice is PyTorch's error, checked once every dim is wrapped, or, with
    ``wrap_first=False`` (nansum, std/var, norm), as each is: which error an out-of-range dim after a repeat raises."""
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:  # ``sum(dim=())``: PyTorch reduces over every dim
        return tuple(range(ndim))
    if wrap_first:
        for d in dims:
            wrap_dim(d, builtins.max(ndim, 1))
    wrapped = []
    for d in dims:  # wrapped and checked one at a time, in the order given, as PyTorch's dim_list_to_bitset
        d = wrap_dim(d, builtins.max(ndim, 1))
        if d in wrapped:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        wrapped.append(d)
    return tuple(sorted(wrapped)) if ndim else ()


def _dims_or_none(dim, ndim: int, wrap_first: bool = True):
    """``_dims`` for a kernel that reads ``None`` as every dim: checked, and ``None`` for a 0-d tensor."""
    if dim is None:
        return None
    dims = _dims(dim, ndim, wrap_first)
    return dims if ndim else None


def check_nonempty_reduction(name: str, tensor, given, wrapped: bool = False) -> None:
    """PyTorch's errors for a reduction with no identity (max, amax, argmax...) over no elements: every dim
    (``given`` None or empty) of an empty tensor, or a given dim of size 0 (the first such, named as given, or
    ``wrapped`` for the one-dim reductions max/min/argmax/argmin)."""
    if tensor.numel():
        return
    dims = () if given is None else tuple(given) if isinstance(given, (tuple, list)) else (given,)
    if not dims:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        axis = wrap_dim(d, tensor.ndim) if tensor.ndim else 0
        if tensor.ndim and tensor.shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis if wrapped else d} to have non-zero size.")


def _given(dim) -> tuple:
    """``dim`` as PyTorch saves it for sum/mean: a tuple, in the order given."""
    return saved_dim(tuple(dim) if isinstance(dim, (tuple, list)) else (dim,))


def _expand_back(backend, grad, input_shape, dims, keepdim: bool):
    """Broadcast a reduced gradient back to the input's shape."""
    if not keepdim:
        shape = list(input_shape)
        for d in dims:
            shape[d] = 1
        grad = backend.reshape(grad, tuple(shape))
    return backend.broadcast_to(grad, input_shape)


def _sum_dtype(tensor):
    return tensor.dtype if tensor.dtype.is_floating_point else _dtype.int64


def _expand_back_graph(grad, input_shape, dims, keepdim: bool):
    """The recorded form of ``_expand_back``: ``unsqueeze`` each reduced dim, then ``expand``
    (PyTorch's ``sum_backward``)."""
    if not keepdim and input_shape:
        for d in sorted(dims):
            grad = grad.unsqueeze(d)
    return grad.expand(input_shape)


class SumBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.expand_symint(self.sym_sizes())", r"\bar{y}\,\mathbf{1}")}

    def forward(ctx, self):
        ctx.save(self_sym_sizes=tuple(self.shape))
        backend = self._backend
        result = backend.sum(self._data, None)
        return result if self.dtype.is_floating_point else backend.astype(result, _dtype.int64)

    def backward(ctx, grad):
        return ctx.backend.broadcast_to(grad, ctx.saved("self_sym_sizes"))

    def backward_graph(ctx, grad):
        return grad.expand(ctx.saved("self_sym_sizes"))


class SumBackward1(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("sum_backward(grad, self.sym_sizes(), dim, keepdim)", r"\bar{y}\,\mathbf{1}")}

    def forward(ctx, self, dim, keepdim=False):
        dims = _dims(dim, self.ndim)
        ctx.save(dim=_given(dim), keepdim=keepdim, self_sym_sizes=tuple(self.shape))
        ctx.dims = dims
        result = self._backend.sum(self._data, dims, keepdims=keepdim)
        return result if self.dtype.is_floating_point else self._backend.astype(result, _dtype.int64)

    def backward(ctx, grad):
        keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
        return _expand_back(ctx.backend, grad, shape, ctx.dims, keepdim)

    def backward_graph(ctx, grad):
        keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
        return _expand_back_graph(grad, shape, ctx.dims, keepdim)


def _check_float_for_mean(tensor) -> None:
    if not tensor.dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating "
                           f"point or complex dtype. Got: {_dtype.SCALAR_TYPE_NAMES[tensor.dtype.name]}")


class MeanBackward0(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("grad.expand_symint(self.sym_sizes()) / self.sym_numel()", r"\bar{y} / n")}

    def forward(ctx, self):
        _check_float_for_mean(self)
        ctx.save(self_sym_sizes=tuple(self.shape), self_sym_numel=self.numel())
        backend = self._backend
        return backend.div(backend.sum(self._data, None), self.numel())

    def backward(ctx, grad):
        shape, count = ctx.saved("self_sym_sizes", "self_sym_numel")
        backend = ctx.backend
        return backend.broadcast_to(backend.div(grad, count), shape)

    def backward_graph(ctx, grad):
        from gradviz.ops.arithmetic import DivBackward1

        shape, count = ctx.saved("self_sym_sizes", "self_sym_numel")
        return DivBackward1.apply(grad.expand(shape), count)


class MeanBackward1(OpFunction):
    inputs = ("self",)
    derivatives = {"self": ("mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim)",
                            r"\bar{y} / n")}

    def forward(ctx, self, dim, keepdim=False):
        _check_float_for_mean(self)
        dims = _dims(dim, self.ndim)
        count = 1
        for d in dims:
            count *= self.shape[d]
        ctx.save(dim=_given(dim), keepdim=keepdim, self_sym_sizes=tuple(self.shape), self_sym_numel=self.numel())
        ctx.count = count
        ctx.dims = dims
        backend = self._backend
        return backend.div(backend.sum(self._data, dims, keepdims=keepdim), count)

    def backward(ctx, grad):
        keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
        backend = ctx.backend
        return _expand_back(backend, backend.div(grad, ctx.count), shape, ctx.dims, keepdim)

    def backward_graph(ctx, grad):
        from gradviz.ops.arithmetic import DivBackward1

        keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
        return DivBackward1.apply(_expand_back_graph(grad, shape, ctx.dims, keepdim), ctx.count)


class MaxBackward1(OpFunction):
    """The maximum of all elements; ties share the gradient equally, as in PyTorch."""

    inputs = ("self",)
    derivatives = {"self": ("evenly_distribute_backward(grad, self, result)", r"\bar{y}\,[x = \max x] / k")}

    def forward(ctx, self):
        if self.numel() == 0:
            raise RuntimeError("max(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        ctx.save(self=self)
        ctx.save_result()
        return self._backend.amax(self._data, None)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        mask = backend.astype(backend.eq(self, result), _dtype.from_any(grad.dtype))
        return backend.mul(backend.div(mask, backend.sum(mask, None)), grad)

    def backward_graph(ctx, grad):
        """PyTorch's ``evenly_distribute_backward``: ``zeros.masked_fill_(mask, grad / mask.sum())``."""
        from gradviz.ops.indexing import masked_fill

        backend = ctx.backend
        self, result = ctx.saved("self", "result")
        mask = Tensor._make(backend.eq(self, result), backend=backend)
        zeros = Tensor._make(backend.full(tuple(self.shape), 0, grad.dtype, grad.device), backend=backend)
        return masked_fill(zeros, mask, grad / mask.sum())


class MaxBackward0(OpFunction):
    """The maximum along ``dim``: the gradient goes to the index that won."""

    inputs = ("self",)
    derivatives = {"self": ("value_selecting_reduction_backward(grad, dim, indices, self.sym_sizes(), keepdim)",
                            r"\bar{y}\,[i = \arg\max]")}

    def forward(ctx, self, dim, keepdim=False):
        return select_along(ctx, self, dim, keepdim, "argmax", "amax")

    def backward(ctx, grad):
        backend = ctx.backend
        keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
        axis = ctx.axis
        if axis is None:  # 0-d: the gradient goes straight through
            return grad
        if keepdim:
            grad = backend.reshape(grad, tuple(s for i, s in enumerate(grad.shape) if i != axis))
        picked = backend.one_hot_scatter(shape, ctx.indices, axis, grad.dtype)
        expanded = backend.reshape(grad, tuple(1 if i == axis else s for i, s in enumerate(shape)))
        return backend.mul(picked, expanded)

    def backward_graph(ctx, grad):
        """PyTorch's ``value_selecting_reduction_backward``: ``zeros.scatter(dim, indices, grad)``, both
        unsqueezed at ``dim`` first unless kept."""
        from gradviz.ops.double_backward import ScatterBackward0

        keepdim, shape = ctx.saved("keepdim", "self_sym_sizes")
        backend = ctx.backend
        indices = ctx.saved_graph("indices")
        if not keepdim and shape:
            grad, indices = grad.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        zeros = Tensor._make(backend.full(tuple(shape), 0, grad.dtype, grad.device), backend=backend)
        return ScatterBackward0.apply(zeros, grad, ctx.dim, indices)


def select_along(ctx, self, dim, keepdim: bool, arg: str, reduce: str):
    """The forward of ``max(dim)`` and ``min(dim)``: the winning value along ``dim``, its index saved."""
    axis = wrap_dim(dim, builtins.max(self.ndim, 1))
    check_nonempty_reduction(reduce[1:], self, dim, wrapped=True)
    backend = self._backend
    if not self.ndim:  # a 0-d tensor: its one element wins, at index 0
        ctx.save(dim=saved_dim(dim), indices=Tensor._make(backend.astype(backend.zeros_like(self._data), _dtype.int64),
                                                          backend=backend), keepdim=keepdim, self_sym_sizes=())
        ctx.axis, ctx.dim, ctx.indices = None, dim, None
        return backend.add(self._data, 0)
    indices = backend.astype(getattr(backend, arg)(self._data, axis), _dtype.int64)
    saved_indices = Tensor._make(backend.reshape(indices, _kept_shape(self.shape, axis)) if keepdim else indices,
                                 backend=backend)
    ctx.save(dim=saved_dim(dim), indices=saved_indices, keepdim=keepdim, self_sym_sizes=tuple(self.shape))
    ctx.axis, ctx.dim = axis, dim
    ctx.indices = indices
    return getattr(backend, reduce)(self._data, axis, keepdims=keepdim)


def values_and_indices(node, input, dim, keepdim: bool, arg: str, result_type):
    """``max(dim)`` / ``min(dim)``: the values (recorded by ``node``) and the indices, as a named pair."""
    values = node.apply(input, dim, keepdim=keepdim)
    backend = input._backend
    if not input.ndim:
        return result_type(values, Tensor._make(backend.astype(backend.zeros_like(input._data), _dtype.int64),
                                                backend=backend))
    indices = backend.astype(getattr(backend, arg)(input._data, wrap_dim(dim, input.ndim)), _dtype.int64)
    return result_type(values, Tensor._make(backend.reshape(indices, tuple(values.shape)), backend=backend))


def _kept_shape(shape, axis) -> tuple:
    return tuple(1 if i == axis else s for i, s in enumerate(shape))


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return SumBackward0.apply(input)
    return SumBackward1.apply(input, dim, keepdim=keepdim)


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return MeanBackward0.apply(input)
    return MeanBackward1.apply(input, dim, keepdim=keepdim)


def max(input, dim=None, keepdim: bool = False):
    if isinstance(dim, Tensor):
        from gradviz.ops.comparison import maximum

        return maximum(input, dim)
    if dim is None:
        return MaxBackward1.apply(input)
    return values_and_indices(MaxBackward0, input, dim, keepdim, "argmax", return_types.max)


class LinalgVectorNormBackward0(OpFunction):
    """``x.norm(p)``: ``(sum |x|^p)^(1/p)`` over all elements or along ``dim`` (2 by default)."""

    inputs = ("self",)
    derivatives = {"self": ("linalg_vector_norm_backward(grad, self, ord, result, dim, keepdim)",
                            r"\bar{y}\,x\,|x|^{p-2} / \|x\|_p^{p-1}")}

    def forward(ctx, self, ord, dim, keepdim):
        ctx.save(dim=_given(dim) if dim is not None else None, keepdim=keepdim, ord=ord, self=self)
        ctx.save_result()
        axes = _dims(dim, self.ndim, wrap_first=False) if dim is not None else None
        ctx.axes, ctx.shape = axes, tuple(self.shape)
        ctx.dim = dim
        backend = self._backend
        magnitude = backend.abs(self._data)
        if ord == math.inf:
            return backend.amax(magnitude, axes, keepdims=keepdim)
        if ord == -math.inf:
            return backend.amin(magnitude, axes, keepdims=keepdim)
        if ord == 0:
            return backend.sum(backend.astype(backend.ne(magnitude, 0), self.dtype), axes, keepdims=keepdim)
        if ord == 1:
            return backend.sum(magnitude, axes, keepdims=keepdim)
        if ord == 2:
            return backend.sqrt(backend.sum(backend.mul(magnitude, magnitude), axes, keepdims=keepdim))
        return backend.pow(backend.sum(backend.pow(magnitude, float(ord)), axes, keepdims=keepdim), 1.0 / ord)

    def backward(ctx, grad):
        backend = ctx.backend
        self, result, ord, keepdim = ctx.saved("self", "result", "ord", "keepdim")
        axes = ctx.axes if ctx.axes is not None else tuple(range(len(ctx.shape)))
        grad = _expand_back(backend, grad, ctx.shape, axes, keepdim)
        result = _expand_back(backend, result, ctx.shape, axes, keepdim)
        if ord == 0:
            return None  # flat wherever it is defined: PyTorch sends no gradient at all
        if ord == 1:
            return backend.mul(grad, backend.sign(self))
        if ord in (math.inf, -math.inf):
            # the gradient is shared evenly by the elements whose |x| is the max (or min)
            hits = backend.astype(backend.eq(backend.abs(self), result), _dtype.from_any(grad.dtype))
            count = _expand_back(backend, backend.sum(hits, axes, keepdims=True), ctx.shape, axes, True)
            return backend.div(backend.mul(backend.mul(grad, backend.sign(self)), hits), count)
        if ord == 2:
            scale = backend.where(backend.eq(result, 0), 0.0, backend.div(grad, result))
            return backend.mul(self, scale)
        power = backend.mul(self, backend.pow(backend.abs(self), float(ord) - 2))
        scale = backend.where(backend.eq(result, 0), 0.0, backend.div(grad, backend.pow(result, float(ord) - 1)))
        return backend.mul(power, scale)

    def backward_graph(ctx, grad):
        """PyTorch's ``norm_backward``, op for op, after ``grad`` and ``norm`` are unsqueezed at ``dim``
        (unless kept): p = 1: ``self.sgn() * grad``; p = 2: ``grad * (self / norm).masked_fill_(norm == 0, 0)``;
        p = ±inf: ``self.sgn() * ((grad / count) * mask)``, the gradient shared by the elements at the max
        (min); other p: ``self * |self|^(p-2)`` (``sgn(self) |self|^(p-1)`` below 2) times
        ``grad / norm^(p-1)`` masked where the norm is 0 (below 1: times ``grad * norm^(1-p)``). p = 0: none.
        C++ builds the right operand of ``a * b`` first; the order here follows it."""
        from gradviz.ops.double_backward import SgnBackward0

        ord, keepdim = ctx.saved("ord", "keepdim")
        self = ctx.saved_graph("self")
        grad = _unsqueezed(ctx, grad, keepdim)
        if ord == 0:
            return None
        if ord == 1:
            return SgnBackward0.apply(self) * grad
        backend = ctx.backend
        norm = _unsqueezed(ctx, ctx.saved_graph("result"), keepdim)
        norm_is_zero = Tensor._make(backend.eq(norm._data, 0), backend=backend)
        if ord == 2:
            return grad * (self / norm).masked_fill_(norm_is_zero, 0)
        if ord in (math.inf, -math.inf):
            magnitude = backend.abs(self._data)
            mask = Tensor._make(backend.logical_or(backend.eq(magnitude, norm._data), backend.ne(magnitude, magnitude)),
                                backend=backend)
            axes = ctx.axes if ctx.axes is not None else tuple(range(self.ndim))
            shared = (grad / mask.sum(axes, keepdim=True)) * mask
            return SgnBackward0.apply(self) * shared
        p = float(ord)  # C++ computes the exponents in double: PowBackward0 saves 2.0, not 2
        if p < 1:
            powered = self.abs().pow_(p - 1).masked_fill_(Tensor._make(backend.eq(self._data, 0), backend=backend), 0)
            self_scaled = SgnBackward0.apply(self) * powered
            factor = norm.pow(1 - p)
            return (self_scaled * grad) * factor
        if p < 2:
            powered = self.abs().pow_(p - 1)
            self_scaled = SgnBackward0.apply(self) * powered
        else:
            self_scaled = self * self.abs().pow_(p - 2)
        scale = grad / norm.pow(p - 1)
        scale.masked_fill_(norm_is_zero, 0)
        return self_scaled * scale


def _unsqueezed(ctx, tensor, keepdim: bool):
    """``unsqueeze_multiple(tensor, dim)``: the reduced dims put back as size 1; one dim as given, several
    wrapped, lowest first."""
    if keepdim or ctx.axes is None or not ctx.shape:
        return tensor
    given = ctx.dim if isinstance(ctx.dim, (tuple, list)) else (ctx.dim,)
    if len(given) == 1:
        return tensor.unsqueeze(given[0])
    for axis in ctx.axes:
        tensor = tensor.unsqueeze(axis)
    return tensor


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None):
    """The vector ``p``-norm of ``input`` (``'fro'``, the default, is 2), whole or along ``dim``."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.SCALAR_TYPE_NAMES[input.dtype.name]}")
    if dtype is not None:
        input = input.to(dtype)
    if p is None or (p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2)):
        p = 2
    elif isinstance(p, str):  # 'nuc' (or 'fro' over more than two dims): torch.norm calls matrix_norm
        from gradviz.ops.decompositions import matrix_norm

        return matrix_norm(input, p, tuple(range(input.ndim)) if dim is None else dim, keepdim)
    if isinstance(dim, int):
        dim = (dim,)
    return LinalgVectorNormBackward0.apply(input, p, tuple(dim) if dim is not None else None, keepdim)


def _logical(name: str, reduce):
    def logical(input, dim=None, keepdim: bool = False):
        backend = input._backend
        axes = None if dim is None else _dims(dim, builtins.max(input.ndim, 1))
        data = backend.ne(input._data, 0) if input.dtype is not _dtype.bool else input._data
        if isinstance(dim, (tuple, list)) and not dim:  # ``dim=()``: PyTorch reduces over no dim at all
            return Tensor._make(backend.logical_and(data, True), backend=backend)
        if input.ndim == 0:
            axes = None
        out = getattr(backend, reduce)(data, axes, keepdims=keepdim and axes is not None)
        if input.dtype is _dtype.uint8:  # PyTorch keeps uint8 (0 or 1) for a uint8 input
            out = backend.astype(out, _dtype.uint8)
        return Tensor._make(out, backend=backend)

    logical.__name__ = name
    logical.__doc__ = f"Whether {'every' if name == 'all' else 'any'} element is true (non-zero): a bool tensor."
    return logical


all = _logical("all", "all_along")  # noqa: A001 - PyTorch's name
any = _logical("any", "any_along")  # noqa: A001


def _arg(name: str, reduce):
    def arg(input, dim=None, keepdim: bool = False):
        if input.dtype is _dtype.bool:
            raise RuntimeError(f"{name}(): does not support bool input")
        backend = input._backend
        if dim is not None:
            wrap_dim(dim, builtins.max(input.ndim, 1))
        if input.numel() == 0:
            if dim is None:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
            check_nonempty_reduction(name, input, dim, wrapped=True)
        if dim is None:
            flat = getattr(backend, reduce)(backend.reshape(input._data, (-1,)), 0)
            index = backend.astype(flat, _dtype.int64)
            return Tensor._make(backend.reshape(index, (1,) * input.ndim) if keepdim else index, backend=backend)
        axis = wrap_dim(dim, builtins.max(input.ndim, 1))
        index = backend.astype(getattr(backend, reduce)(input._data, axis if input.ndim else None), _dtype.int64)
        return Tensor._make(backend.reshape(index, _kept_shape(input.shape, axis)) if keepdim and input.ndim else index,
                            backend=backend)

    arg.__name__ = name
    arg.__doc__ = f"The index of the {'largest' if name == 'argmax' else 'smallest'} element (flat, or along ``dim``)."
    return arg


argmax = _arg("argmax", "argmax")
argmin = _arg("argmin", "argmin")
