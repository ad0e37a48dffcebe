"""PyTorch's ``torch::autograd::NotImplemented`` node: what it records for an op it has no
derivative for (``scatter(dim, index, src, reduce='add')``). The node stands in the graph with an
edge per input that requires grad, and running it raises ``derivative for aten::<op> is not
implemented``.

It is not an op (it has no gradient to check or formula to show), so it lives here rather than
in ``ops/``; ``forward`` takes the function that computes the op's value.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction


class NotImplemented(OpFunction):  # noqa: A001 - PyTorch's name for the node
    inputs = ("self", "src")
    derivatives = {}
    qualified_name = "torch::autograd::NotImplemented"

    def name(self) -> str:
        return self.qualified_name

    def forward(ctx, *args):
        """``args``: the graph inputs, then the op's name and the function computing its value."""
        *tensors, op, compute = args
        ctx.op = op
        return compute(*tensors)

    def backward(ctx, grad):
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


class _OneInput(NotImplemented):
    inputs = ("self",)


_OneInput.__name__ = _OneInput.__qualname__ = "NotImplemented"


def not_implemented(op: str, compute, *tensors):
    """``compute(*tensors)`` recorded as a NotImplemented node (one or two graph inputs)."""
    node = NotImplemented if len(tensors) == 2 else _OneInput
    return node.apply(*tensors, op, compute)
