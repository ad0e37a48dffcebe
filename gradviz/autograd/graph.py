"""``torch.autograd.graph``: the graph's node type, and hooks on the tensors saved for backward.

``saved_tensors_hooks(pack_hook, unpack_hook)`` changes what every node recorded inside it keeps:
``pack_hook(tensor)`` runs when the op saves a tensor, ``unpack_hook(packed)`` when backward (or
``grad_fn._saved_<name>``) reads it back, and must return a tensor with the saved one's values.
"""
from __future__ import annotations

from gradviz.autograd.node import SAVED_TENSOR_HOOKS, Node

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]


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
