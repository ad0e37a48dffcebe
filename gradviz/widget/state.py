"""The view state: what the front end reads, made in one place for the widget and the HTML export.

A tensor (with ``names`` and ``model`` for labels and module groups) becomes a dict of JSON
values, one per entry of ``STATE_KEYS``:

* ``graph``: ``Graph.to_dict()`` (nodes, edges, root; see ``gradviz.snapshot.model``)
* ``graph_layout``: node positions from ``gradviz.render.layout.compute_layout`` (not ``layout``,
  which ipywidgets reserves for its own CSS layout object)
* ``trace``: one dict per backward step, in PyTorch's engine order (``gradviz.snapshot.trace``)
* ``step_index``: steps done, 0 (before the pass) to ``len(trace)``
* ``note``: a message shown above the graph (why there is no graph, or why it cannot be stepped)
* ``grad_updates``: leaves whose ``.grad`` changed since ``graph`` and ``trace`` were last sent,
  ``{"nodes": {id: node}, "text": {id: lines}, "steps": {index: trace entry}}``, which the front
  end lays over those three (``{}`` in a fresh state; see ``GraphWidget._set_grads``)
* the ``OPTIONS`` a user may set, with their defaults.

``GraphWidget`` holds exactly these as synced traits; ``export_html`` writes them into the page.
This module imports no anywidget, so the export works on a numpy-only install.
"""
from __future__ import annotations

import contextlib
import gc
import math
from dataclasses import dataclass
from typing import Any

from gradviz._kinds import is_gradviz_tensor, is_tensor
from gradviz.render.layout import compute_layout
from gradviz.snapshot import CannotObserve, Graph, graph_of, observe_all_steps
from gradviz.snapshot.trace import packed_trace, trace_to_dict
from gradviz.widget import wire

OPTIONS = {"show_saved": False, "speed": 1.0, "height": 480, "collapse": "auto", "predict": False}
"""What a user may set (``gv.show(loss, height=600)``), each with its default:
``show_saved`` draws each node's saved tensors; ``speed`` is steps per second when playing;
``height`` is the most px the drawing takes; ``collapse`` (``"auto"``, True or False) starts with
the layout's groups (one per ``nn.Module``, or bands of layers in huge graphs) drawn as collapsed
boxes, ``"auto"`` when the graph is big (``COLLAPSE_ABOVE`` in ``gradviz.js``); ``predict``
(predict, then reveal, for exercises) makes Next ask for the gradient the step will send, or
the ``.grad`` it will leave, and say right or what the chain rule gives, before showing it."""

STATE_KEYS = ("graph", "graph_layout", "trace", "step_index", "note", "grad_updates", *OPTIONS)

ACCEPTED = "a gradviz.Tensor or a torch.Tensor"

# Notes: each says what the controls do and what the engine would do now (tests/test_notes.py
# checks them against the engine's real state).
FREED_NOTE = ("backward() has freed the saved tensors of this graph, so it cannot run backward again "
              "(call backward(retain_graph=True) to keep them).")
REPLAY_NOTE = ("The steps below replay the backward pass as it was recorded before that, while the "
               "graph was whole.")
NOTHING_TO_STEP = "There is nothing to step."
STALE_NOTE = "The backward pass cannot run on this graph now:"
NON_SCALAR_NOTE = ("{label} is not a scalar, so {label}.backward() needs a gradient argument (without "
                   "one it raises \"grad can be implicitly created only for scalar outputs\").")
FROM_ONES_NOTE = "The steps shown are those of {label}.backward(ones_like({label}))."


@dataclass(frozen=True)
class Snapshot:
    """One look at a tensor: the Graph, the JSON trace (plain, or packed when asked for), the note,
    and the Steps the trace came from (kept so that a later ``.grad`` change can be shown without
    tracing again)."""

    graph: Graph
    trace: list
    note: str
    steps: tuple = ()


def view_state(tensor: Any, names: dict | None, model: Any = None, packed: bool = False, **options) -> dict:
    """The whole state for a tensor, without creating a live widget; ``options`` as in ``OPTIONS``.

    ``packed``: a graph of over ``wire.PACK_ABOVE`` nodes comes in the packed wire form, written
    straight from the Graph and the Steps (what an export ships; ``wire.unpack_state`` of it is
    the plain state)."""
    check_options(options)
    snapshot = take_snapshot(tensor, names, model=model, packed=packed)
    graph = snapshot.graph
    layout = compute_layout(graph)
    if packed and len(graph.nodes) > wire.PACK_ABOVE:
        graph_dict, layout = wire.packed_graph(graph), wire.pack_layout(layout)
    else:
        graph_dict = graph.to_dict()
    return {"graph": graph_dict, "graph_layout": layout, "trace": snapshot.trace,
            "step_index": 0, "note": snapshot.note, "grad_updates": {}, **OPTIONS, **options}


