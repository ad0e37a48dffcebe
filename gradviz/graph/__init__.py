"""Graph snapshots and backward traces, from gradviz tensors or from real torch tensors.

``snapshot`` and ``trace_of`` are what the widget, the HTML export and the text stepper use; they
dispatch on the tensor's type, so torch is imported only when a torch tensor is given.
"""
from __future__ import annotations

from gradviz.graph.model import Graph, GraphEdge, GraphNode
from gradviz.graph.names import caller_names, is_tensor_like


def _is_torch(tensor) -> bool:
    kind = type(tensor)
    return kind.__module__.startswith("torch") and kind.__name__ in ("Tensor", "Parameter")


def _check(tensor) -> None:
    if not is_tensor_like(tensor):
        raise TypeError(
            f"expected a gradviz.Tensor or a torch.Tensor, but got {type(tensor).__name__}; pass the tensor whose "
            "graph you want to see, e.g. gv.graph(loss)")


def snapshot(tensor, names: dict | None = None, model=None) -> Graph:
    """An immutable Graph of everything that produced ``tensor`` (names: label -> tensor)."""
    _check(tensor)
    if _is_torch(tensor):
        from gradviz.graph.torch_source import build_torch_graph

        return build_torch_graph(tensor, names=names, model=model)
    from gradviz.graph.build import build_graph

    return build_graph(tensor, names)


def trace_of(tensor, graph: Graph, gradient=None) -> list:
    """The backward pass from ``tensor`` as JSON-ready steps, by a dry run (no ``.grad`` changes)."""
    from gradviz.autograd.engine import backward_steps
    from gradviz.graph.trace import trace_to_dict

    return trace_to_dict(backward_steps(tensor, gradient, retain_graph=True, dry_run=True), graph)


def graph(tensor, names: dict | None = None, model=None) -> Graph:
    """``gv.graph(loss)``: the graph snapshot, labelled with the caller's variable names."""
    if names is None:
        names = caller_names(depth=2)
    return snapshot(tensor, names, model)


__all__ = ["Graph", "GraphEdge", "GraphNode", "graph", "snapshot", "trace_of"]
