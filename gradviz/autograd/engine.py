"""The backward pass, in the vocabulary of PyTorch's ``torch/csrc/autograd/engine.cpp``.

Lay engine.cpp beside this file; each name here is the one it has there::

    engine.cpp                            here
    ------------------------------------  ------------------------------------------------------------
    Engine::execute                       backward(), grad(): make a GraphTask, then run it
    GraphTask                             GraphTask: the state of one backward pass
      dependencies_                         .dependencies: edges still to deliver into each node
      not_ready_                            .not_ready: input buffers of nodes still waiting
      keep_graph_                           .keep_graph (retain_graph; always on in a dry run)
      exec_info_ (ExecInfo)                 .exec_info (ExecInfo): for grad() and backward(inputs=),
                                            which nodes must run and which gradients to capture
      captured_vars_                        .captured_vars: what autograd.grad returns
      init_to_execute                       .init_to_execute
    compute_dependencies                  compute_dependencies
    ReadyQueue (a std::priority_queue)    ReadyQueue: the same heap algorithm, so even ties match
    NodeTask                              a (node, input_buffer) entry of the ready queue
    InputBuffer, InputBuffer::add         InputBuffer, .add: sums what arrives (RecordingInputBuffer
                                          also keeps the pieces, for a Step)
    Engine::thread_main                   GraphTask.execute (or .steps: one Step at a time)
    Engine::evaluate_function             GraphTask.evaluate_function
    call_function                         call_function: the node's backward formula (engine.cpp's
                                          also runs the hooks, which evaluate_function runs here)
    call_tensor_pre_hooks, call_pre_hooks,
    call_post_hooks                       the functions of the same names
    Node::release_variables               node._release_variables()
    AccumulateGrad::apply                 GraphTask.accumulate_grad
    GraphRoot                             GraphRoot (node.py), when backward starts from several tensors
    torch.autograd's _make_grads          make_grads

The order is PyTorch's: a node runs once every gradient meant for it has arrived (each edge into
it counts once, and the arrivals are summed in its input buffer); among ready nodes the one created
last runs first (highest sequence number), and AccumulateGrad, numbered UINT64_MAX, runs as soon as
it is ready. Everything is iterative: a 100,000-node chain needs no recursion.

What gradviz adds, for a learner watching: ``backward_steps`` yields an immutable ``Step`` after
each node (what arrived, the pieces that were summed, what was sent on, a leaf's ``.grad`` before
and after); ``dry_run=True`` computes every gradient but writes no ``.grad`` and frees nothing;
``run_hooks=False`` runs none of the user's hooks (tensor hooks, ``retain_grad``, node pre- and
post-hooks). A half-consumed stepper leaves the graph as far as it got: leaves reached so far have
their ``.grad`` updated, nodes already run have freed their saved tensors (unless
``retain_graph``), and the nodes not yet run keep theirs. Closing it early runs nothing more.

``create_graph=True`` (higher-order gradients): as in PyTorch, every node runs with grad mode set
to ``create_graph``. Gradients then flow as gradviz Tensors instead of arrays: ``call_function``
calls each node's ``backward_graph`` (its derivative written with gradviz's ops), input buffers sum
with ``+`` (an AddBackward0, as in PyTorch), and AccumulateGrad keeps the graph in ``.grad``
(CopyBackwards, then AddBackward0). So the backward pass is recorded by the same machinery as the
forward pass, with PyTorch's node names; each node it records has ``_order`` one more than the
node being run (1 is the forward pass), which the graph snapshot shows.
"""
from __future__ import annotations

import heapq
import sys
import threading
import warnings

import numpy as np

from gradviz.autograd import checks
from gradviz.autograd import anomaly_mode as _anomaly_mode  # anomaly mode: read in execute and call_function
from gradviz.autograd.anomaly_mode import STATE as _ANOMALY
from gradviz.autograd.function import gradient_edge
from gradviz.autograd.graph import GradientEdge
from gradviz.autograd import node as _node  # node.hook_tables_made, read per pass
from gradviz.autograd.node import GraphRoot, Node, has_user_hooks
from gradviz.autograd.step import Step, new_step
from gradviz.backends.quiet import _IGNORE, _get, _reset, _set, end_pass, silence_pass
from gradviz.grad_mode import _state as _grad_state

_MISSING = object()  # not_ready.get's default: a held gradient may itself be None
NO_GRAD_MESSAGE = "element {} of tensors does not require grad and does not have a grad_fn"
REFERENCE_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
    "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None after "
    "use to break the cycle and avoid the leak. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:1307.)")


# -- the ready queue: libstdc++'s push_heap / pop_heap over sequence numbers ----------------------
class ReadyQueue:
    """The nodes whose gradients have all arrived, popped highest sequence number first.

    PyTorch keeps them in a ``std::priority_queue`` compared by ``sequence_nr``. Nodes can share a
    number (every AccumulateGrad is UINT64_MAX), and then the heap's own algorithm decides which
    comes out first; the sift-up and sift-down below are libstdc++'s, step for step, so ties come out
    in exactly torch's order. Entries are ``(sequence_nr, node, input_buffer)``, compared on the
    number alone.
    """

    __slots__ = ("heap",)

    def __init__(self):
        self.heap = []

    def push(self, node, input_buffer) -> None:
        """``std::push_heap``: append, then sift the new entry up."""
        heap = self.heap
        entry = (node._sequence_nr, node, input_buffer)
        if heap:
            heap.append(entry)
            _sift_up(heap, len(heap) - 1, entry)
        else:  # the common case in a chain: nothing to sift past
            heap.append(entry)

    def pop(self) -> tuple:
        """``std::pop_heap``: take the top ``(node, input_buffer)``; move the hole down to a leaf,
        always towards the larger child, then sift the last entry up from there."""
        heap = self.heap
        top = heap[0]
        last = heap.pop()
        length = len(heap)
        if length:
            hole = child = 0
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
            _sift_up(heap, hole, last)
        return top[1], top[2]


def _sift_up(heap: list, hole: int, entry) -> None:
    """libstdc++'s ``__push_heap``: move parents with a smaller number down until ``entry`` fits."""
    number = entry[0]
    parent = (hole - 1) // 2
    while hole > 0 and heap[parent][0] < number:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = entry


# -- input buffers ----------------------------------------------------------------------------------
_ndarray, _generic = np.ndarray, np.generic
# a numpy scalar is made a 0-d array with its own ``__array__()``: np.asarray's answer (same dtype, a fresh
# writeable array), without np.asarray's argument parsing and dispatch (about 400 instructions a call)
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_float32, _float64 = np.float32, np.float64  # their scalar types
_ONE_F32, _ONE_F64 = _float32(1), _float64(1)  # a scalar loss's starting gradient (make_grads)


def _summed(held, grad):
    """``held + grad``, two gradients for one slot summed as PyTorch's ``InputBuffer::add`` sums them:
    with numpy's warnings off (PyTorch says nothing when the sum overflows), and a sum of arrays
    stays an array (numpy answers two 0-d arrays with a scalar, which the next formula would then
    take off its scalar path). Two 0-d float32/float64 arrays of one dtype (a scalar graph) are added
    as numpy scalars: the same IEEE addition, at a third of the ufunc's cost."""
    if type(held) is _ndarray and type(grad) is _ndarray and held.shape == () and grad.shape == ():
        dtype = held.dtype
        if (dtype is _F32 or dtype is _F64) and grad.dtype is dtype:
            token = None if _get() is _IGNORE else _set(_IGNORE)
            total = held[()] + grad[()]
            if token is not None:
                _reset(token)
            return total.__array__()
    if _get() is _IGNORE:  # inside a silenced pass (``_execute_unhooked``)
        total = held + grad
    else:
        token = _set(_IGNORE)
        try:
            total = held + grad
        finally:
            _reset(token)
    return total.__array__() if isinstance(total, _generic) else total


