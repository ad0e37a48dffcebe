"""Compare a gradviz graph with the equivalent PyTorch graph: names, values and step order.

A lesson writes the same few lines twice, once with ``import gradviz as gv`` and once with
``import torch``, and asks: did gradviz build the same graph PyTorch did, compute the same
numbers, and run the backward pass in the same order? ``compare`` answers all three and says
where the first disagreements are.

The two graphs are matched by structure, not by ids: starting from the two outputs' grad_fns,
input ``k`` of a matched pair is matched with input ``k`` of its partner, walking with an explicit
queue so any depth works. Both backward passes are observed (``observe_steps``): no hook runs and no
``.grad`` changes.

This module computes the verdict; ``gv.compare`` (``gradviz.widget.compare_view``) returns it
as a ``Comparison`` that also draws itself in a notebook: the two graphs side by side with the
report under them. ``print`` gives the report.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradviz._kinds import is_accumulate_grad
from gradviz.interop.torch_source import build_torch_graph
from gradviz.snapshot import graph_of, observe_steps
from gradviz.snapshot.model import Graph, to_numpy
from gradviz.snapshot.names import caller_names

_MAX_LISTED = 8  # differences listed per aspect in the report


@dataclass(frozen=True)
class Comparison:
    """The verdict of ``compare``: three yes/no answers and the differences behind them.

    ``order_agree`` is None when the backward passes could not be run (e.g. a non-scalar output).
    """

    names_agree: bool
    values_agree: bool
    order_agree: bool | None
    name_differences: tuple
    value_differences: tuple
    order_differences: tuple
    matched_nodes: int
    gradviz_steps: tuple
    torch_steps: tuple
    torch_graph: Graph
    gradviz_graph: Graph

    @property
    def agree(self) -> bool:
        return self.names_agree and self.values_agree and bool(self.order_agree)

    def report(self) -> str:
        """A few readable lines: one verdict per aspect, then the first differences of each."""
        lines = [f"gradviz vs PyTorch: {self.matched_nodes} nodes matched"]
        for title, verdict, differences in (
                ("names", self.names_agree, self.name_differences),
                ("values", self.values_agree, self.value_differences),
                ("step order", self.order_agree, self.order_differences)):
            mark = "not compared" if verdict is None else ("agree" if verdict else "DIFFER")
            lines.append(f"  {title:<11} {mark}")
            for difference in differences[:_MAX_LISTED]:
                lines.append(f"      - {difference}")
            if len(differences) > _MAX_LISTED:
                lines.append(f"      ... and {len(differences) - _MAX_LISTED} more")
        if self.order_agree is not None:
            lines.append("  torch order:   " + _order_line(self.torch_steps))
            lines.append("  gradviz order: " + _order_line(self.gradviz_steps))
        return "\n".join(lines)

    __str__ = report


def compare(gv_tensor: Any, torch_tensor: Any, *, names: dict | None = None,
            rtol: float = 1e-5, atol: float = 1e-6) -> Comparison:
    """Compare the graph behind a gradviz tensor with the one behind a torch tensor.

    * names: every matched pair of nodes has the same grad_fn class name and the same number of
      inputs, with ``(None, 0)`` in the same places;
    * values: the two outputs, every matched leaf, and, for each node, the gradient arriving
      during backward and each leaf's ``.grad`` afterwards agree within ``rtol``/``atol``;
    * step order: the backward passes run matched nodes in the same sequence.

    ``names`` labels the tensors (torch's, and gradviz's through the matching), as for
    ``gv.graph``; by default the caller's variable names.
    """
    if names is None:
        names = caller_names(depth=2)
    torch_graph = build_torch_graph(torch_tensor, names=names)
    matching = _match(gv_tensor.grad_fn, torch_tensor.grad_fn, torch_graph)
    value_differences = []
    _check_values("output", gv_tensor, torch_tensor, rtol, atol, value_differences)
    for gv_node, torch_node in matching.pairs:
        if is_accumulate_grad(torch_node):
            _check_values(matching.describe(torch_node), gv_node.variable,
                          torch_node.variable, rtol, atol, value_differences)

    gv_steps, torch_steps, order_differences, order_agree = (), (), [], None
    try:
        gv_steps = tuple(observe_steps(gv_tensor))  # pure observations: no hook, no .grad written
        torch_steps = tuple(observe_steps(torch_tensor))
    except RuntimeError as error:
        order_differences.append(f"backward could not run: {error}")
    else:
        order_agree = _check_order(gv_steps, torch_steps, matching, order_differences)
        _check_step_values(gv_steps, matching, torch_steps, rtol, atol, value_differences)

    return Comparison(
        names_agree=not matching.differences, values_agree=not value_differences,
        order_agree=order_agree, name_differences=tuple(matching.differences),
        value_differences=tuple(value_differences), order_differences=tuple(order_differences),
        matched_nodes=len(matching.pairs), gradviz_steps=gv_steps, torch_steps=torch_steps,
        torch_graph=torch_graph, gradviz_graph=_gradviz_graph(gv_tensor, matching, names))


class _Matching:
    """Pairs of (gradviz node, torch node) found by walking both graphs in step."""

    def __init__(self, torch_graph: Graph):
        self.torch_graph = torch_graph
        self.pairs: list = []
        self.partner: dict[int, Any] = {}   # id(gradviz node) -> torch node
        self.partner_back: dict[int, Any] = {}   # id(torch node) -> gradviz node
        self.differences: list[str] = []

    def describe(self, torch_node: Any) -> str:
        graph_id = self.torch_graph.id_of(torch_node)
        leaf = self.leaf_of(torch_node)
        if leaf is not None:
            return f"leaf {self.torch_graph.node(leaf).label} ({leaf})"
        return f"{_type_name(torch_node)} ({graph_id})"

    def leaf_of(self, torch_node: Any) -> str | None:
        """The graph id of the leaf behind a torch AccumulateGrad node, else None."""
        graph_id = self.torch_graph.id_of(torch_node)
        node = self.torch_graph.node(graph_id) if graph_id else None
        if node is None or node.kind != "accumulate":
            return None
        return next((e.source for e in self.torch_graph.edges
                     if e.target == graph_id and e.kind == "variable"), None)


def _match(gv_root: Any, torch_root: Any, torch_graph: Graph) -> _Matching:
    matching = _Matching(torch_graph)
    if (gv_root is None) != (torch_root is None):
        matching.differences.append(
            f"output grad_fn: gradviz {_type_name(gv_root)}, torch {_type_name(torch_root)}")
    if gv_root is None or torch_root is None:
        return matching
    queue = deque([(gv_root, torch_root)])
    matching.partner[id(gv_root)] = torch_root
    matching.partner_back[id(torch_root)] = gv_root
    while queue:
        gv_node, torch_node = queue.popleft()
        matching.pairs.append((gv_node, torch_node))
        where = matching.describe(torch_node)
        if _type_name(gv_node) != _type_name(torch_node):
            matching.differences.append(
                f"{where}: gradviz has {_type_name(gv_node)}, torch has {_type_name(torch_node)}")
            continue
        gv_inputs, torch_inputs = tuple(gv_node.next_functions), tuple(torch_node.next_functions)
        if len(gv_inputs) != len(torch_inputs):
            matching.differences.append(
                f"{where}: gradviz has {len(gv_inputs)} inputs, torch has {len(torch_inputs)}")
            continue
        for slot, ((gv_child, _), (torch_child, _)) in enumerate(zip(gv_inputs, torch_inputs)):
            if gv_child is None or torch_child is None:
                if (gv_child is None) != (torch_child is None):
                    matching.differences.append(
                        f"{where} input {slot}: gradviz {_type_name(gv_child)}, "
                        f"torch {_type_name(torch_child)}")
                continue
            known = matching.partner.get(id(gv_child))
            known_back = matching.partner_back.get(id(torch_child))
            if known is None and known_back is None:
                matching.partner[id(gv_child)] = torch_child
                matching.partner_back[id(torch_child)] = gv_child
                queue.append((gv_child, torch_child))
            elif known is not torch_child:
                matching.differences.append(
                    f"{where} input {slot}: the graphs share nodes differently (here torch has "
                    f"{matching.describe(torch_child)}, where gradviz reaches a node it already "
                    f"used elsewhere, or the reverse)")
    return matching


def _check_values(what: str, gv_value: Any, torch_value: Any, rtol: float, atol: float,
                  differences: list) -> None:
    if gv_value is None and torch_value is None:
        return
    if gv_value is None or torch_value is None:
        differences.append(f"{what}: only one side has a value")
        return
    mine, theirs = _array(gv_value), _array(torch_value)
    if mine.shape != theirs.shape:
        differences.append(f"{what}: shape {mine.shape} vs torch {theirs.shape}")
    elif not np.allclose(mine, theirs, rtol=rtol, atol=atol, equal_nan=True):
        gap = float(np.max(np.abs(mine.astype(np.float64) - theirs.astype(np.float64))))
        differences.append(f"{what}: values differ by up to {gap:.3g}")


def _check_order(gv_steps: tuple, torch_steps: tuple, matching: _Matching,
                 differences: list) -> bool:
    mapped = [matching.partner.get(id(step.node)) for step in gv_steps]
    expected = [step.node for step in torch_steps]
    if len(mapped) != len(expected):
        differences.append(f"gradviz ran {len(mapped)} nodes, torch ran {len(expected)}")
    for index, (mine, theirs) in enumerate(zip(mapped, expected)):
        if mine is not theirs:
            shown = (matching.describe(mine) if mine is not None
                     else f"an unmatched {_type_name(gv_steps[index].node)}")
            differences.append(f"step {index}: gradviz ran {shown}, torch ran "
                               f"{matching.describe(theirs)}")
            break
    return not differences


def _check_step_values(gv_steps: tuple, matching: _Matching, torch_steps: tuple, rtol: float,
                       atol: float, differences: list) -> None:
    torch_by_node = {id(step.node): step for step in torch_steps}
    for gv_step in gv_steps:
        torch_node = matching.partner.get(id(gv_step.node))
        torch_step = torch_by_node.get(id(torch_node)) if torch_node is not None else None
        if torch_step is None:
            continue
        where = matching.describe(torch_node)
        for slot, (mine, theirs) in enumerate(zip(gv_step.grad_outputs, torch_step.grad_outputs)):
            _check_values(f"gradient arriving at {where} [{slot}]", mine, theirs, rtol, atol,
                          differences)
        if torch_step.grad_after is not None or gv_step.grad_after is not None:
            _check_values(f".grad of {where}", gv_step.grad_after, torch_step.grad_after,
                          rtol, atol, differences)


def _gradviz_graph(gv_tensor: Any, matching: _Matching, names: dict | None) -> Graph:
    """gradviz's own snapshot of the tensor, each leaf labelled as its torch partner is."""
    labels = {}
    torch_graph = matching.torch_graph
    output_label = torch_graph.node(torch_graph.root).label
    if output_label != "output":
        labels[output_label] = gv_tensor
    for gv_node, torch_node in matching.pairs:
        leaf = matching.leaf_of(torch_node)
        if leaf is not None and hasattr(gv_node, "variable"):
            labels.setdefault(torch_graph.node(leaf).label, gv_node.variable)
    for name, value in (names or {}).items():
        labels.setdefault(name, value)
    return graph_of(gv_tensor, labels)


def _array(value: Any) -> np.ndarray:
    """A numpy view of a gradviz Tensor, a torch tensor, or a backend array."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        return np.asarray(value.detach().numpy(force=True))
    return np.asarray(to_numpy(value))


def _type_name(node: Any) -> str:
    return "None" if node is None else type(node).__name__


def _order_line(steps: tuple, limit: int = 12) -> str:
    names = [_type_name(step.node) for step in steps[:limit]]
    more = f", ... ({len(steps)} steps)" if len(steps) > limit else ""
    return ", ".join(names) + more
