"""``GraphWidget``: the live computational graph in JupyterLab, stepped in the browser.

The Python side owns the state as a few JSON traits; the front end (``gradviz.js``) draws them.
The layout is computed once per graph shape, here in Python; a step only changes
``step_index``, and the browser replays it from the shipped ``trace`` with no kernel round trip,
so a saved notebook or an exported page steps just the same with no kernel at all.
"""
from __future__ import annotations

import pathlib
import sys
from typing import Any

import anywidget
import traitlets

from gradviz.graph.model import Graph
from gradviz.render.layout import compute_layout
from gradviz.render.node_text import with_node_text
from gradviz.widget import live

_HERE = pathlib.Path(__file__).parent

ACCEPTED = "a gradviz.Tensor or a torch.Tensor"
FREED_NOTE = ("The saved tensors of this graph were freed by backward(), so the backward pass "
              "cannot be stepped again. Call backward(retain_graph=True) to keep them.")
STALE_NOTE = "The steps shown are from before; the backward pass cannot run again now:"


class GraphWidget(anywidget.AnyWidget):
    """The autograd graph of a tensor, with a backward pass to step node by node.

    Traits (all JSON, synced with the browser):

    * ``graph``: ``Graph.to_dict()`` (nodes, edges, root; see ``gradviz.graph.model``)
    * ``graph_layout``: node positions and node text from ``gradviz.render.layout.compute_layout``
      (not ``layout``, which is ipywidgets' own CSS layout of the view)
    * ``trace``: one dict per backward step, in PyTorch's engine order (``gradviz.graph.trace``)
    * ``step_index``: steps done, 0 (before the pass) to ``len(trace)``; synced both ways
    * ``show_saved``: draw each node's saved tensors; ``speed``: steps per second when playing;
      ``height``: max height of the drawing in px; ``note``: a message shown above the graph
    * ``collapse``: ``"auto"``, ``True`` or ``False``: start with the layout's groups (one per
      ``nn.Module``, or bands of layers in huge graphs) drawn as collapsed boxes. ``"auto"``
      collapses when the graph has more than ``COLLAPSE_ABOVE`` nodes (see ``gradviz.js``).
    """

    _esm = (_HERE / "gradviz.js").read_text(encoding="utf-8")
    _css = (_HERE / "gradviz.css").read_text(encoding="utf-8")

    graph = traitlets.Dict().tag(sync=True)
    graph_layout = traitlets.Dict().tag(sync=True)
    trace = traitlets.List().tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)
    show_saved = traitlets.Bool(False).tag(sync=True)
    speed = traitlets.Float(1.0).tag(sync=True)
    height = traitlets.Int(480).tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)
    collapse = traitlets.Union([traitlets.Bool(), traitlets.Enum(["auto"])], default_value="auto").tag(sync=True)

    def __init__(self, tensor: Any = None, names: dict | None = None, *, model: Any = None,
                 graph: Graph | None = None, trace: list | None = None, **options):
        """Show ``tensor``'s graph, or a prepared ``graph`` + ``trace``.

        Labels come from ``names`` (else the caller's variables); ``model``, an ``nn.Module``,
        names its parameters (``fc1.weight``) and, for torch graphs, groups nodes by module.
        """
        super().__init__(**options)
        self._tensor = None
        self._names = None
        self._model = None
        self._shape_key = None
        if tensor is not None:
            check_tensor(tensor, "GraphWidget")
            self._tensor = tensor
            self._model = model
            self._names = names if names is not None else names_in(sys._getframe(1))
            self.refresh()
            live.track(self)
        elif graph is not None:
            self._set_graph(graph, trace or [])
        else:
            raise TypeError(f"GraphWidget needs {ACCEPTED}, or graph= a gradviz Graph")

    @traitlets.validate("step_index")
    def _clamp_step(self, proposal) -> int:
        return max(0, min(len(self.trace), int(proposal["value"])))

    @property
    def tensor(self) -> Any:
        """The tensor this widget follows (None for a widget built from a prepared graph)."""
        return self._tensor

    def step(self) -> int:
        """Run one more node of the backward pass (in the drawing only); returns ``step_index``."""
        self.step_index = self.step_index + 1
        return self.step_index

    def back(self) -> int:
        """Undo the last step; returns ``step_index``."""
        self.step_index = self.step_index - 1
        return self.step_index

    def reset(self) -> int:
        """Back to before the backward pass: no node is current."""
        self.step_index = 0
        return 0

    def current_step(self) -> dict | None:
        """The trace entry of the node run at the current step, or None before the first."""
        return self.trace[self.step_index - 1] if self.step_index > 0 else None

    def refresh(self) -> None:
        """Re-read values, ``.grad`` and freed flags from the live tensor, keeping the layout.

        The trace is taken again too (a dry run: nobody's ``.grad`` changes), so stepping shows
        what the *next* backward would do; once the graph is freed the old trace is kept.
        """
        if self._tensor is None:
            return
        graph, steps, note = snapshot_state(self._tensor, self._names, self.trace, self._model)
        self._set_graph(graph, steps, note)

    def _set_graph(self, graph: Graph, steps: list, note: str = "") -> None:
        payload = graph.to_dict()
        shape_key = _shape_key(payload)
        with self.hold_sync():
            if shape_key != self._shape_key:
                self.graph_layout = compute_layout(graph)
                self._shape_key = shape_key
            else:  # same positions, the node text re-cut for the new values
                self.graph_layout = with_node_text(self.graph_layout, graph)
            self.graph = payload
            self.trace = list(steps)
            self.note = note
            self.step_index = min(self.step_index, len(self.trace))

    def to_html(self) -> str:
        """An embeddable HTML fragment that draws and steps this widget with no kernel."""
        from gradviz.widget.export import widget_fragment

        return widget_fragment(self)

    def _get_embed_state(self, drop_defaults: bool = False) -> dict:
        """Keep the module and CSS in ``ipywidgets.embed`` output even with ``drop_defaults``.

        They are class defaults, so standard embedding would drop them and leave the page's
        anywidget loader with nothing to run.
        """
        state = super()._get_embed_state(drop_defaults=drop_defaults)
        state["state"].update(self.get_state(["_esm", "_css", "_anywidget_id"]))
        return state

    def close(self) -> None:
        """Close the view and let go of the tensor and its graph."""
        live.untrack(self)
        self._tensor = None
        self._names = None
        self._model = None
        super().close()


