"""Functions PyTorch has with no derivative. Their output still gets a grad_fn when an input requires grad,
so the graph shows where the gradient stops, and backward through it raises PyTorch's error:

* ``heaviside``: the node is ``NotImplemented`` (``torch::autograd::NotImplemented``), and backward raises
  ``RuntimeError: derivative for aten::heaviside is not implemented``;
* ``unique``, ``unique(dim=...)``, ``unique_consecutive``: the nodes are named (``Unique2Backward0``...),
  and backward raises ``NotImplementedError: the derivative for '_unique2' is not implemented.`` (what
  ``not_implemented(...)`` in ``derivatives.yaml`` raises).

Their classes live in the ``builtins`` module, as PyTorch's nodes do (``type(grad_fn).__module__``); that
also keeps them out of the op registry, since they have no formula to show or gradient to check.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction, gradient_edge
from gradviz.autograd.function import _FORWARD_AD  # forward-mode AD's flag (autograd/forward_ad.py)
from gradviz.grad_mode import _state as _grad_state
from gradviz.tensor import Tensor


class _NoDerivative(OpFunction):
    """A node whose backward raises: ``aten_name`` is the function PyTorch's message names."""

    aten_name = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__module__ = "builtins"

    def backward(ctx, *grads):
        raise NotImplementedError(f"the derivative for '{ctx.aten_name}' is not implemented.")

    def backward_graph(ctx, *grads):
        ctx.backward(*grads)


class NotImplemented(_NoDerivative):  # noqa: A001 - PyTorch's class name, printed in ``grad_fn=<NotImplemented>``
    """The node PyTorch gives an op that declares no derivative at all (``heaviside``)."""

    qualified_name = "torch::autograd::NotImplemented"

    def name(self) -> str:
        return self.qualified_name

    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.aten_name} is not implemented")


class Unique2Backward0(_NoDerivative):
    aten_name = "_unique2"


class UniqueDimBackward0(_NoDerivative):
    aten_name = "unique_dim"


class UniqueConsecutiveBackward0(_NoDerivative):
    aten_name = "unique_consecutive"


def without_derivative(node_class, data, inputs, aten_name: str | None = None) -> Tensor:
    """The output ``data`` as a Tensor; when grad mode is on and an input requires grad, its grad_fn is a
    ``node_class`` with an edge to each input that requires grad, as PyTorch makes it."""
    backend = inputs[0]._backend
    if _FORWARD_AD[0] is not None:  # forward-mode AD: PyTorch refuses dual inputs to some of these ops
        from gradviz.autograd.forward_ad import check_no_derivative

        check_no_derivative(node_class, inputs, aten_name)
    wanted = [tensor for tensor in inputs if isinstance(tensor, Tensor) and tensor.requires_grad]
    if not (_grad_state.enabled and wanted):
        return Tensor._make(data, backend=backend)
    node = node_class()
    node.backend = backend
    if aten_name is not None:
        node.aten_name = aten_name
    node._next_functions = tuple(gradient_edge(tensor) for tensor in wanted)
    node.needs_input_grad = tuple(True for _ in wanted)
    if _grad_state.backward_order:
        node._order = _grad_state.backward_order
    return Tensor._make(data, True, node, backend)
