"""Where a graph comes from: the small adapter the one walker reads a tensor's graph through.

gradviz's nodes and PyTorch's already share the interface the walk needs: ``next_functions``
(``(node, input_nr)`` pairs, ``(None, 0)`` for an input that needs no gradient), an
``AccumulateGrad`` per leaf with the leaf as ``.variable``, and ``_saved_<name>`` attributes.
What differs is the rest, and a ``GraphSource`` answers exactly that: how to find the node
``backward()`` would start from, how to summarise a tensor's values, which tensors a node saved
(gradviz keeps ``SavedTensor`` entries; torch's C++ nodes raise once they are freed), what the
inputs without a gradient were (gradviz keeps them, torch does not), and notes only one library
needs (``torch.compile`` regions, ``torch.func`` tensors).

``source_for`` picks the adapter. gradviz's own is built in; others are registered from above
(``gradviz/__init__.py`` registers ``gradviz.interop``'s torch adapter), so this package never
imports torch or the interop layer.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from gradviz._kinds import is_gradviz_tensor

NOT_A_TENSOR = ("expected a gradviz.Tensor or a torch.Tensor, but got {}; pass the tensor whose graph "
                "you want to see, e.g. gv.graph(loss)")


class GraphSource(Protocol):
    """What the walker asks of one library's graphs (one instance per walk; it may cache)."""

    name: str  # ``Graph.source``: "gradviz" or "torch"

    def root(self, tensor: Any) -> Any:
        """The node ``tensor.backward()`` starts from: its grad_fn, or a leaf's AccumulateGrad."""

    def value(self, tensor: Any):
        """An ``ArraySummary`` of the tensor's values (None when they cannot be shown)."""

    def leaf_grad(self, tensor: Any):
        """An ``ArraySummary`` of a leaf's ``.grad``, or None."""

    def saved(self, node: Any) -> tuple:
        """``SavedSummary`` per tensor the node saved for backward, freed ones marked so."""

    def constant(self, node: Any, slot: int) -> Any:
        """What input ``slot`` (a ``(None, 0)`` edge) was: a tensor, a number, or None if unknown."""

    def output_metadata(self, node: Any) -> tuple:
        """``(shape, dtype)`` of the tensor a function node produced, or ``(None, None)``."""

    def output_note(self, tensor: Any, root: Any) -> str | None:
        """A note about the shown tensor that only this library needs, else None."""

    def node_note(self, node: Any) -> str | None:
        """A note about one node that only this library needs, else None."""


_FOREIGN_SOURCES: list = []  # (accepts, make_source) pairs, asked before gradviz's own


def register_foreign_source(accepts: Callable[[Any], bool], make_source: Callable[[], GraphSource]) -> None:
    """Let the snapshot read graphs of tensors that are not gradviz's (``accepts(tensor)``)."""
    _FOREIGN_SOURCES.append((accepts, make_source))


def source_for(tensor: Any) -> GraphSource:
    """A fresh adapter for the library ``tensor`` belongs to; TypeError for anything else."""
    for accepts, make_source in _FOREIGN_SOURCES:
        if accepts(tensor):
            return make_source()
    if is_gradviz_tensor(tensor):
        from gradviz.snapshot.gradviz_source import GradvizSource

        return GradvizSource()
    raise TypeError(NOT_A_TENSOR.format(type(tensor).__name__))
