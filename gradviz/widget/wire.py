"""The packed wire form of the three big traits (graph, graph_layout, trace) of a big graph.

A 66,000-node chain's state is about 46 MB of JSON, most of it the same few keys and values
again and again; writing it (``json.dumps``) and compressing it is most of an export's time. The
packed form says the same thing once:

* graph: a node leaves out every field that holds its default (``NODE_DEFAULTS``; ``label`` when
  it equals ``name``, ``id`` when it is ``n<position>``), each distinct array summary (a value,
  a ``.grad``, a saved tensor's value) is written once, in ``summaries``, and named by its index
  there; a saved tensor is ``[name, summary, freed]``, an edge ``[source, target, slot, kind]``
  or, for slot 0 of kind ``data``, ``[source, target]``;
* graph_layout: each distinct list of node text lines is written once, in ``texts``, and ``text``
  maps a node id to its index there (a chain's 66,000 boxes say ``saved: self`` the same way);
* trace: each distinct array summary is written once, in ``summaries``, and a step is a list of
  ``STEP_FIELDS`` (its index is its position) in which every summary is its index in that table:
  the fields named in ``SUMMARY_KEYS`` (one summary or a list of them), a contribution's value
  (``[from, summary]``) and an input's local derivative (``[summary, summed]``).

A packed value is a dict with ``"packed": 1``. Only graphs of more than ``PACK_ABOVE`` nodes are
packed (``pack_state``), so a small export stays readable. The front end unpacks before anything
else reads the state (``decodingModel`` in ``gradviz.js``, which holds the same ``STEP_FIELDS``,
``SUMMARY_KEYS`` and ``NODE_DEFAULTS``; ``tests/test_wire.py`` compares them), so stepping is
unchanged; ``unpack_state`` is the same in Python (``export.read_state``).

The widget sends its big traits packed too (``widget._json_buffer``); its Python traits stay
the plain dicts and lists (``widget.graph["nodes"]``).
"""
from __future__ import annotations

from typing import Any

from gradviz.snapshot.model import Graph
from gradviz.snapshot.trace import SummaryIndex, content_key

PACK_ABOVE = 250
"""Graphs of more nodes than this are shipped packed; smaller ones stay plain, readable JSON."""

PACKED = "packed"

NODE_DEFAULTS = {"shape": None, "dtype": None, "value": None, "grad": None, "saved": [], "formula": None,
                 "module": None, "note": None, "code": None, "order": 1}
"""Node fields left out of a packed node when they hold this value (``label`` too, when it is ``name``)."""

NODE_FIELDS = ("id", "kind", "name", "label", *NODE_DEFAULTS)

STEP_FIELDS = ("node", "name", "grad_outputs", "grad_inputs", "targets", "contributions", "leaf",
               "grad_before", "grad_after", "numbers")
"""A packed step's fields, in order (a step's ``index`` is its position in the trace)."""

SUMMARY_KEYS = ("grad_outputs", "grad_inputs", "grad_before", "grad_after")
"""Step fields that hold one array summary or a list of them (``null`` for none), packed as indices."""

_STEP_KEYS = ("index", *STEP_FIELDS)
_NUMBER_KEYS = ("local", "summed")
_VIEW_NUMBER_KEYS = ("local", "summed", "view")


class _Unpackable(Exception):
    """A value of a shape the packing does not know: it is shipped plain."""


def should_pack(graph: dict) -> bool:
    return len(graph.get("nodes", ())) > PACK_ABOVE


def pack_state(state: dict) -> dict:
    """The state with its graph, layout and trace packed when the graph has over ``PACK_ABOVE`` nodes."""
    if not should_pack(state.get("graph") or {}):
        return state
    return {**state, "graph": pack_graph(state["graph"]), "graph_layout": pack_layout(state["graph_layout"]),
            "trace": pack_trace(state["trace"])}


def pack_trait(value: Any) -> Any:
    """One of the three big traits, packed when its graph is big (what the widget sends): a graph
    or a layout by its nodes, a trace by its steps."""
    if isinstance(value, list):
        return pack_trace(value) if len(value) > PACK_ABOVE else value
    if isinstance(value, dict) and len(value.get("nodes", ())) > PACK_ABOVE:
        return pack_layout(value) if "text" in value else pack_graph(value)
    return value


def unpack_state(state: dict) -> dict:
    """The plain state of a packed one (a plain state is returned as it is)."""
    return {**state, "graph": unpack_graph(state.get("graph")), "graph_layout": unpack_layout(state.get("graph_layout")),
            "trace": unpack_trace(state.get("trace"))}


def is_packed(value: Any) -> bool:
    return isinstance(value, dict) and value.get(PACKED) == 1


