"""The backward pass, as a generator of Steps, in PyTorch's engine order.

``backward_steps`` yields one ``Step`` per node it runs; ``backward()`` simply drains it. The
order is PyTorch's: a node runs once every gradient meant for it has arrived (they are summed
in its input buffer); among ready nodes the one created last runs first (highest sequence
number), and AccumulateGrad, numbered UINT64_MAX, runs as soon as it is ready. Ties are broken
exactly as PyTorch's ``std::priority_queue`` breaks them, because the ready queue below uses the
same heap algorithm. Everything is iterative: a 100,000-node chain needs no recursion.

A half-consumed stepper leaves the graph as far as it got: leaves reached so far have their
``.grad`` updated, nodes already run have freed their saved tensors (unless ``retain_graph``),
and the nodes not yet run keep theirs. Closing it early (``close()`` or dropping it) runs nothing
more.
"""
from __future__ import annotations

from gradviz.autograd import checks
from gradviz.autograd.node import AccumulateGrad, GraphRoot
from gradviz.autograd.step import Step
from gradviz.grad_mode import _state as _grad_state

NO_GRAD_MESSAGE = "element {} of tensors does not require grad and does not have a grad_fn"


# -- the ready queue: libstdc++'s push_heap / pop_heap over sequence numbers ----------------
def _push(heap: list, item) -> None:
    heap.append(item)
    _sift_up(heap, len(heap) - 1, 0, item)


def _sift_up(heap: list, hole: int, top: int, item) -> None:
    parent = (hole - 1) // 2
    while hole > top and heap[parent][0] < item[0]:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = item


def _pop(heap: list):
    """Remove and return the entry with the highest sequence number (``std::pop_heap``)."""
    first = heap[0]
    last = heap.pop()
    length = len(heap)
    if length:
        hole, child = 0, 0
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if heap[child][0] < heap[child - 1][0]:
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        _sift_up(heap, hole, 0, last)
    return first


# -- starting points ------------------------------------------------------------------------------
def _root_edges(tensors, gradients):
    """Pair each output with the gradient it starts from, checking what PyTorch checks."""
    from gradviz.autograd.function import gradient_edge

    edges, grads = [], []
    for i, (tensor, gradient) in enumerate(zip(tensors, gradients)):
        if not tensor._requires_grad:
            raise RuntimeError(NO_GRAD_MESSAGE.format(i))
        if gradient is None:
            if tensor.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = tensor._backend.full(tensor._data.shape, 1, tensor.dtype, tensor.device)
        else:
            if tensor.shape != gradient.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {gradient.shape} and output[{i}] "
                    f"has a shape of {tensor.shape}.")
            grad = gradient._data
        edges.append(gradient_edge(tensor))
        grads.append(grad)
    return edges, grads


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


# -- the engine -------------------------------------------------------------------------------------
def _dependencies(root) -> dict:
    """How many edges lead into each node reachable from ``root`` (an iterative walk)."""
    dependencies = {root: 0}
    stack = [root]
    while stack:
        node = stack.pop()
        for next_node, _ in node._next_functions:
            if next_node is None:
                continue
            if next_node in dependencies:
                dependencies[next_node] += 1
            else:
                dependencies[next_node] = 1
                stack.append(next_node)
    return dependencies


def _needed(root, dependencies: dict, targets: set) -> set:
    """Nodes that lie on a path to a target (``autograd.grad`` runs only those)."""
    order = [root]
    remaining = dict(dependencies)
    for node in order:  # Kahn's order: every node after all the nodes that feed it
        for next_node, _ in node._next_functions:
            if next_node is not None:
                remaining[next_node] -= 1
                if remaining[next_node] == 0:
                    order.append(next_node)
    needed = set()
    for node in reversed(order):
        if node in targets or any(n in needed for n, _ in node._next_functions if n is not None):
            needed.add(node)
    return needed


def _call_pre_hooks(node, grads: list, retain: bool = True) -> list:
    """Tensor hooks, then ``retain_grad`` (always after them, as in PyTorch), then node pre-hooks."""
    if node._tensor_pre_hooks:
        for output_nr, hooks in node._tensor_pre_hooks.items():
            for hook in tuple(hooks.values()):
                result = hook(_wrap(grads[output_nr]))
                if result is not None:
                    checks.hook_result(hook, grads[output_nr], result)
                    grads[output_nr] = result._data
    if node._retain_grad_hooks and retain:
        for output_nr, hook in node._retain_grad_hooks.items():
            hook(grads[output_nr])
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks.values()):
            result = hook(tuple(_wrap(g) for g in grads))
            if result is not None:
                grads = [_unwrap(g) for g in result]
    return grads


def _call_post_hooks(node, grad_inputs: tuple, grads: list) -> tuple:
    for hook in tuple(node._hooks.values()):
        result = hook(tuple(_wrap(g) for g in grad_inputs), tuple(_wrap(g) for g in grads))
        if result is not None:
            grad_inputs = tuple(_unwrap(g) for g in result)
    return grad_inputs


