"""The plain graph model every view consumes.

A ``Graph`` is a frozen snapshot of an autograd graph, made by one walk
(``gradviz.snapshot.walk``) from gradviz's own tensors or from real PyTorch tensors. The
renderer, the widget and the HTML export read only this model (through ``to_dict()``), never
Tensor internals; this module imports nothing above numpy (DOT text for a Graph comes from
``gradviz.render.graph_to_dot``).

Edges point the way data flows forward, the way learners draw it: from an input
(a leaf, a constant, or the grad_fn that produced it) to the node that consumed it. For a grad_fn
node, the edge with ``slot=k`` is ``node.next_functions[k]`` seen from the other side.

JSON shape of ``Graph.to_dict()`` (version 1)::

    {"version": 1, "source": "gradviz" | "torch", "root": "n0",
     "nodes": [{"id", "kind", "name", "label", "shape", "dtype", "value", "grad",
                "saved": [{"name", "value", "freed"}], "formula": index into "formulas" | null,
                "module", "note", "code", "order"}],
     "edges": [{"source", "target", "slot", "kind"}],
     "formulas": [[{"input", "symbol", "math", "local", "note", "torch", "broadcast"}]]}

``kind`` of a node: ``output`` (the tensor shown), ``function`` (a grad_fn), ``accumulate``
(AccumulateGrad), ``leaf`` (a tensor that requires grad), ``constant`` (an input that does not
require grad: a plain tensor, a ``detach()``-ed one, or one made under ``no_grad``).
``value``/``grad`` are array summaries ``{"shape", "dtype", "preview"}`` or null.
``code``: for the node of a user's ``autograd.Function``, the source of its ``backward`` (plain
text, to be escaped where shown; null otherwise): it has no declared formula. ``order``: 1 for a
node recorded by the forward pass, 2 for one recorded by a backward pass with ``create_graph=True``
(a second-order node), and so on.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NODE_KINDS = ("output", "function", "accumulate", "leaf", "constant")
EDGE_KINDS = ("data", "variable", "output")


@dataclass(frozen=True)
class ArraySummary:
    """A short, display-ready description of an array: never the array itself."""

    shape: tuple
    dtype: str
    preview: str

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "preview": self.preview}


def summarize(array: Any, max_elements: int = 12) -> ArraySummary | None:
    """Summarise a numpy or torch array for display (values copied to the CPU).

    Any array a graph can hold is summarised, never refused: dtypes numpy lacks (bfloat16, float8)
    are previewed widened, sparse tensors by their stored values, conjugate and negative views
    resolved, quantized tensors dequantized; a tensor with no values to read (meta, fake) says so.
    The dtype shown is always the array's own.
    """
    if array is None:
        return None
    if type(array) is np.ndarray:  # most summaries of a big graph: nothing to resolve first
        made = _new(ArraySummary)  # ArraySummary(...) without the frozen __init__ (see ``new_node``)
        made.__dict__.update(shape=array.shape, dtype=_dtype_name(array.dtype), preview=preview_text(array, max_elements))
        return made
    dtype = _dtype_name(getattr(array, "dtype", None))
    try:
        values, prefix = _display_values(array)
    except (TypeError, RuntimeError, NotImplementedError, ValueError):
        return ArraySummary(tuple(array.shape), dtype, NO_VALUES)
    return ArraySummary(tuple(array.shape), dtype or str(values.dtype), prefix + preview_text(values, max_elements))


NO_VALUES = "(no values to show)"
_DTYPE_NAMES: dict = {}


def _dtype_name(dtype: Any) -> str:
    """``float32`` for numpy's or torch's float32 (``str`` of a numpy dtype is slow, and a big graph
    asks tens of thousands of times for the same few names)."""
    try:
        return _DTYPE_NAMES[dtype]
    except KeyError:
        name = _DTYPE_NAMES[dtype] = "" if dtype is None else str(dtype).replace("torch.", "")
        return name


def to_numpy(array: Any) -> np.ndarray:
    """A numpy copy of a numpy or torch array (torch only touched when given torch data)."""
    if isinstance(array, np.ndarray):
        return array
    if hasattr(array, "detach") and hasattr(array, "cpu"):
        return _torch_to_numpy(array.detach())
    return np.asarray(array)


def _display_values(array: Any) -> tuple:
    """``(numpy values, preview prefix)``: a sparse tensor shows its stored values, so marked."""
    layout = getattr(array, "layout", None)  # only torch tensors have one (so torch is loaded)
    if layout is not None and layout is not sys.modules["torch"].strided:
        tensor = array.detach()
        if str(tensor.layout) == "torch.sparse_coo":
            tensor = tensor.coalesce()
        return _torch_to_numpy(tensor.values()), f"{str(tensor.layout).replace('torch.', '')}, stored: "
    return to_numpy(array), ""


def _torch_to_numpy(tensor: Any) -> np.ndarray:
    """numpy values of a strided torch tensor of any dtype (torch only touched here, when given one)."""
    try:
        return tensor.numpy()  # most tensors: on the CPU, a dtype numpy has, no conjugate or negative bit
    except (TypeError, RuntimeError):
        pass
    if tensor.is_quantized:
        tensor = tensor.dequantize()
    tensor = tensor.resolve_conj().resolve_neg().cpu()
    try:
        return tensor.numpy()
    except TypeError:  # bfloat16, float8, complex32: numpy has no such dtype, so widen the values
        torch = sys.modules["torch"]  # loaded: this is one of its tensors
        return tensor.to(torch.complex64 if tensor.is_complex() else torch.float32).numpy()


def preview_text(values: np.ndarray, max_elements: int = 12) -> str:
    """Values as PyTorch shows them, shortened: ``6.7924``, ``[[0.3333, 0.6667], ...]``.

    Large arrays show their first and last elements, flattened: a preview, not a printout
    (formatting every element of every tensor would dominate snapshot time on big graphs).
    """
    if values.ndim == 0:
        return _format_number(values.item())
    if values.size <= max_elements and values.ndim <= 2:
        rows = values.tolist() if values.ndim == 2 else [values.tolist()]
        text = ", ".join("[" + ", ".join(_format_number(v) for v in row) + "]" for row in rows)
        return text if values.ndim == 1 else "[" + text + "]"
    flat = values.reshape(-1)
    if flat.size <= max_elements:
        return "[" + ", ".join(_format_number(v) for v in flat.tolist()) + "]"
    head = ", ".join(_format_number(v) for v in flat[:3].tolist())
    tail = ", ".join(_format_number(v) for v in flat[-2:].tolist())
    return f"[{head}, …, {tail}]"


def _format_number(value) -> str:
    if type(value) is float and (value == 0 or 1e-4 <= abs(value) < 1e8):  # most numbers: said first
        return f"{value:.4f}".rstrip("0")
    if isinstance(value, (bool, int)):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value != 0 and (abs(value) >= 1e8 or abs(value) < 1e-4):
        return f"{value:.4e}"
    return f"{value:.4f}".rstrip("0")  # 3.0 -> "3.", as PyTorch prints it


@dataclass(frozen=True)
class SavedSummary:
    """One saved tensor of a node, as its ``_saved_<name>`` attribute; ``value`` is None when freed."""

    name: str
    value: ArraySummary | None
    freed: bool = False

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value.to_dict() if self.value else None,
                "freed": self.freed}


@dataclass(frozen=True)
class Formula:
    """The gradient one input receives, as a calculus course writes it (see ``snapshot/formulas.py``).

    ``math``: ``∂L/∂x = ...`` as a JSON tree of MathML tags (``snapshot/math.py``), text only;
    ``local``: the local derivative alone for elementwise ops (the gradient sent is ∂L/∂out times
    it), else None; ``symbol``: the input's name in the formula when it has no label; ``note``: what
    the formula's letters mean in this call; ``torch``: PyTorch's ``derivatives.yaml`` line, a
    secondary reference; ``broadcast``: the gradient is summed back when broadcasting widened the input.
    """

    input: str
    symbol: str
    math: dict
    local: dict | None = None
    note: str | None = None
    torch: str = ""
    broadcast: bool = False

    def to_dict(self) -> dict:
        return {"input": self.input, "symbol": self.symbol, "math": self.math, "local": self.local,
                "note": self.note, "torch": self.torch, "broadcast": self.broadcast}


@dataclass(frozen=True)
class GraphNode:
    id: str
    kind: str
    name: str
    label: str
    shape: tuple | None = None
    dtype: str | None = None
    value: ArraySummary | None = None
    grad: ArraySummary | None = None
    saved: tuple = ()
    formula: tuple = ()
    module: str | None = None
    note: str | None = None
    code: str | None = None
    order: int = 1

    def to_dict(self) -> dict:
        return self.dict_with([f.to_dict() for f in self.formula])

    def dict_with(self, formula) -> dict:
        """``to_dict()`` with ``formula`` as its formula (``Graph.to_dict`` writes an index there)."""
        return {
            "id": self.id, "kind": self.kind, "name": self.name, "label": self.label,
            "shape": list(self.shape) if self.shape is not None else None, "dtype": self.dtype,
            "value": self.value.to_dict() if self.value else None,
            "grad": self.grad.to_dict() if self.grad else None,
            "saved": [s.to_dict() for s in self.saved],
            "formula": formula,
            "module": self.module, "note": self.note, "code": self.code, "order": self.order,
        }


_new = object.__new__


def saved_summary(name: str, value: "ArraySummary | None", freed: bool) -> "SavedSummary":
    """``SavedSummary(name, value, freed)``, made as ``new_node`` makes nodes (a walk makes one per saved tensor)."""
    made = _new(SavedSummary)
    made.__dict__.update(name=name, value=value, freed=freed)
    return made


def graph_edge(source: str, target: str, slot: int, kind: str) -> "GraphEdge":
    """``GraphEdge(source, target, slot, kind)``, made as ``new_node`` makes nodes (one per edge of a walk)."""
    made = _new(GraphEdge)
    made.__dict__.update(source=source, target=target, slot=slot, kind=kind)
    return made


def new_node(node_id: str, kind: str, name: str, label: str, shape: tuple | None = None, dtype: str | None = None,
             value: "ArraySummary | None" = None, grad: "ArraySummary | None" = None, saved: tuple = (),
             formula: tuple = (), module: str | None = None, note: str | None = None, code: str | None = None,
             order: int = 1) -> "GraphNode":
    """``GraphNode(...)``, made without the frozen ``__init__``'s one
    ``object.__setattr__`` per field (the same object: equal, hashed and printed alike): the walk
    makes one per node of the graph."""
    made = _new(GraphNode)
    made.__dict__.update(id=node_id, kind=kind, name=name, label=label, shape=shape, dtype=dtype, value=value,
                         grad=grad, saved=saved, formula=formula, module=module, note=note, code=code, order=order)
    return made


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    slot: int = 0
    kind: str = "data"

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "slot": self.slot, "kind": self.kind}


@dataclass(frozen=True)
class Graph:
    """An immutable snapshot: nodes and edges in a deterministic order, JSON-ready."""

    nodes: tuple
    edges: tuple
    root: str
    source: str = "gradviz"
    node_ids: Any = field(default=None, compare=False, repr=False)  # {id(autograd node): graph id}

    def node(self, node_id: str) -> GraphNode:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def id_of(self, autograd_node: Any) -> str | None:
        """The graph id of an autograd node (grad_fn) captured in this snapshot."""
        return (self.node_ids or {}).get(id(autograd_node))

    def to_dict(self) -> dict:
        """JSON-ready; each distinct formula list is written once, in ``formulas``, and a node's
        ``formula`` is its index there (a 2,000-layer network repeats a handful of formulas)."""
        formulas: list = []
        index_of: dict = {}
        nodes = []
        for node in self.nodes:  # each formula list is made once, for its first node
            formula = None
            if node.formula:
                formula = index_of.get(id(node.formula))
                if formula is None:
                    formula = index_of[id(node.formula)] = len(formulas)
                    formulas.append([f.to_dict() for f in node.formula])
            nodes.append(node.dict_with(formula))
        return {"version": 1, "source": self.source, "root": self.root, "nodes": nodes,
                "edges": [e.to_dict() for e in self.edges], "formulas": formulas}

    def __len__(self) -> int:
        return len(self.nodes)
