"""Turn backward Steps into the JSON trace the widget and the HTML export replay.

Each entry names graph ids, not Python objects, so the trace can be stepped in a browser with
no kernel. Shape of one entry::

    {"index": 0, "node": "n1", "name": "MulBackward0",
     "grad_outputs": [summary | null],    # one per output; null: none reached it (split, unbind)
     "grad_inputs": [summary | null],
     "targets": ["n2" | null],            # graph id each grad_input flows to (next_functions)
     "contributions": [[{"from": "n0" | null, "value": summary}]],  # per output, summed pieces
     "leaf": "n5" | null,                 # AccumulateGrad: the leaf whose .grad changes
     "grad_before": summary | null, "grad_after": summary | null,
     "numbers": [{"local": summary | null, "summed": bool} | null]}

``numbers`` holds, per input of an elementwise formula (``Graph`` node ``formula``), the local
derivative's value at this step and whether broadcasting summed the gradient back
(``snapshot/formulas.step_numbers``); the other values a formula reads are the step's own
(``grad_outputs``, ``grad_before``) and the node's ``saved`` tensors in the Graph. A summary of a
small tensor among ``grad_inputs`` and ``local`` also carries ``full``, all its values (13 to 36
of them; ``preview`` already shows 12 or fewer whole); the arriving gradient is the one a
previous step sent. Each gradient is summarised once, and its summary dict is shared by every
entry that names it (``Summaries``), so the entries of a trace are never changed in place.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from gradviz.autograd.step import ACCUMULATE_GRAD_NAME
from gradviz.snapshot.formulas import full_values, raw_step_numbers, step_numbers
from gradviz.snapshot.model import Graph, _dtype_name, _format_number, summarize


def step_to_dict(step, graph: Graph, leaves: dict | None = None, summaries: "Summaries | None" = None,
                 silenced: bool = False) -> dict:
    """One entry of the trace; ``silenced``: numpy's warnings are off already (``step_numbers``)."""
    node = step.node
    summary = summaries if summaries is not None else Summaries()
    targets = [graph.id_of(fn) if fn is not None else None for fn, _ in node.next_functions]
    leaf = None
    if step.is_accumulate:
        leaf = (leaves if leaves is not None else leaf_ids(graph)).get(graph.id_of(node))
    return {
        "index": step.index,
        "node": graph.id_of(node),
        "name": step.name,
        "grad_outputs": [summary(g) for g in step.grad_outputs],
        "grad_inputs": [summary(g, whole=True) for g in step.grad_inputs],
        "targets": targets,
        "contributions": [
            [{"from": graph.id_of(sender) if sender is not None else None, "value": summary(g)}
             for sender, g in pieces]
            for pieces in step.contributions
        ],
        "leaf": leaf,
        "grad_before": summary(step.grad_before),
        "grad_after": summary(step.grad_after),
        "numbers": step_numbers(step, silenced),
    }


def trace_to_dict(steps: Iterable, graph: Graph) -> list:
    steps = tuple(steps)  # held while the trace is made: Summaries keys on the arrays' ids
    leaves = leaf_ids(graph)
    summaries = Summaries()
    with np.errstate(all="ignore"):  # once for the whole trace (see step_numbers)
        return [step_to_dict(step, graph, leaves, summaries, silenced=True) for step in steps]


def packed_trace(steps: Iterable, graph: Graph) -> dict:
    """The trace in the packed wire form (``gradviz.widget.wire``), written straight from the Steps:
    no per-step dicts. ``unpack_trace`` of it equals ``trace_to_dict`` of the same Steps."""
    steps = tuple(steps)  # held while the trace is made: the tables key on the arrays' ids
    table = SummaryIndex()
    with np.errstate(all="ignore"):  # once for the whole trace (see step_numbers)
        packed = _packed_steps(steps, graph, table)
    if packed is None:  # not a whole pass from its first step: keep the plain form
        return trace_to_dict(steps, graph)
    return {"packed": 1, "summaries": table.items, "steps": packed}