def _wrap(array):
    from gradviz.tensor import Tensor

    return None if array is None else Tensor._make(array)


def _unwrap(tensor):
    return None if tensor is None else tensor._data


def _accumulate(node: AccumulateGrad, grad, dry_run: bool, record: bool):
    """Add ``grad`` into the leaf's ``.grad``; return (before, after) copies for the Step
    (``before`` is copied only when a Step will show it)."""
    variable = node.variable
    backend = variable._backend
    current = variable._grad
    if current is None:
        # laid out like the leaf, as PyTorch's AccumulateGrad does (a transposed gradient stays viewable)
        after = backend.copy_as(grad if grad.shape == variable._data.shape else backend.broadcast_to(
            grad, variable._data.shape), variable._data)
        if not dry_run:
            variable._grad = Tensor._make(after, backend=backend)
        return None, after
    if dry_run:
        return current._data, backend.add(current._data, grad)
    before = backend.copy(current._data) if record else None
    backend.iadd(current._data, grad)
    current._vc[0] += 1
    return before, current._data


def _run_node(node, grad_outputs: list, dry_run: bool, record: bool):
    """Run one node and its hooks; the caller has switched grad mode off, as PyTorch's engine does.

    Returns ``(grad_outputs, grad_inputs, grad_before, grad_after)``, the outputs as the pre-hooks
    left them. A dry run skips ``retain_grad`` (its only effect is writing ``.grad``) but runs
    the hooks that can change gradients.
    """
    if node._tensor_pre_hooks or node._pre_hooks or (node._retain_grad_hooks and not dry_run):
        grad_outputs = _call_pre_hooks(node, grad_outputs, retain=not dry_run)
    if node._is_accumulate:
        before, after = _accumulate(node, grad_outputs[0], dry_run, record)
        return grad_outputs, (), before, after
    result = node.backward(*grad_outputs) if node._num_outputs != 1 else node.backward(grad_outputs[0])
    grad_inputs = result if type(result) is tuple else (result,)
    if node._hooks:
        grad_inputs = _call_post_hooks(node, grad_inputs, grad_outputs)
    return grad_outputs, grad_inputs, None, None


def _run_node_without_grad(node, grad_outputs: list, dry_run: bool, record: bool):
    """``_run_node`` with grad mode off for just this node (a Step is yielded after it, and the
    caller's code, which runs between Steps, must see its own grad mode)."""
    previous = _grad_state.enabled
    _grad_state.enabled = False
    try:
        return _run_node(node, grad_outputs, dry_run, record)
    finally:
        _grad_state.enabled = previous


def _execute(edges, grads, retain_graph: bool, record: bool, dry_run: bool = False, capture=None):
    """Run the backward pass from ``edges``; yield a Step per node when ``record``.

    ``capture`` maps a node to the input slots whose arriving gradient ``autograd.grad`` wants;
    those AccumulateGrad nodes are not run (no ``.grad`` is written), and only nodes on a path
    to a captured node run.
    """
    if len(edges) == 1:
        root, root_slot = edges[0]
        buffers = {root: [None] * max(root._num_outputs, root_slot + 1)}
        buffers[root][root_slot] = grads[0]
        pieces = {root: [[(None, grads[0])] for _ in buffers[root]]} if record else None
    else:
        root = GraphRoot(edges, grads)
        buffers = {root: []}
        pieces = {root: []} if record else None
    dependencies = _dependencies(root)
    needed = _needed(root, dependencies, set(capture)) if capture is not None else None
    release = not retain_graph and not dry_run
    captured = {}
    heap = [(root._sequence_nr, 0, root)]
    counter = 1
    index = 0
    # Nothing is yielded when not recording, so no user code runs between nodes: grad mode is
    # switched off once for the whole pass instead of once per node.
    previous_grad_mode = _grad_state.enabled
    if not record:
        _grad_state.enabled = False
    try:
        while heap:
            node = _pop(heap)[2]
            grad_outputs = buffers.pop(node)
            arrived = pieces.pop(node) if record else None
            is_accumulate = node._is_accumulate
            if capture is not None and node in capture:
                for slot in capture[node]:
                    captured[(node, slot)] = grad_outputs[slot]
                if is_accumulate:
                    continue
            if grad_outputs[0] is None and len(grad_outputs) == 1:
                # Every path here sent no gradient (a hook returned None): none flows on, as in PyTorch.
                grad_inputs, before, after = (None,) * len(node._next_functions), None, None
            elif record:
                grad_outputs, grad_inputs, before, after = _run_node_without_grad(node, grad_outputs, dry_run, record)
            else:
                grad_outputs, grad_inputs, before, after = _run_node(node, grad_outputs, dry_run, record)
            if release and not is_accumulate:
                node._release_variables()
            if record and not isinstance(node, GraphRoot):
                yield Step(index, node, tuple(grad_outputs), tuple(grad_inputs),
                           tuple(tuple(p) for p in arrived), before, after)
                index += 1
            for (next_node, slot), grad in zip(node._next_functions, grad_inputs):
                if next_node is None:
                    continue
                if needed is not None and next_node not in needed:
                    continue
                buffer = buffers.get(next_node)
                if buffer is None:
                    buffer = buffers[next_node] = [None] * max(next_node._num_outputs, slot + 1)
                    if record:
                        pieces[next_node] = [[] for _ in buffer]
                if grad is not None:
                    buffer[slot] = grad if buffer[slot] is None else next_node_add(buffer[slot], grad)
                    if record:
                        pieces[next_node][slot].append((node, grad))
                remaining = dependencies[next_node] - 1
                dependencies[next_node] = remaining
                if remaining == 0:
                    if next_node._is_accumulate:
                        if buffer[0] is None:  # no gradient reached this leaf: nothing to add
                            buffers.pop(next_node)
                            continue
                    _push(heap, (next_node._sequence_nr, counter, next_node))
                    counter += 1
    finally:
        if not record:
            _grad_state.enabled = previous_grad_mode
    if capture is not None:
        return captured
    return None


