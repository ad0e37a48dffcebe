"""Frozen snapshots of autograd graphs, and the trace of a backward pass over one.

``graph_of`` and ``trace_of`` are what the widget, the HTML export and the text stepper use;
``graph`` (``gv.graph(loss)``) is the same snapshot labelled with the caller's variable names.
They take gradviz tensors and, through the adapters registered from above (``gradviz.interop``),
torch tensors; torch is imported only when a torch tensor is given.

(This package was ``gradviz.graph``; it is called ``snapshot`` so that ``gv.graph``, the function,
no longer shadows it: what lives here is the frozen picture of a graph, not the live graph that
``gradviz.autograd`` records.)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gradviz.snapshot.model import Graph, GraphEdge, GraphNode
from gradviz.snapshot.names import caller_names
from gradviz.snapshot.sources import register_foreign_source, source_for
from gradviz.snapshot.walk import build_graph


def graph_of(tensor: Any, names: dict | None = None, model: Any = None) -> Graph:
    """An immutable Graph of everything that produced ``tensor``.

    ``names`` labels tensors (``{"w": w}`` or ``{w: "w"}``); ``model``, an ``nn.Module``, labels
    its parameters and groups nodes by module (see ``gradviz.snapshot.labels``).
    """
    return build_graph(tensor, source_for(tensor), names, model)


def trace_of(tensor: Any, graph: Graph, gradient: Any = None) -> list:
    """The backward pass from ``tensor`` as JSON-ready steps, by a pure observation.

    A dry run with no hooks (``dry_run=True, run_hooks=False``), for gradviz and torch graphs
    alike: no user hook runs, no ``.grad`` is written, no saved tensor is freed, no version moves.
    """
    from gradviz.snapshot.trace import trace_to_dict

    return trace_to_dict(observe_steps(tensor, gradient), graph)


class CannotObserve(RuntimeError):
    """The backward pass of this graph cannot be observed without side effects (e.g. a node whose
    backward runs a whole backward pass of its own, writing ``.grad``); the message says why."""


def observe_steps(tensor: Any, gradient: Any = None):
    """The Steps of the backward pass from ``tensor`` as every view takes them: touching nothing.

    numpy's floating-point warnings are silenced while each step runs, and only then (never
    for the caller's code between steps): showing ``log(0)`` or ``1 / 0`` must not print
    "RuntimeWarning: divide by zero" into the learner's notebook, and the values stay inf and nan,
    as torch's do (torch does not warn).
    """
    from gradviz.autograd.engine import backward_steps

    steps = backward_steps(tensor, gradient, retain_graph=True, dry_run=True, run_hooks=False)
    while True:
        with np.errstate(all="ignore"):
            step = next(steps, None)
        if step is None:
            return
        yield step


def observe_all_steps(tensor: Any, gradient: Any = None) -> tuple:
    """Every Step of ``observe_steps``, taken in one go: numpy's warnings are silenced once around
    the whole pass (no user code runs between its steps here), not once per step."""
    from gradviz.autograd.engine import traced_steps

    with np.errstate(all="ignore"):
        return traced_steps(tensor, gradient)


def graph(tensor: Any, names: dict | None = None, model: Any = None) -> Graph:
    """``gv.graph(loss)``: the graph snapshot, labelled with the caller's variable names."""
    if names is None:
        names = caller_names(depth=2)
    return graph_of(tensor, names, model)


__all__ = ["CannotObserve", "Graph", "GraphEdge", "GraphNode", "graph", "graph_of", "observe_all_steps", "observe_steps", "register_foreign_source",
           "trace_of"]
