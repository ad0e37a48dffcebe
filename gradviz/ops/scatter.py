"""Writing by index along a dim: ``scatter`` (a tensor or a number written where ``index`` points),
``scatter_add``, ``index_add``, with their in-place forms (``zeros.scatter_(1, labels, 1)`` is the
usual one-hot encoding).

The nodes for a tensor source (ScatterBackward0, ScatterAddBackward0, IndexAddBackward0) live in
``ops/double_backward.py``, since recorded backward passes make them too; a number written
(ScatterBackward1) is here.
"""
from __future__ import annotations

from gradviz import _dtype
from gradviz.autograd.function import OpFunction
from gradviz.ops._util import saved_dim, wrap_dim
from gradviz.ops.double_backward import IndexAddBackward0, ScatterAddBackward0, ScatterBackward0
from gradviz.ops.inplace import in_place
from gradviz.tensor import Tensor


class ScatterBackward1(OpFunction):
    """``self.scatter(dim, index, value)``: a number written where ``index`` points; those places get no
    gradient, the others pass it through."""

    inputs = ("self",)
    derivatives = {"self": ("grad.scatter(dim, index, 0)", r"\bar{y}\,[\text{not written}]")}

    def forward(ctx, self, dim, index, value):
        ctx.save(dim=saved_dim(dim), index=index)
        axis = ctx.axis = wrap_dim(dim, max(self.ndim, 1))
        ctx.dim = dim
        return self._backend.scatter(self._backend.copy(self._data), axis, index._data, value)

    def backward(ctx, grad):
        backend = ctx.backend
        return backend.scatter(backend.copy(grad), ctx.axis, ctx.saved("index"), 0)

    def backward_graph(ctx, grad):
        return scatter(grad, ctx.dim, ctx.saved_graph("index"), 0)


def _check_index(name: str, index) -> None:
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def scatter(input, dim: int, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src``'s elements (or a number) written where ``index`` points along ``dim``."""
    if reduce is not None:
        raise NotImplementedError("gradviz's scatter has no reduce=; use scatter_add for 'add'")
    _check_index("scatter", index)
    source = value if src is None else src
    if isinstance(source, Tensor):
        return ScatterBackward0.apply(input, source, dim, index)
    return ScatterBackward1.apply(input, dim, index, source)


def scatter_add(input, dim: int, index, src):
    """A copy of ``input`` with ``src``'s elements added where ``index`` points along ``dim``."""
    _check_index("scatter_add", index)
    return ScatterAddBackward0.apply(input, src, dim, index)


def index_add(input, dim: int, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source``'s slices added at ``index`` along ``dim``."""
    return IndexAddBackward0.apply(input, source, dim, index, alpha)


scatter_ = in_place(scatter, "scatter_")
scatter_add_ = in_place(scatter_add, "scatter_add_")
index_add_ = in_place(index_add, "index_add_")
