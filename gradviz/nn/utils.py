"""``torch.nn.utils``: gradient clipping, and parameters as one flat vector.

``clip_grad_norm_`` is what training loops of RNNs and transformers call between ``backward()`` and
``optimizer.step()``: it measures all the gradients as one vector and scales them down, in place,
when that vector is longer than ``max_norm``. It computes as PyTorch does: each gradient's norm, the
norm of those norms, ``max_norm / (total + 1e-6)`` clamped at 1, every gradient multiplied by it.
"""
from __future__ import annotations

import math
import types
import warnings

from gradviz.grad_mode import no_grad
from gradviz.ops.combine import cat, stack
from gradviz.tensor import Tensor, tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` taken together, as one vector."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        total = stack([t.norm(norm_type) for t in tensors]).norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale every ``.grad`` by ``min(1, max_norm / (total norm + 1e-6))``, in place; returns the total norm."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", UserWarning,
                      stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        with no_grad():
            scale = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
            for grad in grads:
                grad.mul_(scale)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every ``.grad`` to ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for parameter in _as_list(parameters):
            if parameter.grad is not None:
                parameter.grad.clamp_(min=-clip_value, max=clip_value)


def parameters_to_vector(parameters) -> Tensor:
    """Every parameter flattened and joined into one 1-D tensor (recorded: it keeps their graph)."""
    return cat([parameter.view(-1) for parameter in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive pieces of ``vec`` into the parameters' data (each viewed to its shape)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for parameter in parameters:
        count = parameter.numel()
        parameter.data = vec[offset:offset + count].view_as(parameter).data
        offset += count
