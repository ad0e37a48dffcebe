"""What each node of a snapshot is called, and which ``nn.Module`` it is drawn in.

One rule for gradviz and torch graphs alike:

* ``names`` is ``{"w": w}`` or ``{w: "w"}``. A leaf (or any tensor) is matched by identity; a
  non-leaf tensor also names the node that produced it (its ``grad_fn``), so ``z = x * w``
  labels its ``MulBackward0`` "z". When a tensor has several names, the first one wins.
* ``model`` (an ``nn.Module`` of either library) labels each parameter with its
  ``named_parameters()`` path (``fc1.weight``) unless ``names`` already labels it, and groups
  nodes by module (``module_paths``): the module whose forward recorded them where gradviz's
  ``nn.Module`` noted it, else the module that owns the parameters they touch.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradviz._kinds import is_accumulate_grad, is_tensor


class Labels:
    """Display names for tensors: explicit ``names`` first, then the model's parameter paths."""

    def __init__(self, names: dict | None = None, model: Any = None):
        check_model(model)
        self.by_tensor: dict[int, str] = {}
        self.by_grad_fn: dict[int, tuple] = {}   # id(grad_fn) -> (label, tensor it produced)
        self.param_owner: dict[int, str | None] = {}  # id(parameter) -> owning module's path
        self.module_path: dict[int, str] = {}  # id(module) -> its path in the model ("" for the model)
        # The labelled tensors and their grad_fns, held so that their ids are not reused meanwhile
        # (torch makes a grad_fn's Python object afresh when nothing holds it).
        self._keep: list = []
        for label, tensor in name_pairs(names):
            self.by_tensor.setdefault(id(tensor), label)
            grad_fn = tensor.grad_fn
            self._keep.append((tensor, grad_fn))
            if grad_fn is not None:
                self.by_grad_fn.setdefault(id(grad_fn), (label, tensor))
        if model is not None:
            for module_path, module in model.named_modules():
                self.module_path[id(module)] = module_path
                for param_name, param in module.named_parameters(recurse=False):
                    key = id(param)
                    if key in self.param_owner:  # a shared parameter: its first owner keeps it
                        continue
                    self.param_owner[key] = module_path or None
                    self.by_tensor.setdefault(key, f"{module_path}.{param_name}" if module_path else param_name)
                    self._keep.append(param)

    def for_tensor(self, tensor: Any) -> str | None:
        return self.by_tensor.get(id(tensor))

    def for_grad_fn(self, node: Any) -> tuple | None:
        """``(label, tensor)`` when a named non-leaf tensor was produced by ``node``."""
        return self.by_grad_fn.get(id(node))


def name_pairs(names: Any) -> list:
    """``(label, tensor)`` pairs from ``{label: tensor}`` or ``{tensor: label}``.

    Anything else is a mistake worth saying, naming the argument: ``names`` that is not a dict
    (TypeError), an entry that pairs no string with a tensor (TypeError), a label that is not
    valid text, e.g. a lone surrogate (ValueError).
    """
    if names is None:
        return []
    if not isinstance(names, Mapping):
        raise TypeError(f"names= must be a dict such as {{'w': w}} or {{w: 'w'}}, got {type(names).__name__}")
    pairs = []
    for key, value in names.items():
        if isinstance(key, str) and is_tensor(value):
            pairs.append((_checked_label(key), value))
        elif isinstance(value, str) and is_tensor(key):
            pairs.append((_checked_label(value), key))
        else:
            raise TypeError(f"names= maps labels to tensors ({{'w': w}}) or tensors to labels ({{w: 'w'}}); "
                            f"got the entry {_short(key)}: {_short(value)}")
    return pairs


def _checked_label(label: str) -> str:
    try:
        label.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"names= label {label!r} is not valid text ({error.reason} at position "
                         f"{error.start})") from None
    return label


def _short(value: Any) -> str:
    """How an entry is named in an error: a tensor by its type, anything else by a short repr."""
    if is_tensor(value):
        return f"a {type(value).__module__.split('.')[0]} tensor"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "\u2026"


def check_model(model: Any) -> None:
    """``model=`` is an ``nn.Module`` of either library (it has ``named_modules``), else TypeError."""
    if model is not None and not (callable(getattr(model, "named_modules", None))
                                  and callable(getattr(model, "named_parameters", None))):
        raise TypeError(f"model= expects an nn.Module (gradviz.nn or torch.nn), got {type(model).__name__}")


def shape_label(tensor: Any) -> str:
    """How an unnamed tensor is called: ``tensor(3, 4)``, or ``tensor(scalar)`` for a 0-d one."""
    shape = tuple(tensor.shape)
    return "tensor(" + ", ".join(str(d) for d in shape) + ")" if shape else "tensor(scalar)"


# Ops whose data input has no edge at all in PyTorch's graph (an embedding's integer indices): they
# consume their module's parameter, but their output is data, not parameter-only.
READS_DATA_WITHOUT_EDGE = frozenset({"EmbeddingBackward0"})


