"""The walker's adapter for gradviz's own graphs (see ``gradviz.snapshot.sources``).

gradviz nodes keep more than torch's: ``saved_entries()`` hands over the ``SavedTensor`` records
themselves (a freed one simply has no data), and an op node remembers what each input without a
gradient was (``_constants``: the number, or a weak reference to the tensor), so a constant
input can be drawn with its label and values.
"""
from __future__ import annotations

import weakref
from typing import Any

from gradviz.autograd.function import SavedTensors
from gradviz.autograd.node import SavedTensor
from gradviz.snapshot.model import SavedSummary, saved_summary, summarize


class GradvizSource:
    """Reads one gradviz graph; an array saved by several nodes is summarised once per walk."""

    name = "gradviz"

    def __init__(self):
        # id(array) -> (array, summary): the array is held so its id cannot be reused meanwhile
        # (a saved Python number is wrapped in a fresh 0-d array each time it is read).
        self._summaries: dict = {}

    def root(self, tensor: Any) -> Any:
        if tensor.grad_fn is not None:
            return tensor.grad_fn
        return tensor._grad_accumulator() if tensor.requires_grad else None

    def value(self, tensor: Any):
        return self._summary(tensor._data)

    def leaf_grad(self, tensor: Any):
        grad = tensor._grad
        return summarize(grad._data) if grad is not None else None

    def saved(self, node: Any) -> tuple:
        summaries = []
        for name, entry in node.saved_entries():
            if isinstance(entry, SavedTensor):  # plain saved values (dim, alpha) are not tensors
                summaries.append(self._saved_summary(name, entry))
            elif isinstance(entry, SavedTensors):  # one summary per tensor, named as torch graphs name them
                summaries.extend(self._saved_summary(f"{name}[{i}]", item)
                                 for i, item in enumerate(entry) if isinstance(item, SavedTensor))
        return tuple(summaries)

    def _saved_summary(self, name: str, entry: SavedTensor) -> SavedSummary:
        freed = entry.data is None
        return saved_summary(name, None if freed else self._summary(entry.data), freed)

    def _summary(self, array: Any):
        known = self._summaries.get(id(array))
        if known is None:
            known = self._summaries[id(array)] = (array, summarize(array))
        return known[1]

    def constant(self, node: Any, slot: int) -> Any:
        constants = getattr(node, "_constants", None)
        value = constants[slot] if constants else None
        return value() if isinstance(value, weakref.ref) else value

    def output_metadata(self, node: Any) -> tuple:
        return None, None  # a gradviz node does not record its output's shape

    def output_note(self, tensor: Any, root: Any) -> str | None:
        return None

    def node_note(self, node: Any) -> str | None:
        return None
