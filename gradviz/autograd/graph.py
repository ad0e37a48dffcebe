"""``torch.autograd.graph``: the graph's node type, and hooks on the tensors saved for backward.

``saved_tensors_hooks(pack_hook, unpack_hook)`` changes what every node recorded inside it keeps:
``pack_hook(tensor)`` runs when the op saves a tensor, ``unpack_hook(packed)`` when backward (or
``grad_fn._saved_<name>``) reads it back, and must return a tensor with the saved one's values.
``allow_mutation_on_saved_tensors()`` is made of such hooks.

The graph's edges: ``get_gradient_edge(tensor)`` is where a gradient for ``tensor`` goes (a
``GradientEdge``, which ``autograd.grad`` and ``backward(inputs=...)`` take in place of the tensor).
``register_multi_grad_hook`` calls one function once the gradients of several tensors are known.
"""
from __future__ import annotations

import threading
import weakref
from typing import NamedTuple

from gradviz.autograd.node import SAVED_TENSOR_HOOKS, Node, RemovableHandle

__all__ = ["GradientEdge", "Node", "allow_mutation_on_saved_tensors", "disable_saved_tensors_hooks",
           "get_gradient_edge", "increment_version", "register_multi_grad_hook", "save_on_cpu",
           "saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager: ``pack_hook``/``unpack_hook`` for every tensor saved inside it (innermost wins)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        SAVED_TENSOR_HOOKS.append((self._pack, self.unpack_hook))
        return self

    def _pack(self, tensor):
        """PyTorch runs the pack hook with grad mode off: what it computes is not recorded."""
        from gradviz.grad_mode import no_grad

        with no_grad():
            return self.pack_hook(tensor)

    def __exit__(self, *exc_info):
        SAVED_TENSOR_HOOKS.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors on the CPU and bring them back to their device when backward needs them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        super().__init__(lambda tensor: (tensor.device, tensor.cpu()), lambda packed: packed[1].to(packed[0]))


class disable_saved_tensors_hooks:
    """Inside it, registering saved-tensor hooks raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        self._saved = list(SAVED_TENSOR_HOOKS)
        SAVED_TENSOR_HOOKS.clear()
        SAVED_TENSOR_HOOKS.append(_Refuse(self.error_message))
        return self

    def __exit__(self, *exc_info):
        SAVED_TENSOR_HOOKS[:] = self._saved
        return False


class _Refuse(tuple):
    def __new__(cls, message):
        def refuse(*_):
            raise RuntimeError(message)
        return super().__new__(cls, (refuse, refuse))


# -- the graph's edges ------------------------------------------------------------------------------------
class GradientEdge(NamedTuple):
    """Where a gradient goes in the graph: input ``output_nr`` of ``node`` (a tensor's grad_fn, or a
    leaf's AccumulateGrad). ``autograd.grad(loss, get_gradient_edge(x))`` is ``autograd.grad(loss, x)``."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None  # PyTorch's way to keep a C++ graph alive; a Python node needs none


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge a gradient for ``tensor`` arrives on: ``(tensor.grad_fn, tensor.output_nr)``, or the
    leaf's AccumulateGrad."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    from gradviz.autograd.function import gradient_edge

    node, output_nr = gradient_edge(tensor)
    return GradientEdge(node, output_nr)


def increment_version(tensor) -> None:
    """Count a change made to ``tensor``'s data behind autograd's back (for example through
    ``tensor.numpy()``) as an in-place change, so that backward refuses a saved copy that is now stale.
    Takes a tensor or an iterable of tensors."""
    from gradviz.tensor import Tensor

    for each in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not each.is_inference():  # an inference tensor has no version counter
            each._vc[0] += 1


class _MultiHandle(RemovableHandle):
    """The handle of a multi-grad hook: removing it removes the hook from every tensor."""

    def __init__(self, handles: tuple):
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all") -> RemovableHandle:
    """Call ``fn`` once per backward pass with the gradients of several tensors.

    ``mode="all"``: after the gradient of every tensor the pass reaches is known, with the list of
    gradients (``None`` for a tensor the pass does not reach: not in its graph, or not on a path to
    the ``inputs`` it was asked for). ``mode="any"``: with the first gradient that arrives.
    Built, as in PyTorch, from one tensor hook per tensor; a pass is told apart from another (a hook
    may start a backward of its own) by the engine's ``current_graph_task()``."""
    from gradviz.autograd.engine import current_graph_task

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of {('all', 'any')} but got {mode}")
    lock = threading.Lock()
    tensors = tuple(tensors)

    def running_task():
        task = current_graph_task()
        if task is None:
            raise AssertionError("expected this hook to be called inside a backward call")
        return task

    if mode == "any":
        ran = weakref.WeakKeyDictionary()  # pass -> whether fn has run in it

        def first_only(grad):
            task = running_task()
            with lock:
                already, ran[task] = ran.get(task, False), True
            if not already:
                fn(grad)

        return _MultiHandle(tuple(t.register_hook(first_only) for t in tensors if t.requires_grad))

    from gradviz.autograd.function import gradient_edge

    nodes = []
    for tensor in tensors:
        node = gradient_edge(tensor)[0]
        if node is None:  # (PyTorch's _get_grad_fn_or_grad_acc, on a tensor that does not require grad)
            raise AssertionError("Expected gradient function to be set")
        nodes.append(node)
    # per backward pass (an entry goes with its pass): how many gradients have arrived, how many tensors
    # the pass reaches (counted when its first gradient arrives), the gradients so far
    arrived, expected, buffers = weakref.WeakKeyDictionary(), weakref.WeakKeyDictionary(), weakref.WeakKeyDictionary()

    def hook_for(index):
        def inner_hook(grad):
            key = task = running_task()
            with lock:
                count = arrived.get(key, 0)
                arrived[key] = count + 1
                if count == 0:
                    expected[key] = sum(map(task.will_execute, nodes))
                    buffers[key] = [None] * len(tensors)
            buffers[key][index] = grad
            if count == expected[key] - 1:
                grads = buffers.pop(key)
                del arrived[key], expected[key]
                fn(grads)
        return inner_hook

    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))


