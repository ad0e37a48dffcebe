"""The walker's adapter for real PyTorch graphs (see ``gradviz.snapshot.sources``).

PyTorch's nodes are C++ objects: the walk reads the interface they share with gradviz's
(``next_functions``, ``.variable``, ``_saved_<name>``), and this adapter reads the rest. A saved
tensor that ``backward()`` freed raises RuntimeError when read: that is exactly what a learner
should see, so it becomes ``freed=True``. torch does not keep the inputs that need no gradient,
so those show as ``constant``. Notes cover what only torch has: a ``torch.compile``'d region is
one node, and tensors inside a ``torch.func`` transform have no grad_fn to walk.

torch is imported only inside functions, and this module is loaded only once a torch tensor is
handed over (``gradviz/__init__.py`` registers it lazily), so ``import gradviz`` never pays for torch.
"""
from __future__ import annotations

from typing import Any

from gradviz._kinds import is_torch_tensor
from gradviz.snapshot.model import SavedSummary, summarize
from gradviz.snapshot.walk import build_graph, dtype_text

# Python-level autograd nodes created by torch.compile: the whole compiled region is one node.
_COMPILED_NODE_HINT = "CompiledFunction"


def build_torch_graph(tensor: Any, names: dict | None = None, model: Any = None):
    """The ``Graph`` of the autograd graph behind a torch tensor (see ``build_graph``)."""
    if not is_torch_tensor(tensor):
        raise TypeError(f"build_torch_graph expects a torch.Tensor, got {type(tensor).__name__}")
    return build_graph(tensor, TorchSource(), names, model)


class TorchSource:
    """Reads one torch graph; summaries of tensors that share memory are taken once per walk."""

    name = "torch"

    def __init__(self):
        self._saved_attrs: dict[type, tuple] = {}
        self._summaries: dict = {}  # in a deep network each activation is saved by two ops

    def root(self, tensor: Any) -> Any:
        if tensor.grad_fn is not None:
            return tensor.grad_fn
        if tensor.requires_grad and not _is_functorch_wrapped(tensor):
            import torch

            return torch.autograd.graph.get_gradient_edge(tensor).node  # the leaf's AccumulateGrad
        return None

    def value(self, tensor: Any):
        return safe_summary(tensor, self._summaries)

    def leaf_grad(self, tensor: Any):
        return safe_summary(tensor.grad)

    def saved(self, node: Any) -> tuple:
        """Summaries of the tensors a node saved for backward, freed ones marked as such."""
        attrs = self._saved_attrs.get(type(node))
        if attrs is None:
            attrs = tuple(a for a in dir(node) if a.startswith("_saved_"))
            self._saved_attrs[type(node)] = attrs
        saved = []
        for attr in attrs:
            saved.extend(self._saved_entries(node, attr, attr[len("_saved_"):]))
        if not attrs and hasattr(node, "saved_tensors"):  # a custom autograd.Function's ctx
            saved.extend(self._saved_entries(node, "saved_tensors", "saved_tensors"))
        return tuple(saved)

    def _saved_entries(self, node: Any, attr: str, name: str) -> list:
        """One ``SavedSummary`` per tensor in ``node.<attr>``; non-tensor saved values are skipped."""
        try:
            value = getattr(node, attr)
        except RuntimeError:  # freed by backward()
            return [SavedSummary(name=name, value=None, freed=True)]
        if is_torch_tensor(value):
            return [SavedSummary(name=name, value=safe_summary(value, self._summaries))]
        if isinstance(value, (tuple, list)) and any(is_torch_tensor(v) for v in value):
            return [SavedSummary(name=f"{name}[{i}]", value=safe_summary(v, self._summaries))
                    for i, v in enumerate(value) if is_torch_tensor(v)]
        return []

    def constant(self, node: Any, slot: int) -> Any:
        return None  # torch keeps no record of the inputs that need no gradient

    def output_metadata(self, node: Any) -> tuple:
        """Shape and dtype of the forward output a function node produced, when torch records it."""
        try:
            meta = node._input_metadata[0]
            return tuple(meta.shape), dtype_text(meta.dtype)
        except (AttributeError, IndexError, RuntimeError, TypeError):
            return None, None

    def output_note(self, tensor: Any, root: Any) -> str | None:
        if _is_functorch_wrapped(tensor):
            if root is None:
                return ("this tensor lives inside a torch.func transform (grad, vjp, vmap): functorch "
                        "tracks its graph internally, with no grad_fn to walk")
            return ("this tensor lives inside a torch.func transform: the graph shown is the "
                    "transform's innermost level, which torch.func differentiates itself")
        if root is not None and _COMPILED_NODE_HINT in type(root).__name__:
            return ("made by a torch.compile'd function: the compiled region is one node, "
                    f"{type(root).__name__}; the ops inside it are not visible")
        return None

    def node_note(self, node: Any) -> str | None:
        if _COMPILED_NODE_HINT in type(node).__name__:
            return "a torch.compile'd region: its ops run inside this one node"
        return None


def safe_summary(array: Any, cache: dict | None = None):
    """``summarize``, with a ``cache``: tensors that view the same memory the same way are
    summarised once.
    """
    if array is None:
        return None
    key = _memory_key(array) if cache is not None else None
    if key is not None:
        if key not in cache:
            cache[key] = safe_summary(array)
        return cache[key]
    return summarize(array)  # any dtype and layout: see summarize


def _memory_key(tensor: Any) -> tuple | None:
    """Identifies the values a tensor shows: where they live, how they are laid out, which version.

    None for tensors without plain storage (torch.func wrappers, sparse), which are not cached.
    """
    try:
        return (str(tensor.device), tensor.data_ptr(), tuple(tensor.shape),
                tuple(tensor.stride()), str(tensor.dtype), tensor._version)
    except (RuntimeError, NotImplementedError):
        return None


def _is_functorch_wrapped(tensor: Any) -> bool:
    import torch

    check = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    try:
        return bool(check(tensor)) if check is not None else False
    except (RuntimeError, TypeError):
        return False