def _running_sum(held, grad):
    """``_summed`` for a gradient that still waits for others, in a pass whose numpy warnings are off
    (``_unhooked_loop``): the sum of 0-d float32/float64 gradients of one dtype is kept as a numpy scalar
    (no 0-d array is made for a value that only waits), and ``_last_sum`` makes it an array when the
    last gradient arrives. The same IEEE additions, in the same order, as ``_summed``'s.

    A kept sum is told by its type (a node fed by many paths, a parameter used many times, meets it again
    and again), and a gradient of its kind by the type of ``grad[()]``: the scalar of a 0-d array's dtype
    (an array of any other shape gives a view)."""
    kind = type(held)
    if kind is _float32 or kind is _float64:  # the sum of earlier gradients
        if type(grad) is kind:  # a gradient handed on as a numpy scalar (``_unhooked_loop``)
            return held + grad
        if type(grad) is _ndarray:
            value = grad[()]
            if type(value) is kind:
                return held + value
        held = held.__array__()  # a kept sum meets another kind of gradient
    elif kind is _ndarray and type(grad) is _ndarray and held.shape == () and grad.shape == ():
        dtype = grad.dtype
        if (dtype is _F32 or dtype is _F64) and held.dtype is dtype:
            return held[()] + grad[()]
    elif kind is not _ndarray and isinstance(held, _generic):
        held = held.__array__()
    return _summed(held, grad)


def _final_sum(held, grad):
    """``_last_sum`` for a loop that hands 0-d gradients on as numpy scalars (``_unhooked_loop``): the
    same additions, but a sum of numpy scalars stays one (the next formula or AccumulateGrad takes it)."""
    return held if grad is None else _running_sum(held, grad)


def _last_sum(held, grad):
    """``held + grad`` when the last gradient for a slot arrives (``_unhooked_loop``), as an array (or the
    backend's tensor); ``held`` may be a numpy scalar that ``_running_sum`` kept, made a 0-d array here."""
    kind = type(held)
    if kind is _float32 or kind is _float64:
        if grad is None:
            return held.__array__()
        if type(grad) is _ndarray:
            value = grad[()]
            if type(value) is kind:  # as in _running_sum
                return (held + value).__array__()
        held = held.__array__()
    elif kind is not _ndarray and isinstance(held, _generic):
        held = held.__array__()
    return held if grad is None else _summed(held, grad)


class InputBuffer(list):
    """The gradients arriving at one node: one slot per output of its forward op, summed as they come.

    A tensor used twice in the forward pass receives two gradients in one slot; they are added here,
    so the node runs once, on the total. It is a plain list of backend arrays (None where nothing
    has arrived), made with one ``None`` per slot: ``InputBuffer((None,) * node._num_outputs)``.
    """

    __slots__ = ()

    def add(self, slot: int, grad, sender) -> None:
        """Add ``grad`` (sent by ``sender``; None for the starting gradient) into ``slot``.

        An undefined gradient (None: every path to it was cut off, e.g. by a hook) adds nothing.
        The sum is a new array: a node may send one array along two edges.
        """
        if grad is not None:
            accumulated = self[slot]
            self[slot] = grad if accumulated is None else _summed(accumulated, grad)


class RecordingInputBuffer(InputBuffer):
    """An InputBuffer that also keeps each separate ``(sender node, gradient)`` it summed, per slot,
    so that a Step can show a learner what was added (a step recorder asks for this kind)."""

    __slots__ = ("contributions",)

    def __init__(self, slots):
        list.__init__(self, slots)
        self.contributions = [[] for _ in slots]

    def add(self, slot: int, grad, sender) -> None:
        if grad is not None:  # InputBuffer.add, written out (this runs for every edge of a trace)
            accumulated = self[slot]
            self[slot] = grad if accumulated is None else _summed(accumulated, grad)
            self.contributions[slot].append((sender, grad))


# -- which nodes run, and in what order -----------------------------------------------------------
def compute_dependencies(root) -> dict:
    """How many edges lead into each node reachable from ``root`` (an iterative walk, no recursion)."""
    dependencies = {}
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


def _dependencies_and_hooks(root) -> tuple:
    """``compute_dependencies``, and whether any node reachable from ``root`` has a hook of the user's
    (tensor hooks, ``retain_grad``, node pre- or post-hooks): a graph without one takes the unhooked
    loop of a plain backward, ``GraphTask._execute_unhooked``. The test is one read of the node's
    ``_hooked`` flag (a class default unless a hook table was ever set on it), made once per node as
    it is first reached; only a flagged node's tables are looked at. Until a hook table is first made
    (``node.hook_tables_made``; a training loop may never make one) no flag is read at all."""
    if not _node.hook_tables_made:
        return compute_dependencies(root), False
    dependencies = {}
    hooked = has_user_hooks(root)
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
                if next_node._hooked and not hooked:
                    hooked = has_user_hooks(next_node)
    return dependencies, hooked


class ExecInfo:
    """What ``autograd.grad`` (or ``backward(inputs=...)``) wants of one node.

    ``needed``: the node must run, because a node it sends gradients to must. ``captures``:
    ``(slot, output index)`` pairs, the incoming gradients that ``grad()`` returns.
    """

    __slots__ = ("needed", "captures")

    def __init__(self):
        self.needed = False
        self.captures = []


def _should_execute(exec_info: dict, node) -> bool:
    """``ExecInfo::should_execute``: the node runs, or holds a gradient ``grad()`` wants."""
    info = exec_info.get(node)
    return info is not None and (info.needed or bool(info.captures))


