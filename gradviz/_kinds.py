"""What kind of object is this? Asked without importing anything.

Every layer needs to tell a gradviz tensor from a torch tensor, and an AccumulateGrad node from
the rest, so the answers live here, at the bottom, importing nothing: a torch tensor can only
exist once torch has been imported, so looking torch up in ``sys.modules`` answers the question
without ever paying for ``import torch`` (the same holds for gradviz's own Tensor class).
"""
from __future__ import annotations

import sys
from typing import Any

ACCUMULATE_GRAD = "AccumulateGrad"  # the class name of a leaf's gradient sink, in gradviz and torch


def is_torch_tensor(value: Any) -> bool:
    """True for a ``torch.Tensor`` (a ``Parameter`` too); never imports torch to find out."""
    torch = sys.modules.get("torch")
    tensor_class = getattr(torch, "Tensor", None)
    return tensor_class is not None and isinstance(value, tensor_class)


def is_gradviz_tensor(value: Any) -> bool:
    """True for a ``gradviz.Tensor`` (a ``gradviz.nn.Parameter`` too)."""
    module = sys.modules.get("gradviz.tensor")
    tensor_class = getattr(module, "Tensor", None)
    return tensor_class is not None and isinstance(value, tensor_class)


def is_tensor(value: Any) -> bool:
    """A tensor gradviz can draw: its own or torch's."""
    return is_gradviz_tensor(value) or is_torch_tensor(value)


def is_accumulate_grad(node: Any) -> bool:
    """True for the AccumulateGrad node of a leaf, in a gradviz graph or a torch graph.

    Both libraries name the class ``AccumulateGrad`` (its ``name()`` is the C++ name,
    ``torch::autograd::AccumulateGrad``), and both give it the leaf as ``.variable``.
    """
    return type(node).__name__ == ACCUMULATE_GRAD
