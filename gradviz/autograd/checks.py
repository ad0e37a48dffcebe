"""Argument and hook checks that ``backward()``, ``autograd.grad()`` and the engine make, with
PyTorch's exception types and messages (kept apart from the engine so they read as one list)."""
from __future__ import annotations


def gradient_list(gradients, count: int) -> list:
    """The ``gradient`` / ``grad_outputs`` argument as a list: a tensor, a sequence, or None.

    As in PyTorch, a bare number is not a sequence (``TypeError: 'float' object is not iterable``)
    and each item must be a tensor or None.
    """
    from gradviz.tensor import Tensor

    if gradients is None:
        return [None] * count
    gradients = [gradients] if isinstance(gradients, Tensor) else list(gradients)
    for gradient in gradients:
        if gradient is not None and not isinstance(gradient, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(gradient).__name__}")
    return gradients or [None] * count


def unused_input(index: int) -> RuntimeError:
    """``autograd.grad`` asked for the gradient of an input the outputs do not depend on."""
    return RuntimeError(f"The differentiated Tensor at index {index} appears to not have been used in the graph. "
                        "Set allow_unused=True if this is the desired behavior.")


def hook_result(hook, before, after) -> None:
    """A tensor hook may replace the gradient, but not change its size or type."""
    from gradviz.autograd.node import _type_string
    from gradviz.tensor import Tensor

    name = getattr(hook, "__name__", type(hook).__name__)
    if tuple(after.shape) != tuple(before.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if after._data.dtype != before.dtype:
        was, got = _type_string(Tensor._make(before)), _type_string(Tensor._make(after._data))
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {was} got {got})")
