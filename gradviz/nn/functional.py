"""``gradviz.nn.functional``: the functions tutorials call as ``F.<name>``, recorded as PyTorch records them.

``linear`` is the one composite: PyTorch records ``F.linear`` as ``addmm(bias, input, weight.t())``
for a 2-D input with a bias (flattening other inputs to 2-D around it), and as ``matmul(input,
weight.t())`` without one, so the graph shows AddmmBackward0 or MmBackward0 over TBackward0.
"""
from __future__ import annotations

from gradviz.ops.activation import functional_log_softmax as log_softmax, functional_softmax as softmax
from gradviz.ops.linalg import addmm, matmul
from gradviz.ops.loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, mse_loss,
                              nll_loss)
from gradviz.ops.shape import reshape, t
from gradviz.ops.unary import relu, sigmoid, tanh

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "linear", "log_softmax",
           "mse_loss", "nll_loss", "relu", "sigmoid", "softmax", "tanh"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    if bias is None:
        return matmul(input, t(weight))
    if input.ndim == 2:
        return addmm(bias, input, t(weight))
    rows = reshape(input, (-1, input.shape[-1]))
    return reshape(addmm(bias, rows, t(weight)), tuple(input.shape[:-1]) + (weight.shape[0],))
