"""Functions PyTorch has with no derivative: their output still gets a grad_fn, PyTorch's ``NotImplemented``
node, so the graph shows where the gradient stops, and backward through it raises PyTorch's error.

``heaviside`` is one (``x.heaviside(v).grad_fn`` prints ``<NotImplemented object at 0x...>``, its name is
``torch::autograd::NotImplemented``, and ``backward()`` raises ``RuntimeError: derivative for
aten::heaviside is not implemented``).
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction, gradient_edge
from gradviz.grad_mode import _state as _grad_state
from gradviz.tensor import Tensor


class NotImplemented(OpFunction):  # noqa: A001 - PyTorch's class name, printed in ``grad_fn=<NotImplemented>``
    """The node of an op without a derivative. Its ``__module__`` is ``builtins``, as for PyTorch's nodes;
    that also keeps it out of the op registry (``ops.registry`` lists ``gradviz.ops`` classes), since it
    has no formula to show or gradient to check."""

    __module__ = "builtins"
    qualified_name = "torch::autograd::NotImplemented"

    def name(self) -> str:
        return self.qualified_name

    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op_name} is not implemented")

    def backward_graph(ctx, *grads):
        ctx.backward(*grads)


def not_differentiable(op_name: str, data, inputs) -> Tensor:
    """The output ``data`` of ``op_name`` as a Tensor; when an input requires grad (and grad mode is on),
    its grad_fn is a ``NotImplemented`` node with an edge to each input that requires grad, as PyTorch makes it."""
    backend = inputs[0]._backend
    wanted = [tensor for tensor in inputs if isinstance(tensor, Tensor) and tensor.requires_grad]
    if not (_grad_state.enabled and wanted):
        return Tensor._make(data, backend=backend)
    node = NotImplemented()
    node.backend = backend
    node.op_name = op_name
    node._next_functions = tuple(gradient_edge(tensor) for tensor in wanted)
    node.needs_input_grad = tuple(True for _ in wanted)
    if _grad_state.backward_order:
        node._order = _grad_state.backward_order
    return Tensor._make(data, True, node, backend)