# -- the graph task ----------------------------------------------------------------------------------
class GraphTask:
    """The state of one backward pass from ``roots`` (edges) with starting gradients ``grads``.

    ``keep_graph``: keep the saved tensors (``retain_graph``). ``dry_run``: compute every gradient
    but write no ``.grad`` and free nothing. ``run_hooks=False``: run none of the user's hooks.
    ``record_steps``: build a ``Step`` per node (``steps()``), with the summed contributions.
    ``create_graph``: record the pass itself (gradients are Tensors, see the module docstring).
    """

    def __init__(self, roots: list, grads: list, *, keep_graph: bool, dry_run: bool = False,
                 run_hooks: bool = True, record_steps: bool = False, create_graph: bool = False):
        self.create_graph = create_graph
        self.keep_graph = keep_graph or dry_run
        self.dry_run = dry_run
        self.run_hooks = run_hooks
        self.record_steps = record_steps
        self.exec_info = None  # node -> ExecInfo; None runs every reachable node (plain backward)
        self.captured_vars = []
        self.steps_recorded = 0
        self.input_buffer_type = RecordingInputBuffer if record_steps else InputBuffer
        if len(roots) == 1:  # as PyTorch does, start at the one root node itself, with no GraphRoot
            root, slot = roots[0]
            input_buffer = self.input_buffer_type((None,) * root._num_outputs)
            input_buffer.add(slot, grads[0], None)
        else:
            root = GraphRoot(roots, grads)
            input_buffer = self.input_buffer_type(())
        self.graph_root = root
        if record_steps or dry_run or create_graph:  # never the plain loop: no hooks to look for
            self.dependencies, self.hooked = compute_dependencies(root), True
        else:
            self.dependencies, self.hooked = _dependencies_and_hooks(root)
        self.not_ready = {}  # node -> InputBuffer, for nodes still waiting for a gradient
        self.ready_queue = ReadyQueue()
        self.ready_queue.push(root, input_buffer)

    def init_to_execute(self, outputs: list, accumulate_grad: bool) -> None:
        """Run only the nodes on a path to ``outputs`` (edges).

        ``autograd.grad`` captures the gradient arriving at each output edge instead of running it;
        ``backward(inputs=...)`` (``accumulate_grad``) runs the outputs themselves. A depth-first walk
        marks a node needed when any node it sends gradients to must execute.
        """
        exec_info = self.exec_info = {}
        for index, (node, slot) in enumerate(outputs):
            info = exec_info.get(node)
            if info is None:
                info = exec_info[node] = ExecInfo()
            if accumulate_grad:
                info.needed = True
            else:
                info.captures.append((slot, index))
        self.captured_vars = [None] * (0 if accumulate_grad else len(outputs))
        root = self.graph_root
        seen = {root}
        stack = [(root, iter(root._next_functions))]
        while stack:
            node, next_edges = stack[-1]
            for child, _ in next_edges:
                if child is None:
                    continue
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child._next_functions)))
                    break
                if _should_execute(exec_info, child):  # already walked: its answer is final
                    exec_info.setdefault(node, ExecInfo()).needed = True
            else:  # every child walked: this node's answer is final; tell the parent
                stack.pop()
                if stack and _should_execute(exec_info, node):
                    exec_info.setdefault(stack[-1][0], ExecInfo()).needed = True

    # -- running -----------------------------------------------------------------------------------
    def execute(self) -> None:
        """Run the whole pass (engine.cpp's ``thread_main`` loop): pop a ready node, evaluate it.

        No user code runs between nodes here, so grad mode is switched off once for the whole pass.
        """
        ready_queue = self.ready_queue
        evaluate_function = self.evaluate_function
        if self.create_graph:
            for _ in self.steps():
                pass
            return
        previous_grad_mode = _grad_state.enabled
        _grad_state.enabled = False  # PyTorch runs nodes with grad mode = create_graph
        try:
            # anomaly mode (autograd/anomaly_mode.py) checks every node in call_function: no shortcut loops
            if self.exec_info is None and not self.record_steps and not self.dry_run and not _ANOMALY.enabled:
                self._execute_plain()
            else:
                while ready_queue.heap:
                    evaluate_function(*ready_queue.pop())
        finally:
            _grad_state.enabled = previous_grad_mode

    def _execute_plain(self) -> None:
        """``execute`` for a plain ``backward()`` (every node runs, no Steps, no dry run, no recorded
        pass): ``evaluate_function`` and ``send_on`` written out as one loop, since on a graph of
        scalars the engine's own bookkeeping costs more than the arithmetic. A graph with a user's
        hook anywhere takes ``_execute_hooked``, one without ``_execute_unhooked``."""
        if self.hooked:
            self._execute_hooked()
        else:
            self._execute_unhooked()

    def _execute_unhooked(self) -> None:
        """The plain backward of a graph in which no node has a user's hook: nothing but the gradients
        can be observed while it runs, so it takes these shortcuts, each giving the same gradients,
        summed in the same order, as ``_execute_hooked``:

        * a node with one output (every gradviz op) is queued with its bare gradient, not an
          ``InputBuffer``; a gradient that must wait for others waits bare in ``not_ready``;
        * an AccumulateGrad runs as soon as its last gradient arrives, without a trip through the
          queue (PyTorch numbers it UINT64_MAX, so it would be the next node popped anyway; only
          the order among several ready at once, which nothing here can see, may differ);
        * the queue then holds nodes of distinct sequence numbers only, so Python's ``heapq`` (in C)
          pops them in exactly the order of the libstdc++ heap that ``ReadyQueue`` copies; and a node
          made ready by the one that just ran skips the queue when no queued node has a higher number
          (it would be popped next anyway);
        * a node's only gradient is told from the last of several by its dependency count (no
          ``not_ready`` lookup for the many nodes that receive one gradient).

        A node with other than one output (GraphRoot, a custom Function) gets its ``InputBuffer``
        and ``call_function``, as in ``evaluate_function``.

        numpy's warnings are switched off once for the whole pass (``quiet.py``; PyTorch prints
        nothing for an overflow in backward), so the formulas skip their own switch. The user's code
        that can run here runs under the user's own settings: a user's Function
        (``_runs_user_code``), set back around it below, and a saved-tensor unpack hook, which a
        formula may call when it reads a saved tensor (``SavedTensor.unpack`` runs it through
        ``quiet.as_users``, which reads the state ``silence_pass`` keeps).
        """
        users = _get()
        if users is _IGNORE or _IGNORE is None:
            self._unhooked_loop(None)
            return
        tokens = silence_pass(users)
        try:
            self._unhooked_loop(users)
        finally:
            end_pass(tokens)

    def _unhooked_loop(self, users) -> None:
        """The loop of ``_execute_unhooked``. ``users``: the numpy error state a user's Function runs
        under, when the loop runs silenced; None when it does not."""
        heappush, heappop, heappushpop = heapq.heappush, heapq.heappop, heapq.heappushpop
        accumulate_grad = self.accumulate_grad
        dependencies = self.dependencies
        not_ready = self.not_ready
        release = not self.keep_graph
        accumulate_scalar = self._accumulate_scalar
        accumulate_owned = self._accumulate_owned
        missing = _MISSING
        # While numpy's warnings are off for the whole pass, a 0-d float32/float64 gradient goes from node to
        # node as a numpy scalar: a formula that takes one (``Node.scalar_backward``) gives numpy scalars back,
        # and a 0-d array (about 1,600 instructions however it is made) is made only for a node that takes
        # arrays, for a leaf's new ``.grad`` and for an InputBuffer. A gradient that waits for others waits
        # as a numpy scalar too, summed by the same additions in the same order (``_running_sum``).
        scalars = _IGNORE is not None and _get() is _IGNORE
        summed, last_sum = (_running_sum, _final_sum) if scalars else (_summed, _last_sum)
        heap = []
        for _, node, input_buffer in self.ready_queue.heap:  # the root, queued by __init__
            if node._is_accumulate:  # a leaf's own backward(): only its AccumulateGrad runs
                accumulate_grad(node, input_buffer[0])
                continue
            grad = input_buffer[0] if node._num_outputs == 1 else input_buffer
            if (scalars and type(node).scalar_backward is not Node.scalar_backward and type(grad) is _ndarray
                    and grad.shape == () and (grad.dtype is _F32 or grad.dtype is _F64)):
                grad = grad[()]  # a scalar loss's starting gradient, as the scalar the formulas hand on
            heap.append((-node._sequence_nr, node, grad))
        self.ready_queue.heap.clear()
        if not heap:
            return
        _, node, grad = heappop(heap)
        while True:  # AccumulateGrads run when their last gradient arrives, never through the heap
            next_functions = node._next_functions
            grad_inputs = None
            if type(grad) is _float32 or type(grad) is _float64:  # a 0-d gradient handed on as a numpy scalar
                grad_inputs = node.scalar_backward(grad)
                if grad_inputs is None:  # a node that takes arrays only
                    grad = grad.__array__()
            if grad_inputs is not None:  # the scalar formula ran
                pass
            elif node._runs_user_code and users is not None:  # a user's Function: the user's numpy settings
                token = _set(users)
                try:
                    grad_inputs = _unhooked_grads(node, grad, next_functions)
                finally:
                    _reset(token)
            elif node._num_outputs != 1:  # grad is the node's InputBuffer
                grad_inputs = call_function(node, grad)
            elif grad is None:  # every path here was cut off: undefined gradients flow on
                grad_inputs = (None,) * len(next_functions)
            else:
                grad_inputs = node.backward(grad)
                if type(grad_inputs) is not tuple:
                    grad_inputs = (grad_inputs,)
            if release and node._saves_tensors:
                node._release_variables()
            # The next node to run is the queued one of the highest sequence number. A node this one makes
            # ready is held in ``ready`` instead of being queued: when nothing queued comes before it (as
            # in a chain, and on most steps of a scalar graph) it runs next without a trip through the heap
            # (an entry tuple, a push and a pop saved). Sequence numbers are distinct here, so the order
            # is the heap's exactly.
            ready = None
            for (next_node, slot), grad in zip(next_functions, grad_inputs):  # send_on, written out
                if next_node is None:
                    continue
                # dependencies: edges still to deliver, but 0 once only the last of several is to come, so that a
                # node's only gradient (most nodes of a graph) is told from its last one without a not_ready lookup
                remaining = dependencies[next_node] - 1
                if not remaining:  # next_node's only gradient: nothing of it waits in not_ready
                    held = missing
                elif remaining < 0:  # the last of several: the others wait in not_ready
                    held = not_ready.pop(next_node, missing)
                else:  # more gradients are to come: this one waits, summed with earlier ones
                    dependencies[next_node] = remaining if remaining != 1 else 0
                    held = not_ready.get(next_node, missing)
                    if next_node._num_outputs == 1:
                        if held is missing or held is None:
                            not_ready[next_node] = grad
                        elif grad is not None:
                            not_ready[next_node] = summed(held, grad)
                    else:
                        if held is missing:
                            held = not_ready[next_node] = InputBuffer((None,) * next_node._num_outputs)
                        held.add(slot, _as_array(grad), node)
                    continue
                if next_node._num_outputs == 1:
                    if held is not missing and held is not None:
                        grad = last_sum(held, grad)
                else:
                    if held is missing:
                        held = InputBuffer((None,) * next_node._num_outputs)
                    held.add(slot, _as_array(grad), node)
                    grad = held
                if next_node._is_accumulate:
                    if type(grad) is _float32 or type(grad) is _float64:
                        accumulate_scalar(next_node, grad)
                    elif (held is missing and type(grad) is _ndarray and _getrefcount(grad) == _HANDED_ON_REFS
                          and not node._runs_user_code):
                        # the array this formula just made, held by nothing but this loop (see _HANDED_ON_REFS)
                        accumulate_owned(next_node, grad)
                    else:
                        accumulate_grad(next_node, grad)
                elif ready is None:
                    ready, ready_grad = next_node, grad
                else:  # a second node made ready here: the one held before waits in the heap
                    heappush(heap, (-ready._sequence_nr, ready, ready_grad))
                    ready, ready_grad = next_node, grad
            if ready is not None:
                if heap and heap[0][0] < -ready._sequence_nr:  # a queued node comes first: it runs, ready waits
                    _, node, grad = heappushpop(heap, (-ready._sequence_nr, ready, ready_grad))
                else:
                    node, grad = ready, ready_grad
            elif heap:
                _, node, grad = heappop(heap)
            else:
                return

    def _execute_hooked(self) -> None:
        """The plain backward of a graph with a user's hook somewhere: the libstdc++ heap of
        ``ReadyQueue`` (ties among AccumulateGrads come out in torch's order, which hooks can see).
        A node with hooks, and a node with other than one output (GraphRoot, a custom Function),
        goes through ``evaluate_function``, so the order and every result are the same; only Python
        calls and temporaries are saved."""
        ready_queue = self.ready_queue
        heap = ready_queue.heap
        pop = ready_queue.pop
        push = ready_queue.push
        evaluate_function = self.evaluate_function
        accumulate_grad = self.accumulate_grad
        dependencies = self.dependencies
        not_ready = self.not_ready
        release = not self.keep_graph
        run_hooks = self.run_hooks
        while heap:
            if len(heap) == 1:  # a chain: the one ready node, nothing to sift
                _, node, input_buffer = heap.pop()
            else:
                node, input_buffer = pop()
            if node._num_outputs != 1 or run_hooks and node._hooked and has_user_hooks(node):
                evaluate_function(node, input_buffer)
                continue
            grad = input_buffer[0]
            if node._is_accumulate:
                accumulate_grad(node, grad)
                continue
            next_functions = node._next_functions
            if grad is None:  # every path here was cut off: undefined gradients flow on
                grad_inputs = (None,) * len(next_functions)
            else:
                grad_inputs = node.backward(grad)
                if type(grad_inputs) is not tuple:
                    grad_inputs = (grad_inputs,)
            if release:
                node._release_variables()
            for (next_node, slot), grad in zip(next_functions, grad_inputs):  # send_on, written out
                if next_node is None:
                    continue
                remaining = dependencies[next_node] - 1
                dependencies[next_node] = remaining
                next_buffer = not_ready.get(next_node)
                if next_buffer is None:  # the first gradient for next_node
                    if next_node._num_outputs == 1:  # the gradient is the buffer's one slot (None: none yet)
                        next_buffer = InputBuffer((grad,))
                    else:
                        next_buffer = InputBuffer((None,) * next_node._num_outputs)
                        next_buffer[slot] = grad
                    if remaining:
                        not_ready[next_node] = next_buffer
                else:
                    if not remaining:
                        del not_ready[next_node]
                    if grad is not None:
                        accumulated = next_buffer[slot]
                        next_buffer[slot] = grad if accumulated is None else _summed(accumulated, grad)
                if not remaining:
                    if heap:
                        push(next_node, next_buffer)
                    else:  # ReadyQueue.push into an empty heap
                        heap.append((next_node._sequence_nr, next_node, next_buffer))

    def steps(self):
        """Run the pass one node at a time, yielding a Step after each.

        The caller's code runs between Steps and must see its own grad mode, so grad mode is off
        only while a node runs. Closing the generator early runs nothing more.
        """
        ready_queue = self.ready_queue
        evaluate_function = self.evaluate_function
        create_graph = self.create_graph
        while ready_queue.heap:
            node, input_buffer = ready_queue.pop()
            previous_grad_mode, previous_order = _grad_state.enabled, _grad_state.backward_order
            _grad_state.enabled = create_graph
            counter = None
            if create_graph:  # what this node's formula records is one order higher than the node
                _grad_state.backward_order = node._order + 1
                counter = _device_thread_counter(input_buffer)
                if counter is not None:
                    _number_nodes_with(counter)
            try:
                step = evaluate_function(node, input_buffer)
            finally:
                _grad_state.enabled, _grad_state.backward_order = previous_grad_mode, previous_order
                if counter is not None:
                    _number_nodes_with(_MAIN_SEQUENCE)
            if step is not None:
                yield step

    def all_steps(self) -> list:
        """Every Step ``steps()`` yields, made in one loop with grad mode set once for the whole pass:
        for a pass in which no code of the caller runs between nodes (a trace), so nothing can see
        grad mode between them. A node's own code (a custom Function's backward) sees what it sees
        under ``steps()``."""
        ready_queue = self.ready_queue
        heap = ready_queue.heap
        pop = ready_queue.pop
        evaluate_function = self.evaluate_function
        create_graph = self.create_graph
        made = []
        previous_grad_mode, previous_order = _grad_state.enabled, _grad_state.backward_order
        _grad_state.enabled = create_graph
        try:
            while heap:
                node, input_buffer = pop()
                if create_graph:  # what this node's formula records is one order higher than the node
                    _grad_state.backward_order = node._order + 1
                    _number_nodes_with(_device_thread_counter(input_buffer) or _MAIN_SEQUENCE)
                step = evaluate_function(node, input_buffer)
                if step is not None:
                    made.append(step)
        finally:
            _grad_state.enabled, _grad_state.backward_order = previous_grad_mode, previous_order
            if create_graph:
                _number_nodes_with(_MAIN_SEQUENCE)
        return made

    def evaluate_function(self, node, input_buffer):
        """Run one ready node and send its gradients on (engine.cpp's ``evaluate_function``).

        Capture what ``grad()`` asked for; pre-hooks; the node (``call_function``, or the leaf's
        accumulation); post-hooks; free the node's saved tensors unless the graph is kept; add each
        gradient it produced into the input buffer of the node it is meant for, queueing that node
        once its last gradient has arrived. Returns the Step when recording.
        """
        grad_outputs = input_buffer
        exec_info = self.exec_info
        if exec_info is not None and not self.capture(node, grad_outputs):
            return None
        run_hooks = self.run_hooks
        hooked = run_hooks and node._hooked  # the tables are read only on a node that ever had one
        if hooked and (node._tensor_pre_hooks or node._retain_grad_hooks or node._pre_hooks):
            grad_outputs = call_tensor_pre_hooks(node, grad_outputs, retain_grad=not self.dry_run, task=self)
            if node._pre_hooks:
                grad_outputs = call_pre_hooks(node, grad_outputs)
        if node._is_accumulate:
            grad_before, grad_after = self.accumulate_grad(node, grad_outputs[0])
            grad_inputs = ()
        else:
            grad_before = grad_after = None
            grad_inputs = call_function(node, grad_outputs, self.create_graph)
        if hooked and node._hooks:
            grad_inputs = call_post_hooks(node, grad_inputs, grad_outputs)
        if not self.keep_graph and not node._is_accumulate:  # AccumulateGrad saves nothing
            node._release_variables()

        self.send_on(node, node._next_functions, grad_inputs)

        if self.record_steps and type(node) is not GraphRoot:  # GraphRoot is the engine's, not the user's
            return self.make_step(node, input_buffer, grad_outputs, grad_inputs, grad_before, grad_after)
        return None

    def send_on(self, node, next_functions: tuple, grad_inputs: tuple) -> None:
        """Add each gradient ``node`` produced into the input buffer of the node it is meant for
        (one per edge), queueing that node once its last gradient has arrived."""
        dependencies = self.dependencies
        not_ready = self.not_ready
        exec_info = self.exec_info
        record = self.record_steps
        for (next_node, slot), grad in zip(next_functions, grad_inputs):
            if next_node is None:
                continue
            remaining = dependencies[next_node] - 1
            dependencies[next_node] = remaining
            next_buffer = not_ready.get(next_node)
            if next_buffer is None:  # the first gradient for next_node
                if exec_info is not None and not _should_execute(exec_info, next_node):
                    continue
                next_buffer = self.input_buffer_type((None,) * next_node._num_outputs)
                if remaining:
                    not_ready[next_node] = next_buffer
            elif not remaining:
                del not_ready[next_node]
            if record:
                if grad is not None:  # RecordingInputBuffer.add, written out
                    accumulated = next_buffer[slot]
                    next_buffer[slot] = grad if accumulated is None else _summed(accumulated, grad)
                    next_buffer.contributions[slot].append((node, grad))
            elif grad is not None:  # InputBuffer.add, written out: this runs for every edge
                accumulated = next_buffer[slot]
                next_buffer[slot] = grad if accumulated is None else _summed(accumulated, grad)
            if not remaining:
                self.ready_queue.push(next_node, next_buffer)

    def capture(self, node, grad_outputs: list) -> bool:
        """Keep the incoming gradients ``grad()`` asked for; say whether ``node`` must run.

        As in PyTorch, a captured gradient has been through the tensor's hooks when the node does not
        run (they would not run otherwise), and is taken as it arrived when the node does run.
        """
        info = self.exec_info.get(node)
        needed = info is not None and info.needed
        if not needed and self.run_hooks:
            grad_outputs = call_tensor_pre_hooks(node, grad_outputs, retain_grad=not self.dry_run, task=self)
        if info is not None:
            for slot, index in info.captures:
                self.captured_vars[index] = grad_outputs[slot]
        return needed

    def will_execute(self, node) -> bool:
        """``torch._C._will_engine_execute_node``: whether this pass runs ``node`` (or, for ``grad()``,
        captures a gradient at it). ``register_multi_grad_hook`` asks, to know how many of its tensors
        will see a gradient."""
        if self.exec_info is not None:
            info = self.exec_info.get(node)
            if node._is_accumulate and info is not None and info.captures:  # a leaf grad() was asked about
                raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                                   "autograd.grad(). This is currently not supported.")
            return _should_execute(self.exec_info, node)
        return node is self.graph_root or node in self.dependencies

    def accumulate_grad(self, node, grad) -> tuple:
        """Add ``grad`` into the leaf's ``.grad`` (``AccumulateGrad::apply``); a dry run only works out
        what ``.grad`` would become. Returns ``(.grad before, .grad after)`` for the Step; ``before``
        is copied only when a Step will show it."""
        variable = node.variable
        backend = variable._backend
        current = variable._grad
        if grad is None:  # nothing arrived: .grad stays as it is
            held = None if current is None else current._data
            return held, held
        if self.create_graph:
            return self.accumulate_grad_graph(variable, grad)
        if current is None:
            if grad.shape != variable._data.shape:
                grad = backend.broadcast_to(grad, variable._data.shape)
            # laid out as PyTorch's AccumulateGrad lays it out (the leaf's strides, or the gradient's own where
            # they obey the leaf's layout contract: see the backends' copy_for_grad)
            after = backend.copy_for_grad(grad, variable._data)
            if not self.dry_run:
                variable._grad = Tensor._make(after, backend=backend)
            return None, after
        if self.dry_run:
            return current._data, backend.add(current._data, grad)
        data = current._data
        before = backend.copy(data) if self.record_steps else None
        if (type(data) is _ndarray and data.shape == () and type(grad) is _ndarray and grad.shape == ()
                and grad.dtype is data.dtype and (grad.dtype is _F32 or grad.dtype is _F64)):
            # a scalar parameter: the backend's iadd as numpy scalars and a store (the same addition)
            token = None if _get() is _IGNORE else _set(_IGNORE)
            data[()] = data[()] + grad[()]
            if token is not None:
                _reset(token)
        else:
            backend.iadd(data, grad)
        current._vc[0] += 1
        return before, current._data

    def _accumulate_scalar(self, node, grad) -> None:
        """``accumulate_grad`` in the unhooked loop for a gradient handed on as a numpy scalar (float32 or
        float64). A 0-d leaf's first ``.grad`` is a fresh 0-d array of it (what ``copy_for_grad`` makes of a
        0-d gradient for a 0-d leaf); a 0-d ``.grad`` of its dtype has it added in place, one version bump
        (as ``accumulate_grad`` adds two 0-d arrays); anything else takes ``accumulate_grad`` with the array."""
        variable = node.variable
        current = variable._grad
        if current is None:
            data = variable._data
            if type(data) is _ndarray and data.shape == ():
                variable._grad = Tensor._make(grad.__array__(), backend=variable._backend)
                return
        else:
            data = current._data
            if type(data) is _ndarray and data.shape == () and data.dtype is (_F32 if type(grad) is _float32 else _F64):
                data[()] = data[()] + grad  # the pass is silenced (_unhooked_loop): no error state to set
                current._vc[0] += 1
                return
        self.accumulate_grad(node, grad.__array__())

    def _accumulate_owned(self, node, grad) -> None:
        """``accumulate_grad`` in the unhooked loop for an array that nothing but the loop holds (a formula's
        fresh result, handed to this one leaf only): a leaf's first ``.grad`` takes it as it is, as PyTorch's
        AccumulateGrad steals a gradient nobody else refers to (``use_count() <= 1``) that obeys the leaf's
        layout contract. Taken only where ``copy_for_grad`` would make an array of the same strides, bits and
        dtype (a row-major leaf, a row-major gradient of its shape with no 0 stride, owning its writeable memory):
        the copy, which nothing could tell from it, is saved (about 6,000 instructions a leaf). Anything else
        takes ``accumulate_grad``."""
        variable = node.variable
        data = variable._data
        if variable._grad is None and type(data) is _ndarray and grad.base is None and grad.shape == data.shape:
            flags = grad.flags
            if flags.c_contiguous and flags.writeable and data.flags.c_contiguous and 0 not in grad.strides:
                variable._grad = Tensor._make(grad, backend=variable._backend)
                return
        self.accumulate_grad(node, grad)

    def accumulate_grad_graph(self, variable, grad) -> tuple:
        """``create_graph=True``: ``.grad`` keeps the gradient's graph, as PyTorch's AccumulateGrad does
        with grad mode on: a copy of the first gradient (CopyBackwards), then ``.grad + grad``."""
        current = variable._grad
        before = None if current is None else current._data
        if grad.shape != variable.shape:
            grad = grad.expand(variable.shape)
        if self.dry_run:
            return before, (grad._data if current is None else variable._backend.add(before, grad._data))
        if current is None:
            copy = Tensor._make(variable._backend.copy_for_grad(grad._data, variable._data, steal=False),
                                backend=variable._backend)
            variable._grad = copy.copy_(grad) if grad._requires_grad else copy
        else:
            variable._grad = current + grad
        return before, variable._grad._data

    def make_step(self, node, input_buffer, grad_outputs, grad_inputs, grad_before, grad_after) -> Step:
        """The one place a Step is built: what arrived, the pieces summed, what was sent on (as arrays,
        also when ``create_graph`` made them Tensors)."""
        index = self.steps_recorded
        self.steps_recorded = index + 1
        pieces_per_output = input_buffer.contributions
        if self.create_graph or _any_tensor(grad_outputs) or _any_tensor(grad_inputs):
            contributions = tuple(tuple((sender, _array(grad)) for sender, grad in pieces)
                                  for pieces in pieces_per_output)
            grad_outputs, grad_inputs = tuple(_array(g) for g in grad_outputs), tuple(_array(g) for g in grad_inputs)
        else:  # arrays already (a piece is one of grad_outputs' summands, an array too)
            contributions = tuple(map(tuple, pieces_per_output))
            grad_outputs, grad_inputs = tuple(grad_outputs), tuple(grad_inputs)
        return new_step(index, node, grad_outputs, grad_inputs, contributions, grad_before, grad_after)