def _packed_steps(steps: tuple, graph: Graph, table: "SummaryIndex") -> list | None:
    leaves = leaf_ids(graph)
    id_of = (graph.node_ids or {}).get
    summary = table.index
    of_value = table.of_value
    packed = []
    for position, step in enumerate(steps):
        if step.index != position:
            return None
        node = step.node
        name = node.name()  # what ``step.name`` gives, asked once
        node_id = id_of(id(node))
        grad_outputs, grad_inputs = step.grad_outputs, step.grad_inputs
        numbers = []
        for number in raw_step_numbers(node, name, grad_outputs, grad_inputs):
            if number is None:
                numbers.append(None)
            elif type(number) is tuple:  # (local value | None, summed)
                local = number[0]
                numbers.append([None if local is None else of_value(local), number[1]])
            else:  # a view's step (CopySlices): summarised already
                local = number["local"]
                packed_number = [None if local is None else table.of_dict(local), number["summed"]]
                if "view" in number:
                    packed_number.append(number["view"])
                numbers.append(packed_number)
        is_accumulate = name == ACCUMULATE_GRAD_NAME
        packed.append([
            node_id, name,
            [summary(g) for g in grad_outputs],
            [summary(g, True) for g in grad_inputs],
            [None if fn is None else id_of(id(fn)) for fn, _ in node.next_functions],
            [[[None if sender is None else id_of(id(sender)), summary(g)] for sender, g in pieces]
             for pieces in step.contributions],
            leaves.get(node_id) if is_accumulate else None,
            summary(step.grad_before), summary(step.grad_after), numbers])
    return packed


class SummaryIndex:
    """The packed trace's ``summaries`` table: each distinct summary once, found by the array it
    describes (``id``, for arrays the Steps hold) or by its content."""

    def __init__(self):
        self.items: list = []
        self._by_array: dict = {}   # id(array) -> index of its summary
        self._whole: dict = {}      # id(array) -> index of its summary with ``full``
        self._by_content: dict = {}

    def index(self, array, whole: bool = False) -> int | None:
        """The index of ``array``'s summary (``whole``: with ``full``, every value, when it is small);
        each array is summarised once, whichever way it is asked for first."""
        if array is None:
            return None
        known = self._by_array.get(id(array))
        if known is None:
            if type(array) is np.ndarray and not array.shape:  # a 0-d array: never a ``full``
                known = self._by_array[id(array)] = self._scalar(array)
                return known
            known = self._by_array[id(array)] = self.of_dict(summarize(array).to_dict())
        if not whole:
            return known
        with_full = self._whole.get(id(array))
        if with_full is None:
            full = full_values(array)
            with_full = self._whole[id(array)] = known if full is None else self.of_dict({**self.items[known], "full": full})
        return with_full

    def of_value(self, value) -> int:
        """The index of ``summary_dict(value)`` (``formulas.py``): a value made for this step alone,
        so found by its content only (its ``id`` may be reused once it is gone)."""
        array = np.asarray(value)
        if type(array) is np.ndarray and not array.shape:
            return self._scalar(array)
        summary = summarize(array).to_dict()
        full = full_values(array)
        if full is not None:
            summary["full"] = full
        return self.of_dict(summary)

    def _scalar(self, array) -> int:
        """``of_dict(summarize(array).to_dict())`` for a 0-d numpy array, without the summary object."""
        dtype, preview = _dtype_name(array.dtype), _format_number(array.item())
        key = content_key((), dtype, preview)
        known = self._by_content.get(key)
        if known is None:
            known = self._by_content[key] = len(self.items)
            self.items.append({"shape": [], "dtype": dtype, "preview": preview})
        return known

    def of_dict(self, summary: dict) -> int:
        key = content_key(summary["shape"], summary["dtype"], summary["preview"], summary.get("full"), len(summary))
        known = self._by_content.get(key)
        if known is None:
            known = self._by_content[key] = len(self.items)
            self.items.append(summary)
        return known


def content_key(shape, dtype: str, preview: str, full: str | None = None, fields: int = 3) -> tuple:
    """What tells summary dicts apart in a ``SummaryIndex`` (``fields``: how many keys the dict has)."""
    return tuple(shape), dtype, preview, full, fields


class Summaries:
    """Summary dicts of a trace's gradients, each array summarised once and the dict shared.

    The gradient a step sends is the one the next step receives and the piece it sums, so a
    trace names each array two or three times; the same dict stands for it each time (dicts of a
    trace are never changed in place). Keyed on ``id(array)``: only for arrays the Steps hold,
    which outlive the trace's making.
    """

    def __init__(self):
        self.known: dict = {}

    def __call__(self, array, whole: bool = False):
        """A summary dict; ``whole``: with ``full``, every value, when the tensor is small."""
        if array is None:
            return None
        known = self.known.get(id(array))
        if known is None:
            plain = summarize(array).to_dict()
            full = full_values(array)
            known = self.known[id(array)] = (plain, plain if full is None else {**plain, "full": full})
        return known[1] if whole else known[0]


def leaf_ids(graph: Graph) -> dict:
    """``{AccumulateGrad id: leaf id}``, built once per trace (a scan per step is quadratic)."""
    return {edge.target: edge.source for edge in graph.edges if edge.kind == "variable"}