def state_of(view: Any) -> dict:
    """The state a live ``GraphWidget`` holds now (its traits), e.g. to export it as it is."""
    return {name: getattr(view, name) for name in STATE_KEYS}


def snapshot_state(tensor: Any, names: dict | None, previous_trace: list | None = None,
                   model: Any = None) -> tuple:
    """``(graph, trace, note)`` for a tensor (``take_snapshot`` without the Steps)."""
    snapshot = take_snapshot(tensor, names, previous_trace, model)
    return snapshot.graph, snapshot.trace, snapshot.note


def take_snapshot(tensor: Any, names: dict | None, previous_trace: list | None = None,
                  model: Any = None, packed: bool = False) -> Snapshot:
    """The snapshot of ``tensor``'s graph and the observed trace of its backward pass.

    A non-scalar tensor is traced from a gradient of ones, and the note says so. When the
    graph cannot run backward now (freed by an earlier ``backward()``, or a saved tensor changed
    in place) ``previous_trace`` is kept as a replay, and the note says which of these is true.
    """
    graph = graph_of(tensor, names, model)
    if len(graph.nodes) == 1:  # nothing to step: the output node's note says why
        return Snapshot(graph, [], _joined(graph.node(graph.root).note, NOTHING_TO_STEP))
    gradient, note, from_ones = None, "", ""
    if tensor.numel() != 1:
        label = graph.node(graph.root).label
        gradient = _ones_like(tensor)
        note, from_ones = NON_SCALAR_NOTE.format(label=label), FROM_ONES_NOTE.format(label=label)
    try:
        steps = observe_all_steps(tensor, gradient)
    except RuntimeError as error:  # freed by backward(), or a saved tensor changed in place
        replay = list(previous_trace or [])
        if isinstance(error, CannotObserve):
            reason = str(error)
        elif "second time" in str(error):
            reason = FREED_NOTE
        else:
            reason = f"{STALE_NOTE} {error}"
        if replay:
            return Snapshot(graph, replay, _joined(note, reason, REPLAY_NOTE, from_ones))
        return Snapshot(graph, [], _joined(note, reason, NOTHING_TO_STEP))
    as_trace = packed_trace if packed and len(graph.nodes) > wire.PACK_ABOVE else trace_to_dict
    return Snapshot(graph, as_trace(steps, graph), _joined(note, from_ones), steps)


def _ones_like(tensor: Any) -> Any:
    """The gradient ``backward()`` of a non-scalar tensor is usually given: ones, like the tensor."""
    if is_gradviz_tensor(tensor):
        from gradviz.tensor import ones_like
    else:
        from torch import ones_like
    return ones_like(tensor)


def _joined(*parts: str | None) -> str:
    return " ".join(part for part in parts if part)


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


def check_options(options: dict, caller: str = "show") -> None:
    """Raise a TypeError for an unknown option and a TypeError/ValueError for a bad value, each
    naming the option, before any work is done (``show``, ``GraphWidget``, ``export_html`` and
    ``to_html`` all check through here, so they treat options the same way)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"{caller}() got unknown option(s) {unknown}; accepted: {sorted(OPTIONS)}")
    for name, value in options.items():
        _OPTION_CHECKS[name](caller, name, value)


def _check_bool(caller: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{caller}(): {name}= must be True or False, got {value!r}")


def _check_positive(caller: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{caller}(): {name}= must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{caller}(): {name}= must be a finite number above 0, got {value!r}")


def _check_height(caller: str, name: str, value: Any) -> None:
    _check_positive(caller, name, value)
    if value != int(value):
        raise ValueError(f"{caller}(): {name}= is a whole number of pixels, got {value!r}")


def _check_collapse(caller: str, name: str, value: Any) -> None:
    if not (isinstance(value, bool) or (isinstance(value, str) and value == "auto")):
        raise ValueError(f"{caller}(): {name}= must be True, False or \"auto\", got {value!r}")


_OPTION_CHECKS = {"show_saved": _check_bool, "speed": _check_positive, "height": _check_height,
                  "collapse": _check_collapse, "predict": _check_bool}


@contextlib.contextmanager
def no_cyclic_gc():
    """Pause the cyclic garbage collector while a big state is built, and restore it as it was.

    A 20,000-node graph's state is hundreds of thousands of small dicts and lists with no
    reference cycles (reference counting frees them all); the collector would rescan them again
    and again as they are made, a third of the time of a show or an export.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