# -- calling a node and its hooks ----------------------------------------------------------------------
def _as_array(grad):
    """A gradient for an InputBuffer (which holds arrays): a numpy scalar handed on by ``_unhooked_loop``
    made a 0-d array; anything else as it is."""
    return grad.__array__() if type(grad) is _float32 or type(grad) is _float64 else grad


def _refs_of_a_handed_on_gradient() -> int:
    """``sys.getrefcount`` of an object that only a tuple of gradients holds, read inside a loop over it of the
    shape of ``_unhooked_loop``'s ``send_on`` (the loop's variable, the iterator's kept item tuple and the call's
    argument hold it too: worked out here, by the interpreter that runs the loop, not assumed)."""
    for (_node, _slot), grad in zip(((None, 0),), (object(),)):
        return _getrefcount(grad)


# A gradient in _unhooked_loop with exactly this many references is held by nothing but the formula's result
# tuple, once, and the loop: no other edge, no user's code, no view (a view holds its base), so a leaf may
# take it without a copy (``_accumulate_owned``). One more reference anywhere means it is copied, as before.
_getrefcount = sys.getrefcount
_HANDED_ON_REFS = _refs_of_a_handed_on_gradient()


def _unhooked_grads(node, grad, next_functions) -> tuple:
    """What ``_execute_unhooked``'s loop computes for one node, as a function (for a user's Function)."""
    if node._num_outputs != 1:
        return call_function(node, grad)
    if grad is None:
        return (None,) * len(next_functions)
    grad_inputs = node.backward(grad)
    return grad_inputs if type(grad_inputs) is tuple else (grad_inputs,)


