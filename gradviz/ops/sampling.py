"""Random fills recorded as PyTorch records them: the new values do not depend on the old ones.

``x.normal_()`` on a tensor in the graph gives it the node ``NormalBackward0`` (``uniform_``:
``UniformBackward0``; ``bernoulli_(p)``: ``BernoulliBackward2``, or ``BernoulliBackward1`` with a
tensor of probabilities; ``torch.bernoulli(p)``: ``BernoulliBackward0``). Each sends a zero gradient
back: the drawn numbers are constants as far as the chain rule is concerned. The numbers themselves
are drawn by ``gradviz.random`` before the node is made; ``forward`` only hands them on.
"""
from __future__ import annotations

from gradviz.autograd.function import OpFunction
from gradviz.tensor import Tensor


class _RandomFill(OpFunction):
    """A node whose output is freshly drawn ``values``; every input gets a zero gradient."""

    inputs = ("self",)
    derivatives = {"self": ("zeros_like(grad)", r"0")}

    def forward(ctx, self, values):
        return values

    def backward(ctx, grad):
        return ctx.backend.zeros_like(grad)

    def backward_graph(ctx, grad):
        """``zeros_like(grad)``: zeros with no history (under ``create_graph`` the buffer that sums them
        with another gradient records an AddBackward0 with an empty edge, as PyTorch's does)."""
        return _constant(ctx, ctx.backend.zeros_like(grad._data))


class NormalBackward0(_RandomFill):
    pass


class UniformBackward0(_RandomFill):
    pass


class BernoulliBackward0(_RandomFill):
    """``torch.bernoulli(p)``: draws 0 or 1 with the probabilities ``p``."""


class BernoulliBackward2(_RandomFill):
    """``x.bernoulli_(p)`` with a number ``p``."""


class BernoulliBackward1(OpFunction):
    """``x.bernoulli_(p)`` with a tensor ``p``: both get a zero gradient."""

    inputs = ("self", "p")
    derivatives = {"self": ("zeros_like(grad)", r"0"), "p": ("zeros_like(p)", r"0")}

    def forward(ctx, self, p, values):
        ctx.p_meta = (tuple(p.shape), p.dtype, p.device)
        return values

    def backward(ctx, grad):
        backend = ctx.backend
        return (backend.zeros_like(grad) if ctx.needs_input_grad[0] else None,
                _zeros(backend, *ctx.p_meta) if ctx.needs_input_grad[1] else None)


    def backward_graph(ctx, grad):
        backend = ctx.backend
        return (_constant(ctx, backend.zeros_like(grad._data)) if ctx.needs_input_grad[0] else None,
                _constant(ctx, _zeros(backend, *ctx.p_meta)) if ctx.needs_input_grad[1] else None)


def _constant(ctx, array) -> Tensor:
    return Tensor._make(array, backend=ctx.backend)


def _zeros(backend, shape, dtype, device):
    return backend.full(shape, 0, dtype, device)


RECORDED_FILLS = {"normal": NormalBackward0, "uniform": UniformBackward0, "bernoulli": BernoulliBackward2,
                  "bernoulli_tensor": BernoulliBackward1}
