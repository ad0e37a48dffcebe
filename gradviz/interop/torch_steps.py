"""Step PyTorch's own backward pass, node by node, as gradviz ``Step`` records.

gradviz's engine yields a Step as it runs each node. For a real torch tensor the nodes run
inside PyTorch's C++ engine, which cannot be paused from Python, so this module watches it
instead: it puts a pre-hook (gradients arriving) and a post-hook (gradients sent on) on every
node of the graph, lets ``torch.autograd.backward`` run to the end, and only then yields the
Steps, in the order torch ran the nodes. The values are therefore exactly PyTorch's, and the
leaves' ``.grad`` afterwards is exactly what ``loss.backward()`` gives.

Every hook is removed when the pass ends, also when it ends in an error.

``gv.autograd.backward_steps(torch_tensor)`` arrives here: ``gradviz/__init__.py`` registers
``torch_backward_steps`` with the engine (``register_foreign_engine``) for torch tensors.
"""
from __future__ import annotations

from typing import Any, Iterator

from gradviz._kinds import is_accumulate_grad
from gradviz.autograd.step import Step
from gradviz.snapshot.walk import reachable_nodes


def torch_backward_steps(tensor: Any, gradient: Any = None, retain_graph: bool | None = None,
                         *, dry_run: bool = False) -> Iterator[Step]:
    """Yield one ``Step`` per node PyTorch ran while back-propagating from ``tensor``.

    ``gradient`` and ``retain_graph`` mean what they mean for ``tensor.backward()``. With
    ``dry_run=True`` the pass runs with the graph retained and every leaf's ``.grad`` is put back
    as it was (same tensor object, same values), so a view can trace a user's loss without side
    effects. What a dry run cannot undo: hooks the user registered on tensors run once more,
    and a non-leaf tensor that called ``retain_grad()`` gets its ``.grad`` set (torch keeps no
    list of those tensors to restore).

    The whole backward pass runs when the first Step is requested: the Steps are a record of a
    finished pass, not a pause inside it.
    """
    steps = record_torch_backward(tensor, gradient, retain_graph, dry_run=dry_run)
    yield from steps


def record_torch_backward(tensor: Any, gradient: Any = None, retain_graph: bool | None = None,
                          *, dry_run: bool = False) -> list:
    """Run torch's backward pass under hooks and return the Steps in the order the nodes ran."""
    import torch

    root = torch.autograd.graph.get_gradient_edge(tensor).node if tensor.requires_grad else None
    nodes = reachable_nodes(root)
    recorder = _BackwardRecorder(root, gradient)
    saved_grads = _LeafGrads(nodes) if dry_run else None
    try:
        recorder.attach(nodes)
        torch.autograd.backward(tensor, gradient, retain_graph=True if dry_run else retain_graph)
    finally:
        recorder.detach()
        if saved_grads is not None:
            saved_grads.restore()
    return recorder.steps()


def _copy(gradient: Any) -> Any:
    """A detached copy: torch may later add into the very buffer it passed to a hook."""
    return None if gradient is None else gradient.detach().clone()


class _BackwardRecorder:
    """Collects what each node received and sent while torch's engine runs them.

    Pre-hooks fire when a node is about to run, with its summed incoming gradients: their
    order is the engine's execution order. Post-hooks fire after it ran, with the gradients it
    produced, one per ``next_functions`` edge; routing those along the edges gives each receiver
    the separate pieces (sender, gradient) that torch summed for it.
    """

    def __init__(self, root: Any, gradient: Any):
        self.root = root
        self.order: list = []               # torch nodes, as they ran
        self.arrived: dict[int, tuple] = {}
        self.sent: dict[int, tuple] = {}
        self.pieces: dict[int, dict] = {}   # id(receiver) -> {output_nr: [(sender, grad)]}
        self.grad_before: dict[int, Any] = {}
        self.grad_after: dict[int, Any] = {}
        self.handles: list = []

    def attach(self, nodes: list) -> None:
        for node in nodes:
            self.handles.append(node.register_prehook(self._pre_hook_for(node)))
            self.handles.append(node.register_hook(self._post_hook_for(node)))

    def detach(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles.clear()

    def _pre_hook_for(self, node: Any):
        def pre_hook(grad_outputs):
            self.order.append(node)
            self.arrived[id(node)] = tuple(_copy(g) for g in grad_outputs)
            if is_accumulate_grad(node):
                self.grad_before[id(node)] = _copy(node.variable.grad)
        return pre_hook

    def _post_hook_for(self, node: Any):
        def post_hook(grad_inputs, grad_outputs):
            sent = tuple(_copy(g) for g in grad_inputs)
            self.sent[id(node)] = sent
            for (receiver, output_nr), piece in zip(node.next_functions, sent):
                if receiver is not None and piece is not None:
                    slots = self.pieces.setdefault(id(receiver), {})
                    slots.setdefault(output_nr, []).append((node, piece))
            if is_accumulate_grad(node):
                self.grad_after[id(node)] = _copy(node.variable.grad)
        return post_hook

    def steps(self) -> list:
        steps = []
        for index, node in enumerate(self.order):
            key = id(node)
            grad_outputs = self.arrived.get(key, ())
            received = self.pieces.get(key, {})
            contributions = tuple(
                tuple(received.get(i, ())) or (((None, g),) if g is not None else ())
                for i, g in enumerate(grad_outputs))
            steps.append(Step(index=index, node=node, grad_outputs=grad_outputs,
                              grad_inputs=self.sent.get(key, ()), contributions=contributions,
                              grad_before=self.grad_before.get(key),
                              grad_after=self.grad_after.get(key)))
        return steps


class _LeafGrads:
    """Every leaf's ``.grad`` before a dry run, to be put back exactly afterwards.

    AccumulateGrad may add into the existing ``.grad`` tensor in place, or replace it, so both
    the tensor object and a copy of its values are kept.
    """

    def __init__(self, nodes: list):
        self.saved = []
        for node in nodes:
            leaf = getattr(node, "variable", None) if is_accumulate_grad(node) else None
            if leaf is not None:
                grad = leaf.grad
                self.saved.append((leaf, grad, _copy(grad)))

    def restore(self) -> None:
        import torch

        with torch.no_grad():
            for leaf, grad, values in self.saved:
                if grad is not None:
                    grad.copy_(values)
                leaf.grad = grad
