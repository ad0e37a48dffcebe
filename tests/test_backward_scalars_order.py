"""The plain backward of a graph without hooks (``GraphTask._unhooked_loop``) on random scalar graphs.

That loop keeps the next node to run out of the heap when nothing queued comes before it, and tells a
node's only gradient from the last of several by its dependency count alone (no ``not_ready``
lookup). These tests draw random graphs of 0-d ops (fan-out: values used again, leaves used several
times, shared subexpressions; fan-in: sums of many paths) and check, against the general loop
(``_execute_hooked``, the libstdc++ heap of ``ReadyQueue``) and against PyTorch 2.13 running the same
graph: the order in which nodes run (seen through users' Functions that note their backward), and
every leaf's gradient, bit for bit, after one pass and after a second pass over a retained graph.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gradviz
from gradviz.autograd import engine

DTYPES = {"float32": np.float32, "float64": np.float64}

# the ops a step may record: (operands, what it computes); every one is exact IEEE arithmetic in both
# libraries (no libm call whose last bit could differ), so the gradients must agree bit for bit
OPS = {
    "add": (2, lambda a, b: a + b),
    "sub": (2, lambda a, b: a - b),
    "mul": (2, lambda a, b: a * b),
    "square": (1, lambda a: a ** 2),
    "cube": (1, lambda a: a ** 3),
    "scale": (1, lambda a: a * 0.75),
    "shift": (1, lambda a: a + 1.5),
}


def marker(lib, log):
    """A user's Function that passes its input through and notes its label when its backward runs."""
    class Mark(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, label):
            ctx.label = label
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            log.append(ctx.label)
            return grad, None

    return Mark


def graphs(draw):
    """A random graph: leaves (some not requiring grad), steps (op, operand indices, marked?) over every
    value made so far, and the values summed into the loss (any value, possibly twice)."""
    leaves = draw(st.lists(st.tuples(st.floats(-2, 2, width=32), st.booleans()), min_size=1, max_size=4))
    steps = []
    for index in range(draw(st.integers(1, 14))):
        op = draw(st.sampled_from(sorted(OPS)))
        available = len(leaves) + index
        operands = [draw(st.integers(0, available - 1)) for _ in range(OPS[op][0])]
        steps.append((op, operands, draw(st.booleans())))
    total = len(leaves) + len(steps)
    loss = draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=4))
    return leaves, steps, loss


def run(lib, dtype, graph, *, hooked=False, passes=1):
    """Build ``graph`` in ``lib``, run ``passes`` backward passes; the marks in the order they ran and
    each leaf's gradient (None where it has none)."""
    leaves, steps, loss_terms = graph
    log = []
    mark = marker(lib, log)
    values = [lib.tensor(np.asarray(value, dtype=dtype), requires_grad=requires) for value, requires in leaves]
    for label, (op, operands, marked) in enumerate(steps):
        value = OPS[op][1](*(values[i] for i in operands))
        values.append(mark.apply(value, label) if marked else value)
    loss = values[loss_terms[0]]
    for index in loss_terms[1:]:
        loss = loss + values[index]
    if not loss.requires_grad:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow is allowed: both say nothing
        for _ in range(passes):
            if hooked:  # the general loop, as a graph with a hook somewhere takes it
                task = engine.GraphTask([engine.gradient_edge(loss)], engine.make_grads([loss], [None]),
                                        keep_graph=passes > 1)
                task.hooked = True
                task.execute()
            else:
                loss.backward(retain_graph=passes > 1)
    grads = []
    for leaf in values[:len(leaves)]:
        grad = leaf.grad
        grads.append(None if grad is None else np.asarray(grad.detach().numpy() if lib is not gradviz else grad._data))
    return log, grads


def same_grads(mine, theirs) -> bool:
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs):
        if (a is None) != (b is None):
            return False
        if a is not None and (a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes()):
            if not (np.isnan(a).all() and np.isnan(b).all()):  # a NaN's payload is not part of the contract
                return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.integers(1, 2), st.data())
def test_unhooked_loop_runs_in_the_heap_order_with_the_same_bits(dtype, passes, data):
    graph = graphs(data.draw)
    plain = run(gradviz, DTYPES[dtype], graph, passes=passes)
    general = run(gradviz, DTYPES[dtype], graph, hooked=True, passes=passes)
    if plain is None:
        assert general is None
        return
    assert plain[0] == general[0], graph
    assert same_grads(plain[1], general[1]), (graph, plain[1], general[1])
    for grad in plain[1]:
        assert grad is None or (type(grad) is np.ndarray and grad.shape == () and grad.dtype == DTYPES[dtype])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.integers(1, 2), st.data())
def test_unhooked_loop_matches_torch_order_and_bits(dtype, passes, data):
    torch = pytest.importorskip("torch")
    graph = graphs(data.draw)
    plain = run(gradviz, DTYPES[dtype], graph, passes=passes)
    theirs = run(torch, DTYPES[dtype], graph, passes=passes)
    if plain is None:
        assert theirs is None
        return
    assert plain[0] == theirs[0], graph
    assert same_grads(plain[1], theirs[1]), (graph, plain[1], theirs[1])


