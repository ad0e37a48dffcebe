"""``GraphWidget``: the live computational graph in JupyterLab, stepped in the browser.

The Python side owns the state as a few JSON traits, exactly ``gradviz.widget.state.STATE_KEYS``
(the same state the HTML export writes); the front end (``gradviz.js``) draws them. The layout
is computed once per graph shape, here in Python; a step only changes ``step_index``, and the
browser replays it from the shipped ``trace`` with no kernel round trip, so a saved notebook or
an exported page steps just the same with no kernel at all.

This is the only module that needs anywidget; without it, importing this module raises an
ImportError that says what to install, and everything else (``gv.export_html``) still works.
"""
from __future__ import annotations

import pathlib
import sys
from typing import Any

try:
    import anywidget
except ImportError as error:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError('the gradviz widget needs anywidget and ipywidgets: pip install "gradviz-lab[widget]" '
                      "(gv.export_html works without them)") from error
import traitlets

from gradviz.render.layout import compute_layout
from gradviz.render.node_text import with_node_text
from gradviz.snapshot.model import Graph
from gradviz.snapshot.names import names_from_frame
from gradviz.widget import live
from gradviz.widget.state import ACCEPTED, OPTIONS, check_tensor, layout_key, snapshot_state

_HERE = pathlib.Path(__file__).parent
FALLBACK_MAX_NODES = 1000
"""Graphs up to this size carry their no-kernel page in the ``text/html`` fallback of the mime bundle."""


class GraphWidget(anywidget.AnyWidget):
    """The autograd graph of a tensor, with a backward pass to step node by node.

    Traits (all JSON, synced with the browser) are the view state described in
    ``gradviz.widget.state``: ``graph``, ``graph_layout``, ``trace``, ``step_index`` (synced both
    ways), ``note``, and the options ``show_saved``, ``speed``, ``height``, ``collapse``, ``predict``.
    ``layout`` stays ipywidgets' own (``w.layout.width = "100%"`` works as for any widget).
    """

    _esm = _HERE / "gradviz.js"  # a Path: anywidget reloads it on save when ANYWIDGET_HMR=1
    _css = _HERE / "gradviz.css"

    graph = traitlets.Dict().tag(sync=True)
    graph_layout = traitlets.Dict().tag(sync=True)
    trace = traitlets.List().tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)
    show_saved = traitlets.Bool(OPTIONS["show_saved"]).tag(sync=True)
    speed = traitlets.Float(OPTIONS["speed"]).tag(sync=True)
    height = traitlets.Int(OPTIONS["height"]).tag(sync=True)
    collapse = traitlets.Union([traitlets.Bool(), traitlets.Enum(["auto"])],
                               default_value=OPTIONS["collapse"]).tag(sync=True)
    predict = traitlets.Bool(OPTIONS["predict"]).tag(sync=True)

    def __init__(self, tensor: Any = None, names: dict | None = None, *, model: Any = None,
                 graph: Graph | None = None, trace: list | None = None, **options):
        """Show ``tensor``'s graph, or a prepared ``graph`` + ``trace``.

        Labels come from ``names`` (else the caller's variables); ``model``, an ``nn.Module``,
        names its parameters (``fc1.weight``) and groups nodes by module.
        """
        super().__init__(**options)
        self._tensor = None
        self._names = None
        self._model = None
        self._layout_key = None
        if tensor is not None:
            check_tensor(tensor, "GraphWidget")
            self._tensor = tensor
            self._model = model
            self._names = names if names is not None else names_from_frame(sys._getframe(1))
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
        key = layout_key(payload)
        with self.hold_sync():
            if key != self._layout_key:
                self.graph_layout = compute_layout(graph)
                self._layout_key = key
            else:  # same positions, the node text re-cut for the new values
                self.graph_layout = with_node_text(self.graph_layout, graph)
            self.graph = payload
            self.trace = list(steps)
            self.note = note
            self.step_index = min(self.step_index, len(self.trace))

    def to_html(self) -> str:
        """An embeddable HTML fragment that draws and steps this widget with no kernel."""
        from gradviz.widget.export import to_html

        return to_html(self)

    def _repr_mimebundle_(self, **kwargs) -> tuple | None:
        """The widget view, plus a ``text/html`` fallback that draws and steps with no kernel.

        A front end shows one entry of a bundle: JupyterLab, Notebook 7, VS Code and Colab
        rank the widget view first (JupyterLab's widget manager registers it at rank -10, ahead
        of ``text/html``), so the live view is never drawn twice. ``jupyter nbconvert --to
        html`` drops the widget view when the notebook holds no widget state (as JupyterLab
        saves it by default) and shows the fallback: this very graph as ``to_html`` makes it,
        stepping in the browser. It is the state at display time; later live updates reach
        the widget view only. A saved notebook keeps every output, so graphs above
        ``FALLBACK_MAX_NODES`` (about 0.7 kB of page per node) get a line saying how to export
        them instead.
        """
        bundle = super()._repr_mimebundle_(**kwargs)  # anywidget's (data, metadata)
        if bundle is None:
            return None
        data, metadata = bundle
        nodes = len(self.graph.get("nodes", ()))
        fallback = self.to_html() if nodes <= FALLBACK_MAX_NODES else (
            f"<p>gradviz: a graph of {nodes} nodes, too big to keep in the notebook as a page; "
            "<code>gv.export_html(tensor, \"graph.html\")</code> writes it to a file that steps with no kernel.</p>")
        return {**data, "text/html": fallback}, metadata

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
