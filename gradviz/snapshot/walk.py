"""One walk for every autograd graph, gradviz's or PyTorch's: a tensor becomes a frozen ``Graph``.

Both libraries record the backward graph as nodes reachable from ``tensor.grad_fn``: each node
lists its inputs in ``next_functions`` as ``(node, input_nr)`` pairs, ``(None, 0)`` where an input
needs no gradient, and each leaf has an ``AccumulateGrad`` node whose ``.variable`` is the leaf.
The walk reads only that shared interface; everything else goes through a small adapter per
library (``gradviz.snapshot.sources``), so labels, notes and module groups are defined once and
the same program gives the same Graph from either library.

Ids are ``"n0"`` (the tensor itself, kind ``output``), then ``"n1"`` (the node ``backward()``
starts from) and the rest in breadth-first discovery order, inputs in ``next_functions`` order; a
leaf's id follows its AccumulateGrad's. Edges run forward, from input to consumer, with ``slot``
= the input's position in the consumer's ``next_functions``. The walk uses an explicit queue,
never recursion: a 2,000-layer network is 18,000 nodes deep, far past Python's recursion limit.
"""
from __future__ import annotations

import inspect
from collections import deque
from typing import Any

from gradviz._kinds import ACCUMULATE_GRAD, is_accumulate_grad, is_tensor
from gradviz.snapshot.formulas import formulas_for
from gradviz.snapshot.labels import Labels, module_paths, shape_label
from gradviz.snapshot.model import Graph, GraphEdge, GraphNode, graph_edge, new_node

NO_GRAPH_NOTE = ("No autograd graph: this tensor has no grad_fn and does not require grad (it was "
                 "created without requires_grad=True, made under no_grad(), or returned by detach()).")
LEAF_OUTPUT_NOTE = ("A leaf tensor: it has no grad_fn; backward() from it adds the gradient straight "
                    "into its .grad.")
LEAF_NOTE = "A leaf tensor: backward() accumulates gradients into its .grad."
CONSTANT_NOTE = ("An input that needs no gradient (next_functions holds (None, 0) for it): no gradient "
                 "flows here.")


class NodeIdMap(dict):
    """``{id(autograd node): graph id}``, holding the node objects so those ids stay valid.

    PyTorch hands out one Python wrapper per C++ node while something holds it; once nothing
    does, the wrapper is freed and its ``id()`` may be reused by an unrelated object. Keeping the
    nodes here makes ``Graph.id_of(step.node)`` reliable for as long as the Graph lives (and,
    as a consequence, keeps the graph and its saved tensors alive that long too).
    """

    def __init__(self):
        super().__init__()
        self.nodes: list = []

    def add(self, node: Any, graph_id: str) -> None:
        self[id(node)] = graph_id
        self.nodes.append(node)


def build_graph(tensor: Any, source, names: dict | None = None, model: Any = None) -> Graph:
    """The ``Graph`` behind ``tensor``, read through ``source`` (a ``GraphSource``).

    A leaf that requires grad shows as itself, its AccumulateGrad and the output node (what
    ``backward()`` from it would run); a tensor with no graph at all is a single output node
    whose ``note`` says why. ``names`` and ``model`` label and group nodes (``Labels``).
    """
    labels = Labels(names, model)
    ids = NodeIdMap()
    root = source.root(tensor)
    label = labels.for_tensor(tensor) or "output"
    output = GraphNode(
        id="n0", kind="output", name=label, label=label, shape=tuple(tensor.shape),
        dtype=dtype_text(tensor.dtype), value=source.value(tensor),
        grad=source.leaf_grad(tensor) if tensor.is_leaf else None, note=_output_note(tensor, root, source))
    if root is None:
        return Graph(nodes=(output,), edges=(), root="n0", source=source.name, node_ids=ids)
    walk = _Walk(source, labels, ids)
    walk.run(root)
    walk.set_modules(module_paths(root, labels.param_owner, labels.module_path))
    nodes = [output] + walk.nodes
    edges = [GraphEdge(source=ids[id(root)], target="n0", slot=0, kind="output")] + walk.edges
    return Graph(nodes=tuple(nodes), edges=tuple(edges), root="n0", source=source.name, node_ids=ids)


def _output_note(tensor: Any, root: Any, source) -> str | None:
    special = source.output_note(tensor, root)
    if special is not None:
        return special
    if root is None:
        return NO_GRAPH_NOTE
    return LEAF_OUTPUT_NOTE if is_accumulate_grad(root) else None


def reachable_nodes(root: Any) -> list:
    """Every autograd node reachable from ``root``, breadth first, each once (``[]`` for None)."""
    if root is None:
        return []
    order = [root]
    seen = {id(root)}
    queue = deque([root])
    while queue:
        for child, _ in queue.popleft().next_functions:
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                order.append(child)
                queue.append(child)
    return order


