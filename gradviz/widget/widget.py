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

import json
import os
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
from gradviz.render.node_text import fitted_lines, with_node_text
from gradviz.snapshot.labels import check_model, name_pairs
from gradviz.snapshot.model import Graph
from gradviz.snapshot.names import names_from_frame
from gradviz.snapshot.sources import source_for
from gradviz.widget import live, wire
from gradviz.widget.changes import EVERYTHING, GRADS, NOTHING, GraphWatch, with_new_grads
from gradviz.widget.state import ACCEPTED, OPTIONS, check_options, check_tensor, layout_key, take_snapshot

_HERE = pathlib.Path(__file__).parent
FALLBACK_MAX_NODES = 1000
"""Graphs up to this size carry their no-kernel page in the ``text/html`` fallback of the mime bundle."""


def _shipped(name: str):
    """The front-end module or CSS: a Path (anywidget then reloads it on save) only when
    ``ANYWIDGET_HMR=1`` asks for hot reload, otherwise its text. anywidget connects every instance
    to a Path's change signal through a closure over the instance, so with a Path no widget could
    ever be collected (``widget/live.py`` releases widgets nobody shows or holds)."""
    path = _HERE / name
    hot_reload = os.environ.get("ANYWIDGET_HMR", "").lower() in ("1", "true")
    return path if hot_reload else path.read_text(encoding="utf-8")


ENCODED_TRAITS = ("graph", "graph_layout", "trace")
"""The big traits, sent to the front end as one buffer of UTF-8 JSON each (``_json_buffer``)."""


def _json_buffer(value: Any, _widget: Any) -> bytes:
    """A big trait as one buffer of JSON text, which ``gradviz.js`` parses (``decodingModel``).

    ipywidgets looks for binary buffers in every dict and list of the state it sends (a 20,000-node
    graph is half a million of them, about a second), and the kernel's session writes the rest as
    JSON again; a buffer is one value to both, sent as it is. The trait itself stays the dict or
    list in Python (``widget.graph["nodes"]``). ASCII-only JSON, so any label round-trips. The
    traits of a big graph go packed (``gradviz.widget.wire``); the front end unpacks them. The
    packed graph and trace are made with the plain ones (``_set_graph``: the trace straight from
    the Steps, then unpacked for Python) and kept in ``widget._wire`` until those change.
    """
    sent = getattr(_widget, "_wire", {}).get(id(value))
    packed = sent[1] if sent is not None and sent[0] is value else wire.pack_trait(value)
    return json.dumps(packed, separators=(",", ":"), allow_nan=False).encode("ascii")


