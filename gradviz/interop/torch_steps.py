"""Step PyTorch's backward pass node by node, as gradviz ``Step`` records, in torch's own order.

Two ways, for two purposes:

* **Observing** (``observe_torch_backward``; ``dry_run=True, run_hooks=False``), what every view
  uses (``gv.show``, the live refresh, ``export_html``, ``gv.compare``): torch's engine never runs.
  gradviz's own ``GraphTask`` schedules the nodes (torch's order: dependencies counted per edge,
  the ready queue a max-heap on ``_sequence_nr()``, the same libstdc++ heap), and each torch node's
  backward formula is called directly, ``node(*grads)`` (``node.apply`` for a Python
  ``autograd.Function``), the way engine.cpp's ``call_function`` calls it, minus the hooks.
  gradviz sums the arriving gradients in its own input buffers, checks each sent gradient against
  the receiving node's input metadata as ``validate_outputs`` does (sum to shape, cast to dtype),
  and works out what AccumulateGrad would make of ``.grad`` without calling it. So no user hook
  runs (tensor hooks, ``retain_grad``, node pre/post hooks, post-accumulate-grad hooks and hence
  optimizers stepped inside them), no ``.grad`` is written, no saved tensor is freed and no
  version counter moves. The gradients are the formulas' own: a hook that would change a
  gradient does not change what is shown.
* **Running torch's engine** (``record_torch_backward``; any other combination): the real
  ``torch.autograd.backward`` runs under a pre-hook and a post-hook on every node, and the Steps
  are read off them afterwards. The user's hooks run as they would in ``loss.backward()``; this is
  for a user who explicitly steps torch's real pass (``gv.autograd.backward_steps(loss)``). With
  ``dry_run=True`` every leaf's ``.grad`` is put back afterwards, but the user's hooks have run.

``gv.autograd.backward_steps(torch_tensor)`` arrives here: ``gradviz/__init__.py`` registers
``torch_backward_steps`` with the engine (``register_foreign_engine``) for torch tensors.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

from gradviz._kinds import is_accumulate_grad
from gradviz.autograd.engine import NO_GRAD_MESSAGE, GraphTask
from gradviz.autograd.step import Step
from gradviz.snapshot import CannotObserve
from gradviz.snapshot.walk import reachable_nodes

OBSERVE_ONLY_MESSAGE = ("run_hooks=False steps a torch graph only as a dry run (dry_run=True): "
                        "torch's own engine always runs the hooks the user registered")


def torch_backward_steps(tensor: Any, gradient: Any = None, retain_graph: bool | None = None,
                         *, dry_run: bool = False, run_hooks: bool = True) -> Iterator[Step]:
    """Yield one ``Step`` per node of the backward pass from ``tensor``, in torch's order.

    ``gradient`` and ``retain_graph`` mean what they mean for ``tensor.backward()``. With
    ``dry_run=True, run_hooks=False`` this is a pure observation (``observe_torch_backward``).
    Otherwise torch's real engine runs (``record_torch_backward``): the user's hooks run, and
    without ``dry_run`` the leaves' ``.grad`` is exactly what ``loss.backward()`` gives.
    """
    if not run_hooks:
        if not dry_run:
            raise ValueError(OBSERVE_ONLY_MESSAGE)
        yield from observe_torch_backward(tensor, gradient)
        return
    yield from record_torch_backward(tensor, gradient, retain_graph, dry_run=dry_run)


# -- observing: torch's nodes called one by one, in gradviz's GraphTask ---------------------------
def observe_torch_backward(tensor: Any, gradient: Any = None) -> Iterator[Step]:
    """The Steps of the backward pass from ``tensor`` without running torch's engine or any hook.

    Nodes run lazily, one per Step requested; a node whose saved tensors were freed raises
    torch's own "backward through the graph a second time" RuntimeError when it is reached.
    """
    import torch

    grad = _starting_gradient(tensor, gradient)
    edge = torch.autograd.graph.get_gradient_edge(tensor)
    nodes = _TorchNode.wrap_graph(edge.node)
    _refuse_reentrant(nodes.values())
    task = _ObservingTask([(nodes[id(edge.node)], edge.output_nr)], [grad])
    yield from task.steps()


# Nodes whose backward runs a backward pass of its own through torch's engine (writing .grad and
# running hooks): they cannot be observed, only run. {node name: what made it, what to use instead}
REENTRANT = {"CheckpointFunctionBackward": ("torch.utils.checkpoint(..., use_reentrant=True)",
                                            "use_reentrant=False")}


def _refuse_reentrant(nodes) -> None:
    """Raise ``CannotObserve`` before any node runs when the graph holds a reentrant node."""
    for node in nodes:
        made_by = REENTRANT.get(node.name())
        if made_by is not None:
            raise CannotObserve(
                f"This graph has {node.name()} ({made_by[0]}): its backward runs a backward pass of its "
                f"own through torch's engine, writing .grad and running hooks, so gradviz shows the graph "
                f"but does not step it. Checkpointing with {made_by[1]} can be stepped.")


def _starting_gradient(tensor: Any, gradient: Any) -> Any:
    """The gradient backward() starts from, checked as ``torch.autograd.backward`` checks it."""
    import torch

    if not tensor.requires_grad:
        raise RuntimeError(NO_GRAD_MESSAGE.format(0))
    if gradient is None:
        if tensor.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return torch.ones_like(tensor, memory_format=torch.preserve_format)
    if gradient.shape != tensor.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {gradient.shape} and "
                           f"output[0] has a shape of {tensor.shape}.")
    return gradient.detach()


class _TorchNode:
    """A torch node seen through the attributes gradviz's ``GraphTask`` reads of its own nodes.

    ``_sequence_nr`` (torch's ``_sequence_nr()``, UINT64_MAX for AccumulateGrad), ``_next_functions``
    (wrapped too), ``_num_outputs`` (the gradients the node takes), ``_is_accumulate``; and
    ``backward(*grads)``, which calls the torch node's formula with no hook.
    """

    __slots__ = ("fn", "_sequence_nr", "_next_functions", "_num_outputs", "_is_accumulate", "variable")

    def __init__(self, fn: Any):
        self.fn = fn
        self._sequence_nr = fn._sequence_nr()
        metadata = getattr(fn, "_input_metadata", None)
        self._num_outputs = len(metadata) if metadata is not None else 1
        self._is_accumulate = is_accumulate_grad(fn)
        self.variable = fn.variable if self._is_accumulate else None
        self._next_functions = ()

    @staticmethod
    def wrap_graph(root: Any) -> dict:
        """``{id(torch node): _TorchNode}`` for every node reachable from ``root``, edges wrapped."""
        wrapped = {id(fn): _TorchNode(fn) for fn in reachable_nodes(root)}
        for node in wrapped.values():
            node._next_functions = tuple((wrapped[id(child)] if child is not None else None, slot)
                                         for child, slot in node.fn.next_functions)
        return wrapped

    def name(self) -> str:
        return self.fn.name()

    def backward(self, *grad_outputs) -> tuple:
        """The node's formula on ``grad_outputs``, its results checked like engine.cpp's
        ``validate_outputs``; grad mode off, as torch runs nodes without ``create_graph``."""
        import torch

        with torch.no_grad():
            if callable(self.fn):  # a C++ node: its formula, no hooks
                grad_inputs = self.fn(*grad_outputs)
                grad_inputs = grad_inputs if isinstance(grad_inputs, tuple) else (grad_inputs,)
            else:  # a Python autograd.Function: its backward, as PyNode::apply calls it
                grad_inputs = self._python_backward(grad_outputs)
            return tuple(self._validate(grad, edge) for grad, edge in zip(grad_inputs, self._next_functions))

    def _python_backward(self, grad_outputs: tuple) -> tuple:
        import torch

        fn = self.fn
        # undefined gradients arrive as zeros, unless the Function opted out (the flag reads as
        # an AttributeError while it is at its default, True)
        if any(g is None for g in grad_outputs) and getattr(fn, "materialize_grads", True):
            grad_outputs = tuple(
                torch.zeros(tuple(meta.shape), dtype=meta.dtype, device=meta.device) if g is None else g
                for g, meta in zip(grad_outputs, fn._input_metadata))
        result = fn.apply(*grad_outputs)
        result = result if isinstance(result, tuple) else (result,)
        expected = len(self._next_functions)
        if len(result) == expected:
            return result
        needs = fn.needs_input_grad  # one per forward input; edges exist for tensor inputs only
        if len(result) != len(needs):
            raise RuntimeError(f"function {fn.name()} returned an incorrect number of gradients "
                               f"(expected {len(needs)}, got {len(result)})")
        # Edges exist for tensor inputs only. A gradient for an input that needs one, or any value
        # that is not None (torch refuses one for a non-tensor input), marks a tensor input.
        tensors = [grad for grad, need in zip(result, needs) if need or grad is not None]
        if len(tensors) == expected:
            return tuple(tensors)
        # some tensor inputs got None: an edge that leads somewhere takes the next wanted gradient
        wanted = iter([grad for grad, need in zip(result, needs) if need])
        return tuple(next(wanted, None) if receiver is not None else None
                     for receiver, _ in self._next_functions)

    @staticmethod
    def _validate(grad: Any, edge: tuple) -> Any:
        """Reduce a broadcast gradient to its input's shape and cast it to its dtype."""
        receiver, slot = edge
        if grad is None or receiver is None:
            return grad
        meta = receiver.fn._input_metadata[slot] if receiver._num_outputs > slot else None
        if meta is None:
            return grad
        if tuple(grad.shape) != tuple(meta.shape) and not grad.is_sparse:
            grad = grad.sum_to_size(tuple(meta.shape))
        if grad.dtype != meta.dtype:
            grad = grad.to(meta.dtype)
        return grad


class _ObservingTask(GraphTask):
    """gradviz's GraphTask over wrapped torch nodes: a dry run with no hooks that records Steps.

    Only AccumulateGrad differs: the leaf's ``.grad`` before and after are worked out, never
    written; and each Step names the torch nodes themselves, not their wrappers.
    """

    def __init__(self, roots: list, grads: list):
        super().__init__(roots, grads, keep_graph=True, dry_run=True, run_hooks=False, record_steps=True)

    def accumulate_grad(self, node: _TorchNode, grad: Any) -> tuple:
        current = node.variable.grad
        before = None if current is None else current.detach().clone()
        if grad is None:
            return before, before
        if before is None:
            return None, grad.detach().clone()
        return before, before + grad

    def make_step(self, node, input_buffer, grad_outputs, grad_inputs, grad_before, grad_after) -> Step:
        step = super().make_step(node, input_buffer, grad_outputs, grad_inputs, grad_before, grad_after)
        contributions = tuple(tuple((sender.fn if sender is not None else None, piece) for sender, piece in pieces)
                              for pieces in step.contributions)
        return replace(step, node=node.fn, contributions=contributions)


# -- running torch's engine under hooks -----------------------------------------------------------
def record_torch_backward(tensor: Any, gradient: Any = None, retain_graph: bool | None = None,
                          *, dry_run: bool = False) -> list:
    """Run torch's backward pass under hooks and return the Steps in the order the nodes ran.

    The user's own hooks run too. With ``dry_run=True`` the pass keeps the graph and every leaf's
    ``.grad`` is put back as it was (same tensor object, same values); what it cannot undo: the
    user's hooks ran, and a non-leaf that called ``retain_grad()`` got its ``.grad`` set. The whole
    pass runs when this is called: the Steps are a record of a finished pass.
    """
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
