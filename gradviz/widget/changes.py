"""What can change in a shown graph between two notebook cells, read cheaply.

A widget's snapshot (walk, trace, layout) costs time in proportion to the graph; a cell that
changes nothing must not pay it. Between cells a graph itself stays as it was; what moves is:

* a leaf's ``.grad`` (``backward()``, ``zero_grad()``, ``x.grad.zero_()``): read by identity and
  version counter, and shown by re-summarising just those leaves, with the trace's AccumulateGrad
  steps worked out again from the gradient that arrives there (kept from the trace): no trace is
  run again and no hook runs;
* a leaf's values (``optimizer.step()``), the shown tensor itself (an in-place op gives it a new
  ``grad_fn``), or the saved tensors (``backward()`` freed them): these need a new snapshot.

``GraphWatch.read()`` is the fingerprint, a few attribute reads per leaf; ``changes(old, new)``
says which of the two kinds of change happened.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from gradviz._kinds import is_accumulate_grad, is_gradviz_tensor
from gradviz.snapshot.model import summarize
from gradviz.snapshot.trace import leaf_ids

NOTHING, GRADS, EVERYTHING = "nothing", "grads", "everything"


class GraphWatch:
    """The parts of a shown tensor's graph that may change, with what a ``.grad`` update needs."""

    def __init__(self, tensor: Any, graph, steps: list, source):
        self.tensor = tensor
        self.source = source
        self.grad_fn = tensor.grad_fn
        acc_to_leaf = leaf_ids(graph)
        # (graph id of the leaf node, leaf tensor), the shown tensor too when it is a leaf
        self.leaves = [(acc_to_leaf[graph.id_of(node)], node.variable)
                       for node in (graph.node_ids.nodes if graph.node_ids is not None else ())
                       if is_accumulate_grad(node) and graph.id_of(node) in acc_to_leaf]
        if tensor.is_leaf and tensor.requires_grad:
            self.leaves.append((graph.root, tensor))
        self.probe = next((node for node in (graph.node_ids.nodes if graph.node_ids is not None else ())
                           if not is_accumulate_grad(node) and source.saved(node)), None)
        # trace index -> the gradient arriving at that AccumulateGrad (it does not depend on .grad)
        self.arrivals = {step.index: step.grad_outputs[0] for step in steps
                         if step.is_accumulate and step.grad_outputs and step.grad_outputs[0] is not None}
        self.state = self.read()

    def read(self) -> tuple:
        """The fingerprint: ``(graph part, grads part)``; equal parts mean nothing of that kind moved."""
        tensor = self.tensor
        probe_freed = self.probe is not None and any(s.freed for s in self.source.saved(self.probe))
        graph_part = [id(tensor.grad_fn), tensor._version, probe_freed]
        grads_part = []
        for _, leaf in self.leaves:
            graph_part.append(leaf._version)
            grad = leaf.grad
            grads_part.append((id(grad), -1 if grad is None else grad._version))
        return tuple(graph_part), tuple(grads_part)

    def changes(self) -> tuple:
        """``(kind, leaves)`` since the last read: kind ``NOTHING``, ``GRADS`` (only some ``.grad``
        moved; ``leaves`` are their positions in ``self.leaves``) or ``EVERYTHING``."""
        new = self.read()
        old, self.state = self.state, new
        if new[0] != old[0]:
            return EVERYTHING, ()
        moved = tuple(i for i, (was, now) in enumerate(zip(old[1], new[1])) if was != now)
        return (GRADS, moved) if moved else (NOTHING, ())

    def accumulation(self, index: int, leaf: Any) -> tuple:
        """``(grad_before, grad_after)`` summaries of the AccumulateGrad step ``index`` now."""
        before = _array(leaf.grad)
        arriving = self.arrivals.get(index)
        if arriving is None:
            return summarize(before), summarize(before)
        return summarize(before), summarize(arriving if before is None else before + arriving)


def _array(grad: Any) -> Any:
    """A ``.grad`` as the array a Step holds (gradviz keeps a backend array inside its Tensor)."""
    if grad is None:
        return None
    return grad._data if is_gradviz_tensor(grad) else grad.detach()


def with_new_grads(graph, trace: list, watch: GraphWatch, moved: tuple) -> tuple:
    """``(graph, trace, changed node ids)`` with the ``.grad`` of the ``moved`` leaves as it is now.

    Only those leaves are read again, and only the AccumulateGrad steps that fill them: their
    ``grad_before`` is the ``.grad`` now, their ``grad_after`` that plus the gradient arriving.
    """
    moved_leaves = {watch.leaves[i][0]: watch.leaves[i][1] for i in moved}
    nodes = list(graph.nodes)
    for position, node in enumerate(nodes):
        if node.id in moved_leaves:
            nodes[position] = replace(node, grad=watch.source.leaf_grad(moved_leaves[node.id]))
    trace = list(trace)
    for index in watch.arrivals:
        entry = trace[index] if index < len(trace) else {}
        leaf = moved_leaves.get(entry.get("leaf"))
        if leaf is not None:
            before, after = watch.accumulation(index, leaf)
            trace[index] = {**entry, "grad_before": _dict(before), "grad_after": _dict(after)}
    return replace(graph, nodes=tuple(nodes)), trace, tuple(moved_leaves)


def _dict(summary) -> dict | None:
    return summary.to_dict() if summary is not None else None