def next_node_add(accumulated, grad):
    """Sum two gradients arriving at the same input slot (a tensor used more than once)."""
    return accumulated + grad


# -- public entry points -------------------------------------------------------------------------
def backward_steps(tensor, gradient=None, retain_graph=None, *, dry_run: bool = False):
    """Yield one immutable Step per node as the backward pass from ``tensor`` runs.

    ``dry_run=True`` computes every gradient without writing any ``.grad`` and without freeing
    saved tensors: the widget uses it to build its trace with no side effect.
    """
    if _is_torch(tensor):
        from gradviz.autograd.torch_steps import torch_backward_steps

        yield from torch_backward_steps(tensor, gradient, retain_graph, dry_run=dry_run)
        return
    edges, grads = _root_edges([tensor], [gradient])
    yield from _execute(edges, grads, bool(retain_graph), record=True, dry_run=dry_run)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (PyTorch's semantics)."""
    if create_graph:
        raise NotImplementedError("gradviz does not record the backward pass itself (create_graph=True)")
    tensors = _as_list(tensors)
    gradients = checks.gradient_list(grad_tensors, len(tensors))
    if retain_graph is None:
        retain_graph = create_graph
    edges, grads = _root_edges(tensors, gradients)
    if inputs is not None:
        inputs = _as_list(inputs)
        results = grad(tensors, inputs, [g for g in gradients] if grad_tensors is not None else None,
                       retain_graph=retain_graph, allow_unused=True)
        _accumulate_into(inputs, results)
        return
    for _ in _execute(edges, grads, retain_graph, record=False):
        pass


def _accumulate_into(inputs, results) -> None:
    from gradviz.tensor import Tensor

    for leaf, result in zip(inputs, results):
        if result is None:
            continue
        if leaf._grad is None:
            leaf._grad = Tensor._make(leaf._backend.copy(result._data), backend=leaf._backend)
        else:
            leaf._backend.iadd(leaf._grad._data, result._data)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         allow_unused: bool | None = None, materialize_grads: bool = False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned instead of accumulated."""
    from gradviz.autograd.function import gradient_edge
    from gradviz.tensor import Tensor

    if create_graph:
        raise NotImplementedError("gradviz does not record the backward pass itself (create_graph=True)")
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    gradients = checks.gradient_list(grad_outputs, len(outputs))
    if retain_graph is None:
        retain_graph = create_graph
    for tensor in inputs:
        if not tensor._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    edges, grads = _root_edges(outputs, gradients)
    capture = {}
    targets = [gradient_edge(tensor) for tensor in inputs]
    for node, slot in targets:
        capture.setdefault(node, set()).add(slot)
    runner = _execute(edges, grads, retain_graph, record=False, capture=capture)
    try:
        while True:
            next(runner)
    except StopIteration as stop:
        captured = stop.value or {}
    results = []
    for index, (tensor, (node, slot)) in enumerate(zip(inputs, targets)):
        value = captured.get((node, slot))
        if value is None:
            if materialize_grads:
                results.append(Tensor._make(tensor._backend.full(tensor._data.shape, 0, tensor.dtype, tensor.device)))
                continue
            if not allow_unused:
                raise checks.unused_input(index)
            results.append(None)
        else:
            results.append(Tensor._make(value, backend=tensor._backend))
    return tuple(results)


def _is_torch(tensor) -> bool:
    module = type(tensor).__module__
    return module.startswith("torch") and type(tensor).__name__ in ("Tensor", "Parameter")


from gradviz.tensor import Tensor  # noqa: E402  (tensor.py imports this module lazily, inside backward())