def call_function(node, grad_outputs: list, create_graph: bool = False) -> tuple:
    """The node's backward formula on the gradients that arrived: one gradient per ``next_functions``.

    When no gradient arrived at all (every path here was cut off), undefined gradients flow on
    without running the formula, as PyTorch's generated backward functions do. With
    ``create_graph`` the gradients are Tensors and the node's recorded form runs.
    """
    if _ANOMALY.enabled:  # anomaly mode (autograd/anomaly_mode.py): NaN check, forward traceback on failure
        return _anomaly_mode.checked_call(_call_formula, node, grad_outputs, create_graph)
    return _call_formula(node, grad_outputs, create_graph)


def _call_formula(node, grad_outputs: list, create_graph: bool) -> tuple:
    """``call_function``'s work: the formula, or undefined gradients when none arrived."""
    formula = node.backward_graph if create_graph else node.backward
    if node._num_outputs == 1:  # every gradviz op has one output (GraphRoot none, a custom Function any)
        grad = grad_outputs[0]
        if grad is None:
            return (None,) * len(node._next_functions)
        grad_inputs = formula(grad)
    else:
        grad_inputs = formula(*grad_outputs)
    return grad_inputs if type(grad_inputs) is tuple else (grad_inputs,)


class _Running(threading.local):
    task = None  # the GraphTask whose tensor hooks this thread is running