def backward_code(node: Any) -> str | None:
    """The source of the user's ``backward`` for the node of a custom ``autograd.Function`` (gradviz's
    or torch's: both keep the class as ``_forward_cls``); None for built-in ops or unreadable source."""
    forward_cls = getattr(type(node), "_forward_cls", None)
    backward = getattr(forward_cls, "backward", None)
    if backward is None:
        return None
    try:
        return inspect.getsource(inspect.unwrap(backward))
    except (OSError, TypeError):
        return None


def dtype_text(dtype: Any) -> str:
    """``float32`` for ``torch.float32`` and for ``gradviz.float32`` alike."""
    return str(dtype).replace("torch.", "")


class _Walk:
    """Breadth-first walk that describes every node as it is discovered and records edges.

    Each node is made as it is discovered, with no module; module groups (``module_paths``) can
    only be decided once the whole graph is known, and ``set_modules`` writes them in.
    """

    def __init__(self, source, labels: Labels, ids: NodeIdMap):
        self.source = source
        self.labels = labels
        self.ids = ids
        self.nodes: list[GraphNode] = []      # in discovery order: node k has id n<k + 1>
        self.owner_key: list[int] = []        # id(autograd node) whose module node k takes
        self.edges: list[GraphEdge] = []

    def _new_id(self) -> str:
        return f"n{len(self.nodes) + 1}"

    def run(self, root: Any) -> None:
        ids = self.ids
        self._discover(root)
        queue = deque([root])
        while queue:
            node = queue.popleft()
            target = ids[id(node)]
            for slot, (child, _) in enumerate(node.next_functions):
                if child is None:
                    source = self._add_constant(node, slot)
                else:
                    if id(child) not in ids:
                        self._discover(child)
                        queue.append(child)
                    source = ids[id(child)]
                self.edges.append(graph_edge(source, target, slot, "data"))

    def _add(self, made: GraphNode, owner: int) -> None:
        self.nodes.append(made)
        self.owner_key.append(owner)

    def _discover(self, node: Any) -> None:
        graph_id = self._new_id()
        self.ids.add(node, graph_id)
        if is_accumulate_grad(node):
            self._add_accumulate(node, graph_id)
        else:
            self._add_function(node, graph_id)

    def _add_function(self, node: Any, graph_id: str) -> None:
        name = type(node).__name__  # what printing a grad_fn shows: MulBackward0
        source = self.source
        shape, dtype = source.output_metadata(node)
        value = None
        label = name
        named = self.labels.for_grad_fn(node)
        if named is not None:  # the variable that holds this node's output
            label, tensor = named
            shape, dtype, value = tuple(tensor.shape), dtype_text(tensor.dtype), source.value(tensor)
        self._add(new_node(graph_id, "function", name, label, shape, dtype, value, None, source.saved(node),
                           formulas_for(node, name), None, source.node_note(node), backward_code(node),
                           getattr(node, "_order", 1)), id(node))

    def _add_accumulate(self, node: Any, graph_id: str) -> None:
        self._add(new_node(graph_id, "accumulate", ACCUMULATE_GRAD, ACCUMULATE_GRAD,
                           formula=formulas_for(node, ACCUMULATE_GRAD)), id(node))
        leaf = getattr(node, "variable", None)
        if leaf is None:
            return
        leaf_id = self._new_id()
        self._add(self._tensor_node(leaf_id, "leaf", leaf, LEAF_NOTE, self.source.leaf_grad(leaf)), id(node))
        self.edges.append(graph_edge(leaf_id, graph_id, 0, "variable"))

    def _add_constant(self, node: Any, slot: int) -> str:
        """A node for an input that needs no gradient: drawn as what it was, when the source knows."""
        graph_id = self._new_id()
        value = self.source.constant(node, slot)
        if is_tensor(value):
            made = self._tensor_node(graph_id, "constant", value, CONSTANT_NOTE)
        else:
            label = "constant" if value is None else repr(value)
            made = new_node(graph_id, "constant", label, label, note=CONSTANT_NOTE)
        self._add(made, None)
        return graph_id

    def _tensor_node(self, graph_id: str, kind: str, tensor: Any, note: str, grad: Any = None) -> GraphNode:
        label = self.labels.for_tensor(tensor) or shape_label(tensor)
        return new_node(graph_id, kind, label, label, tuple(tensor.shape), dtype_text(tensor.dtype),
                        self.source.value(tensor), grad, note=note)

    def set_modules(self, modules: dict) -> None:
        """Write each node's module path; ``modules`` maps id(autograd node) to it (most graphs
        have none: their nodes keep the None they were made with)."""
        if not modules:
            return
        for made, owner in zip(self.nodes, self.owner_key):
            made.__dict__["module"] = modules.get(owner)  # still being made: frozen once the walk returns
