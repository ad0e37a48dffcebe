"""Build a Graph snapshot from a gradviz tensor by walking ``grad_fn.next_functions``.

The walk is breadth-first from the output, in ``next_functions`` order, without recursion, so
the same program gives the same ids (``n0`` is the output) every run and a 100,000-node chain
is no problem.
"""
from __future__ import annotations

import weakref

from gradviz.autograd.function import SavedTensors
from gradviz.autograd.node import AccumulateGrad, SavedTensor
from gradviz.graph.model import Formula, Graph, GraphEdge, GraphNode, SavedSummary, summarize
from gradviz.graph.names import by_identity

NO_GRAPH_NOTE = ("This tensor has no grad_fn: it was not made by an operation that autograd "
                 "records (it does not require grad, or it was made under no_grad() or by detach()).")
LEAF_NOTE = "A leaf tensor: backward() accumulates gradients into its .grad."


def build_graph(tensor, names: dict | None = None) -> Graph:
    labels = by_identity(names)
    by_grad_fn = {id(t.grad_fn): name for name, t in (names or {}).items()
                  if getattr(t, "grad_fn", None) is not None}
    output_label = labels.get(id(tensor), "output")
    root_fn = tensor.grad_fn
    if root_fn is None and tensor.requires_grad:
        root_fn = tensor._grad_accumulator()
    output = GraphNode("n0", "output", output_label, output_label, tuple(tensor.shape), tensor.dtype.name,
                       value=summarize(tensor._data),
                       note=None if root_fn is not None else NO_GRAPH_NOTE)
    nodes, edges, node_ids = [output], [], {}
    if root_fn is None:
        return Graph(tuple(nodes), (), "n0", "gradviz", node_ids)

    def new_id() -> str:
        return f"n{len(nodes)}"

    node_ids[id(root_fn)] = new_id()
    queue = [root_fn]
    edges.append(GraphEdge(node_ids[id(root_fn)], "n0", 0, "output"))
    nodes.append(None)
    position = 0
    while position < len(queue):
        fn = queue[position]
        position += 1
        fn_id = node_ids[id(fn)]
        nodes[int(fn_id[1:])] = _describe(fn, fn_id, by_grad_fn)
        if isinstance(fn, AccumulateGrad):
            leaf_id = new_id()
            variable = fn.variable
            label = labels.get(id(variable)) or _shape_label(variable)
            nodes.append(GraphNode(leaf_id, "leaf", label, label, tuple(variable.shape), variable.dtype.name,
                                   value=summarize(variable._data),
                                   grad=summarize(variable._grad._data) if variable._grad is not None else None,
                                   note=LEAF_NOTE))
            edges.append(GraphEdge(leaf_id, fn_id, 0, "variable"))
            continue
        constants = getattr(fn, "_constants", None)
        for slot, (next_fn, _) in enumerate(fn.next_functions):
            if next_fn is None:
                constant_id = new_id()
                nodes.append(_constant(constant_id, constants[slot] if constants else None, labels))
                edges.append(GraphEdge(constant_id, fn_id, slot, "data"))
                continue
            key = id(next_fn)
            if key not in node_ids:
                node_ids[key] = new_id()
                nodes.append(None)
                queue.append(next_fn)
            edges.append(GraphEdge(node_ids[key], fn_id, slot, "data"))
    return Graph(tuple(nodes), tuple(edges), "n0", "gradviz", node_ids)


def _describe(fn, fn_id: str, by_grad_fn: dict) -> GraphNode:
    if isinstance(fn, AccumulateGrad):
        return GraphNode(fn_id, "accumulate", "AccumulateGrad", "AccumulateGrad",
                         formula=_formulas(fn))
    name = type(fn).__name__  # the class name, as printed and as torch graphs show it (CopySlices)
    variable = by_grad_fn.get(id(fn))
    label = variable or name
    return GraphNode(fn_id, "function", name, label, saved=_saved(fn), formula=_formulas(fn))


def _saved(fn) -> tuple:
    summaries = []
    for name, entry in fn.saved_entries():
        if isinstance(entry, SavedTensor):
            freed = entry.data is None
            summaries.append(SavedSummary(name, None if freed else summarize(entry.data), freed))
        elif isinstance(entry, SavedTensors):  # one summary per tensor, named as torch graphs name them
            summaries.extend(SavedSummary(f"{name}[{i}]", None if item.data is None else summarize(item.data),
                                          item.data is None)
                             for i, item in enumerate(entry) if isinstance(item, SavedTensor))
        elif entry is not None:
            summaries.append(SavedSummary(name, summarize(_as_array(entry)), False))
    return tuple(summaries)


def _as_array(value):
    import numpy as np

    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        return np.asarray(str(value))


def _formulas(fn) -> tuple:
    declared = getattr(type(fn), "derivatives", {}) or {}
    return tuple(Formula(name, text, latex) for name, (text, latex) in declared.items())


def _constant(node_id: str, value, labels: dict) -> GraphNode:
    if isinstance(value, weakref.ref):
        tensor = value()
        if tensor is not None:
            label = labels.get(id(tensor)) or _shape_label(tensor)
            return GraphNode(node_id, "constant", label, label, tuple(tensor.shape), tensor.dtype.name,
                             value=summarize(tensor._data),
                             note="Does not require grad: no gradient flows here.")
        value = None
    label = "constant" if value is None else repr(value)
    return GraphNode(node_id, "constant", label, label, note="A constant: no gradient flows here.")


def _shape_label(tensor) -> str:
    return "tensor(" + ", ".join(str(s) for s in tensor.shape) + ")" if tensor.ndim else "tensor(scalar)"