_running = _Running()


def current_graph_task():
    """The backward pass (GraphTask) whose tensor hooks are running in this thread, else None: what
    ``torch._C._current_graph_task_id`` identifies, for ``autograd.graph.register_multi_grad_hook``."""
    return _running.task


def call_tensor_pre_hooks(node, grads: list, retain_grad: bool = True, task=None) -> list:
    """Hooks registered on the tensors this node produced, then ``retain_grad`` (PyTorch always runs
    it after them, so ``.grad`` holds what the hooks returned). While they run, ``task`` is this
    thread's ``current_graph_task()``."""
    if not node._hooked:  # never had a hook table: nothing to run
        return grads
    if node._tensor_pre_hooks:
        previous, _running.task = _running.task, task
        try:
            for output_nr, hooks in node._tensor_pre_hooks.items():
                for hook in tuple(hooks.values()):
                    result = hook(_wrap(grads[output_nr]))
                    if result is not None:
                        checks.hook_result(hook, _array(grads[output_nr]), result)
                        grads[output_nr] = result if isinstance(grads[output_nr], Tensor) else result._data
        finally:
            _running.task = previous
    if retain_grad and node._retain_grad_hooks:
        for output_nr, hook in node._retain_grad_hooks.items():
            if grads[output_nr] is not None:
                hook(_array(grads[output_nr]))
    return grads