# --- graph -----------------------------------------------------------------------------------

def pack_graph(graph: dict) -> dict:
    if is_packed(graph) or not graph:
        return graph
    table = SummaryTable()
    nodes = []
    for position, node in enumerate(graph["nodes"]):
        if len(node) != len(NODE_FIELDS) or any(len(saved) != 3 for saved in node["saved"]):
            return graph  # not the shape this packing knows: keep the graph plain
        nodes.append(_packed_node(
            position, node["id"], node["kind"], node["name"], node["label"], node["shape"], node["dtype"],
            node["value"], node["grad"], [(saved["name"], saved["value"], saved["freed"]) for saved in node["saved"]],
            node["formula"], node["module"], node["note"], node["code"], node["order"], table))
    edges = [_packed_edge(edge["source"], edge["target"], edge["slot"], edge["kind"]) for edge in graph["edges"]]
    return {**graph, PACKED: 1, "nodes": nodes, "edges": edges, "summaries": table.items}


def packed_graph(graph: Graph) -> dict:
    """``pack_graph(graph.to_dict())``, written straight from the Graph's nodes."""
    formulas: list = []
    formula_index: dict = {}
    table = SummaryTable()
    nodes = []
    for position, node in enumerate(graph.nodes):
        formula = None
        if node.formula:
            formula = formula_index.get(id(node.formula))
            if formula is None:
                formula = formula_index[id(node.formula)] = len(formulas)
                formulas.append([item.to_dict() for item in node.formula])
        nodes.append(_packed_node(
            position, node.id, node.kind, node.name, node.label, node.shape, node.dtype, node.value, node.grad,
            [(saved.name, saved.value, saved.freed) for saved in node.saved], formula,
            node.module, node.note, node.code, node.order, table))
    return {"version": 1, "source": graph.source, "root": graph.root, "nodes": nodes,
            "edges": [_packed_edge(edge.source, edge.target, edge.slot, edge.kind) for edge in graph.edges],
            "formulas": formulas, PACKED: 1, "summaries": table.items}


def _packed_node(position, node_id, kind, name, label, shape, dtype, value, grad, saved, formula, module,
                 note, code, order, table) -> dict:
    """A node with only the fields that differ from ``NODE_DEFAULTS``: ``id`` when it is not
    ``n<position>``, ``label`` when it is not ``name``; summaries as indices into ``summaries``,
    a saved tensor as ``[name, summary, freed]``."""
    packed = {"kind": kind, "name": name}
    if node_id != f"n{position}":
        packed["id"] = node_id
    if label != name:
        packed["label"] = label
    if shape is not None:
        packed["shape"] = list(shape)
    if dtype is not None:
        packed["dtype"] = dtype
    if value:
        packed["value"] = table(value)
    if grad:
        packed["grad"] = table(grad)
    if saved:
        packed["saved"] = [[saved_name, table(summary) if summary else None, freed]
                           for saved_name, summary, freed in saved]
    if formula is not None:
        packed["formula"] = formula
    if module is not None:
        packed["module"] = module
    if note is not None:
        packed["note"] = note
    if code is not None:
        packed["code"] = code
    if order != 1:
        packed["order"] = order
    return packed


def _packed_edge(source: str, target: str, slot: int, kind: str) -> list:
    return [source, target] if slot == 0 and kind == "data" else [source, target, slot, kind]


def unpack_graph(graph: Any) -> Any:
    if not is_packed(graph):
        return graph
    summaries = graph["summaries"]
    nodes = []
    for position, packed in enumerate(graph["nodes"]):
        node = {"id": packed.get("id", f"n{position}"), "kind": packed["kind"], "name": packed["name"],
                "label": packed.get("label", packed["name"])}
        for key, default in NODE_DEFAULTS.items():
            node[key] = packed.get(key, default)
        for key in ("value", "grad"):
            if node[key] is not None:
                node[key] = summaries[node[key]]
        node["saved"] = [{"name": name, "value": None if at is None else summaries[at], "freed": freed}
                         for name, at, freed in node["saved"]]
        nodes.append(node)
    edges = [{"source": edge[0], "target": edge[1], "slot": edge[2] if len(edge) > 2 else 0,
              "kind": edge[3] if len(edge) > 2 else "data"} for edge in graph["edges"]]
    plain = {key: value for key, value in graph.items() if key not in (PACKED, "summaries")}
    return {**plain, "nodes": nodes, "edges": edges}


# --- layout ----------------------------------------------------------------------------------