# -- allow_mutation_on_saved_tensors ------------------------------------------------------------------------
_MUTATION_ALLOWED = [False]
_OUTSIDE_MESSAGE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
                    "in which the graph was originally recorded.")  # (sic: PyTorch's words run together)


class _SavedCopy:
    """What the pack hook keeps: the tensor, its version then, and a copy of its data then."""

    __slots__ = ("tensor", "version", "copy", "context", "__weakref__")

    def __init__(self, tensor, context):
        self.tensor, self.version, self.context = tensor, tensor._version, context
        self.copy = tensor._backend.copy(tensor._data)

    def clear(self) -> None:
        self.tensor = self.copy = None


class allow_mutation_on_saved_tensors:
    """Context manager in which an in-place change to a tensor saved for backward is allowed: backward
    uses the tensor as it was when it was saved. Run the forward and the backward pass inside it.

    PyTorch copies a saved tensor just before an in-place op changes it; gradviz copies each saved tensor
    when it is saved (what backward and ``grad_fn._saved_*`` see is the same: the tensor itself while it
    is unchanged, its copy once changed), so inside this context saved tensors take twice the memory."""

    def __init__(self):
        self._hooks = None
        self._saved = weakref.WeakSet()  # what leaving the context frees

    def _pack(self, tensor):
        saved = _SavedCopy(tensor, self)
        self._saved.add(saved)
        return saved

    @staticmethod
    def _unpack(saved):
        if not _MUTATION_ALLOWED[0] or saved.context._hooks is None:
            raise AssertionError(_OUTSIDE_MESSAGE)
        tensor = saved.tensor
        if tensor._version == saved.version:
            return tensor
        from gradviz.tensor import Tensor

        return Tensor._make(saved.copy, backend=tensor._backend)

    def __enter__(self):
        self._hooks = saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        try:
            if _MUTATION_ALLOWED[0]:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        except RuntimeError:
            self.__exit__()
            raise
        _MUTATION_ALLOWED[0] = True
        return self

    def __exit__(self, *exc_info):
        self._hooks.__exit__(*exc_info)
        self._hooks = None
        for saved in tuple(self._saved):
            saved.clear()
        self._saved.clear()
        _MUTATION_ALLOWED[0] = False
        return False
