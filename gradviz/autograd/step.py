"""One record per node run by the backward pass.

gradviz's engine (``GraphTask.make_step`` in ``engine.py``) and any engine registered for another
framework's tensors (``register_foreign_engine``) yield a ``Step`` each time a node runs. A Step is
immutable: the widget, the HTML export and the text stepper all read the same records, whichever
engine produced them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACCUMULATE_GRAD_NAME = "torch::autograd::AccumulateGrad"


@dataclass(frozen=True)
class Step:
    """What happened when one node ran.

    ``grad_outputs`` are the gradients that arrived at the node (one per output of the forward
    op, already summed over every path); ``contributions`` lists, per output, the separate
    ``(sender_node, gradient)`` pieces that were summed, so a learner can see a tensor used twice.
    ``grad_inputs`` are the gradients the node sends on, aligned with ``node.next_functions``
    (``None`` where the edge leads nowhere). For AccumulateGrad, ``grad_before`` and
    ``grad_after`` are the leaf's ``.grad`` around the accumulation (``None`` otherwise and for
    a leaf that had no grad yet). Arrays are backend arrays (numpy or torch), never Tensors.
    """

    index: int
    node: Any
    grad_outputs: tuple
    grad_inputs: tuple
    contributions: tuple = ()
    grad_before: Any = None
    grad_after: Any = None

    @property
    def name(self) -> str:
        return self.node.name()

    @property
    def is_accumulate(self) -> bool:
        """gradviz's and torch's AccumulateGrad nodes both give this ``name()``."""
        return self.name == ACCUMULATE_GRAD_NAME

    def __repr__(self) -> str:
        return f"Step({self.index}, {self.name})"


def new_step(index: int, node: Any, grad_outputs: tuple, grad_inputs: tuple, contributions: tuple = (),
             grad_before: Any = None, grad_after: Any = None) -> Step:
    """``Step(...)``, made without the frozen ``__init__``'s one ``object.__setattr__`` per field (the
    same object: equal and printed alike); an engine makes one per node of every trace."""
    step = object.__new__(Step)
    step.__dict__.update(index=index, node=node, grad_outputs=grad_outputs, grad_inputs=grad_inputs,
                         contributions=contributions, grad_before=grad_before, grad_after=grad_after)
    return step