def pack_layout(layout: dict) -> dict:
    if is_packed(layout) or not layout or "text" not in layout:
        return layout
    texts: list = []
    by_list: dict = {}   # id(lines) -> index: the layout shares identical lists (render/node_text.py)
    by_content: dict = {}
    text = {}
    for node_id, lines in layout["text"].items():
        index = by_list.get(id(lines))
        if index is None:
            key = tuple(tuple(line.items()) for line in lines)
            index = by_content.get(key)
            if index is None:
                index = by_content[key] = len(texts)
                texts.append(lines)
            by_list[id(lines)] = index
        text[node_id] = index
    return {**layout, PACKED: 1, "text": text, "texts": texts}


def unpack_layout(layout: Any) -> Any:
    if not is_packed(layout):
        return layout
    texts = layout["texts"]
    plain = {key: value for key, value in layout.items() if key not in (PACKED, "texts")}
    return {**plain, "text": {node_id: [dict(line) for line in texts[index]] for node_id, index in layout["text"].items()}}


# --- trace -----------------------------------------------------------------------------------

class SummaryTable(SummaryIndex):
    """``SummaryIndex`` over summary dicts, each looked up by identity first: a plain trace shares
    one dict for each gradient (``snapshot/trace.Summaries``)."""

    def __init__(self):
        super().__init__()
        self._by_id: dict = {}
        self._held: list = []  # the dicts whose ids are keys, kept alive while the table is

    def __call__(self, summary) -> int | None:
        """The index of a summary dict (or of an ``ArraySummary``, as its dict)."""
        if summary is None:
            return None
        index = self._by_id.get(id(summary))
        if index is None:
            if isinstance(summary, dict):
                index = self.of_dict(summary)
            else:  # an ArraySummary: its dict is made only when the table has no equal one yet
                index = self._by_content.get(content_key(summary.shape, summary.dtype, summary.preview))
                if index is None:
                    index = self.of_dict(summary.to_dict())
            self._by_id[id(summary)] = index
            self._held.append(summary)
        return index


def pack_trace(trace: Any) -> Any:
    if is_packed(trace) or not isinstance(trace, list) or not trace:
        return trace
    table = SummaryTable()
    steps = []
    for position, entry in enumerate(trace):
        if entry.get("index") != position or tuple(entry) != _STEP_KEYS:  # not the shape packing knows
            return trace
        try:
            steps.append(_pack_step(entry, table))
        except _Unpackable:
            return trace
    return {PACKED: 1, "summaries": table.items, "steps": steps}


def _pack_step(entry: dict, table: SummaryTable) -> list:
    numbers = []
    for number in entry["numbers"]:
        if number is None:
            numbers.append(None)
        elif tuple(number) == _NUMBER_KEYS:
            numbers.append([table(number["local"]), number["summed"]])
        elif tuple(number) == _VIEW_NUMBER_KEYS:  # a view's step (CopySlices): the view's values too
            numbers.append([table(number["local"]), number["summed"], number["view"]])
        else:
            raise _Unpackable
    return [entry["node"], entry["name"],
            [table(g) for g in entry["grad_outputs"]],
            [table(g) for g in entry["grad_inputs"]],
            entry["targets"],
            [[[piece["from"], table(piece["value"])] for piece in pieces] for pieces in entry["contributions"]],
            entry["leaf"], table(entry["grad_before"]), table(entry["grad_after"]), numbers]


def unpack_trace(trace: Any) -> Any:
    if not is_packed(trace):
        return trace
    summaries = trace["summaries"]
    plain = []
    for position, step in enumerate(trace["steps"]):
        node, name, grad_outputs, grad_inputs, targets, contributions, leaf, before, after, numbers = step
        plain.append({  # the keys in STEP_FIELDS order, after "index"
            "index": position, "node": node, "name": name,
            "grad_outputs": _summaries(grad_outputs, summaries), "grad_inputs": _summaries(grad_inputs, summaries),
            "targets": targets,
            "contributions": [[{"from": source, "value": None if i is None else summaries[i]} for source, i in pieces]
                              for pieces in contributions],
            "leaf": leaf,
            "grad_before": _summaries(before, summaries), "grad_after": _summaries(after, summaries),
            "numbers": [None if number is None else _unpack_number(number, summaries) for number in numbers]})
    return plain


def _summaries(value, summaries: list):
    """A ``SUMMARY_KEYS`` field unpacked: one index or a list of them (None stays None)."""
    if isinstance(value, list):
        return [None if i is None else summaries[i] for i in value]
    return None if value is None else summaries[value]


def _unpack_number(number: list, summaries: list) -> dict:
    plain = {"local": None if number[0] is None else summaries[number[0]], "summed": number[1]}
    if len(number) > 2:
        plain["view"] = number[2]
    return plain