class GraphWidget(anywidget.AnyWidget):
    """The autograd graph of a tensor, with a backward pass to step node by node.

    Traits (all JSON, synced with the browser) are the view state described in
    ``gradviz.widget.state``: ``graph``, ``graph_layout``, ``trace``, ``step_index`` (synced both
    ways), ``note``, and the options ``show_saved``, ``speed``, ``height``, ``collapse``, ``predict``.
    ``layout`` stays ipywidgets' own (``w.layout.width = "100%"`` works as for any widget).
    """

    _esm = _shipped("gradviz.js")
    _css = _shipped("gradviz.css")

    graph = traitlets.Dict().tag(sync=True, to_json=_json_buffer)
    graph_layout = traitlets.Dict().tag(sync=True, to_json=_json_buffer)
    trace = traitlets.List().tag(sync=True, to_json=_json_buffer)
    step_index = traitlets.Int(0).tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)
    grad_updates = traitlets.Dict().tag(sync=True)
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
        references_before = sys.getrefcount(self)  # see live.track: what the machinery adds
        check_options(options, "GraphWidget")
        if tensor is not None:
            check_tensor(tensor, "GraphWidget")
            name_pairs(names)
            check_model(model)
        super().__init__(**options)
        self._tensor = None
        self._names = None
        self._model = None
        self._layout_key = None  # layout_key of the graph the layout was made for, or None and that graph
        self._laid_out = None    # dict (the key is worked out at the next refresh: a first show needs none)
        self._graph = None       # the Graph of the last snapshot, for .grad-only updates
        self._watch = None       # what may change between cells (gradviz.widget.changes)
        self._views = 0          # views on screen, as the front end reports them
        self._displayed = False  # handed to a front end to display
        self._ever_viewed = False
        self._wire = {}          # id(trait value) -> (that value, its packed form), made with it
        self.on_msg(self._on_front_end_message)
        if tensor is not None:
            self._tensor = tensor
            self._model = model
            self._names = names if names is not None else names_from_frame(sys._getframe(1))
            self.refresh()
            machinery = sys.getrefcount(self) - references_before  # (not inside the call: its
            live.track(self, machinery)                             # first argument would count)
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
        """Take a new snapshot of the live tensor: values, ``.grad``, freed flags and the trace,
        keeping the layout when the graph's shape is the same.

        The trace is observed (no hook runs, nobody's ``.grad`` changes), so stepping shows what
        the *next* backward would do; once the graph is freed the old trace is kept as a replay.
        """
        if self._tensor is None:
            return
        snapshot = take_snapshot(self._tensor, self._names, self.trace, self._model, packed=True)
        self._watch = GraphWatch(self._tensor, snapshot.graph, snapshot.steps, source_for(self._tensor))
        self._set_graph(snapshot.graph, snapshot.trace, snapshot.note)

    def refresh_if_changed(self) -> str:
        """What the live refresh runs after each cell; it costs what changed.

        Nothing moved: nothing happens beyond a few reads per leaf. Only some leaves' ``.grad``
        moved: those leaves and their AccumulateGrad steps are updated, with no trace and no hook.
        Anything else (values, a freed graph, a new ``grad_fn``): ``refresh()``. Returns the kind
        of change (``gradviz.widget.changes``).
        """
        if self._tensor is None or self._watch is None:
            return NOTHING
        change, moved = self._watch.changes()
        if change == EVERYTHING:
            self.refresh()
        elif change == GRADS:
            graph, trace, changed = with_new_grads(self._graph, self.trace, self._watch, moved)
            self._set_grads(graph, trace, changed)
        return change

    def _set_graph(self, graph: Graph, steps: list | dict, note: str = "") -> None:
        """Show ``graph`` and its trace (``steps``: plain, or packed for a big graph, which is then
        sent as it is and unpacked for Python's ``trace``)."""
        payload = graph.to_dict()
        wire_forms = {}
        if wire.is_packed(steps):
            packed, steps = steps, wire.unpack_trace(steps)
            wire_forms[id(steps)] = (steps, packed)
        else:
            steps = list(steps)
        if wire.should_pack(payload):
            wire_forms[id(payload)] = (payload, wire.packed_graph(graph))
        self._wire = wire_forms  # before the traits change: hold_sync sends them on leaving
        with self.hold_sync():
            previous = self._layout_key
            if previous is None and self._laid_out is not None:
                previous = layout_key(self._laid_out)
            key = layout_key(payload) if previous is not None else None
            if key is None or key != previous:
                self.graph_layout = compute_layout(graph)
                self._layout_key, self._laid_out = key, payload
            else:  # same positions, the node text re-cut for the new values
                self.graph_layout = with_node_text(self.graph_layout, graph)
                self._layout_key, self._laid_out = key, None
            self.graph = payload
            self.trace = steps
            self.grad_updates = {}
            self.note = note
            self.step_index = min(self.step_index, len(self.trace))
        self._graph = graph

    def _set_grads(self, graph: Graph, trace: list, changed: tuple) -> None:
        """Show the new ``.grad`` of the leaves in ``changed``, sending only what changed.

        The leaves' nodes, their text and the AccumulateGrad steps that fill them are replaced in
        the ``graph``, ``graph_layout`` and ``trace`` values in place (Python reads them current,
        and nothing re-sends those big traits) and sent in the small ``grad_updates`` trait, which
        the front end lays over them; the next full snapshot (``_set_graph``) clears it.
        """
        self._wire = {}  # the traits change in place below: their packed forms would be stale
        nodes, text, boxes = self.graph["nodes"], self.graph_layout.get("text", {}), self.graph_layout["nodes"]
        updates = {"nodes": {}, "text": {}, "steps": {}, **self.grad_updates}
        updates = {part: dict(updates[part]) for part in ("nodes", "text", "steps")}
        for i, node in enumerate(graph.nodes):
            if node.id not in changed:
                continue
            # the formula stays an index into the graph's shared ``formulas`` (Graph.to_dict)
            nodes[i] = updates["nodes"][node.id] = {**node.to_dict(), "formula": nodes[i]["formula"]}
            if node.id in boxes:
                text[node.id] = updates["text"][node.id] = fitted_lines(node, boxes[node.id][2])
        for index, (old, new) in enumerate(zip(self.trace, trace)):
            if old is not new:
                self.trace[index] = updates["steps"][str(index)] = new
        self.grad_updates = updates
        self._graph = graph

    # -- on screen or not: what the front end reports, for the live refresh (widget/live.py) -----
    def _on_front_end_message(self, _widget, content, _buffers) -> None:
        """``{"type": "gradviz-view", "open": bool}`` from ``render()`` in gradviz.js: a view of this
        widget appeared (it is brought up to date) or went away (output cleared, cell deleted)."""
        if not isinstance(content, dict) or content.get("type") != "gradviz-view":
            return
        if content.get("open"):
            self._views += 1
            self._ever_viewed = True
            live.refresh_one(self)
        else:
            self._views = max(0, self._views - 1)

    @property
    def on_screen(self) -> bool:
        """A view is shown, or about to be: handed to a front end that has not reported it yet."""
        return self._views > 0 or (self._displayed and not self._ever_viewed)

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
        self._displayed = True  # handed to a front end: counts as on screen until its view reports
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
        """Keep the module and CSS in ``ipywidgets.embed`` output even with ``drop_defaults``, and
        the big traits as readable JSON there rather than base64 of their buffers.

        The module and CSS are class defaults, so standard embedding would drop them and leave the
        page's anywidget loader with nothing to run.
        """
        state = super()._get_embed_state(drop_defaults=drop_defaults)
        state["state"].update(self.get_state(["_esm", "_css", "_anywidget_id"]))
        state["state"].update({name: getattr(self, name) for name in ENCODED_TRAITS})
        buffers = [buffer for buffer in state.pop("buffers", []) if buffer["path"][0] not in ENCODED_TRAITS]
        if buffers:
            state["buffers"] = buffers
        return state

    def close(self) -> None:
        """Close the view and let go of the tensor and its graph."""
        live.untrack(self)
        self._tensor = None
        self._laid_out = None
        self._names = None
        self._model = None
        self._graph = None
        self._watch = None
        super().close()

    def release(self) -> None:
        """``close()``, and drop the drawing too: what the live refresh does to a widget that is
        neither on screen nor referenced (IPython's output history may still hold the object)."""
        layout = self.layout
        self.close()
        layout.close()  # ipywidgets made this Layout widget for this one (it would stay registered)
        self.set_trait("graph", {})
        self.set_trait("graph_layout", {})
        self.set_trait("trace", [])
        self.set_trait("grad_updates", {})
