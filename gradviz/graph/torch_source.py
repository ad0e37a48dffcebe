"""Snapshot a real PyTorch autograd graph into gradviz's plain ``Graph`` model.

PyTorch records the backward graph as a web of C++ nodes reachable from ``tensor.grad_fn``:
each node lists its inputs in ``next_functions`` as ``(node, output_nr)`` pairs, ``(None, 0)``
where an input needs no gradient, and an ``AccumulateGrad`` node per leaf, whose ``.variable``
is the leaf tensor itself. This module walks that web and turns it into the same nodes and
edges gradviz draws for its own engine, so the widget, the renderer and the HTML export need
not know where a graph came from.

The walk uses an explicit queue, never recursion: a 2,000-layer network is 18,000 nodes deep,
far past Python's recursion limit (the limit that makes torchviz fail around 1,000 layers).

This module imports torch only inside its functions; gradviz imports it only when it is
handed a torch tensor, so ``import gradviz`` never pays for torch.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from gradviz.graph.model import Graph, GraphEdge, GraphNode, SavedSummary, summarize

ACCUMULATE_NAME = "AccumulateGrad"

# Python-level autograd nodes created by torch.compile: the whole compiled region is one node.
_COMPILED_NODE_HINT = "CompiledFunction"


class NodeIdMap(dict):
    """``{id(torch node): graph id}``, holding the node objects so those ids stay valid.

    PyTorch hands out one Python wrapper per C++ node while something holds it; once nothing
    does, the wrapper is freed and its ``id()`` may be reused by an unrelated object. Keeping the
    wrappers here makes ``Graph.id_of(step.node)`` reliable for as long as the Graph lives (and,
    as a consequence, keeps the torch graph and its saved tensors alive that long too).
    """

    def __init__(self):
        super().__init__()
        self.nodes: list = []

    def add(self, torch_node: Any, graph_id: str) -> None:
        self[id(torch_node)] = graph_id
        self.nodes.append(torch_node)


def is_torch_tensor(value: Any) -> bool:
    """True for a ``torch.Tensor``, checked without importing torch."""
    return any(cls.__module__.startswith("torch") and cls.__name__ == "Tensor"
               for cls in type(value).__mro__)


def node_name(torch_node: Any) -> str:
    """The class name learners see when they print a grad_fn: ``MulBackward0``, ``AccumulateGrad``."""
    return type(torch_node).__name__


def is_accumulate(torch_node: Any) -> bool:
    return node_name(torch_node) == ACCUMULATE_NAME


def walk_torch_nodes(root: Any) -> list:
    """Every autograd node reachable from ``root``, breadth first, each once.

    The order is stable (parents before their inputs, inputs in ``next_functions`` order), so
    the same program always yields the same ids. Iterative, so depth is limited only by memory.
    """
    if root is None:
        return []
    order = [root]
    seen = {id(root)}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                order.append(child)
                queue.append(child)
    return order


def build_torch_graph(tensor: Any, names: dict | None = None, model: Any = None) -> Graph:
    """A ``Graph`` of the autograd graph behind a torch tensor.

    A leaf that requires grad shows as itself, its AccumulateGrad and the output node (what
    ``backward()`` from it would run); a tensor with no graph at all is a single output node
    whose ``note`` says why.

    ``names`` labels tensors: ``{"w": w, "loss": loss}`` (or the reverse, ``{w: "w"}``). Leaves
    match by identity; a non-leaf tensor names the node that produced it (its ``grad_fn``).
    ``model`` (an ``nn.Module``) labels parameters with their ``named_parameters()`` paths and
    groups nodes by module (see ``_assign_modules`` for the rule). Explicit ``names`` win.

    Ids are ``"n0"`` (the tensor itself, kind ``output``), then ``"n1"`` (its grad_fn) and the
    rest in breadth-first discovery order; a leaf's id follows its AccumulateGrad's. Edges run
    forward, from input to consumer, with ``slot`` = position in the consumer's next_functions.
    """
    if not is_torch_tensor(tensor):
        raise TypeError(f"build_torch_graph expects a torch.Tensor, got {type(tensor).__name__}")
    labels = _Labels(names, model)
    ids = NodeIdMap()
    output_label = labels.for_tensor(tensor) or "output"
    grad_fn = tensor.grad_fn
    note = _note_for_graphless(tensor) if grad_fn is None else _note_for_root(tensor, grad_fn)
    if grad_fn is None and tensor.requires_grad and not _is_functorch_wrapped(tensor):
        grad_fn = _grad_accumulator(tensor)  # backward() from a leaf runs just its AccumulateGrad
    output = GraphNode(
        id="n0", kind="output", name=output_label, label=output_label,
        shape=tuple(tensor.shape), dtype=_dtype_text(tensor.dtype), value=_safe_summary(tensor),
        grad=_safe_summary(tensor.grad) if tensor.is_leaf else None, note=note)
    if grad_fn is None:
        return Graph(nodes=(output,), edges=(), root="n0", source="torch", node_ids=ids)

    walker = _GraphWalker(labels, ids)
    walker.walk(grad_fn)
    modules = _assign_modules(walker.functions, labels.param_owner)
    nodes = [output] + [walker.finish(node_id, modules) for node_id in walker.order]
    edges = [GraphEdge(source=walker.function_ids[id(grad_fn)], target="n0", slot=0,
                       kind="output")] + walker.edges
    return Graph(nodes=tuple(nodes), edges=tuple(edges), root="n0", source="torch",
                 node_ids=ids)


class _GraphWalker:
    """Breadth-first walk that names every node as it is discovered and records edges."""

    def __init__(self, labels: "_Labels", ids: NodeIdMap):
        self.labels = labels
        self.ids = ids
        self.order: list[str] = []          # graph ids in discovery order
        self.pending: dict[str, dict] = {}  # graph id -> GraphNode fields, module filled later
        self.owner_key: dict[str, int] = {}  # graph id -> id(torch node) whose module it takes
        self.function_ids: dict[int, str] = {}
        self.functions: list = []           # torch nodes in discovery order
        self.edges: list[GraphEdge] = []
        self._saved_attrs: dict[type, tuple] = {}
        self.summaries: dict = {}            # shared by every summary taken during the walk

    def _new_id(self) -> str:
        graph_id = f"n{len(self.order) + 1}"
        self.order.append(graph_id)
        return graph_id

    def walk(self, root: Any) -> None:
        self._discover(root)
        queue = deque([root])
        while queue:
            node = queue.popleft()
            target = self.function_ids[id(node)]
            for slot, (child, _) in enumerate(node.next_functions):
                if child is None:
                    source = self._add_constant()
                else:
                    if id(child) not in self.function_ids:
                        self._discover(child)
                        queue.append(child)
                    source = self.function_ids[id(child)]
                self.edges.append(GraphEdge(source=source, target=target, slot=slot, kind="data"))

    def _discover(self, node: Any) -> None:
        graph_id = self._new_id()
        self.function_ids[id(node)] = graph_id
        self.ids.add(node, graph_id)
        self.functions.append(node)
        self.owner_key[graph_id] = id(node)
        if is_accumulate(node):
            self._add_accumulate(node, graph_id)
        else:
            self._add_function(node, graph_id)

    def _add_function(self, node: Any, graph_id: str) -> None:
        name = node_name(node)
        named = self.labels.for_grad_fn(node)
        shape, dtype = _output_metadata(node)
        fields = dict(id=graph_id, kind="function", name=name, label=name, shape=shape,
                      dtype=dtype, saved=self._saved(node), note=_node_note(node), formula=_formulas(name))
        if named is not None:
            label, tensor = named
            fields.update(label=label, shape=tuple(tensor.shape),
                          dtype=_dtype_text(tensor.dtype), value=_safe_summary(tensor))
        self.pending[graph_id] = fields

    def _add_accumulate(self, node: Any, graph_id: str) -> None:
        self.pending[graph_id] = dict(id=graph_id, kind="accumulate", name=ACCUMULATE_NAME,
                                      label=ACCUMULATE_NAME)
        leaf = getattr(node, "variable", None)
        if leaf is None:
            return
        leaf_id = self._new_id()
        self.owner_key[leaf_id] = id(node)
        label = self.labels.for_leaf(leaf)
        self.pending[leaf_id] = dict(
            id=leaf_id, kind="leaf", name=label, label=label, shape=tuple(leaf.shape),
            dtype=_dtype_text(leaf.dtype), value=_safe_summary(leaf, self.summaries),
            grad=_safe_summary(leaf.grad))
        self.edges.append(GraphEdge(source=leaf_id, target=graph_id, slot=0, kind="variable"))

    def _add_constant(self) -> str:
        graph_id = self._new_id()
        self.pending[graph_id] = dict(
            id=graph_id, kind="constant", name="constant", label="constant",
            note="an input that needs no gradient: next_functions holds (None, 0) for it")
        return graph_id

    def _saved(self, node: Any) -> tuple:
        """Summaries of the tensors a node saved for backward, freed ones marked as such."""
        attrs = self._saved_attrs.get(type(node))
        if attrs is None:
            attrs = tuple(a for a in dir(node) if a.startswith("_saved_"))
            self._saved_attrs[type(node)] = attrs
        saved = []
        for attr in attrs:
            saved.extend(_saved_entries(node, attr, attr[len("_saved_"):], self.summaries))
        if not attrs and hasattr(node, "saved_tensors"):  # a custom autograd.Function's ctx
            saved.extend(_saved_entries(node, "saved_tensors", "saved_tensors", self.summaries))
        return tuple(saved)

    def finish(self, graph_id: str, modules: dict) -> GraphNode:
        """The finished node; ``modules`` maps id(torch node) to its module path."""
        module = modules.get(self.owner_key.get(graph_id))
        return GraphNode(module=module, **self.pending[graph_id])


def _formulas(name: str) -> tuple:
    """The chain-rule formulas gradviz declares for the op of the same PyTorch name."""
    from gradviz.graph.model import Formula
    from gradviz.ops import derivatives_for

    return tuple(Formula(input_name, text, latex) for input_name, (text, latex) in derivatives_for(name).items())


def _saved_entries(node: Any, attr: str, name: str, cache: dict) -> list:
    """One ``SavedSummary`` per tensor in ``node.<attr>``; non-tensor saved values are skipped.

    Reading a saved tensor after ``backward()`` freed it raises RuntimeError; that is exactly the
    state a learner should see, so it becomes ``freed=True`` instead of an error.
    """
    try:
        value = getattr(node, attr)
    except RuntimeError:
        return [SavedSummary(name=name, value=None, freed=True)]
    if is_torch_tensor(value):
        return [SavedSummary(name=name, value=_safe_summary(value, cache))]
    if isinstance(value, (tuple, list)) and any(is_torch_tensor(v) for v in value):
        return [SavedSummary(name=f"{name}[{i}]", value=_safe_summary(v, cache))
                for i, v in enumerate(value) if is_torch_tensor(v)]
    return []


def _assign_modules(functions: list, param_owner: dict) -> dict:
    """Group nodes by the ``nn.Module`` that owns the parameters they touch.

    The rule (forward hooks cannot be used after the fact, so ownership is read off the graph):

    * a parameter's leaf and its AccumulateGrad belong to the module that owns the parameter
      directly (``named_modules()`` with ``recurse=False``);
    * a node is *parameter-only* for module M when every input it has is M's parameter or a
      parameter-only node of M (``TBackward0`` over a Linear weight, a weight reshaped or
      normalised before use); an input that needs no grad (``(None, 0)``) is data, so a node
      that takes one is not parameter-only;
    * a function node belongs to the module of its first input (in ``next_functions`` order)
      that is one of M's parameters or a parameter-only node of M, i.e. the op that consumed
      the parameter. ``AddmmBackward0`` lands in its Linear, ``ConvolutionBackward0`` in its Conv.

    Nodes that touch no parameter (activations, losses) stay ungrouped (None), and so do the
    model's own top-level parameters, whose module path would be the empty string.
    Returns ``{id(torch node): dotted module path or None}``.
    """
    if not param_owner:
        return {}
    modules: dict[str, str] = {}
    pure: dict[int, str | None] = {}   # id(node) -> M when the node is parameter-only for M
    owner_of: dict[int, str | None] = {}
    for node in _post_order(functions[0]):
        if is_accumulate(node):
            owner = param_owner.get(id(getattr(node, "variable", None)))
            owner_of[id(node)] = owner
            pure[id(node)] = owner
            continue
        first = None
        child_owners = []
        for child, _ in node.next_functions:
            child_pure = pure.get(id(child)) if child is not None else None
            child_owners.append(child_pure)
            if first is None and child_pure is not None:
                first = child_pure
        owner_of[id(node)] = first
        same = child_owners and all(o is not None and o == child_owners[0] for o in child_owners)
        pure[id(node)] = child_owners[0] if same else None
    return owner_of


def _post_order(root: Any) -> list:
    """Nodes with every input before its consumers (iterative depth-first post-order)."""
    order = []
    done = {id(root)}
    stack = [(root, iter(root.next_functions))]
    while stack:
        node, children = stack[-1]
        for child, _ in children:
            if child is not None and id(child) not in done:
                done.add(id(child))
                stack.append((child, iter(child.next_functions)))
                break
        else:
            stack.pop()
            order.append(node)
    return order


class _Labels:
    """Looks up display names for tensors: explicit ``names`` first, then the model's parameters."""

    def __init__(self, names: dict | None, model: Any):
        self.by_tensor: dict[int, str] = {}
        self.by_grad_fn: dict[int, tuple] = {}
        self.param_owner: dict[int, str | None] = {}
        self._keep: list = []  # hold labelled tensors so their ids are not reused meanwhile
        if model is not None:
            for module_path, module in model.named_modules():
                for param_name, param in module.named_parameters(recurse=False):
                    key = id(param)
                    if key in self.by_tensor:  # shared parameter: the first owner keeps it
                        continue
                    self.by_tensor[key] = f"{module_path}.{param_name}" if module_path else param_name
                    self.param_owner[key] = module_path or None
                    self._keep.append(param)
        for label, tensor in _name_pairs(names):
            self._keep.append(tensor)
            if tensor.grad_fn is None:
                self.by_tensor[id(tensor)] = label
            else:
                self.by_grad_fn.setdefault(id(tensor.grad_fn), (label, tensor))
                self.by_tensor[id(tensor)] = label

    def for_tensor(self, tensor: Any) -> str | None:
        return self.by_tensor.get(id(tensor))

    def for_leaf(self, leaf: Any) -> str:
        label = self.by_tensor.get(id(leaf))
        if label is not None:
            return label
        return "tensor(" + ", ".join(str(d) for d in leaf.shape) + ")" if leaf.dim() else "tensor(scalar)"

    def for_grad_fn(self, node: Any) -> tuple | None:
        return self.by_grad_fn.get(id(node))