def snapshot_state(tensor: Any, names: dict | None, previous_trace: list | None = None,
                   model: Any = None):
    """``(graph, trace, note)`` for a tensor: the snapshot, a dry-run trace, and any message.

    ``model`` labels parameters and groups torch nodes by module (see ``gradviz.graph.snapshot``).
    When the graph was freed by an earlier ``backward()`` the trace cannot be taken again:
    ``previous_trace`` is kept and the note says why.
    """
    from gradviz.autograd.engine import backward_steps
    from gradviz.graph import snapshot
    from gradviz.graph.trace import trace_to_dict

    if model is not None and not is_torch(tensor):
        names = {**(names or {}), **parameter_names(model, names)}  # gradviz graphs carry no modules
    graph = snapshot(tensor, names, model)
    if not _has_graph(graph):
        return graph, [], graph.node(graph.root).note or no_graph_note()
    try:
        steps = backward_steps(tensor, None, retain_graph=True, dry_run=True)
        return graph, trace_to_dict(steps, graph), ""
    except RuntimeError as error:  # freed by backward(), or a saved tensor changed in place
        reason = FREED_NOTE if "second time" in str(error) else f"{STALE_NOTE} {error}"
        return graph, list(previous_trace or []), reason


def check_tensor(value: Any, caller: str) -> None:
    """Raise the TypeError that names what ``caller`` accepts, unless ``value`` is a tensor."""
    if not is_tensor(value):
        raise TypeError(f"{caller}() expects {ACCEPTED}, got {type(value).__module__}."
                        f"{type(value).__qualname__}")


def is_tensor(value: Any) -> bool:
    """A gradviz or torch tensor (torch is never imported here just to ask)."""
    gradviz_tensor = sys.modules.get("gradviz.tensor")
    if gradviz_tensor is not None and isinstance(value, getattr(gradviz_tensor, "Tensor", ())):
        return True
    return is_torch(value)


def is_torch(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def parameter_names(model: Any, names: dict | None) -> dict:
    """``{"fc1.weight": tensor, ...}`` from a module, leaving out labels ``names`` already has."""
    taken = set(names or {})
    return {name: param for name, param in model.named_parameters() if name not in taken}


def names_in(frame) -> dict:
    """The tensors a frame's variables hold, as ``{name: tensor}``, for labelling leaves."""
    from gradviz.graph.names import names_from_frame

    return names_from_frame(frame)


def no_graph_note() -> str:
    return ("This tensor has no grad_fn: it was not computed from tensors that require grad "
            "(or it was made under no_grad / by detach()), so there is no backward graph.")


def _has_graph(graph: Graph) -> bool:
    return len(graph.nodes) > 1


def _shape_key(payload: dict) -> tuple:
    """What the layout depends on: node ids, kinds, names and edges, not values."""
    nodes = tuple((n["id"], n["kind"], n["name"], n["label"], len(n["saved"]), n["module"])
                  for n in payload["nodes"])
    edges = tuple((e["source"], e["target"], e["slot"]) for e in payload["edges"])
    return nodes, edges
