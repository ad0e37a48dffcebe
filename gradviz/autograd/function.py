"""The base of every op: forward and backward side by side, derivative declared as data.

An op is one class named as PyTorch names its node (``MulBackward0``)::

    class MulBackward0(Function):
        inputs = ("self", "other")
        derivatives = {"self": ("grad * other", r"\\bar{y} \\cdot b"), ...}

        def forward(ctx, self, other):          # Tensors (or Python numbers) in, an array out
            ctx.save(self=self, other=other)
            return backend.mul(self._data, other._data)

        def backward(ctx, grad):                # an array in, one array per input out
            self, other = ctx.saved("self", "other")
            return grad * other, grad * self

``apply`` runs ``forward`` and, when grad mode is on and an input requires grad, makes the
class's instance the output's ``grad_fn`` (the instance is both PyTorch's ``ctx`` and its node).
"""
from __future__ import annotations

import weakref

from gradviz.autograd.node import Node, SavedTensor
from gradviz.grad_mode import is_grad_enabled


class _NoRecord:
    """The ``ctx`` that forward gets when nothing is recorded: saving is a no-op."""

    needs_input_grad = ()

    def __setattr__(self, name, value):
        pass  # forward may note shapes on ctx; with nothing recorded they are not needed

    def save(ctx, /, **entries):
        pass

    def save_result(self, name: str = "result"):
        pass


_NO_RECORD = _NoRecord()


class Function(Node):
    inputs: tuple = ()
    derivatives: dict = {}
    needs_input_grad: tuple = ()
    _result_name = None
    _constants = None  # inputs without grad: a number, or a weak reference to a tensor

    # -- used inside forward / backward ----------------------------------------------------
    def save(ctx, /, **entries) -> None:
        """Keep tensors (checked for in-place changes, freed after backward) or plain values."""
        saved = ctx._packed
        if saved is None:
            saved = ctx._packed = {}
        for name, value in entries.items():
            saved[name] = SavedTensor(value) if isinstance(value, Tensor) else value

    def save_result(self, name: str = "result") -> None:
        """Save the op's own output (known only after forward returns) under ``name``."""
        self._result_name = name

    def saved(self, *names):
        """The saved arrays (or values) for ``names``; raises if freed or modified in place."""
        saved = self._packed
        if saved is None:
            from gradviz.autograd.node import FREED_MESSAGE

            raise RuntimeError(FREED_MESSAGE)
        values = []
        for name in names:
            entry = saved[name]
            values.append(entry.unpack() if isinstance(entry, SavedTensor) else entry)
        return values[0] if len(values) == 1 else values

    # -- recording -----------------------------------------------------------------------------
    @classmethod
    def apply(cls, *args, **params):
        """Run forward; record a node when grad mode is on and a graph input requires grad.

        The first ``len(cls.inputs)`` positional arguments are the graph inputs (each gets an
        edge); later ones and keywords are parameters such as ``dim``.
        """
        if is_grad_enabled():
            graph_inputs = args[:len(cls.inputs)]
            needs = tuple([isinstance(arg, Tensor) and arg._requires_grad for arg in graph_inputs])
            if True in needs:
                return cls._record(args, params, graph_inputs, needs)
        return Tensor._make(cls.forward(_NO_RECORD, *args, **params))

    @classmethod
    def _record(cls, args, params, graph_inputs, needs):
        """Run forward with a fresh node as ``ctx`` and make that node the output's ``grad_fn``."""
        node = cls()
        node.needs_input_grad = needs
        backend = node.backend = graph_inputs[needs.index(True)]._backend
        data = node.forward(*args, **params)
        node._next_functions = tuple([gradient_edge(arg) if need else (None, 0)
                                      for arg, need in zip(graph_inputs, needs)])
        if False in needs:
            node._constants = tuple([None if need else (weakref.ref(arg) if isinstance(arg, Tensor) else arg)
                                     for arg, need in zip(graph_inputs, needs)])
        out = Tensor._make(data, requires_grad=True, grad_fn=node, backend=backend)
        if node._result_name is not None:
            if node._packed is None:
                node._packed = {}
            node._packed[node._result_name] = SavedTensor(out, is_output=True)
        return out

    def forward(ctx, *args, **params):
        raise NotImplementedError


def gradient_edge(tensor) -> tuple:
    """Where a gradient for ``tensor`` must go: its grad_fn, or its leaf's AccumulateGrad."""
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (tensor._grad_accumulator(), 0)


from gradviz.tensor import Tensor  # noqa: E402  (tensor.py imports the ops that import this module)