def _name_pairs(names: dict | None) -> list:
    """``(label, tensor)`` pairs from ``{label: tensor}`` or ``{tensor: label}``."""
    pairs = []
    for key, value in (names or {}).items():
        if isinstance(key, str) and is_torch_tensor(value):
            pairs.append((key, value))
        elif isinstance(value, str) and is_torch_tensor(key):
            pairs.append((value, key))
    return pairs


def _grad_accumulator(leaf: Any) -> Any:
    """The AccumulateGrad node torch keeps for a leaf (the node ``backward()`` from it runs)."""
    import torch

    return torch.autograd.graph.get_gradient_edge(leaf).node


def _output_metadata(node: Any) -> tuple:
    """Shape and dtype of the forward output a function node produced, when torch records it."""
    try:
        meta = node._input_metadata[0]
        return tuple(meta.shape), _dtype_text(meta.dtype)
    except (AttributeError, IndexError, RuntimeError, TypeError):
        return None, None


def _dtype_text(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _safe_summary(array: Any, cache: dict | None = None):
    """``summarize`` for display, tolerating tensors numpy cannot hold (e.g. bfloat16, meta).

    With a ``cache``, tensors that view the same memory the same way are summarised once: in a
    deep network each activation is saved by the op that made it and by the op that used it.
    """
    if array is None:
        return None
    key = _memory_key(array) if cache is not None else None
    if key is not None:
        if key not in cache:
            cache[key] = _safe_summary(array)
        return cache[key]
    try:
        return summarize(array)
    except (TypeError, RuntimeError, NotImplementedError):
        try:
            return summarize(array.detach().float())
        except (TypeError, RuntimeError, NotImplementedError):
            return None


def _memory_key(tensor: Any) -> tuple | None:
    """Identifies the values a tensor shows: where they live, how they are laid out, which version.

    None for tensors without plain storage (torch.func wrappers, sparse), which are not cached.
    """
    try:
        return (str(tensor.device), tensor.data_ptr(), tuple(tensor.shape),
                tuple(tensor.stride()), str(tensor.dtype), tensor._version)
    except (RuntimeError, NotImplementedError):
        return None


def _note_for_graphless(tensor: Any) -> str:
    """Why a tensor with no grad_fn shows as a single node."""
    if _is_functorch_wrapped(tensor):
        return ("this tensor lives inside a torch.func transform (grad, vjp, vmap): functorch "
                "tracks its graph internally, with no grad_fn to walk")
    if tensor.requires_grad:
        return ("a leaf tensor: it has no grad_fn; backward() from it adds the gradient "
                "straight into its .grad")
    return ("no autograd graph: this tensor does not require grad (created without "
            "requires_grad=True, under torch.no_grad(), by .detach(), or returned by a "
            "torch.func transform, which hands back plain tensors)")


def _note_for_root(tensor: Any, grad_fn: Any) -> str | None:
    if _is_functorch_wrapped(tensor):
        return ("this tensor lives inside a torch.func transform: the graph shown is the "
                "transform's innermost level, which torch.func differentiates itself")
    if _COMPILED_NODE_HINT in node_name(grad_fn):
        return ("made by a torch.compile'd function: the compiled region is one node, "
                f"{node_name(grad_fn)}; the ops inside it are not visible")
    return None


def _node_note(node: Any) -> str | None:
    if _COMPILED_NODE_HINT in node_name(node):
        return "a torch.compile'd region: its ops run inside this one node"
    return None


def _is_functorch_wrapped(tensor: Any) -> bool:
    import torch

    check = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    try:
        return bool(check(tensor)) if check is not None else False
    except (RuntimeError, TypeError):
        return False
