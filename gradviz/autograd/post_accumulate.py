"""``Tensor.register_post_accumulate_grad_hook(hook)``: ``hook(tensor)`` runs after ``.grad`` is written.

PyTorch keeps these hooks on the leaf and its AccumulateGrad calls them once it has added the
gradient into ``.grad`` (the optimizer-step-in-backward pattern steps a parameter there). Here they
are one post-hook of the leaf's AccumulateGrad, so they run where PyTorch runs them, right after
the accumulation, and nowhere else: a view that observes the graph (which runs no hooks) never calls them.
A leaf's AccumulateGrad is otherwise made anew for each graph and held weakly; a leaf with such
hooks keeps its own alive, so every later graph reaches the same node and the same hooks.
"""
from __future__ import annotations

from gradviz.autograd.node import RemovableHandle

NON_LEAF = "post accumulate grad hooks cannot be registered on non-leaf tensors"
NO_GRAD = "cannot register a hook on a tensor that doesn't require gradient"


class PostAccumulateGradHooks:
    """The AccumulateGrad post-hook that calls the leaf's post-accumulate-grad hooks, in order."""

    def __init__(self, accumulator):
        self.accumulator = accumulator
        self.hooks = {}

    def __call__(self, grad_inputs, grad_outputs) -> None:
        for hook in tuple(self.hooks.values()):
            hook(self.accumulator.variable)


class _Kept:
    """Holds a leaf's AccumulateGrad strongly where ``Tensor._accumulator`` holds a weak reference:
    called, it returns the node (the one thing that slot is asked)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __call__(self):
        return self.node


def register_post_accumulate_grad_hook(tensor, hook) -> RemovableHandle:
    """``hook(tensor)`` runs after the gradient was accumulated into ``tensor.grad`` (leaves only)."""
    if not tensor.requires_grad:
        raise RuntimeError(NO_GRAD)
    if tensor.grad_fn is not None:
        raise RuntimeError(NON_LEAF)
    accumulator = tensor._grad_accumulator()
    runner = next((hook for hook in (accumulator._hooks or {}).values() if isinstance(hook, PostAccumulateGradHooks)),
                  None)
    if runner is None:
        runner = PostAccumulateGradHooks(accumulator)
        accumulator.register_hook(runner)
        tensor._accumulator = _Kept(accumulator)
    handle = RemovableHandle(runner.hooks)
    runner.hooks[handle.id] = hook
    return handle