def module_paths(root: Any, param_owner: dict, module_path: dict | None = None) -> dict:
    """Group nodes by ``nn.Module``.

    A gradviz ``nn.Module`` notes, when called, which nodes its forward recorded
    (``nn/modules.py``, ``_note_call``): where the graph holds such notes for the model's modules,
    every function node is drawn in the innermost module whose forward made it
    (``recorded_modules``; a block's last ReLU is in the block, the loss outside every module),
    and parameters' leaves and AccumulateGrads in the module that owns the parameter.

    Otherwise (a torch model: torch's forward hooks and module stack are gone by the time a
    graph is shown, so ownership is read off the graph):

    * a parameter's leaf and its AccumulateGrad belong to the module that owns the parameter
      directly (``named_modules()`` with ``recurse=False``);
    * a node is *parameter-only* for module M when every input it has is M's parameter or a
      parameter-only node of M (``TBackward0`` over a Linear weight, a weight reshaped or
      normalised before use); an input that needs no grad (``(None, 0)``) is data, so a node
      that takes one is not parameter-only;
    * a function node belongs to the module of its first input (in ``next_functions`` order)
      that is one of M's parameters or a parameter-only node of M, i.e. the op that consumed
      the parameter. ``AddmmBackward0`` lands in its Linear, ``ConvolutionBackward0`` in its Conv.

    * a node that touches no parameter (an activation, a dropout) belongs to the innermost module
      that encloses both the module its input came from and the module its output goes to: a
      ``Tanh`` between two Linears of one block is drawn in that block's frame. Nodes with nothing
      in common on the two sides (between top-level modules, losses) stay ungrouped (None), and so
      do the model's own top-level parameters, whose module path would be the empty string.
    Returns ``{id(node): dotted module path or None}``.
    """
    if not param_owner and not module_path:
        return {}
    pure: dict[int, str | None] = {}   # id(node) -> M when the node is parameter-only for M
    owner_of: dict[int, str | None] = {}
    order = _post_order(root)
    for node in order:
        if is_accumulate_grad(node):
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
        pure[id(node)] = child_owners[0] if same and node.name() not in READS_DATA_WITHOUT_EDGE else None
    recorded = recorded_modules(order, module_path or {})
    if recorded is not None:
        return {key: (recorded.get(key) if key in recorded else owner) for key, owner in owner_of.items()}
    return _enclosed(order, owner_of)


def recorded_modules(order: list, module_path: dict) -> dict | None:
    """``{id(function node): path or None}`` from the calls gradviz's modules noted on the graph
    (``(module, first)`` on a call's output node: nodes numbered from ``first`` to that node's
    number were made inside it); the innermost call wins, the model itself and nodes made outside
    every call give None. None when no call of the model's modules is noted (a torch graph)."""
    spans = set()
    for node in order:
        for module, first in getattr(node, "_module_calls", ()):
            path = module_path.get(id(module))
            if path is not None:
                spans.add((first, -node._sequence_nr, path))
    if not spans:
        return None
    spans = sorted(spans)  # by start, the outer of two with one start first
    numbered = sorted((node._sequence_nr, id(node)) for node in order if not is_accumulate_grad(node))
    result, open_spans, next_span = {}, [], 0
    for number, key in numbered:
        while next_span < len(spans) and spans[next_span][0] < number:
            first, negative_last, path = spans[next_span]
            while open_spans and open_spans[-1][0] < first:  # calls that ended before this one began
                open_spans.pop()
            open_spans.append((-negative_last, path))
            next_span += 1
        while open_spans and open_spans[-1][0] < number:
            open_spans.pop()
        result[key] = (open_spans[-1][1] or None) if open_spans else None
    return result


def _enclosed(order: list, owner_of: dict) -> dict:
    """Give each ungrouped function node the innermost module enclosing the module it reads from
    (the nearest grouped node below it) and the module it feeds (the nearest grouped node above)."""
    below: dict[int, str | None] = {}  # nearest owner toward the inputs, in input order
    for node in order:  # inputs before consumers
        own = owner_of.get(id(node))
        if own is not None:
            below[id(node)] = own
            continue
        below[id(node)] = next((below[id(child)] for child, _ in node.next_functions
                                if child is not None and below.get(id(child)) is not None), None)
    above: dict[int, str | None] = {}  # nearest owner toward the output
    for node in reversed(order):  # consumers before inputs
        own = owner_of.get(id(node))
        reach = own if own is not None else above.get(id(node))
        for child, _ in node.next_functions:
            if child is not None and above.get(id(child)) is None:
                above[id(child)] = reach
    result = dict(owner_of)
    for node in order:
        if owner_of.get(id(node)) is None and not is_accumulate_grad(node):
            result[id(node)] = _common_module(below.get(id(node)), above.get(id(node)))
    return result


def _common_module(a: str | None, b: str | None) -> str | None:
    """The innermost module path enclosing both (``"0.1"`` and ``"0.3"`` -> ``"0"``), else None."""
    if a is None or b is None:
        return None
    common = []
    for x, y in zip(a.split("."), b.split(".")):
        if x != y:
            break
        common.append(x)
    return ".".join(common) or None


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
