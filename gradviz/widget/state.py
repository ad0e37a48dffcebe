"""The view state: what the front end reads, made in one place for the widget and the HTML export.

A tensor (with ``names`` and ``model`` for labels and module groups) becomes a dict of JSON
values, one per entry of ``STATE_KEYS``:

* ``graph``: ``Graph.to_dict()`` (nodes, edges, root; see ``gradviz.snapshot.model``)
* ``graph_layout``: node positions from ``gradviz.render.layout.compute_layout`` (not ``layout``,
  which ipywidgets reserves for its own CSS layout object)
* ``trace``: one dict per backward step, in PyTorch's engine order (``gradviz.snapshot.trace``)
* ``step_index``: steps done, 0 (before the pass) to ``len(trace)``
* ``note``: a message shown above the graph (why there is no graph, or why it cannot be stepped)
* the ``OPTIONS`` a user may set, with their defaults.

``GraphWidget`` holds exactly these as synced traits; ``export_html`` writes them into the page.
This module imports no anywidget, so the export works on a numpy-only install.
"""
from __future__ import annotations

from typing import Any

from gradviz._kinds import is_tensor
from gradviz.render.layout import compute_layout
from gradviz.snapshot import graph_of, trace_of

OPTIONS = {"show_saved": False, "speed": 1.0, "height": 480, "collapse": "auto", "predict": False}
"""What a user may set (``gv.show(loss, height=600)``), each with its default:
``show_saved`` draws each node's saved tensors; ``speed`` is steps per second when playing;
``height`` is the most px the drawing takes; ``collapse`` (``"auto"``, True or False) starts with
the layout's groups (one per ``nn.Module``, or bands of layers in huge graphs) drawn as collapsed
boxes, ``"auto"`` when the graph is big (``COLLAPSE_ABOVE`` in ``gradviz.js``); ``predict``
(predict, then reveal, for exercises) makes Next ask for the gradient the step will send, or
the ``.grad`` it will leave, and say right or what the chain rule gives, before showing it."""

STATE_KEYS = ("graph", "graph_layout", "trace", "step_index", "note", *OPTIONS)

ACCEPTED = "a gradviz.Tensor or a torch.Tensor"
FREED_NOTE = ("The saved tensors of this graph were freed by backward(), so the backward pass "
              "cannot be stepped again. Call backward(retain_graph=True) to keep them.")
STALE_NOTE = "The steps shown are from before; the backward pass cannot run again now:"


def view_state(tensor: Any, names: dict | None, model: Any = None, **options) -> dict:
    """The whole state for a tensor, without creating a live widget; ``options`` as in ``OPTIONS``."""
    check_options(options)
    graph, trace, note = snapshot_state(tensor, names, model=model)
    return {"graph": graph.to_dict(), "graph_layout": compute_layout(graph), "trace": trace,
            "step_index": 0, "note": note, **OPTIONS, **options}


def state_of(view: Any) -> dict:
    """The state a live ``GraphWidget`` holds now (its traits), e.g. to export it as it is."""
    return {name: getattr(view, name) for name in STATE_KEYS}


def snapshot_state(tensor: Any, names: dict | None, previous_trace: list | None = None,
                   model: Any = None) -> tuple:
    """``(graph, trace, note)`` for a tensor: the snapshot, a dry-run trace, and any message.

    When the graph was freed by an earlier ``backward()`` the trace cannot be taken again:
    ``previous_trace`` is kept and the note says why.
    """
    graph = graph_of(tensor, names, model)
    if len(graph.nodes) == 1:  # nothing to step: the output node's note says why
        return graph, [], graph.node(graph.root).note or ""
    try:
        return graph, trace_of(tensor, graph), ""
    except RuntimeError as error:  # freed by backward(), or a saved tensor changed in place
        reason = FREED_NOTE if "second time" in str(error) else f"{STALE_NOTE} {error}"
        return graph, list(previous_trace or []), reason


def layout_key(graph_dict: dict) -> tuple:
    """What the layout depends on: node ids, kinds, names and edges, not values."""
    nodes = tuple((n["id"], n["kind"], n["name"], n["label"], len(n["saved"]), n["module"])
                  for n in graph_dict["nodes"])
    edges = tuple((e["source"], e["target"], e["slot"]) for e in graph_dict["edges"])
    return nodes, edges


def check_tensor(value: Any, caller: str) -> None:
    """Raise the TypeError that names what ``caller`` accepts, unless ``value`` is a tensor."""
    if not is_tensor(value):
        raise TypeError(f"{caller}() expects {ACCEPTED}, got {type(value).__module__}."
                        f"{type(value).__qualname__}")


def check_options(options: dict) -> None:
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; accepted: {sorted(OPTIONS)}")