def call_pre_hooks(node, grads: list) -> list:
    """``node.register_prehook`` hooks: each sees the gradients arriving and may replace them."""
    for hook in tuple(node._pre_hooks.values()):
        result = hook(tuple(_wrap(g) for g in grads))
        if result is not None:
            grads = [_unwrap(g, like) for g, like in zip(result, grads)]
    return grads


def call_post_hooks(node, grad_inputs: tuple, grad_outputs: list) -> tuple:
    """``node.register_hook`` hooks: each sees what the node sends on and may replace it."""
    for hook in tuple(node._hooks.values()):
        result = hook(tuple(_wrap(g) for g in grad_inputs), tuple(_wrap(g) for g in grad_outputs))
        if result is not None:
            grad_inputs = tuple(_unwrap(g, like) for g, like in zip(result, grad_inputs))
    return grad_inputs


def _wrap(gradient):
    """A gradient as a hook sees it: a Tensor (already one under ``create_graph``). Two 0-d numpy
    gradients summed (a tensor used twice) make a numpy scalar, which is made a 0-d array again."""
    if gradient is None or isinstance(gradient, Tensor):
        return gradient
    return Tensor._make(np.asarray(gradient) if isinstance(gradient, np.generic) else gradient)


def _unwrap(tensor, like):
    """What a hook returned, in the engine's kind: an array, or a Tensor under ``create_graph``."""
    if tensor is None:
        return None
    return tensor if isinstance(like, Tensor) else tensor._data


def _array(gradient):
    """A gradient as a Step holds it: a backend array."""
    return gradient._data if isinstance(gradient, Tensor) else gradient


def _any_tensor(gradients) -> bool:
    for gradient in gradients:
        if isinstance(gradient, Tensor):
            return True
    return False


# -- starting points --------------------------------------------------------------------------------
def make_grads(outputs: list, grad_outputs: list, create_graph: bool = False) -> list:
    """The gradient each output starts from, checked as PyTorch checks it (``_make_grads``): arrays,
    or Tensors under ``create_graph`` (a given gradient keeps its own graph)."""
    grads = []
    for i, (tensor, gradient) in enumerate(zip(outputs, grad_outputs)):
        if type(tensor) is GradientEdge:  # (autograd.graph.get_gradient_edge): the gradient must be given
            if gradient is None:
                raise RuntimeError("grad_outputs must be given for a GradientEdge output: gradviz's nodes do not "
                                   "keep the shape of the gradient they expect")
            grads.append(gradient if create_graph else gradient._data)
            continue
        if not tensor._requires_grad:
            raise RuntimeError(NO_GRAD_MESSAGE.format(i))
        if gradient is None:
            data = tensor._data
            if type(data) is _ndarray and data.shape == () and (data.dtype is _F32 or data.dtype is _F64):
                # a scalar loss (the usual backward()): the backend's full((), 1, dtype) made from the dtype's
                # own scalar, without np.full's Python-level work (several thousand instructions a call); the scalar
                # is made once (np.float32(1) costs more than the array made of it)
                grads.append((_ONE_F32 if data.dtype is _F32 else _ONE_F64).__array__())
                continue
            if tensor.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grads.append(tensor._backend.full(tensor._data.shape, 1, tensor.dtype, tensor.device))
        else:
            if tensor.shape != gradient.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {gradient.shape} and output[{i}] "
                    f"has a shape of {tensor.shape}.")
            grads.append(gradient if create_graph else gradient._data)
    if create_graph:
        grads = [g if isinstance(g, Tensor) else Tensor._make(g, backend=t._backend) for g, t in zip(grads, outputs)]
    return grads


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) and type(value) is not GradientEdge else [value]


def _graph_task(tensors, grad_tensors, **options) -> GraphTask:
    tensors = _as_list(tensors)
    # gradient_list(None, n), without its call (it imports Tensor on every call): the usual backward()
    grad_list = [None] * len(tensors) if grad_tensors is None else checks.gradient_list(grad_tensors, len(tensors))
    grads = make_grads(tensors, grad_list, options.get("create_graph", False))
    return GraphTask([_edge(tensor) for tensor in tensors], grads, **options)


def _edge(tensor_or_edge) -> tuple:
    """``gradient_edge`` of a tensor; a ``GradientEdge`` (``autograd.graph.get_gradient_edge``) is one already."""
    if type(tensor_or_edge) is GradientEdge:
        return (tensor_or_edge.node, tensor_or_edge.output_nr)
    return gradient_edge(tensor_or_edge)


# -- other frameworks' tensors -----------------------------------------------------------------------
_foreign_engines: list = []


def register_foreign_engine(accepts, steps) -> None:
    """Let a library above the core step another framework's tensors: ``accepts(tensor)`` says whether ``steps(tensor, gradient, retain_graph, dry_run=...)`` (a generator of Steps) handles it."""
    _foreign_engines.append((accepts, steps))


# -- public entry points ---------------------------------------------------------------------------------
_warned_reference_cycle = False

def backward_steps(tensor, gradient=None, retain_graph=None, *, dry_run: bool = False, run_hooks: bool = True,
                   create_graph: bool = False):
    """Yield one immutable Step per node as the backward pass from ``tensor`` runs.

    ``dry_run=True`` computes every gradient without writing any ``.grad`` and without freeing saved
    tensors. ``run_hooks=False`` runs none of the user's hooks (tensor hooks, ``retain_grad``, node
    pre- and post-hooks), so the gradients are the formulas' own: with both, stepping is a pure
    observation. ``create_graph=True`` records the pass (see ``backward``). A tensor of another
    framework goes to the engine registered for it
    (``register_foreign_engine``); ``run_hooks=False`` is passed on to it only when asked for.
    """
    for accepts, foreign_steps in _foreign_engines:
        if accepts(tensor):
            options = {"dry_run": dry_run} if run_hooks else {"dry_run": dry_run, "run_hooks": False}
            yield from foreign_steps(tensor, gradient, retain_graph, **options)
            return
    keep_graph = bool(create_graph if retain_graph is None else retain_graph)
    task = _graph_task(tensor, gradient, keep_graph=keep_graph, dry_run=dry_run, run_hooks=run_hooks,
                       record_steps=True, create_graph=create_graph)
    yield from task.steps()