def test_a_node_fed_by_many_paths_runs_once_after_the_last_gradient():
    """A diamond of many paths into one marked node, and a chain after it: the node's gradients are summed
    while they wait, it runs once, then the chain runs node by node without the heap."""
    graph = ([(0.5, True), (1.25, True)],
             [("mul", [0, 1], False), ("square", [2], True), ("add", [3, 3], True), ("mul", [4, 3], True),
              ("sub", [5, 2], True), ("scale", [6], True), ("shift", [7], True)],
             [8, 8, 4])
    for dtype in DTYPES.values():
        plain = run(gradviz, dtype, graph)
        general = run(gradviz, dtype, graph, hooked=True)
        assert plain[0] == general[0] == [6, 5, 4, 3, 2, 1]
        assert same_grads(plain[1], general[1])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_the_implicit_starting_gradient_of_a_scalar_loss_is_the_backends_ones(dtype):
    """``make_grads`` makes a 0-d float loss's starting gradient from the dtype's scalar: the same array as
    the backend's ``full((), 1, dtype)``, a fresh one per pass."""
    from gradviz.backends import numpy_backend

    loss = gradviz.tensor(np.asarray(0.5, dtype=DTYPES[dtype]), requires_grad=True) * 3.0
    first, second = (engine.make_grads([loss], [None])[0] for _ in range(2))
    expected = numpy_backend.full((), 1, loss.dtype)
    for grad in (first, second):
        assert type(grad) is np.ndarray and grad.dtype == expected.dtype and grad.shape == ()
        assert grad.tobytes() == expected.tobytes() and grad.flags.writeable and grad.flags.owndata
    assert first is not second
    for bad in (gradviz.tensor([0.5, 1.0], requires_grad=True) * 2.0,):  # still PyTorch's error off the 0-d path
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            engine.make_grads([bad], [None])


GRADIENT_KINDS = {  # what may arrive at one slot: 0-d float32/float64, other shapes and dtypes
    "f32": lambda v: np.asarray(v, dtype=np.float32),
    "f64": lambda v: np.asarray(v, dtype=np.float64),
    "f16": lambda v: np.asarray(v, dtype=np.float16),
    "row32": lambda v: np.full((2,), v, dtype=np.float32),
    "one64": lambda v: np.full((1,), v, dtype=np.float64),
    "swapped64": lambda v: np.asarray(v, dtype=">f8"),
}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(GRADIENT_KINDS)), st.floats(-1e6, 1e6, width=32)),
                min_size=2, max_size=7),
       st.lists(st.booleans(), min_size=7, max_size=7))
def test_sums_kept_while_waiting_match_the_plain_sums(arrivals, undefined):
    """The unhooked loop's running sum (a numpy scalar kept while gradients of one kind arrive) and its last
    sum give the array ``_summed`` gives, added in the same order, whatever kinds arrive (None included)."""
    from gradviz.backends.quiet import _IGNORE, _reset, _set

    token = _set(_IGNORE)  # as the loop runs: numpy's warnings off (a float16 may overflow, as it is made)
    try:
        grads = [None if skip and index else GRADIENT_KINDS[kind](value)
                 for index, ((kind, value), skip) in enumerate(zip(arrivals, undefined))]
        kept = plain = grads[0]
        for grad in grads[1:-1]:  # as the loop does: a held None (or nothing yet) takes the next one as it is
            if kept is None:
                kept = grad
            elif grad is not None:
                kept = engine._running_sum(kept, grad)
            if plain is None:
                plain = grad
            elif grad is not None:
                plain = engine._summed(plain, grad)
        last = grads[-1]
        mine = last if kept is None else engine._last_sum(kept, last)
        theirs = last if plain is None else (plain if last is None else engine._summed(plain, last))
    finally:
        _reset(token)
    if theirs is None:
        assert mine is None
        return
    assert type(mine) is np.ndarray and type(theirs) is np.ndarray
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    assert mine.tobytes() == theirs.tobytes() or (np.isnan(mine).all() and np.isnan(theirs).all())


HOOKLESS_START = """
import gradviz as gv
from gradviz.autograd import node
assert not node.hook_tables_made  # importing gradviz makes no hook table
x = gv.tensor(2.0, requires_grad=True)
w = gv.tensor(0.5, requires_grad=True)
y = x * x
z = y * 3.0 + w
z.backward(retain_graph=True)
assert not node.hook_tables_made and x.grad.item() == 12.0
seen = []
y.register_hook(lambda g: seen.append(g.item()) or g * 2)  # on a graph made before any hook
w.register_hook(lambda g: g * 10)  # a leaf whose AccumulateGrad exists already
assert node.hook_tables_made
x.grad = w.grad = None
z.backward()
print(seen, x.grad.item(), w.grad.item())
"""


def test_hooks_set_after_a_hookless_start_are_run():
    """Until a hook table is first made, the dependency walk looks for no hooks; a hook set afterwards on a
    graph made before (a tensor's, a leaf's) is run by the next pass (a fresh interpreter: hooks made by
    other tests would hide the start)."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    environment = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", HOOKLESS_START], capture_output=True, text=True, cwd=root,
                         env=environment, check=True).stdout
    assert out.split() == ["[3.0]", "24.0", "10.0"]