def traced_steps(tensor, gradient=None) -> tuple:
    """``tuple(backward_steps(tensor, gradient, retain_graph=True, dry_run=True, run_hooks=False))``:
    a trace, which runs no hook, so its Steps are made in one loop (``GraphTask.all_steps``)."""
    for accepts, foreign_steps in _foreign_engines:
        if accepts(tensor):
            return tuple(foreign_steps(tensor, gradient, True, dry_run=True, run_hooks=False))
    task = _graph_task(tensor, gradient, keep_graph=True, dry_run=True, run_hooks=False, record_steps=True,
                       create_graph=False)
    return tuple(task.all_steps())


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (PyTorch's semantics).

    With ``inputs``, only those tensors' ``.grad`` is filled (a non-leaf among them retains its
    grad), and only the nodes on a path to them run. ``create_graph=True`` records the pass, so
    ``.grad`` has a graph of its own (and, as in PyTorch, ``retain_graph`` defaults to it).
    """
    inputs = _as_list(inputs) if inputs is not None else None
    if inputs == []:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    global _warned_reference_cycle
    if create_graph and not _warned_reference_cycle:  # PyTorch warns once per process
        _warned_reference_cycle = True
        warnings.warn(REFERENCE_CYCLE_WARNING, UserWarning, stacklevel=3)
    keep_graph = bool(create_graph if retain_graph is None else retain_graph)
    task = _graph_task(tensors, grad_tensors, keep_graph=keep_graph, create_graph=bool(create_graph))
    if inputs is not None:
        for tensor in inputs:
            if type(tensor) is not GradientEdge:
                tensor.retain_grad()  # as in PyTorch: a no-op on a leaf, and an error without requires_grad
        task.init_to_execute([_edge(tensor) for tensor in inputs], accumulate_grad=True)
    task.execute()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned instead of accumulated.

    ``create_graph=True`` records the pass, so the returned gradients can be differentiated
    again. ``only_inputs`` is deprecated and ignored, as in PyTorch.
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    if is_grads_batched:  # one pass per row of the batched grad_outputs (see _batched_grad)
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    inputs = _as_list(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for tensor in inputs:
        if type(tensor) is not GradientEdge and not tensor._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    keep_graph = bool(create_graph if retain_graph is None else retain_graph)
    task = _graph_task(outputs, grad_outputs, keep_graph=keep_graph, create_graph=bool(create_graph))
    task.init_to_execute([_edge(tensor) for tensor in inputs], accumulate_grad=False)
    task.execute()
    results = []
    for index, (tensor, captured) in enumerate(zip(inputs, task.captured_vars)):
        if isinstance(captured, Tensor):
            results.append(captured)
        elif captured is not None:
            results.append(Tensor._make(captured, backend=None if type(tensor) is GradientEdge else tensor._backend))
        elif materialize_grads and type(tensor) is GradientEdge:
            raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
        elif materialize_grads:  # as torch: zeros laid out like the input, which require grad under create_graph
            results.append(zeros_like(tensor, requires_grad=bool(create_graph)))
        elif allow_unused:
            results.append(None)
        else:
            raise checks.unused_input(index)
    return tuple(results)


# -- autograd.grad(..., is_grads_batched=True) ----------------------------------------------------------------
def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """PyTorch vmaps the backward pass over the first dim of each grad_output; gradviz runs it once per row, with
    the same checks, and stacks each input's gradients along a new first dim (a None stays None)."""
    from gradviz.ops import stack
    from gradviz.tensor import Size

    outputs = _as_list(outputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    grad_outputs = _as_list(grad_outputs)
    rows = []
    for index, (output, batched) in enumerate(zip(outputs, grad_outputs)):
        if batched is None:
            if output.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            batched = output.new_ones(())
        elif batched.ndim == 0:  # PyTorch's check reads grad[0] first
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        if tuple(batched.shape[1:]) != tuple(output.shape):
            # (PyTorch's message shows grad[0].shape[1:], the row's shape less its first dim)
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                f"output, but a mismatch was detected: grad_output[{index}] has a shape of {Size(batched.shape[2:])!r} and "
                f"output[{index}] has a shape of {output.shape!r}. If you only want some tensors in `grad_output` to "
                "be considered batched, consider using vmap.")
        if batched.ndim == 0:
            raise ValueError("vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but that input is a "
                             "Tensor of dimensionality 0 so expected in_dim to satisfy 0 <= in_dim < 0.")
        rows.append(batched)
    sizes = [batched.shape[0] for batched in rows]
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} "
                         "for the mapped dimension")
    if create_graph:  # one pass with the batch as a leading dim, as PyTorch's vmap records it (see batched.py)
        from gradviz.autograd.batched import vmapped_pass

        results = vmapped_pass(outputs, _as_list(inputs), rows, retain_graph)
        if results is not None:
            return tuple(_unused_batched(result, tensor, index, allow_unused, materialize_grads)
                         for index, (result, tensor) in enumerate(zip(results, _as_list(inputs))))
    per_row = []
    for row in range(sizes[0]):
        last = row == sizes[0] - 1
        per_row.append(grad(outputs, inputs, [batched[row] for batched in rows],
                            retain_graph=retain_graph if last else True, create_graph=create_graph,
                            allow_unused=allow_unused or materialize_grads))
    # an unused input's materialized gradient is one unbatched zeros_like, as PyTorch's vmap leaves it
    return tuple(stack(list(column)) if column[0] is not None else
                 tensor.new_zeros(tuple(tensor.shape)) if materialize_grads else None
                 for column, tensor in zip(zip(*per_row), _as_list(inputs)))


def _unused_batched(result, tensor, index, allow_unused, materialize_grads):
    """An input the batched pass did not reach: None, one unbatched zeros_like, or the unused-input error."""
    if result is not None:
        return result
    if materialize_grads:
        return tensor.new_zeros(tuple(tensor.shape))
    if allow_unused:
        return None
    raise checks.unused_input(index)


# tensor.py reaches this package through the ops, after Tensor
from gradviz.tensor import Tensor, zeros_like  # noqa: E402


# -- the thread a create_graph pass records its nodes on ------------------------------------------------------
# PyTorch runs a node whose incoming gradients are on a GPU on that device's own worker thread, and it numbers
# nodes (``sequence_nr``) per thread. So the nodes a ``create_graph`` pass records on a GPU are numbered from
# that thread's counter, which starts at 0 and lasts as long as the process, not from the caller's; the second
# backward, which runs nodes by those numbers, then runs them in another order than on the CPU. gradviz keeps
# one counter per GPU and numbers with it while such a node runs.
import itertools  # noqa: E402

from gradviz.autograd import function as function_module, node as node_module  # noqa: E402

_MAIN_SEQUENCE = node_module._sequence
_DEVICE_SEQUENCES = {}  # CUDA device index -> the node counter of that device's worker thread


def _device_thread_counter(input_buffer):
    """The counter of the GPU thread PyTorch would run this node on (the device of its first gradient not on
    the CPU), or None for the caller's thread."""
    for grad in input_buffer:
        data = grad._data if isinstance(grad, Tensor) else grad
        if data is not None and type(data) is not np.ndarray and getattr(data, "is_cuda", False):
            index = data.device.index or 0
            counter = _DEVICE_SEQUENCES.get(index)
            if counter is None:
                counter = _DEVICE_SEQUENCES[index] = itertools.count()
            return counter
    return None


def _number_nodes_with(counter) -> None:
    """Number the nodes made from now on with ``counter`` (recording reads ``_sequence`` in both modules)."""
    node_module._sequence = function_module._sequence = counter
